/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Host-wide DRAM arbitration: one host budget of DRAM divided between VMs by
 * the benefit of each byte, in the memcg spirit (docs/host-share.md).
 *
 * A round (once per host window, per budget: one per DRAM node or one per
 * host, the caller's choice) is a pure function over plain arrays:
 *   1. min first: each VM gets min(dram_min, the bytes it uses, its cap);
 *   2. the rest to the hottest bytes across all VMs, bin by bin of the MTM
 *      hotness histogram (the same scale for every VM), a contested bin
 *      divided in proportion to weight (water-filling), never above the cap;
 *   3. the rate limit from the previous allotment: at most @step of change
 *      per VM, no change smaller than @deadband, no reversal of the last
 *      change within @hold rounds, never below the protected
 *      min once held, and the sum never above the budget (a VM that grows
 *      waits for the bytes a slowly shrinking one still holds).
 * Deterministic (ties broken by id), no state, no I/O: several threads may
 * run rounds at once. Cost O(VMs x BINS + VMs log VMs), one allocation.
 */
#ifndef VTIER_POLICY_HOST_SHARE_H
#define VTIER_POLICY_HOST_SHARE_H

#include <stddef.h>
#include <stdint.h>

#include "mtm.h"

#define VT_SHARE_WEIGHT_MIN 1
#define VT_SHARE_WEIGHT_MAX 10000
#define VT_SHARE_WEIGHT_DEFAULT 100

/* One VM as the round sees it. */
struct vt_share_vm {
	uint64_t id;			/* stable across rounds; breaks ties */
	const char *name;		/* for messages only (NULL: the id) */
	uint64_t dram_min;		/* protected while used (0: none) */
	uint64_t dram_max;		/* cap (0: the VM's RAM) */
	uint32_t weight;		/* 1..10000 (0 is read as the default, 100) */
	uint64_t ram_bytes;
	/* bytes per hotness bin: struct vt_mtm_window_stats.hist_bytes */
	uint64_t hist_bytes[VT_MTM_BINS];
	uint64_t prev;			/* last round's allotment (0: new this round) */
	int last_change;		/* of its allotment: -1 lowered, +1 raised, 0 none */
	uint32_t since_change;		/* rounds with new demand since that change (the
					   caller's count: vtierd counts the VM's windows) */
};

struct vt_share_params {
	uint64_t budget;		/* DRAM bytes the VMs may be given in all */
	uint64_t step;			/* most change of one VM's allotment per round */
	uint64_t deadband;		/* a change smaller than this is not made */
	uint32_t hold;			/* since_change a VM's change is not reversed
					   (0: none) */
};

enum vt_share_why {
	VT_SHARE_EARNED = 0,		/* by its hot bins */
	VT_SHARE_PROTECTED,		/* held at its dram_min */
	VT_SHARE_CAPPED,		/* at its dram_max (or RAM), wanted more */
	VT_SHARE_RATE_LIMITED,		/* wanted more or less: the step, the dead band or
					   the budget (bytes still held by others) held it */
};

struct vt_share_out {
	uint64_t allot;			/* DRAM bytes the VM may use this round */
	uint64_t wanted;		/* before the rate limit */
	uint64_t protected_bytes;	/* its min this round: min(dram_min, used, cap), scaled */
	enum vt_share_why why;
};

struct vt_share_round {
	uint64_t sum;			/* of the allotments: <= budget */
	uint64_t mins_sum;		/* of the protected bytes before any scaling */
	int mins_scaled;		/* the mins did not fit the budget: scaled down */
};

/*
 * One round over @n VMs into @out[n] (@info may be NULL). 0, or -EINVAL
 * (NULL arrays with n > 0), -ENOMEM never (g_new aborts). The mins not
 * fitting the budget is not an error here (vt_host_share_check_mins() is
 * the caller's refusal): they are scaled down in proportion, and
 * @info->mins_scaled says so.
 */
int vt_host_share_round(const struct vt_share_params *p, const struct vt_share_vm *vms,
			size_t n, struct vt_share_out *out, struct vt_share_round *info);

/*
 * The operator's dram_min of @n VMs against @budget (node @node's, or the
 * host's when @node is -1): 0, or -ERANGE with @err naming the VMs that have
 * a min, their sum, the budget and its node.
 */
int vt_host_share_check_mins(uint64_t budget, int node, const struct vt_share_vm *vms, size_t n,
			     char *err, size_t err_len);

/* "earned", "protected", "capped", "rate-limited". */
const char *vt_share_why_name(enum vt_share_why why);

#endif
