// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A VM's live migration: QEMU's events taken on the VM's worker, the
 * profile written there and sent from the main loop, the promotions held
 * while outgoing; on the destination the profile checked by the store job
 * and used by the engine (seed at start, placement from the first window).
 */
#include <errno.h>
#include <string.h>

#include "backend.h"
#include "json_member.h"
#include "migration.h"
#include "migration_profile.h"
#include "vm.h"

/* The VM's tiers as a profile names them: fastest first, NUMA then compressed. */
static unsigned int vm_profile_tiers(const struct vt_vm *vm, struct vt_profile_tier *out)
{
	unsigned int n = MIN(vt_vm_nr_tiers(vm), VTIER_PROFILE_TIERS_MAX);

	for (unsigned int t = 0; t < n; t++)
		out[t] = vt_profile_tier_named(t, t < vm->tiers.nr ? VTIER_PROFILE_TIER_NUMA :
								     VTIER_PROFILE_TIER_COMPRESSED,
					       vt_vm_tier_name(vm, t));
	return n;
}

/* A profile on its way from the worker to the main loop, which sends it. */
struct profile_msg {
	struct vt_backend *b;		/* a reference */
	uint8_t *buf;
	size_t len;
	char vm[64];
};

static void profile_msg_free(gpointer data)
{
	struct profile_msg *m = data;

	vt_backend_unref(m->b);
	g_free(m->buf);
	g_free(m);
}

static gboolean send_profile(gpointer data)
{
	struct profile_msg *m = data;
	int ret = m->b->conn ? vt_handoff_conn_send_profile(m->b->conn, m->buf, m->len) : -ENOTCONN;

	if (ret == -EOPNOTSUPP && !m->len)
		vt_registry_log(m->b->d->reg, G_LOG_LEVEL_MESSAGE, m->vm, "migration: QEMU of '%s' "
			      "did not say NO_PROFILE in its HELLO: it waits its timeout for a profile",
			      m->b->id);
	else if (ret)
		vt_registry_log(m->b->d->reg, G_LOG_LEVEL_WARNING, m->vm, "migration: profile of '%s' not "
			      "sent: %s (the destination profiles from scratch)", m->b->id,
			      g_strerror(-ret));
	else if (!m->len)
		vt_registry_log(m->b->d->reg, G_LOG_LEVEL_MESSAGE, m->vm, "migration: QEMU of '%s' "
			      "told there is no profile (it need not wait for one)", m->b->id);
	else
		vt_registry_log(m->b->d->reg, G_LOG_LEVEL_MESSAGE, m->vm, "migration: profile of '%s' sent "
			      "(%zu bytes)", m->b->id, m->len);
	return G_SOURCE_REMOVE;
}

/*
 * On the worker: @b's profile from the VM's state, to the main loop. Without
 * one (the engine has no state), the answer that there is none: a QEMU that
 * understands it stops waiting for a profile at the migration's setup.
 */
static void write_profile(struct vt_vm *vm, struct vt_backend *b)
{
	struct vt_profile_tier tiers[VTIER_PROFILE_TIERS_MAX];
	double ratio[VTIER_PROFILE_TIERS_MAX] = { 0 };
	struct vt_profile_source src = { .hva = b->hva, .size = b->size, .tiers = tiers };
	struct profile_msg *m;
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret = -ENODATA;

	if (vm->mtm) {
		src.mtm = vm->mtm;
		src.n_tiers = vm_profile_tiers(vm, tiers);
		for (unsigned int t = 0; t < src.n_tiers && t < vm->stats.model.nr; t++)
			ratio[t] = vm->stats.model.t[t].ratio;
		src.ratio = ratio;
		src.windows = vm->stats.windows;
		ret = vt_migration_profile_write(&src, &buf, &len);
	}
	g_mutex_lock(&vm->lock);
	if (ret) {
		vm->stats.migration.profile_errors++;
		g_snprintf(vm->migration.note, sizeof(vm->migration.note), "no profile of '%s' "
			   "written: %s", b->id, ret == -ENODATA ? "the engine has no state (mode "
			   "off, or not started)" : g_strerror(-ret));
	} else {
		vm->stats.migration.profiles_written++;
		vm->stats.migration.profile_bytes = len;
		g_snprintf(vm->migration.note, sizeof(vm->migration.note), "profile of '%s' "
			   "written: v2, %zu bytes, %" G_GUINT64_FORMAT " windows", b->id, len,
			   src.windows);
	}
	g_mutex_unlock(&vm->lock);
	if (ret) {
		vt_registry_log(vm->reg, G_LOG_LEVEL_WARNING, vm->name, "migration: %s",
			      vm->migration.note);
		g_free(buf);
		buf = NULL;
		len = 0;
	}
	m = g_new0(struct profile_msg, 1);
	m->b = vt_backend_ref(b);
	m->buf = buf;
	m->len = len;
	g_strlcpy(m->vm, vm->name, sizeof(m->vm));
	/* QEMU waits up to 1 s for it: ahead of other work on the loop */
	g_main_context_invoke_full(NULL, G_PRIORITY_HIGH, send_profile, m, profile_msg_free);
}

struct event_msg {
	struct vt_vm *vm;
	struct vt_backend *b;		/* a reference */
	enum vtier_migration_event event;
};

static void event_msg_free(gpointer data)
{
	struct event_msg *m = data;

	if (m->b)
		vt_backend_unref(m->b);
	g_free(m);
}

/* Compressed-tier bytes of the VM by its tier model (the stores' page counts). */
static uint64_t stored_bytes(const struct vt_vm *vm, const struct vt_vm_stats *s)
{
	uint64_t n = 0;

	for (unsigned int t = vm->tiers.nr; t < s->model.nr; t++)
		n += s->model.t[t].stored_bytes;
	return n;
}

/* The start of an outgoing migration: what to evict again once it is read. */
static void keep_start(struct vt_vm *vm)
{
	struct vt_vm_migration *mg = &vm->migration;

	if (!mg->keep)
		mg->keep = g_array_new(FALSE, FALSE, sizeof(struct vt_seed_order));
	g_array_set_size(mg->keep, 0);
	mg->stored_at_start = stored_bytes(vm, &vm->stats);
	vm->stats.migration.extra_bytes = 0;
	vm->stats.migration.extra_peak_bytes = 0;
	if (vm->mtm && vm->ctier_kind == VT_CTIER_HANDOFF)
		vt_migration_keep_plan(vm->mtm, vm->tiers.nr, mg->keep);
	vm->stats.migration.keep_chunks = mg->keep->len;
}

static gboolean take_event(gpointer data)
{
	struct event_msg *m = data;
	struct vt_vm *vm = m->vm;
	static const char *const what[] = { "?", "started", "completed", "failed or cancelled" };
	enum vt_migration_state was;
	uint64_t bound;

	/* each backend's hand-off says so: a migration counts once, on the VM's change */
	g_mutex_lock(&vm->lock);
	was = vm->migration.state;
	/* the VM's bound on what its migration holds, shared by its backends */
	bound = vm->policy.migration_extra_bytes / MAX(vm->backends ? vm->backends->len : 1, 1);
	if (m->event == VTIER_MIGRATION_START) {
		if (vm->migration.state == VT_MIGRATION_NONE) {
			vm->stats.migration.started++;
			keep_start(vm);
		}
		vm->migration.state = VT_MIGRATION_OUTGOING;
	} else if (vm->migration.state == VT_MIGRATION_OUTGOING) {
		vm->migration.state = VT_MIGRATION_NONE;
		if (vm->migration.keep)
			g_array_set_size(vm->migration.keep, 0);
		if (m->event == VTIER_MIGRATION_COMPLETED)
			vm->stats.migration.completed++;
		else
			vm->stats.migration.failed++;
	}
	g_mutex_unlock(&vm->lock);
	if (!m->b) {
		/* QMP's MIGRATION events: the VM's state, said once per change */
		if (was != vm->migration.state || m->event != VTIER_MIGRATION_START)
			vt_registry_log(vm->reg, G_LOG_LEVEL_MESSAGE, vm->name, "migration %s (QMP)%s",
				      what[m->event <= 3 ? m->event : 0],
				      m->event == VTIER_MIGRATION_START ?
				      ": promotions held until it ends" : ": tiering as before");
		return G_SOURCE_REMOVE;
	}
	/*
	 * what the migration reads is filled into the memfd (zeros, stored pages
	 * read through): punched again once read, within the VM's bound
	 */
	vt_backend_track_reads(m->b, m->event == VTIER_MIGRATION_START, bound);
	vt_registry_log(vm->reg, G_LOG_LEVEL_MESSAGE, vm->name, "migration %s (backend '%s')%s",
		      what[m->event <= 3 ? m->event : 0], m->b->id,
		      m->event == VTIER_MIGRATION_START ? ": promotions held until it ends" :
		      was == VT_MIGRATION_NONE ? ": its start was not heard here, nothing to end" :
		      ": tiering as before");
	if (m->event == VTIER_MIGRATION_START)
		write_profile(vm, m->b);
	return G_SOURCE_REMOVE;
}

void vt_migration_post_event(struct vt_vm *vm, struct vt_backend *b,
			     enum vtier_migration_event event)
{
	struct event_msg *m = g_new0(struct event_msg, 1);

	m->vm = vm;
	m->b = vt_backend_ref(b);
	m->event = event;
	g_main_context_invoke_full(vm->ctx, G_PRIORITY_HIGH, take_event, m, event_msg_free);
}

void vt_migration_post_qmp(struct vt_vm *vm, enum vt_qmp_migration status)
{
	struct event_msg *m;
	enum vtier_migration_event event;

	switch (status) {
	case VT_QMP_MIGRATION_ACTIVE:
		event = VTIER_MIGRATION_START;
		break;
	case VT_QMP_MIGRATION_COMPLETED:
		event = VTIER_MIGRATION_COMPLETED;
		break;
	case VT_QMP_MIGRATION_FAILED:
		event = VTIER_MIGRATION_FAILED;
		break;
	default:
		return;		/* postcopy, COLO, cancelling ...: not followed */
	}
	if (vm->migration.qmp_incoming) {
		/* the incoming migration's own events; it ends with its QEMU's start */
		if (event != VTIER_MIGRATION_START)
			vm->migration.qmp_incoming = false;
		return;
	}
	m = g_new0(struct event_msg, 1);
	m->vm = vm;
	m->event = event;
	g_main_context_invoke_full(vm->ctx, G_PRIORITY_HIGH, take_event, m, event_msg_free);
}

/*
 * The plan's chunks @from.. that go to a compressed tier, queued to @b's mover
 * at once as bulk evictions: the destination starts placing when it accepts
 * the hand-off, not a window later (mode auto only). The plan keeps them: the
 * first window orders again what is not there yet (an order of pages already
 * evicted costs a look at the memfd).
 */
static unsigned int place_at_handoff(struct vt_vm *vm, struct vt_backend *b, unsigned int from)
{
	g_autoptr(GArray) orders = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_order));
	unsigned int n = 0, nr_numa = vm->tiers.nr;
	uint64_t room[VT_MTM_MAX_TIERS];

	if (vm->policy.mode != VT_MODE_AUTO || vm->ctier_kind != VT_CTIER_HANDOFF)
		return 0;
	/* a compressed tier's pool cap, in guest bytes at ratio 1 (the windows place the rest) */
	for (unsigned int t = 0; t < VT_MTM_MAX_TIERS; t++)
		room[t] = t >= nr_numa && t - nr_numa < vm->host->nr_ctier &&
				  vm->host->ctier[t - nr_numa].capacity_bytes ?
			  vm->host->ctier[t - nr_numa].capacity_bytes : UINT64_MAX;
	vt_migration_profile_at_handoff(vm->mtm, vm->migration.plan, from, nr_numa,
					vm->tiers_allowed, b->hva, b->hva + b->size, room, orders);
	for (unsigned int k = 0; k < orders->len; k++) {
		const struct vt_mtm_order *o = &g_array_index(orders, struct vt_mtm_order, k);
		const struct vt_mtm_chunk *c = &g_array_index(vm->mtm->chunks, struct vt_mtm_chunk,
							      o->chunk);

		n += vt_backend_queue_bulk(b, c->start - b->hva, c->end - c->start,
					   (unsigned int)(o->to_tier - (int)nr_numa)) == 0;
	}
	return n;
}

bool vt_migration_precopy_window(struct vt_vm *vm, GPtrArray *backends, struct vt_vm_stats *s)
{
	bool any = false;

	for (unsigned int i = 0; backends && i < backends->len; i++) {
		struct vt_backend *b = g_ptr_array_index(backends, i);
		bool precopy, sweep;
		unsigned int n;

		g_mutex_lock(&b->lock);
		if (b->precopy && s->migration.precopy_windows >= VT_MIGRATION_PRECOPY_WINDOWS_MAX) {
			/* a QEMU that never says ARRIVED does not keep its VM unprofiled */
			b->precopy = false;
			b->arrived_sweep = true;
			if (b->mover)
				vt_ctier_mover_set_background(b->mover, false);
			vt_registry_log(vm->reg, G_LOG_LEVEL_WARNING, vm->name, "migration: no ARRIVED "
				      "for '%s' after %u windows of precopy: taken as arrived", b->id,
				      VT_MIGRATION_PRECOPY_WINDOWS_MAX);
		}
		precopy = b->precopy;
		sweep = b->arrived_sweep;
		b->arrived_sweep = false;
		g_mutex_unlock(&b->lock);
		if (sweep && vm->mtm && vm->migration.plan) {
			/*
			 * the guest runs: the plan's compressed chunks once more,
			 * whatever the mover's backlog, before a window's residency
			 * takes a chunk mostly evicted for placed and drops it from
			 * the plan with what arrived after its last sweep in DRAM
			 */
			n = place_at_handoff(vm, b, 0);
			s->migration.plan_orders += n;
			s->migration.arrival_orders += n;
		}
		if (!precopy)
			continue;
		any = true;
		if (!vm->mtm || !vm->migration.plan || vt_backend_backlog(b))
			continue;
		n = place_at_handoff(vm, b, 0);
		s->migration.plan_orders += n;
		s->migration.precopy_orders += n;
	}
	if (any)
		s->migration.precopy_windows++;
	return any;
}

bool vt_migration_precopy_due(GPtrArray *backends, const struct vt_vm_stats *s)
{
	/* past the bound, vt_migration_precopy_window takes every backend as arrived */
	if (s->migration.precopy_windows >= VT_MIGRATION_PRECOPY_WINDOWS_MAX)
		return false;
	for (unsigned int i = 0; backends && i < backends->len; i++) {
		struct vt_backend *b = g_ptr_array_index(backends, i);
		bool precopy;

		g_mutex_lock(&b->lock);
		precopy = b->precopy;
		g_mutex_unlock(&b->lock);
		if (precopy)
			return true;
	}
	return false;
}

void vt_migration_seed(struct vt_vm *vm)
{
	struct vt_migration_stats *st = &vm->stats.migration;
	struct vt_vm_migration *mg = &vm->migration;
	struct vt_profile_tier ours[VTIER_PROFILE_TIERS_MAX];
	unsigned int n_ours = vm_profile_tiers(vm, ours);

	if (!mg->plan)
		mg->plan = g_array_new(FALSE, FALSE, sizeof(struct vt_seed_order));
	g_array_set_size(mg->plan, 0);	/* a new MTM state: old chunk numbers mean nothing */
	if (mg->keep)
		g_array_set_size(mg->keep, 0);
	mg->plan_age = mg->plan_idle = 0;
	for (unsigned int i = 0; vm->backends && i < vm->backends->len; i++) {
		struct vt_backend *b = g_ptr_array_index(vm->backends, i);
		int map[VTIER_PROFILE_TIERS_MAX];
		unsigned int n;

		unsigned int from = mg->plan->len;
		bool fresh = false;

		g_mutex_lock(&b->lock);
		if (b->profile_why[0] && !b->profile_counted) {
			/* logged when the HELLO was accepted (backend.c) */
			st->profiles_refused++;
			b->profile_counted = true;
			g_snprintf(mg->note, sizeof(mg->note), "profile of '%s' refused: %s; "
				   "profiling from scratch", b->id, b->profile_why);
		}
		if (b->profile_buf && !vm->mtm) {
			/* mode=off: nothing to seed, and a later start would find it stale */
			g_snprintf(mg->note, sizeof(mg->note), "profile of '%s' not used: the "
				   "VM's mode is off", b->id);
			g_clear_pointer(&b->profile_buf, g_free);
			b->profile_len = 0;
		}
		if (!b->profile_buf) {
			g_mutex_unlock(&b->lock);
			continue;
		}
		vt_migration_profile_map_tiers(&b->profile, ours, n_ours, map);
		n = vt_migration_profile_seed(vm->mtm, b->hva, &b->profile, map, vm->tiers.nr,
					      mg->plan);
		mg->holding_profiles = true;
		fresh = !b->profile_counted;
		if (!b->profile_counted) {
			b->profile_counted = true;
			st->profiles_seeded++;
			st->seeded_chunks += n;
			g_snprintf(mg->note, sizeof(mg->note), "seeded from the source's profile of "
				   "'%s': v%u, %u chunks of %u KiB, %u tiers, %" G_GUINT64_FORMAT
				   " windows", b->id, b->profile.version, b->profile.n_chunks,
				   (1u << b->profile.chunk_shift) >> 10, b->profile.n_tiers,
				   b->profile.windows);
			vt_registry_log(vm->reg, G_LOG_LEVEL_MESSAGE, vm->name, "migration: %s; %u chunks "
				      "seeded, %u to place", mg->note, n, mg->plan->len);
		}
		g_mutex_unlock(&b->lock);
		if (fresh) {
			n = place_at_handoff(vm, b, from);
			st->plan_orders += n;
			st->handoff_orders += n;
		}
	}
	st->plan_chunks = mg->plan->len;
}

/*
 * While outgoing: the chunks the migration faulted back, evicted again. The
 * extra memory: what left the stores since the start (pages the guest wrote),
 * and what the movers hold for the migration's reads.
 */
static void reevict(struct vt_vm *vm, GPtrArray *backends, uint64_t *room, uint64_t budget,
		    GArray *orders, struct vt_mtm_window_stats *ws, struct vt_vm_stats *s)
{
	struct vt_vm_migration *mg = &vm->migration;
	uint64_t now = stored_bytes(vm, s), held = 0;

	for (unsigned int i = 0; backends && i < backends->len; i++)
		held += vt_backend_reads_held(g_ptr_array_index(backends, i));
	s->migration.reads_held_bytes = held;
	s->migration.extra_bytes = mg->stored_at_start - MIN(now, mg->stored_at_start) + held;
	s->migration.extra_peak_bytes = MAX(s->migration.extra_peak_bytes,
					    s->migration.extra_bytes);
	if (!mg->keep || !mg->keep->len) {
		s->migration.keep_chunks = 0;
		return;
	}
	if (vm->policy.migration_extra_bytes &&
	    s->migration.extra_bytes > vm->policy.migration_extra_bytes)
		budget = UINT64_MAX;	/* over the bound: as fast as the mover goes */
	s->migration.reevict_orders += vt_migration_reevict(vm->mtm, mg->keep, budget, room,
							    orders, ws);
	s->migration.keep_chunks = mg->keep->len;
}

void vt_migration_place(struct vt_vm *vm, GPtrArray *backends, uint64_t *room, uint64_t budget,
			GArray *orders, struct vt_mtm_window_stats *ws, struct vt_vm_stats *s)
{
	struct vt_vm_migration *mg = &vm->migration;

	if (mg->state == VT_MIGRATION_OUTGOING)
		reevict(vm, backends, room, budget, orders, ws, s);
	if (!mg->plan || !mg->plan->len)
		return;
	if (mg->plan_idle >= VT_MIGRATION_PLAN_IDLE_WINDOWS ||
	    mg->plan_age >= VT_MIGRATION_PLAN_WINDOWS) {
		g_array_set_size(mg->plan, 0);	/* the VM's own profile rules from now on */
	} else {
		unsigned int n = vt_migration_profile_place(vm->mtm, mg->plan, vm->tiers_allowed,
							    room, orders, ws);

		mg->plan_age++;
		mg->plan_idle += !n;
		s->migration.plan_orders += n;
	}
	s->migration.plan_chunks = mg->plan->len;
}

void vt_migration_hold(struct vt_vm *vm, GArray *orders, struct vt_vm_stats *s)
{
	unsigned int kept = 0;

	if (vm->migration.state != VT_MIGRATION_OUTGOING)
		return;
	for (unsigned int i = 0; i < orders->len; i++) {
		struct vt_mtm_order o = g_array_index(orders, struct vt_mtm_order, i);

		if (o.promote) {
			s->migration.promotions_held++;
			continue;
		}
		/*
		 * nor demotions that free no DRAM (down from a slower node or
		 * between compressed tiers): CPU and bandwidth the migration
		 * needs, for a VM about to leave; the destination places its
		 * chunks from the profile anyway
		 */
		if (o.from_tier > 0) {
			s->migration.demotions_held++;
			continue;
		}
		g_array_index(orders, struct vt_mtm_order, kept++) = o;
	}
	g_array_set_size(orders, kept);
}

void vt_migration_window_done(struct vt_vm *vm)
{
	if (!vm->migration.holding_profiles)
		return;
	vm->migration.holding_profiles = false;
	for (unsigned int i = 0; vm->backends && i < vm->backends->len; i++) {
		struct vt_backend *b = g_ptr_array_index(vm->backends, i);

		g_mutex_lock(&b->lock);
		g_clear_pointer(&b->profile_buf, g_free);
		b->profile_len = 0;
		g_mutex_unlock(&b->lock);
	}
}

void vt_migration_clear(struct vt_vm *vm)
{
	if (vm->migration.plan)
		g_array_free(vm->migration.plan, TRUE);
	vm->migration.plan = NULL;
	if (vm->migration.keep)
		g_array_free(vm->migration.keep, TRUE);
	vm->migration.keep = NULL;
}

void vt_migration_status_to_json(const struct vt_vm *vm, JsonBuilder *b)
{
	json_builder_begin_object(b);
	vt_json_add_str(b, "state", vt_migration_view_name(vt_migration_view(vm)));
	vt_json_add_str(b, "profile", vm->migration.note);
	json_builder_end_object(b);
}

void vt_migration_stats_to_json(const struct vt_migration_stats *s, JsonBuilder *b)
{
	json_builder_begin_object(b);
	vt_json_add_u64(b, "started", s->started);
	vt_json_add_u64(b, "completed", s->completed);
	vt_json_add_u64(b, "failed", s->failed);
	vt_json_add_u64(b, "profiles_written", s->profiles_written);
	vt_json_add_u64(b, "profile_bytes", s->profile_bytes);
	vt_json_add_u64(b, "profile_errors", s->profile_errors);
	vt_json_add_u64(b, "promotions_held", s->promotions_held);
	vt_json_add_u64(b, "demotions_held", s->demotions_held);
	vt_json_add_u64(b, "profiles_seeded", s->profiles_seeded);
	vt_json_add_u64(b, "profiles_refused", s->profiles_refused);
	vt_json_add_u64(b, "seeded_chunks", s->seeded_chunks);
	vt_json_add_u64(b, "plan_orders", s->plan_orders);
	vt_json_add_u64(b, "precopy_windows", s->precopy_windows);
	vt_json_add_u64(b, "precopy_orders", s->precopy_orders);
	vt_json_add_u64(b, "handoff_orders", s->handoff_orders);
	vt_json_add_u64(b, "arrival_orders", s->arrival_orders);
	vt_json_add_u64(b, "plan_chunks", s->plan_chunks);
	vt_json_add_u64(b, "keep_chunks", s->keep_chunks);
	vt_json_add_u64(b, "reevict_orders", s->reevict_orders);
	vt_json_add_u64(b, "extra_bytes", s->extra_bytes);
	vt_json_add_u64(b, "reads_held_bytes", s->reads_held_bytes);
	vt_json_add_u64(b, "extra_peak_bytes", s->extra_peak_bytes);
	json_builder_end_object(b);
}
