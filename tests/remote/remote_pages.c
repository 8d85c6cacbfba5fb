// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One VM's pages on memory servers through the remote tier's client
 * (host-agent/remote/remote_client.h), driven by tests/remote/test-memd.sh
 * in network namespaces against real vtier-memd processes. Every page read
 * back is compared with what was stored (each page's bytes depend on its id
 * and version; none is all zeros).
 *
 *   remote_pages victim --server A:P/PK ... --copies 2 --pages N
 *                 [--kill-pid PID --storm-ms MS] [--restart CMD] [--key-seed S]
 *     stores N pages, reads them all back; with --kill-pid: a storm of reads
 *     during which that server is killed (SIGKILL) a third of the way in;
 *     then repairs the copies onto the live servers and reads every page
 *     again; with two servers left down... (see the phases in main). Prints
 *     "# key=value" lines and the RESULT-REMOTE line.
 *   remote_pages rogue --server A:P/PK --victim-ns HEX --pages N
 *     another VM's client: asks its own namespace for the ids the victim
 *     uses (ENOENT), then the victim's namespace with its own tag (dropped
 *     by the server as forged: no reply). Prints disclosed=N (pages of the
 *     victim it received: must be 0).
 * Exit: 0 when every check held, 1 otherwise (the reason on stderr).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <glib.h>

#include "remote_client.h"
#include "thread_ns.h"

#define PAGE 4096
#define BATCH 32

static int failures;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "remote_pages: " __VA_ARGS__);        \
			fputc('\n', stderr);                                  \
			failures++;                                           \
		}                                                             \
	} while (0)

/*
 * Page @id at @version: a xorshift stream seeded by both, with a run of
 * equal bytes every so often (compressible pages too); never all zeros.
 */
static void content(uint64_t id, uint32_t version, uint8_t *p, size_t *len)
{
	uint64_t x = id * 0x9e3779b97f4a7c15ull ^ ((uint64_t)version << 32) ^ 0x5bd1e995;

	*len = PAGE - (id % 7 == 0 ? 1024 : 0);	/* some shorter (as compressed pages are) */
	for (size_t i = 0; i < *len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, MIN(8, *len - i));
	}
	if (id % 3 == 0)
		memset(p + 512, (int)(id & 0xff) | 1, 1024);
}

static bool parse_server(const char *text, struct vt_rc_server *s)
{
	g_auto(GStrv) a = g_strsplit_set(text, ":/", 3);
	struct in_addr in;
	guint64 port;

	if (g_strv_length(a) != 3 || inet_pton(AF_INET, a[0], &in) != 1 ||
	    !g_ascii_string_to_unsigned(a[1], 10, 1, 65535, &port, NULL) ||
	    vt_seal_pk_parse(a[2], s->pk) < 0) {
		fprintf(stderr, "remote_pages: --server '%s': expected IPV4:PORT/PUBKEYHEX\n", text);
		return false;
	}
	s->addr = ntohl(in.s_addr);
	s->port = (uint16_t)port;
	return true;
}

/* How pages are read back: the client, and how long a read may wait. */
struct reader {
	struct vt_rc *rc;
	unsigned int wait_ms;	/* -EAGAIN asked again for up to this long (0: never) */
	uint64_t waited;	/* reads that were asked again at least once */
};

/*
 * Reads page @id back and compares it: 0 ok, 1 wrong bytes, 2 zeros, 3 not
 * read. A read whose holders did not answer (-EAGAIN: every try of the
 * request lost) is asked again every WAIT_RETRY_MS up to the reader's
 * wait_ms, as vtierd's fault service asks a waiting fault again
 * (WAITING_RETRY_MS in movers/ctier_mover_int.h); any other error is final.
 */
#define WAIT_RETRY_MS 10

static int check_page(struct reader *rd, uint64_t id, uint32_t version)
{
	uint8_t want[PAGE], got[PAGE];
	size_t wlen, glen = 0;
	static const uint8_t zero[PAGE];
	uint64_t end = vt_now_ns() + (uint64_t)rd->wait_ms * 1000000;
	int r;

	content(id, version, want, &wlen);
	for (bool again = false;; again = true) {
		r = vt_rc_get(rd->rc, id, got, sizeof(got), &glen);
		if (r != -EAGAIN || vt_now_ns() >= end)
			break;
		rd->waited += !again;
		g_usleep(WAIT_RETRY_MS * 1000);
	}
	if (r < 0)
		return 3;
	if (glen == wlen && !memcmp(got, want, wlen))
		return 0;
	return glen && !memcmp(got, zero, MIN(glen, sizeof(zero))) ? 2 : 1;
}

/*
 * The rogue's own GET of page @id, by hand (not through the client): in
 * namespace @ns, tagged with @access_key. 0: a page came back (disclosed);
 * -ENOENT: the server said it holds no such page there; -ETIMEDOUT: no
 * reply (the server dropped it).
 */
static int raw_get(struct vt_rt *rt, const struct vt_rc_server *s, const uint8_t *ns,
		   const uint8_t *access_key, uint64_t id, uint64_t *seq)
{
	static struct vt_rp_dgrams out;
	uint8_t body[16], rx[VT_RP_DGRAM_MAX];
	long len = vt_rp_ids_encode(&id, 1, body, sizeof(body));
	struct vt_rt_dgram d;
	uint64_t end;

	if (len < 0 || vt_rp_encode(VT_RP_GET, ns, ++*seq, 0, body, (size_t)len,
				    VT_RP_FRAG_DEFAULT, access_key, &out) != 1)
		return -EINVAL;
	d = (struct vt_rt_dgram){ .peer = { .peer_addr = s->addr, .peer_port = s->port },
				  .buf = out.buf[0], .len = out.len[0] };
	if (vt_rt_send(rt, &d, 1) != 1)
		return -EIO;
	for (end = vt_now_ns() + 100000000ull; vt_now_ns() < end;) {
		struct vt_rt_dgram in = { .buf = rx, .cap = sizeof(rx) };
		struct vt_rp_reasm reasm = { 0 };
		struct vt_rp_get_item item;
		struct vt_rp_dgram dg;
		struct vt_rp_msg m;
		unsigned int n = 0, expired = 0;
		bool done = false;
		int r;

		if (vt_rt_recv(rt, &in, 1) != 1) {
			g_usleep(200);
			continue;
		}
		if (vt_rp_reply_check(in.buf, in.len, VT_RP_FRAG_LIMIT, access_key, ns, VT_RP_GET,
				      *seq, &dg) != VT_RP_OK ||
		    vt_rp_reasm_add(&reasm, &dg, vt_now_ns(), &m, &done, &expired) != VT_RP_OK || !done)
			return 0;	/* an answer we cannot read is still an answer: count it */
		r = vt_rp_get_reply_decode(m.body, m.len, &item, &n) == VT_RP_OK && n == 1 &&
		    item.status == ENOENT ? -ENOENT : 0;
		vt_rp_msg_release(&m);
		vt_rp_reasm_clear(&reasm);
		return r;
	}
	return -ETIMEDOUT;
}

struct tally {
	uint64_t read, bad, zero, unread;
};

static void tally(struct tally *t, int r)
{
	t->read++;
	t->bad += r == 1;
	t->zero += r == 2;
	t->unread += r == 3;
}

/*
 * Stores [first, first + n) at @version; a page the client could not store
 * (a request that ran out of tries on a lossy path) is stored again, as a
 * mover would, up to @again times. 0 when every page is stored.
 */
static int put_all(struct vt_rc *rc, uint64_t first, unsigned int n, uint32_t version,
		   unsigned int again)
{
	int ret = 0;

	for (unsigned int i = 0; i < n; i += BATCH) {
		struct vt_rc_page pg[BATCH];
		uint8_t (*buf)[PAGE] = g_malloc(BATCH * PAGE);
		int st[BATCH];
		unsigned int k = MIN(BATCH, n - i), left;

		for (unsigned int j = 0; j < k; j++) {
			pg[j].id = first + i + j;
			content(pg[j].id, version, buf[j], &pg[j].len);
			pg[j].data = buf[j];
		}
		for (unsigned int t = 0;; t++) {
			int r = vt_rc_put(rc, pg, k, st);

			if (!r || t == again) {
				ret = r ?: ret;
				break;
			}
			left = 0;
			for (unsigned int j = 0; j < k; j++)
				if (st[j])
					pg[left++] = pg[j];
			k = left;
		}
		g_free(buf);
	}
	return ret;
}

static void all_read(struct reader *rd, unsigned int n, struct tally *t)
{
	for (unsigned int i = 0; i < n; i++)
		tally(t, check_page(rd, i, 1));
}

/* Repairs until every page has its copies again and @up servers answer, within @ms. */
static bool repair_all(struct vt_rc *rc, unsigned int ms, unsigned int up)
{
	uint64_t end = vt_now_ns() + (uint64_t)ms * 1000000;
	struct vt_rc_stats st;

	do {
		vt_rc_repair(rc, 512);
		vt_rc_get_stats(rc, &st);
		if (!st.under_copies && st.servers_up >= up)
			return true;
		g_usleep(20000);
	} while (vt_now_ns() < end);
	return false;
}

int main(int argc, char **argv)
{
	g_auto(GStrv) servers = NULL;
	g_autofree char *restart = NULL, *victim_ns = NULL, *client = NULL, *client_if = NULL;
	g_autofree char *client_xdp = NULL;
	gint copies = 2, pages = 1024, kill_pid = 0, storm_ms = 3000, key_seed = 1, put_again = 0;
	gint wait_ms = 0;
	const GOptionEntry entries[] = {
		{ "server", 0, 0, G_OPTION_ARG_STRING_ARRAY, &servers, "a memory server", "A:P/PK" },
		{ "copies", 0, 0, G_OPTION_ARG_INT, &copies, "copies of each page", "N" },
		{ "pages", 0, 0, G_OPTION_ARG_INT, &pages, "pages stored", "N" },
		{ "kill-pid", 0, 0, G_OPTION_ARG_INT, &kill_pid, "server killed in the storm", "PID" },
		{ "storm-ms", 0, 0, G_OPTION_ARG_INT, &storm_ms, "length of the read storm", "MS" },
		{ "restart", 0, 0, G_OPTION_ARG_STRING, &restart, "restarts the killed server", "CMD" },
		{ "key-seed", 0, 0, G_OPTION_ARG_INT, &key_seed, "the VM key's seed", "S" },
		{ "put-again", 0, 0, G_OPTION_ARG_INT, &put_again, "store a failed page again", "N" },
		{ "wait-ms", 0, 0, G_OPTION_ARG_INT, &wait_ms, "a silent read asked again", "MS" },
		{ "victim-ns", 0, 0, G_OPTION_ARG_STRING, &victim_ns, "rogue: the victim's ns", "HEX" },
		{ "client", 0, 0, G_OPTION_ARG_STRING, &client, "AF_XDP: our end", "A:P" },
		{ "client-if", 0, 0, G_OPTION_ARG_STRING, &client_if, "AF_XDP: our interface", "IF" },
		{ "client-xdp", 0, 0, G_OPTION_ARG_STRING, &client_xdp, "AF_XDP: the program", "PATH" },
		{ NULL }
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("victim|rogue");
	g_autoptr(GError) e = NULL;
	struct vt_rc_config cfg = { .transport = { .mode = VT_RT_UDP } };
	struct vt_rc *rc;
	struct vt_rc_stats st;
	struct tally before = { 0 }, storm = { 0 }, after = { 0 };
	struct reader rd;
	char err[256];
	bool rogue;

	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &e) || argc != 2 || !servers) {
		fprintf(stderr, "remote_pages: %s\n", e ? e->message : "victim|rogue and --server");
		return 2;
	}
	if (wait_ms < 0 || wait_ms > 600000) {
		fprintf(stderr, "remote_pages: --wait-ms %d: takes 0 (never) .. 600000\n", wait_ms);
		return 2;
	}
	rogue = !strcmp(argv[1], "rogue");
	if (client) {
		/* the client's own end on AF_XDP (the servers on one interface) */
		struct vt_rc_server me;
		g_autofree char *spec = g_strconcat(client, "/", "00000000000000000000000000000000"
						    "00000000000000000000000000000000", NULL);

		if (!client_if || !client_xdp || !parse_server(spec, &me))
			return 2;
		cfg.transport = (struct vt_rt_config){ .mode = VT_RT_AFXDP, .ifname = client_if,
						       .addr = me.addr, .port = me.port,
						       .xdp_prog = client_xdp };
	}
	for (cfg.nr_servers = 0; servers[cfg.nr_servers]; cfg.nr_servers++)
		if (cfg.nr_servers == VT_RC_MAX_SERVERS ||
		    !parse_server(servers[cfg.nr_servers], &cfg.server[cfg.nr_servers]))
			return 2;
	cfg.copies = rogue ? 1 : (unsigned int)copies;
	for (unsigned int i = 0; i < sizeof(cfg.vm_key); i++)
		cfg.vm_key[i] = (uint8_t)(key_seed * 37 + i);
	rc = vt_rc_new(&cfg, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "remote_pages: %s\n", err);
		return 2;
	}
	rd = (struct reader){ .rc = rc, .wait_ms = (unsigned int)wait_ms };
	CHECK(vt_rc_connect(rc) == (int)cfg.nr_servers, "not every server answered HELLO");
	if (rogue) {
		uint8_t ns[VT_RP_NS_BYTES] = { 0 };
		unsigned int disclosed = 0, enoent = 0;
		struct vt_seal_keys keys;
		struct vt_rt *rt;
		uint64_t seq = (uint64_t)g_get_real_time() * 1000 + 1000000000ull;

		CHECK(victim_ns && strlen(victim_ns) == 2 * VT_RP_NS_BYTES, "--victim-ns HEX");
		for (unsigned int i = 0; victim_ns && i < VT_RP_NS_BYTES; i++)
			sscanf(victim_ns + 2 * i, "%2hhx", &ns[i]);
		vt_seal_derive(cfg.vm_key, &keys);
		if (vt_rt_open(&cfg.transport, &rt, err, sizeof(err)) < 0) {
			fprintf(stderr, "remote_pages: %s\n", err);
			return 2;
		}
		for (unsigned int i = 0; i < (unsigned int)pages; i++) {
			int r = raw_get(rt, &cfg.server[0], keys.ns, keys.access_key, i, &seq);

			enoent += r == -ENOENT;
			disclosed += r == 0;
			/* the victim's namespace, our tag: the server must stay silent */
			if (i % 64 == 0)
				disclosed += raw_get(rt, &cfg.server[0], ns, keys.access_key, i,
						     &seq) != -ETIMEDOUT;
		}
		vt_rt_close(rt);
		printf("# rogue: asked=%d enoent=%u disclosed=%u\n", pages, enoent, disclosed);
		CHECK(enoent == (unsigned int)pages, "rogue: %u of %d ids in its own namespace were "
		      "not ENOENT", pages - enoent, pages);
		CHECK(!disclosed, "rogue: %u of the victim's pages disclosed", disclosed);
		vt_rc_free(rc);
		return failures ? 1 : 0;
	}
	{
		struct vt_seal_keys k;

		vt_seal_derive(cfg.vm_key, &k);
		printf("# ns=");
		for (unsigned int i = 0; i < VT_RP_NS_BYTES; i++)
			printf("%02x", k.ns[i]);
		printf("\n");
	}
	/* 1. stored with all copies, every page read back */
	CHECK(put_all(rc, 0, (unsigned int)pages, 1, (unsigned int)put_again) == 0, "put: not every page got its copies");
	all_read(&rd, (unsigned int)pages, &before);
	/* 2. a read storm; one server killed a third of the way in */
	if (kill_pid) {
		uint64_t start = vt_now_ns(), end = start + (uint64_t)storm_ms * 1000000;
		bool killed = false;
		GRand *r = g_rand_new_with_seed(7);

		while (vt_now_ns() < end) {
			if (!killed && vt_now_ns() > start + (end - start) / 3) {
				CHECK(kill(kill_pid, SIGKILL) == 0, "kill %d: %s", kill_pid,
				      g_strerror(errno));
				killed = true;
			}
			tally(&storm, check_page(&rd, (uint64_t)g_rand_int_range(r, 0, pages), 1));
		}
		g_rand_free(r);
		/* 3. the tier takes no page it cannot copy twice... (two live servers: it can) */
		CHECK(repair_all(rc, 20000, cfg.nr_servers - 1),
		      "repair: copies not re-created within 20 s");
		all_read(&rd, (unsigned int)pages, &after);
		/* 4. the killed server restarted empty: back in the pool, its reset asked */
		if (restart) {
			struct vt_rc_server_stats s0;

			CHECK(system(restart) == 0, "restart: %s failed", restart);
			CHECK(repair_all(rc, 20000, cfg.nr_servers),
			      "restart: the server not back in the pool within 20 s");
			CHECK(put_all(rc, (uint64_t)pages, 64, 1, 0) == 0, "put after restart");
			for (unsigned int i = 0; i < 64; i++)
				tally(&after, check_page(&rd, (uint64_t)pages + i, 1));
			/*
			 * 5. pages stored again, as a page evicted anew is: version 2 goes
			 * to the page's servers of now, the old copies elsewhere are freed
			 * (test-memd.sh compares what each server holds with what we count)
			 */
			CHECK(put_all(rc, 0, (unsigned int)pages / 4, 2, 0) == 0, "put of version 2");
			for (unsigned int i = 0; i < (unsigned int)pages; i++)
				tally(&after, check_page(&rd, i, i < (unsigned int)pages / 4 ? 2 : 1));
			vt_rc_server_stats(rc, 0, &s0);
			CHECK(s0.regained == 1 && s0.pages > 0, "restart: server 0 regained %"
			      G_GUINT64_FORMAT " time(s), holds %" G_GUINT64_FORMAT " page(s)",
			      s0.regained, s0.pages);
		}
	}
	vt_rc_get_stats(rc, &st);
	for (unsigned int i = 0; i < cfg.nr_servers; i++) {
		struct vt_rc_server_stats s;

		vt_rc_server_stats(rc, i, &s);
		printf("# server %u: state=%s pages=%" G_GUINT64_FORMAT " requests=%" G_GUINT64_FORMAT
		       " retries=%" G_GUINT64_FORMAT " timeouts=%" G_GUINT64_FORMAT " lost=%"
		       G_GUINT64_FORMAT " regained=%" G_GUINT64_FORMAT " rtt_p50_us=%.1f\n", i,
		       vt_rc_state_name(s.state), s.pages, s.requests, s.retries, s.timeouts,
		       s.lost, s.regained, vt_latency_percentile(&s.rtt, 50) / 1000.0);
	}
	printf("# reads: before=%" G_GUINT64_FORMAT " storm=%" G_GUINT64_FORMAT " after=%"
	       G_GUINT64_FORMAT " fallbacks=%" G_GUINT64_FORMAT " repaired=%" G_GUINT64_FORMAT
	       " damaged=%" G_GUINT64_FORMAT "\n", before.read, storm.read, after.read,
	       st.get_fallbacks, st.repaired, st.damaged);
	printf("# victim: pages=%d fetch_p50_us=%.1f fetch_p99_us=%.1f server_kills=%d "
	       "bad_pages=%" G_GUINT64_FORMAT " zero_pages=%" G_GUINT64_FORMAT " unread=%"
	       G_GUINT64_FORMAT " repaired=%" G_GUINT64_FORMAT " waited=%" G_GUINT64_FORMAT "\n",
	       pages,
	       vt_latency_percentile(&st.get_ns, 50) / 1000.0,
	       vt_latency_percentile(&st.get_ns, 99) / 1000.0, kill_pid ? 1 : 0,
	       before.bad + storm.bad + after.bad, before.zero + storm.zero + after.zero,
	       before.unread + storm.unread + after.unread, st.repaired, rd.waited);
	CHECK(!before.bad && !storm.bad && !after.bad, "pages read back wrong");
	CHECK(!before.zero && !storm.zero && !after.zero, "pages read back as zeros");
	CHECK(!before.unread && !storm.unread && !after.unread, "pages not read (no copy answered)");
	vt_rc_free(rc);
	return failures ? 1 : 0;
}
