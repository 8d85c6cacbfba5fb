// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtierd: attaches to QEMU VMs, profiles their memory and places it on the
 * host's NUMA tiers. One glib main loop; one engine per VM. Runs in the
 * foreground; under systemd (Type=notify) it reports READY=1 once serving.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib-unix.h>

#include "control_socket.h"
#include "config_file.h"
#include "ctier_csum.h"
#include "daemon.h"
#include "libvirt_domains.h"
#include "metrics.h"
#include "metrics_http.h"

#define VT_AGENT_SOCKET_DEFAULT "/run/vtier/agent.sock"
#define VT_STORE_DIR_DEFAULT "/run/vtier/store"

static GMainLoop *loop;

static void log_fn(GLogLevelFlags level, const char *vm, const char *message)
{
	g_log("vtierd", level, "%s%s%s", vm ? vm : "", vm ? ": " : "", message);
}

/* sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET. */
static void notify(const char *state)
{
	const char *path = g_getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sa.sun_path))
		return;
	strcpy(sa.sun_path, path);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len) < 0)
		g_debug("sd_notify: %s", g_strerror(errno));
	close(fd);
}

static gboolean quit_cb(gpointer data)
{
	(void)data;
	g_message("signal received: detaching every VM and exiting");
	notify("STOPPING=1");
	g_main_loop_quit(loop);
	return G_SOURCE_CONTINUE;
}

/*
 * The control socket's own events (a client dropped, accept() paused at the
 * fd limit): clients trigger them, so they are rate-limited like the rest.
 */
static void log_note(const char *message, void *arg)
{
	vt_daemon_log_about(arg, G_LOG_LEVEL_WARNING, NULL, "control socket", "%s", message);
}

static void startup_attached(struct vt_vm *vm, const GError *error, void *arg)
{
	if (!vm)
		g_warning("attach %s: %s", (const char *)arg, error->message);
}

static char *metrics_text(void *arg)
{
	return vt_metrics_collect(arg);
}

/*
 * Each hand-off costs fds (socket, memfd, uffd, store files): run with the
 * hard limit, as systemd's LimitNOFILE or the shell's ulimit -Hn allows.
 */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		g_warning("cannot raise the fd limit (RLIMIT_NOFILE) to its hard limit %llu: %s",
			  (unsigned long long)rl.rlim_max, g_strerror(errno));
}

static char *handle(const char *data, size_t len, void *arg)
{
	return vt_daemon_handle(arg, data, len);
}

/*
 * The hand-off budget's options (handoff/peer_budget.h), one per bound for a
 * peer and for the host, and --reconnect-grace: a group of their own.
 */
struct budget_opts {
	char *val[2][VT_BOUND_NR];
	gint grace_s;
	GOptionEntry entries[2 * VT_BOUND_NR + 2];
	char help[2][VT_BOUND_NR][160];
};

static GOptionGroup *budget_group(struct budget_opts *o)
{
	struct vt_budget_limits def;
	GOptionGroup *g = g_option_group_new("budget", "Hand-off budgets (docs/vtierd.md, "
					     "\"Hand-off budgets\"):", "Show the hand-off budget "
					     "options", NULL, NULL);
	unsigned int n = 0;

	vt_budget_limits_default(&def);
	o->grace_s = -1;
	for (unsigned int h = 0; h < 2; h++)
		for (unsigned int b = 0; b < VT_BOUND_NR; b++) {
			uint64_t v = h ? def.host[b] : def.peer[b];
			char shown[32];

			vt_bound_format(b, v, shown, sizeof(shown));
			g_snprintf(o->help[h][b], sizeof(o->help[h][b]), "%s held for %s (default "
				   "%s; 0: %s)", vt_bound_name(b), h ? "all QEMU processes and "
				   "the reconnects' reserve" : "one QEMU process",
				   h && b == VT_BOUND_FDS ? "RLIMIT_NOFILE - 256" : v ? shown :
				   "no bound", h && b == VT_BOUND_FDS ? "that" : "no bound");
			o->entries[n++] = (GOptionEntry){ vt_bound_option(b, h) + 2, 0, 0,
							  G_OPTION_ARG_STRING, &o->val[h][b],
							  o->help[h][b], "N" };
		}
	o->entries[n++] = (GOptionEntry){ "reconnect-grace", 0, 0, G_OPTION_ARG_INT, &o->grace_s,
					  "seconds a store found at start stays reserved for its "
					  "reconnect (default 60)", "S" };
	o->entries[n] = (GOptionEntry){ NULL };
	g_option_group_add_entries(g, o->entries);
	return g;
}

/* The limits the options say (their strings freed, whatever the outcome). */
static bool budget_limits(struct budget_opts *o, struct vt_budget_limits *l, GError **error)
{
	bool ok = true;

	vt_budget_limits_default(l);
	for (unsigned int h = 0; h < 2; h++)
		for (unsigned int b = 0; b < VT_BOUND_NR; b++) {
			if (ok && o->val[h][b])
				ok = vt_budget_limit_parse(l, b, h, o->val[h][b], error);
			g_clear_pointer(&o->val[h][b], g_free);
		}
	if (!ok)
		return false;
	if (o->grace_s != -1 && (o->grace_s < 0 || o->grace_s > 86400)) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "--reconnect-grace %d: not in 0..86400 "
			    "seconds", o->grace_s);
		return false;
	}
	if (o->grace_s != -1)
		l->reconnect_grace_s = (unsigned int)o->grace_s;
	return true;
}

int main(int argc, char **argv)
{
	g_autofree char *socket_path = NULL, *config_path = NULL, *sysfs = NULL;
	g_autofree char *agent_path = NULL, *store_dir = NULL;
	g_autofree char *libvirt_uri = NULL, *libvirt_attach = NULL, *metrics_listen = NULL;
	struct vt_metrics_http *metrics = NULL;
	g_auto(GStrv) attach = NULL;
	gboolean verbose = FALSE, ignore_profiles = FALSE;
	gint placement_threads = 0;
	g_autofree gchar *precopy_placement = NULL;
	GOptionEntry entries[] = {
		{ "socket", 's', 0, G_OPTION_ARG_FILENAME, &socket_path,
		  "control socket (default " VT_CONTROL_SOCKET_DEFAULT ")", "PATH" },
		{ "config", 'c', 0, G_OPTION_ARG_FILENAME, &config_path,
		  "config file with [tier.NAME] groups (default: tiers from sysfs)", "FILE" },
		{ "agent-socket", 0, 0, G_OPTION_ARG_FILENAME, &agent_path,
		  "hand-off socket for QEMU's tier-agent= (default " VT_AGENT_SOCKET_DEFAULT
		  "; \"none\": do not listen)", "PATH" },
		{ "store-dir", 0, 0, G_OPTION_ARG_FILENAME, &store_dir,
		  "page stores of handed-off memory (default " VT_STORE_DIR_DEFAULT
		  "; must survive vtierd: tmpfs)", "DIR" },
		{ "attach", 'a', 0, G_OPTION_ARG_FILENAME_ARRAY, &attach,
		  "attach the VM of this QMP socket at start (repeatable)", "QMP" },
		{ "libvirt-uri", 0, 0, G_OPTION_ARG_STRING, &libvirt_uri,
		  "attach libvirt domains of this connection (e.g. " VT_LIBVIRT_URI_DEFAULT
		  "; default: [libvirt] uri in the config, else off)", "URI" },
		{ "libvirt-attach", 0, 0, G_OPTION_ARG_STRING, &libvirt_attach,
		  "which running domains: those with a vtier policy in their metadata, or all "
		  "(default policy)", "policy|all" },
		{ "metrics-listen", 0, 0, G_OPTION_ARG_STRING, &metrics_listen,
		  "serve Prometheus metrics at http://ADDR:PORT/metrics (default: [metrics] listen "
		  "in the config, else off)", "ADDR:PORT" },
		{ "sysfs-root", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &sysfs,
		  "read tiers from this tree instead of / (tests)", "DIR" },
		{ "ignore-migration-profiles", 0, 0, G_OPTION_ARG_NONE, &ignore_profiles,
		  "profile VMs that arrive by live migration from scratch, without the "
		  "source's profile", NULL },
		{ "precopy-placement", 0, 0, G_OPTION_ARG_STRING, &precopy_placement,
		  "on a migration's destination, while guest RAM arrives: evict the cold chunks "
		  "of the source's profile as they arrive (QEMU hands the backend over early), "
		  "or only copy them and evict once the guest runs (default: evict)",
		  "evict|copy" },
		{ "placement-threads", 0, 0, G_OPTION_ARG_INT, &placement_threads,
		  "threads that compress a migration's placement per guest RAM backend, 1-8 "
		  "(default: a quarter of the CPUs, at most 8)", "N" },
		{ "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "debug messages", NULL },
		{ NULL },
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("- vtier memory tiering daemon");
	g_autoptr(GError) e = NULL;
	g_autoptr(GKeyFile) config = NULL;
	g_autofree char *config_text = NULL;
	gsize config_len = 0;
	struct vt_control_server *server;
	struct budget_opts bopts = { 0 };
	struct vt_budget_limits limits;
	struct vt_daemon *d;

	/*
	 * A peer that closes its end must cost an EPIPE, not the daemon: libvirt's
	 * client writes its socket with write(2), so a libvirtd that dropped us
	 * (its keepalive timed out while we were stopped) would kill every VM's
	 * tiering with SIGPIPE at our next RPC, as virsh and libvirtd themselves
	 * ignore it. Our own sockets use MSG_NOSIGNAL; this covers the libraries.
	 */
	signal(SIGPIPE, SIG_IGN);
	g_option_context_add_main_entries(ctx, entries, NULL);
	g_option_context_add_group(ctx, budget_group(&bopts));
	g_option_context_set_description(ctx, "Control it with vtierctl. See docs/vtierd.md.");
	if (!g_option_context_parse(ctx, &argc, &argv, &e)) {
		fprintf(stderr, "vtierd: %s (try --help)\n", e->message);
		return 2;
	}
	if (argc > 1) {
		fprintf(stderr, "vtierd: unexpected argument '%s' (try --help)\n", argv[1]);
		return 2;
	}
	if (precopy_placement && strcmp(precopy_placement, "evict") &&
	    strcmp(precopy_placement, "copy")) {
		fprintf(stderr, "vtierd: --precopy-placement %s: evict or copy\n", precopy_placement);
		return 2;
	}
	if (metrics_listen) {
		struct sockaddr_storage ss;

		/* a usage error, before anything starts: exit 2 like every other */
		if (!vt_metrics_listen_parse(metrics_listen, &ss, &e)) {
			fprintf(stderr, "vtierd: --metrics-listen: %s\n", e->message);
			return 2;
		}
	}
	if (placement_threads && (placement_threads < 1 || placement_threads > 8)) {
		fprintf(stderr, "vtierd: --placement-threads %d: not in 1..8\n", placement_threads);
		return 2;
	}
	if (!budget_limits(&bopts, &limits, &e)) {
		fprintf(stderr, "vtierd: %s\n", e->message);
		return 2;
	}
	if (verbose)
		g_setenv("G_MESSAGES_DEBUG", "all", TRUE);
	raise_fd_limit();
	if (config_path && !g_file_get_contents(config_path, &config_text, &config_len, &e)) {
		g_printerr("vtierd: config %s: %s\n", config_path, e->message);
		return 1;
	}
	/* the whole file at once: tiers, [ctier.NAME], [policy], [libvirt], [metrics] */
	d = vt_daemon_from_config(config_text, config_len, sysfs ? sysfs : "/", log_fn, &config,
				  &e);
	if (!d) {
		if (config_path)
			g_printerr("vtierd: config %s: %s\n", config_path, e->message);
		else
			g_printerr("vtierd: %s\n", e->message);
		return 1;
	}
	for (unsigned int i = 0; i < d->host.tiers.nr; i++) {
		const struct vt_tier *t = &d->host.tiers.tier[i];
		g_autofree char *nodes = NULL;
		GString *s = g_string_new(NULL);

		for (unsigned int j = 0; j < t->nr_nodes; j++)
			g_string_append_printf(s, "%s%d", j ? "," : "", t->nodes[j]);
		nodes = g_string_free(s, FALSE);
		g_message("tier %u %s: nodes %s, %" G_GUINT64_FORMAT " MiB, latency %u ns, "
			  "%.2f USD/GiB (%s)", i, t->name, nodes, (guint64)(t->capacity_bytes >> 20),
			  t->latency_ns, t->price_usd_gib, t->source);
	}
	if (d->host.tiers.nr < 2)
		g_message("only one memory tier on this host: vtierd will profile and report, "
			  "but there is nowhere to move memory");
	for (unsigned int i = 0; i < d->host.nr_ctier; i++) {
		char desc[128];

		vt_ctier_spec_describe(&d->host.ctier[i], desc, sizeof(desc));
		g_message("tier %u %s: compressed, %s", d->host.tiers.nr + i, d->host.ctier[i].name, desc);
	}
	g_strlcpy(d->host.store_root, store_dir ? store_dir : VT_STORE_DIR_DEFAULT,
		  sizeof(d->host.store_root));
	d->host.ignore_profiles = ignore_profiles;
	d->host.placement_threads = (unsigned int)placement_threads;
	d->host.precopy_copy_only = precopy_placement && !strcmp(precopy_placement, "copy");
	vt_daemon_set_budget(d, &limits);
	vt_host_share_start(&d->share);
	if (!socket_path)
		socket_path = g_strdup(VT_CONTROL_SOCKET_DEFAULT);
	server = vt_control_server_new(socket_path, handle, d, &e);
	if (!server) {
		g_printerr("vtierd: %s\n", e->message);
		vt_daemon_free(d);
		return 1;
	}
	if (!agent_path)
		agent_path = g_strdup(VT_AGENT_SOCKET_DEFAULT);
	if (strcmp(agent_path, "none") != 0) {
		if (!vt_daemon_listen_handoff(d, agent_path, &e)) {
			g_printerr("vtierd: %s\n", e->message);
			vt_daemon_free(d);
			vt_control_server_free(server);
			return 1;
		}
		g_message("hand-offs on %s (stores in %s)%s", agent_path, d->host.store_root,
			  d->host.nr_ctier ? "" : ": no [ctier.NAME] in the config, every hand-off "
			  "will be refused");
		if (d->host.nr_ctier)
			g_message("page checksums: CRC-32C by %s (the faster here)",
				  vt_crc32c_impl());
	}
	/* [libvirt] uri = / attach =, [metrics] listen = in the config; the command line wins */
	if (config && !libvirt_uri)
		libvirt_uri = g_key_file_get_string(config, "libvirt", "uri", NULL);
	if (config && !libvirt_attach)
		libvirt_attach = g_key_file_get_string(config, "libvirt", "attach", NULL);
	if (libvirt_uri) {
		enum vt_libvirt_attach how = VT_LIBVIRT_ATTACH_POLICY;

		if (libvirt_attach && !vt_libvirt_attach_parse(libvirt_attach, &how, &e)) {
			g_printerr("vtierd: %s\n", e->message);
			vt_daemon_free(d);
			vt_control_server_free(server);
			return 2;
		}
		/* connects on a job, and again whenever libvirtd comes back */
		vt_libvirt_new(d, libvirt_uri, how);
	} else if (libvirt_attach) {
		g_printerr("vtierd: --libvirt-attach needs --libvirt-uri (or [libvirt] uri =)\n");
		vt_daemon_free(d);
		vt_control_server_free(server);
		return 2;
	}
	if (config && !metrics_listen)
		metrics_listen = g_key_file_get_string(config, "metrics", "listen", NULL);
	if (metrics_listen) {
		metrics = vt_metrics_http_new(metrics_listen, metrics_text, d, &e);
		if (!metrics) {
			g_printerr("vtierd: %s\n", e->message);
			vt_daemon_free(d);
			vt_control_server_free(server);
			return 1;
		}
		g_message("metrics on http://%s/metrics (port %u)", metrics_listen,
			  vt_metrics_http_port(metrics));
	}
	vt_control_server_set_notify(server, log_note, d);
	d->ctl = server;	/* policy replies wait for the VM's worker, not the loop */
	loop = g_main_loop_new(NULL, FALSE);
	g_unix_signal_add(SIGINT, quit_cb, NULL);
	g_unix_signal_add(SIGTERM, quit_cb, NULL);
	/* answered on the loop, like vtierctl attach: a silent QEMU delays nothing */
	for (unsigned int i = 0; attach && attach[i]; i++) {
		g_autoptr(GError) ae = NULL;

		if (!vt_daemon_attach(d, attach[i], NULL, NULL, 0, startup_attached, attach[i], &ae))
			g_warning("attach %s: %s", attach[i], ae->message);
	}
	g_message("serving on %s (pid %d)", socket_path, (int)getpid());
	notify("READY=1\nSTATUS=serving");
	g_main_loop_run(loop);
	vt_metrics_http_free(metrics);
	vt_daemon_free(d);
	vt_control_server_free(server);
	g_main_loop_unref(loop);
	return 0;
}
