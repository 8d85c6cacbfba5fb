// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A VM's last window as reports carry it: the memory TCO report (for the
 * control socket and for QEMU's STATS), and the VM's migration as the STATS
 * migration block shows it. Each reads the VM under its lock.
 */
#include <errno.h>
#include <string.h>

#include "vm.h"

/*
 * What the report is computed from: a copy under the lock (taken by the caller),
 * so that the arithmetic needs none.
 */
static void report_input(struct vt_vm *vm, struct vt_tco_report_input *in)
{
	g_strlcpy(in->name, vm->name, sizeof(in->name));
	in->placement = vt_placement_name(vm->policy.placement);
	in->tco_alpha = vm->policy.tco_alpha;
	in->windows = vm->stats.windows;
	in->model = vm->stats.model;
	vt_vm_tier_bytes(vm, &vm->stats, in->bytes);
	memcpy(in->access_weight, vm->stats.access_weight, sizeof(in->access_weight));
	memcpy(in->fault_ns_per_s, vm->stats.fault_ns_per_s, sizeof(in->fault_ns_per_s));
	in->hot_bytes = (uint64_t)vm->stats.hot_chunks * vm->policy.chunk_bytes;
	in->stable_windows = vm->stats.stable_windows;
	in->phase_changes = vm->stats.phase_changes;
	in->history = vm->tco_history;
}

void vt_vm_report_to_json(struct vt_vm *vm, JsonBuilder *b)
{
	g_autofree struct vt_tco_report_input *in = g_new0(struct vt_tco_report_input, 1);
	struct vt_tco_report r;

	g_mutex_lock(&vm->lock);
	report_input(vm, in);
	g_mutex_unlock(&vm->lock);
	vt_tco_report_compute(in, &r);
	vt_tco_report_to_json(in, &r, b);
}

int vt_vm_report_to_wire(struct vt_vm *vm, struct vtier_handoff_tco *tco,
			 struct vtier_handoff_tco_tier *tiers)
{
	g_autofree struct vt_tco_report_input *in = g_new0(struct vt_tco_report_input, 1);
	struct vt_tco_report r;

	/* never wait for a worker that holds the lock (restarting its engine) */
	if (!g_mutex_trylock(&vm->lock))
		return -EBUSY;
	report_input(vm, in);
	g_mutex_unlock(&vm->lock);
	if (!in->windows)
		return -ENODATA;
	vt_tco_report_compute(in, &r);
	vt_tco_report_to_wire(in, &r, tco, tiers);
	return 0;
}

enum vtier_migration_state vt_migration_view(const struct vt_vm *vm)
{
	if (vm->migration.state == VT_MIGRATION_OUTGOING)
		return VTIER_MIGRATION_STATE_OUTGOING;
	return vm->stats.migration.plan_chunks ? VTIER_MIGRATION_STATE_PLACING :
						 VTIER_MIGRATION_STATE_NONE;
}

const char *vt_migration_view_name(enum vtier_migration_state state)
{
	return state == VTIER_MIGRATION_STATE_OUTGOING ? "outgoing" :
	       state == VTIER_MIGRATION_STATE_PLACING ? "placing" : "none";
}

int vt_migration_to_wire(struct vt_vm *vm, struct vtier_handoff_migration_stats *out)
{
	const struct vt_migration_stats *s = &vm->stats.migration;

	if (!g_mutex_trylock(&vm->lock))
		return -EBUSY;
	*out = (struct vtier_handoff_migration_stats){
		.state = vt_migration_view(vm),
		.started = s->started,
		/* one count per ended migration: never more than started */
		.completed = MIN(s->completed, s->started),
		.failed = MIN(s->failed, s->started - MIN(s->completed, s->started)),
		.extra_bytes = s->extra_bytes,
		.extra_peak_bytes = s->extra_peak_bytes,
		.extra_bound_bytes = vm->policy.migration_extra_bytes,
		.promotions_held = s->promotions_held,
		.profiles_seeded = s->profiles_seeded,
		.profiles_refused = s->profiles_refused,
		.plan_chunks = s->plan_chunks,
	};
	g_mutex_unlock(&vm->lock);
	return 0;
}
