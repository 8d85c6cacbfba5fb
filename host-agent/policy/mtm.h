/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * N-tier placement after MTM and tiered NUMA balancing, over fixed-size chunks
 * of one VM's memory (the regions whose EMA and history are kept):
 *   - EMA hotness per chunk from each window's region snapshot (alpha 0.5);
 *   - a histogram over all chunks gives the hotness above which the hottest
 *     bytes fit the VM's fast-tier allowance;
 *   - promote fast: the hottest chunks not on tier 0 go to tier 0 when it has
 *     room (or room is made);
 *   - demote slowly: only to make room or to get under the allowance, the
 *     coldest chunks of tier 0 first, one tier down (further when full);
 *   - a byte budget per window for promotions + demotions together;
 *   - thrash control: a chunk promoted within K windows of its demotion (or
 *     the reverse) has its promotion threshold raised.
 * Tier 0 is the fastest. Knows no page tables, processes or NUMA nodes.
 */
#ifndef VTIER_POLICY_MTM_H
#define VTIER_POLICY_MTM_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "range.h"

#define VT_MTM_MAX_TIERS 8
#define VT_MTM_BINS 20
#define VT_MTM_NEVER UINT64_MAX

struct vt_mtm_chunk {
	uint64_t start;			/* address (space of the snapshots) */
	uint64_t end;
	double ema;
	/* the long-run EMA of the same (VT_MTM_RATE_ALPHA) as of window rate_at: read vt_mtm_rate() */
	double rate;
	uint64_t rate_at;		/* m->observed of its last update */
	double penalty;			/* added to the promotion threshold (thrash) */
	uint32_t samples[VT_MTM_MAX_TIERS];	/* present pages seen on each tier */
	uint32_t nr_samples;		/* pages sampled, present or not */
	int tier;			/* tier with most present pages, -1 when none present */
	uint64_t last_demoted;		/* window, or VT_MTM_NEVER */
	uint64_t last_promoted;
	uint32_t promotions;
	uint32_t demotions;
	uint32_t cold_windows;		/* read it with vt_mtm_cold_windows() */
	bool active;			/* in m->active: EMA or penalty above 0 */
	uint64_t idle_since;		/* not active: m->observed when it left */
	int taken_tier;			/* tier at the last vt_mtm_take_retiered() */
	bool retiered;			/* in m->retiered */
	int sent_to;			/* tier of the last order carried out, until it shows (-1: none) */
	uint64_t sent_window;
	uint32_t refused;		/* bit t: sent to tier t and did not get there (vt_mtm_arrivals) */
	uint64_t refused_window;	/* window of the last refusal */
	uint64_t read_window;		/* m->window when its residency was last read */
	bool arriving;			/* in m->arriving */
};

/*
 * A chunk that was sent to a tier and is not there once the movers are idle
 * did not get in (a compressed tier refuses what does not compress, a node
 * may be full): placements leave that tier out for the chunk for this many
 * windows, then try again (its content may have changed).
 */
#define VT_MTM_REFUSED_WINDOWS 64

/*
 * The weight of a window in a chunk's long-run rate (vt_mtm_rate): 1/16, a
 * memory of about 16 windows where the EMA's (alpha 0.5) is about 2. The EMA
 * answers "is it hot now" for MTM's moves; a lukewarm chunk's EMA jumps with
 * each window its few accesses fall in and halves in each one they do not,
 * and a model that prices every chunk by its rate (policy/tco.h) moved
 * chunks every window on that noise (test_decide_sampled).
 */
#define VT_MTM_RATE_ALPHA (1.0 / 16)

/* An EMA below this is a cold window for the waterfall (policy/waterfall.h). */
#define VT_MTM_COLD 0.01
/*
 * An EMA below this is 0: the chunk leaves the active set (a chunk at 1 gets
 * there after 30 windows without access). Only active chunks cost anything
 * per window, so a window costs what was accessed lately, not the VM's size.
 */
#define VT_MTM_EMA_MIN 1e-9

struct vt_mtm_params {
	uint64_t allowance_bytes;	/* tier-0 bytes the VM may use */
	uint64_t budget_bytes;		/* moved per window */
	double hot_threshold;
	unsigned int thrash_windows;
	double thrash_step;
	/*
	 * The chunks of the bin the allowance splits fill what it leaves (room
	 * made only from colder bins). On under a host DRAM share, whose grants
	 * split bins by design; off otherwise until the VM scenarios judge it.
	 */
	bool fill_split_bin;
	/*
	 * A window that starts over the allowance only demotes: no chunk is
	 * promoted by demoting another (a VM whose host share shrinks over a
	 * few windows swapped its lukewarm chunks on and off DRAM meanwhile).
	 * On under a host DRAM share, off otherwise, as fill_split_bin.
	 */
	bool no_swap_while_over;
	/*
	 * A chunk comes in by sending another out only if it is hotter by more
	 * than this (EMA; 0: any colder one goes). Under a host DRAM share one
	 * bin (1 / VT_MTM_BINS): a protected VM's grant below its wanted bytes
	 * left chunks of one set as hot as each other, and noise in their EMA
	 * swapped 13 of them out and back within 10 checks on the testbed.
	 */
	double swap_margin;
	/*
	 * A chunk moved on or off tier 0 within this many windows stays where it
	 * went (0: no hold): one just demoted is not promoted, one just promoted
	 * makes no room for another and leaves tier 0 for the allowance only when
	 * no other chunk can. Under a host DRAM share its share_hold: with the
	 * allowance splitting a set as hot as itself and accesses noisy window to
	 * window, a margin of one bin still swapped chunks on and off DRAM (12 of
	 * them 3 times within 10 checks on the testbed; test_noisy_split_no_thrash).
	 */
	unsigned int move_hold;
};

struct vt_mtm_order {
	unsigned int chunk;
	int from_tier;
	int to_tier;
	bool promote;
	/* known ahead (a migration profile's placement): a mover may take it in bulk */
	bool bulk;
};

struct vt_mtm_window_stats {
	double threshold;		/* promotion threshold used (without penalties) */
	uint64_t hist_bytes[VT_MTM_BINS];
	uint64_t tier_bytes[VT_MTM_MAX_TIERS];	/* estimated from samples */
	uint64_t promote_bytes;
	uint64_t demote_bytes;
	uint64_t thrash_events;
	unsigned int hot_chunks;	/* chunks at or above the threshold */
	unsigned int hot_on_tier0;
};

struct vt_mtm {
	GArray *chunks;			/* struct vt_mtm_chunk, sorted by start */
	uint64_t chunk_bytes;
	uint64_t sample_stride;		/* bytes between sampled pages */
	unsigned int nr_tiers;
	uint64_t window;
	uint64_t thrash_total;
	uint32_t max_moves;		/* most promotions + demotions of one chunk */
	uint64_t observed;		/* vt_mtm_observe() calls */
	uint64_t total_bytes;		/* of all chunks */
	/*
	 * unsigned int, ascending after each observe: the chunks whose EMA or
	 * penalty is above 0. The others have EMA 0, no penalty, and grow one
	 * cold window per observe without being visited.
	 */
	GArray *active;
	unsigned int idle_hint;		/* no idle chunk at or above it has a page on tier 0 */
	double *acc;			/* observe's scratch, per chunk */
	GArray *touched;
	GArray *retiered;		/* unsigned int: tier set since vt_mtm_take_retiered() */
	unsigned int waterfall_next;	/* policy/waterfall.c: its round robin's next chunk */
	GArray *arriving;		/* unsigned int: sent somewhere or refused (vt_mtm_arrivals) */
	/* sampled bytes on each tier over all chunks, kept as chunks are re-read or moved */
	uint64_t tier_bytes[VT_MTM_MAX_TIERS];
	uint64_t *ordered;		/* one bit per chunk: vt_mtm_mark_ordered() */
};

/* Chunks cover @ranges (each cut to whole chunks; a tail smaller than a chunk is a chunk). */
struct vt_mtm *vt_mtm_new(const struct vt_range *ranges, unsigned int n, uint64_t chunk_bytes,
			  uint64_t sample_stride, unsigned int nr_tiers);
void vt_mtm_free(struct vt_mtm *m);
/*
 * Size-weighted accesses (0..1) of regions {start, end, accesses}, per chunk,
 * into the EMA; @regions sorted by start, not overlapping. Visits the chunks
 * regions with accesses above 0 cover and the active ones.
 */
struct vt_mtm_region {
	uint64_t start;
	uint64_t end;
	double accesses;
};
void vt_mtm_observe(struct vt_mtm *m, const struct vt_mtm_region *regions, unsigned int n);
/* Windows in a row with EMA below VT_MTM_COLD, since the chunk last moved. */
uint32_t vt_mtm_cold_windows(const struct vt_mtm *m, const struct vt_mtm_chunk *c);
/*
 * The chunk's long-run rate (VT_MTM_RATE_ALPHA) as of the last observe: the
 * windows since its last update (an idle chunk is not visited) had no access.
 */
double vt_mtm_rate(const struct vt_mtm *m, const struct vt_mtm_chunk *c);
/*
 * Marks the chunks @orders (struct vt_mtm_order) name, and no other, for
 * vt_mtm_ordered(): a policy stage that adds orders after another one's
 * calls it first and skips the chunks already ordered (one order per chunk
 * and window). O(orders + chunks / 64).
 */
void vt_mtm_mark_ordered(struct vt_mtm *m, const GArray *orders);
static inline bool vt_mtm_ordered(const struct vt_mtm *m, unsigned int chunk)
{
	return (m->ordered[chunk / 64] >> (chunk % 64)) & 1;
}
/* Set chunk @i's EMA, and its long-run rate, as if observed (a profile from elsewhere; tests). */
void vt_mtm_set_ema(struct vt_mtm *m, unsigned int i, double ema);
/*
 * Seed chunk @i from another host's profile (an incoming live migration):
 * its EMA, its age (@cold_windows, as vt_mtm_cold_windows() will say) and
 * tiers that are known to refuse it (bit t, for VT_MTM_REFUSED_WINDOWS as
 * if refused now). Before the chunk's first observe; @i out of range is ignored.
 */
void vt_mtm_seed(struct vt_mtm *m, unsigned int i, double ema, uint32_t cold_windows,
		 uint32_t refused);
/* The chunk holding address @addr, or -1. */
int vt_mtm_chunk_at(const struct vt_mtm *m, uint64_t addr);
/*
 * Residency of chunk @i as last read: @samples[t] of its @nr_samples sampled
 * pages (sample_stride apart) are on tier t (nr_tiers entries; the others
 * were not present). Replaces what the chunk had, in m->tier_bytes too; the
 * chunks not re-read keep theirs. An @i out of range is ignored.
 */
void vt_mtm_residency_set(struct vt_mtm *m, unsigned int i, const uint32_t *samples,
			  uint32_t nr_samples);
/* Bytes of chunk @c on tier @t by its samples (what m->tier_bytes adds up). */
uint64_t vt_mtm_chunk_tier_bytes(const struct vt_mtm *m, const struct vt_mtm_chunk *c, int t);
/*
 * After the residency: the chunks sent somewhere that are there now, once
 * read again since; those that are not, when @movers_idle (no order still
 * queued when the residency was read), are refused by that tier for
 * VT_MTM_REFUSED_WINDOWS. Returns how many chunks have a refusal on record.
 * Visits the chunks sent somewhere or refused only.
 */
unsigned int vt_mtm_arrivals(struct vt_mtm *m, bool movers_idle);
/*
 * Decide this window's moves into @orders (struct vt_mtm_order), at most
 * @params->budget_bytes in all; @tier_room[t] is how many bytes tier t can
 * take. Advances the window counter and fills @st. History (thrash control,
 * per-chunk move counts) changes only through vt_mtm_commit().
 */
void vt_mtm_decide(struct vt_mtm *m, const struct vt_mtm_params *params, const uint64_t *tier_room,
		   GArray *orders, struct vt_mtm_window_stats *st);
/*
 * The mover carried @o out: record it (thrash control, counts); until the
 * chunk is read again, its present samples are on @o->to_tier.
 */
void vt_mtm_commit(struct vt_mtm *m, const struct vt_mtm_order *o,
		   const struct vt_mtm_params *params);
/* A chunk whose tier changed: from the tier it had at the last take, to the one it has. */
struct vt_mtm_retier {
	unsigned int chunk;
	int from;
	int to;
};
/*
 * The chunks whose tier changed since the last call (or since the chunks were
 * made) into @out (struct vt_mtm_retier, emptied first), for a view kept per
 * tier without visiting every chunk (the heatmap).
 */
void vt_mtm_take_retiered(struct vt_mtm *m, GArray *out);
/* Most moves (promotions + demotions) of any single chunk so far. */
uint32_t vt_mtm_max_moves(const struct vt_mtm *m);

#endif
