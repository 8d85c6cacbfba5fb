/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The region list of region-based profilers (telescope-*, damon-like), in the
 * manner of DAMON: address-sorted, non-overlapping regions that cover the
 * mapped ranges, each with the accessed-bit samples of the current window.
 */
#ifndef VTIER_TELEMETRY_REGION_H
#define VTIER_TELEMETRY_REGION_H

#include <stdbool.h>

#include "profiler.h"

#define VT_REGION_MAX_PROBES 8
#define VT_REGION_THIN_PROBES 4
/* accesses at which a region reads hot: the scoring rule's (sim/eval.h) */
#define VT_REGION_HOT 0.5
/*
 * Two cold regions, one of them swept, this large together are not merged by
 * vt_regions_merge() but after the sweep (telescope), which reads their
 * covers first: a union's cover is not primed, and a large cold region that
 * took in a piece every window end was blind window after window.
 */
#define VT_REGION_JOIN_SWEPT (64ULL << 20)

struct vt_region {
	uint64_t start;
	uint64_t end;
	unsigned int nr_young;		/* young checks this window */
	unsigned int nr_checks;		/* checks this window */
	double accesses;		/* nr_young / nr_checks of the last complete window */
	double last_accesses;		/* accesses of the window before */
	unsigned int age;
	unsigned int level;		/* highest level sampled this window */
	unsigned int nr_probes;		/* probes per sampling interval (budget) */
	bool fresh;			/* made by a split at the last window end */
	bool warm;			/* a window-end scan found young entries in it */
	bool bounded_only;		/* flex overshoot misled: sample within the region */
	unsigned int waited;		/* windows a wanted split was put off (budget) */
	bool resolved;			/* its hot edges are exact (a leaf-level cut found
					 * them), kept through merges of hot regions */
	bool swept;			/* cold, and its cover was tested at the last window end:
					 * watched by the sweep instead of samples (telescope) */
	bool texture;			/* young entries found scattered, not in runs: lukewarm
					 * at the level below, kept whole (telescope) */
	unsigned int texture_level;	/* the level whose entries were found scattered */
	bool fine;			/* fewer than half its pages young, scattered: sampled at
					 * the page, where it reads as it is (telescope) */
	bool cold_cut;			/* a split scan found nothing young in it this window end
					 * (telescope, cleared after the sweep) */
	bool joined;			/* took in a cold piece after the sweep: its cover is
					 * cleared at once (telescope) */
	bool precleared;		/* its entries one level below its highest were cleared
					 * when it was cut: its split scan reads there (telescope) */
	/* entries whose children were cleared to tell lukewarm from hot (telescope) */
	unsigned int nr_thin;
	unsigned int thin_level;
	uint64_t thin[VT_REGION_THIN_PROBES];
	unsigned int nr_prepared;
	struct vt_probe prepared[VT_REGION_MAX_PROBES];
	/* probes checked at the last interval, with their results */
	unsigned int nr_checked;
	struct vt_probe checked[VT_REGION_MAX_PROBES];
};

#define vt_for_each_region(r, regions) \
	for (struct vt_region *r = &g_array_index((regions), struct vt_region, 0), \
	     *r##_end = r + (regions)->len; r < r##_end; r++)

static inline uint64_t vt_region_size(const struct vt_region *r)
{
	return r->end - r->start;
}


/* Was any access seen in @r, by its samples or by a scan? */
static inline bool vt_region_seen(const struct vt_region *r)
{
	return r->accesses > 0 || r->warm;
}

GArray *vt_regions_new(void);
/* One region per range, each cut at multiples of @align (0: no cut). */
void vt_regions_from_ranges(GArray *regions, const struct vt_range *ranges, size_t n,
			    uint64_t align);
/* Split until at least @min regions, largest first, at multiples of @align. */
void vt_regions_split_evenly(GArray *regions, unsigned int min, uint64_t align);
/* Move the prepared probes of @left that lie at or after @right->start to @right. */
void vt_region_give_probes(struct vt_region *left, struct vt_region *right);
/* Split region @i at @addr (strictly inside); the right part is inserted at i + 1. */
void vt_regions_split_at(GArray *regions, unsigned int i, uint64_t addr);
/*
 * DAMON's merge: adjacent regions whose accesses differ by at most @threshold
 * merge if the result is no larger than @size_limit; accesses and age are
 * averaged by size. Two hot, warm regions (accesses >= VT_REGION_HOT) of which
 * one is resolved merge whatever their difference, and the union stays resolved:
 * a page-level edge piece reads ~0.7 beside its 1.0 neighbour, and used to
 * stay apart, sampled and re-cut, for ever. A resolved region never merges
 * with one that is not warm: beyond an exact edge lies memory that only an
 * overshooting flex sample reads hot. Fresh regions, regions waiting for a split the
 * budget put off, and regions whose texture is being tested (nr_thin) do not merge. With @zero_apart, a region
 * where no access was seen (by samples or by a scan: warm) never merges with
 * one where some was. Two regions where nothing was seen, one of them swept,
 * of VT_REGION_JOIN_SWEPT or more together, are left to the caller.
 */
void vt_regions_merge(GArray *regions, double threshold, uint64_t size_limit, bool zero_apart);
/*
 * End of window: accesses = young / checks, age by DAMON's rule (reset when
 * accesses moved by more than @threshold), counters reset for the next window.
 */
void vt_regions_end_window(GArray *regions, double threshold);
void vt_regions_snapshot(GArray *regions, struct vt_snapshot *snap);
uint64_t vt_regions_total(GArray *regions);
/*
 * The invariants every profiler keeps: sorted, non-overlapping, non-empty,
 * exactly covering @ranges. Returns NULL or a description of the first breach.
 */
char *vt_regions_check(GArray *regions, const struct vt_range *ranges, size_t n);

/* Picks the page-table level to sample at *@addr inside @r; may move *@addr within @r. */
typedef unsigned int (*vt_pick_level_fn)(const struct vt_region *r, uint64_t *addr, void *arg);

/* One slot of the sampler's entry table (open addressing, one cache line touch). */
struct vt_seen {
	uint64_t key;
	unsigned int index;	/* batch index of the entry */
	unsigned int stamp;	/* in use when it is the table's current stamp */
};

struct vt_sampler {
	struct vt_probe *batch;	/* this step's entries, each once */
	size_t len, alloc;
	unsigned int *slot;	/* batch index of each region's prepared probe, in order */
	size_t slot_alloc;
	struct vt_seen *seen;	/* entries in the batch this interval: key -> batch index */
	unsigned int cur;	/* current stamp; bumped to forget every entry at once */
	size_t cap;		/* slots, a power of two */
	unsigned int every;	/* sample each region every N intervals (budget) */
	uint64_t interval;
	unsigned int checked;	/* entries in the batch from the last check */
};

void vt_sampler_init(struct vt_sampler *s);
void vt_sampler_fini(struct vt_sampler *s);
/*
 * DAMON's sampling protocol over any level, in two steps per interval.
 * check: test the entries prepared (cleared) one interval ago, count young
 * ones; an entry probed by two regions (flex overshoot) is tested once and its
 * result shared. prepare: pick @r->nr_probes random addresses per region that
 * has none prepared, their levels by @pick, and clear those entries (entries
 * just checked are clear already). One batch for each step.
 * Profilers check every interval and prepare every interval but the last of a
 * window; window() prepares after it has re-cut the regions, so that no entry
 * is cleared at the instant a window-end scan reads it.
 */
int vt_sampler_check(struct vt_sampler *s, struct vt_access_source *src, GArray *regions);
int vt_sampler_prepare(struct vt_sampler *s, struct vt_access_source *src, GArray *regions,
		       GRand *rng, vt_pick_level_fn pick, void *arg);
/*
 * MTM-style budget for the next window: @budget checks (0 = unlimited, one
 * probe per region) shared among regions; one probe each first, the rest to
 * regions whose accesses changed most since the previous window. When even
 * one probe each does not fit, regions are sampled every N-th interval.
 * @reserved checks are kept for other work (splits).
 */
void vt_sampler_budget(struct vt_sampler *s, GArray *regions, uint64_t budget,
		       uint64_t reserved, unsigned int samples_per_window);

#endif
