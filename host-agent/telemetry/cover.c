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

static void add_young(GArray *young, uint64_t start, uint64_t end, unsigned int level)
{
	if (young->len) {
		struct vt_cover_span *last = &g_array_index(young, struct vt_cover_span,
							    young->len - 1);

		if (last->end >= start) {
			last->end = MAX(last->end, end);
			last->level = MIN(last->level, level);
			return;
		}
	}
	g_array_append_val(young, ((struct vt_cover_span){ start, end, level }));
}

/*
 * The entries of span @i the plan tests: the first (*@e), the end (*@last)
 * and the step (*@k), in entry indexes of the span's level: those whose index
 * is @phase modulo k, without visiting the others. Returns their number.
 */
static uint64_t span_entries(const struct vt_cover_plan *plan, unsigned int i, uint64_t phase,
			     uint64_t *e, uint64_t *last, uint64_t *k)
{
	unsigned int shift = vt_level_shift(plan->spans[i].level);
	uint64_t first = plan->spans[i].start >> shift;

	*k = plan->spans[i].level == plan->top || plan->stride < 2 ? 1 : plan->stride;
	*last = plan->spans[i].end >> shift;
	*e = first + (phase % *k + *k - first % *k) % *k;
	return *e < *last ? (*last - *e + *k - 1) / *k : 0;
}

void vt_cover_plan(const struct vt_access_source *src, uint64_t start, uint64_t end,
		   unsigned int min_level, unsigned int stride, bool stride_top, uint64_t phase,
		   struct vt_cover_plan *plan, GArray *probes)
{
	struct vt_cover_span spans[VT_COVER_MAX_SPANS];
	unsigned int n = vt_cover_spans(src, start, end, spans), top = 0;
	struct vt_probe *out;
	uint64_t total = 0;

	plan->n = 0;
	plan->stride = stride;
	for (unsigned int i = 0; i < n; i++)
		if (spans[i].level >= min_level)
			plan->spans[plan->n++] = spans[i];
	for (unsigned int i = 0; i < plan->n; i++)
		top = MAX(top, plan->spans[i].level);
	if (stride_top && top == min_level)
		top = VT_MAX_LEVELS;	/* no level is tested whole */
	plan->top = top;
	plan->first = probes->len;
	for (unsigned int i = 0; i < plan->n; i++) {
		uint64_t e, last, k;

		total += span_entries(plan, i, phase, &e, &last, &k);
	}
	/* grown once, then written: one append per entry cost an eighth of the profiler */
	g_array_set_size(probes, plan->first + total);
	out = &g_array_index(probes, struct vt_probe, plan->first);
	for (unsigned int i = 0; i < plan->n; i++) {
		unsigned int level = plan->spans[i].level, shift = vt_level_shift(level);
		uint64_t e, last, k;

		span_entries(plan, i, phase, &e, &last, &k);
		for (; e < last; e += k)
			*out++ = (struct vt_probe){ .addr = e << shift, .level = (uint8_t)level };
	}
	plan->nr_probes = probes->len - plan->first;
}

long vt_cover_read(const struct vt_cover_plan *plan, const struct vt_probe *probes, GArray *young)
{
	long found = 0;

	probes += plan->first;
	for (unsigned int i = 0, j = 0; i < plan->n; i++) {
		unsigned int level = plan->spans[i].level;
		uint64_t size = vt_level_size(level);
		uint64_t widen = (level == plan->top || plan->stride < 2 ? 0 : plan->stride - 1) * size;

		for (; j < plan->nr_probes; j++) {
			const struct vt_probe *pr = &probes[j];

			if (pr->addr >= plan->spans[i].end)
				break;
			if (pr->result != VT_BIT_YOUNG)
				continue;
			found++;
			add_young(young, MAX(plan->spans[i].start, pr->addr >= widen ? pr->addr - widen : 0),
				  MIN(plan->spans[i].end, pr->addr + size + widen), level);
		}
	}
	return found;
}

long vt_cover_test(struct vt_access_source *src, uint64_t start, uint64_t end,
		   unsigned int min_level, unsigned int stride, bool stride_top, uint64_t phase,
		   GArray *young)
{
	g_autoptr(GArray) probes = g_array_new(FALSE, FALSE, sizeof(struct vt_probe));
	struct vt_cover_plan plan;
	int ret;

	vt_cover_plan(src, start, end, min_level, stride, stride_top, phase, &plan, probes);
	ret = vt_source_batch(src, (struct vt_probe *)(void *)probes->data, probes->len);
	if (ret < 0)
		return ret;
	return vt_cover_read(&plan, (const struct vt_probe *)(void *)probes->data, young);
}
