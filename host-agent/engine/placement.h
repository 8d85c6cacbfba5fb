/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engine's policy stage (engine/placement.c): after the residency, before
 * the movers.
 */
#ifndef VTIER_CORE_PLACEMENT_H
#define VTIER_CORE_PLACEMENT_H

#include <stddef.h>

#include <glib.h>

#include "mtm.h"
#include "vm.h"
#include "window.h"

/*
 * The waterfall's age (ctier_age_windows) when this VM's placement runs the
 * waterfall (placement=waterfall with a compressed tier), else 0: what a
 * guest's COLD hint can bring forward (engine/hint_stage.c).
 */
unsigned int vt_placement_waterfall_age(const struct vt_vm *vm);

/*
 * The DRAM the VM may hold this window: its policy's allowance (dram_share,
 * dram_max), capped by the host's sharing as the window began: what the
 * last round granted; while the VM waits for its first round, what it held
 * on DRAM at its last placed window (it neither grows nor is emptied). No
 * cap before that first window, or with no host budget.
 */
uint64_t vt_placement_dram_allowance(const struct vt_window *w);
/*
 * Each NUMA tier's nodes the window's moves may target (w->node_mask) and the
 * room on them (@room, less a reserve), from the last refresh's free bytes:
 * the tier's nodes within QEMU's cpuset (w->s->mems_allowed; move_pages(2)
 * refuses the others: none of them, no room), DRAM's narrowed to the VM's
 * home node under a per-node host budget (its grant is that node's).
 */
void vt_placement_node_room(struct vt_window *w, uint64_t *room);
/*
 * The windows a chunk moved on or off the fastest tier stays (policy/mtm.h
 * move_hold): the policy's move_hold, or under a host grant the host's
 * share_hold when longer.
 */
unsigned int vt_placement_move_hold(const struct vt_window *w);

/*
 * Decide @w's orders for the VM's placement policy; w->mp gets the MTM
 * parameters the orders are committed with, w->ws MTM's window figures (for
 * placement=tco, its promote and demote bytes), w->s the tier model and the
 * TCO report's figures. The migration's orders and, while w->outgoing, its
 * holds are taken through migration_stage.h. A failed model leaves the
 * orders empty and w->err set.
 */
void vt_placement_decide(struct vt_window *w);

#endif
