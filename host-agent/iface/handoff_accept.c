// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The agent's end of the hand-off socket: listen, accept, pause at the
 * fd limit, the server's limits and stats. See handoff_server.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib-unix.h>

#include "errbuf.h"
#include "handoff_peer.h"
#include "handoff_server.h"
#include "json_guard.h"
#include "handoff_server_int.h"

static gboolean server_resume(gpointer data)
{
	struct vt_handoff_server *srv = data;

	g_source_unref(srv->backoff);
	srv->backoff = NULL;
	if (!srv->reserve_conn)
		vt_hs_listen(srv);
	return G_SOURCE_REMOVE;
}

/* Out of fds (or kernel memory): say so once per burst of accept() failures. */
static void server_report_starved(struct vt_handoff_server *srv, int err)
{
	char why[VT_HANDOFF_ERR_LEN + 64];

	if (srv->pause_reported)
		return;
	srv->pause_reported = true;
	snprintf(why, sizeof(why), "accept: %s: agent at its fd limit (RLIMIT_NOFILE %llu; raise "
		 "LimitNOFILE): one hand-off at a time is served from a reserve of %u fds",
		 g_strerror(err), vt_hs_fd_limit(), SPARE_FDS);
	if (srv->ops->dropped)
		srv->ops->dropped(NULL, why, srv->opaque);
}

/*
 * Out of fds with no reserve to use: the listening socket stays readable, so
 * polling it would spin. Stop watching it for accept_backoff_ms.
 */
static void server_pause(struct vt_handoff_server *srv)
{
	srv->stats.accept_pauses++;
	vt_hs_destroy_source(&srv->src);
	srv->backoff = g_timeout_source_new(srv->limits.accept_backoff_ms);
	g_source_set_callback(srv->backoff, server_resume, srv, NULL);
	g_source_attach(srv->backoff, srv->ctx);
}

/* Refuse @cfd right away: @why names the bound, its value and the peer. */
static void server_refuse(struct vt_handoff_server *srv, int cfd, unsigned int *counter,
			  const char *why)
{
	close(cfd);
	srv->stats.dropped++;
	(*counter)++;
	g_debug("handoff: %s", why);
	if (srv->ops->dropped)
		srv->ops->dropped(NULL, why, srv->opaque);
}

static gboolean server_accept(gint fd, GIOCondition cond, gpointer data)
{
	struct vt_handoff_server *srv = data;
	char why[2 * PEER_TEXT_LEN];
	struct vt_handoff_peer peer;
	struct vt_handoff_conn *c;
	bool on_reserve = false;
	unsigned int *refused;
	int cfd, ret;

	(void)cond;
	if (srv->n_spare < SPARE_FDS)
		vt_hs_spare_refill(srv);
	cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0) {
		int err = errno;

		g_debug("handoff: accept: %s", g_strerror(err));
		if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM)
			return G_SOURCE_CONTINUE;
		server_report_starved(srv, err);
		/* the reserve: room for one connection, its HELLO and the reply */
		if ((err == EMFILE || err == ENFILE) && srv->n_spare && !srv->reserve_conn) {
			vt_hs_spare_release(srv);
			cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (cfd < 0)
				vt_hs_spare_refill(srv);
		}
		if (cfd < 0) {
			server_pause(srv);
			return G_SOURCE_REMOVE;
		}
		on_reserve = true;
		srv->stats.reserve_accepts++;
	} else {
		srv->pause_reported = false;
	}
	/* the kernel's word on the peer, now: a HELLO's qemu_pid is checked against it */
	ret = vt_handoff_peer_get(cfd, &peer);
	if (ret) {
		snprintf(why, sizeof(why), "cannot read the peer's credentials (SO_PEERCRED): %s: a "
			 "QEMU in another pid namespace?", g_strerror(-ret));
		server_refuse(srv, cfd, &srv->stats.no_credentials, why);
		if (on_reserve)
			vt_hs_spare_refill(srv);
		return G_SOURCE_CONTINUE;
	}
	refused = vt_hs_admit(srv, &peer, on_reserve, why, sizeof(why));
	if (refused) {
		vt_handoff_peer_clear(&peer);
		server_refuse(srv, cfd, refused, why);
		if (on_reserve)
			vt_hs_spare_refill(srv);
		return G_SOURCE_CONTINUE;
	}
	c = g_new0(struct vt_handoff_conn, 1);
	c->srv = srv;
	c->refs = 1;
	c->fd = cfd;
	c->prep_fd = -1;
	for (unsigned int i = 0; i < CONN_MAPS; i++)
		c->maps[i] = -1;
	c->out = g_byte_array_new();
	c->peer = peer;
	c->acct = vt_hs_acct_get(srv, &c->peer, true);
	c->acct->conns++;
	c->acct->pending++;
	c->acct->group->pending++;
	srv->n_pending++;
	srv->conns = g_list_prepend(srv->conns, c);
	c->hello_deadline = g_get_monotonic_time() +
			    (on_reserve ? MIN(srv->limits.hello_timeout_ms, srv->limits.reserve_hello_ms) :
					  srv->limits.hello_timeout_ms) * 1000LL;
	vt_hs_conn_watch(c);
	g_debug("handoff: connection on %s from pid %d%s", srv->path, (int)c->peer.pid,
		on_reserve ? " (on the fd reserve)" : "");
	if (on_reserve) {
		/* no other connection until this one is answered: accept() resumes then */
		c->on_reserve = true;
		srv->reserve_conn = c;
		srv->stats.accept_pauses++;
		vt_hs_destroy_source(&srv->src);
		return G_SOURCE_REMOVE;
	}
	return G_SOURCE_CONTINUE;
}

void vt_hs_listen(struct vt_handoff_server *srv)
{
	srv->src = g_unix_fd_source_new(srv->fd, G_IO_IN);
	g_source_set_callback(srv->src, G_SOURCE_FUNC(server_accept), srv, NULL);
	g_source_attach(srv->src, srv->ctx);
}

void vt_handoff_limits_default(struct vt_handoff_limits *l)
{
	*l = (struct vt_handoff_limits) {
		.hello_timeout_ms = 5000,
		.idle_timeout_ms = 5000,
		.send_timeout_ms = 10000,
		.max_pending = 64,
		.max_buffered_bytes = 64u << 20,
		.max_output_bytes = 16u << 20,
		.accept_backoff_ms = 100,
		.max_peer_conns = 64,
		.max_peer_pending = 16,
		.prepare_idle_ms = 30000,
		.reserve_hello_ms = 1000,
	};
}

void vt_handoff_server_set_limits(struct vt_handoff_server *srv,
				  const struct vt_handoff_limits *limits)
{
	srv->limits = *limits;
}

unsigned int vt_handoff_server_dropped(const struct vt_handoff_server *srv)
{
	return srv->stats.dropped;
}

unsigned int vt_handoff_server_accept_pauses(const struct vt_handoff_server *srv)
{
	return srv->stats.accept_pauses;
}

void vt_handoff_server_get_stats(const struct vt_handoff_server *srv,
				 struct vt_handoff_server_stats *stats)
{
	*stats = srv->stats;
}

void vt_handoff_server_set_fd_reserve(struct vt_handoff_server *srv, unsigned int fds)
{
	srv->fd_reserve = fds;
}

unsigned int vt_handoff_server_pending(const struct vt_handoff_server *srv)
{
	return srv->n_pending;
}

size_t vt_handoff_server_buffered_bytes(const struct vt_handoff_server *srv)
{
	return srv->buffered;
}

int vt_handoff_server_new(const char *path, GMainContext *ctx, const struct vt_handoff_ops *ops,
			  void *opaque, struct vt_handoff_server **out)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct vt_handoff_server *srv;
	struct stat st;
	int fd, ret;

	if (!ops->hello)
		return -EINVAL;
	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	/* Replace a stale socket (an agent that died), never another file. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) || listen(fd, 64)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	srv = g_new0(struct vt_handoff_server, 1);
	srv->path = g_strdup(path);
	srv->fd = fd;
	srv->ctx = ctx ? g_main_context_ref(ctx) : NULL;
	srv->ops = ops;
	srv->opaque = opaque;
	vt_handoff_limits_default(&srv->limits);
	srv->peers = g_hash_table_new(g_str_hash, g_str_equal);
	srv->groups = g_hash_table_new(g_str_hash, g_str_equal);
	vt_hs_spare_refill(srv);
	vt_hs_listen(srv);
	*out = srv;
	return 0;
}

void vt_handoff_server_free(struct vt_handoff_server *srv)
{
	if (!srv)
		return;
	srv->freeing = true;
	while (srv->conns)
		vt_handoff_conn_close(srv->conns->data, "agent shutting down");
	vt_hs_destroy_source(&srv->src);
	vt_hs_destroy_source(&srv->backoff);
	vt_hs_spare_release(srv);
	g_hash_table_destroy(srv->peers);	/* empty: every connection closed */
	g_hash_table_destroy(srv->groups);
	close(srv->fd);
	unlink(srv->path);
	if (srv->ctx)
		g_main_context_unref(srv->ctx);
	g_free(srv->path);
	g_free(srv);
}

