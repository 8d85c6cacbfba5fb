/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The migration's part of a VM's window (engine/migration_stage.c): the one
 * file through which migration/ enters the window. Its stage runs after the
 * profiler's window and writes the migration's state into the record
 * (w->precopy, w->outgoing); the placement stage takes the migration's
 * orders and holds at its own points through the two calls below, from what
 * the record says. Engine start (vt_migration_seed) is not a window.
 */
#ifndef VTIER_ENGINE_MIGRATION_STAGE_H
#define VTIER_ENGINE_MIGRATION_STAGE_H

#include <stdint.h>

#include "window.h"

/*
 * The stage: while an early hand-off's guest RAM still arrives the window is
 * the precopy's alone (vt_migration_precopy_window) and ends here; else
 * w->outgoing says whether the VM is migrating out.
 */
enum vt_stage_result vt_migration_stage(struct vt_window *w);
/* Before a window (between windows): whether its migration stage will end it as precopy. */
bool vt_migration_stage_precopy_due(const struct vt_window *w);
/*
 * Placement, at its algorithm's point: the migration's orders (an incoming
 * VM's plan, an outgoing one's re-evictions) within what is left of the
 * window's budget, from the tiers' @room.
 */
void vt_migration_stage_place(struct vt_window *w, uint64_t *room);
/* Placement, last: while w->outgoing, the window's promotions are dropped and counted. */
void vt_migration_stage_hold(struct vt_window *w);
/* A window published (under the VM's lock): the backends' profiles are used up. */
void vt_migration_stage_published(struct vt_vm *vm);

#endif
