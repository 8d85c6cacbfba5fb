/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * TierScape's waterfall model over the MTM chunks: a chunk that stays cold
 * (EMA below VT_MTM_COLD) for age_windows windows on its tier steps down one
 * tier, to the next slower tier with room: DRAM -> CXL/PMEM nodes ->
 * compressed tiers in their configured order (the last is the coldest).
 * Runs after vt_mtm_decide() on what its orders left of the window's budget;
 * hot chunks come back through MTM's promotions. The TCO model that picks
 * tiers by price is a separate policy.
 */
#ifndef VTIER_POLICY_WATERFALL_H
#define VTIER_POLICY_WATERFALL_H

#include <stdint.h>

#include <glib.h>

#include "mtm.h"

struct vt_waterfall_params {
	unsigned int age_windows;	/* cold windows on a tier before the next step (>= 1) */
	unsigned int first_tier;	/* tiers below this index are never left by aging */
	uint64_t budget_bytes;		/* what this window may still move */
	/*
	 * Tiers from this index on are compressed: leaving one costs a
	 * decompression and a compression, and what is there has been cold
	 * for a while already, so the next step waits VT_WATERFALL_CTIER_AGE
	 * times longer (colder data goes deeper with time, not at once).
	 * 0: no compressed tiers.
	 */
	unsigned int first_ctier;
};

#define VT_WATERFALL_CTIER_AGE 4
/*
 * Chunks looked at per window, in a round robin over all of them that goes on
 * where the last window stopped (at this many, or where the budget ran out):
 * a chunk due to step down is ordered within ceil(chunks / VT_WATERFALL_VISIT)
 * windows of the budget letting it, whatever the VM's size.
 */
#define VT_WATERFALL_VISIT 16384

/*
 * Append demotions to @orders (struct vt_mtm_order) for chunks not already
 * ordered; @room[t] is what tier t can still take and is charged. Returns
 * the bytes ordered.
 */
uint64_t vt_waterfall_decide(struct vt_mtm *m, const struct vt_waterfall_params *p, uint64_t *room,
			     GArray *orders);

#endif
