/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * TierScape's analytical model over the MTM chunks: place each chunk on the
 * tier that minimises the expected slowdown
 *     S = sum over chunks of rate(chunk) x latency(tier of the chunk)
 * subject to
 *     TCO <= TCO_min + alpha x (TCO_max - TCO_min),  alpha in [0, 1],
 * where TCO = sum over chunks of bytes x cost per byte of its tier (for a
 * compressed tier: the medium's price / the tier's compression ratio),
 * TCO_min is the cheapest placement and TCO_max the fastest one (everything
 * that fits on the fastest tiers, within the DRAM allowance and the tiers'
 * room). alpha = 0: the cheapest placement; alpha = 1: the fastest.
 *
 * Solved by a greedy over per-chunk upgrade slopes (slowdown saved per
 * dollar), which is exact for the fractional relaxation (a multiple-choice
 * knapsack; docs/tco.md says why) and loses at most one chunk's step by
 * keeping chunks whole. Knows no nodes, prices tables or processes: the
 * caller gives each tier's cost, latency and capacity.
 */
#ifndef VTIER_POLICY_TCO_H
#define VTIER_POLICY_TCO_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "mtm.h"

/* One tier as the model sees it. */
struct vt_tco_tier {
	double usd_per_gib;		/* per GiB of guest data (medium price / ratio), >= 0 */
	double latency_ns;		/* per access (NUMA) or per fault (compressed), > 0 */
	uint64_t capacity_bytes;	/* guest bytes of this VM it may hold (UINT64_MAX: any) */
};

/* One chunk as the model sees it. */
struct vt_tco_item {
	double rate;			/* accesses per window, relative (vt_mtm_rate x bytes / 4 KiB) */
	uint64_t bytes;
	int tier;			/* where it is now (the orders, @stay; -1: nowhere) */
	uint32_t refused;		/* bit t: tier t will not take it (vt_mtm_arrivals) */
	/*
	 * Where it is counts this many times for it (> 1): a step onto @tier
	 * is taken as if its slope were that much steeper, so a chunk leaves
	 * its tier only for one hotter by more than the factor. 0 or 1: none.
	 */
	double stay;
};

/*
 * vt_tco_decide()'s stay factor. The rates of chunks as hot as each other
 * wobble window to window; without a margin the chunks at a tier's edge
 * swapped sides every window (test_decide_steady: ~10 moves a window at
 * +-15 % noise; bench-slowdown tco-05 moved 1920 MiB while measuring). With
 * rates from sampled accessed bits (test_decide_sampled), 2 halves the
 * moves 1.5 leaves. A chunk kept in the place of one up to 2x hotter costs
 * at most that much of their two accesses' latency difference.
 */
#define VT_TCO_STAY 2.0

struct vt_tco_solution {
	double tco_min;			/* USD per hour, the cheapest placement */
	double tco_max;			/* USD per hour, the fastest placement */
	double tco_bound;		/* tco_min + alpha x (tco_max - tco_min) */
	double tco;			/* of the placement chosen (integral) */
	double slowdown;		/* sum of rate x latency_ns of the placement chosen */
	double slowdown_lp;		/* of the fractional optimum (<= slowdown) */
	unsigned int steps;		/* upgrades taken */
};

/*
 * Solve for @n items over @nt tiers (fastest first is not required). Writes
 * each item's tier into @target. Capacities are respected; items that fit
 * nowhere keep target -1. Returns 0, or -EINVAL for a bad argument (alpha
 * outside [0, 1], a NaN or negative cost or rate, no tiers).
 */
int vt_tco_solve(const struct vt_tco_tier *tiers, unsigned int nt, const struct vt_tco_item *items,
		 unsigned int n, double alpha, int *target, struct vt_tco_solution *sol);

/*
 * Prices are what a GiB of the medium costs to buy; memory is paid off over
 * VT_TCO_AMORTIZE_HOURS (5 years, docs/tco.md). USD per hour of @bytes at
 * @usd_per_gib.
 */
#define VT_TCO_AMORTIZE_HOURS (5.0 * 8760.0)
#define VT_TCO_HOURS_PER_MONTH 730.0
double vt_tco_usd_per_hour(uint64_t bytes, double usd_per_gib);

struct vt_tco_params {
	double alpha;
	uint64_t allowance_bytes;	/* tier-0 bytes the VM may use */
	uint64_t budget_bytes;		/* moved per window */
	unsigned int nr_tiers;
	struct vt_tco_tier tier[VT_MTM_MAX_TIERS];	/* capacity_bytes unused: @room decides */
};

struct vt_tco_window_stats {
	struct vt_tco_solution sol;
	uint64_t promote_bytes;		/* ordered this window */
	uint64_t demote_bytes;
	uint64_t misplaced_bytes;	/* not where the model wants them after this window's orders */
};

/*
 * This window's orders (struct vt_mtm_order) towards the model's placement of
 * @m's chunks, at most @p->budget_bytes: promotions hottest first, each
 * making room by demoting what the model sends down from the tier it needs;
 * then the other demotions. @room[t] is what tier t can still take and is
 * charged. Returns 0 or -EINVAL.
 */
int vt_tco_decide(struct vt_mtm *m, const struct vt_tco_params *p, uint64_t *room, GArray *orders,
		  struct vt_tco_window_stats *st);

#endif
