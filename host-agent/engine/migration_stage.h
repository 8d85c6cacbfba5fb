/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The migration's part of a VM's window: the one file through which
 * migration/ enters the window. Its stage runs in the observe stage, after
 * the profiler's window, and writes the migration's state into the record
 * (w->precopy, w->outgoing); the placement stage takes the migration's
 * orders and holds at its own points through the two calls below, from what
 * the record says. Engine start (vt_migration_seed) is not a window.
 * Inline: it runs in every window, and vtier-bench agent's instruction
 * count per window may not grow.
 */
#ifndef VTIER_ENGINE_MIGRATION_STAGE_H
#define VTIER_ENGINE_MIGRATION_STAGE_H

#include <stdint.h>

#include "migration.h"
#include "vm.h"
#include "window.h"

/*
 * The stage: while an early hand-off's guest RAM still arrives the window is
 * the precopy's alone (vt_migration_precopy_window) and ends here; else
 * w->outgoing says whether the VM is migrating out.
 */
static inline enum vt_stage_result vt_migration_stage(struct vt_window *w)
{
	/* an early hand-off's RAM still arriving: placement from the profile alone */
	w->precopy = vt_migration_precopy_window(w->vm, w->backends, w->s);
	if (w->precopy)
		return VT_STAGE_END;
	/* the worker takes QEMU's migration events: the state holds for the window */
	w->outgoing = w->vm->migration.state == VT_MIGRATION_OUTGOING;
	return VT_STAGE_NEXT;
}
/* Before a window (between windows): whether its migration stage will end it as precopy. */
static inline bool vt_migration_stage_precopy_due(const struct vt_window *w)
{
	return vt_migration_precopy_due(w->backends, w->s);
}
/*
 * Placement, at its algorithm's point: the migration's orders (an incoming
 * VM's plan, an outgoing one's re-evictions) within what is left of the
 * window's budget, from the tiers' @room.
 */
static inline void vt_migration_stage_place(struct vt_window *w, uint64_t *room)
{
	vt_migration_place(w->vm, w->backends, room,
			   w->mp.budget_bytes - MIN(w->mp.budget_bytes,
						    w->ws.promote_bytes + w->ws.demote_bytes),
			   w->orders, &w->ws, w->s);
}
/* Placement, last: while w->outgoing, the window's promotions are dropped and counted. */
static inline void vt_migration_stage_hold(struct vt_window *w)
{
	if (w->outgoing)
		vt_migration_hold(w->vm, w->orders, w->s);
}
/* A window published (under the VM's lock): the backends' profiles are used up. */
static inline void vt_migration_stage_published(struct vt_vm *vm)
{
	vt_migration_window_done(vm);
}

#endif
