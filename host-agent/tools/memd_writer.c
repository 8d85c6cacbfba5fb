// SPDX-License-Identifier: GPL-2.0-or-later
/* vtier-memd's stats JSON and metrics files, written by a thread of their own (memd_writer.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/stat.h>

#include "memd_metrics.h"
#include "memd_writer.h"
#include "thread_ns.h"

struct vt_memd_writer {
	char *stats_file, *metrics_file;	/* NULL: none */
	GThread *thread;
	GMutex lock;
	GCond cond;
	/* under the lock */
	struct vt_memd_snapshot *pending;	/* the latest handed over, not yet taken */
	bool stop;
	uint64_t write_ns, write_max_ns;	/* the last write's render and write, the most */
	/* the thread's own */
	bool stats_failing, metrics_failing;	/* said once until a write works again */
};

static void client_json(GString *j, const struct vt_rs_client_stats *s)
{
	char addr[INET_ADDRSTRLEN];
	uint32_t a = htonl(s->addr);	/* the transport's peer address: host order */

	inet_ntop(AF_INET, &a, addr, sizeof(addr));
	g_string_append_printf(j, "%s{\"addr\":\"%s\",\"namespaces\":%" G_GUINT64_FORMAT
			       ",\"pages\":%" G_GUINT64_FORMAT ",\"bytes\":%" G_GUINT64_FORMAT
			       ",\"cap\":%" G_GUINT64_FORMAT ",\"over_cap\":%" G_GUINT64_FORMAT "}",
			       j->str[j->len - 1] == '[' ? "" : ",", addr, s->namespaces, s->pages,
			       s->bytes, s->cap, s->over_cap);
}

static void ns_json(GString *j, const struct vt_rs_ns_stats *s)
{
	char hex[2 * VT_RP_NS_BYTES + 1];

	for (unsigned int i = 0; i < VT_RP_NS_BYTES; i++)
		g_snprintf(hex + 2 * i, 3, "%02x", s->ns[i]);
	g_string_append_printf(j, "%s{\"ns\":\"%s\",\"pages\":%" G_GUINT64_FORMAT ",\"bytes\":%"
			       G_GUINT64_FORMAT ",\"cap\":%" G_GUINT64_FORMAT ",\"puts\":%"
			       G_GUINT64_FORMAT ",\"gets\":%" G_GUINT64_FORMAT ",\"frees\":%"
			       G_GUINT64_FORMAT "}", j->str[j->len - 1] == '[' ? "" : ",",
			       hex, s->pages, s->bytes, s->cap, s->puts, s->gets, s->frees);
}

char *vt_memd_stats_json(const struct vt_memd_snapshot *snap)
{
	const struct vt_rs_stats s = snap->s;
	const struct vt_rt_stats t = snap->t;
	GString *j = g_string_new("{");

	g_string_append_printf(j, "\"transport\":{\"mode\":\"%s\",\"queues\":%u,\"need_wakeup\":%s,"
			       "\"busy_poll\":%s,\"xdp_native\":%s,\"rx\":%" G_GUINT64_FORMAT
			       ",\"tx\":%" G_GUINT64_FORMAT ",\"rx_dropped\":%" G_GUINT64_FORMAT
			       ",\"tx_busy\":%" G_GUINT64_FORMAT ",\"tx_lost\":%" G_GUINT64_FORMAT
			       ",\"fallback\":\"%s\"},", t.mode, t.queues,
			       t.need_wakeup ? "true" : "false", t.busy_poll ? "true" : "false",
			       t.xdp_native ? "true" : "false", t.rx, t.tx, t.rx_dropped, t.tx_busy,
			       snap->tx_lost, t.fallback);
	g_string_append_printf(j, "\"namespaces\":%" G_GUINT64_FORMAT ",\"pages\":%" G_GUINT64_FORMAT
			       ",\"bytes\":%" G_GUINT64_FORMAT ",\"server_cap\":%" G_GUINT64_FORMAT
			       ",\"client_cap\":%" G_GUINT64_FORMAT ",\"clients\":%" G_GUINT64_FORMAT
			       ",\"over_cap\":%" G_GUINT64_FORMAT ",\"client_over_cap\":%"
			       G_GUINT64_FORMAT ",\"hello_ok\":%" G_GUINT64_FORMAT
			       ",\"hello_refused\":%" G_GUINT64_FORMAT ",\"ns_full\":%"
			       G_GUINT64_FORMAT ",\"ns_addr_full\":%" G_GUINT64_FORMAT ",\"resets\":%"
			       G_GUINT64_FORMAT ",\"byes\":%" G_GUINT64_FORMAT ",\"byes_unknown\":%"
			       G_GUINT64_FORMAT ",\"expired\":%" G_GUINT64_FORMAT ",\"drops\":{",
			       s.namespaces, s.pages, s.bytes, s.server_cap, s.client_cap, s.clients,
			       s.over_cap, s.client_over_cap, s.hello_ok,
			       s.hello_refused, s.ns_full, s.ns_addr_full, s.resets, s.byes,
			       s.byes_unknown, s.expired);
	for (unsigned int r = 1; r < VT_RP_R_COUNT; r++)
		g_string_append_printf(j, "%s\"%s\":%" G_GUINT64_FORMAT, r > 1 ? "," : "",
				       vt_rp_reason_name(r), s.drops[r]);
	g_string_append_printf(j, "},\"snapshot_ns\":%" G_GUINT64_FORMAT ",\"snapshot_max_ns\":%"
			       G_GUINT64_FORMAT ",\"write_ns\":%" G_GUINT64_FORMAT
			       ",\"write_max_ns\":%" G_GUINT64_FORMAT ",\"per_namespace\":[",
			       snap->take_ns, snap->take_max_ns, snap->write_ns, snap->write_max_ns);
	for (guint i = 0; i < snap->ns->len; i++)
		ns_json(j, &g_array_index(snap->ns, struct vt_rs_ns_stats, i));
	g_string_append(j, "],\"per_client\":[");
	for (guint i = 0; i < snap->clients->len; i++)
		client_json(j, &g_array_index(snap->clients, struct vt_rs_client_stats, i));
	g_string_append(j, "]}\n");
	return g_string_free(j, FALSE);
}

/*
 * @text into PATH.tmp, then renamed over @path: a reader never sees half of
 * it. No fsync (g_file_set_contents' CONSISTENT does one per replace: 2-24
 * ms each second on ext4): the files are rewritten every second and mean
 * nothing after a crash. @mode is set whatever the umask (the unit's is
 * 0077; node_exporter reads the metrics as its own user). 0, or -errno with
 * what failed in @what.
 */
static int replace_file(const char *path, const char *text, mode_t mode, const char **what)
{
	g_autofree char *tmp = g_strconcat(path, ".tmp", NULL);
	size_t len = strlen(text), done = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	int err = 0;

	*what = "open";
	if (fd < 0)
		return -errno;
	*what = "fchmod";
	if (fchmod(fd, mode) < 0)
		err = -errno;
	*what = "write";
	while (!err && done < len) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0 && errno != EINTR)
			err = -errno;
		else if (n == 0)
			err = -EIO;	/* no progress: never loop on it */
		done += n > 0 ? (size_t)n : 0;
	}
	if (close(fd) < 0 && !err) {
		*what = "close";
		err = -errno;
	}
	if (!err && rename(tmp, path) < 0) {
		*what = "rename";
		err = -errno;
	}
	if (err)
		unlink(tmp);
	return err;
}

/* A failure is logged when it starts and when it ends, not every second. */
static void write_whole(const char *path, const char *text, mode_t mode, bool *failing)
{
	const char *what;
	int r = replace_file(path, text, mode, &what);

	if (r < 0) {
		if (!*failing)
			g_warning("%s: %s: %s (said again when it works)", path, what, g_strerror(-r));
		*failing = true;
	} else if (*failing) {
		g_message("%s: written again", path);
		*failing = false;
	}
}

static void write_files(struct vt_memd_writer *w, const struct vt_memd_snapshot *snap)
{
	if (w->stats_file) {
		g_autofree char *json = vt_memd_stats_json(snap);

		write_whole(w->stats_file, json, 0600, &w->stats_failing);
	}
	if (w->metrics_file) {
		/* node_exporter runs as its own user: the file is for others to read */
		g_autofree char *text = vt_memd_metrics_text(snap, VT_VERSION);

		write_whole(w->metrics_file, text, 0644, &w->metrics_failing);
	}
}

static gpointer writer_main(gpointer arg)
{
	struct vt_memd_writer *w = arg;

	for (;;) {
		struct vt_memd_snapshot *snap;
		uint64_t t0;

		g_mutex_lock(&w->lock);
		while (!w->pending && !w->stop)
			g_cond_wait(&w->cond, &w->lock);
		snap = w->pending;
		w->pending = NULL;
		g_mutex_unlock(&w->lock);
		if (!snap)
			return NULL;	/* stopped, the last one written */
		t0 = vt_now_ns();
		write_files(w, snap);
		vt_memd_snapshot_free(snap);
		g_mutex_lock(&w->lock);
		w->write_ns = vt_now_ns() - t0;
		w->write_max_ns = MAX(w->write_max_ns, w->write_ns);
		g_mutex_unlock(&w->lock);
	}
}

struct vt_memd_writer *vt_memd_writer_start(const char *stats_file, const char *metrics_file)
{
	struct vt_memd_writer *w = g_new0(struct vt_memd_writer, 1);

	w->stats_file = g_strdup(stats_file);
	w->metrics_file = g_strdup(metrics_file);
	g_mutex_init(&w->lock);
	g_cond_init(&w->cond);
	w->thread = g_thread_new("memd-writer", writer_main, w);
	return w;
}

void vt_memd_writer_post(struct vt_memd_writer *w, struct vt_memd_snapshot *snap)
{
	struct vt_memd_snapshot *old;

	g_mutex_lock(&w->lock);
	snap->write_ns = w->write_ns;
	snap->write_max_ns = w->write_max_ns;
	old = w->pending;	/* the writer is a second behind: the newer one only */
	w->pending = snap;
	g_cond_signal(&w->cond);
	g_mutex_unlock(&w->lock);
	vt_memd_snapshot_free(old);
}

void vt_memd_writer_stop(struct vt_memd_writer *w)
{
	if (!w)
		return;
	g_mutex_lock(&w->lock);
	w->stop = true;
	g_cond_signal(&w->cond);
	g_mutex_unlock(&w->lock);
	g_thread_join(w->thread);
	vt_memd_snapshot_free(w->pending);
	g_mutex_clear(&w->lock);
	g_cond_clear(&w->cond);
	g_free(w->stats_file);
	g_free(w->metrics_file);
	g_free(w);
}
