// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The policy stage: with the chunks' EMAs and residency up to date, each
 * tier's room, the VM's tier model (prices, ratios, fault latencies) and the
 * window's move orders: MTM's, or TierScape's analytical model
 * (placement=tco), or MTM's plus the waterfall into the compressed tiers.
 */
#include <string.h>

#include <glib/gstdio.h>

#include "backend.h"
#include "migration_stage.h"
#include "placement.h"
#include "waterfall.h"

#define TIER_RESERVE (32ULL << 20)	/* never fill a tier's last 32 MiB */

/* QEMU's cpuset mems, from /proc/PID/status (0: unknown, every node). */
static uint64_t mems_allowed(pid_t pid)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/status", (int)pid);
	g_autofree char *text = NULL;
	uint64_t mask = 0;

	if (pid > 0 && g_file_get_contents(path, &text, NULL, NULL) &&
	    vt_parse_mems_allowed(text, &mask))
		return mask;
	return 0;
}

void vt_placement_node_room(struct vt_window *w, uint64_t *room)
{
	struct vt_tiers *tiers = &w->vm->tiers;
	uint64_t mems = w->s->mems_allowed ? w->s->mems_allowed : UINT64_MAX;

	for (unsigned int t = 0; t < tiers->nr && t < VT_MTM_MAX_TIERS; t++) {
		uint64_t mask = vt_tiers_node_mask(tiers, t) & mems, free_bytes = 0;

		if (t == 0 && w->share.homed && (mask & (1ULL << w->share.node)))
			mask = 1ULL << w->share.node;
		w->node_mask[t] = mask;
		for (int n = 0; n < VT_MAX_NODES; n++)
			if (mask & (1ULL << n))
				free_bytes += tiers->node_free_bytes[n];
		room[t] = free_bytes > TIER_RESERVE ? free_bytes - TIER_RESERVE : 0;
	}
}

/*
 * The VM's tier model from what its backends measured (store stats, fault
 * latencies per compressed tier), and the fault time per second since the
 * last window. Runs on the worker; each backend's figures under its lock.
 */
static void build_model(struct vt_vm *vm, struct vt_vm_stats *s, GPtrArray *backends)
{
	const struct vt_host_config *h = vm->host;
	struct vt_ctier_measured meas[VT_CTIER_MAX] = { { 0 } };
	int local_copy[VT_CTIER_MAX];
	g_autofree struct vt_latency_hist *hist = g_new0(struct vt_latency_hist, VT_CTIER_MAX);
	gint64 now = g_get_monotonic_time();
	double secs = vm->window_end_us ? (double)(now - vm->window_end_us) / 1e6 : 0;

	if (vm->ctier_kind == VT_CTIER_HANDOFF) {
		for (unsigned int i = 0; backends && i < backends->len; i++)
			vt_backend_ctier_measure(g_ptr_array_index(backends, i), meas, hist,
						 h->nr_ctier);
		for (unsigned int i = 0; i < h->nr_ctier; i++)
			meas[i].fault_p50_ns = vt_latency_percentile(&hist[i], 50);
	}
	for (unsigned int i = 0; i < h->nr_ctier; i++)
		local_copy[i] = h->ctier[i].medium == VT_MEDIUM_REMOTE && h->remote[i].local_copy[0] ?
				 h->remote[i].local_tier : -1;
	vt_tier_model_build(&s->model, &vm->tiers, h->ctier, h->ctier_price, local_copy,
			    vm->ctier_kind == VT_CTIER_HANDOFF ? h->nr_ctier : 0, meas,
			    vm->ctier_kind == VT_CTIER_ZSWAP);
	s->model.nr = MIN(s->model.nr, vt_vm_nr_tiers(vm));
	for (unsigned int t = 0; t < s->model.nr; t++) {
		const struct vt_tier_model_entry *e = &s->model.t[t];
		uint64_t delta = e->faults - MIN(vm->ctier_faults_mark[t], e->faults);

		s->fault_ns_per_s[t] = e->compressed && secs > 0 ?
				       (double)delta * e->latency_ns / secs : 0;
		vm->ctier_faults_mark[t] = e->faults;
	}
	vm->window_end_us = now;
}

static void profile_figures(struct vt_vm *vm, struct vt_vm_stats *s, double threshold)
{
	if (!vm->phase.hot)
		vt_phase_init(&vm->phase);
	vt_phase_update(&vm->phase, vm->mtm, threshold);
	s->stable_windows = vm->phase.stable_windows;
	s->phase_changes = vm->phase.changes;
	memset(s->access_weight, 0, sizeof(s->access_weight));
	/* the other chunks' EMA is 0 */
	for (unsigned int k = 0; k < vm->mtm->active->len; k++) {
		const struct vt_mtm_chunk *c = &g_array_index(vm->mtm->chunks, struct vt_mtm_chunk,
			g_array_index(vm->mtm->active, unsigned int, k));

		if (c->tier >= 0 && c->tier < VT_MAX_TIERS)
			s->access_weight[c->tier] += c->ema * (double)(c->end - c->start);
	}
}

/*
 * policy.tiers: chunks on a tier the VM may no longer use move to the next
 * allowed tier below with room, else the nearest allowed one above, within
 * what is left of the window's budget (counted in @ws).
 */
static void evacuate(struct vt_vm *vm, uint64_t budget, uint64_t *room, GArray *orders,
		     struct vt_mtm_window_stats *ws)
{
	uint64_t used = 0;

	vt_mtm_mark_ordered(vm->mtm, orders);
	for (unsigned int i = 0; i < vm->mtm->chunks->len; i++) {
		const struct vt_mtm_chunk *c = &g_array_index(vm->mtm->chunks, struct vt_mtm_chunk, i);
		uint64_t len = c->end - c->start;
		int to = -1;

		if (c->tier < 0 || (vm->tiers_allowed >> c->tier) & 1 || vt_mtm_ordered(vm->mtm, i))
			continue;
		if (used + len > budget)
			break;
		for (int t = c->tier + 1; t < (int)vm->mtm->nr_tiers && to < 0; t++)
			if ((vm->tiers_allowed >> t) & 1 && room[t] >= len && !((c->refused >> t) & 1))
				to = t;
		for (int t = c->tier - 1; t >= 0 && to < 0; t--)
			if ((vm->tiers_allowed >> t) & 1 && room[t] >= len && !((c->refused >> t) & 1))
				to = t;
		if (to < 0)
			continue;
		g_array_append_val(orders, ((struct vt_mtm_order){
			.chunk = i, .from_tier = c->tier, .to_tier = to, .promote = to < c->tier }));
		room[to] -= len;
		used += len;
		if (to < c->tier)
			ws->promote_bytes += len;
		else
			ws->demote_bytes += len;
	}
}

/* placement=tco: the analytical model instead of MTM's moves (MTM still keeps the EMAs). */
static void decide_tco(struct vt_window *w, uint64_t *room)
{
	struct vt_vm *vm = w->vm;
	struct vt_vm_stats *s = w->s;
	struct vt_tco_params tp = {
		.alpha = vm->policy.tco_alpha,
		.allowance_bytes = w->mp.allowance_bytes,
		.budget_bytes = w->mp.budget_bytes,
		.nr_tiers = MIN(s->model.nr, vt_vm_nr_tiers(vm)),
	};
	struct vt_tco_window_stats ts;
	int ret;

	for (unsigned int t = 0; t < tp.nr_tiers; t++)
		tp.tier[t] = (struct vt_tco_tier){ s->model.t[t].usd_per_gib,
						   s->model.t[t].latency_ns, 0 };
	ret = vt_tco_decide(vm->mtm, &tp, room, w->orders, &ts);
	if (ret < 0) {
		g_snprintf(w->err, w->err_len, "placement=tco: %s", g_strerror(-ret));
		g_array_set_size(w->orders, 0);
	}
	s->tco = ts.sol;
	s->tco_misplaced_bytes = ts.misplaced_bytes;
	w->ws.promote_bytes = ts.promote_bytes;
	w->ws.demote_bytes = ts.demote_bytes;
}

/* placement=waterfall: MTM's orders, then cold chunks a tier down per age period. */
static void decide_waterfall(struct vt_window *w, uint64_t *room)
{
	struct vt_waterfall_params wp = {
		.age_windows = vt_placement_waterfall_age(w->vm),
		.first_ctier = w->vm->tiers.nr,
		.budget_bytes = w->mp.budget_bytes - MIN(w->mp.budget_bytes,
							 w->ws.promote_bytes + w->ws.demote_bytes),
	};

	if (wp.age_windows)
		w->ws.demote_bytes += vt_waterfall_decide(w->vm->mtm, &wp, room, w->orders);
}

/*
 * The placement algorithms by policy name (placement=), the way profilers are
 * found: each decides the window's orders after MTM's, from the tiers' @room.
 */
static const struct placement_algo {
	const char *name;	/* policy placement= (vt_placement_name) */
	bool migration_first;	/* the migration's orders before the algorithm's */
	void (*decide)(struct vt_window *w, uint64_t *room);
} placement_algos[] = {
	{ "waterfall", true, decide_waterfall },
	{ "tco", false, decide_tco },
};

/* The algorithm of policy placement=@name; the default (waterfall) for any other. */
static const struct placement_algo *placement_algo(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(placement_algos); i++)
		if (strcmp(placement_algos[i].name, name) == 0)
			return &placement_algos[i];
	return &placement_algos[0];
}

unsigned int vt_placement_waterfall_age(const struct vt_vm *vm)
{
	if (vm->policy.placement == VT_PLACEMENT_TCO || vm->ctier_kind == VT_CTIER_NONE)
		return 0;
	return vm->policy.ctier_age_windows;
}

unsigned int vt_placement_move_hold(const struct vt_window *w)
{
	unsigned int hold = w->vm->policy.move_hold;

	if (w->share.state == VT_VM_SHARE_GRANTED && w->share.hold > hold)
		return w->share.hold;
	return hold;
}

uint64_t vt_placement_dram_allowance(const struct vt_window *w)
{
	uint64_t policy = vt_vm_policy_dram_allowance(&w->vm->policy, w->vm->ram_bytes);

	switch (w->share.state) {
	case VT_VM_SHARE_GRANTED:
		return MIN(policy, w->share.granted);
	case VT_VM_SHARE_WAITING:
		return w->s->hist_window ? MIN(policy, w->s->tier[0].resident_bytes) : policy;
	case VT_VM_SHARE_OFF:
		break;
	}
	return policy;
}

void vt_placement_decide(struct vt_window *w)
{
	struct vt_vm *vm = w->vm;
	GPtrArray *backends = w->backends;
	struct vt_vm_stats *s = w->s;
	struct vt_mtm_params *mp = &w->mp;
	const bool granted = w->share.state == VT_VM_SHARE_GRANTED;
	GArray *orders = w->orders;
	struct vt_mtm_window_stats *ws = &w->ws;
	const struct placement_algo *algo = placement_algo(vt_placement_name(vm->policy.placement));
	struct vt_tiers *tiers = &vm->tiers;
	uint64_t room[VT_MTM_MAX_TIERS] = { 0 };

	vt_tiers_refresh(tiers);
	s->mems_allowed = mems_allowed(vm->pid);
	vt_placement_node_room(w, room);
	*mp = (struct vt_mtm_params){
		.allowance_bytes = vt_placement_dram_allowance(w),
		/* a host grant splits a bin by design and moves: MTM's rules for it (policy/mtm.h) */
		.fill_split_bin = granted,
		.no_swap_while_over = granted,
		.swap_margin = granted ? 1.0 / VT_MTM_BINS : 0,
		.move_hold = vt_placement_move_hold(w),
		.budget_bytes = vm->policy.budget_bytes,
		.hot_threshold = vm->policy.hot_threshold,
		.thrash_windows = vm->policy.thrash_windows,
		.thrash_step = vm->policy.thrash_step,
	};
	if (vm->ctier_kind == VT_CTIER_ZSWAP)
		room[tiers->nr] = UINT64_MAX / 4;	/* the kernel's swap limits apply */
	if (vm->ctier_kind == VT_CTIER_HANDOFF && backends->len)
		for (unsigned int t = tiers->nr; t < vt_vm_nr_tiers(vm); t++) {
			const struct vt_ctier_spec *cs = &vm->host->ctier[t - tiers->nr];

			/* a pool's cap is its capacity; without one, the compressed tier takes any */
			room[t] = cs->capacity_bytes ? cs->capacity_bytes : UINT64_MAX / 4;
		}
	for (unsigned int t = 0; t < VT_MTM_MAX_TIERS; t++)
		if (!((vm->tiers_allowed >> t) & 1))
			room[t] = 0;	/* policy tiers=: not this one */
	vt_mtm_decide(vm->mtm, mp, room, orders, ws);
	build_model(vm, s, backends);
	profile_figures(vm, s, ws->threshold);
	/*
	 * Live migration: an incoming VM's chunks to the tiers the source's
	 * profile names, before the waterfall would step them down one tier at
	 * a time; an outgoing one's chunks the migration faulted back, evicted
	 * again. (placement=tco starts its orders afresh: after it.)
	 */
	if (algo->migration_first)
		vt_migration_stage_place(w, room);
	algo->decide(w, room);
	if (!algo->migration_first)
		vt_migration_stage_place(w, room);
	if (vm->tiers_allowed != (1U << vt_vm_nr_tiers(vm)) - 1)
		evacuate(vm, mp->budget_bytes - MIN(mp->budget_bytes,
						    ws->promote_bytes + ws->demote_bytes),
			 room, orders, ws);
	vt_migration_stage_hold(w);
}
