// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One hand-off connection's state machine: deadlines, output queue,
 * HELLO / PREPARE / POLICY / RANGES handling, reading whole messages.
 * See handoff_server.h.
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

/* @c stops being pending (HELLO accepted, or closed before). */
static void conn_unpend(struct vt_handoff_conn *c)
{
	c->srv->n_pending--;
	if (c->acct) {
		c->acct->pending--;
		c->acct->group->pending--;
	}
}

static void conn_unref(struct vt_handoff_conn *c)
{
	if (--c->refs)
		return;
	for (unsigned int i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	if (c->prep_fd >= 0)
		close(c->prep_fd);
	for (unsigned int i = 0; i < CONN_MAPS; i++)
		if (c->maps[i] >= 0)
			close(c->maps[i]);
	g_free(c->payload);
	vt_handoff_peer_clear(&c->peer);
	if (c->out)
		g_byte_array_unref(c->out);
	g_free(c);
}

static void conn_free_payload(struct vt_handoff_conn *c)
{
	c->srv->buffered -= c->payload_cap;
	g_clear_pointer(&c->payload, g_free);
	c->payload_cap = 0;
	c->payload_got = 0;
}

static size_t out_pending(const struct vt_handoff_conn *c)
{
	return c->out ? c->out->len - c->out_off : 0;
}

void vt_hs_destroy_source(GSource **src)
{
	if (*src) {
		g_source_destroy(*src);
		g_source_unref(*src);
		*src = NULL;
	}
}

/* The earliest deadline of @c (or -1) into its timer's ready time. */
static void conn_arm_timer(struct vt_handoff_conn *c)
{
	const struct vt_handoff_limits *l = &c->srv->limits;
	gint64 t = -1;

	if (c->dead)
		return;
	if (c->closing && (!c->flush_first || !out_pending(c))) {
		g_source_set_ready_time(c->timer, 0);
		return;
	}
	if (!c->accepted && !c->hello_pending && !c->prepared)
		t = c->hello_deadline;
	if (c->prep_fd >= 0 && !c->hello_pending && (t < 0 || c->prep_check < t))
		t = c->prep_check;
	if (c->hdr_got && (t < 0 || c->last_rx + l->idle_timeout_ms * 1000LL < t))
		t = c->last_rx + l->idle_timeout_ms * 1000LL;
	if (out_pending(c) && (t < 0 || c->last_tx + l->send_timeout_ms * 1000LL < t))
		t = c->last_tx + l->send_timeout_ms * 1000LL;
	g_source_set_ready_time(c->timer, t);
}

/*
 * Close @c from the main loop rather than from inside a caller that still
 * holds it (a send from the agent, a reply from a callback): it stops
 * reading now; with @flush_first, what is queued (a HELLO_REPLY saying why)
 * goes out first, within send_timeout_ms.
 */
static void conn_close_later(struct vt_handoff_conn *c, const char *why, bool flush_first)
{
	if (c->dead || c->closing)
		return;
	c->closing = true;
	c->flush_first = flush_first;
	g_strlcpy(c->close_why, why, sizeof(c->close_why));
	vt_hs_destroy_source(&c->src);
	conn_arm_timer(c);
}

static void conn_drop_fds(struct vt_handoff_conn *c)
{
	for (unsigned int i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	c->nfds = 0;
	c->fds_lost = false;
	c->fds_starved = false;
}

/*
 * The connection accepted on the fd reserve was answered or is gone: refill
 * the reserve and accept again. One that sent no HELLO (@wasted) marks its
 * peer: its next connection on the reserve is refused at once.
 */
static void reserve_done(struct vt_handoff_conn *c, bool wasted)
{
	struct vt_handoff_server *srv = c->srv;

	if (!c->on_reserve)
		return;
	c->on_reserve = false;
	if (srv->reserve_conn == c)
		srv->reserve_conn = NULL;
	if (wasted) {
		srv->reserve_waster = c->peer.pid;
		srv->reserve_waster_start = c->peer.start_time;
	}
	if (srv->freeing)
		return;
	vt_hs_spare_refill(srv);
	if (!srv->src && !srv->backoff)
		vt_hs_listen(srv);
}

void vt_handoff_conn_close(struct vt_handoff_conn *c, const char *why)
{
	struct vt_handoff_server *srv = c->srv;

	if (c->dead)
		return;
	c->dead = true;
	g_debug("handoff: backend '%s' (pid %d): closing: %s", c->backend_id, (int)c->peer.pid, why);
	srv->conns = g_list_remove(srv->conns, c);
	vt_hs_destroy_source(&c->src);
	vt_hs_destroy_source(&c->out_src);
	vt_hs_destroy_source(&c->timer);
	conn_free_payload(c);
	close(c->fd);
	c->fd = -1;
	if (!c->accepted) {
		conn_unpend(c);
		srv->stats.dropped++;
	}
	if (c->acct) {
		c->acct->conns--;
		vt_hs_acct_put(srv, c->acct);
		c->acct = NULL;
	}
	reserve_done(c, !c->hello_seen);
	if (c->accepted && srv->ops->closed)
		srv->ops->closed(c, why, srv->opaque);
	else if (!c->accepted && srv->ops->dropped)
		srv->ops->dropped(c, why, srv->opaque);
	conn_unref(c);
}

static gboolean conn_timer_cb(gpointer data)
{
	struct vt_handoff_conn *c = data;
	const struct vt_handoff_limits *l = &c->srv->limits;
	gint64 now = g_get_monotonic_time();
	char why[VT_HANDOFF_ERR_LEN];

	if (c->closing && (!c->flush_first || !out_pending(c))) {
		g_strlcpy(why, c->close_why, sizeof(why));
	} else if (c->prep_fd >= 0 && now >= c->prep_check) {
		struct stat st;

		if (fstat(c->prep_fd, &st) == 0 && (uint64_t)st.st_blocks > c->prep_blocks) {
			/* guest RAM arrives: the next check one period from now */
			c->prep_blocks = (uint64_t)st.st_blocks;
			c->prep_check = now + l->prepare_idle_ms * 1000LL;
			conn_arm_timer(c);
			return G_SOURCE_CONTINUE;
		}
		c->srv->stats.prepare_idle++;
		snprintf(why, sizeof(why), "PREPARE: no guest RAM arrived for %u ms (prepare_idle_ms), "
			 "%" PRIu64 " of %" PRIu64 " bytes allocated", l->prepare_idle_ms,
			 c->prep_blocks * 512, c->size_bytes);
	} else if (!c->accepted && !c->hello_pending && !c->prepared && now >= c->hello_deadline) {
		c->srv->stats.hello_timeouts++;
		snprintf(why, sizeof(why), "no complete HELLO within %u ms of connecting%s",
			 c->on_reserve ? MIN(l->hello_timeout_ms, l->reserve_hello_ms) :
					 l->hello_timeout_ms,
			 c->on_reserve ? " (on the agent's fd reserve: reserve_hello_ms)" : "");
	} else if (c->hdr_got && now >= c->last_rx + l->idle_timeout_ms * 1000LL) {
		snprintf(why, sizeof(why), "partial %s idle for %u ms",
			 vt_handoff_type_name(c->hdr_got >= sizeof(c->hdr) ? c->hdr.type : 0),
			 l->idle_timeout_ms);
	} else if (out_pending(c) && now >= c->last_tx + l->send_timeout_ms * 1000LL) {
		snprintf(why, sizeof(why), "QEMU read nothing for %u ms (%zu bytes queued)",
			 l->send_timeout_ms, out_pending(c));
	} else {
		conn_arm_timer(c);
		return G_SOURCE_CONTINUE;
	}
	if (c->closing && c->flush_first && out_pending(c))
		g_strlcpy(why, c->close_why, sizeof(why));
	vt_handoff_conn_close(c, why);
	return G_SOURCE_REMOVE;
}

static gboolean timer_dispatch(GSource *src, GSourceFunc cb, gpointer data)
{
	g_source_set_ready_time(src, -1);
	return cb(data);
}

static GSourceFuncs timer_funcs = { .dispatch = timer_dispatch };

static gboolean conn_writable(gint fd, GIOCondition cond, gpointer data);

/* Write what QEMU takes now; watch for POLLOUT while something is left. */
static int conn_flush(struct vt_handoff_conn *c)
{
	while (out_pending(c)) {
		ssize_t n = send(c->fd, c->out->data + c->out_off, out_pending(c),
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			int ret = -errno;

			/* the peer is gone: drop the output, or POLLERR would wake us until the deadline */
			c->out_off = c->out->len;
			vt_hs_destroy_source(&c->out_src);
			conn_close_later(c, g_strerror(-ret), false);
			conn_arm_timer(c);
			return ret;
		}
		c->out_off += (size_t)n;
		c->last_tx = g_get_monotonic_time();
	}
	if (out_pending(c)) {
		if (!c->out_src) {
			c->out_src = g_unix_fd_source_new(c->fd, G_IO_OUT);
			g_source_set_callback(c->out_src, G_SOURCE_FUNC(conn_writable), c, NULL);
			g_source_attach(c->out_src, c->srv->ctx);
		}
	} else {
		vt_hs_destroy_source(&c->out_src);
		if (c->out->len > OUT_KEEP) {
			g_byte_array_unref(c->out);
			c->out = g_byte_array_new();
		} else {
			g_byte_array_set_size(c->out, 0);
		}
		c->out_off = 0;
	}
	conn_arm_timer(c);
	return 0;
}

static gboolean conn_writable(gint fd, GIOCondition cond, gpointer data)
{
	struct vt_handoff_conn *c = data;

	(void)fd;
	(void)cond;
	conn_flush(c);
	return G_SOURCE_CONTINUE;	/* conn_flush removes the watch when drained */
}

/* Queue one message and write what the socket takes; never blocks. */
static int conn_send(struct vt_handoff_conn *c, uint16_t type, uint32_t seq,
		     const struct iovec *parts, unsigned int nparts)
{
	struct vtier_handoff_hdr hdr;
	size_t size = 0;

	if (c->dead || c->closing)
		return -ENOTCONN;
	for (unsigned int i = 0; i < nparts; i++)
		size += parts[i].iov_len;
	if (size > VTIER_HANDOFF_PAYLOAD_MAX)
		return -EMSGSIZE;
	if (out_pending(c) + sizeof(hdr) + size > c->srv->limits.max_output_bytes) {
		char why[VT_HANDOFF_ERR_LEN];

		snprintf(why, sizeof(why), "output queue over %zu bytes: QEMU does not read its "
			 "socket", c->srv->limits.max_output_bytes);
		conn_close_later(c, why, false);
		return -ENOBUFS;
	}
	if (!out_pending(c))
		c->last_tx = g_get_monotonic_time();	/* the send deadline starts now */
	vt_handoff_hdr_init(&hdr, type, seq, size);
	g_byte_array_append(c->out, (const guint8 *)&hdr, sizeof(hdr));
	for (unsigned int i = 0; i < nparts; i++)
		g_byte_array_append(c->out, parts[i].iov_base, parts[i].iov_len);
	return conn_flush(c);
}

/*
 * Both STATS forms: @flags (VTIER_STATS_F_TIER_V2 or 0) replaces
 * stats->flags; @tiers holds stats->n_tiers entries of @entry_size bytes;
 * @tco (may be NULL) and its tco->n_tiers @tco_tiers follow them with
 * VTIER_STATS_F_TCO; @mig (may be NULL) last, with VTIER_STATS_F_MIGRATION.
 * The report is checked as QEMU will check it: QEMU drops a connection that
 * sends a bad one.
 */
static int send_stats(struct vt_handoff_conn *c, const struct vtier_handoff_stats *stats,
		      uint32_t flags, const void *tiers, size_t entry_size,
		      const struct vtier_handoff_tco *tco,
		      const struct vtier_handoff_tco_tier *tco_tiers,
		      const struct vtier_handoff_migration_stats *mig)
{
	uint64_t buf[(sizeof(*stats) + VTIER_HANDOFF_TIERS_MAX * sizeof(struct vtier_handoff_tier_v2) +
		      sizeof(*tco) + VTIER_HANDOFF_TIERS_MAX * sizeof(*tco_tiers) + sizeof(*mig)) /
		     sizeof(uint64_t)];
	struct vtier_handoff_stats *s = (void *)buf;
	char *p = (char *)(s + 1);
	struct iovec part = { buf, 0 };
	struct vt_handoff_stats checked;

	if (!c->accepted)
		return -ENOTCONN;
	if (stats->n_tiers > VTIER_HANDOFF_TIERS_MAX ||
	    (tco && tco->n_tiers > VTIER_HANDOFF_TIERS_MAX))
		return -EINVAL;
	*s = *stats;
	s->flags = flags | (tco ? VTIER_STATS_F_TCO : 0) | (mig ? VTIER_STATS_F_MIGRATION : 0);
	memcpy(p, tiers, stats->n_tiers * entry_size);
	p += stats->n_tiers * entry_size;
	if (tco) {
		memcpy(p, tco, sizeof(*tco));
		p += sizeof(*tco);
		memcpy(p, tco_tiers, tco->n_tiers * sizeof(*tco_tiers));
		p += tco->n_tiers * sizeof(*tco_tiers);
	}
	if (mig) {
		memcpy(p, mig, sizeof(*mig));
		p += sizeof(*mig);
	}
	part.iov_len = (size_t)(p - (char *)buf);
	if (vt_handoff_check_stats(buf, part.iov_len, &checked, NULL, 0))
		return -EINVAL;
	return conn_send(c, VTIER_HANDOFF_STATS, ++c->seq, &part, 1);
}

int vt_handoff_conn_send_stats(struct vt_handoff_conn *c, const struct vtier_handoff_stats *stats,
			       const struct vtier_handoff_tier *tiers)
{
	return send_stats(c, stats, 0, tiers, sizeof(*tiers), NULL, NULL, NULL);
}

int vt_handoff_conn_send_stats_v2(struct vt_handoff_conn *c,
				  const struct vtier_handoff_stats *stats,
				  const struct vtier_handoff_tier_v2 *tiers)
{
	return send_stats(c, stats, VTIER_STATS_F_TIER_V2, tiers, sizeof(*tiers), NULL, NULL, NULL);
}

int vt_handoff_conn_send_stats_tco(struct vt_handoff_conn *c,
				   const struct vtier_handoff_stats *stats,
				   const struct vtier_handoff_tier_v2 *tiers,
				   const struct vtier_handoff_tco *tco,
				   const struct vtier_handoff_tco_tier *tco_tiers,
				   const struct vtier_handoff_migration_stats *mig)
{
	return send_stats(c, stats, VTIER_STATS_F_TIER_V2, tiers, sizeof(*tiers), tco, tco_tiers,
			  mig);
}

int vt_handoff_conn_send_profile(struct vt_handoff_conn *c, const void *profile, size_t size)
{
	struct iovec part = { (void *)profile, size };

	if (!c->accepted)
		return -ENOTCONN;
	if (size > VTIER_HANDOFF_PROFILE_MAX)
		return -EMSGSIZE;
	if (!size && !c->no_profile_ok)
		return -EOPNOTSUPP;
	return conn_send(c, VTIER_HANDOFF_PROFILE, ++c->seq, &part, size ? 1 : 0);
}

int vt_handoff_conn_send_sent(struct vt_handoff_conn *c, int status, uint64_t pages,
			      const char *msg)
{
	struct vtier_handoff_sent sent;
	struct iovec part = { &sent, 0 };

	if (!c->send_end_pending)
		return -EINVAL;
	c->send_end_pending = false;
	part.iov_len = vt_handoff_sent_init(&sent, status, pages, msg);
	return conn_send(c, VTIER_HANDOFF_SENT, c->send_end_seq, &part, 1);
}

static int conn_reply_flags(struct vt_handoff_conn *c, uint16_t type, uint32_t seq, int status,
			    uint32_t flags, const char *msg)
{
	/* HELLO_REPLY and POLICY_REPLY share their layout. */
	struct vtier_handoff_hello_reply reply = { .status = status, .flags = flags };
	struct iovec part = { &reply, sizeof(reply) };

	_Static_assert(sizeof(struct vtier_handoff_hello_reply) ==
		       sizeof(struct vtier_handoff_policy_reply), "reply layouts");
	g_strlcpy(reply.message, msg, sizeof(reply.message));
	return conn_send(c, type, seq, &part, 1);
}

static int conn_reply(struct vt_handoff_conn *c, uint16_t type, uint32_t seq, int status,
		      const char *msg)
{
	return conn_reply_flags(c, type, seq, status, 0, msg);
}

/* The agent's answer to a HELLO: accept (@ret 0) or refuse with @text and close. */
static void conn_hello_reply(struct vt_handoff_conn *c, uint32_t seq, int ret, const char *text)
{
	if (ret > 0)
		ret = -EINVAL;
	if (!ret) {
		c->accepted = true;
		conn_unpend(c);
	}
	if (conn_reply(c, VTIER_HANDOFF_HELLO_REPLY, seq, ret,
		       ret ? (text[0] ? text : g_strerror(-ret)) : "accepted")) {
		conn_close_later(c, "cannot send HELLO_REPLY", false);
	} else if (ret) {
		char why[VT_HANDOFF_ERR_LEN];

		snprintf(why, sizeof(why), "HELLO refused: %s", text[0] ? text : g_strerror(-ret));
		conn_close_later(c, why, true);
	}
	reserve_done(c, false);
}

/*
 * A HELLO or PREPARE: which backend the connection is about (for logs and the
 * HELLO proper's match), and its fds are the handler's now, unless the
 * kernel's word refutes it.
 */
static void conn_take_hello(struct vt_handoff_conn *c, const struct vtier_handoff_hello *h)
{
	g_strlcpy(c->backend_id, h->backend_id, sizeof(c->backend_id));
	vt_text_printable(c->vm_name, sizeof(c->vm_name), h->vm_name, sizeof(h->vm_name));
	c->size_bytes = h->size_bytes;
	c->no_profile_ok = h->flags & VTIER_HELLO_F_NO_PROFILE;
	c->nfds = 0;
}

static void conn_hello(struct vt_handoff_conn *c, const struct vt_handoff_msg *msg)
{
	struct vt_handoff_server *srv = c->srv;
	char text[VTIER_HANDOFF_MESSAGE_LEN] = "";
	int memfd = c->fds[VTIER_HANDOFF_FD_MEMFD];
	int uffd = c->fds[VTIER_HANDOFF_FD_UFFD];
	/* the maps, if any, follow the uffd: vt_handoff_parse() matched the count to the flags */
	unsigned int nfds = c->nfds;
	int ret;

	conn_take_hello(c, msg->hello.fixed);
	if (c->prep_fd >= 0) {
		/* the HELLO proper: no PREPARE deadline from now on */
		close(c->prep_fd);
		c->prep_fd = -1;
	}
	ret = vt_hs_fd_reserve_check(c, msg->hello.fixed, text, sizeof(text));
	if (!ret)
		ret = vt_handoff_check_fds(msg->hello.fixed, &c->peer, memfd, uffd, text,
					   sizeof(text));
	for (unsigned int i = VTIER_HANDOFF_FD_ZERO_MAP; !ret && i < nfds; i++)
		ret = vt_handoff_check_map(msg->hello.fixed, i, c->fds[i], text, sizeof(text));
	if (ret) {
		for (unsigned int i = 0; i < nfds; i++)
			close(c->fds[i]);
	} else {
		/* the callee takes them, or they go with the connection */
		for (unsigned int i = VTIER_HANDOFF_FD_ZERO_MAP; i < nfds; i++)
			c->maps[i - VTIER_HANDOFF_FD_ZERO_MAP] = c->fds[i];
		ret = srv->ops->hello(c, &msg->hello, memfd, uffd, text, srv->opaque);
		if (ret == VT_HANDOFF_HELLO_PENDING) {
			/* QEMU waits for the reply anyway; the HELLO deadline no longer applies */
			c->hello_pending = true;
			c->hello_seq = msg->hdr.seq;
			c->refs++;	/* the agent's, until vt_handoff_conn_hello_done() */
			conn_arm_timer(c);
			return;
		}
	}
	conn_hello_reply(c, msg->hdr.seq, ret, text);
}

/*
 * A PREPARE (HELLO with VTIER_HELLO_F_PREPARE): the memfd, checked against
 * the kernel, to ops->prepare. No reply, unless QEMU offers the early
 * hand-off (VTIER_HELLO_F_EARLY) and ops->prepare takes it: then a
 * HELLO_REPLY with VTIER_HELLO_REPLY_F_EARLY asks for the HELLO proper now.
 * A peer the kernel refutes loses the connection.
 */
static void conn_prepare(struct vt_handoff_conn *c, const struct vt_handoff_msg *msg)
{
	struct vt_handoff_server *srv = c->srv;
	char text[VTIER_HANDOFF_MESSAGE_LEN] = "";
	int memfd = c->fds[VTIER_HANDOFF_FD_MEMFD];
	int ret;

	conn_take_hello(c, msg->hello.fixed);
	ret = vt_hs_fd_reserve_check(c, msg->hello.fixed, text, sizeof(text));
	if (!ret)
		ret = vt_handoff_check_fds(msg->hello.fixed, &c->peer, memfd, -1, text,
					   sizeof(text));
	if (!ret && srv->limits.prepare_idle_ms) {
		struct stat st;

		/* the server's own reference, to see guest RAM arrive */
		c->prep_fd = fcntl(memfd, F_DUPFD_CLOEXEC, 0);
		if (c->prep_fd < 0 || fstat(c->prep_fd, &st))
			ret = vt_err_set(-errno, text, sizeof(text), "the agent cannot keep the memfd: "
					 "%s (RLIMIT_NOFILE %llu)", g_strerror(errno), vt_hs_fd_limit());
		else
			c->prep_blocks = (uint64_t)st.st_blocks;
		c->prep_check = g_get_monotonic_time() + srv->limits.prepare_idle_ms * 1000LL;
	}
	if (ret) {
		char why[VT_HANDOFF_ERR_LEN];

		close(memfd);
		snprintf(why, sizeof(why), "PREPARE refused: %s", text);
		vt_handoff_conn_close(c, why);
		return;
	}
	c->prepared = true;
	reserve_done(c, false);
	/* no HELLO deadline (the guest runs when the migration ends), but guest RAM must arrive */
	conn_arm_timer(c);
	if (!srv->ops->prepare) {
		close(memfd);
		return;
	}
	if (srv->ops->prepare(c, &msg->hello, memfd, srv->opaque) &&
	    (msg->hello.fixed->flags & VTIER_HELLO_F_EARLY) &&
	    conn_reply_flags(c, VTIER_HANDOFF_HELLO_REPLY, msg->hdr.seq, 0,
			     VTIER_HELLO_REPLY_F_EARLY, "hand over now"))
		conn_close_later(c, "cannot send the PREPARE's HELLO_REPLY", false);
}

int vt_handoff_conn_hello_done(struct vt_handoff_conn *c, int status, const char *msg)
{
	int ret = 0;

	if (!c->hello_pending)
		return -EINVAL;
	c->hello_pending = false;
	if (c->dead || c->closing) {
		ret = -ENOTCONN;
	} else {
		conn_hello_reply(c, c->hello_seq, status, msg ? msg : "");
	}
	conn_unref(c);
	return ret;
}

bool vt_handoff_conn_closed(const struct vt_handoff_conn *c)
{
	return c->dead || c->closing;
}

static void conn_dispatch(struct vt_handoff_conn *c)
{
	struct vt_handoff_server *srv = c->srv;
	char err[VT_HANDOFF_ERR_LEN];
	struct vt_handoff_msg msg;
	int ret;

	if (c->fds_starved) {
		char text[VTIER_HANDOFF_MESSAGE_LEN];

		srv->stats.out_of_fds++;
		snprintf(text, sizeof(text), "agent out of fds (RLIMIT_NOFILE %llu reached): the %s's "
			 "fds were not received; raise LimitNOFILE", vt_hs_fd_limit(),
			 vt_handoff_type_name(c->hdr.type));
		if (c->hdr.type == VTIER_HANDOFF_HELLO && !c->accepted && !c->hello_pending) {
			c->hello_seen = true;
			conn_hello_reply(c, c->hdr.seq, -EMFILE, text);
		} else {
			vt_handoff_conn_close(c, text);
		}
		return;
	}
	if (c->fds_lost) {
		vt_handoff_conn_close(c, "more fds than any message carries");
		return;
	}
	ret = vt_handoff_parse(&c->hdr, c->payload, c->payload_got, c->nfds, &msg, err, sizeof(err));
	if (ret) {
		vt_handoff_conn_close(c, err);
		return;
	}
	if (msg.hdr.type == VTIER_HANDOFF_HELLO && msg.hello.fixed->flags & VTIER_HELLO_F_PREPARE) {
		if (c->accepted || c->hello_pending || c->prepared) {
			vt_handoff_conn_close(c, "PREPARE after a HELLO or a PREPARE");
			return;
		}
		c->hello_seen = true;
		conn_prepare(c, &msg);
		return;
	}
	if (msg.hdr.type == VTIER_HANDOFF_HELLO) {
		if (c->accepted || c->hello_pending) {
			vt_handoff_conn_close(c, "second HELLO on one connection");
			return;
		}
		if (c->prepared && (strcmp(c->backend_id, msg.hello.fixed->backend_id) ||
				    c->size_bytes != msg.hello.fixed->size_bytes ||
				    !(msg.hello.fixed->flags & VTIER_HELLO_F_INCOMING))) {
			vt_handoff_conn_close(c, "HELLO of another backend than its PREPARE");
			return;
		}
		c->hello_seen = true;
		conn_hello(c, &msg);
		return;
	}
	if (!c->accepted) {
		vt_handoff_conn_close(c, "message before HELLO");
		return;
	}
	if (msg.hdr.type == VTIER_HANDOFF_POLICY) {
		char text[VTIER_HANDOFF_MESSAGE_LEN] = "";

		ret = srv->ops->policy ? srv->ops->policy(c, &msg.policy, text, srv->opaque) : -ENOTSUP;
		if (ret > 0)
			ret = -EINVAL;
		if (conn_reply(c, VTIER_HANDOFF_POLICY_REPLY, msg.hdr.seq, ret,
			       ret ? (text[0] ? text : g_strerror(-ret)) : "applied"))
			conn_close_later(c, "cannot send POLICY_REPLY", false);
	} else if (msg.hdr.type == VTIER_HANDOFF_MIGRATION) {
		if (msg.migration->event == VTIER_MIGRATION_SEND_END) {
			/* answered by vt_handoff_conn_send_sent(), with this seq */
			c->send_end_pending = true;
			c->send_end_seq = msg.hdr.seq;
		}
		if (srv->ops->migration)
			srv->ops->migration(c, msg.migration->event, srv->opaque);
		else if (c->send_end_pending)	/* no one delivers pages: QEMU must not wait */
			vt_handoff_conn_send_sent(c, -EOPNOTSUPP, 0, "this agent delivers no pages");
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
	unsigned int installed = 0;
	ssize_t n;

	n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		int nfds;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		installed += (unsigned int)nfds;
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
	/*
	 * Truncated: with the buffer full, the peer sent more fds than any
	 * message carries; with room left, the kernel could not install them
	 * (the agent is at its fd limit) and closed them.
	 */
	if ((mh.msg_flags & MSG_CTRUNC) && installed < CONN_MAX_FDS)
		c->fds_starved = true;
	else if (mh.msg_flags & MSG_CTRUNC)
		c->fds_lost = true;
	return n;
}

/*
 * Make room for more of the payload: the buffer grows (doubling) as bytes
 * arrive, never to the claimed size up front, and all connections' partial
 * payloads together stay under max_buffered_bytes.
 */
static int conn_grow_payload(struct vt_handoff_conn *c, char *err, size_t err_len)
{
	struct vt_handoff_server *srv = c->srv;
	size_t cap = c->payload_cap ? c->payload_cap * 2 : PAYLOAD_FIRST_ALLOC;

	if (cap > c->hdr.size)
		cap = c->hdr.size ? c->hdr.size : 1;
	if (srv->buffered - c->payload_cap + cap > srv->limits.max_buffered_bytes) {
		snprintf(err, err_len, "partial messages of all connections over the agent's cap "
			 "of %zu bytes", srv->limits.max_buffered_bytes);
		return -ENOBUFS;
	}
	c->payload = g_realloc(c->payload, cap);
	srv->buffered += cap - c->payload_cap;
	c->payload_cap = cap;
	return 0;
}

/* Read what is there (up to READ_BUDGET); returns false once the connection is closed. */
static bool conn_read(struct vt_handoff_conn *c)
{
	char err[VT_HANDOFF_ERR_LEN];
	size_t budget = READ_BUDGET;

	while (budget) {
		ssize_t n;

		if (c->hdr_got < sizeof(c->hdr)) {
			n = conn_recv(c, (uint8_t *)&c->hdr + c->hdr_got, sizeof(c->hdr) - c->hdr_got);
		} else {
			if (c->payload_got == c->payload_cap &&
			    conn_grow_payload(c, err, sizeof(err))) {
				vt_handoff_conn_close(c, err);
				return false;
			}
			n = conn_recv(c, c->payload + c->payload_got,
				      MIN(c->payload_cap - c->payload_got, budget));
		}
		if (n == -EAGAIN || n == -EINTR)
			break;
		if (n < 0) {
			vt_handoff_conn_close(c, g_strerror(-n));
			return false;
		}
		if (n == 0) {
			vt_handoff_conn_close(c, c->hdr_got ? "QEMU closed the connection mid-message" :
							      "QEMU closed the connection");
			return false;
		}
		budget -= MIN((size_t)n, budget);
		c->last_rx = g_get_monotonic_time();
		if (c->hdr_got < sizeof(c->hdr)) {
			c->hdr_got += n;
			if (c->hdr_got < sizeof(c->hdr))
				continue;
			if (vt_handoff_check_hdr(&c->hdr, err, sizeof(err))) {
				vt_handoff_conn_close(c, err);
				return false;
			}
			c->payload_got = 0;
		} else {
			c->payload_got += n;
		}
		if (c->payload_got < c->hdr.size)
			continue;

		conn_dispatch(c);
		if (c->dead)
			return false;
		conn_free_payload(c);
		conn_drop_fds(c);
		c->hdr_got = 0;
		if (c->closing)
			return true;	/* conn_close_later() removed the read watch */
	}
	conn_arm_timer(c);
	return true;
}

static gboolean conn_ready(gint fd, GIOCondition cond, gpointer data)
{
	struct vt_handoff_conn *c = data;
	bool alive;

	(void)fd;
	(void)cond;
	c->refs++;
	alive = conn_read(c) && !c->closing;
	conn_unref(c);
	return alive ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

pid_t vt_handoff_conn_peer_pid(const struct vt_handoff_conn *c)
{
	return c->peer.pid;
}

uid_t vt_handoff_conn_peer_uid(const struct vt_handoff_conn *c)
{
	return c->peer.uid;
}

int vt_handoff_conn_peer_pidfd(const struct vt_handoff_conn *c)
{
	return c->peer.pidfd;
}

uint64_t vt_handoff_conn_peer_start_time(const struct vt_handoff_conn *c)
{
	return c->peer.start_time;
}

const char *vt_handoff_conn_peer_cgroup(const struct vt_handoff_conn *c)
{
	return c->peer.cgroup;
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

/* Watch a new connection: its deadlines' timer and its socket. */
void vt_hs_conn_watch(struct vt_handoff_conn *c)
{
	c->timer = g_source_new(&timer_funcs, sizeof(GSource));
	g_source_set_callback(c->timer, conn_timer_cb, c, NULL);
	g_source_attach(c->timer, c->srv->ctx);
	c->src = g_unix_fd_source_new(c->fd, G_IO_IN | G_IO_HUP | G_IO_ERR);
	g_source_set_callback(c->src, G_SOURCE_FUNC(conn_ready), c, NULL);
	g_source_attach(c->src, c->srv->ctx);
	conn_arm_timer(c);
}

int vt_handoff_conn_take_map(struct vt_handoff_conn *c, unsigned int fd_index)
{
	int fd;

	if (fd_index < VTIER_HANDOFF_FD_ZERO_MAP ||
	    fd_index >= VTIER_HANDOFF_FD_ZERO_MAP + CONN_MAPS)
		return -1;
	fd = c->maps[fd_index - VTIER_HANDOFF_FD_ZERO_MAP];
	c->maps[fd_index - VTIER_HANDOFF_FD_ZERO_MAP] = -1;
	return fd;
}
