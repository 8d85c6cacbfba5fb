/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Profilers turn accessed bits from an access source into a region snapshot
 * per window: {start, end, accesses (0..1), age, level}, sorted by address,
 * non-overlapping, covering the source's mapped ranges. Every profiler emits
 * the same shape, so accuracy and cost are compared on the same work.
 *
 * The caller owns time. It calls sample() every attrs.sample_us and window()
 * right after the last sample of every attrs.window_us; a simulated source is
 * advanced by the caller between calls, a real one advances by itself.
 */
#ifndef VTIER_TELEMETRY_PROFILER_H
#define VTIER_TELEMETRY_PROFILER_H

#include <stdbool.h>

#include <glib.h>

#include "access_source.h"

struct vt_profiler_attrs {
	uint64_t sample_us;		/* sampling interval, default 5 ms */
	uint64_t window_us;		/* window (aggregation interval), default 200 ms */
	unsigned int min_regions;	/* default 10 */
	unsigned int max_regions;	/* default 1000 */
	double merge_threshold;		/* |accesses difference| that still merges, default 0.1 */
	/* telescope-flex: how far (fraction of the entry) an entry may overshoot
	 * its region at each level; defaults 0.15 at PUD, 0.25 at PMD, 0 elsewhere */
	double flex_error[VT_MAX_LEVELS];
	/* MTM budget: accessed-bit checks per window, all regions together; 0 = none */
	uint64_t budget_checks;
	guint32 seed;
};

void vt_profiler_attrs_default(struct vt_profiler_attrs *attrs);

struct vt_snapshot_region {
	uint64_t start;
	uint64_t end;
	double accesses;	/* share of the window's checks that found the region young */
	unsigned int age;	/* windows since accesses last changed by more than merge_threshold */
	unsigned int level;	/* highest level whose bits were used for this region */
};

struct vt_snapshot {
	GArray *regions;	/* of struct vt_snapshot_region */
	uint64_t window;	/* index, from 0 */
};

void vt_snapshot_init(struct vt_snapshot *snap);
void vt_snapshot_clear(struct vt_snapshot *snap);

struct vt_profiler;

/**
 * struct vt_profiler_ops - a profiler.
 * @name:     registry name ("telescope-bounded", "scan", ...).
 * @summary:  one line for --help.
 * @init:     allocate private state in @p->priv; attrs are final. Called once.
 * @start:    build the first regions over @p->ranges (the source's mapped
 *            ranges). Called once, before the first sample.
 * @sample:   called every sampling interval: read the bits prepared at the
 *            previous call, then prepare the next ones.
 * @window:   called at the end of every window, after its last sample: fill
 *            @snap (cleared by the caller), then adapt regions for the next one.
 * @destroy:  free @p->priv. Called once; @p->priv may be NULL.
 * All return 0 or -errno.
 */
struct vt_profiler_ops {
	const char *name;
	const char *summary;
	int (*init)(struct vt_profiler *p);
	int (*start)(struct vt_profiler *p);
	int (*sample)(struct vt_profiler *p);
	int (*window)(struct vt_profiler *p, struct vt_snapshot *snap);
	void (*destroy)(struct vt_profiler *p);
};

#define VT_MAX_RANGES 64

struct vt_profiler {
	const struct vt_profiler_ops *ops;
	struct vt_access_source *src;
	struct vt_range ranges[VT_MAX_RANGES];	/* mapped, read by vt_profiler_start() */
	size_t nr_ranges;
	struct vt_profiler_attrs attrs;
	GRand *rng;
	uint64_t windows;
	unsigned int samples;	/* sample() calls so far in this window */
	void *priv;
};

/* Called from sample(): is this the last sampling interval of the window? */
static inline bool vt_profiler_last_sample(const struct vt_profiler *p)
{
	return p->samples + 1 >= p->attrs.window_us / p->attrs.sample_us;
}

struct vt_profiler *vt_profiler_new(const char *name, struct vt_access_source *src,
				    const struct vt_profiler_attrs *attrs, GError **error);
void vt_profiler_free(struct vt_profiler *p);
int vt_profiler_start(struct vt_profiler *p);
int vt_profiler_sample(struct vt_profiler *p);
int vt_profiler_window(struct vt_profiler *p, struct vt_snapshot *snap);
/* NULL-terminated list of registered names. */
const char *const *vt_profiler_names(void);
const struct vt_profiler_ops *vt_profiler_lookup(const char *name);

/* The registered profilers (one file each). */
extern const struct vt_profiler_ops vt_telescope_bounded_ops;
extern const struct vt_profiler_ops vt_telescope_flex_ops;
extern const struct vt_profiler_ops vt_scan_ops;
extern const struct vt_profiler_ops vt_linear_ops;
extern const struct vt_profiler_ops vt_damon_like_ops;
extern const struct vt_profiler_ops vt_damon_kernel_ops;

#define VT_PROFILER_ERROR (vt_profiler_error_quark())
GQuark vt_profiler_error_quark(void);

#endif
