// SPDX-License-Identifier: GPL-2.0-or-later
/* The cover of a range by the highest page-table entries that fit (cover.h). */
#include "cover.h"

unsigned int vt_cover_spans(const struct vt_access_source *src, uint64_t start, uint64_t end,
			    struct vt_cover_span *out)
{
	struct vt_cover_span right[VT_MAX_LEVELS];
	unsigned int n = 0, nr_right = 0;
	uint64_t lo = start, hi = end;

	/* peel the partial ends from the leaf up, until the top level's entries */
	for (unsigned int l = src->leaf_level; l < vt_top_level(src) && lo < hi; l++) {
		uint64_t up = vt_level_size(l + 1);
		uint64_t lo_next = (lo + up - 1) & ~(up - 1), hi_next = hi & ~(up - 1);

		if (lo_next >= hi_next) {
			/* no whole entry of level l + 1 inside: the rest is level l */
			break;
		}
		if (lo < lo_next)
			out[n++] = (struct vt_cover_span){ lo, lo_next, l };
		if (hi_next < hi)
			right[nr_right++] = (struct vt_cover_span){ hi_next, hi, l };
		lo = lo_next;
		hi = hi_next;
	}
	if (lo < hi) {
		unsigned int l = src->leaf_level;

		/* the middle: the highest level whose entries tile [lo, hi) */
		for (unsigned int k = vt_top_level(src); k > src->leaf_level; k--) {
			uint64_t size = vt_level_size(k);

			if (!(lo & (size - 1)) && !(hi & (size - 1))) {
				l = k;
				break;
			}
		}
		out[n++] = (struct vt_cover_span){ lo, hi, l };
	}
	while (nr_right)
		out[n++] = right[--nr_right];
	return n;
}

uint64_t vt_cover_entries(const struct vt_access_source *src, uint64_t start, uint64_t end)
{
	struct vt_cover_span spans[VT_COVER_MAX_SPANS];
	unsigned int n = vt_cover_spans(src, start, end, spans);
	uint64_t sum = 0;

	for (unsigned int i = 0; i < n; i++)
		sum += (spans[i].end - spans[i].start) >> vt_level_shift(spans[i].level);
	return sum;
}
