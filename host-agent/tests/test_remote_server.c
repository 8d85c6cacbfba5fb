// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the memory server's state (host-agent/remote/remote_server.c)
 * driven by test clients that speak the wire as vtier's client will: their
 * own VM keys, sealed pages, batched PUT/GET/FREE, replies checked and
 * reassembled. Every page read back is opened and compared byte for byte.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "remote_server.h"

#define PAGE 4096
#define SEALED (PAGE + VT_SEAL_PAGE_OVERHEAD)
#define CHARGE (SEALED + VT_RS_PAGE_OVERHEAD)
#define T0 1000000000ull

/* The datagrams the server emitted since the last take. */
struct wire {
	GPtrArray *dgrams;	/* GBytes */
	struct vt_rs_peer last_peer;
};

static void emit(void *arg, const struct vt_rs_peer *peer, const uint8_t *d, size_t len)
{
	struct wire *w = arg;

	g_ptr_array_add(w->dgrams, g_bytes_new(d, len));
	w->last_peer = *peer;
}

struct client {
	struct vt_seal_keys k;
	uint64_t seq;
	struct vt_rs_peer peer;
	struct vt_rp_reasm reasm;
	struct vt_rp_dgrams *sent;	/* the last request's datagrams (for replays) */
};

struct fixture {
	struct vt_rs *rs;
	size_t frag_max;	/* the server's: replies are read with it */
	size_t send_frag;	/* the clients' (at most the server's) */
	struct vt_seal_server_key key;
	struct wire wire;
	uint64_t now;
};

static void client_init(struct client *c, uint8_t seed)
{
	uint8_t vm_key[VT_SEAL_KEY_BYTES];

	memset(c, 0, sizeof(*c));
	for (int i = 0; i < VT_SEAL_KEY_BYTES; i++)
		vm_key[i] = (uint8_t)(seed * 17 + i * 3);
	assert_int_equal(vt_seal_derive(vm_key, &c->k), 0);
	c->seq = 1700000000000000000ull + seed * 1000000ull;
	c->peer.addr = 0x0a000000u + seed;
	c->peer.port = (uint16_t)(40000 + seed);
	c->sent = g_new0(struct vt_rp_dgrams, 1);
}

static void client_fini(struct client *c)
{
	vt_rp_reasm_clear(&c->reasm);
	g_free(c->sent);
}

/* A server of @cfg (its key pair made here). */
static struct fixture *fixture_new_cfg(struct vt_rs_config cfg)
{
	struct fixture *f = g_new0(struct fixture, 1);
	g_autofree char *dir = g_dir_make_tmp("remote-server-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "key", NULL);
	char err[128];

	assert_int_equal(vt_seal_server_key_create(path, &f->key, NULL, 0), 0);
	unlink(path);
	rmdir(dir);
	cfg.key = f->key;
	f->rs = vt_rs_new(&cfg, err, sizeof(err));
	assert_non_null(f->rs);
	f->wire.dgrams = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
	f->now = T0;
	f->frag_max = cfg.frag_max ? cfg.frag_max : VT_RP_FRAG_DEFAULT;
	f->send_frag = f->frag_max;
	return f;
}

/* The namespace and server caps; the client cap out of the way (test_client_cap has it). */
static struct fixture *fixture_new(uint64_t ns_cap, uint64_t server_cap)
{
	return fixture_new_cfg((struct vt_rs_config) {
		.ns_cap_bytes = ns_cap, .server_cap_bytes = server_cap,
		.client_cap_bytes = server_cap });
}

static void fixture_free(struct fixture *f)
{
	vt_rs_free(f->rs);
	g_ptr_array_free(f->wire.dgrams, TRUE);
	g_free(f);
}

/* Sends datagrams into the server; returns the reasons (all must be @want). */
static void send_dgrams(struct fixture *f, const struct client *c, const struct vt_rp_dgrams *d,
			enum vt_rp_reason want)
{
	for (unsigned int i = 0; i < d->n; i++)
		assert_int_equal(vt_rs_input(f->rs, &c->peer, d->buf[i], d->len[i], f->now, emit,
					     &f->wire), want);
}

/*
 * One request from @c and its reply, checked as the client does: tag,
 * op, ns and seq, reassembled. Returns the reply's status; its body in
 * *@body (g_free) when asked.
 */
static int request(struct fixture *f, struct client *c, uint8_t op, const uint8_t *body,
		   size_t len, uint8_t **reply, size_t *reply_len)
{
	struct vt_rp_msg m = { 0 };
	unsigned int expired = 0;
	uint64_t seq = ++c->seq;
	bool done = false;
	int status;

	assert_true(vt_rp_encode(op, c->k.ns, seq, 0, body, len, f->send_frag, c->k.access_key,
				 c->sent) > 0);
	g_ptr_array_set_size(f->wire.dgrams, 0);
	send_dgrams(f, c, c->sent, VT_RP_OK);
	assert_true(f->wire.dgrams->len > 0);
	assert_int_equal(f->wire.last_peer.addr, c->peer.addr);
	assert_int_equal(f->wire.last_peer.port, c->peer.port);
	for (unsigned int i = 0; i < f->wire.dgrams->len; i++) {
		gsize dlen;
		const uint8_t *d = g_bytes_get_data(f->wire.dgrams->pdata[i], &dlen);
		struct vt_rp_dgram dg;

		assert_false(done);
		assert_int_equal(vt_rp_reply_check(d, dlen, f->frag_max, c->k.access_key,
						   c->k.ns, op, seq, &dg), VT_RP_OK);
		assert_int_equal(vt_rp_reasm_add(&c->reasm, &dg, f->now, &m, &done, &expired),
				 VT_RP_OK);
	}
	assert_true(done);
	status = m.hdr.status;
	if (reply) {
		*reply = g_malloc0(m.len + 1);	/* never NULL, even for an empty body */
		memcpy(*reply, m.body, m.len);
		*reply_len = m.len;
	}
	vt_rp_msg_release(&m);
	return status;
}

static int hello_flags(struct fixture *f, struct client *c, uint32_t flags,
		       struct vt_rp_caps *caps)
{
	uint8_t box[VT_RP_HELLO_BYTES], *body = NULL;
	size_t len = 0;
	int status;

	assert_int_equal(vt_rp_hello_seal(f->key.pk, c->k.ns, c->k.access_key, flags, box), 0);
	status = request(f, c, VT_RP_HELLO, box, sizeof(box), &body, &len);
	if (status == 0)
		assert_int_equal(vt_rp_caps_decode(body, len, caps), VT_RP_OK);
	else
		assert_int_equal(len, 0);
	g_free(body);
	return status;
}

static int hello(struct fixture *f, struct client *c, struct vt_rp_caps *caps)
{
	return hello_flags(f, c, 0, caps);
}

/* The guest page @id of client @c at @version: every byte depends on all three. */
static void page_content(const struct client *c, uint64_t id, uint32_t version, uint8_t *p)
{
	for (int i = 0; i < PAGE; i++)
		p[i] = (uint8_t)(c->k.ns[i % 16] ^ (id * 131 + (uint64_t)i * 7 + version * 29));
}

/* PUTs pages [first, first + n) at @version, two per request; statuses into @st. */
static void put_pages(struct fixture *f, struct client *c, uint64_t first, unsigned int n,
		      uint32_t version, uint16_t *st)
{
	for (unsigned int i = 0; i < n; i += 2) {
		unsigned int k = n - i < 2 ? n - i : 2;
		uint8_t plain[PAGE], blobs[2][SEALED], body[2 + 2 * (10 + SEALED)], *reply;
		struct vt_rp_put_item items[2];
		uint16_t rst[VT_RP_BATCH_MAX];
		size_t blen, rlen;
		unsigned int rn;
		long len;

		for (unsigned int j = 0; j < k; j++) {
			page_content(c, first + i + j, version, plain);
			assert_int_equal(vt_seal_page(c->k.page_key, c->k.ns, first + i + j, version,
						      plain, PAGE, blobs[j], SEALED, &blen), 0);
			items[j] = (struct vt_rp_put_item) { first + i + j, (uint16_t)blen, blobs[j] };
		}
		len = vt_rp_put_encode(items, k, body, sizeof(body));
		assert_true(len > 0);
		assert_int_equal(request(f, c, VT_RP_PUT, body, (size_t)len, &reply, &rlen), 0);
		assert_int_equal(vt_rp_status_decode(reply, rlen, rst, &rn), VT_RP_OK);
		assert_int_equal(rn, k);
		for (unsigned int j = 0; j < k; j++)
			st[i + j] = rst[j];
		g_free(reply);
	}
}

/*
 * GETs pages [first, first + n) (asking again for what did not fit), opens
 * each present one and compares it with its content at @version; returns
 * how many were present; @st gets each page's status.
 */
static unsigned int get_pages(struct fixture *f, struct client *c, uint64_t first,
			      unsigned int n, uint32_t version, uint16_t *st)
{
	unsigned int done = 0, present = 0;

	while (done < n) {
		uint64_t ids[16];
		uint8_t body[2 + 16 * 8], *reply;
		struct vt_rp_get_item items[VT_RP_BATCH_MAX];
		unsigned int k = n - done < 16 ? n - done : 16, rn;
		size_t rlen;
		long len;

		for (unsigned int j = 0; j < k; j++)
			ids[j] = first + done + j;
		len = vt_rp_ids_encode(ids, k, body, sizeof(body));
		assert_int_equal(request(f, c, VT_RP_GET, body, (size_t)len, &reply, &rlen), 0);
		assert_int_equal(vt_rp_get_reply_decode(reply, rlen, items, &rn), VT_RP_OK);
		assert_true(rn >= 1 && rn <= k);
		for (unsigned int j = 0; j < rn; j++) {
			uint8_t want[PAGE], got[PAGE];
			size_t glen;

			assert_int_equal(items[j].page_id, ids[j]);
			st[done + j] = items[j].status;
			if (items[j].status)
				continue;
			page_content(c, ids[j], version, want);
			assert_int_equal(vt_seal_page_open(c->k.page_key, c->k.ns, ids[j], version,
							   items[j].blob, items[j].blob_len, got,
							   sizeof(got), &glen), 0);
			assert_int_equal(glen, PAGE);
			assert_memory_equal(got, want, PAGE);
			present++;
		}
		done += rn;
		g_free(reply);
	}
	return present;
}

static int free_pages(struct fixture *f, struct client *c, const uint64_t *ids, unsigned int n,
		      uint16_t *st)
{
	uint8_t body[2 + VT_RP_BATCH_MAX * 8], *reply;
	unsigned int rn;
	size_t rlen;
	long len = vt_rp_ids_encode(ids, n, body, sizeof(body));
	int status;

	assert_true(len > 0);
	status = request(f, c, VT_RP_FREE, body, (size_t)len, &reply, &rlen);
	assert_int_equal(status, 0);
	assert_int_equal(vt_rp_status_decode(reply, rlen, st, &rn), VT_RP_OK);
	assert_int_equal(rn, n);
	g_free(reply);
	return status;
}

static void all_status(const uint16_t *st, unsigned int n, uint16_t want)
{
	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(st[i], want);
}

struct ns_find {
	const uint8_t *ns;
	struct vt_rs_ns_stats st;
	int found;
};

static void ns_find_cb(void *arg, const struct vt_rs_ns_stats *s)
{
	struct ns_find *q = arg;

	if (!memcmp(s->ns, q->ns, VT_RP_NS_BYTES)) {
		q->st = *s;
		q->found++;
	}
}

static struct vt_rs_ns_stats ns_stats(struct fixture *f, const struct client *c)
{
	struct ns_find q = { .ns = c->k.ns };

	vt_rs_foreach_ns(f->rs, ns_find_cb, &q);
	assert_int_equal(q.found, 1);
	return q.st;
}

static struct vt_rs_stats stats(struct fixture *f)
{
	struct vt_rs_stats s;

	vt_rs_get_stats(f->rs, &s);
	return s;
}

#define N 40

static void test_two_clients(void **state)
{
	struct fixture *f = fixture_new(0, 1ull << 30);
	struct client a, b;
	struct vt_rp_caps caps;
	uint16_t st[N];
	struct vt_rs_ns_stats ns;

	(void)state;
	client_init(&a, 1);
	client_init(&b, 2);
	assert_int_equal(hello(f, &a, &caps), 0);
	assert_int_equal(caps.ns_cap, VT_RS_NS_CAP_DEFAULT);
	assert_int_equal(caps.ns_used, 0);
	assert_int_equal(caps.server_free, 1ull << 30);
	assert_int_equal(hello(f, &b, &caps), 0);
	/* The same page ids in both namespaces, different contents. */
	put_pages(f, &a, 0, N, 1, st);
	all_status(st, N, 0);
	put_pages(f, &b, 0, N, 1, st);
	all_status(st, N, 0);
	assert_int_equal(get_pages(f, &a, 0, N, 1, st), N);
	assert_int_equal(get_pages(f, &b, 0, N, 1, st), N);
	/* A newer version replaces the old one, charged once. */
	put_pages(f, &a, 0, 4, 2, st);
	all_status(st, 4, 0);
	assert_int_equal(get_pages(f, &a, 0, 4, 2, st), 4);
	assert_int_equal(get_pages(f, &a, 4, N - 4, 1, st), N - 4);
	ns = ns_stats(f, &a);
	assert_int_equal(ns.pages, N);
	assert_int_equal(ns.bytes, N * CHARGE);
	assert_int_equal(ns.puts, N + 4);
	assert_int_equal(ns.gets, N + 4 + N - 4);
	/* FREE: gone from A, B untouched; freeing twice is ENOENT. */
	{
		uint64_t ids[4] = { 0, 1, 2, 3 };

		free_pages(f, &a, ids, 4, st);
		all_status(st, 4, 0);
		free_pages(f, &a, ids, 4, st);
		all_status(st, 4, ENOENT);
		assert_int_equal(get_pages(f, &a, 0, 4, 2, st), 0);
		all_status(st, 4, ENOENT);
		assert_int_equal(get_pages(f, &b, 0, N, 1, st), N);
	}
	/* STAT */
	{
		struct vt_rp_stat s;
		uint8_t *reply;
		size_t rlen;

		assert_int_equal(request(f, &a, VT_RP_STAT, NULL, 0, &reply, &rlen), 0);
		assert_int_equal(vt_rp_stat_decode(reply, rlen, &s), VT_RP_OK);
		assert_int_equal(s.pages, N - 4);
		assert_int_equal(s.bytes, (N - 4) * CHARGE);
		assert_int_equal(s.cap, VT_RS_NS_CAP_DEFAULT);
		assert_int_equal(s.server_free, (1ull << 30) - (2 * N - 4) * CHARGE);
		g_free(reply);
	}
	{
		struct vt_rs_stats s = stats(f);

		assert_int_equal(s.namespaces, 2);
		assert_int_equal(s.pages, 2 * N - 4);
		assert_int_equal(s.bytes, (2 * N - 4) * CHARGE);
		for (int r = 0; r < VT_RP_R_COUNT; r++)
			assert_int_equal(s.drops[r], 0);
	}
	client_fini(&a);
	client_fini(&b);
	fixture_free(f);
}

/*
 * Jumbo frames (frag max 3968): 2 pages PUT in 3 datagrams, GET replies of
 * 7 pages in 8 fragments; a client sending 1400-byte fragments is still
 * served (under the server's max), and a 3968-byte fragment is refused by a
 * 1400-byte server.
 */
static void test_jumbo(void **state)
{
	struct fixture *f = fixture_new_cfg((struct vt_rs_config) {
		.server_cap_bytes = 1ull << 30, .frag_max = VT_RP_FRAG_LIMIT });
	struct fixture *small = fixture_new(0, 1ull << 30);
	struct vt_rp_caps caps;
	struct client a;
	uint16_t st[N];
	uint64_t tx;

	(void)state;
	client_init(&a, 1);
	assert_int_equal(hello(f, &a, &caps), 0);
	put_pages(f, &a, 0, N, 1, st);
	all_status(st, N, 0);
	assert_int_equal(a.sent->n, 3);	/* the last PUT: 2 pages in 3 datagrams */
	tx = stats(f).tx;
	assert_int_equal(get_pages(f, &a, 0, 16, 1, st), 16);
	/* 16 pages: 7 + 7 + 2 per reply, 8 + 8 + 3 datagrams. */
	assert_int_equal(stats(f).tx - tx, 19);
	/* A client sending 1400-byte fragments to it (replies still up to 3968). */
	f->send_frag = VT_RP_FRAG_DEFAULT;
	put_pages(f, &a, 0, 2, 2, st);
	assert_int_equal(a.sent->n, 6);
	assert_int_equal(get_pages(f, &a, 0, 2, 2, st), 2);
	assert_int_equal(get_pages(f, &a, 16, N - 16, 1, st), N - 16);
	/* A 1400 server refuses the jumbo client's fragments. */
	assert_int_equal(hello(small, &a, &caps), 0);
	{
		uint8_t blob[SEALED] = { 1 }, body[2 + 10 + SEALED];
		struct vt_rp_put_item it = { 1, SEALED, blob };
		long len = vt_rp_put_encode(&it, 1, body, sizeof(body));

		assert_int_equal(vt_rp_encode(VT_RP_PUT, a.k.ns, ++a.seq, 0, body, (size_t)len,
					      VT_RP_FRAG_LIMIT, a.k.access_key, a.sent), 2);
		assert_int_equal(vt_rs_input(small->rs, &a.peer, a.sent->buf[0], a.sent->len[0],
					     small->now, emit, &small->wire), VT_RP_R_FRAG_LEN);
	}
	client_fini(&a);
	fixture_free(f);
	fixture_free(small);
}

static void test_rogue(void **state)
{
	struct fixture *f = fixture_new(0, 1ull << 30);
	struct client a, r;
	struct vt_rp_caps caps;
	uint16_t st[N];
	uint64_t ids[N];

	(void)state;
	client_init(&a, 1);
	client_init(&r, 3);
	assert_int_equal(hello(f, &a, &caps), 0);
	assert_int_equal(hello(f, &r, &caps), 0);
	put_pages(f, &a, 100, N, 1, st);
	all_status(st, N, 0);
	/* The rogue asks its own namespace for A's ids: nothing there. */
	assert_int_equal(get_pages(f, &r, 100, N, 1, st), 0);
	all_status(st, N, ENOENT);
	for (unsigned int i = 0; i < N; i++)
		ids[i] = 100 + i;
	free_pages(f, &r, ids, N, st);
	all_status(st, N, ENOENT);
	/* It names A's namespace with its own key (or none): forged, no reply at all. */
	{
		struct vt_rp_dgrams *d = g_new0(struct vt_rp_dgrams, 1);
		uint8_t body[2 + N * 8];
		long len = vt_rp_ids_encode(ids, N, body, sizeof(body));
		uint64_t forged = stats(f).drops[VT_RP_R_FORGED];
		uint8_t zero[VT_SEAL_KEY_BYTES] = { 0 };

		g_ptr_array_set_size(f->wire.dgrams, 0);
		assert_int_equal(vt_rp_encode(VT_RP_GET, a.k.ns, a.seq + 1000, 0, body, (size_t)len,
					      VT_RP_FRAG_DEFAULT, r.k.access_key, d), 1);
		send_dgrams(f, &r, d, VT_RP_R_FORGED);
		assert_int_equal(vt_rp_encode(VT_RP_FREE, a.k.ns, a.seq + 1001, 0, body,
					      (size_t)len, VT_RP_FRAG_DEFAULT, zero, d), 1);
		send_dgrams(f, &r, d, VT_RP_R_FORGED);
		/* A's own request with its tag replaced by the rogue's guess. */
		assert_int_equal(vt_rp_encode(VT_RP_FREE, a.k.ns, a.seq + 1002, 0, body,
					      (size_t)len, VT_RP_FRAG_DEFAULT, a.k.access_key, d), 1);
		memset(d->buf[0] + d->len[0] - VT_RP_TAG_BYTES, 0x42, VT_RP_TAG_BYTES);
		send_dgrams(f, &r, d, VT_RP_R_FORGED);
		assert_int_equal(f->wire.dgrams->len, 0);
		assert_int_equal(stats(f).drops[VT_RP_R_FORGED], forged + 3);
		/* An unknown namespace: dropped, counted, no reply. */
		{
			uint8_t ns[VT_RP_NS_BYTES] = "no-such-ns-0000";

			assert_int_equal(vt_rp_encode(VT_RP_GET, ns, 5, 0, body, (size_t)len,
						      VT_RP_FRAG_DEFAULT, r.k.access_key, d), 1);
			send_dgrams(f, &r, d, VT_RP_R_UNKNOWN_NS);
			assert_int_equal(stats(f).drops[VT_RP_R_UNKNOWN_NS], 1);
			assert_int_equal(f->wire.dgrams->len, 0);
		}
		g_free(d);
	}
	/* A still has every page, intact. */
	assert_int_equal(get_pages(f, &a, 100, N, 1, st), N);
	assert_int_equal(ns_stats(f, &r).pages, 0);
	client_fini(&a);
	client_fini(&r);
	fixture_free(f);
}

static void test_replay(void **state)
{
	struct fixture *f = fixture_new(0, 1ull << 30);
	struct vt_rp_dgrams *put1 = g_new0(struct vt_rp_dgrams, 1);
	struct vt_rp_dgrams *free1 = g_new0(struct vt_rp_dgrams, 1);
	struct vt_rp_caps caps;
	struct client a;
	uint16_t st[2];
	uint64_t id = 7;

	(void)state;
	client_init(&a, 1);
	assert_int_equal(hello(f, &a, &caps), 0);
	/* PUT v1 (2 pages: a 6-fragment message), captured. */
	put_pages(f, &a, 7, 2, 1, st);
	*put1 = *a.sent;
	assert_true(put1->n > 1);
	/* FREE of page 7, captured, then PUT v2. */
	free_pages(f, &a, &id, 1, st);
	*free1 = *a.sent;
	put_pages(f, &a, 7, 2, 2, st);
	all_status(st, 2, 0);
	/* Replays: every datagram dropped, none answered, v2 stays. */
	g_ptr_array_set_size(f->wire.dgrams, 0);
	send_dgrams(f, &a, put1, VT_RP_R_REPLAYED);
	send_dgrams(f, &a, free1, VT_RP_R_REPLAYED);
	assert_int_equal(f->wire.dgrams->len, 0);
	assert_int_equal(stats(f).drops[VT_RP_R_REPLAYED], put1->n + free1->n);
	assert_int_equal(ns_stats(f, &a).drops[VT_RP_DROP_REPLAYED], put1->n + free1->n);
	assert_int_equal(get_pages(f, &a, 7, 2, 2, st), 2);
	/* A replayed HELLO too. */
	{
		struct vt_rp_dgrams *h = g_new0(struct vt_rp_dgrams, 1);

		assert_int_equal(hello(f, &a, &caps), 0);
		*h = *a.sent;
		send_dgrams(f, &a, h, VT_RP_R_REPLAYED);
		g_free(h);
	}
	/* A fragment replayed while its message is in flight: a duplicate. */
	{
		uint8_t blob[SEALED] = { 1 }, body[2 + 10 + SEALED];
		struct vt_rp_put_item it = { 9, SEALED, blob };
		long len = vt_rp_put_encode(&it, 1, body, sizeof(body));
		struct vt_rp_dgrams *d = g_new0(struct vt_rp_dgrams, 1);

		assert_int_equal(vt_rp_encode(VT_RP_PUT, a.k.ns, ++a.seq, 0, body, (size_t)len,
					      VT_RP_FRAG_DEFAULT, a.k.access_key, d), 3);
		assert_int_equal(vt_rs_input(f->rs, &a.peer, d->buf[0], d->len[0], f->now, emit,
					     &f->wire), VT_RP_OK);
		assert_int_equal(vt_rs_input(f->rs, &a.peer, d->buf[0], d->len[0], f->now, emit,
					     &f->wire), VT_RP_R_FRAG_DUP);
		g_free(d);
	}
	client_fini(&a);
	g_free(put1);
	g_free(free1);
	fixture_free(f);
}

static void test_caps(void **state)
{
	/* A may hold 10 pages; the server 16. */
	struct fixture *f = fixture_new(10 * CHARGE, 16 * CHARGE);
	struct client a, b;
	struct vt_rp_caps caps;
	uint16_t st[12];
	uint64_t id = 0;

	(void)state;
	client_init(&a, 1);
	client_init(&b, 2);
	assert_int_equal(hello(f, &a, &caps), 0);
	assert_int_equal(hello(f, &b, &caps), 0);
	put_pages(f, &b, 0, 4, 1, st);
	all_status(st, 4, 0);
	/* A over its own cap: ENOSPC for pages 11 and 12, B's pages kept. */
	put_pages(f, &a, 0, 12, 1, st);
	all_status(st, 10, 0);
	assert_int_equal(st[10], ENOSPC);
	assert_int_equal(st[11], ENOSPC);
	assert_int_equal(stats(f).over_cap, 2);
	assert_int_equal(ns_stats(f, &a).drops[VT_RP_DROP_OVER_CAP], 2);
	assert_int_equal(get_pages(f, &b, 0, 4, 1, st), 4);
	assert_int_equal(get_pages(f, &a, 0, 12, 1, st), 10);
	assert_int_equal(st[10], ENOENT);
	/* Replacing a page at the cap is fine (same charge). */
	put_pages(f, &a, 0, 2, 2, st);
	all_status(st, 2, 0);
	/* The server's cap: 14 of 16 used, B gets 2 more then ENOSPC; A keeps all. */
	put_pages(f, &b, 4, 4, 1, st);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	assert_int_equal(st[2], ENOSPC);
	assert_int_equal(st[3], ENOSPC);
	assert_int_equal(stats(f).bytes, 16 * CHARGE);
	assert_int_equal(get_pages(f, &a, 0, 2, 2, st), 2);
	assert_int_equal(get_pages(f, &a, 2, 8, 1, st), 8);
	assert_int_equal(get_pages(f, &b, 0, 6, 1, st), 6);
	/* Room again after a FREE. */
	free_pages(f, &a, &id, 1, st);
	put_pages(f, &b, 6, 1, 1, st);
	assert_int_equal(st[0], 0);
	assert_int_equal(get_pages(f, &b, 0, 7, 1, st), 7);
	/* Oversize and empty blobs. */
	{
		uint8_t blob[VT_RP_BLOB_MAX + 1] = { 0 }, body[2 + 20 + VT_RP_BLOB_MAX + 1], *reply;
		struct vt_rp_put_item it[2] = { { 50, VT_RP_BLOB_MAX + 1, blob }, { 51, 0, blob } };
		uint16_t rst[2];
		unsigned int rn;
		size_t rlen;
		long len;

		/* Encoded by hand: the encoder refuses an oversize blob. */
		it[0].blob_len = VT_RP_BLOB_MAX;
		len = vt_rp_put_encode(it, 2, body, sizeof(body));
		assert_true(len > 0);
		body[2 + 8] = (VT_RP_BLOB_MAX + 1) & 0xff;
		body[2 + 9] = (VT_RP_BLOB_MAX + 1) >> 8;
		assert_int_equal(request(f, &a, VT_RP_PUT, body, (size_t)len + 1, &reply, &rlen), 0);
		assert_int_equal(vt_rp_status_decode(reply, rlen, rst, &rn), VT_RP_OK);
		assert_int_equal(rst[0], E2BIG);
		assert_int_equal(rst[1], EINVAL);
		g_free(reply);
	}
	client_fini(&a);
	client_fini(&b);
	fixture_free(f);
}

static void test_hello_rules(void **state)
{
	struct fixture *f = fixture_new(0, 1ull << 30);
	struct client a, h, a2;
	struct vt_rp_caps caps;
	uint16_t st[4];

	(void)state;
	client_init(&a, 1);
	client_init(&h, 4);
	assert_int_equal(hello(f, &a, &caps), 0);
	put_pages(f, &a, 0, 4, 1, st);
	/* The hijacker claims A's namespace with its own key: EACCES, counted. */
	memcpy(h.k.ns, a.k.ns, VT_RP_NS_BYTES);
	assert_int_equal(hello(f, &h, &caps), EACCES);
	assert_int_equal(stats(f).hello_refused, 1);
	/* ... and its requests there are forged. */
	{
		uint64_t ids[1] = { 0 };
		uint8_t body[10];
		long len = vt_rp_ids_encode(ids, 1, body, sizeof(body));

		assert_int_equal(vt_rp_encode(VT_RP_GET, h.k.ns, ++h.seq, 0, body, (size_t)len,
					      VT_RP_FRAG_DEFAULT, h.k.access_key, h.sent), 1);
		g_ptr_array_set_size(f->wire.dgrams, 0);
		send_dgrams(f, &h, h.sent, VT_RP_R_FORGED);
		assert_int_equal(f->wire.dgrams->len, 0);
	}
	/* A restarted client (same VM key, a later seq): fine, its pages are there. */
	client_init(&a2, 1);
	a2.seq = a.seq + 5000000;
	assert_int_equal(hello(f, &a2, &caps), 0);
	assert_int_equal(caps.ns_used, 4 * CHARGE);
	assert_int_equal(get_pages(f, &a2, 0, 4, 1, st), 4);
	assert_int_equal(stats(f).hello_ok, 2);
	/* A HELLO whose header names another namespace than its box. */
	{
		uint8_t box[VT_RP_HELLO_BYTES];
		struct client b;

		client_init(&b, 5);
		assert_int_equal(vt_rp_hello_seal(f->key.pk, b.k.ns, b.k.access_key, 0, box), 0);
		assert_int_equal(vt_rp_encode(VT_RP_HELLO, a.k.ns, ++b.seq, 0, box, sizeof(box),
					      VT_RP_FRAG_DEFAULT, b.k.access_key, b.sent), 1);
		send_dgrams(f, &b, b.sent, VT_RP_R_NS);
		/* A box for another server's key. */
		{
			struct vt_seal_server_key other;
			g_autofree char *dir = g_dir_make_tmp("remote-server-XXXXXX", NULL);
			g_autofree char *path = g_build_filename(dir, "k", NULL);

			assert_int_equal(vt_seal_server_key_create(path, &other, NULL, 0), 0);
			unlink(path);
			rmdir(dir);
			assert_int_equal(vt_rp_hello_seal(other.pk, b.k.ns, b.k.access_key, 0, box), 0);
			assert_int_equal(vt_rp_encode(VT_RP_HELLO, b.k.ns, ++b.seq, 0, box,
						      sizeof(box), VT_RP_FRAG_DEFAULT,
						      b.k.access_key, b.sent), 1);
			send_dgrams(f, &b, b.sent, VT_RP_R_FORGED);
		}
		/* A good box with a tag by another key. */
		assert_int_equal(vt_rp_hello_seal(f->key.pk, b.k.ns, b.k.access_key, 0, box), 0);
		assert_int_equal(vt_rp_encode(VT_RP_HELLO, b.k.ns, ++b.seq, 0, box, sizeof(box),
					      VT_RP_FRAG_DEFAULT, a.k.access_key, b.sent), 1);
		send_dgrams(f, &b, b.sent, VT_RP_R_FORGED);
		assert_int_equal(stats(f).namespaces, 1);
		client_fini(&b);
	}
	client_fini(&a);
	client_fini(&a2);
	client_fini(&h);
	fixture_free(f);
}

/* HELLO with VT_RP_HELLO_RESET empties its own namespace only, and uncharges it. */
static void test_hello_reset(void **state)
{
	struct fixture *f = fixture_new(0, 1ull << 30);
	struct client a, b;
	struct vt_rp_caps caps;
	uint16_t st[8];

	(void)state;
	client_init(&a, 1);
	client_init(&b, 2);
	assert_int_equal(hello(f, &a, &caps), 0);
	assert_int_equal(hello(f, &b, &caps), 0);
	put_pages(f, &a, 0, 8, 1, st);
	put_pages(f, &b, 0, 8, 1, st);
	assert_int_equal(hello_flags(f, &a, VT_RP_HELLO_RESET, &caps), 0);
	assert_int_equal(caps.ns_used, 0);
	assert_int_equal(stats(f).resets, 1);
	assert_int_equal(stats(f).pages, 8);
	assert_int_equal(stats(f).bytes, 8 * CHARGE);
	assert_int_equal(get_pages(f, &a, 0, 8, 1, st), 0);
	all_status(st, 8, ENOENT);
	/* the other namespace keeps every page, byte for byte */
	assert_int_equal(get_pages(f, &b, 0, 8, 1, st), 8);
	/* and the emptied one takes pages again */
	put_pages(f, &a, 0, 2, 2, st);
	all_status(st, 2, 0);
	assert_int_equal(get_pages(f, &a, 0, 2, 2, st), 2);
	client_fini(&a);
	client_fini(&b);
	fixture_free(f);
}

/*
 * BYE: the namespace goes, pages and all, its creator's share comes back; a
 * BYE for a namespace not held makes none; unknown flag bits are refused.
 */
static void test_hello_bye(void **state)
{
	struct fixture *f = fixture_new_cfg((struct vt_rs_config) {
		.server_cap_bytes = 1ull << 30, .ns_per_addr = 2 });
	struct client a, b, c;
	struct vt_rp_caps caps;
	uint8_t box[VT_RP_HELLO_BYTES];
	struct vt_rp_dgrams bad = { 0 };
	uint16_t st[8];
	long len;

	(void)state;
	client_init(&a, 31);
	client_init(&b, 32);
	client_init(&c, 33);
	b.peer = a.peer;	/* one address: its two namespaces are its whole share */
	c.peer = a.peer;
	assert_int_equal(hello(f, &a, &caps), 0);
	assert_int_equal(hello(f, &b, &caps), 0);
	assert_int_equal(hello(f, &c, &caps), ENOSPC);
	put_pages(f, &a, 0, 8, 1, st);
	put_pages(f, &b, 0, 8, 1, st);
	assert_int_equal(stats(f).pages, 16);

	assert_int_equal(hello_flags(f, &a, VT_RP_HELLO_BYE, &caps), 0);
	assert_int_equal(caps.ns_used, 0);
	assert_int_equal(stats(f).byes, 1);
	assert_int_equal(stats(f).resets, 0);
	assert_int_equal(stats(f).namespaces, 1);
	assert_int_equal(stats(f).pages, 8);
	assert_int_equal(stats(f).bytes, 8 * CHARGE);
	/* its requests now name a namespace the server does not hold */
	len = vt_rp_ids_encode((uint64_t[]){ 0 }, 1, box, sizeof(box));
	assert_true(len > 0);
	assert_true(vt_rp_encode(VT_RP_GET, a.k.ns, ++a.seq, 0, box, (size_t)len, f->send_frag,
				 a.k.access_key, a.sent) > 0);
	send_dgrams(f, &a, a.sent, VT_RP_R_UNKNOWN_NS);
	/* the other namespace keeps every page */
	assert_int_equal(get_pages(f, &b, 0, 8, 1, st), 8);
	/* the address's share is back: a third key of it gets a namespace */
	assert_int_equal(hello(f, &c, &caps), 0);
	assert_int_equal(stats(f).ns_addr_full, 1);

	/* again (a retry whose first try was answered): nothing held, nothing made */
	assert_int_equal(hello_flags(f, &a, VT_RP_HELLO_BYE, &caps), 0);
	assert_int_equal(caps.ns_used, 0);
	assert_int_equal(stats(f).byes_unknown, 1);
	assert_int_equal(stats(f).namespaces, 2);

	/* a flag bit the server does not know: dropped, nothing changed */
	assert_int_equal(vt_rp_hello_seal(f->key.pk, b.k.ns, b.k.access_key, 4, box), 0);
	assert_true(vt_rp_encode(VT_RP_HELLO, b.k.ns, ++b.seq, 0, box, sizeof(box), f->send_frag,
				 b.k.access_key, &bad) > 0);
	send_dgrams(f, &b, &bad, VT_RP_R_BODY);
	assert_int_equal(stats(f).pages, 8);
	assert_int_equal(get_pages(f, &b, 0, 8, 1, st), 8);
	client_fini(&a);
	client_fini(&b);
	client_fini(&c);
	fixture_free(f);
}

static void test_max_namespaces(void **state)
{
	struct fixture *f = fixture_new_cfg((struct vt_rs_config) {
		.server_cap_bytes = 1 << 20, .max_namespaces = 2 });
	struct client c[3];
	struct vt_rp_caps caps;

	(void)state;
	for (int i = 0; i < 3; i++)
		client_init(&c[i], (uint8_t)(10 + i));
	assert_int_equal(hello(f, &c[0], &caps), 0);
	assert_int_equal(hello(f, &c[1], &caps), 0);
	assert_int_equal(hello(f, &c[2], &caps), ENOSPC);
	assert_int_equal(stats(f).ns_full, 1);
	assert_int_equal(hello(f, &c[0], &caps), 0);
	for (int i = 0; i < 3; i++)
		client_fini(&c[i]);
	fixture_free(f);
}

/* One address creates at most ns_per_addr namespaces; others still can; known ones stay. */
static void test_ns_per_addr(void **state)
{
	struct fixture *f = fixture_new_cfg((struct vt_rs_config) {
		.server_cap_bytes = 1 << 20, .ns_per_addr = 2 });
	struct client c[4];
	struct vt_rp_caps caps;

	(void)state;
	for (int i = 0; i < 4; i++)
		client_init(&c[i], (uint8_t)(20 + i));
	/* three keys from one address (a rogue making namespaces), one from another */
	c[1].peer = c[0].peer;
	c[2].peer = c[0].peer;
	assert_int_equal(hello(f, &c[0], &caps), 0);
	assert_int_equal(hello(f, &c[1], &caps), 0);
	assert_int_equal(hello(f, &c[2], &caps), ENOSPC);
	assert_int_equal(stats(f).ns_addr_full, 1);
	assert_int_equal(stats(f).namespaces, 2);
	assert_int_equal(hello(f, &c[3], &caps), 0);
	/* a namespace it has is not a new one */
	assert_int_equal(hello(f, &c[1], &caps), 0);
	for (int i = 0; i < 4; i++)
		client_fini(&c[i]);
	fixture_free(f);
}

struct client_find {
	uint32_t addr;
	struct vt_rs_client_stats st;
	int found, clients;
};

static void client_find_cb(void *arg, const struct vt_rs_client_stats *s)
{
	struct client_find *q = arg;

	q->clients++;
	if (s->addr == q->addr) {
		q->st = *s;
		q->found++;
	}
}

/* The client address of @c as the server counts it; found: 0 when it holds no namespace. */
static struct client_find client_stats(struct fixture *f, const struct client *c)
{
	struct client_find q = { .addr = c->peer.addr };

	vt_rs_foreach_client(f->rs, client_find_cb, &q);
	return q;
}

/* What the server counts for @c's address: its namespaces, pages (charged each) and refusals. */
static void assert_client(struct fixture *f, const struct client *c, uint64_t namespaces,
			  uint64_t pages, uint64_t over_cap)
{
	struct client_find q = client_stats(f, c);

	assert_int_equal(q.found, 1);
	assert_int_equal(q.st.namespaces, namespaces);
	assert_int_equal(q.st.pages, pages);
	assert_int_equal(q.st.bytes, pages * CHARGE);
	assert_int_equal(q.st.over_cap, over_cap);
}

/*
 * All namespaces of one address within the client cap: the second VM of a
 * host gets ENOSPC where the first took its share, counted for that address;
 * another address is not affected and nobody's page is evicted; a FREE gives
 * room back; BYE of its last namespace forgets the address.
 */
static void test_client_cap(void **state)
{
	/* a namespace may hold 10 pages, one address 6, the server 16 */
	struct fixture *f = fixture_new_cfg((struct vt_rs_config) {
		.ns_cap_bytes = 10 * CHARGE, .server_cap_bytes = 16 * CHARGE,
		.client_cap_bytes = 6 * CHARGE });
	struct client a, b, c;
	struct vt_rp_caps caps;
	uint16_t st[8];
	uint64_t id = 0;

	(void)state;
	client_init(&a, 1);
	client_init(&b, 2);
	client_init(&c, 3);
	b.peer = a.peer;	/* two VMs of one host */
	assert_int_equal(hello(f, &a, &caps), 0);
	assert_int_equal(caps.server_free, 6 * CHARGE);	/* its room: the client cap */
	assert_int_equal(hello(f, &b, &caps), 0);
	assert_int_equal(hello(f, &c, &caps), 0);
	assert_int_equal(caps.server_free, 6 * CHARGE);
	put_pages(f, &a, 0, 4, 1, st);
	all_status(st, 4, 0);
	/* b's namespace has room (10) and so has the server (16): its address has 2 */
	put_pages(f, &b, 0, 4, 1, st);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	assert_int_equal(st[2], ENOSPC);
	assert_int_equal(st[3], ENOSPC);
	assert_int_equal(stats(f).over_cap, 2);
	assert_int_equal(stats(f).client_over_cap, 2);
	assert_int_equal(ns_stats(f, &b).drops[VT_RP_DROP_OVER_CAP], 2);
	assert_client(f, &a, 2, 6, 2);
	assert_int_equal(client_stats(f, &a).st.cap, 6 * CHARGE);
	assert_int_equal(stats(f).clients, 2);
	assert_int_equal(hello(f, &b, &caps), 0);
	assert_int_equal(caps.server_free, 0);
	/* replacing a page at the cap is fine (same charge) */
	put_pages(f, &b, 0, 1, 2, st);
	assert_int_equal(st[0], 0);
	/* another address is not held back: 6 pages of it, its count apart */
	put_pages(f, &c, 0, 6, 1, st);
	all_status(st, 6, 0);
	put_pages(f, &c, 6, 1, 1, st);
	assert_int_equal(st[0], ENOSPC);
	assert_client(f, &c, 1, 6, 1);
	assert_client(f, &a, 2, 6, 2);
	assert_int_equal(stats(f).client_over_cap, 3);
	/* nothing evicted: every stored page reads back */
	assert_int_equal(get_pages(f, &a, 0, 4, 1, st), 4);
	assert_int_equal(get_pages(f, &b, 0, 1, 2, st), 1);
	assert_int_equal(get_pages(f, &b, 1, 1, 1, st), 1);
	assert_int_equal(get_pages(f, &c, 0, 6, 1, st), 6);
	/* a FREE in one namespace gives its address room in the other */
	free_pages(f, &a, &id, 1, st);
	put_pages(f, &b, 2, 1, 1, st);
	assert_int_equal(st[0], 0);
	assert_client(f, &a, 2, 6, 2);
	/* a BYE takes its namespace's pages off its address; the last one forgets it */
	assert_int_equal(hello_flags(f, &a, VT_RP_HELLO_BYE, &caps), 0);
	assert_client(f, &b, 1, 3, 2);
	assert_int_equal(hello_flags(f, &b, VT_RP_HELLO_BYE, &caps), 0);
	assert_int_equal(client_stats(f, &b).found, 0);
	assert_int_equal(client_stats(f, &b).clients, 1);
	assert_int_equal(stats(f).bytes, 6 * CHARGE);
	client_fini(&a);
	client_fini(&b);
	client_fini(&c);
	fixture_free(f);
}

/* The client cap's default: half the server cap; the namespace cap's refusals are not its. */
static void test_client_cap_default(void **state)
{
	struct fixture *f = fixture_new_cfg((struct vt_rs_config) {
		.ns_cap_bytes = 2 * CHARGE, .server_cap_bytes = 16 * CHARGE });
	struct vt_rp_caps caps;
	struct client a;
	uint16_t st[4];

	(void)state;
	assert_int_equal(stats(f).client_cap, 16 * CHARGE / VT_RS_CLIENT_CAP_DIV);
	assert_int_equal(VT_RS_CLIENT_CAP_DIV, 2);
	client_init(&a, 1);
	assert_int_equal(hello(f, &a, &caps), 0);
	put_pages(f, &a, 0, 4, 1, st);
	assert_int_equal(st[2], ENOSPC);
	assert_int_equal(st[3], ENOSPC);
	assert_int_equal(stats(f).over_cap, 2);
	assert_int_equal(stats(f).client_over_cap, 0);
	assert_client(f, &a, 1, 2, 0);
	client_fini(&a);
	fixture_free(f);
}

static void test_garbage(void **state)
{
	struct fixture *f = fixture_new(0, 1ull << 30);
	struct vt_rs_peer evil = { 0x0b0b0b0b, 666 };
	uint8_t junk[9000];
	struct vt_rp_caps caps;
	struct client a;
	uint16_t st[8];
	GRand *rand = g_rand_new_with_seed(31);
	uint64_t rx0;

	(void)state;
	client_init(&a, 1);
	assert_int_equal(hello(f, &a, &caps), 0);
	put_pages(f, &a, 0, 8, 1, st);
	g_ptr_array_set_size(f->wire.dgrams, 0);
	rx0 = stats(f).rx;
	for (unsigned int i = 0; i < 2000; i++) {
		size_t len = g_rand_int_range(rand, 0, sizeof(junk));

		for (size_t j = 0; j < len; j++)
			junk[j] = (uint8_t)g_rand_int(rand);
		/* Half of them with a right magic and version, to get further. */
		if (i % 2 && len >= 6)
			memcpy(junk, "VTRM\x01", 5);
		assert_int_not_equal(vt_rs_input(f->rs, &evil, junk, len, f->now, emit, &f->wire),
				     VT_RP_OK);
	}
	assert_int_equal(vt_rs_input(f->rs, &evil, junk, 9000, f->now, emit, &f->wire),
			 VT_RP_R_LONG);
	/* A's own datagrams cut short or extended. */
	assert_int_equal(vt_rs_input(f->rs, &evil, a.sent->buf[0], a.sent->len[0] - 1, f->now,
				     emit, &f->wire), VT_RP_R_DGRAM_LEN);
	assert_int_equal(vt_rs_input(f->rs, &evil, a.sent->buf[0], 20, f->now, emit, &f->wire),
			 VT_RP_R_SHORT);
	assert_int_equal(f->wire.dgrams->len, 0);
	{
		struct vt_rs_stats s = stats(f);
		uint64_t total = 0;

		assert_int_equal(s.rx - rx0, 2003);
		for (int r = 0; r < VT_RP_R_COUNT; r++)
			total += s.drops[r];
		assert_int_equal(total, 2003);
		assert_true(s.drops[VT_RP_R_MAGIC] > 0);
		assert_true(s.drops[VT_RP_R_SHORT] > 0);
		assert_true(s.drops[VT_RP_R_LONG] > 1);
	}
	/* Valid traffic is still served. */
	assert_int_equal(get_pages(f, &a, 0, 8, 1, st), 8);
	/* A tagged request whose body does not decode: EINVAL, counted. */
	{
		uint8_t bad[3] = { 1, 0, 0 };

		assert_int_equal(request(f, &a, VT_RP_GET, bad, sizeof(bad), NULL, NULL), EINVAL);
		assert_int_equal(request(f, &a, VT_RP_STAT, bad, 1, NULL, NULL), EINVAL);
		assert_int_equal(stats(f).drops[VT_RP_R_BODY], 2);
		assert_int_equal(ns_stats(f, &a).drops[VT_RP_DROP_MALFORMED], 2);
	}
	g_rand_free(rand);
	client_fini(&a);
	fixture_free(f);
}

static void test_expiry(void **state)
{
	struct fixture *f = fixture_new(0, 1ull << 30);
	uint8_t blob[SEALED] = { 3 }, body[2 + 10 + SEALED];
	struct vt_rp_put_item it = { 1, SEALED, blob };
	struct vt_rp_caps caps;
	struct client a;
	long len;

	(void)state;
	client_init(&a, 1);
	assert_int_equal(hello(f, &a, &caps), 0);
	len = vt_rp_put_encode(&it, 1, body, sizeof(body));
	assert_int_equal(vt_rp_encode(VT_RP_PUT, a.k.ns, ++a.seq, 0, body, (size_t)len,
				      VT_RP_FRAG_DEFAULT, a.k.access_key, a.sent), 3);
	assert_int_equal(vt_rs_input(f->rs, &a.peer, a.sent->buf[0], a.sent->len[0], f->now,
				     emit, &f->wire), VT_RP_OK);
	assert_int_equal(stats(f).reasm_bytes, (uint64_t)len);
	vt_rs_tick(f->rs, f->now + VT_RP_REASM_TIMEOUT_NS);
	assert_int_equal(stats(f).expired, 0);
	vt_rs_tick(f->rs, f->now + VT_RP_REASM_TIMEOUT_NS + 1);
	assert_int_equal(stats(f).expired, 1);
	assert_int_equal(stats(f).reasm_bytes, 0);
	assert_int_equal(ns_stats(f, &a).drops[VT_RP_DROP_EXPIRED], 1);
	/* Its late fragments start a new partial message that expires too: nothing stored. */
	f->now += 2 * VT_RP_REASM_TIMEOUT_NS;
	assert_int_equal(vt_rs_input(f->rs, &a.peer, a.sent->buf[1], a.sent->len[1], f->now,
				     emit, &f->wire), VT_RP_OK);
	f->now += 2 * VT_RP_REASM_TIMEOUT_NS;
	vt_rs_tick(f->rs, f->now);
	assert_int_equal(stats(f).expired, 2);
	assert_int_equal(ns_stats(f, &a).pages, 0);
	client_fini(&a);
	fixture_free(f);
}

static void test_reasm_bound(void **state)
{
	struct fixture *f;
	uint8_t blob[SEALED] = { 3 }, body[2 + 10 + SEALED];
	struct vt_rp_put_item it = { 1, SEALED, blob };
	struct vt_rp_caps caps;
	struct client a;
	char err[128];
	long len;

	(void)state;
	assert_null(vt_rs_new(&(struct vt_rs_config){ .server_cap_bytes = 0 }, err, sizeof(err)));
	assert_non_null(strstr(err, "server cap 0"));
	assert_null(vt_rs_new(&(struct vt_rs_config){ .server_cap_bytes = 1, .frag_max = 4000 },
			      err, sizeof(err)));
	assert_non_null(strstr(err, "frag max 4000 (accepted: 1024..3968)"));
	assert_null(vt_rs_new(&(struct vt_rs_config){ .server_cap_bytes = 1, .frag_max = 1023 },
			      err, sizeof(err)));
	assert_non_null(strstr(err, "frag max 1023 (accepted: 1024..3968)"));
	f = fixture_new_cfg((struct vt_rs_config) {
		.server_cap_bytes = 1 << 30, .reasm_max_bytes = 20000 });
	client_init(&a, 1);
	assert_int_equal(hello(f, &a, &caps), 0);
	len = vt_rp_put_encode(&it, 1, body, sizeof(body));
	/* Four partial 4148-byte messages fit in 20000 bytes, the fifth does not. */
	for (int i = 0; i < 5; i++) {
		assert_int_equal(vt_rp_encode(VT_RP_PUT, a.k.ns, ++a.seq, 0, body, (size_t)len,
					      VT_RP_FRAG_DEFAULT, a.k.access_key, a.sent), 3);
		assert_int_equal(vt_rs_input(f->rs, &a.peer, a.sent->buf[0], a.sent->len[0],
					     f->now, emit, &f->wire),
				 i < 4 ? VT_RP_OK : VT_RP_R_REASM_FULL);
	}
	/* A whole message still passes once partial ones expire. */
	vt_rs_tick(f->rs, f->now + 2 * VT_RP_REASM_TIMEOUT_NS);
	f->now += 2 * VT_RP_REASM_TIMEOUT_NS;
	assert_int_equal(stats(f).reasm_bytes, 0);
	{
		uint16_t st[1];

		put_pages(f, &a, 1, 1, 1, st);
		assert_int_equal(st[0], 0);
		assert_int_equal(get_pages(f, &a, 1, 1, 1, st), 1);
	}
	client_fini(&a);
	fixture_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_clients),
		cmocka_unit_test(test_jumbo),
		cmocka_unit_test(test_rogue),
		cmocka_unit_test(test_replay),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_hello_rules),
		cmocka_unit_test(test_hello_reset),
		cmocka_unit_test(test_hello_bye),
		cmocka_unit_test(test_max_namespaces),
		cmocka_unit_test(test_ns_per_addr),
		cmocka_unit_test(test_client_cap),
		cmocka_unit_test(test_client_cap_default),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_expiry),
		cmocka_unit_test(test_reasm_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
