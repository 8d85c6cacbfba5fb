// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Hand-offs: identity checks, the backend's page store (found again only
 * by the same identity), its mover thread, and the VM it belongs to.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_member.h"
#include "backend.h"
#include "tier_model.h"
#include "ctier_prepared.h"
#include "handoff_peer.h"
#include "job.h"
#include "migration_profile.h"
#include "vm.h"

/* A PREPARE's copies not used by a bulk placement within this go (ctier_mover.h). */
#define PREPARED_EXPIRE_MS 30000

/* Start time of @pid in clock ticks after boot, 0 if it is gone (handoff_peer.h). */
static uint64_t proc_start(pid_t pid)
{
	uint64_t t = 0;

	return pid > 0 && vt_proc_start_time(pid, &t) == 0 ? t : 0;
}

static bool uuid_set(const uint8_t *u)
{
	for (int i = 0; i < 16; i++)
		if (u[i])
			return true;
	return false;
}

/* The store key: the VM uuid (or, without one, the QEMU process) + backend id. */
static void backend_key(struct vt_backend *b)
{
	char u[40];

	if (uuid_set(b->uuid)) {
		for (int i = 0; i < 16; i++)
			g_snprintf(u + 2 * i, 3, "%02x", b->uuid[i]);
	} else {
		g_snprintf(u, sizeof(u), "pid%d-%" G_GUINT64_FORMAT, (int)b->pid, b->start_time);
	}
	g_snprintf(b->key, sizeof(b->key), "%s/%s", u, b->id);
	g_snprintf(b->store_dir, sizeof(b->store_dir), "%s/%s-%s", b->d->host->store_root, u, b->id);
}

/* Stop serving and close the store; the backend stays until its last reference. */
static void backend_shut(struct vt_backend *b)
{
	g_mutex_lock(&b->lock);
	vt_ctier_mover_stop(b->mover);
	b->mover = NULL;
	vt_store_close(b->store);
	b->store = NULL;
	g_mutex_unlock(&b->lock);
}

void vt_backend_unref(struct vt_backend *b)
{
	if (!b || !g_atomic_int_dec_and_test(&b->refs))
		return;
	backend_shut(b);
	/* after the mover that wrote them stopped */
	if (b->zero_map)
		munmap(b->zero_map, b->zero_map_bytes);
	if (b->send_map)
		munmap(b->send_map, b->send_map_bytes);
	if (b->ranges)
		g_array_free(b->ranges, TRUE);
	g_free(b->profile_buf);
	g_mutex_clear(&b->lock);
	g_free(b);
}

struct vt_backend *vt_backend_ref(struct vt_backend *b)
{
	g_atomic_int_inc(&b->refs);
	return b;
}

static gboolean mover_failed_idle(gpointer data)
{
	struct vt_backend *b = data;
	int err = g_atomic_int_get(&b->failed_err);
	g_autofree char *why = g_strdup_printf("fault service stopped: %s", g_strerror(-err));

	if (b->conn)
		vt_handoff_conn_close(b->conn, why);
	return G_SOURCE_REMOVE;
}

/* From the mover thread: hand the news to the main loop. */
static void mover_failed(struct vt_ctier_mover *m, int err, void *opaque)
{
	struct vt_backend *b = opaque;

	(void)m;
	g_atomic_int_set(&b->failed_err, err);
	g_main_context_invoke_full(NULL, G_PRIORITY_DEFAULT, mover_failed_idle, vt_backend_ref(b),
				   (GDestroyNotify)vt_backend_unref);
}

/* Drop store entries whose page is in the memfd again (a kill between the copy and the drop). */
static void reconcile(struct vt_backend *b, struct vt_pager *p)
{
	for (uint64_t page = vt_store_next(b->store, 0); page != UINT64_MAX;
	     page = vt_store_next(b->store, page + 1)) {
		b->stored_at_hello++;
		if (vt_pager_present(p, page * b->page_size) == 1) {
			vt_store_drop(b->store, page);
			b->reconciled++;
			b->stored_at_hello--;
		}
	}
}

/* Is the store's owner a live process other than @b's? */
static bool owner_alive_elsewhere(const struct vt_store_owner *o, const struct vt_backend *b)
{
	if (o->qemu_pid == (uint32_t)b->pid && o->qemu_start_time == b->start_time)
		return false;
	return o->qemu_pid && proc_start((pid_t)o->qemu_pid) == o->qemu_start_time;
}

static int open_store(struct vt_backend *b, char *msg)
{
	struct vt_handoffs *d = b->d;
	struct vt_store_key key = { .size_bytes = b->size, .page_size = b->page_size };
	struct vt_store_owner owner = { 0 };
	bool reconnect = b->flags & VTIER_HELLO_F_RECONNECT;
	char why[200] = "";
	int ret;

	memcpy(key.vm_uuid, b->uuid, 16);
	g_strlcpy(key.backend_id, b->id, sizeof(key.backend_id));
	if (g_mkdir_with_parents(d->host->store_root, 0700)) {
		ret = -errno;
		g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN, "store root %s: %s", d->host->store_root,
			   g_strerror(errno));
		return ret;
	}
	ret = vt_store_open(b->store_dir, &key, d->host->ctier, d->host->nr_ctier, false, &b->store, why,
			    sizeof(why));
	if (ret == 0) {
		vt_store_get_owner(b->store, &owner);
		if (owner_alive_elsewhere(&owner, b)) {
			g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN,
				   "backend '%s' belongs to live QEMU pid %u: refused", b->id,
				   owner.qemu_pid);
			vt_store_close(b->store);
			b->store = NULL;
			return -EBUSY;
		}
		if (reconnect && owner.qemu_pid != (uint32_t)b->pid) {
			g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN,
				   "RECONNECT of '%s' by pid %d: its store belongs to pid %u",
				   b->id, (int)b->pid, owner.qemu_pid);
			vt_store_close(b->store);
			b->store = NULL;
			return -EPERM;
		}
		/*
		 * The same process: its pages, whatever the flags say. INCOMING
		 * included: a QEMU that arrived by migration says so on every
		 * reconnect, and its store holds what this agent evicted since.
		 */
		if (owner.qemu_pid == (uint32_t)b->pid && owner.qemu_start_time == b->start_time)
			goto own;
		/* the old owner is gone: its VM is over, start afresh */
		vt_store_close(b->store);
		b->store = NULL;
	} else if (reconnect) {
		/* an agent without the store must not serve zeros for evicted pages */
		g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN, "refusing rather than serving zeros: "
			   "RECONNECT of '%s' but %s (%s)", b->id,
			   ret == -ENOENT ? "no store" : "store unusable", why);
		return ret == -ENOENT ? -ENOENT : -EUCLEAN;
	}
	ret = vt_store_open(b->store_dir, &key, d->host->ctier, d->host->nr_ctier, true, &b->store, why,
			    sizeof(why));
	if (ret) {
		g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN, "cannot create store: %s", why);
		return ret;
	}
own:
	owner = (struct vt_store_owner){
		.qemu_pid = (uint32_t)b->pid,
		.qemu_start_time = b->start_time,
		.generation = b->generation,
	};
	ret = vt_store_set_owner(b->store, &owner);
	if (ret)
		return ret;
	/* remote tiers: their client, with the pages the store names there */
	for (unsigned int i = 0; i < d->host->nr_ctier; i++) {
		if (d->host->ctier[i].medium != VT_MEDIUM_REMOTE)
			continue;
		ret = vt_store_remote_attach(b->store, i, &d->host->remote[i].rc,
					     d->host->remote[i].local_copy[0] ?
					     &d->host->remote[i].local : NULL, why, sizeof(why));
		if (ret) {
			/* its pages wait (never zeros); the other tiers work */
			g_warning("backend '%s': remote tier %s unusable: %s", b->id,
				  d->host->ctier[i].name, why);
		}
	}
	return 0;
}

/*
 * A store whose hand-off ended while its QEMU still ran: kept for the
 * reconnect, removed once that QEMU is gone (a process closes its sockets
 * before it is gone, so the check repeats for a while).
 */
struct orphan {
	char key[128];
	char dir[512];
	pid_t pid;
	uint64_t start_time;
};

static gboolean orphan_sweep(gpointer data)
{
	struct vt_handoffs *d = data;

	for (unsigned int i = 0; i < d->orphans->len;) {
		struct orphan *o = g_ptr_array_index(d->orphans, i);

		if (g_hash_table_contains(d->backends, o->key)) {
			g_ptr_array_remove_index_fast(d->orphans, i);	/* adopted again */
		} else if (g_hash_table_contains(d->opening, o->key)) {
			i++;	/* a HELLO is opening it: decided when that is done */
		} else if (proc_start(o->pid) != o->start_time) {
			vt_registry_log(d->reg, G_LOG_LEVEL_MESSAGE, NULL, "QEMU pid %d exited: store %s "
				      "removed", (int)o->pid, o->dir);
			vt_store_remove(d, o->dir);
			vt_budget_unreserve(d->budget, o->key, o->pid, o->start_time);
			g_ptr_array_remove_index_fast(d->orphans, i);
		} else {
			i++;
		}
	}
	if (d->orphans->len)
		return G_SOURCE_CONTINUE;
	d->orphan_timer = 0;
	return G_SOURCE_REMOVE;
}

static void orphan_add(struct vt_handoffs *d, const struct vt_backend *b)
{
	struct orphan *o = g_new0(struct orphan, 1);

	/* what its reconnect will need, out of every other peer's reach */
	vt_budget_reserve(d->budget, b->key, b->pid, b->start_time, &b->ticket.c, 0);

	g_strlcpy(o->key, b->key, sizeof(o->key));
	g_strlcpy(o->dir, b->store_dir, sizeof(o->dir));
	o->pid = b->pid;
	o->start_time = b->start_time;
	g_ptr_array_add(d->orphans, o);
	if (!d->orphan_timer)
		d->orphan_timer = g_timeout_add(250, orphan_sweep, d);
}

/*
 * A HELLO whose store is being opened: open_store() and reconcile() do
 * file I/O under the store dir and walk the memfd (seconds for a big VM),
 * so they run on a job thread (job.h) while the main loop goes on; the
 * HELLO is answered when they are done (vt_handoff_conn_hello_done). The
 * opening holds d->opening[b->key] meanwhile: a second HELLO of the same
 * backend is refused as if it were live, and the orphan sweep leaves the
 * store alone.
 */
struct opening {
	struct vt_backend *b;		/* the job's alone while it runs */
	struct vt_handoff_conn *conn;	/* valid until vt_handoff_conn_hello_done() */
	struct vt_prepared *prepared;	/* the PREPARE's copies, stopped by the job */
	struct vt_pager pager;
	struct vt_job *job;
	int ret;
	char msg[VTIER_HANDOFF_MESSAGE_LEN];
};

/*
 * An incoming migration's profile (migration_profile.h), checked by the store
 * job: kept as the VM's hint, or dropped with its reason in profile_why.
 */
static void check_profile(struct vt_backend *b)
{
	int ret;

	if (!b->profile_buf)
		return;
	ret = vt_profile_read(b->profile_buf, b->profile_len, b->size, &b->profile, b->profile_why,
			      sizeof(b->profile_why));
	if (!ret)
		return;
	if (!b->profile_why[0])
		g_strlcpy(b->profile_why, "unreadable", sizeof(b->profile_why));
	g_clear_pointer(&b->profile_buf, g_free);
	b->profile_len = 0;
}

/* On the job's thread. */
static void opening_run(void *arg)
{
	struct opening *o = arg;
	struct vt_backend *b = o->b;

	vt_prepared_stop(o->prepared);	/* at most one page's compression */
	if (b->d->host->store_open_delay_ms)
		g_usleep(b->d->host->store_open_delay_ms * 1000ULL);
	o->ret = open_store(b, o->msg);
	if (!o->ret)
		reconcile(b, &o->pager);
	if (!o->ret)
		check_profile(b);	/* an incoming migration's: a hint, checked */
}

static void refused(struct vt_handoffs *d, struct vt_backend *b, struct vt_handoff_conn *conn,
		    const char *msg)
{
	struct vt_peer_id who;

	vt_peer_id_fill(&who, vt_handoff_conn_peer_pid(conn), 0, vt_handoff_conn_peer_uid(conn),
			vt_handoff_conn_peer_cgroup(conn));
	vt_registry_log(d->reg, G_LOG_LEVEL_WARNING, NULL, "hand-off of '%s' from pid %d (uid %u%s%s) "
		      "refused: %s", b->id, (int)who.pid, (unsigned int)who.uid,
		      who.cgroup[0] ? ", cgroup " : "", who.cgroup, msg);
}

/* The main loop's part after the store is open: serve, or refuse with o->msg. */
static void opening_done(void *arg)
{
	struct opening *o = arg;
	struct vt_backend *b = o->b;
	struct vt_handoffs *d = b->d;
	pid_t peer = vt_handoff_conn_peer_pid(o->conn);
	g_autoptr(GError) e = NULL;
	bool gone;
	int ret = o->ret;

	g_hash_table_remove(d->opening, b->key);
	if (!ret && vt_handoff_conn_closed(o->conn)) {
		/* QEMU went while we opened: keep the store as a closed hand-off would */
		gone = proc_start(b->pid) != b->start_time;
		vt_registry_log(d->reg, G_LOG_LEVEL_MESSAGE, NULL, "hand-off of '%s' from pid %d ended "
			      "before its store was open%s", b->id, (int)peer,
			      gone ? " (QEMU exited: store removed)" : " (store kept for its reconnect)");
		backend_shut(b);
		vt_budget_give(d->budget, &b->ticket, false);
		if (gone)
			vt_store_remove(d, b->store_dir);
		else
			orphan_add(d, b);
		vt_handoff_conn_hello_done(o->conn, -ECONNRESET, NULL);
		goto out;
	}
	if (ret)
		goto refuse;
	ret = vt_ctier_mover_start(&o->pager, b->store, d->host->tiers.nr ? d->host->tiers.tier[0].nodes[0] : -1,
				   mover_failed, b, &b->mover);
	o->pager = (struct vt_pager){ .memfd = -1, .uffd = -1 };	/* the mover's, even on failure */
	if (ret) {
		g_snprintf(o->msg, sizeof(o->msg), "fault thread: %s", g_strerror(-ret));
		goto refuse;
	}
	if (d->host->placement_threads)
		vt_ctier_mover_set_store_threads(b->mover, d->host->placement_threads);
	if (b->zero_map)
		vt_ctier_mover_set_zero_map(b->mover, b->zero_map);
	if (b->precopy)
		vt_ctier_mover_set_background(b->mover, true);
	if (o->prepared) {
		struct vt_prepared_stats ps;

		vt_prepared_get_stats(o->prepared, &ps);
		vt_registry_log(d->reg, G_LOG_LEVEL_MESSAGE, NULL, "migration: '%s' prepared during "
			      "precopy: %" G_GUINT64_FORMAT " copies (%" G_GUINT64_FORMAT " KiB) of "
			      "%" G_GUINT64_FORMAT " planned chunks in %" G_GUINT64_FORMAT " ms, %"
			      G_GUINT64_FORMAT " pages zero, %" G_GUINT64_FORMAT " refused", b->id,
			      ps.pages, ps.bytes >> 10, ps.chunks, ps.ns / 1000000, ps.zero,
			      ps.refused);
		vt_ctier_mover_set_prepared(b->mover, o->prepared, PREPARED_EXPIRE_MS);
		o->prepared = NULL;
	}
	b->conn = o->conn;
	if (!d->reg->ops->adopt_backend(d->reg->opaque, b, &e)) {
		g_snprintf(o->msg, sizeof(o->msg), "%s", e->message);
		b->conn = NULL;
		ret = -EINVAL;
		goto refuse;
	}
	g_hash_table_insert(d->backends, b->key, b);
	/* its store is live: a reservation left for it (a store found at start) is done */
	vt_budget_unreserve(d->budget, b->key, b->pid, b->start_time);
	vt_handoff_conn_set_user(o->conn, b);
	vt_registry_log(d->reg, G_LOG_LEVEL_MESSAGE, b->vm ? b->vm->name : NULL,
		      "hand-off of '%s' accepted: QEMU pid %d, %" G_GUINT64_FORMAT " MiB, "
		      "generation %" G_GUINT64_FORMAT "%s%s, store %s (%" G_GUINT64_FORMAT
		      " pages stored, %" G_GUINT64_FORMAT " stale entries dropped)", b->id,
		      (int)b->pid, b->size >> 20, b->generation,
		      (b->flags & VTIER_HELLO_F_RECONNECT) ? " (reconnect)" : "",
		      (b->flags & VTIER_HELLO_F_PRECOPY) ? " during the precopy" : "", b->store_dir,
		      b->stored_at_hello, b->reconciled);
	if (b->profile_why[0])
		vt_registry_log(d->reg, G_LOG_LEVEL_WARNING, b->vm ? b->vm->name : NULL, "migration: the "
			      "source's profile of '%s' refused: %s; profiling from scratch", b->id,
			      b->profile_why);
	/* a reply that cannot go closes the connection: closed_cb undoes the rest */
	vt_handoff_conn_hello_done(o->conn, 0, NULL);
	g_free(o);
	return;
refuse:
	refused(d, b, o->conn, o->msg);
	vt_budget_give(d->budget, &b->ticket, true);
	vt_handoff_conn_hello_done(o->conn, ret, o->msg);
out:
	if (o->pager.memfd >= 0 || o->pager.uffd >= 0)
		vt_pager_close(&o->pager);
	vt_prepared_free(o->prepared);	/* stopped by the job */
	vt_backend_unref(b);
	g_free(o);
}

/*
 * One of the HELLO's maps (@fd_index: VTIER_HANDOFF_FD_ZERO_MAP or _SEND_MAP),
 * if QEMU sent it (checked by the server), mapped shared into *@map.
 */
static int map_hello_map(struct vt_backend *b, struct vt_handoff_conn *conn,
			 unsigned int fd_index, uint64_t **map, size_t *bytes, char *msg)
{
	int fd = vt_handoff_conn_take_map(conn, fd_index), ret = 0;
	void *p;

	if (fd < 0)
		return 0;
	*bytes = vtier_zero_map_bytes(b->size, b->page_size);
	p = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN, "cannot map the %s: %s",
			   vt_handoff_map_name(fd_index), g_strerror(-ret));
	} else {
		*map = p;
	}
	close(fd);
	return ret;
}

static int hello_cb(struct vt_handoff_conn *conn, const struct vt_handoff_hello *hello, int memfd,
		    int uffd, char *msg, void *opaque)
{
	struct vt_handoffs *d = opaque;
	const struct vtier_handoff_hello *h = hello->fixed;
	struct vt_backend *b = g_new0(struct vt_backend, 1), *other;
	struct opening *o = NULL, *opening;
	pid_t peer = vt_handoff_conn_peer_pid(conn);
	g_autoptr(GError) e = NULL;
	struct vt_charge charge;
	struct vt_peer_id who;
	bool fresh_incoming;
	int ret;

	b->d = d;
	b->refs = 1;
	g_mutex_init(&b->lock);
	b->pid = (pid_t)h->qemu_pid;
	g_strlcpy(b->id, h->backend_id, sizeof(b->id));
	g_strlcpy(b->vm_name, h->vm_name, sizeof(b->vm_name));
	memcpy(b->uuid, (h->flags & VTIER_HELLO_F_UUID) ? h->vm_uuid : (const uint8_t[16]){ 0 }, 16);
	b->hva = h->hva;
	b->size = h->size_bytes;
	b->page_size = h->page_size;
	b->generation = h->generation;
	b->flags = h->flags;
	b->precopy = h->flags & VTIER_HELLO_F_PRECOPY;
	b->ranges = g_array_new(FALSE, FALSE, sizeof(struct vtier_handoff_range));
	g_array_append_vals(b->ranges, hello->ranges, h->n_ranges);
	/*
	 * the source's profile, checked by the store job; a RECONNECT has run here
	 * since, unless it still comes during the precopy (the guest never ran here)
	 */
	fresh_incoming = (h->flags & VTIER_HELLO_F_INCOMING) &&
			 (!(h->flags & VTIER_HELLO_F_RECONNECT) || (h->flags & VTIER_HELLO_F_PRECOPY));
	if (fresh_incoming && h->profile_size && d->host->ignore_profiles) {
		vt_registry_log(d->reg, G_LOG_LEVEL_MESSAGE, NULL, "migration: the source's profile of "
			      "'%s' ignored (--ignore-migration-profiles)", b->id);
	} else if (fresh_incoming && h->profile_size) {
		b->profile_buf = g_memdup2(hello->profile, h->profile_size);
		b->profile_len = h->profile_size;
	}
	if (peer < 0 || peer != b->pid) {
		g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN, "HELLO claims qemu_pid %u but the "
			   "socket's peer is pid %d: refused", h->qemu_pid, (int)peer);
		ret = -EPERM;
		goto refuse;
	}
	/* read at accept: the process that connected, even if it is gone since */
	b->start_time = vt_handoff_conn_peer_start_time(conn);
	if (!b->start_time)
		b->start_time = proc_start(b->pid);
	if (!vt_handoff_name_safe(b->id)) {
		g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN, "backend id is not [A-Za-z0-9_.-]{1,63}");
		ret = -EINVAL;
		goto refuse;
	}
	if (!d->host->nr_ctier) {
		g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN,
			   "vtierd has no compressed tiers configured ([ctier.NAME] groups)");
		ret = -ENOTSUP;
		goto refuse;
	}
	if (b->page_size != 4096) {
		g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN, "page size %" G_GUINT64_FORMAT
			   ": only 4 KiB pages are compressed", b->page_size);
		ret = -ENOTSUP;
		goto refuse;
	}
	/* mapped once the HELLO is the kernel-named peer's and well formed */
	ret = map_hello_map(b, conn, VTIER_HANDOFF_FD_ZERO_MAP, &b->zero_map, &b->zero_map_bytes,
			    msg);
	if (!ret)
		ret = map_hello_map(b, conn, VTIER_HANDOFF_FD_SEND_MAP, &b->send_map,
				    &b->send_map_bytes, msg);
	if (ret)
		goto refuse;
	backend_key(b);
	other = g_hash_table_lookup(d->backends, b->key);
	opening = g_hash_table_lookup(d->opening, b->key);
	if (other || opening) {
		g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN, "backend '%s' of this VM is held by a "
			   "live connection of QEMU pid %d: refused", b->id,
			   (int)(other ? other : opening->b)->pid);
		ret = -EBUSY;
		goto refuse;
	}
	/* charged to the process the kernel named, before anything is opened for it */
	vt_peer_id_fill(&who, peer, b->start_time, vt_handoff_conn_peer_uid(conn),
			vt_handoff_conn_peer_cgroup(conn));
	vt_budget_backend_charge(b->size, d->host->ctier, d->host->remote, d->host->nr_ctier,
				 &charge);
	ret = vt_budget_take(d->budget, &who, b->key, b->flags & VTIER_HELLO_F_RECONNECT, &charge,
			     &b->ticket, msg, VTIER_HANDOFF_MESSAGE_LEN);
	if (ret)
		goto refuse;
	o = g_new0(struct opening, 1);
	o->b = b;
	o->conn = conn;
	o->prepared = vt_backend_prepared_take(conn, h, memfd);
	ret = vt_pager_open(&o->pager, h, memfd, uffd);
	memfd = uffd = -1;	/* the pager's now, even on failure */
	if (ret) {
		g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN, "cannot serve this backend: %s",
			   g_strerror(-ret));
		goto refuse;
	}
	o->job = vt_job_start("vtier-store", opening_run, opening_done, o, &e);
	if (!o->job) {
		g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN, "%s", e->message);
		ret = -EAGAIN;
		goto refuse;
	}
	g_hash_table_insert(d->opening, b->key, o);
	return VT_HANDOFF_HELLO_PENDING;
refuse:
	refused(d, b, conn, msg);
	vt_budget_give(d->budget, &b->ticket, true);
	if (memfd >= 0)
		close(memfd);
	if (uffd >= 0)
		close(uffd);
	if (o && o->pager.memfd >= 0)
		vt_pager_close(&o->pager);
	if (o)
		vt_prepared_free(o->prepared);
	g_free(o);
	vt_backend_unref(b);
	return ret;
}

void vt_backend_cancel_openings(struct vt_handoffs *d)
{
	GHashTableIter it;
	gpointer v;

	/* the server is gone: the HELLOs' connections are closed, nothing is sent */
	g_hash_table_iter_init(&it, d->opening);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct opening *o = v;

		vt_job_cancel(o->job);	/* waits for the store's file I/O: teardown only */
		g_hash_table_iter_remove(&it);
		vt_handoff_conn_hello_done(o->conn, -ESHUTDOWN, NULL);
		vt_pager_close(&o->pager);
		vt_prepared_free(o->prepared);
		/* the store stays for the next agent, as for a live hand-off */
		vt_budget_give(d->budget, &o->b->ticket, true);
		vt_backend_unref(o->b);
		g_free(o);
	}
}

/*
 * QEMU's policy as the KEY=VALUE words of `vtierctl policy`, through the
 * one path that checks and applies them (vt_daemon_set_policy()).
 */
static int policy_cb(struct vt_handoff_conn *conn, const struct vt_handoff_policy *policy,
		     char *msg, void *opaque)
{
	const struct vtier_handoff_policy *p = policy->fixed;
	struct vt_backend *b = vt_handoff_conn_get_user(conn);
	g_autoptr(GPtrArray) set = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GError) e = NULL;
	static const char *const modes[] = { "off", "observe", "auto" };

	(void)opaque;
	if (!b || !b->vm) {
		g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN, "backend not attached to a VM");
		return -ENOENT;
	}
	if (p->mode <= VTIER_POLICY_MODE_AUTO)
		g_ptr_array_add(set, g_strdup_printf("mode=%s", modes[p->mode]));
	if (p->flags & VTIER_POLICY_F_DRAM_LIMIT)
		g_ptr_array_add(set, g_strdup_printf("dram_limit=%" G_GUINT64_FORMAT,
						     (guint64)p->dram_limit_bytes));
	if (p->flags & VTIER_POLICY_F_MOVE_BUDGET)
		g_ptr_array_add(set, g_strdup_printf("budget=%" G_GUINT64_FORMAT,
						     (guint64)p->move_budget_bytes));
	if (p->flags & VTIER_POLICY_F_TCO_ALPHA) {
		/* QMP has no placement key: a TCO knob means the TCO model (docs/tco.md) */
		g_ptr_array_add(set, g_strdup("placement=tco"));
		g_ptr_array_add(set, g_strdup_printf("tco_alpha=%u.%03u", p->tco_alpha_milli / 1000,
						     p->tco_alpha_milli % 1000));
	}
	if (p->flags & VTIER_POLICY_F_TIERS)
		g_ptr_array_add(set, g_strdup_printf("tiers=%s", p->tiers));
	/* host sharing (docs/host-share.md): a min over the host's budget is refused there */
	if (policy->min)
		g_ptr_array_add(set, g_strdup_printf("dram_min=%" G_GUINT64_FORMAT,
						     (guint64)policy->min->dram_min_bytes));
	if (p->flags & VTIER_POLICY_F_WEIGHT)
		g_ptr_array_add(set, g_strdup_printf("weight=%u", p->weight));
	if (!b->d->reg->ops->set_policy(b->d->reg->opaque, b->vm, (char *const *)set->pdata, set->len,
					&e)) {
		g_snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN, "%s", e->message);
		return -EINVAL;
	}
	return 0;
}

static void migration_cb(struct vt_handoff_conn *conn, enum vtier_migration_event event,
			 void *opaque)
{
	struct vt_handoffs *d = opaque;
	struct vt_backend *b = vt_handoff_conn_get_user(conn);

	if (event == VTIER_MIGRATION_SEND_END) {
		/*
		 * vtierd marks no page in the send map yet (the stream of stored
		 * pages to the destination's agent is still to come): QEMU's
		 * migration skipped none of them, there is nothing to deliver
		 */
		vt_handoff_conn_send_sent(conn, 0, 0, "no page marked");
		return;
	}
	if (!b)
		return;
	if (event == VTIER_MIGRATION_ARRIVED) {
		/* the early hand-off's guest runs: the VM's windows profile it from now on */
		bool was;

		g_mutex_lock(&b->lock);
		was = b->precopy;
		b->precopy = false;
		b->arrived_sweep = was;
		if (was && b->mover)
			vt_ctier_mover_set_background(b->mover, false);
		g_mutex_unlock(&b->lock);
		vt_registry_log(d->reg, G_LOG_LEVEL_MESSAGE, b->vm ? b->vm->name : NULL,
			      "migration: '%s' arrived, the guest runs%s", b->id,
			      was ? "" : " (its hand-off was not made during the precopy)");
		return;
	}
	if (!b->vm) {
		vt_registry_log(d->reg, G_LOG_LEVEL_WARNING, NULL, "migration event %u of '%s' (QEMU "
			      "pid %d): no VM attached, no profile", event, b->id, (int)b->pid);
		return;
	}
	d->reg->ops->migration_event(d->reg->opaque, b->vm, b, event);
}

static void ranges_cb(struct vt_handoff_conn *conn, const struct vtier_handoff_range *ranges,
		      uint32_t n_ranges, void *opaque)
{
	struct vt_backend *b = vt_handoff_conn_get_user(conn);

	(void)opaque;
	if (!b)
		return;
	g_array_set_size(b->ranges, 0);
	g_array_append_vals(b->ranges, ranges, n_ranges);
	if (b->vm)
		b->d->reg->ops->ranges_changed(b->d->reg->opaque, b->vm);
}

static void closed_cb(struct vt_handoff_conn *conn, const char *why, void *opaque)
{
	struct vt_handoffs *d = opaque;
	struct vt_backend *b = vt_handoff_conn_get_user(conn);
	bool gone;

	if (!b)
		return;
	/* stop serving first: a reconnect must find no other reader of its uffd */
	g_mutex_lock(&b->lock);
	vt_ctier_mover_stop(b->mover);
	b->mover = NULL;
	g_mutex_unlock(&b->lock);
	b->conn = NULL;
	gone = proc_start(b->pid) != b->start_time;
	vt_registry_log(d->reg, G_LOG_LEVEL_MESSAGE, b->vm ? b->vm->name : NULL,
		      "hand-off of '%s' ended: %s%s", b->id, why,
		      gone ? " (QEMU exited: store removed)" : " (store kept for its reconnect)");
	if (b->vm)
		d->reg->ops->backend_gone(d->reg->opaque, b->vm, b);
	g_hash_table_steal(d->backends, b->key);
	backend_shut(b);
	vt_budget_give(d->budget, &b->ticket, false);
	if (gone)
		vt_store_remove(d, b->store_dir);
	else
		orphan_add(d, b);
	vt_backend_unref(b);
}

/* A peer the server dropped before any HELLO (limits, timeouts, fds). */
static void dropped_cb(struct vt_handoff_conn *conn, const char *why, void *opaque)
{
	struct vt_handoffs *d = opaque;

	if (conn)
		vt_backend_prepared_drop(conn);
	vt_registry_log(d->reg, G_LOG_LEVEL_WARNING, NULL, "hand-off: %s", why);
}

static bool prepare_cb(struct vt_handoff_conn *conn, const struct vt_handoff_hello *hello,
		       int memfd, void *opaque)
{
	return vt_backend_prepare(opaque, conn, hello, memfd);
}

const struct vt_handoff_ops vt_backend_handoff_ops = {
	.hello = hello_cb,
	.prepare = prepare_cb,
	.dropped = dropped_cb,
	.policy = policy_cb,
	.ranges = ranges_cb,
	.migration = migration_cb,
	.closed = closed_cb,
};

GPtrArray *vt_vm_backends_ref(struct vt_vm *vm)
{
	GPtrArray *a = g_ptr_array_new_with_free_func((GDestroyNotify)vt_backend_unref);

	g_mutex_lock(&vm->lock);
	for (unsigned int i = 0; vm->backends && i < vm->backends->len; i++)
		g_ptr_array_add(a, vt_backend_ref(g_ptr_array_index(vm->backends, i)));
	g_mutex_unlock(&vm->lock);
	return a;
}

struct vt_backend *vt_backend_of_hva(GPtrArray *backends, uint64_t hva)
{
	for (unsigned int i = 0; backends && i < backends->len; i++) {
		struct vt_backend *b = g_ptr_array_index(backends, i);

		if (hva >= b->hva && hva - b->hva < b->size)
			return b;
	}
	return NULL;
}

int vt_backend_tier_of(struct vt_backend *b, uint64_t hva)
{
	int t = -1;

	if (hva < b->hva || hva - b->hva >= b->size)
		return -1;
	g_mutex_lock(&b->lock);
	if (b->store)
		t = vt_store_tier_of(b->store, (hva - b->hva) / b->page_size);
	g_mutex_unlock(&b->lock);
	return t;
}

unsigned int vt_backend_backlog(struct vt_backend *b)
{
	unsigned int n;

	g_mutex_lock(&b->lock);
	n = b->mover ? vt_ctier_mover_backlog(b->mover) : 0;
	g_mutex_unlock(&b->lock);
	return n;
}

int vt_backend_queue(struct vt_backend *b, uint64_t offset, uint64_t len, int tier)
{
	int ret = -ENOTCONN;

	g_mutex_lock(&b->lock);
	if (b->mover && vt_ctier_mover_backlog(b->mover) >= VT_BACKEND_BACKLOG_MAX)
		ret = -EAGAIN;
	else if (b->mover)
		ret = tier >= 0 ? vt_ctier_mover_evict(b->mover, offset, len, (unsigned int)tier) :
				  vt_ctier_mover_fetch(b->mover, offset, len);
	g_mutex_unlock(&b->lock);
	return ret;
}

int vt_backend_queue_bulk(struct vt_backend *b, uint64_t offset, uint64_t len, unsigned int tier)
{
	int ret = -ENOTCONN;

	g_mutex_lock(&b->lock);
	if (b->mover && vt_ctier_mover_backlog(b->mover) >= VT_BACKEND_BULK_BACKLOG_MAX)
		ret = -EAGAIN;
	else if (b->mover)
		ret = vt_ctier_mover_evict_bulk(b->mover, offset, len, tier);
	g_mutex_unlock(&b->lock);
	return ret;
}

void vt_backend_track_reads(struct vt_backend *b, bool on, uint64_t bound)
{
	g_mutex_lock(&b->lock);
	if (b->mover)
		vt_ctier_mover_track_reads(b->mover, on, bound);
	g_mutex_unlock(&b->lock);
}

uint64_t vt_backend_reads_held(struct vt_backend *b)
{
	uint64_t n = 0;

	g_mutex_lock(&b->lock);
	if (b->mover)
		n = vt_ctier_mover_reads_held(b->mover);
	g_mutex_unlock(&b->lock);
	return n;
}

int vt_backend_discard(struct vt_backend *b, uint64_t offset, uint64_t len)
{
	int ret = -ENOTCONN;

	g_mutex_lock(&b->lock);
	if (b->mover)
		ret = vt_ctier_mover_discard(b->mover, offset, len);
	g_mutex_unlock(&b->lock);
	return ret;
}

unsigned int vt_backend_discards_pending(struct vt_backend *b)
{
	unsigned int n;

	g_mutex_lock(&b->lock);
	n = b->mover ? vt_ctier_mover_discards_pending(b->mover) : 0;
	g_mutex_unlock(&b->lock);
	return n;
}

uint64_t vt_backend_discarded_bytes(struct vt_backend *b)
{
	struct vt_ctier_mover_stats *ms;
	uint64_t n = 0;

	g_mutex_lock(&b->lock);
	if (b->mover) {
		ms = g_new(struct vt_ctier_mover_stats, 1);	/* big: latency histograms */
		vt_ctier_mover_get_stats(b->mover, ms);
		n = ms->discarded_resident_bytes + ms->discarded_stored_pages * b->page_size;
		g_free(ms);
	}
	g_mutex_unlock(&b->lock);
	return n;
}

void vt_backend_discard_cancel(struct vt_backend *b)
{
	g_mutex_lock(&b->lock);
	if (b->mover)
		vt_ctier_mover_discard_cancel(b->mover);
	g_mutex_unlock(&b->lock);
}
