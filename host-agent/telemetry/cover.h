/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cover of a range: the fewest page-table entries that tile it exactly,
 * each as high in the tree as it fits (a buddy decomposition). Testing the
 * cover's accessed bits tells whether anything in the range was touched, at
 * the cost of the partial entries at its two ends: at most 511 per level and
 * side, plus the whole entries of the top level.
 *
 * The cover comes as spans, each a run of entries of one level, in address
 * order: rising levels from the left end, the top level, falling levels to
 * the right end. At most 2 * levels - 1 spans.
 */
#ifndef VTIER_TELEMETRY_COVER_H
#define VTIER_TELEMETRY_COVER_H

#include <stdbool.h>

#include <glib.h>

#include "access_source.h"

struct vt_cover_span {
	uint64_t start;
	uint64_t end;		/* exclusive; both multiples of the level's entry size */
	unsigned int level;
};

#define VT_COVER_MAX_SPANS (2 * VT_MAX_LEVELS - 1)

/* Fill @out with the cover of [@start, @end) (leaf-aligned); return the span count. */
unsigned int vt_cover_spans(const struct vt_access_source *src, uint64_t start, uint64_t end,
			    struct vt_cover_span *out);
/* Number of entries in the cover of [@start, @end). */
uint64_t vt_cover_entries(const struct vt_access_source *src, uint64_t start, uint64_t end);

/*
 * Test and clear entries of the cover of [@start, @end) at levels @min_level
 * and up (the ones below are left alone): all entries of the
 * cover's highest level, and of the lower (partial) levels those whose
 * index is @phase modulo @stride, so that successive phases visit them all
 * and a young run of @stride entries or more is seen at any phase. With
 * @stride_top, the highest level is strided too when it is @min_level. Young
 * entries are appended to @young (of struct vt_cover_span) widened by the
 * untested entries beside them (stride - 1 on each side, within their span),
 * overlapping and adjacent ones joined (level: the lowest among them).
 * Returns the number of young entries or -errno.
 */
long vt_cover_test(struct vt_access_source *src, uint64_t start, uint64_t end,
		   unsigned int min_level, unsigned int stride, bool stride_top, uint64_t phase,
		   GArray *young);

/*
 * vt_cover_test() in two steps, so that the covers of many ranges are tested
 * in one batch: vt_cover_plan() appends the probes of one cover to @probes
 * (of struct vt_probe) and notes where they are in @plan; once the batch has
 * run, vt_cover_read() appends the young runs of @plan's probes to @young and
 * returns their entry count, as vt_cover_test() does.
 */
struct vt_cover_plan {
	struct vt_cover_span spans[VT_COVER_MAX_SPANS];
	unsigned int n;
	unsigned int top;	/* the level tested whole (VT_MAX_LEVELS: none) */
	unsigned int stride;
	unsigned int first;	/* index of the first probe in the batch */
	unsigned int nr_probes;
};

void vt_cover_plan(const struct vt_access_source *src, uint64_t start, uint64_t end,
		   unsigned int min_level, unsigned int stride, bool stride_top, uint64_t phase,
		   struct vt_cover_plan *plan, GArray *probes);
long vt_cover_read(const struct vt_cover_plan *plan, const struct vt_probe *probes, GArray *young);

#endif
