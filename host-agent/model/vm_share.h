/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A VM's part in the host's DRAM sharing (docs/host-share.md): what the
 * host-level stage (daemon/host_share_stage.c) gave it in its last round
 * and why. Written by the main loop under the VM's lock; the VM's worker
 * reads `on` and `granted` at a window's start and caps its DRAM allowance
 * by them. The demand the round reads is the VM's published stats
 * (hist_bytes of its last placed window).
 */
#ifndef VTIER_MODEL_VM_SHARE_H
#define VTIER_MODEL_VM_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "mtm.h"

enum vt_vm_share_state {
	VT_VM_SHARE_OFF = 0,		/* no host budget: the VM's policy alone */
	VT_VM_SHARE_WAITING,		/* not in a round yet (no placed window, or mode off */
					/* ... or observe): held at what it has on DRAM */
	VT_VM_SHARE_GRANTED,		/* in the last round: granted */
};

struct vt_vm_share {
	enum vt_vm_share_state state;
	uint64_t granted;		/* DRAM bytes the VM may hold (GRANTED) */
	uint64_t wanted;		/* ... before the rate limit */
	uint64_t protected_bytes;	/* its dram_min as the round held it */
	int why;			/* enum vt_share_why (policy/host_share.h) */
	/*
	 * The grant the VM's worker took at its last window's start, and at the
	 * one before (0: none): its DRAM may be moving toward either while the
	 * published resident bytes are a window old. Written by the worker.
	 */
	uint64_t applied;
	uint64_t applied_before;
	/* the rounds' hold on reversals: its last change (-1 down, +1 up, 0 none), windows since */
	int last_change;
	uint32_t windows_since_change;
	/* the host's share_hold (windows): a chunk the VM moved stays as long (mtm.h move_hold) */
	uint32_t hold;
	uint64_t rounds;		/* rounds the VM took part in */
	/*
	 * Per-node budgets: the DRAM node whose budget the VM's DRAM counts
	 * against and where its worker promotes (homed), chosen once among the
	 * budgeted nodes of its DRAM tier that its cpuset allows. Not homed
	 * with per-node budgets: none of its nodes has one (state OFF).
	 */
	bool homed;
	int node;
	bool unhomed_logged;
	/*
	 * The demand the rounds read: the VM's published histograms averaged
	 * over its windows (faster up than down: VT_VM_SHARE_DEMAND_RISE,
	 * _FALL), and the stats' hist_window it last took in (0: none, start
	 * afresh).
	 */
	uint64_t demand[VT_MTM_BINS];
	uint64_t demand_window;
};

/*
 * The weight of a VM's newest window in its demand, on the cumulative
 * histogram: 1/2 where it is hotter than the average (a growing hot set is
 * claimed within ~4 windows), 1/8 where it is colder (about 8 windows of
 * memory before a cooled VM's DRAM goes to others).
 */
#define VT_VM_SHARE_DEMAND_RISE 2
#define VT_VM_SHARE_DEMAND_FALL 8

#endif
