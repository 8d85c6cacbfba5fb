// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The agent's end of the hand-off socket. See handoff_server.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib-unix.h>

#include "handoff_server.h"

/* More than a HELLO carries: extra fds are a protocol error, not a leak. */
#define CONN_MAX_FDS 4
/* How long a send may wait for QEMU to drain its socket. */
#define SEND_TIMEOUT_MS 5000

struct vt_handoff_server {
	char *path;
	int fd;
	GMainContext *ctx;
	GSource *src;
	const struct vt_handoff_ops *ops;
	void *opaque;
	GList *conns;
};

struct vt_handoff_conn {
	struct vt_handoff_server *srv;
	int refs;
	int fd;
	GSource *src;
	bool accepted;		/* HELLO accepted: ops->closed owed */
	bool dead;
	char backend_id[VTIER_HANDOFF_ID_LEN];
	char vm_name[VTIER_HANDOFF_ID_LEN];
	uint64_t size_bytes;	/* of the backend, from the HELLO */
	void *user;
	uint32_t seq;

	/* the message being received */
	struct vtier_handoff_hdr hdr;
	size_t hdr_got;
	uint8_t *payload;
	size_t payload_got;
	int fds[CONN_MAX_FDS];
	unsigned int nfds;
	bool fds_lost;
};

static void conn_unref(struct vt_handoff_conn *c)
{
	if (--c->refs)
		return;
	for (unsigned int i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	g_free(c->payload);
	g_free(c);
}

static void conn_drop_fds(struct vt_handoff_conn *c)
{
	for (unsigned int i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	c->nfds = 0;
	c->fds_lost = false;
}

void vt_handoff_conn_close(struct vt_handoff_conn *c, const char *why)
{
	struct vt_handoff_server *srv = c->srv;

	if (c->dead)
		return;
	c->dead = true;
	g_debug("handoff: backend '%s': closing: %s", c->backend_id, why);
	srv->conns = g_list_remove(srv->conns, c);
	g_source_destroy(c->src);
	g_source_unref(c->src);
	close(c->fd);
	c->fd = -1;
	if (c->accepted && srv->ops->closed)
		srv->ops->closed(c, why, srv->opaque);
	conn_unref(c);
}

static int conn_send(struct vt_handoff_conn *c, uint16_t type, uint32_t seq,
		     const struct iovec *parts, unsigned int nparts)
{
	struct vtier_handoff_hdr hdr;
	struct iovec iov[4];
	struct msghdr mh = { .msg_iov = iov };
	size_t size = 0;

	if (c->dead)
		return -ENOTCONN;
	g_assert(nparts < G_N_ELEMENTS(iov));
	for (unsigned int i = 0; i < nparts; i++) {
		iov[i + 1] = parts[i];
		size += parts[i].iov_len;
	}
	if (size > VTIER_HANDOFF_PAYLOAD_MAX)
		return -EMSGSIZE;
	vt_handoff_hdr_init(&hdr, type, seq, size);
	iov[0] = (struct iovec) { &hdr, sizeof(hdr) };
	mh.msg_iovlen = nparts + 1;

	while (mh.msg_iovlen) {
		ssize_t n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);

		if (n < 0) {
			struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			if (poll(&pfd, 1, SEND_TIMEOUT_MS) == 0)
				return -ETIMEDOUT;
			continue;
		}
		while (mh.msg_iovlen && (size_t)n >= mh.msg_iov[0].iov_len) {
			n -= mh.msg_iov[0].iov_len;
			mh.msg_iov++;
			mh.msg_iovlen--;
		}
		if (mh.msg_iovlen) {
			mh.msg_iov[0].iov_base = (uint8_t *)mh.msg_iov[0].iov_base + n;
			mh.msg_iov[0].iov_len -= n;
		}
	}
	return 0;
}

/*
 * Both STATS forms: @flags (VTIER_STATS_F_TIER_V2 or 0) replaces
 * stats->flags; @tiers holds stats->n_tiers entries of @entry_size bytes. The
 * report is checked as QEMU will check it: QEMU drops a connection that
 * sends a bad one.
 */
static int send_stats(struct vt_handoff_conn *c, const struct vtier_handoff_stats *stats,
		      uint32_t flags, const void *tiers, size_t entry_size)
{
	uint64_t buf[(sizeof(*stats) + VTIER_HANDOFF_TIERS_MAX *
		      sizeof(struct vtier_handoff_tier_v2)) / sizeof(uint64_t)];
	struct vtier_handoff_stats *s = (void *)buf;
	struct iovec part = { buf, sizeof(*stats) };
	struct vt_handoff_stats checked;

	if (!c->accepted)
		return -ENOTCONN;
	if (stats->n_tiers > VTIER_HANDOFF_TIERS_MAX)
		return -EINVAL;
	*s = *stats;
	s->flags = flags;
	memcpy(s + 1, tiers, stats->n_tiers * entry_size);
	part.iov_len += stats->n_tiers * entry_size;
	if (vt_handoff_check_stats(buf, part.iov_len, &checked, NULL, 0))
		return -EINVAL;
	return conn_send(c, VTIER_HANDOFF_STATS, ++c->seq, &part, 1);
}

int vt_handoff_conn_send_stats(struct vt_handoff_conn *c, const struct vtier_handoff_stats *stats,
			       const struct vtier_handoff_tier *tiers)
{
	return send_stats(c, stats, 0, tiers, sizeof(*tiers));
}

int vt_handoff_conn_send_stats_v2(struct vt_handoff_conn *c,
				  const struct vtier_handoff_stats *stats,
				  const struct vtier_handoff_tier_v2 *tiers)
{
	return send_stats(c, stats, VTIER_STATS_F_TIER_V2, tiers, sizeof(*tiers));
}

int vt_handoff_conn_send_profile(struct vt_handoff_conn *c, const void *profile, size_t size)
{
	struct iovec part = { (void *)profile, size };

	if (!c->accepted)
		return -ENOTCONN;
	if (!size || size > VTIER_HANDOFF_PROFILE_MAX)
		return -EMSGSIZE;
	return conn_send(c, VTIER_HANDOFF_PROFILE, ++c->seq, &part, 1);
}

static int conn_reply(struct vt_handoff_conn *c, uint16_t type, uint32_t seq, int status,
		      const char *msg)
{
	/* HELLO_REPLY and POLICY_REPLY share their layout. */
	struct vtier_handoff_hello_reply reply = { .status = status };
	struct iovec part = { &reply, sizeof(reply) };

	_Static_assert(sizeof(struct vtier_handoff_hello_reply) ==
		       sizeof(struct vtier_handoff_policy_reply), "reply layouts");
	g_strlcpy(reply.message, msg, sizeof(reply.message));
	return conn_send(c, type, seq, &part, 1);
}

static void conn_hello(struct vt_handoff_conn *c, const struct vt_handoff_msg *msg)
{
	struct vt_handoff_server *srv = c->srv;
	char text[VTIER_HANDOFF_MESSAGE_LEN] = "";
	int memfd = c->fds[VTIER_HANDOFF_FD_MEMFD];
	int uffd = c->fds[VTIER_HANDOFF_FD_UFFD];
	int ret;

	g_strlcpy(c->backend_id, msg->hello.fixed->backend_id, sizeof(c->backend_id));
	g_strlcpy(c->vm_name, msg->hello.fixed->vm_name, sizeof(c->vm_name));
	c->size_bytes = msg->hello.fixed->size_bytes;
	c->nfds = 0;		/* the callee owns them now */
	ret = srv->ops->hello(c, &msg->hello, memfd, uffd, text, srv->opaque);
	if (ret > 0)
		ret = -EINVAL;
	if (!ret)
		c->accepted = true;
	if (conn_reply(c, VTIER_HANDOFF_HELLO_REPLY, msg->hdr.seq, ret,
		       ret ? (text[0] ? text : g_strerror(-ret)) : "accepted")) {
		vt_handoff_conn_close(c, "cannot send HELLO_REPLY");
		return;
	}
	if (ret)
		vt_handoff_conn_close(c, "HELLO refused");
}

static void conn_dispatch(struct vt_handoff_conn *c)
{
	struct vt_handoff_server *srv = c->srv;
	char err[VT_HANDOFF_ERR_LEN];
	struct vt_handoff_msg msg;
	int ret;

	if (c->fds_lost) {
		vt_handoff_conn_close(c, "more fds than any message carries");
		return;
	}
	ret = vt_handoff_parse(&c->hdr, c->payload, c->payload_got, c->nfds, &msg, err, sizeof(err));
	if (ret) {
		vt_handoff_conn_close(c, err);
		return;
	}
	if (msg.hdr.type == VTIER_HANDOFF_HELLO) {
		if (c->accepted) {
			vt_handoff_conn_close(c, "second HELLO on one connection");
			return;
		}
		conn_hello(c, &msg);
		return;
	}
	if (!c->accepted) {
		vt_handoff_conn_close(c, "message before HELLO");
		return;
	}
	if (msg.hdr.type == VTIER_HANDOFF_POLICY) {
		char text[VTIER_HANDOFF_MESSAGE_LEN] = "";

		ret = srv->ops->policy ? srv->ops->policy(c, msg.policy, text, srv->opaque) : -ENOTSUP;
		if (ret > 0)
			ret = -EINVAL;
		if (conn_reply(c, VTIER_HANDOFF_POLICY_REPLY, msg.hdr.seq, ret,
			       ret ? (text[0] ? text : g_strerror(-ret)) : "applied"))
			vt_handoff_conn_close(c, "cannot send POLICY_REPLY");
	} else if (msg.hdr.type == VTIER_HANDOFF_MIGRATION) {
		if (srv->ops->migration)
			srv->ops->migration(c, msg.migration->event, srv->opaque);
	} else if (msg.hdr.type == VTIER_HANDOFF_RANGES) {
		const struct vtier_handoff_range *r = msg.ranges.ranges;

		for (uint32_t i = 0; i < msg.ranges.fixed->n_ranges; i++) {
			if (r[i].offset + r[i].size > c->size_bytes) {
				vt_handoff_conn_close(c, "RANGES: range outside the backend");
				return;
			}
		}
		if (srv->ops->ranges)
			srv->ops->ranges(c, r, msg.ranges.fixed->n_ranges, srv->opaque);
	}
}

/* Receive into @buf, collecting fds that come along. */
static ssize_t conn_recv(struct vt_handoff_conn *c, void *buf, size_t len)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * CONN_MAX_FDS)];
		struct cmsghdr align;
	} control;
	struct iovec iov = { buf, len };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	ssize_t n;

	n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		int nfds;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (int i = 0; i < nfds; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (c->nfds < CONN_MAX_FDS) {
				c->fds[c->nfds++] = fd;
			} else {
				close(fd);
				c->fds_lost = true;
			}
		}
	}
	if (mh.msg_flags & MSG_CTRUNC)
		c->fds_lost = true;
	return n;
}

/* Read what is there; returns false once the connection is closed. */
static bool conn_read(struct vt_handoff_conn *c)
{
	char err[VT_HANDOFF_ERR_LEN];

	for (;;) {
		ssize_t n;

		if (c->hdr_got < sizeof(c->hdr)) {
			n = conn_recv(c, (uint8_t *)&c->hdr + c->hdr_got, sizeof(c->hdr) - c->hdr_got);
		} else {
			n = conn_recv(c, c->payload + c->payload_got, c->hdr.size - c->payload_got);
		}
		if (n == -EAGAIN || n == -EINTR)
			return true;
		if (n < 0) {
			vt_handoff_conn_close(c, g_strerror(-n));
			return false;
		}
		if (n == 0) {
			vt_handoff_conn_close(c, c->hdr_got ? "QEMU closed the connection mid-message" :
							      "QEMU closed the connection");
			return false;
		}
		if (c->hdr_got < sizeof(c->hdr)) {
			c->hdr_got += n;
			if (c->hdr_got < sizeof(c->hdr))
				continue;
			if (vt_handoff_check_hdr(&c->hdr, err, sizeof(err))) {
				vt_handoff_conn_close(c, err);
				return false;
			}
			c->payload = g_malloc(c->hdr.size ? c->hdr.size : 1);
			c->payload_got = 0;
		} else {
			c->payload_got += n;
		}
		if (c->payload_got < c->hdr.size)
			continue;

		conn_dispatch(c);
		if (c->dead)
			return false;
		g_clear_pointer(&c->payload, g_free);
		conn_drop_fds(c);
		c->hdr_got = 0;
		c->payload_got = 0;
	}
}

static gboolean conn_ready(gint fd, GIOCondition cond, gpointer data)
{
	struct vt_handoff_conn *c = data;
	bool alive;

	(void)fd;
	(void)cond;
	c->refs++;
	alive = conn_read(c);
	conn_unref(c);
	return alive ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static gboolean server_accept(gint fd, GIOCondition cond, gpointer data)
{
	struct vt_handoff_server *srv = data;
	struct vt_handoff_conn *c;
	int cfd;

	(void)cond;
	cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0) {
		g_debug("handoff: accept: %s", g_strerror(errno));
		return G_SOURCE_CONTINUE;
	}
	c = g_new0(struct vt_handoff_conn, 1);
	c->srv = srv;
	c->refs = 1;
	c->fd = cfd;
	c->src = g_unix_fd_source_new(cfd, G_IO_IN | G_IO_HUP | G_IO_ERR);
	g_source_set_callback(c->src, G_SOURCE_FUNC(conn_ready), c, NULL);
	g_source_attach(c->src, srv->ctx);
	srv->conns = g_list_prepend(srv->conns, c);
	g_debug("handoff: connection on %s", srv->path);
	return G_SOURCE_CONTINUE;
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
	srv->src = g_unix_fd_source_new(fd, G_IO_IN);
	g_source_set_callback(srv->src, G_SOURCE_FUNC(server_accept), srv, NULL);
	g_source_attach(srv->src, ctx);
	*out = srv;
	return 0;
}

void vt_handoff_server_free(struct vt_handoff_server *srv)
{
	if (!srv)
		return;
	while (srv->conns)
		vt_handoff_conn_close(srv->conns->data, "agent shutting down");
	g_source_destroy(srv->src);
	g_source_unref(srv->src);
	close(srv->fd);
	unlink(srv->path);
	if (srv->ctx)
		g_main_context_unref(srv->ctx);
	g_free(srv->path);
	g_free(srv);
}

const char *vt_handoff_conn_backend_id(const struct vt_handoff_conn *c)
{
	return c->backend_id;
}

const char *vt_handoff_conn_vm_name(const struct vt_handoff_conn *c)
{
	return c->vm_name;
}

void vt_handoff_conn_set_user(struct vt_handoff_conn *c, void *user)
{
	c->user = user;
}

void *vt_handoff_conn_get_user(const struct vt_handoff_conn *c)
{
	return c->user;
}
