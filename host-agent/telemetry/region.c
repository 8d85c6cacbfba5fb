// SPDX-License-Identifier: GPL-2.0-or-later
/* Region list operations and the sampler shared by region-based profilers. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "region.h"

GArray *vt_regions_new(void)
{
	return g_array_new(FALSE, TRUE, sizeof(struct vt_region));
}

static struct vt_region region_of(uint64_t start, uint64_t end)
{
	return (struct vt_region){ .start = start, .end = end, .nr_probes = 1 };
}

void vt_regions_from_ranges(GArray *regions, const struct vt_range *ranges, size_t n,
			    uint64_t align)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t start = ranges[i].start;

		while (start < ranges[i].end) {
			uint64_t end = ranges[i].end;

			if (align && (start | (align - 1)) + 1 < end && (start | (align - 1)) + 1 > start)
				end = (start | (align - 1)) + 1;
			struct vt_region r = region_of(start, end);
			g_array_append_val(regions, r);
			start = end;
		}
	}
}

void vt_region_give_probes(struct vt_region *left, struct vt_region *right)
{
	unsigned int keep = 0, give = 0;
	struct vt_probe all[VT_REGION_MAX_PROBES];
	unsigned int n = left->nr_prepared;

	memcpy(all, left->prepared, sizeof(all));
	for (unsigned int k = 0; k < n; k++) {
		if (all[k].addr >= right->start)
			right->prepared[give++] = all[k];
		else
			left->prepared[keep++] = all[k];
	}
	left->nr_prepared = keep;
	right->nr_prepared = give;
}

void vt_regions_split_at(GArray *regions, unsigned int i, uint64_t addr)
{
	struct vt_region *r = &g_array_index(regions, struct vt_region, i);
	struct vt_region right = *r;

	g_assert(addr > r->start && addr < r->end);
	r->end = addr;
	right.start = addr;
	vt_region_give_probes(r, &right);
	g_array_insert_val(regions, i + 1, right);
}

void vt_regions_split_evenly(GArray *regions, unsigned int min, uint64_t align)
{
	while (regions->len < min) {
		unsigned int best = 0;
		uint64_t best_size = 0, mid;

		for (unsigned int i = 0; i < regions->len; i++) {
			uint64_t size = vt_region_size(&g_array_index(regions, struct vt_region, i));

			if (size > best_size) {
				best_size = size;
				best = i;
			}
		}
		struct vt_region *r = &g_array_index(regions, struct vt_region, best);
		mid = r->start + best_size / 2;
		mid -= mid % align;
		if (mid <= r->start)
			mid += align;
		if (best_size < 2 * align || mid >= r->end)
			return;
		vt_regions_split_at(regions, best, mid);
	}
}

static bool hot_resolved(const struct vt_region *a, const struct vt_region *b)
{
	/* both warm: a scan saw their young entries, not only an overshooting sample */
	return a->accesses >= VT_REGION_HOT && b->accesses >= VT_REGION_HOT &&
	       a->warm && b->warm && (a->resolved || b->resolved);
}

static void merge_into(struct vt_region *left, const struct vt_region *right)
{
	bool resolved = hot_resolved(left, right);

	double ls = (double)vt_region_size(left), rs = (double)vt_region_size(right);

	left->accesses = (left->accesses * ls + right->accesses * rs) / (ls + rs);
	left->last_accesses = (left->last_accesses * ls + right->last_accesses * rs) / (ls + rs);
	left->age = (unsigned int)((left->age * ls + right->age * rs) / (ls + rs));
	left->level = MAX(left->level, right->level);
	left->warm |= right->warm;
	left->resolved = resolved;
	left->swept = false;	/* the union's cover has entries never cleared */
	if (right->texture)
		left->texture_level = left->texture ? MAX(left->texture_level, right->texture_level) :
				      right->texture_level;
	left->texture |= right->texture;
	left->fine = left->fine && right->fine;
	left->bounded_only |= right->bounded_only;
	left->end = right->end;
	for (unsigned int k = 0; k < right->nr_prepared && left->nr_prepared < VT_REGION_MAX_PROBES; k++)
		left->prepared[left->nr_prepared++] = right->prepared[k];
}

/* Left to the caller: cold regions whose union's cover would not be primed. */
static bool join_after_sweep(const struct vt_region *a, const struct vt_region *b)
{
	return (a->swept || b->swept) && !vt_region_seen(a) && !vt_region_seen(b) &&
	       vt_region_size(a) + vt_region_size(b) >= VT_REGION_JOIN_SWEPT;
}

void vt_regions_merge(GArray *regions, double threshold, uint64_t size_limit, bool zero_apart)
{
	unsigned int out = 0;

	for (unsigned int i = 0; i < regions->len; i++) {
		struct vt_region *r = &g_array_index(regions, struct vt_region, i);
		struct vt_region *prev = out ? &g_array_index(regions, struct vt_region, out - 1) : NULL;

		if (prev && !prev->fresh && !r->fresh && !prev->waited && !r->waited &&
		    !prev->nr_thin && !r->nr_thin && !join_after_sweep(prev, r) &&
		    prev->end == r->start &&
		    (fabs(prev->accesses - r->accesses) <= threshold || hot_resolved(prev, r)) &&
		    !(prev->resolved && !r->warm) && !(r->resolved && !prev->warm) &&
		    (!zero_apart || vt_region_seen(prev) == vt_region_seen(r)) &&
		    vt_region_size(prev) + vt_region_size(r) <= size_limit) {
			merge_into(prev, r);
			continue;
		}
		if (out != i)
			g_array_index(regions, struct vt_region, out) = *r;
		out++;
	}
	g_array_set_size(regions, out);
}

void vt_regions_end_window(GArray *regions, double threshold)
{
	vt_for_each_region(r, regions) {
		r->last_accesses = r->accesses;
		r->accesses = r->nr_checks ? (double)r->nr_young / r->nr_checks : 0;
		if (fabs(r->accesses - r->last_accesses) > threshold)
			r->age = 0;
		if (fabs(r->accesses - r->last_accesses) > 2.5 * threshold)
			r->texture = false;	/* changed: look at its runs afresh */
		else
			r->age++;
		r->nr_young = 0;
		r->nr_checks = 0;
	}
}

void vt_regions_snapshot(GArray *regions, struct vt_snapshot *snap)
{
	vt_for_each_region(r, regions) {
		struct vt_snapshot_region s = {
			.start = r->start, .end = r->end, .accesses = r->accesses,
			.age = r->age, .level = r->level,
		};
		g_array_append_val(snap->regions, s);
	}
}

uint64_t vt_regions_total(GArray *regions)
{
	uint64_t sum = 0;

	vt_for_each_region(r, regions)
		sum += vt_region_size(r);
	return sum;
}

char *vt_regions_check(GArray *regions, const struct vt_range *ranges, size_t n)
{
	size_t ri = 0;
	uint64_t expect;

	if (n == 0)
		return regions->len ? g_strdup("regions but no mapped range") : NULL;
	expect = ranges[0].start;
	for (unsigned int i = 0; i < regions->len; i++) {
		const struct vt_region *r = &g_array_index(regions, struct vt_region, i);

		if (r->start >= r->end)
			return g_strdup_printf("region %u is empty [%#" G_GINT64_MODIFIER "x, %#"
					       G_GINT64_MODIFIER "x)", i, r->start, r->end);
		if (ri < n && expect == ranges[ri].end) {
			if (++ri < n)
				expect = ranges[ri].start;
		}
		if (ri >= n)
			return g_strdup_printf("region %u lies beyond the mapped ranges", i);
		if (r->start != expect)
			return g_strdup_printf("region %u starts at %#" G_GINT64_MODIFIER "x, expected %#"
					       G_GINT64_MODIFIER "x (gap, overlap or disorder)",
					       i, r->start, expect);
		if (r->end > ranges[ri].end)
			return g_strdup_printf("region %u crosses the end of mapped range %zu", i, ri);
		expect = r->end;
	}
	if (ri + 1 != n || expect != ranges[n - 1].end)
		return g_strdup_printf("regions stop at %#" G_GINT64_MODIFIER "x before the mapped ranges end",
				       expect);
	return NULL;
}

void vt_sampler_init(struct vt_sampler *s)
{
	memset(s, 0, sizeof(*s));
	s->cur = 1;
	s->every = 1;
}

void vt_sampler_fini(struct vt_sampler *s)
{
	g_free(s->batch);
	g_free(s->slot);
	g_free(s->seen);
}

static uint64_t entry_key(uint64_t addr, unsigned int level)
{
	return (addr >> vt_level_shift(level)) << 3 | level;
}

/* Forget every entry of the batch (a new stamp: no slot is in use). */
static void seen_clear(struct vt_sampler *s)
{
	if (++s->cur == 0) {
		for (size_t i = 0; i < s->cap; i++)
			s->seen[i].stamp = 0;
		s->cur = 1;
	}
}

/* The slot of @key: its own, or the free one where it would go. */
static struct vt_seen *seen_slot(const struct vt_sampler *s, uint64_t key)
{
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 20) & (s->cap - 1);

	while (s->seen[i].stamp == s->cur && s->seen[i].key != key)
		i = (i + 1) & (s->cap - 1);
	return &s->seen[i];
}

/* @p holding at least @want elements of @size bytes; *@alloc is its room. */
static void *reserve_elems(void *p, size_t *alloc, size_t want, size_t size)
{
	if (want > *alloc) {
		*alloc = MAX(want, 2 * *alloc);
		p = g_realloc_n(p, *alloc, size);
	}
	return p;
}

/*
 * Room for @more entries beyond the batch's: the batch array, and a table at
 * most half full (grown, the batch's entries entered again). Once per step,
 * not per probe: batch_add() then neither allocates nor calls out.
 */
static void sampler_reserve(struct vt_sampler *s, size_t more)
{
	size_t want = s->len + more;

	s->batch = reserve_elems(s->batch, &s->alloc, want, sizeof(*s->batch));
	if (2 * want <= s->cap)
		return;
	s->cap = MAX(1024, s->cap);
	while (2 * want > s->cap)
		s->cap *= 2;
	g_free(s->seen);
	s->seen = g_new0(struct vt_seen, s->cap);
	s->cur = 1;
	for (unsigned int b = 0; b < s->len; b++) {
		uint64_t key = entry_key(s->batch[b].addr, s->batch[b].level);
		struct vt_seen *e = seen_slot(s, key);

		if (e->stamp == s->cur)
			continue;	/* an entry twice in the batch: keep the first */
		e->key = key;
		e->index = b;
		e->stamp = s->cur;
	}
}

/* Add a probe to the batch unless its entry is already there; return its index. */
static inline unsigned int batch_add(struct vt_sampler *s, uint64_t addr, unsigned int level)
{
	uint64_t key = entry_key(addr, level);
	struct vt_seen *e = seen_slot(s, key);

	if (e->stamp == s->cur)
		return e->index;
	s->batch[s->len] = (struct vt_probe){ .addr = addr, .level = (uint8_t)level };
	e->key = key;
	e->index = (unsigned int)s->len;
	e->stamp = s->cur;
	return (unsigned int)s->len++;
}

int vt_sampler_check(struct vt_sampler *s, struct vt_access_source *src, GArray *regions)
{
	size_t nr = 0, next = 0;
	int ret;

	vt_for_each_region(r, regions)
		nr += r->nr_prepared;
	s->len = 0;
	seen_clear(s);
	sampler_reserve(s, nr);
	s->slot = reserve_elems(s->slot, &s->slot_alloc, nr, sizeof(*s->slot));
	vt_for_each_region(r, regions)
		for (unsigned int k = 0; k < r->nr_prepared; k++)
			s->slot[next++] = batch_add(s, r->prepared[k].addr, r->prepared[k].level);
	s->checked = (unsigned int)s->len;
	ret = vt_source_batch(src, s->batch, s->len);
	if (ret < 0)
		return ret;
	next = 0;
	vt_for_each_region(r, regions) {
		for (unsigned int k = 0; k < r->nr_prepared; k++) {
			const struct vt_probe *p = &s->batch[s->slot[next++]];

			r->checked[k] = *p;
			if (p->result == VT_BIT_ABSENT)
				continue;
			r->nr_checks++;
			if (p->result == VT_BIT_YOUNG)
				r->nr_young++;
		}
		r->nr_checked = r->nr_prepared;
		r->nr_prepared = 0;
	}
	return 0;
}

int vt_sampler_prepare(struct vt_sampler *s, struct vt_access_source *src, GArray *regions,
		       GRand *rng, vt_pick_level_fn pick, void *arg)
{
	unsigned int every = s->every ? s->every : 1;
	unsigned int checked = s->checked, i = 0;
	size_t nr = 0;
	int ret = 0;

	/* the batch still holds (and the table indexes) the entries just checked */
	s->len = checked;
	vt_for_each_region(r, regions)
		nr += MIN(r->nr_probes, VT_REGION_MAX_PROBES);
	sampler_reserve(s, nr);
	vt_for_each_region(r, regions) {
		if ((s->interval + i++) % every || r->nr_prepared || r->swept)
			continue;
		for (unsigned int k = 0; k < r->nr_probes && k < VT_REGION_MAX_PROBES; k++) {
			uint64_t addr = r->start + (uint64_t)(g_rand_double(rng) *
							      (double)vt_region_size(r));
			unsigned int level;

			addr = MIN(addr, r->end - 1) & ~((1ULL << VT_PAGE_SHIFT) - 1);
			level = pick(r, &addr, arg);
			r->prepared[r->nr_prepared].addr = addr;
			r->prepared[r->nr_prepared].level = (uint8_t)level;
			r->nr_prepared++;
			r->level = MAX(r->level, level);
			batch_add(s, addr, level);
		}
	}
	s->interval++;
	if (s->len > checked)
		ret = vt_source_batch(src, &s->batch[checked], s->len - checked);
	/* later prepares in this interval must not take these for checked ones */
	seen_clear(s);
	s->checked = 0;
	s->len = 0;
	return ret < 0 ? ret : 0;
}

void vt_sampler_budget(struct vt_sampler *s, GArray *regions, uint64_t budget,
		       uint64_t reserved, unsigned int samples_per_window)
{
	/* a probe costs up to two checks per interval: the check and the clear */
	double per_probe = 2.0 * samples_per_window, avail, base, extra, weights = 0;
	unsigned int sampled = 0;

	s->every = 1;
	vt_for_each_region(r, regions) {
		r->nr_probes = 1;
		sampled += !r->swept;	/* swept regions take no probes */
	}
	if (!budget || !sampled)
		return;
	avail = (double)(budget > 2 * reserved ? budget - reserved : budget / 2);
	base = per_probe * sampled;
	if (base > avail) {
		s->every = (unsigned int)ceil(base / avail);
		return;
	}
	extra = floor((avail - base) / per_probe);
	vt_for_each_region(r, regions)
		if (!r->swept)
			weights += fabs(r->accesses - r->last_accesses) + 0.01;
	vt_for_each_region(r, regions) {
		double w = (fabs(r->accesses - r->last_accesses) + 0.01) / weights;

		if (r->swept)
			continue;

		r->nr_probes = MIN(VT_REGION_MAX_PROBES, 1 + (unsigned int)floor(extra * w));
	}
}
