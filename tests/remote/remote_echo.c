// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The transports' integration test program (tests/remote/test-transport.sh).
 *   remote_echo server --mode auto|afxdp|udp --addr A --port P [--if IF]
 *                      [--xdp-prog PATH] [--no-need-wakeup] [--busy-poll]
 *                      [--bind auto|copy|zerocopy] [--skb]
 *     echoes every datagram on the transport until SIGTERM/SIGINT; prints
 *     "READY mode=..." once open, "STATS key=value ..." at exit.
 *   remote_echo client --addr A --port P [--count N] [--min B] [--max B]
 *                      [--timeout-ms T] [--retries R] [--window W]
 *     a plain UDP socket: N datagrams of sizes B..B (both ends included),
 *     each one's bytes a function of its number; waits for each echo,
 *     resends after T ms up to R times; compares every byte. Prints
 *     "CLIENT datagrams=... p50_us=... p99_us=... bad=... lost=... retries=...";
 *     exit 0 only when every datagram came back intact. --window W keeps W
 *     datagrams in flight instead of one (bursts: the server's batches fill);
 *     it prints "CLIENT datagrams=... per_s=... bad=... lost=... retries=...".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "remote_transport.h"
#include "thread_ns.h"

#define BATCH 64
#define BUF 9000

struct opts {
	const char *role, *mode, *ifname, *xdp_prog, *bind;
	uint32_t addr;
	uint16_t port;
	unsigned count, min, max, timeout_ms, retries, window;
	bool no_need_wakeup, busy_poll, skb;
};

/* datagram @seq's bytes: its number, then a xorshift stream seeded by it */
static void fill(uint8_t *b, size_t len, uint64_t seq)
{
	uint64_t s = seq * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	memcpy(b, &seq, sizeof(seq));
	for (i = sizeof(seq); i < len; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		b[i] = (uint8_t)s;
	}
}

static size_t size_of(const struct opts *o, unsigned i)
{
	unsigned span = o->max - o->min + 1;

	/* both ends, then a stride that visits the whole range */
	if (i == 0)
		return o->min;
	if (i == 1)
		return o->max;
	return o->min + (size_t)((uint64_t)i * 2654435761u % span);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Check an echo: its number (< @limit) and every byte; returns the number or -1 */
static int64_t check_echo(const struct opts *o, const uint8_t *rx, ssize_t r, uint8_t *scratch,
			  uint64_t limit)
{
	uint64_t got;

	if (r < (ssize_t)sizeof(got))
		return -1;
	memcpy(&got, rx, sizeof(got));
	if (got >= limit || (size_t)r != size_of(o, (unsigned)got))
		return -1;
	fill(scratch, (size_t)r, got);
	return memcmp(scratch, rx, (size_t)r) ? -1 : (int64_t)got;
}

/*
 * W datagrams in flight; after @timeout_ms without an echo, every missing one
 * again, at most @retries times in a row without progress
 */
static int client_window(const struct opts *o, int fd)
{
	uint8_t *tx = malloc(BUF), *rx = malloc(BUF), *done = calloc(o->count, 1);
	unsigned lo = 0, hi = 0, bad = 0, lost = 0, retries = 0, rounds = 0, i;
	uint64_t t0 = vt_now_ns(), dt;

	if (!tx || !rx || !done)
		return 2;
	while (lo < o->count) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t got;
		ssize_t r;

		while (hi < o->count && hi - lo < o->window) {
			fill(tx, size_of(o, hi), hi);
			if (send(fd, tx, size_of(o, hi), 0) < 0 && errno != ENOBUFS && errno != EAGAIN) {
				perror("send");
				return 2;
			}
			hi++;
		}
		if (poll(&p, 1, (int)o->timeout_ms) <= 0) {
			if (++rounds > o->retries) {
				for (i = lo; i < hi; i++)
					lost += !done[i];
				lost += o->count - hi;
				break;
			}
			for (i = lo; i < hi; i++) {
				if (done[i])
					continue;
				fill(tx, size_of(o, i), i);
				send(fd, tx, size_of(o, i), 0);
				retries++;
			}
			continue;
		}
		while ((r = recv(fd, rx, BUF, MSG_DONTWAIT)) >= 0) {
			got = check_echo(o, rx, r, tx, hi);
			if (got < 0)
				bad++;
			else
				done[got] = 1;
		}
		while (lo < hi && done[lo]) {
			lo++;
			rounds = 0;	/* progress: the retry bound is per stall */
		}
	}
	dt = vt_now_ns() - t0;
	printf("CLIENT datagrams=%u per_s=%.0f p50_us=0 p99_us=0 bad=%u lost=%u retries=%u window=%u\n",
	       o->count, o->count * 1e9 / (double)dt, bad, lost, retries, o->window);
	free(tx);
	free(rx);
	free(done);
	return bad || lost ? 1 : 0;
}

static int client(const struct opts *o)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	uint64_t *lat = calloc(o->count, sizeof(*lat));
	uint8_t *tx = malloc(BUF), *rx = malloc(BUF);
	unsigned i, bad = 0, lost = 0, retries = 0, late = 0;
	int fd, c;

	sa.sin_addr.s_addr = htonl(o->addr);
	sa.sin_port = htons(o->port);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || !lat || !tx || !rx) {
		perror("client socket");
		return 2;
	}
	if (o->window > 1) {
		int sz = 4 << 20;

		/* root: past rmem_max, so the client's own socket drops nothing */
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		free(lat);
		free(tx);
		free(rx);
		c = client_window(o, fd);
		close(fd);
		return c;
	}
	for (i = 0; i < o->count; i++) {
		size_t len = size_of(o, i);
		uint64_t seq = i, t0 = vt_now_ns();
		unsigned tries = 0;
		bool done = false;

		fill(tx, len, seq);
		while (!done) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			uint64_t deadline;

			if (send(fd, tx, len, 0) != (ssize_t)len) {
				perror("send");
				return 2;
			}
			deadline = vt_now_ns() + (uint64_t)o->timeout_ms * 1000000u;
			while (!done) {
				uint64_t t = vt_now_ns();
				ssize_t r;
				uint64_t got;

				if (t >= deadline)
					break;
				if (poll(&p, 1, (int)((deadline - t) / 1000000u) + 1) <= 0)
					continue;
				r = recv(fd, rx, BUF, MSG_DONTWAIT);
				if (r < 0)
					continue;
				if (r < (ssize_t)sizeof(got)) {
					bad++;
					continue;
				}
				memcpy(&got, rx, sizeof(got));
				if (got > seq) {
					bad++;	/* never sent yet */
					continue;
				}
				fill(tx, size_of(o, (unsigned)got), got);
				if ((size_t)r != size_of(o, (unsigned)got) || memcmp(tx, rx, (size_t)r)) {
					bad++;
				} else if (got == seq) {
					lat[i] = vt_now_ns() - t0;
					done = true;
				} else {
					late++;	/* an earlier one's echo, intact: a retry's twin */
				}
				fill(tx, len, seq);
			}
			if (!done && ++tries > o->retries) {
				lost++;
				lat[i] = vt_now_ns() - t0;
				break;
			}
			if (!done)
				retries++;
		}
	}
	qsort(lat, o->count, sizeof(*lat), cmp_u64);
	printf("CLIENT datagrams=%u p50_us=%.1f p99_us=%.1f bad=%u lost=%u retries=%u late=%u\n",
	       o->count, lat[o->count / 2] / 1000.0, lat[(size_t)o->count * 99 / 100] / 1000.0,
	       bad, lost, retries, late);
	close(fd);
	free(lat);
	free(tx);
	free(rx);
	return bad || lost ? 1 : 0;
}

static void print_stats(const char *tag, struct vt_rt *rt)
{
	struct vt_rt_stats st;
	unsigned i;

	vt_rt_stats(rt, &st);
	printf("%s mode=%s rx=%llu tx=%llu rx_dropped=%llu rx_too_big=%llu rx_kernel_dropped=%llu "
	       "tx_busy=%llu tx_refused=%llu queues=%u need_wakeup=%d busy_poll=%d xdp_native=%d",
	       tag, st.mode, (unsigned long long)st.rx, (unsigned long long)st.tx,
	       (unsigned long long)st.rx_dropped, (unsigned long long)st.rx_too_big,
	       (unsigned long long)st.rx_kernel_dropped, (unsigned long long)st.tx_busy,
	       (unsigned long long)st.tx_refused, st.queues, st.need_wakeup, st.busy_poll,
	       st.xdp_native);
	for (i = 1; i < VT_RF_NR; i++)
		printf(" refused_%s=%llu", vt_rf_verdict_name(i), (unsigned long long)st.rx_refused[i]);
	printf(" fallback=\"%s\"\n", st.fallback);
	fflush(stdout);
}

static int server(const struct opts *o)
{
	struct vt_rt_config cfg = {
		.ifname = o->ifname, .addr = o->addr, .port = o->port, .xdp_prog = o->xdp_prog,
		.no_need_wakeup = o->no_need_wakeup, .busy_poll = o->busy_poll, .skb_mode = o->skb,
	};
	struct vt_rt_dgram d[BATCH];
	static uint8_t bufs[BATCH][BUF];
	struct vt_rt *rt;
	char reason[256];
	sigset_t ss;
	int sfd, r, i;

	if (vt_rt_mode_parse(o->mode, &cfg.mode) < 0 || vt_rt_bind_parse(o->bind, &cfg.bind) < 0) {
		fprintf(stderr, "--mode %s / --bind %s: accepted auto|afxdp|udp, auto|copy|zerocopy\n",
			o->mode, o->bind);
		return 2;
	}
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	sfd = signalfd(-1, &ss, SFD_CLOEXEC);
	r = vt_rt_open(&cfg, &rt, reason, sizeof(reason));
	if (r < 0) {
		fprintf(stderr, "open: %s\n", reason);
		return 1;
	}
	print_stats("READY", rt);
	for (;;) {
		struct pollfd p[2] = { { .fd = vt_rt_fd(rt), .events = POLLIN },
				       { .fd = sfd, .events = POLLIN } };
		int n, sent, tries = 0;

		if (!o->busy_poll && poll(p, 2, 100) < 0 && errno != EINTR)
			break;
		if (o->busy_poll)
			poll(&p[1], 1, 0);
		if (p[1].revents & POLLIN)
			break;
		for (i = 0; i < BATCH; i++) {
			d[i].buf = bufs[i];
			d[i].cap = BUF;
		}
		n = vt_rt_recv(rt, d, BATCH);
		if (n < 0) {
			fprintf(stderr, "recv: %s\n", strerror(-n));
			break;
		}
		/* a full tx ring: try again (each send drains completions), a bounded number of times */
		for (sent = 0; sent < n && tries++ < 1000;) {
			r = vt_rt_send(rt, d + sent, (unsigned)(n - sent));
			if (r < 0) {
				fprintf(stderr, "send: %s\n", strerror(-r));
				break;
			}
			sent += r;
		}
	}
	print_stats("STATS", rt);
	vt_rt_close(rt);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mode", 1, NULL, 'm' }, { "addr", 1, NULL, 'a' }, { "port", 1, NULL, 'p' },
		{ "if", 1, NULL, 'i' }, { "xdp-prog", 1, NULL, 'x' }, { "bind", 1, NULL, 'b' },
		{ "no-need-wakeup", 0, NULL, 'W' }, { "busy-poll", 0, NULL, 'B' }, { "skb", 0, NULL, 'S' },
		{ "count", 1, NULL, 'c' }, { "min", 1, NULL, 'n' }, { "max", 1, NULL, 'M' },
		{ "timeout-ms", 1, NULL, 't' }, { "retries", 1, NULL, 'r' }, { "window", 1, NULL, 'w' },
		{ 0 }
	};
	struct opts o = { .mode = "auto", .bind = "auto", .count = 10000, .min = 64, .max = 3968,
			  .timeout_ms = 1000, .retries = 0 };
	struct in_addr a;
	int c;

	if (argc < 2) {
		fprintf(stderr, "usage: remote_echo server|client OPTIONS\n");
		return 2;
	}
	o.role = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm': o.mode = optarg; break;
		case 'a':
			if (inet_pton(AF_INET, optarg, &a) != 1) {
				fprintf(stderr, "--addr %s: an IPv4 address\n", optarg);
				return 2;
			}
			o.addr = ntohl(a.s_addr);
			break;
		case 'p': o.port = (uint16_t)strtoul(optarg, NULL, 0); break;
		case 'i': o.ifname = optarg; break;
		case 'x': o.xdp_prog = optarg; break;
		case 'b': o.bind = optarg; break;
		case 'W': o.no_need_wakeup = true; break;
		case 'B': o.busy_poll = true; break;
		case 'S': o.skb = true; break;
		case 'c': o.count = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'n': o.min = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'M': o.max = (unsigned)strtoul(optarg, NULL, 0); break;
		case 't': o.timeout_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'r': o.retries = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'w': o.window = (unsigned)strtoul(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (!o.port || o.min < 8 || o.max < o.min || o.max > BUF || !o.count) {
		fprintf(stderr, "--port 1..65535, --min >= 8, --min <= --max <= %d, --count >= 1\n", BUF);
		return 2;
	}
	if (!strcmp(o.role, "server"))
		return server(&o);
	if (!strcmp(o.role, "client"))
		return client(&o);
	fprintf(stderr, "%s: accepted server, client\n", o.role);
	return 2;
}
