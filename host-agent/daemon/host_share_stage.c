// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The host-level stage of DRAM sharing (host_share_stage.h). A round reads
 * each VM's policy and published stats under its lock, runs
 * vt_host_share_round() (no I/O, O(VMs x bins)) and writes each grant under
 * the VM's lock: the main loop never waits. A VM takes part once it has a
 * placed window in mode auto; the others (just attached, mode off or
 * observe) wait: the budget the round divides is less what they hold on
 * DRAM, and their worker keeps them there (engine/placement.c).
 */
#include <string.h>

#include <errno.h>

#include "error_domain.h"
#include "host_share_stage.h"

/*
 * A VM's demand: its windows' histograms averaged, taken once per window
 * (rounds run more often than a loaded VM's windows). One window's
 * histogram moves with the CPU the guest got in it, the whole VM at once:
 * two VMs as hot as each other swapped the contested DRAM window after
 * window on the testbed (grants swung by 100 MiB, chunks moved 7 times).
 * The average is taken over the cumulative histogram (bytes at least as
 * hot as each bin, so the bins always sum to the VM's RAM) and rises faster
 * than it falls: a newest window hotter than the average weighs
 * 1/VT_VM_SHARE_DEMAND_RISE, a colder one 1/VT_VM_SHARE_DEMAND_FALL. A VM
 * whose hot set grows is seen within a few windows; a window in which it
 * got less CPU lowers its claim by an eighth of the gap, so the grants of
 * the others do not swing back and forth after it (the protected VM's hot
 * chunks moved 3 times in 10 checks with a symmetric 1/8 average).
 */
static bool take_demand(struct vt_vm_share *sh, const struct vt_vm_stats *s)
{
	uint64_t cum[VT_MTM_BINS + 1] = { 0 }, avg[VT_MTM_BINS + 1] = { 0 };

	if (sh->demand_window == s->hist_window)
		return false;
	if (!sh->demand_window) {
		memcpy(sh->demand, s->hist_bytes, sizeof(sh->demand));
		sh->demand_window = s->hist_window;
		return true;
	}
	for (int b = VT_MTM_BINS - 1; b >= 0; b--) {
		cum[b] = cum[b + 1] + s->hist_bytes[b];
		avg[b] = avg[b + 1] + sh->demand[b];
	}
	for (int b = VT_MTM_BINS - 1; b >= 0; b--) {
		if (cum[b] > avg[b])
			avg[b] += (cum[b] - avg[b] + VT_VM_SHARE_DEMAND_RISE - 1) /
				  VT_VM_SHARE_DEMAND_RISE;
		else
			avg[b] -= (avg[b] - cum[b]) / VT_VM_SHARE_DEMAND_FALL;
		/* the bins of the hotter ones moved on their own: keep it monotone */
		avg[b] = MAX(avg[b], avg[b + 1]);
	}
	for (unsigned int b = 0; b < VT_MTM_BINS; b++)
		sh->demand[b] = avg[b] - avg[b + 1];
	sh->demand_window = s->hist_window;
	return true;
}

/*
 * The round frees a shrinking VM's bytes at once, but its worker demotes
 * them a window's budget at a time, often after the others promote (a
 * loaded VM's window outlasts the round's second): the VMs held 260 MiB
 * of a 256 MiB budget on the testbed. Growth above what a VM holds is cut
 * until the VMs' DRAM, held or granted, fits the budget: a growing VM
 * waits for the bytes the others release, not those they are told to.
 * What a VM holds is the most of its published DRAM (a window old), the
 * grants its worker took at its last two windows' starts, and its last
 * grant: its DRAM may be on its way to any of them (a VM still promoting
 * to a grant since lowered held 4 MiB over the budget with the published
 * bytes alone).
 */
static uint64_t held_bytes(const struct vt_vm *vm)
{
	const struct vt_vm_share *sh = &vm->share;
	uint64_t h = MAX(vm->stats.tier[0].resident_bytes, MAX(sh->applied, sh->applied_before));

	return sh->state == VT_VM_SHARE_GRANTED ? MAX(h, sh->granted) : h;
}

static void wait_for_held(struct vt_share_out *out, const uint64_t *held, unsigned int k,
			  uint64_t budget)
{
	uint64_t sum = 0, growth = 0, over;

	for (unsigned int i = 0; i < k; i++) {
		sum += MAX(out[i].allot, held[i]);
		growth += out[i].allot > held[i] ? out[i].allot - held[i] : 0;
	}
	if (sum <= budget || !growth)
		return;
	over = MIN(sum - budget, growth);
	for (unsigned int i = 0; i < k; i++) {
		uint64_t g = out[i].allot > held[i] ? out[i].allot - held[i] : 0, cut;

		if (!g)
			continue;
		/* in proportion to the growth, rounded up: the sum comes under the budget */
		cut = MIN(g, (uint64_t)(((unsigned __int128)over * g + growth - 1) / growth));
		out[i].allot -= cut;
		out[i].why = VT_SHARE_RATE_LIMITED;
	}
}

static gboolean round_cb(gpointer data)
{
	vt_host_share_round_now(data);
	return G_SOURCE_CONTINUE;
}

void vt_host_share_start(struct vt_host_share_stage *st)
{
	const struct vt_host_share_config *c = st->cfg;

	if (!c->on || st->timer)
		return;
	vt_registry_log(st->reg, G_LOG_LEVEL_MESSAGE, NULL, "host DRAM sharing: %" G_GUINT64_FORMAT
		      " MiB for the VMs, at most %" G_GUINT64_FORMAT " MiB of change per VM a "
		      "second, none under %" G_GUINT64_FORMAT " MiB", c->budget >> 20,
		      c->step >> 20, c->deadband >> 20);
	st->timer = g_timeout_add(VT_HOST_SHARE_PERIOD_MS, round_cb, st);
}

void vt_host_share_stop(struct vt_host_share_stage *st)
{
	if (st->timer)
		g_source_remove(st->timer);
	st->timer = 0;
}

/* The VMs in a stable order (their serials): homes are chosen in it. */
static gint by_serial(gconstpointer a, gconstpointer b)
{
	const struct vt_vm *x = a, *y = b;

	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static GList *vms_sorted(struct vt_host_share_stage *st)
{
	return g_list_sort(g_hash_table_get_values(st->vms), by_serial);
}

/* Index of @node among the config's per-node budgets, or -1. */
static int budget_index(const struct vt_host_share_config *c, int node)
{
	for (unsigned int i = 0; i < c->nr_nodes; i++)
		if (c->node[i] == node)
			return (int)i;
	return -1;
}

/* The DRAM a VM may use, as homing weighs it: what it holds, else its dram_max or RAM. */
static uint64_t claim_bytes(const struct vt_vm *vm)
{
	return MAX(held_bytes(vm), vt_vm_policy_dram_allowance(&vm->policy, vm->ram_bytes));
}

/*
 * A VM's home among the per-node budgets (called under its lock): of the
 * budgeted nodes of its DRAM tier within its cpuset's mems, the one whose
 * budget the VM's claim with those of the VMs homed there (@load, per
 * budget index) fills least (the lowest node on a tie). -1 when none of its
 * nodes has a budget.
 */
static int choose_home(const struct vt_host_share_config *c, const struct vt_vm *vm,
		       const uint64_t *load)
{
	uint64_t mask = vt_tiers_node_mask(&vm->tiers, 0), claim = claim_bytes(vm);
	int best = -1;

	if (vm->stats.mems_allowed)
		mask &= vm->stats.mems_allowed;
	for (unsigned int i = 0; i < c->nr_nodes; i++) {
		unsigned __int128 mine, theirs;

		if (!(mask & (1ULL << c->node[i])))
			continue;
		if (best < 0) {
			best = (int)i;
			continue;
		}
		/* (load + claim) / budget, compared without dividing */
		mine = (unsigned __int128)(load[i] + claim) * c->node_budget[best];
		theirs = (unsigned __int128)(load[best] + claim) * c->node_budget[i];
		if (mine < theirs || (mine == theirs && c->node[i] < c->node[best]))
			best = (int)i;
	}
	return best;
}

/*
 * Per-node budgets: each VM not homed yet (or homed where its cpuset no
 * longer allows) gets its home, in serial order, each one's DRAM added to
 * its node's load as it is placed.
 */
static void home_vms(struct vt_host_share_stage *st, GList *list)
{
	const struct vt_host_share_config *c = st->cfg;
	uint64_t load[VT_MAX_NODES] = { 0 };

	for (GList *l = list; l; l = l->next) {
		struct vt_vm *vm = l->data;
		int i;

		g_mutex_lock(&vm->lock);
		i = vm->share.homed ? budget_index(c, vm->share.node) : -1;
		if (i >= 0 && vm->stats.mems_allowed &&
		    !(vm->stats.mems_allowed & (1ULL << vm->share.node))) {
			vt_registry_log(st->reg, G_LOG_LEVEL_MESSAGE, vm->name, "host DRAM sharing: "
					"node %d left the VM's cpuset: choosing its DRAM node again",
					vm->share.node);
			vm->share.homed = false;
			i = -1;
		}
		if (i >= 0)
			load[i] += claim_bytes(vm);
		g_mutex_unlock(&vm->lock);
	}
	for (GList *l = list; l; l = l->next) {
		struct vt_vm *vm = l->data;
		struct vt_vm_share *sh = &vm->share;
		int i;

		g_mutex_lock(&vm->lock);
		if (!sh->homed) {
			i = choose_home(c, vm, load);
			if (i >= 0) {
				sh->homed = true;
				sh->node = c->node[i];
				sh->unhomed_logged = false;
				load[i] += claim_bytes(vm);
				vt_registry_log(st->reg, G_LOG_LEVEL_MESSAGE, vm->name, "host DRAM "
						"sharing: its DRAM counts against node %d's budget "
						"(%" G_GUINT64_FORMAT " MiB); promotions go to node %d",
						sh->node, c->node_budget[i] >> 20, sh->node);
			} else if (!sh->unhomed_logged) {
				sh->unhomed_logged = true;
				vt_registry_log(st->reg, G_LOG_LEVEL_WARNING, vm->name, "host DRAM "
						"sharing: none of the VM's DRAM nodes (within its cpuset) "
						"has a budget in [host] dram_budget: its policy alone "
						"decides its DRAM");
			}
		}
		if (!sh->homed) {
			sh->state = VT_VM_SHARE_OFF;
			sh->demand_window = 0;
		}
		g_mutex_unlock(&vm->lock);
	}
}

/*
 * One budget's round over the VMs whose DRAM counts against it: all of
 * them for the host's budget (@node -1), those homed on @node for a node's.
 */
static void round_budget(struct vt_host_share_stage *st, GList *list, int node, uint64_t budget,
			 struct vt_share_round *info, uint64_t *waiting_out)
{
	const struct vt_host_share_config *c = st->cfg;
	unsigned int n = g_list_length(list), k = 0;
	g_autofree struct vt_share_vm *in = g_new0(struct vt_share_vm, n ? n : 1);
	g_autofree struct vt_share_out *out = g_new0(struct vt_share_out, n ? n : 1);
	g_autofree struct vt_vm **who = g_new0(struct vt_vm *, n ? n : 1);
	g_autofree uint64_t *held = g_new0(uint64_t, n ? n : 1);
	g_autofree bool *fresh = g_new0(bool, n ? n : 1);
	struct vt_share_params p = { .budget = budget, .step = c->step,
				     .deadband = c->deadband, .hold = c->hold };
	uint64_t waiting = 0;

	for (GList *l = list; l; l = l->next) {
		struct vt_vm *vm = l->data;
		struct vt_vm_share *sh = &vm->share;
		uint64_t dram;

		g_mutex_lock(&vm->lock);
		if (node >= 0 && (!sh->homed || sh->node != node)) {
			g_mutex_unlock(&vm->lock);
			continue;
		}
		dram = vm->stats.tier[0].resident_bytes;
		if (vm->policy.mode != VT_MODE_AUTO || !vm->stats.hist_window) {
			sh->state = VT_VM_SHARE_WAITING;
			sh->granted = sh->wanted = dram;
			sh->protected_bytes = 0;
			sh->demand_window = 0;
			waiting += dram;
		} else {
			fresh[k] = take_demand(sh, &vm->stats);
			in[k] = (struct vt_share_vm){
				.id = vm->serial, .name = vm->name,
				.dram_min = vm->policy.dram_min_bytes,
				.dram_max = vt_vm_policy_dram_allowance(&vm->policy, vm->ram_bytes),
				.weight = vm->policy.weight, .ram_bytes = vm->ram_bytes,
				/* a VM new to the rounds changes from what it holds */
				.prev = sh->state == VT_VM_SHARE_GRANTED ? sh->granted : dram,
				.last_change = sh->state == VT_VM_SHARE_GRANTED ? sh->last_change : 0,
				.since_change = sh->windows_since_change,
			};
			memcpy(in[k].hist_bytes, sh->demand, sizeof(in[k].hist_bytes));
			held[k] = held_bytes(vm);
			who[k++] = vm;
		}
		g_mutex_unlock(&vm->lock);
	}
	p.budget = waiting < p.budget ? p.budget - waiting : 0;
	*waiting_out = waiting;
	if (vt_host_share_round(&p, in, k, out, info) < 0)
		return;
	wait_for_held(out, held, k, p.budget);
	info->sum = 0;
	for (unsigned int i = 0; i < k; i++) {
		struct vt_vm_share *sh = &who[i]->share;

		info->sum += out[i].allot;
		g_mutex_lock(&who[i]->lock);
		if (sh->state == VT_VM_SHARE_GRANTED && out[i].allot != sh->granted) {
			sh->last_change = out[i].allot > sh->granted ? 1 : -1;
			sh->windows_since_change = 0;
		} else if (fresh[i] && sh->windows_since_change < UINT32_MAX) {
			/* the hold counts the VM's windows: a loaded VM's outlast a round */
			sh->windows_since_change++;
		}
		sh->state = VT_VM_SHARE_GRANTED;
		sh->granted = out[i].allot;
		sh->wanted = out[i].wanted;
		sh->protected_bytes = out[i].protected_bytes;
		sh->why = (int)out[i].why;
		sh->hold = p.hold;
		sh->rounds++;
		g_mutex_unlock(&who[i]->lock);
	}
}

void vt_host_share_round_now(struct vt_host_share_stage *st)
{
	const struct vt_host_share_config *c = st->cfg;
	g_autoptr(GList) list = NULL;
	struct vt_share_round sum = { 0 };
	uint64_t waiting = 0;

	if (!c->on)
		return;
	list = vms_sorted(st);
	if (!c->nr_nodes) {
		round_budget(st, list, -1, c->budget, &sum, &waiting);
	} else {
		home_vms(st, list);
		for (unsigned int i = 0; i < c->nr_nodes; i++) {
			struct vt_share_round info = { 0 };
			uint64_t w = 0;

			round_budget(st, list, c->node[i], c->node_budget[i], &info, &w);
			st->node_last[i] = info;
			st->node_waiting[i] = w;
			sum.sum += info.sum;
			sum.mins_sum += info.mins_sum;
			sum.mins_scaled |= info.mins_scaled;
			waiting += w;
		}
	}
	st->rounds++;
	st->last = sum;
	st->waiting = waiting;
}

bool vt_host_share_check_policy(struct vt_host_share_stage *st, struct vt_vm *vm,
				const struct vt_vm_policy *policy, GError **error)
{
	const struct vt_host_share_config *c = st->cfg;
	g_autoptr(GList) list = NULL;
	g_autofree struct vt_share_vm *in = NULL;
	uint64_t budget = c->budget, load[VT_MAX_NODES] = { 0 };
	unsigned int n, k = 0;
	int node = -1;
	char err[512];

	if (!c->on)
		return true;
	list = vms_sorted(st);
	n = g_list_length(list);
	in = g_new0(struct vt_share_vm, n + 1);
	if (c->nr_nodes) {
		int i;

		/* the node whose budget @vm's min would count against */
		for (GList *l = list; l; l = l->next) {
			struct vt_vm *o = l->data;

			if (o == vm)
				continue;
			g_mutex_lock(&o->lock);
			i = o->share.homed ? budget_index(c, o->share.node) : -1;
			if (i >= 0)
				load[i] += claim_bytes(o);
			g_mutex_unlock(&o->lock);
		}
		g_mutex_lock(&vm->lock);
		i = vm->share.homed ? budget_index(c, vm->share.node) : choose_home(c, vm, load);
		g_mutex_unlock(&vm->lock);
		if (i < 0)
			return true;	/* no budget of its nodes: its policy alone */
		node = c->node[i];
		budget = c->node_budget[i];
	}
	for (GList *l = list; l; l = l->next) {
		struct vt_vm *o = l->data;

		if (o == vm)
			continue;
		g_mutex_lock(&o->lock);
		if (node < 0 || (o->share.homed && o->share.node == node))
			in[k++] = (struct vt_share_vm){ .id = o->serial, .name = o->name,
							.dram_min = o->policy.dram_min_bytes };
		g_mutex_unlock(&o->lock);
	}
	in[k++] = (struct vt_share_vm){ .id = vm->serial, .name = vm->name,
					.dram_min = policy->dram_min_bytes };
	if (vt_host_share_check_mins(budget, node, in, k, err, sizeof(err)) == 0)
		return true;
	/* @err names the key already: it reaches QEMU's 127-byte policy-message too */
	g_set_error(error, VT_CORE_ERROR, ERANGE, "%s", err);
	return false;
}
