// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-bench remote: one round of the remote tier's 4 KiB page fetch over
 * one transport, for tests/remote/bench-remote.sh (make bench-remote), which
 * runs the rounds between two network namespaces, the transports in turn,
 * and prints the medians.
 *
 * Every transport fetches the same pages: guest-like pages (text and
 * binaries from /usr, ctier_mix.h) that lz4 makes <= 75 % of a page (the
 * compressed tiers' threshold). A fetch is what a fault on the page needs:
 *   afxdp, udp  vt_rc_get() from vtier-memd (the client library on a kernel
 *               UDP socket; the server on AF_XDP or on its UDP socket), the
 *               sealed lz4 page opened, then decompressed;
 *   afxdp2      the same with the client's own end on AF_XDP too (--client-listen
 *               and the --client-* options of its transport, as vtier-memd's);
 *   afxdp2-busy the same with busy-poll on the client's XSK (the client spins on
 *               its ring while it waits for a reply, yielding the CPU between
 *               looks, remote_client.h): the server is then run with --busy-poll
 *               (it spins on its rings too);
 *   tcp         the same GET request and reply bodies (remote_proto.h) and the
 *               same sealed blobs over one TCP connection (TCP_NODELAY, blocking
 *               I/O) to `vtier-bench remote --tcp-serve`;
 *   tcp-busy    the same with both ends spinning on their socket instead of
 *               sleeping in read() (recv MSG_DONTWAIT, the CPU yielded between
 *               looks; the server with --tcp-busy-poll): what the busy datagram
 *               ends' spin gains, given to TCP as well;
 *   local       vt_store_get() of the page from a compressed tier (lz4 x
 *               zsmalloc x node:0), which decompresses and checks it.
 * Each page fetched is compared with its original byte for byte.
 *
 * Phases of a round: the pages stored; @warmup fetches (not counted); @fetches
 * single fetches of random pages, timed one by one (p50, p99); then batches
 * of @batch pages per GET for @batch_ms (pages/s; the client's CPU time per
 * page; the server's CPU time from /proc/PID/stat: pages per server core-second).
 * Prints one line:
 *   ROUND transport=T p50_us= p99_us= pages_per_s= server_pages_per_core_s=
 *         client_cpu_us_per_page= fetches= batched_pages= bad_pages= lz4_bytes=
 *         [requests= retries= client_mode= client_busy_poll= client_rx_dropped=
 *          client_tx_busy=]     (the datagram transports: the client's requests,
 *                                 the tries it sent again after no reply in time,
 *                                 its own end's mode, "udp" or "afxdp-copy", and
 *                                 its transport's losses: remote_transport.h)
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <glib.h>

#include "bench_remote_tcp.h"
#include "ctier.h"
#include "ctier_codec.h"
#include "ctier_mix.h"
#include "remote_client.h"
#include "remote_transport_opt.h"
#include "thread_ns.h"
#include "vtier_bench.h"

#define PAGE 4096U
#define STORED_MAX (PAGE * 75 / 100)	/* the compressed tiers' default max_stored_pct */

enum kind { K_AFXDP, K_UDP, K_TCP, K_LOCAL, K_AFXDP2, K_AFXDP2_BUSY, K_TCP_BUSY, K_NR };
static const char *const kind_name[K_NR] = { "afxdp", "udp", "tcp", "local", "afxdp2",
					     "afxdp2-busy", "tcp-busy" };

/* tcp and tcp-busy: the TCP baseline (tcp-busy: both ends spin instead of sleeping) */
static bool is_tcp(enum kind k)
{
	return k == K_TCP || k == K_TCP_BUSY;
}

struct opts {
	const char *transport, *server, *store_dir, *client_listen;	/* the options' strings */
	const struct vt_rt_opt *client;	/* the client's own end: --client-transport, ... */
	gint server_pid, pages, fetches, warmup, batch, batch_ms, frag_max;
	gint64 seed;
};

/* The pages of a run: originals and their lz4 bytes. */
struct pages {
	unsigned int n;
	uint8_t *orig;			/* n x PAGE */
	uint8_t *lz4;			/* n x PAGE, page i's in its slot */
	uint32_t *lz4_len;
};

/* One transport's client side. */
struct bench {
	enum kind kind;
	const struct pages *pg;
	struct vt_rt_config end;	/* the datagram transports: the client's own end */
	const struct vt_codec_ops *codec;
	void *codec_ctx;
	struct vt_rc *rc;		/* afxdp, udp, afxdp2, afxdp2-busy */
	int fd;				/* tcp */
	struct vt_seal_keys keys;	/* tcp: the page key and namespace, as the client's */
	uint8_t *tbuf;			/* tcp: a request or reply */
	struct vt_store *store;		/* local */
	char *store_dir;
	uint64_t bad;
};

static uint64_t process_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* utime + stime of process @pid, in clock ticks; -1 when unreadable. */
static long long proc_cpu_ticks(int pid)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/stat", pid);
	g_autofree char *text = NULL;
	g_auto(GStrv) f = NULL;
	char *p;

	if (!g_file_get_contents(path, &text, NULL, NULL) || !(p = strrchr(text, ')')))
		return -1;
	f = g_strsplit(p + 2, " ", 0);	/* from field 3 (state) on */
	if (g_strv_length(f) < 13)
		return -1;
	return g_ascii_strtoll(f[11], NULL, 10) + g_ascii_strtoll(f[12], NULL, 10);
}

static bool parse_addr(const char *text, uint32_t *addr, uint16_t *port, uint8_t *pk)
{
	g_auto(GStrv) a = g_strsplit_set(text, ":/", 3);
	struct in_addr in;
	guint64 p;

	if (g_strv_length(a) != (pk ? 3u : 2u) || inet_pton(AF_INET, a[0], &in) != 1 ||
	    !g_ascii_string_to_unsigned(a[1], 10, 1, 65535, &p, NULL) ||
	    (pk && vt_seal_pk_parse(a[2], pk) < 0))
		return false;
	*addr = ntohl(in.s_addr);
	*port = (uint16_t)p;
	return true;
}

/* @n pages of text and binaries that lz4 makes <= STORED_MAX bytes. */
static int make_pages(struct pages *pg, unsigned int n, uint64_t seed, char *why, size_t wl)
{
	const struct vt_codec_ops *c = vt_codec_get(VT_CODEC_LZ4);
	void *ctx = c->ctx_new(0);
	struct vt_mix mix;
	unsigned int got = 0;
	int r = vt_mix_init(&mix, "text=1,binary=1", seed, why, wl);

	if (r < 0 || !ctx) {
		c->ctx_free(ctx);
		return r < 0 ? r : -ENOMEM;
	}
	pg->orig = g_malloc((size_t)n * PAGE);
	pg->lz4 = g_malloc((size_t)n * PAGE);
	pg->lz4_len = g_new(uint32_t, n);
	for (uint64_t i = 0; got < n && i < 64ull * n; i++) {
		uint8_t *o = pg->orig + (size_t)got * PAGE;
		int len;

		vt_mix_page(&mix, i, o);
		len = c->compress(ctx, o, PAGE, pg->lz4 + (size_t)got * PAGE, STORED_MAX);
		if (len > 0)
			pg->lz4_len[got++] = (uint32_t)len;
	}
	pg->n = got;
	c->ctx_free(ctx);
	vt_mix_free(&mix);
	if (got < n) {
		snprintf(why, wl, "--pages %u: only %u pages of /usr compress to %u bytes", n, got,
			 STORED_MAX);
		return -ENOENT;
	}
	return 0;
}

/* ---- TCP: frames of bench_remote_tcp.h on one connection ---- */

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EPIPE;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * @spin: never a sleep in read(): the socket is asked again at once
 * (MSG_DONTWAIT), the CPU yielded between looks, as the busy-polling
 * datagram ends do (remote_client.h)
 */
static int read_all(int fd, void *buf, size_t len, bool spin)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = spin ? recv(fd, p, len, MSG_DONTWAIT) : read(fd, p, len);

		if (r < 0 && spin && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			sched_yield();
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -ECONNRESET;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

/* One frame, @len body bytes after @buf's header: in one write (one segment where it fits). */
static int tcp_send(int fd, uint8_t *buf, uint8_t op, uint16_t status, size_t len)
{
	vt_bt_hdr_write(buf, &(struct vt_bt_hdr){ .len = (uint32_t)len, .op = op,
						   .status = status });
	return write_all(fd, buf, VT_BT_HDR_BYTES + len);
}

/* A frame into @buf (its body after the header): the body's length, or -errno. */
static long tcp_recv(int fd, uint8_t *buf, struct vt_bt_hdr *h, bool spin)
{
	int r = read_all(fd, buf, VT_BT_HDR_BYTES, spin);

	if (r < 0 || (r = vt_bt_hdr_read(buf, h)) < 0)
		return r;
	r = read_all(fd, buf + VT_BT_HDR_BYTES, h->len, spin);
	return r < 0 ? r : (long)h->len;
}

/*
 * The TCP baseline's server: one connection at a time, blocking (@spin: its
 * reads spin instead, read_all()); it runs until a signal ends it (nothing
 * to flush: the pages are the run's only).
 */
static int tcp_serve(const char *where, bool spin)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct vt_bt_store *pages = vt_bt_store_new();
	g_autofree uint8_t *in = g_malloc(VT_BT_HDR_BYTES + VT_BT_BODY_MAX);
	g_autofree uint8_t *out = g_malloc(VT_BT_HDR_BYTES + VT_BT_BODY_MAX);
	uint32_t addr;
	uint16_t port;
	int one = 1, ls;

	if (!parse_addr(where, &addr, &port, NULL)) {
		fprintf(stderr, "vtier-bench remote: --tcp-serve '%s': expected IPV4:PORT\n", where);
		vt_bt_store_free(pages);
		return 2;
	}
	sa.sin_addr.s_addr = htonl(addr);
	sa.sin_port = htons(port);
	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 4) < 0) {
		fprintf(stderr, "vtier-bench remote: --tcp-serve %s: %s\n", where, g_strerror(errno));
		vt_bt_store_free(pages);
		return 1;
	}
	printf("serving %s\n", where);
	fflush(stdout);
	for (;;) {
		int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			fprintf(stderr, "vtier-bench remote: accept: %s\n", g_strerror(errno));
			break;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		for (;;) {
			struct vt_bt_hdr h;
			uint16_t status;
			long len = tcp_recv(fd, in, &h, spin);
			size_t olen;

			if (len < 0)
				break;	/* closed, or a frame over the bound: the connection ends */
			olen = vt_bt_serve(pages, h.op, in + VT_BT_HDR_BYTES, (size_t)len,
					   out + VT_BT_HDR_BYTES, &status);
			if (tcp_send(fd, out, h.op | VT_RP_REPLY, status, olen) < 0)
				break;
		}
		close(fd);
	}
	close(ls);
	vt_bt_store_free(pages);
	return 1;
}

/* One request and its reply over the bench's connection: the reply body's length or -errno. */
static long tcp_call(struct bench *b, uint8_t op, size_t len)
{
	struct vt_bt_hdr h;
	long r = tcp_send(b->fd, b->tbuf, op, 0, len);

	if (r < 0)
		return r;
	r = tcp_recv(b->fd, b->tbuf, &h, b->kind == K_TCP_BUSY);
	if (r < 0)
		return r;
	if (h.op != (op | VT_RP_REPLY))
		return -EBADMSG;
	return h.status ? -(long)h.status : r;
}

/* ---- the transports' client side ---- */

/*
 * The client's own end into @tc: afxdp and udp a kernel UDP socket (their
 * lines say so; they, tcp and local take no --client-* option), afxdp2
 * AF_XDP at --client-listen, afxdp2-busy the same with busy-poll. 0 or
 * -EINVAL with @why naming the option, its value and what is accepted.
 */
static int client_end(enum kind k, const struct opts *o, struct vt_rt_config *tc, char *why,
		      size_t wl)
{
	g_autoptr(GError) e = NULL;
	const char *given = NULL;

	*tc = (struct vt_rt_config){ .mode = VT_RT_UDP };
	if (k != K_AFXDP2 && k != K_AFXDP2_BUSY) {
		if (o->client_listen)
			given = "client-listen";
		if (given || vt_rt_opt_given(o->client, &given)) {
			snprintf(why, wl, "--%s: only with --transport afxdp2 or afxdp2-busy (%s's "
				 "client end is %s)", given, kind_name[k],
				 k == K_AFXDP || k == K_UDP ? "a kernel UDP socket" :
				 is_tcp(k) ? "a TCP socket" : "none");
			return -EINVAL;
		}
		return 0;
	}
	tc->mode = VT_RT_AFXDP;
	if (!vt_rt_opt_apply(o->client, tc, &e)) {
		snprintf(why, wl, "%s", e->message);
		return -EINVAL;
	}
	if (tc->mode != VT_RT_AFXDP) {
		snprintf(why, wl, "--client-transport '%s': --transport %s runs the client on "
			 "AF_XDP: afxdp accepted", o->client->mode, kind_name[k]);
		return -EINVAL;
	}
	if (k == K_AFXDP2 && tc->busy_poll) {
		snprintf(why, wl, "--client-busy-poll: not with --transport afxdp2 (that is "
			 "afxdp2-busy)");
		return -EINVAL;
	}
	tc->busy_poll = k == K_AFXDP2_BUSY;
	/* our end's address and port: AF_XDP answers on its own port, as a server does */
	if (!o->client_listen || !parse_addr(o->client_listen, &tc->addr, &tc->port, NULL)) {
		snprintf(why, wl, "--client-listen '%s': --transport %s needs the client's own "
			 "IPV4:PORT (port 1-65535)", o->client_listen ? o->client_listen : "",
			 kind_name[k]);
		return -EINVAL;
	}
	return 0;
}

static int bench_open(struct bench *b, const struct opts *o, char *why, size_t wl)
{
	uint8_t vm_key[VT_SEAL_KEY_BYTES];

	b->codec = vt_codec_get(VT_CODEC_LZ4);
	b->codec_ctx = b->codec->ctx_new(0);
	b->fd = -1;
	if (getrandom(vm_key, sizeof(vm_key), 0) != sizeof(vm_key) || vt_seal_init() < 0 ||
	    vt_seal_derive(vm_key, &b->keys) < 0) {
		snprintf(why, wl, "keys: %s", g_strerror(errno));
		return -EIO;
	}
	if (b->kind == K_AFXDP || b->kind == K_UDP || b->kind == K_AFXDP2 ||
	    b->kind == K_AFXDP2_BUSY) {
		struct vt_rc_config cfg = { .nr_servers = 1, .copies = 1,
					    .frag_max = (size_t)o->frag_max };

		if (!o->server || !parse_addr(o->server, &cfg.server[0].addr, &cfg.server[0].port,
					      cfg.server[0].pk)) {
			snprintf(why, wl, "--server '%s': expected IPV4:PORT/PUBKEYHEX",
				 o->server ? o->server : "");
			return -EINVAL;
		}
		cfg.transport = b->end;
		memcpy(cfg.vm_key, vm_key, sizeof(vm_key));
		b->rc = vt_rc_new(&cfg, why, wl);
		if (!b->rc)
			return -EINVAL;
		if (vt_rc_connect(b->rc) != 1) {
			snprintf(why, wl, "no answer to the HELLO from %s", o->server);
			return -ETIMEDOUT;
		}
	} else if (is_tcp(b->kind)) {
		struct sockaddr_in sa = { .sin_family = AF_INET };
		uint32_t addr;
		uint16_t port;
		int one = 1;

		if (!o->server || !parse_addr(o->server, &addr, &port, NULL)) {
			snprintf(why, wl, "--server '%s': expected IPV4:PORT",
				 o->server ? o->server : "");
			return -EINVAL;
		}
		sa.sin_addr.s_addr = htonl(addr);
		sa.sin_port = htons(port);
		b->tbuf = g_malloc(VT_BT_HDR_BYTES + VT_BT_BODY_MAX);
		b->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (b->fd < 0 || connect(b->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    setsockopt(b->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
			snprintf(why, wl, "TCP to %s: %s", o->server, g_strerror(errno));
			return -errno;
		}
	} else {
		/* the backend twice the pages and 64 MiB more: room for the pool's first segments */
		struct vt_store_key key = { .page_size = PAGE,
					    .size_bytes = 2ull * b->pg->n * PAGE + (64ull << 20) };
		struct vt_ctier_spec spec;

		snprintf(key.backend_id, sizeof(key.backend_id), "bench-remote");
		if (vt_bench_tier_spec("lz4", "zsmalloc", "node:0", &spec, why, wl))
			return -EINVAL;
		b->store_dir = o->store_dir ? g_strdup(o->store_dir) :
			       g_strdup_printf("/dev/shm/vtier-bench-remote-%d", (int)getpid());
		return vt_store_open(b->store_dir, &key, &spec, 1, true, &b->store, why, wl);
	}
	return 0;
}

static void bench_close(struct bench *b)
{
	vt_rc_free(b->rc);
	if (b->fd >= 0)
		close(b->fd);
	g_free(b->tbuf);
	if (b->store) {
		vt_store_close(b->store);
		vt_store_destroy(b->store_dir);
	}
	g_free(b->store_dir);
	if (b->codec_ctx)
		b->codec->ctx_free(b->codec_ctx);
}

/*
 * Store every page, @batch per request (TCP: 4, a PUT body's bound as on
 * the datagram protocol, where the client cuts a batch in halves): 0 or -errno.
 */
static int bench_store(struct bench *b, unsigned int batch, char *why, size_t wl)
{
	const struct pages *pg = b->pg;

	if (is_tcp(b->kind))
		batch = MIN(batch, 4u);
	for (unsigned int a = 0; a < pg->n; a += batch) {
		unsigned int m = MIN(batch, pg->n - a);
		int r = 0;

		if (b->kind == K_LOCAL) {
			for (unsigned int i = a; i < a + m && !r; i++)
				r = vt_store_put(b->store, i, 0, pg->orig + (size_t)i * PAGE);
		} else if (is_tcp(b->kind)) {
			struct vt_rp_put_item it[VT_RP_BATCH_MAX];
			uint8_t *blobs = g_malloc((size_t)m * VT_RP_BLOB_MAX);
			uint16_t st[VT_RP_BATCH_MAX];
			unsigned int got = 0;
			long len;

			for (unsigned int k = 0; k < m && !r; k++) {
				size_t bl = 0;

				r = vt_seal_page(b->keys.page_key, b->keys.ns, a + k, 1,
						 pg->lz4 + (size_t)(a + k) * PAGE, pg->lz4_len[a + k],
						 blobs + (size_t)k * VT_RP_BLOB_MAX, VT_RP_BLOB_MAX,
						 &bl);
				it[k] = (struct vt_rp_put_item){
					.page_id = a + k, .blob_len = (uint16_t)bl,
					.blob = blobs + (size_t)k * VT_RP_BLOB_MAX };
			}
			len = r ? r : vt_rp_put_encode(it, m, b->tbuf + VT_BT_HDR_BYTES,
						       VT_BT_BODY_MAX);
			len = len < 0 ? len : tcp_call(b, VT_RP_PUT, (size_t)len);
			if (len >= 0 && (vt_rp_status_decode(b->tbuf + VT_BT_HDR_BYTES,
							     (size_t)len, st, &got) != VT_RP_OK ||
					 got != m))
				len = -EBADMSG;
			for (unsigned int k = 0; k < got && len >= 0; k++)
				len = st[k] ? -(long)st[k] : len;
			r = len < 0 ? (int)len : 0;
			g_free(blobs);
		} else {
			struct vt_rc_page p[VT_RP_BATCH_MAX];
			int st[VT_RP_BATCH_MAX];

			for (unsigned int k = 0; k < m; k++)
				p[k] = (struct vt_rc_page){ .id = a + k,
							    .data = pg->lz4 + (size_t)(a + k) * PAGE,
							    .len = pg->lz4_len[a + k] };
			r = vt_rc_put(b->rc, p, m, st);
		}
		if (r < 0) {
			snprintf(why, wl, "storing pages %u-%u: %s", a, a + m - 1, g_strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Sealed lz4 page @id in @blob (@len bytes) -> @out; false when it does not open or decompress. */
static bool open_page(struct bench *b, uint64_t id, const uint8_t *blob, size_t len, uint8_t *out)
{
	uint8_t lz[VT_RP_BLOB_MAX];
	size_t lzlen = 0;

	if (is_tcp(b->kind)) {
		if (vt_seal_page_open(b->keys.page_key, b->keys.ns, id, 1, blob, len, lz,
				      sizeof(lz), &lzlen) < 0)
			return false;
		blob = lz;
		len = lzlen;
	}
	return b->codec->decompress(b->codec_ctx, blob, len, out, PAGE) == (int)PAGE;
}

/*
 * Fetch pages @ids[0..@n) (@n 1..VT_RP_BATCH_MAX, one GET) into @out (n x PAGE);
 * a page that did not come back stays zeroes, counted bad by check().
 */
static void bench_fetch(struct bench *b, const uint64_t *ids, unsigned int n, uint8_t *out)
{
	uint8_t blob[VT_RP_BLOB_MAX];

	memset(out, 0, (size_t)n * PAGE);
	if (b->kind == K_LOCAL) {
		for (unsigned int i = 0; i < n; i++)
			vt_store_get(b->store, ids[i], out + (size_t)i * PAGE);
	} else if (is_tcp(b->kind)) {
		struct vt_rp_get_item it[VT_RP_BATCH_MAX];
		uint8_t *body = b->tbuf + VT_BT_HDR_BYTES;
		long len = vt_rp_ids_encode(ids, n, body, VT_BT_BODY_MAX);
		unsigned int got = 0;

		len = len < 0 ? len : tcp_call(b, VT_RP_GET, (size_t)len);
		if (len < 0 || vt_rp_get_reply_decode(body, (size_t)len, it, &got) != VT_RP_OK ||
		    got != n)
			return;
		for (unsigned int i = 0; i < n; i++)
			if (it[i].page_id == ids[i] && !it[i].status)
				open_page(b, ids[i], it[i].blob, it[i].blob_len,
					  out + (size_t)i * PAGE);
	} else if (n == 1) {
		size_t len = 0;

		if (vt_rc_get(b->rc, ids[0], blob, sizeof(blob), &len) == 0)
			open_page(b, ids[0], blob, len, out);
	} else {
		uint8_t *lz = g_malloc((size_t)n * VT_RP_BLOB_MAX);
		void *bufs[VT_RP_BATCH_MAX];
		size_t lens[VT_RP_BATCH_MAX];
		int st[VT_RP_BATCH_MAX];

		for (unsigned int i = 0; i < n; i++)
			bufs[i] = lz + (size_t)i * VT_RP_BLOB_MAX;
		vt_rc_get_batch(b->rc, ids, n, bufs, VT_RP_BLOB_MAX, lens, st);
		for (unsigned int i = 0; i < n; i++)
			if (!st[i])
				open_page(b, ids[i], bufs[i], lens[i], out + (size_t)i * PAGE);
		g_free(lz);
	}
}

static unsigned int check(struct bench *b, const uint64_t *ids, unsigned int n, const uint8_t *out)
{
	unsigned int bad = 0;

	for (unsigned int i = 0; i < n; i++)
		bad += memcmp(out + (size_t)i * PAGE, b->pg->orig + ids[i] * PAGE, PAGE) != 0;
	b->bad += bad;
	return bad;
}

/* The pages' mean lz4 size (a sealed blob is VT_SEAL_PAGE_OVERHEAD more: nonce and tag). */
static double lz4_mean(const struct pages *pg)
{
	uint64_t sum = 0;

	for (unsigned int i = 0; i < pg->n; i++)
		sum += pg->lz4_len[i];
	return (double)sum / (double)MAX(pg->n, 1u);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int vt_bench_remote(int argc, char **argv)
{
	g_autofree char *transport = NULL, *server = NULL, *tcp_serve_at = NULL, *store_dir = NULL;
	g_autofree char *client_listen = NULL;
	gboolean tcp_spin = FALSE;
	g_auto(vt_rt_opt_auto) client = { 0 };
	struct opts o = { .pages = 1024, .fetches = 4000, .warmup = 500, .batch = 32,
			  .batch_ms = 1000, .seed = 1 };
	const GOptionEntry entries[] = {
		{ "transport", 't', 0, G_OPTION_ARG_STRING, &transport,
		  "afxdp, udp (vtier-memd at --server), afxdp2, afxdp2-busy (the same, the "
		  "client's end on AF_XDP too), tcp, tcp-busy (--tcp-serve at --server; "
		  "tcp-busy: the client's reads spin), local", "T" },
		{ "server", 's', 0, G_OPTION_ARG_STRING, &server,
		  "the server: IPV4:PORT/PUBKEYHEX (afxdp, udp), IPV4:PORT (tcp)", "ADDR" },
		{ "server-pid", 0, 0, G_OPTION_ARG_INT, &o.server_pid,
		  "the server's pid, for its CPU time (/proc/PID/stat)", "PID" },
		{ "pages", 'n', 0, G_OPTION_ARG_INT, &o.pages, "pages stored (default 1024)", "N" },
		{ "fetches", 'f', 0, G_OPTION_ARG_INT, &o.fetches,
		  "single fetches timed (default 4000)", "N" },
		{ "warmup", 'w', 0, G_OPTION_ARG_INT, &o.warmup,
		  "fetches before those, not counted (default 500)", "N" },
		{ "batch", 'b', 0, G_OPTION_ARG_INT, &o.batch,
		  "pages per GET in the throughput phase, 1-64 (default 32)", "N" },
		{ "batch-ms", 0, 0, G_OPTION_ARG_INT, &o.batch_ms,
		  "length of the throughput phase (default 1000)", "MS" },
		{ "frag-max", 0, 0, G_OPTION_ARG_INT, &o.frag_max,
		  "the datagram transports: the client's largest datagram body (default 1400: "
		  "MTU 1500)", "N" },
		{ "seed", 0, 0, G_OPTION_ARG_INT64, &o.seed, "pages and order (default 1)", "S" },
		{ "store-dir", 0, 0, G_OPTION_ARG_FILENAME, &store_dir,
		  "local: the store (default /dev/shm/vtier-bench-remote-PID)", "DIR" },
		{ "client-listen", 0, 0, G_OPTION_ARG_STRING, &client_listen,
		  "afxdp2, afxdp2-busy: the client's own end, IPV4:PORT", "ADDR" },
		{ "tcp-serve", 0, 0, G_OPTION_ARG_STRING, &tcp_serve_at,
		  "be the TCP baseline's server on IPV4:PORT until a signal ends it", "ADDR" },
		{ "tcp-busy-poll", 0, 0, G_OPTION_ARG_NONE, &tcp_spin,
		  "--tcp-serve: the server's reads spin instead of sleeping (for tcp-busy)", NULL },
		{ NULL }
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new(
		"- one round of the remote tier's 4 KiB fetch over one transport");
	struct pages pg = { 0 };
	struct bench b = { .pg = &pg };
	g_autofree uint64_t *lat = NULL, *ids = NULL;
	g_autofree uint8_t *out = NULL;
	char why[512] = "";
	uint64_t t0, t1, c0, c1, batched = 0;
	long long s0 = -1, s1 = -1;
	double wall_s, server_s;
	GRand *rnd;
	int r, ret = 1;

	/* afxdp2, afxdp2-busy: --client-transport, --client-interface, ... (vtier-memd's, prefixed) */
	g_option_context_add_main_entries(ctx, vt_rt_opt_entries(&client, "client-", "afxdp"), NULL);
	if (!vt_bench_options(ctx, entries, &argc, &argv, "remote"))
		return 2;
	if (tcp_serve_at)
		return tcp_serve(tcp_serve_at, tcp_spin);
	if (tcp_spin) {
		fprintf(stderr, "vtier-bench remote: --tcp-busy-poll: only with --tcp-serve (the "
			"client of tcp-busy spins by its --transport)\n");
		return 2;
	}
	o.transport = transport;
	o.server = server;
	o.store_dir = store_dir;
	o.client_listen = client_listen;
	o.client = &client;
	for (r = 0; r < K_NR && (!o.transport || strcmp(o.transport, kind_name[r])); r++)
		;
	if (r == K_NR || o.pages < 1 || o.fetches < 1 || o.warmup < 0 || o.batch < 1 ||
	    o.batch > VT_RP_BATCH_MAX || o.batch_ms < 1) {
		fprintf(stderr, "vtier-bench remote: --transport afxdp|udp|afxdp2|afxdp2-busy|tcp|"
			"tcp-busy|local is required "
			"(given '%s'); --pages, --fetches >= 1, --warmup >= 0, --batch 1-%d, "
			"--batch-ms >= 1\n", o.transport ? o.transport : "", VT_RP_BATCH_MAX);
		return 2;
	}
	b.kind = (enum kind)r;
	r = client_end(b.kind, &o, &b.end, why, sizeof(why));
	if (!r)
		r = make_pages(&pg, (unsigned int)o.pages, (uint64_t)o.seed, why, sizeof(why));
	if (!r)
		r = bench_open(&b, &o, why, sizeof(why));
	if (!r)
		r = bench_store(&b, (unsigned int)o.batch, why, sizeof(why));
	if (r < 0)
		goto out;

	rnd = g_rand_new_with_seed((guint32)o.seed);
	ids = g_new(uint64_t, (size_t)o.warmup + (size_t)o.fetches);
	for (gint i = 0; i < o.warmup + o.fetches; i++)
		ids[i] = (uint64_t)g_rand_int_range(rnd, 0, (gint32)pg.n);
	lat = g_new(uint64_t, o.fetches);
	out = g_malloc((size_t)VT_RP_BATCH_MAX * PAGE);
	for (gint i = 0; i < o.warmup + o.fetches; i++) {
		t0 = vt_now_ns();
		bench_fetch(&b, &ids[i], 1, out);
		t1 = vt_now_ns();
		if (i >= o.warmup)
			lat[i - o.warmup] = t1 - t0;
		check(&b, &ids[i], 1, out);
	}
	qsort(lat, (size_t)o.fetches, sizeof(*lat), cmp_u64);

	/* throughput: batches of random pages (checked too) for batch_ms */
	if (o.server_pid > 0)
		s0 = proc_cpu_ticks(o.server_pid);
	c0 = process_cpu_ns();
	t0 = vt_now_ns();
	do {
		uint64_t bids[VT_RP_BATCH_MAX];

		for (gint k = 0; k < o.batch; k++)
			bids[k] = (uint64_t)g_rand_int_range(rnd, 0, (gint32)pg.n);
		bench_fetch(&b, bids, (unsigned int)o.batch, out);
		check(&b, bids, (unsigned int)o.batch, out);
		batched += (uint64_t)o.batch;
		t1 = vt_now_ns();
	} while (t1 - t0 < (uint64_t)o.batch_ms * 1000000ULL);
	c1 = process_cpu_ns();
	if (o.server_pid > 0)
		s1 = proc_cpu_ticks(o.server_pid);
	g_rand_free(rnd);
	wall_s = (double)(t1 - t0) / 1e9;
	server_s = s0 >= 0 && s1 >= 0 ? (double)(s1 - s0) / (double)sysconf(_SC_CLK_TCK) : 0;
	printf("ROUND transport=%s p50_us=%.1f p99_us=%.1f pages_per_s=%.0f ", kind_name[b.kind],
	       (double)lat[(size_t)o.fetches * 50 / 100] / 1e3,
	       (double)lat[MIN((size_t)o.fetches * 99 / 100, (size_t)o.fetches - 1)] / 1e3,
	       (double)batched / wall_s);
	if (server_s > 0)
		printf("server_pages_per_core_s=%.0f ", (double)batched / server_s);
	else
		printf("server_pages_per_core_s=na ");
	printf("client_cpu_us_per_page=%.2f fetches=%d batched_pages=%llu bad_pages=%llu "
	       "lz4_bytes=%.0f", (double)(c1 - c0) / 1e3 / (double)batched, o.fetches,
	       (unsigned long long)batched, (unsigned long long)b.bad, lz4_mean(&pg));
	if (b.rc) {
		struct vt_rc_server_stats ss;
		struct vt_rt_stats ts;

		vt_rc_server_stats(b.rc, 0, &ss);
		vt_rc_transport_stats(b.rc, &ts);
		printf(" requests=%llu retries=%llu client_mode=%s client_busy_poll=%d "
		       "client_rx_dropped=%llu client_tx_busy=%llu", (unsigned long long)ss.requests,
		       (unsigned long long)ss.retries, ts.mode, ts.busy_poll,
		       (unsigned long long)ts.rx_dropped, (unsigned long long)ts.tx_busy);
	}
	printf("\n");
	ret = b.bad ? 1 : 0;
	if (b.bad)
		fprintf(stderr, "vtier-bench remote: %llu pages came back wrong or not at all\n",
			(unsigned long long)b.bad);
out:
	if (r < 0)
		fprintf(stderr, "vtier-bench remote: %s: %s\n", kind_name[b.kind],
			why[0] ? why : g_strerror(-r));
	bench_close(&b);
	g_free(pg.orig);
	g_free(pg.lz4);
	g_free(pg.lz4_len);
	return ret;
}
