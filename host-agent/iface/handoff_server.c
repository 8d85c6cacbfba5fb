// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The agent's end of the hand-off socket. See handoff_server.h.
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

/* More than a HELLO carries: extra fds are a protocol error, not a leak. */
#define CONN_MAX_FDS 4
/* A payload buffer starts this small and doubles as bytes arrive. */
#define PAYLOAD_FIRST_ALLOC (64u << 10)
/* Bytes read from one connection per wakeup: a flooding peer cannot starve others. */
#define READ_BUDGET (1u << 20)
/* An output buffer larger than this is freed once drained. */
#define OUT_KEEP (64u << 10)
/*
 * Fds held in reserve (/dev/null) and closed when accept() fails for lack of
 * fds: the connection then accepted has room for its socket, pidfd, a read
 * of /proc, the HELLO's two fds and the check of its mapping.
 */
#define SPARE_FDS 6
/* A peer as refusals name it: "pid P uid U cgroup C". */
#define PEER_TEXT_LEN 288

/* What one process (pid + start time) holds now. */
struct peer_acct {
	char *key;
	struct group_acct *group;
	unsigned int conns;	/* open connections */
	unsigned int pending;	/* ... of which without an accepted HELLO */
};

/* What one uid + cgroup (a VM's scope under libvirt) holds now. */
struct group_acct {
	char *key;
	unsigned int procs;	/* struct peer_acct pointing here */
	unsigned int pending;
};

struct vt_handoff_server {
	char *path;
	int fd;
	GMainContext *ctx;
	GSource *src;		/* the listening socket; NULL while accept() is paused */
	GSource *backoff;	/* resumes accepting after EMFILE/ENFILE */
	const struct vt_handoff_ops *ops;
	void *opaque;
	GList *conns;		/* newest first */
	struct vt_handoff_limits limits;
	unsigned int n_pending;	/* connections without an accepted HELLO */
	size_t buffered;	/* payload bytes allocated by partial messages */
	struct vt_handoff_server_stats stats;
	bool pause_reported;	/* once per burst of accept() failures */
	GHashTable *peers;	/* "pid:start time" -> struct peer_acct */
	GHashTable *groups;	/* "uid:cgroup" -> struct group_acct */
	int spare[SPARE_FDS];	/* the fd reserve for accept() at the fd limit */
	unsigned int n_spare;
	struct vt_handoff_conn *reserve_conn;	/* accepted on the reserve, not yet answered */
	pid_t reserve_waster;	/* the last peer whose reserve connection sent no HELLO */
	uint64_t reserve_waster_start;
	unsigned int fd_reserve;	/* fds kept free for RECONNECTs (set_fd_reserve) */
	bool freeing;
};

struct vt_handoff_conn {
	struct vt_handoff_server *srv;
	int refs;
	int fd;
	GSource *src;
	bool accepted;		/* HELLO accepted: ops->closed owed */
	bool hello_pending;	/* the agent answers later: vt_handoff_conn_hello_done() */
	bool prepared;		/* a PREPARE came: the HELLO proper follows, no deadline */
	uint32_t hello_seq;
	bool dead;
	bool on_reserve;	/* accepted on the fd reserve, HELLO not yet answered */
	bool hello_seen;	/* a complete HELLO or PREPARE arrived */
	bool closing;		/* closes at the next timer dispatch */
	bool flush_first;	/* ... once the output queue drained */
	char close_why[VT_HANDOFF_ERR_LEN];
	struct vt_handoff_peer peer;
	struct peer_acct *acct;	/* what the peer holds, this connection included */
	GSource *timer;		/* deadlines and deferred close (ready time) */
	gint64 hello_deadline;
	gint64 last_rx;
	gint64 last_tx;
	int prep_fd;		/* a PREPARE's memfd (dup): guest RAM must keep arriving */
	uint64_t prep_blocks;	/* its st_blocks at the last check */
	gint64 prep_check;	/* next check: no growth since the last one closes */
	GByteArray *out;	/* queued output, from out_off */
	size_t out_off;
	GSource *out_src;	/* G_IO_OUT watch while output is queued */
	char backend_id[VTIER_HANDOFF_ID_LEN];
	char vm_name[VTIER_HANDOFF_ID_LEN];
	uint64_t size_bytes;	/* of the backend, from the HELLO */
	void *user;
	uint32_t seq;

	/* the message being received */
	struct vtier_handoff_hdr hdr;
	size_t hdr_got;
	uint8_t *payload;
	size_t payload_cap;
	size_t payload_got;
	int fds[CONN_MAX_FDS];
	unsigned int nfds;
	bool fds_lost;
	bool fds_starved;	/* fds sent, not installed: the agent is out of fds */
};

/* The agent's fd limit (RLIMIT_NOFILE soft), for reasons. */
static unsigned long long fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	return (unsigned long long)rl.rlim_cur;
}

static void peer_text(const struct vt_handoff_peer *p, char *buf, size_t len)
{
	char cg[200];

	if (p->cgroup)
		vt_text_printable(cg, sizeof(cg), p->cgroup, strlen(p->cgroup));
	snprintf(buf, len, "pid %d uid %u cgroup %s", (int)p->pid, (unsigned int)p->uid,
		 p->cgroup ? cg : "?");
}

static char *peer_key(const struct vt_handoff_peer *p)
{
	return g_strdup_printf("%d:%" PRIu64, (int)p->pid, p->start_time);
}

static char *group_key(const struct vt_handoff_peer *p)
{
	return g_strdup_printf("%u:%s", (unsigned int)p->uid, p->cgroup ? p->cgroup : "?");
}

/* The account of @p, created (with its group's) when @create. */
static struct peer_acct *acct_get(struct vt_handoff_server *srv, const struct vt_handoff_peer *p,
				  bool create)
{
	g_autofree char *key = peer_key(p);
	struct peer_acct *a = g_hash_table_lookup(srv->peers, key);
	g_autofree char *gkey = NULL;
	struct group_acct *g;

	if (a || !create)
		return a;
	gkey = group_key(p);
	g = g_hash_table_lookup(srv->groups, gkey);
	if (!g) {
		g = g_new0(struct group_acct, 1);
		g->key = g_steal_pointer(&gkey);
		g_hash_table_insert(srv->groups, g->key, g);
	}
	g->procs++;
	a = g_new0(struct peer_acct, 1);
	a->key = g_steal_pointer(&key);
	a->group = g;
	g_hash_table_insert(srv->peers, a->key, a);
	return a;
}

static void acct_put(struct vt_handoff_server *srv, struct peer_acct *a)
{
	struct group_acct *g = a->group;

	if (a->conns)
		return;
	g_hash_table_remove(srv->peers, a->key);
	g_free(a->key);
	g_free(a);
	if (--g->procs)
		return;
	g_hash_table_remove(srv->groups, g->key);
	g_free(g->key);
	g_free(g);
}

/* @c stops being pending (HELLO accepted, or closed before). */
static void conn_unpend(struct vt_handoff_conn *c)
{
	c->srv->n_pending--;
	if (c->acct) {
		c->acct->pending--;
		c->acct->group->pending--;
	}
}

/* Open /dev/null fds back into the reserve, as many as fit. */
static void spare_refill(struct vt_handoff_server *srv)
{
	while (srv->n_spare < SPARE_FDS) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			break;
		srv->spare[srv->n_spare++] = fd;
	}
}

static void spare_release(struct vt_handoff_server *srv)
{
	while (srv->n_spare)
		close(srv->spare[--srv->n_spare]);
}

static void conn_unref(struct vt_handoff_conn *c)
{
	if (--c->refs)
		return;
	for (unsigned int i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	if (c->prep_fd >= 0)
		close(c->prep_fd);
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

static void destroy_source(GSource **src)
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
	destroy_source(&c->src);
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

static void server_listen(struct vt_handoff_server *srv);

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
	spare_refill(srv);
	if (!srv->src && !srv->backoff)
		server_listen(srv);
}

void vt_handoff_conn_close(struct vt_handoff_conn *c, const char *why)
{
	struct vt_handoff_server *srv = c->srv;

	if (c->dead)
		return;
	c->dead = true;
	g_debug("handoff: backend '%s' (pid %d): closing: %s", c->backend_id, (int)c->peer.pid, why);
	srv->conns = g_list_remove(srv->conns, c);
	destroy_source(&c->src);
	destroy_source(&c->out_src);
	destroy_source(&c->timer);
	conn_free_payload(c);
	close(c->fd);
	c->fd = -1;
	if (!c->accepted) {
		conn_unpend(c);
		srv->stats.dropped++;
	}
	if (c->acct) {
		c->acct->conns--;
		acct_put(srv, c->acct);
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
			destroy_source(&c->out_src);
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
		destroy_source(&c->out_src);
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
	if (!size || size > VTIER_HANDOFF_PROFILE_MAX)
		return -EMSGSIZE;
	return conn_send(c, VTIER_HANDOFF_PROFILE, ++c->seq, &part, 1);
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

long vt_handoff_fds_free(void)
{
	unsigned long long limit = fd_limit();
	struct dirent *e;
	long open_fds = -1;	/* the directory's own */
	DIR *d;

	if (!limit)
		return LONG_MAX;
	d = opendir("/proc/self/fd");
	if (!d)
		return errno == EMFILE || errno == ENFILE ? 0 : -errno;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			open_fds++;
	closedir(d);
	return (long long)limit > open_fds ? (long)(limit - (unsigned long long)open_fds) : 0;
}

/*
 * A new hand-off (not a RECONNECT) while fewer than fd_reserve fds are free:
 * refused with the reason in @text, so that the fds stay for the stores that
 * exist. 0 when it may go on.
 */
static int fd_reserve_check(struct vt_handoff_conn *c, const struct vtier_handoff_hello *h,
			    char *text, size_t len)
{
	struct vt_handoff_server *srv = c->srv;
	long free_fds;

	if (!srv->fd_reserve || (h->flags & VTIER_HELLO_F_RECONNECT))
		return 0;
	free_fds = vt_handoff_fds_free();
	if (free_fds < 0 || free_fds >= (long)srv->fd_reserve)
		return 0;
	srv->stats.fd_reserve_refused++;
	return vt_err_set(-EMFILE, text, len, "agent has %ld fds free of %llu (RLIMIT_NOFILE), %u "
			  "kept for reconnects: new hand-off refused", free_fds, fd_limit(),
			  srv->fd_reserve);
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
	c->nfds = 0;
}

static void conn_hello(struct vt_handoff_conn *c, const struct vt_handoff_msg *msg)
{
	struct vt_handoff_server *srv = c->srv;
	char text[VTIER_HANDOFF_MESSAGE_LEN] = "";
	int memfd = c->fds[VTIER_HANDOFF_FD_MEMFD];
	int uffd = c->fds[VTIER_HANDOFF_FD_UFFD];
	int ret;

	conn_take_hello(c, msg->hello.fixed);
	if (c->prep_fd >= 0) {
		/* the HELLO proper: no PREPARE deadline from now on */
		close(c->prep_fd);
		c->prep_fd = -1;
	}
	ret = fd_reserve_check(c, msg->hello.fixed, text, sizeof(text));
	if (!ret)
		ret = vt_handoff_check_fds(msg->hello.fixed, &c->peer, memfd, uffd, text,
					   sizeof(text));
	if (ret) {
		close(memfd);
		close(uffd);
	} else {
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
	ret = fd_reserve_check(c, msg->hello.fixed, text, sizeof(text));
	if (!ret)
		ret = vt_handoff_check_fds(msg->hello.fixed, &c->peer, memfd, -1, text,
					   sizeof(text));
	if (!ret && srv->limits.prepare_idle_ms) {
		struct stat st;

		/* the server's own reference, to see guest RAM arrive */
		c->prep_fd = fcntl(memfd, F_DUPFD_CLOEXEC, 0);
		if (c->prep_fd < 0 || fstat(c->prep_fd, &st))
			ret = vt_err_set(-errno, text, sizeof(text), "the agent cannot keep the memfd: "
					 "%s (RLIMIT_NOFILE %llu)", g_strerror(errno), fd_limit());
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
			 "fds were not received; raise LimitNOFILE", fd_limit(),
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

		ret = srv->ops->policy ? srv->ops->policy(c, msg.policy, text, srv->opaque) : -ENOTSUP;
		if (ret > 0)
			ret = -EINVAL;
		if (conn_reply(c, VTIER_HANDOFF_POLICY_REPLY, msg.hdr.seq, ret,
			       ret ? (text[0] ? text : g_strerror(-ret)) : "applied"))
			conn_close_later(c, "cannot send POLICY_REPLY", false);
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

static gboolean server_resume(gpointer data)
{
	struct vt_handoff_server *srv = data;

	g_source_unref(srv->backoff);
	srv->backoff = NULL;
	if (!srv->reserve_conn)
		server_listen(srv);
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
		 g_strerror(err), fd_limit(), SPARE_FDS);
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
	destroy_source(&srv->src);
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

/*
 * max_pending is full and peer @p wants in: the oldest pending connection
 * (no HELLO yet, or PREPARE-held) of the peer holding the most, if @p holds
 * fewer than it by two or more (so that no two peers trade places). Peers
 * are compared by uid + cgroup first (one VM's scope under libvirt), then by
 * process within @p's own group. NULL: @p holds its share already.
 */
static struct vt_handoff_conn *displace_pick(struct vt_handoff_server *srv,
					     const struct vt_handoff_peer *p,
					     unsigned int *held)
{
	g_autofree char *gkey = group_key(p);
	struct peer_acct *own = acct_get(srv, p, false), *pmax = NULL;
	struct group_acct *own_group = g_hash_table_lookup(srv->groups, gkey), *gmax = NULL;
	unsigned int own_pending = own ? own->pending : 0;
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, srv->groups);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct group_acct *g = v;

		if (!gmax || g->pending > gmax->pending || (g == own_group && g->pending == gmax->pending))
			gmax = g;
	}
	if (!gmax)
		return NULL;
	if (gmax != own_group && (own_group ? own_group->pending : 0) + 1 >= gmax->pending)
		return NULL;
	g_hash_table_iter_init(&it, srv->peers);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct peer_acct *a = v;

		if (a->group == gmax && (!pmax || a->pending > pmax->pending))
			pmax = a;
	}
	if (!pmax || (gmax == own_group && (pmax == own || own_pending + 1 >= pmax->pending)))
		return NULL;
	*held = pmax->pending;
	for (GList *l = g_list_last(srv->conns); l; l = l->prev) {
		struct vt_handoff_conn *c = l->data;

		if (c->acct == pmax && !c->accepted && !c->hello_pending && !c->dead && !c->closing &&
		    !c->on_reserve)
			return c;
	}
	return NULL;
}

/*
 * May peer @p have one more connection? 0, or a counter of the server's
 * stats to charge the refusal to with @why naming the bound. A peer below
 * its share of a full max_pending gets in by displacing another's.
 */
static unsigned int *server_admit(struct vt_handoff_server *srv, const struct vt_handoff_peer *p,
				  bool on_reserve, char *why, size_t why_len)
{
	const struct vt_handoff_limits *l = &srv->limits;
	struct peer_acct *a = acct_get(srv, p, false);
	char who[PEER_TEXT_LEN];
	struct vt_handoff_conn *victim;
	unsigned int held = 0;

	peer_text(p, who, sizeof(who));
	if (on_reserve && p->pid == srv->reserve_waster && p->start_time == srv->reserve_waster_start) {
		snprintf(why, why_len, "%s: its last connection on the agent's fd reserve sent no HELLO "
			 "within %u ms (reserve_hello_ms): refused while the agent is out of fds "
			 "(RLIMIT_NOFILE %llu)", who, l->reserve_hello_ms, fd_limit());
		return &srv->stats.reserve_refused;
	}
	if (a && a->conns >= l->max_peer_conns) {
		snprintf(why, why_len, "%s: %u connections open already (max_peer_conns %u): new one "
			 "refused", who, a->conns, l->max_peer_conns);
		return &srv->stats.refused_peer_conns;
	}
	if (a && a->pending >= l->max_peer_pending) {
		snprintf(why, why_len, "%s: %u connections without an accepted HELLO already "
			 "(max_peer_pending %u): new one refused", who, a->pending, l->max_peer_pending);
		return &srv->stats.refused_peer_pending;
	}
	if (srv->n_pending < l->max_pending)
		return NULL;
	victim = displace_pick(srv, p, &held);
	if (!victim) {
		snprintf(why, why_len, "%u connections without an accepted HELLO (max_pending %u) and "
			 "%s holds its share of them (%u): new one refused", srv->n_pending,
			 l->max_pending, who, a ? a->pending : 0);
		return &srv->stats.refused_full;
	}
	{
		char vwho[PEER_TEXT_LEN], vwhy[2 * PEER_TEXT_LEN + 160];

		peer_text(&victim->peer, vwho, sizeof(vwho));
		snprintf(vwhy, sizeof(vwhy), "displaced: %u connections without an accepted HELLO "
			 "(max_pending %u), %s holds the most (%u): its oldest closed for %s",
			 srv->n_pending, l->max_pending, vwho, held, who);
		srv->stats.displaced++;
		vt_handoff_conn_close(victim, vwhy);
	}
	return NULL;
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
		spare_refill(srv);
	cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0) {
		int err = errno;

		g_debug("handoff: accept: %s", g_strerror(err));
		if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM)
			return G_SOURCE_CONTINUE;
		server_report_starved(srv, err);
		/* the reserve: room for one connection, its HELLO and the reply */
		if ((err == EMFILE || err == ENFILE) && srv->n_spare && !srv->reserve_conn) {
			spare_release(srv);
			cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (cfd < 0)
				spare_refill(srv);
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
			spare_refill(srv);
		return G_SOURCE_CONTINUE;
	}
	refused = server_admit(srv, &peer, on_reserve, why, sizeof(why));
	if (refused) {
		vt_handoff_peer_clear(&peer);
		server_refuse(srv, cfd, refused, why);
		if (on_reserve)
			spare_refill(srv);
		return G_SOURCE_CONTINUE;
	}
	c = g_new0(struct vt_handoff_conn, 1);
	c->srv = srv;
	c->refs = 1;
	c->fd = cfd;
	c->prep_fd = -1;
	c->out = g_byte_array_new();
	c->peer = peer;
	c->acct = acct_get(srv, &c->peer, true);
	c->acct->conns++;
	c->acct->pending++;
	c->acct->group->pending++;
	srv->n_pending++;
	srv->conns = g_list_prepend(srv->conns, c);
	c->hello_deadline = g_get_monotonic_time() +
			    (on_reserve ? MIN(srv->limits.hello_timeout_ms, srv->limits.reserve_hello_ms) :
					  srv->limits.hello_timeout_ms) * 1000LL;
	c->timer = g_source_new(&timer_funcs, sizeof(GSource));
	g_source_set_callback(c->timer, conn_timer_cb, c, NULL);
	g_source_attach(c->timer, srv->ctx);
	c->src = g_unix_fd_source_new(cfd, G_IO_IN | G_IO_HUP | G_IO_ERR);
	g_source_set_callback(c->src, G_SOURCE_FUNC(conn_ready), c, NULL);
	g_source_attach(c->src, srv->ctx);
	conn_arm_timer(c);
	g_debug("handoff: connection on %s from pid %d%s", srv->path, (int)c->peer.pid,
		on_reserve ? " (on the fd reserve)" : "");
	if (on_reserve) {
		/* no other connection until this one is answered: accept() resumes then */
		c->on_reserve = true;
		srv->reserve_conn = c;
		srv->stats.accept_pauses++;
		destroy_source(&srv->src);
		return G_SOURCE_REMOVE;
	}
	return G_SOURCE_CONTINUE;
}

static void server_listen(struct vt_handoff_server *srv)
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
	spare_refill(srv);
	server_listen(srv);
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
	destroy_source(&srv->src);
	destroy_source(&srv->backoff);
	spare_release(srv);
	g_hash_table_destroy(srv->peers);	/* empty: every connection closed */
	g_hash_table_destroy(srv->groups);
	close(srv->fd);
	unlink(srv->path);
	if (srv->ctx)
		g_main_context_unref(srv->ctx);
	g_free(srv->path);
	g_free(srv);
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
