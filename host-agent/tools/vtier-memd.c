// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-memd: a memory server of vtier's remote tier (docs/remote.md). It
 * keeps the sealed pages of its clients' VMs in its own memory, one
 * namespace per VM within a per-namespace, a per-client-address and a server
 * cap, and serves PUT / GET / FREE over AF_XDP (libxdp; its XDP program
 * steers the port to an XSK, all other traffic passes) or, where AF_XDP
 * cannot be set up, a kernel UDP socket. The pages are opaque to it: sealed
 * by the client with a key it never sees. One serving thread: a poll loop
 * over the transport and a signalfd (with --busy-poll it never sleeps: it
 * spins on the rings, yielding the CPU between looks); the server state
 * (host-agent/remote/remote_server.h) is its own. Its counters go to files,
 * never to a socket of its own: JSON (--stats-file) and Prometheus text for
 * node_exporter's textfile collector (--metrics-file): every second the loop
 * copies them between batches and a writer thread (memd_writer.h) renders
 * and writes the files.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <bpf/libbpf.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <xdp/libxdp.h>

#include "memd_writer.h"
#include "remote_server.h"
#include "remote_transport.h"
#include "remote_transport_opt.h"
#include "size.h"
#include "thread_ns.h"

#define BATCH 64
#define TICK_NS (100ull * 1000 * 1000)
#define STATE_DIR_DEFAULT "/var/lib/vtier-memd"
#define KEY_FILE "server.key"

struct memd {
	struct vt_rt *rt;
	struct vt_rs *rs;
	/* the replies of one received batch, sent together */
	struct vt_rt_dgram tx[BATCH * VT_RP_MAX_FRAGS];
	uint8_t txbuf[BATCH * VT_RP_MAX_FRAGS][VT_RP_DGRAM_MAX];
	unsigned int ntx;
	const struct vt_rt_dgram *req;	/* the request being answered */
	uint64_t tx_lost;		/* replies the transport did not take */
	struct vt_memd_writer *writer;
	double start_time;		/* Unix seconds */
	uint64_t start_ns;		/* monotonic */
	uint64_t take_ns, take_max_ns;	/* the last snapshot's copy and the longest: the loop waited */
	bool spin;			/* busy-poll: the loop never sleeps in poll() */
};

static void flush_tx(struct memd *m)
{
	unsigned int sent = 0;

	while (sent < m->ntx) {
		int r = vt_rt_send(m->rt, m->tx + sent, m->ntx - sent);

		if (r <= 0)
			break;
		sent += (unsigned int)r;
	}
	m->tx_lost += m->ntx - sent;	/* the client asks again: its request times out */
	m->ntx = 0;
}

/* A reply datagram: to the request's peer, from the address it came to. */
static void emit(void *arg, const struct vt_rs_peer *peer, const uint8_t *dgram, size_t len)
{
	struct memd *m = arg;
	struct vt_rt_dgram *d;

	(void)peer;		/* the same as the request's, which has the MACs too */
	if (m->ntx == G_N_ELEMENTS(m->tx))
		flush_tx(m);
	d = &m->tx[m->ntx];
	memcpy(m->txbuf[m->ntx], dgram, len);
	*d = (struct vt_rt_dgram){ .peer = m->req->peer, .queue = m->req->queue,
				   .buf = m->txbuf[m->ntx], .len = len };
	m->ntx++;
}

static void serve(struct memd *m)
{
	static const size_t cap = VT_RP_DGRAM_MAX;
	struct vt_rt_dgram rx[BATCH];
	uint8_t (*buf)[VT_RP_DGRAM_MAX] = g_malloc(BATCH * VT_RP_DGRAM_MAX);

	for (;;) {
		int n;

		for (unsigned int i = 0; i < BATCH; i++)
			rx[i] = (struct vt_rt_dgram){ .buf = buf[i], .cap = cap };
		n = vt_rt_recv(m->rt, rx, BATCH);
		if (n <= 0)
			break;
		for (int i = 0; i < n; i++) {
			struct vt_rs_peer p = { .addr = rx[i].peer.peer_addr,
						.port = rx[i].peer.peer_port };

			m->req = &rx[i];
			vt_rs_input(m->rs, &p, rx[i].buf, rx[i].len, vt_now_ns(), emit, m);
		}
		flush_tx(m);
	}
	g_free(buf);
}

/* The counters now, with the program's own (the serving thread's time for it too). */
static struct vt_memd_snapshot *snapshot(struct memd *m)
{
	uint64_t t0 = vt_now_ns();
	struct vt_memd_snapshot *snap = vt_memd_snapshot_take(m->rs, m->rt);

	snap->tx_lost = m->tx_lost;
	snap->start_time = m->start_time;
	snap->uptime = (double)(t0 - m->start_ns) / 1e9;
	snap->take_ns = m->take_ns;	/* the one before: this one is still being taken */
	snap->take_max_ns = m->take_max_ns;
	m->take_ns = vt_now_ns() - t0;
	m->take_max_ns = MAX(m->take_max_ns, m->take_ns);
	return snap;
}

static void log_stats(struct memd *m, const char *what)
{
	struct vt_memd_snapshot *snap = snapshot(m);
	g_autofree char *json = vt_memd_stats_json(snap);

	g_message("%s: %s", what, json);
	vt_memd_snapshot_free(snap);
}

/* libbpf's and libxdp's own words: into our log, warnings as warnings, the rest at debug. */
static void lib_print(const char *lib, bool warn, const char *fmt, va_list ap)
{
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);

	g_strchomp(msg);
	if (warn)
		g_message("%s: %s", lib, msg);
	else
		g_debug("%s: %s", lib, msg);
}

static int bpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	lib_print("libbpf", level == LIBBPF_WARN, fmt, ap);
	return 0;
}

static int xdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	lib_print("libxdp", level == LIBXDP_WARN, fmt, ap);
	return 0;
}

/* Half of MemAvailable at start: the server cap when none is given. */
static uint64_t default_server_cap(void)
{
	g_autofree char *text = NULL;
	const char *p;

	if (!g_file_get_contents("/proc/meminfo", &text, NULL, NULL))
		return 0;
	p = strstr(text, "MemAvailable:");
	if (!p)
		return 0;
	return g_ascii_strtoull(p + strlen("MemAvailable:"), NULL, 10) * 1024 / 2;
}

/* --NAME SIZE: a size above 0 (vt_parse_size's grammar); the error names the option. */
static bool parse_cap(const char *name, const char *text, uint64_t *out, GError **error)
{
	const char *accepted = "(accepted: a size above 0, e.g. 4096, 512MiB, 32GiB)";

	if (!*text) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--%s '': empty %s",
			    name, accepted);
		return false;
	}
	if (!vt_parse_size(text, out, error)) {
		g_prefix_error(error, "--%s: ", name);
		return false;
	}
	if (*out == 0) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--%s '%s': 0 bytes %s",
			    name, text, accepted);
		return false;
	}
	return true;
}

static bool parse_listen(const char *text, uint32_t *addr, uint16_t *port, GError **error)
{
	g_autofree char *host = NULL;
	const char *colon = strrchr(text, ':');
	struct in_addr a;
	guint64 p;

	if (!colon || !g_ascii_string_to_unsigned(colon + 1, 10, 1, 65535, &p, NULL)) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--listen '%s': "
			    "expected IPV4:PORT (port 1-65535), e.g. 10.0.0.2:7500", text);
		return false;
	}
	host = g_strndup(text, colon - text);
	if (inet_pton(AF_INET, host, &a) != 1) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--listen '%s': '%s' "
			    "is not an IPv4 address (0.0.0.0 for any)", text, host);
		return false;
	}
	*addr = ntohl(a.s_addr);
	*port = (uint16_t)p;
	return true;
}

/* The key pair in @dir: loaded, or made at the first start. */
static bool server_key(const char *dir, struct vt_seal_server_key *key, GError **error)
{
	g_autofree char *path = g_build_filename(dir, KEY_FILE, NULL);
	char err[256] = "";
	int r;

	if (g_mkdir_with_parents(dir, 0700) < 0) {
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "--state-dir %s: %s",
			    dir, g_strerror(errno));
		return false;
	}
	r = vt_seal_server_key_load(path, key, err, sizeof(err));
	if (r == -ENOENT) {
		r = vt_seal_server_key_create(path, key, err, sizeof(err));
		if (!r)
			g_message("new key pair in %s", path);
	}
	if (r) {
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "%s", err[0] ? err :
			    g_strerror(-r));
		return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	g_autofree char *listen = NULL;
	g_autofree char *ns_cap = NULL, *server_cap = NULL, *client_cap = NULL, *state_dir = NULL;
	gboolean show_key = FALSE;
	g_auto(vt_rt_opt_auto) topt = { 0 };
	g_autofree char *stats_file = NULL, *metrics_file = NULL;
	gint frag_max = 0, ns_per_client = 0;
	g_autofree struct memd *m = g_new0(struct memd, 1);
	const GOptionEntry entries[] = {
		{ "listen", 'l', 0, G_OPTION_ARG_STRING, &listen,
		  "IPv4 address and UDP port to serve on (required)", "ADDR:PORT" },
		{ "frag-max", 0, 0, G_OPTION_ARG_INT, &frag_max,
		  "largest body bytes in one datagram, 256-3968 (default 1400: MTU 1500)", "N" },
		{ "ns-cap", 0, 0, G_OPTION_ARG_STRING, &ns_cap,
		  "bytes one namespace (one VM) may hold (default 1GiB)", "SIZE" },
		{ "ns-per-client", 0, 0, G_OPTION_ARG_INT, &ns_per_client,
		  "namespaces one client address may create, 1-4096 (default 256)", "N" },
		{ "server-cap", 0, 0, G_OPTION_ARG_STRING, &server_cap,
		  "bytes all namespaces may hold (default: half of MemAvailable at start)", "SIZE" },
		{ "client-cap", 0, 0, G_OPTION_ARG_STRING, &client_cap,
		  "bytes all namespaces one client address created may hold "
		  "(default: half the server cap)", "SIZE" },
		{ "state-dir", 0, 0, G_OPTION_ARG_FILENAME, &state_dir,
		  "where the key pair is kept (default " STATE_DIR_DEFAULT ")", "DIR" },
		{ "stats-file", 0, 0, G_OPTION_ARG_FILENAME, &stats_file,
		  "write the counters as JSON there every second and at exit", "PATH" },
		{ "metrics-file", 0, 0, G_OPTION_ARG_FILENAME, &metrics_file,
		  "write them as Prometheus text there every second and at exit, for "
		  "node_exporter's textfile collector (a .prom file; empty: none)", "PATH" },
		{ "show-key", 0, 0, G_OPTION_ARG_NONE, &show_key,
		  "print the public key clients are configured with, and exit", NULL },
		{ NULL }
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("- vtier's memory server");
	g_autoptr(GError) e = NULL;
	struct vt_rt_config tc = { 0 };
	struct vt_rs_config sc = { 0 };
	char reason[256] = "";
	struct pollfd pfd[2];
	uint64_t next_tick, next_stats;
	sigset_t sigs;
	int sfd, r;
	bool quit = false;

	g_option_context_add_main_entries(ctx, entries, NULL);
	/* --transport, --interface, --xdp-bind, ...: as a client's end takes them */
	g_option_context_add_main_entries(ctx, vt_rt_opt_entries(&topt, "", "auto"), NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &e))
		goto bad;
	if (argc > 1) {
		g_set_error(&e, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "unexpected argument "
			    "'%s' (every setting is an option: --help)", argv[1]);
		goto bad;
	}
	libbpf_set_print(bpf_print);
	libxdp_set_print(xdp_print);
	if (vt_seal_init() < 0) {
		g_printerr("vtier-memd: libsodium did not initialise\n");
		return 1;
	}
	if (!server_key(state_dir ? state_dir : STATE_DIR_DEFAULT, &sc.key, &e))
		goto bad;
	if (show_key) {
		char hex[VT_SEAL_PK_HEX_LEN + 1];

		vt_seal_pk_hex(sc.key.pk, hex);
		printf("%s\n", hex);
		return 0;
	}
	if (!listen) {
		g_set_error(&e, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--listen ADDR:PORT is "
			    "required");
		goto bad;
	}
	if (!parse_listen(listen, &tc.addr, &tc.port, &e))
		goto bad;
	tc.xdp_prog = VT_MEMD_XDP_PROG;
	if (!vt_rt_opt_apply(&topt, &tc, &e))
		goto bad;
	if (ns_cap && !parse_cap("ns-cap", ns_cap, &sc.ns_cap_bytes, &e))
		goto bad;
	if (ns_per_client && (ns_per_client < 1 || ns_per_client > VT_RS_MAX_NS_DEFAULT)) {
		g_set_error(&e, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--ns-per-client %d: "
			    "1-%d accepted", ns_per_client, VT_RS_MAX_NS_DEFAULT);
		goto bad;
	}
	sc.ns_per_addr = (unsigned int)ns_per_client;
	if (server_cap && !parse_cap("server-cap", server_cap, &sc.server_cap_bytes, &e))
		goto bad;
	if (client_cap && !parse_cap("client-cap", client_cap, &sc.client_cap_bytes, &e))
		goto bad;
	if (!server_cap)
		sc.server_cap_bytes = default_server_cap();
	sc.frag_max = (size_t)MAX(frag_max, 0);
	m->rs = vt_rs_new(&sc, reason, sizeof(reason));
	memset(sc.key.sk, 0, sizeof(sc.key.sk));
	if (!m->rs) {
		g_set_error(&e, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "%s", reason);
		goto bad;
	}
	m->start_time = (double)g_get_real_time() / 1e6;
	m->start_ns = vt_now_ns();
	r = vt_rt_open(&tc, &m->rt, reason, sizeof(reason));
	if (r < 0) {
		g_printerr("vtier-memd: %s\n", reason);
		vt_rs_free(m->rs);
		return 1;
	}
	{
		struct vt_rt_stats st;
		struct vt_rs_stats ss;

		vt_rt_stats(m->rt, &st);
		vt_rs_get_stats(m->rs, &ss);
		m->spin = st.busy_poll;
		if (st.fallback[0])
			g_warning("AF_XDP not used, serving on a UDP socket: %s", st.fallback);
		g_message("serving %s on %s (%s, %u queue(s)%s%s), namespace cap %" G_GUINT64_FORMAT
			  " MiB, client cap %" G_GUINT64_FORMAT " MiB, server cap %" G_GUINT64_FORMAT
			  " MiB", listen, tc.ifname ? tc.ifname : "its interface", st.mode, st.queues,
			  st.need_wakeup ? ", need_wakeup" : "",
			  st.busy_poll ? ", busy-poll: the serving thread spins, a core of its own" : "",
			  ss.ns_cap >> 20, ss.client_cap >> 20, ss.server_cap >> 20);
	}
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	/* after the mask: the writer thread inherits it, the signals stay the loop's */
	m->writer = vt_memd_writer_start(stats_file,
					 metrics_file && *metrics_file ? metrics_file : NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	pfd[0] = (struct pollfd){ .fd = vt_rt_fd(m->rt), .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	next_tick = next_stats = vt_now_ns();
	while (!quit) {
		uint64_t now;

		/*
		 * busy-poll: the rings are looked at again at once, never a
		 * sleep (a halted CPU's wake-up is most of a round trip on a
		 * VM); the CPU goes to whatever else is runnable between looks
		 */
		int ready = poll(pfd, 2, m->spin ? 0 : 100);

		if (ready < 0 && errno != EINTR)
			break;
		if (!ready && m->spin)
			sched_yield();
		serve(m);
		now = vt_now_ns();
		if (now >= next_tick) {
			vt_rs_tick(m->rs, now);
			next_tick = now + TICK_NS;
		}
		if (now >= next_stats) {
			vt_memd_writer_post(m->writer, snapshot(m));
			next_stats = now + 1000000000ull;
		}
		if (pfd[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGUSR1)
					log_stats(m, "stats");
				else
					quit = true;
			}
		}
	}
	/* the files' last write: the state the server ends with */
	vt_memd_writer_post(m->writer, snapshot(m));
	vt_memd_writer_stop(m->writer);
	log_stats(m, "exiting");
	vt_rt_close(m->rt);
	vt_rs_free(m->rs);
	return 0;
bad:
	g_printerr("vtier-memd: %s\n", e->message);
	return 2;
}
