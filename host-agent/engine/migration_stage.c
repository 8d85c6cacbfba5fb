// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The migration's part of a VM's window: see migration_stage.h. The engine's
 * only way into migration/ during a window.
 */
#include "migration.h"
#include "migration_stage.h"
#include "vm.h"

enum vt_stage_result vt_migration_stage(struct vt_window *w)
{
	/* an early hand-off's RAM still arriving: placement from the profile alone */
	w->precopy = vt_migration_precopy_window(w->vm, w->backends, w->s);
	if (w->precopy)
		return VT_STAGE_END;
	/* the worker takes QEMU's migration events: the state holds for the window */
	w->outgoing = w->vm->migration.state == VT_MIGRATION_OUTGOING;
	return VT_STAGE_NEXT;
}

bool vt_migration_stage_precopy_due(const struct vt_window *w)
{
	return vt_migration_precopy_due(w->backends, w->s);
}

void vt_migration_stage_place(struct vt_window *w, uint64_t *room)
{
	vt_migration_place(w->vm, w->backends, room,
			   w->mp.budget_bytes - MIN(w->mp.budget_bytes,
						    w->ws.promote_bytes + w->ws.demote_bytes),
			   w->orders, &w->ws, w->s);
}

void vt_migration_stage_hold(struct vt_window *w)
{
	if (w->outgoing)
		vt_migration_hold(w->vm, w->orders, w->s);
}

void vt_migration_stage_published(struct vt_vm *vm)
{
	vt_migration_window_done(vm);
}
