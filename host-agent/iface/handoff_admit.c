// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The hand-off server's admission: what each peer (process, and uid +
 * cgroup) holds, the fd reserve for accept() at the fd limit, and the
 * choice of a connection to displace when max_pending is full.
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

/* The agent's fd limit (RLIMIT_NOFILE soft), for reasons. */
unsigned long long vt_hs_fd_limit(void)
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
struct peer_acct *vt_hs_acct_get(struct vt_handoff_server *srv, const struct vt_handoff_peer *p,
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

void vt_hs_acct_put(struct vt_handoff_server *srv, struct peer_acct *a)
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

/* Open /dev/null fds back into the reserve, as many as fit. */
void vt_hs_spare_refill(struct vt_handoff_server *srv)
{
	while (srv->n_spare < SPARE_FDS) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			break;
		srv->spare[srv->n_spare++] = fd;
	}
}

void vt_hs_spare_release(struct vt_handoff_server *srv)
{
	while (srv->n_spare)
		close(srv->spare[--srv->n_spare]);
}

long vt_handoff_fds_free(void)
{
	unsigned long long limit = vt_hs_fd_limit();
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
int vt_hs_fd_reserve_check(struct vt_handoff_conn *c, const struct vtier_handoff_hello *h,
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
			  "kept for reconnects: new hand-off refused", free_fds, vt_hs_fd_limit(),
			  srv->fd_reserve);
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
	struct peer_acct *own = vt_hs_acct_get(srv, p, false), *pmax = NULL;
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
unsigned int *vt_hs_admit(struct vt_handoff_server *srv, const struct vt_handoff_peer *p,
				  bool on_reserve, char *why, size_t why_len)
{
	const struct vt_handoff_limits *l = &srv->limits;
	struct peer_acct *a = vt_hs_acct_get(srv, p, false);
	char who[PEER_TEXT_LEN];
	struct vt_handoff_conn *victim;
	unsigned int held = 0;

	peer_text(p, who, sizeof(who));
	if (on_reserve && p->pid == srv->reserve_waster && p->start_time == srv->reserve_waster_start) {
		snprintf(why, why_len, "%s: its last connection on the agent's fd reserve sent no HELLO "
			 "within %u ms (reserve_hello_ms): refused while the agent is out of fds "
			 "(RLIMIT_NOFILE %llu)", who, l->reserve_hello_ms, vt_hs_fd_limit());
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

