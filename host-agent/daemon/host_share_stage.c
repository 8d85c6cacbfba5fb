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

void vt_host_share_round_now(struct vt_host_share_stage *st)
{
	const struct vt_host_share_config *c = st->cfg;
	g_autoptr(GList) list = g_hash_table_get_values(st->vms);
	unsigned int n = g_list_length(list), k = 0;
	g_autofree struct vt_share_vm *in = g_new0(struct vt_share_vm, n ? n : 1);
	g_autofree struct vt_share_out *out = g_new0(struct vt_share_out, n ? n : 1);
	g_autofree struct vt_vm **who = g_new0(struct vt_vm *, n ? n : 1);
	g_autofree uint64_t *held = g_new0(uint64_t, n ? n : 1);
	g_autofree bool *fresh = g_new0(bool, n ? n : 1);
	struct vt_share_params p = { .budget = c->budget, .step = c->step,
				     .deadband = c->deadband, .hold = c->hold };
	struct vt_share_round info;
	uint64_t waiting = 0;

	if (!c->on)
		return;
	for (GList *l = list; l; l = l->next) {
		struct vt_vm *vm = l->data;
		struct vt_vm_share *sh = &vm->share;
		uint64_t dram;

		g_mutex_lock(&vm->lock);
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
	if (vt_host_share_round(&p, in, k, out, &info) < 0)
		return;
	wait_for_held(out, held, k, p.budget);
	for (unsigned int i = 0; i < k; i++) {
		struct vt_vm_share *sh = &who[i]->share;

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
	st->rounds++;
	st->last = info;
	st->waiting = waiting;
}

bool vt_host_share_check_policy(struct vt_host_share_stage *st, struct vt_vm *vm,
				const struct vt_vm_policy *policy, GError **error)
{
	g_autoptr(GList) list = NULL;
	g_autofree struct vt_share_vm *in = NULL;
	unsigned int n, k = 0;
	char err[512];

	if (!st->cfg->on)
		return true;
	list = g_hash_table_get_values(st->vms);
	n = g_list_length(list);
	in = g_new0(struct vt_share_vm, n + 1);
	for (GList *l = list; l; l = l->next) {
		struct vt_vm *o = l->data;

		if (o == vm)
			continue;
		g_mutex_lock(&o->lock);
		in[k++] = (struct vt_share_vm){ .id = o->serial, .name = o->name,
						.dram_min = o->policy.dram_min_bytes };
		g_mutex_unlock(&o->lock);
	}
	in[k++] = (struct vt_share_vm){ .id = vm->serial, .name = vm->name,
					.dram_min = policy->dram_min_bytes };
	if (vt_host_share_check_mins(st->cfg->budget, in, k, err, sizeof(err)) == 0)
		return true;
	/* @err names the key already: it reaches QEMU's 127-byte policy-message too */
	g_set_error(error, VT_CORE_ERROR, ERANGE, "%s", err);
	return false;
}
