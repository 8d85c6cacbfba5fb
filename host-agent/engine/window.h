/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One VM's window as a record of values that engine.c passes through its
 * fixed list of stages, each reading what the stages before it wrote:
 *   observe    -> precopy (the window ends there), outgoing (the migration's
 *                 stage, after the profiler's window), regions (the
 *                 profiler's snapshot, in QEMU's hva)
 *   residency  -> movers_busy (the movers' backlog, read once), residency
 *   hints      (the guest channel's discards and COLD ages, by cold_age)
 *   placement  -> mp, orders, ws (vt_placement_decide; the migration's
 *                 orders and holds through migration_stage.h; the DRAM
 *                 allowance capped by share, the host's grant read before
 *                 the stages)
 *   apply      -> the orders' outcome, in s
 * s is the window's copy of the VM's stats, published at the window's end.
 */
#ifndef VTIER_ENGINE_WINDOW_H
#define VTIER_ENGINE_WINDOW_H

#include <stdbool.h>
#include <stddef.h>

#include <glib.h>

#include "mtm.h"
#include "vm.h"

/* What a stage tells the window: go on, end the window here (fine), or the VM must go. */
enum vt_stage_result {
	VT_STAGE_NEXT,
	VT_STAGE_END,
	VT_STAGE_FAIL,
};

struct vt_window {
	struct vt_vm *vm;
	GPtrArray *backends;		/* the VM's hand-offs, referenced for the window */
	struct vt_vm_stats *s;		/* the window's stats (the worker's copy) */
	bool precopy;			/* migration: an early hand-off's RAM arrives: */
					/* ... the window is the precopy's alone */
	bool outgoing;			/* migration: the VM migrates out (promotions held) */
	GArray *regions;		/* observe: struct vt_mtm_region, in QEMU's hva */
	bool movers_busy;		/* residency: a mover had orders queued before it */
	unsigned int cold_age;		/* hints: the waterfall's age (placement's rule, */
					/* ... read before the stages; 0: no waterfall) */
	struct vt_vm_share share;	/* the host's DRAM sharing, as the window began */
	/* placement: per NUMA tier, the nodes its moves may target (its nodes */
	/* ... within QEMU's cpuset; DRAM: the home node of a per-node budget) */
	uint64_t node_mask[VT_MAX_TIERS];
	struct vt_mtm_params mp;	/* placement: this window's MTM parameters */
	struct vt_mtm_window_stats ws;	/* ... and what MTM decided */
	GArray *orders;			/* placement: struct vt_mtm_order, in move order */
	char *err;			/* why the window failed or did less ("" if not) */
	size_t err_len;
};

#endif
