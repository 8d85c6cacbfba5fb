// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A destination's preparation during precopy (docs/abi-handoff.md, PREPARE):
 * QEMU hands the memfd and the source's profile over while the incoming
 * migration brings guest RAM in; the chunks the profile puts on a compressed
 * tier are compressed as they arrive (movers/ctier_prepared.h). The copies
 * are the connection's until its HELLO proper, whose backend they must be
 * (id, size, offset, and the same memfd, as fstat says); the mover takes
 * them then and stores a page from its copy when it still matches.
 *
 * Nothing here is trusted beyond being a hint: the profile is checked as at
 * the HELLO, a PREPARE that does not fit is ignored (logged), and a copy is
 * used only when it decompresses to the page byte for byte.
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "ctier_prepared.h"
#include "migration_profile.h"

/* A pass over the plan that found nothing new waits this long. */
#define PREPARE_IDLE_MS 100

/*
 * The copies of one connection, until its HELLO proper: charged to its peer
 * (one PREPARE, its fds and thread; the copies' memory to the peer's and the
 * host's quotas), one set per memfd (d->preparing holds its "dev:ino").
 */
struct prep {
	struct vt_handoffs *d;
	struct vt_budget_ticket ticket;
	char file[48];			/* "dev:ino", in d->preparing */
	struct vt_prepared *p;
	char id[VTIER_HANDOFF_ID_LEN];
	uint64_t size, fd_offset;
	dev_t dev;
	ino_t ino;
};

/* The profile and how to read it, for the copying thread. */
struct prep_plan {
	uint8_t *buf;
	size_t len;
	uint64_t size;
	unsigned int nr_numa;
	struct vt_profile_tier ours[VTIER_PROFILE_TIERS_MAX];
	unsigned int n_ours;
	char who[VTIER_HANDOFF_ID_LEN + 16];
	struct vt_handoffs *d;		/* its log (rate-limited: the profile is the peer's) */
};

static void prep_plan_free(gpointer data)
{
	struct prep_plan *pl = data;

	g_free(pl->buf);
	g_free(pl);
}

/*
 * On the copying thread: the profile's chunks that map to a compressed tier
 * here (as the destination's placement maps them, migration/migration.c) and did
 * not refuse compression there.
 */
static void plan_profile(struct vt_prepared *p, void *arg)
{
	struct prep_plan *pl = arg;
	int map[VTIER_PROFILE_TIERS_MAX];
	struct vt_profile prof;
	char why[VT_PROFILE_ERR_LEN] = "";

	if (vt_profile_read(pl->buf, pl->len, pl->size, &prof, why, sizeof(why))) {
		vt_registry_log(pl->d->reg, G_LOG_LEVEL_MESSAGE, NULL, "prepare of %s: the source's "
			      "profile refused: %s", pl->who, why);
		return;
	}
	vt_migration_profile_map_tiers(&prof, pl->ours, pl->n_ours, map);
	for (uint32_t i = 0; i < prof.n_chunks; i++) {
		uint64_t off = (uint64_t)i << prof.chunk_shift;
		struct vt_profile_chunk c;

		vt_profile_chunk(&prof, i, &c);
		if (c.tier < 0 || map[c.tier] < (int)pl->nr_numa ||
		    c.size_class == VTIER_PROFILE_SIZE_INCOMPRESSIBLE || off >= pl->size)
			continue;
		vt_prepared_plan(p, off, MIN(1ull << prof.chunk_shift, pl->size - off),
				 (unsigned int)(map[c.tier] - (int)pl->nr_numa));
	}
}

static gpointer prepared_free_thread(gpointer data)
{
	vt_prepared_free(data);
	return NULL;
}

/* On the main loop: its thread may be in a compression, so it is joined elsewhere. */
static void prep_free(struct prep *pr)
{
	GThread *t;

	if (!pr)
		return;
	vt_budget_give(pr->d->budget, &pr->ticket, false);
	if (pr->file[0])
		g_hash_table_remove(pr->d->preparing, pr->file);
	if (pr->p) {
		vt_prepared_request_stop(pr->p);
		t = g_thread_try_new("vtier-prep-free", prepared_free_thread, pr->p, NULL);
		if (t)
			g_thread_unref(t);
		else
			vt_prepared_free(pr->p);
	}
	g_free(pr);
}

/* The daemon's tiers as a profile names them (as the VM's would be: NUMA, then compressed). */
static unsigned int daemon_profile_tiers(struct vt_handoffs *d, struct vt_profile_tier *out)
{
	unsigned int n = 0;

	for (unsigned int t = 0; t < d->host->tiers.nr && n < VTIER_PROFILE_TIERS_MAX; t++, n++)
		out[n] = vt_profile_tier_named(n, VTIER_PROFILE_TIER_NUMA, d->host->tiers.tier[t].name);
	for (unsigned int t = 0; t < d->host->nr_ctier && n < VTIER_PROFILE_TIERS_MAX; t++, n++)
		out[n] = vt_profile_tier_named(n, VTIER_PROFILE_TIER_COMPRESSED, d->host->ctier[t].name);
	return n;
}

bool vt_backend_prepare(struct vt_handoffs *d, struct vt_handoff_conn *conn,
			const struct vt_handoff_hello *hello, int memfd)
{
	const struct vtier_handoff_hello *h = hello->fixed;
	pid_t peer = vt_handoff_conn_peer_pid(conn);
	char file[48], why[VTIER_HANDOFF_MESSAGE_LEN] = "";
	const char *skip = NULL;
	struct vt_budget_ticket ticket = { 0 };
	struct vt_prepared_quota *q;
	struct vt_charge charge;
	struct vt_peer_id who;
	struct prep_plan *pl;
	struct prep *pr;
	struct stat st;
	int ret;

	if (!h->profile_size)
		skip = "no profile";
	else if (d->host->ignore_profiles)
		skip = "profiles ignored (--ignore-migration-profiles)";
	else if (!d->host->nr_ctier)
		skip = "no compressed tiers";
	else if (h->page_size != 4096)
		skip = "not 4 KiB pages";
	else if (fstat(memfd, &st))
		skip = "fstat of the memfd failed";
	if (!skip && !((h->flags & VTIER_HELLO_F_EARLY) && !d->host->precopy_copy_only)) {
		g_snprintf(file, sizeof(file), "%" G_GUINT64_FORMAT ":%" G_GUINT64_FORMAT,
			   (guint64)st.st_dev, (guint64)st.st_ino);
		vt_peer_id_fill(&who, peer, vt_handoff_conn_peer_start_time(conn),
				vt_handoff_conn_peer_uid(conn), vt_handoff_conn_peer_cgroup(conn));
		vt_budget_prepare_charge(&charge);
		/* the same memfd on several connections: one set of copies */
		if (g_hash_table_contains(d->preparing, file))
			skip = "this memfd is being prepared on another connection already";
		else if (vt_budget_take(d->budget, &who, NULL, false, &charge, &ticket, why,
					sizeof(why)))
			skip = why;
	}
	if (skip) {
		vt_registry_log(d->reg, G_LOG_LEVEL_MESSAGE, NULL, "migration: PREPARE of '%s' from pid "
			      "%d: nothing to prepare (%s)", h->backend_id, (int)peer, skip);
		close(memfd);
		return false;
	}
	if ((h->flags & VTIER_HELLO_F_EARLY) && !d->host->precopy_copy_only) {
		vt_registry_log(d->reg, G_LOG_LEVEL_MESSAGE, NULL, "migration: PREPARE of '%s' from pid "
			      "%d: early hand-off asked for (the cold chunks are placed as they "
			      "arrive)", h->backend_id, (int)vt_handoff_conn_peer_pid(conn));
		close(memfd);
		return true;
	}
	pr = g_new0(struct prep, 1);
	pr->d = d;
	pr->ticket = ticket;	/* given back by prep_free() */
	g_strlcpy(pr->id, h->backend_id, sizeof(pr->id));
	pr->size = h->size_bytes;
	pr->fd_offset = h->fd_offset;
	pr->dev = st.st_dev;
	pr->ino = st.st_ino;
	pr->p = vt_prepared_new(memfd, h->fd_offset, h->size_bytes, d->host->ctier, d->host->nr_ctier);
	if (!pr->p) {
		prep_free(pr);
		return false;
	}
	q = vt_budget_peer_quota(d->budget, &who);
	vt_prepared_add_quota(pr->p, q);
	vt_prepared_quota_unref(q);
	q = vt_budget_host_quota(d->budget);
	vt_prepared_add_quota(pr->p, q);
	vt_prepared_quota_unref(q);
	pl = g_new0(struct prep_plan, 1);
	pl->buf = g_memdup2(hello->profile, h->profile_size);
	pl->len = h->profile_size;
	pl->size = h->size_bytes;
	pl->d = d;
	pl->nr_numa = d->host->tiers.nr;
	pl->n_ours = daemon_profile_tiers(d, pl->ours);
	g_snprintf(pl->who, sizeof(pl->who), "'%s'", h->backend_id);
	ret = vt_prepared_start(pr->p, PREPARE_IDLE_MS, plan_profile, pl, prep_plan_free);
	if (ret) {
		vt_registry_log(d->reg, G_LOG_LEVEL_WARNING, NULL, "migration: PREPARE of '%s': %s",
			      h->backend_id, g_strerror(-ret));
		prep_free(pr);
		return false;
	}
	prep_free(vt_handoff_conn_get_user(conn));	/* none: a connection prepares once */
	g_strlcpy(pr->file, file, sizeof(pr->file));
	g_hash_table_add(d->preparing, g_strdup(file));
	vt_handoff_conn_set_user(conn, pr);
	vt_registry_log(d->reg, G_LOG_LEVEL_MESSAGE, NULL, "migration: PREPARE of '%s' from pid %d: "
		      "copying the cold chunks of the source's profile as they arrive",
		      h->backend_id, (int)vt_handoff_conn_peer_pid(conn));
	return false;
}

struct vt_prepared *vt_backend_prepared_take(struct vt_handoff_conn *conn,
					     const struct vtier_handoff_hello *h, int memfd)
{
	struct prep *pr = vt_handoff_conn_get_user(conn);
	struct vt_prepared *p = NULL;
	struct stat st;

	if (!pr)
		return NULL;
	vt_handoff_conn_set_user(conn, NULL);
	if (!strcmp(pr->id, h->backend_id) && pr->size == h->size_bytes &&
	    pr->fd_offset == h->fd_offset && !fstat(memfd, &st) && st.st_dev == pr->dev &&
	    st.st_ino == pr->ino) {
		p = pr->p;
		pr->p = NULL;
		vt_prepared_request_stop(p);
	}
	prep_free(pr);
	return p;
}

void vt_backend_prepared_drop(struct vt_handoff_conn *conn)
{
	prep_free(vt_handoff_conn_get_user(conn));
	vt_handoff_conn_set_user(conn, NULL);
}
