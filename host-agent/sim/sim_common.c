// SPDX-License-Identifier: GPL-2.0-or-later
/* What the two simulated sources share: the clock, the mapping, the generic scan. */
#include "sim_internal.h"

extern const struct vt_access_source_ops vt_sim_poisson_ops;
extern const struct vt_access_source_ops vt_sim_exact_ops;

void vt_sim_init(struct vt_sim *s, const struct vt_access_source_ops *ops,
		 const struct vt_workload *w, guint32 seed)
{
	s->src.ops = ops;
	s->src.levels = w->levels;
	s->src.leaf_level = vt_workload_leaf_level(w);
	s->w = w;
	s->rng = g_rand_new_with_seed(seed);
}

void vt_sim_fini(struct vt_sim *s)
{
	for (unsigned int l = 0; l < VT_MAX_LEVELS; l++) {
		if (s->cleared[l])
			g_hash_table_destroy(s->cleared[l]);
		g_free(s->bits[l]);
	}
	if (s->rng)
		g_rand_free(s->rng);
	g_free(s);
}

int vt_sim_mapped(struct vt_access_source *src, struct vt_range *out, size_t max)
{
	struct vt_sim *s = to_sim(src);

	if (max >= 1) {
		out[0].start = s->w->base;
		out[0].end = sim_end(s);
	}
	return 1;
}

bool vt_is_sim(const struct vt_access_source *src)
{
	return src->ops == &vt_sim_poisson_ops || src->ops == &vt_sim_exact_ops;
}

uint64_t vt_sim_now_ns(const struct vt_access_source *src)
{
	return ((const struct vt_sim *)src)->now_ns;
}

struct scan_ctx {
	struct vt_access_source *src;
	uint64_t start, end;
	unsigned int target, skip_from;
	vt_young_fn fn;
	void *arg;
	long found;
};

static void scan_walk(struct scan_ctx *c, unsigned int level, uint64_t lo, uint64_t hi)
{
	uint64_t size = vt_level_size(level);

	for (uint64_t e = vt_entry_start(lo, level); e < hi; e += size) {
		uint64_t e_end = e + size;
		uint64_t sub_lo = MAX(e, lo), sub_hi = MIN(e_end, hi);
		int bit;

		if (level == c->target) {
			bit = c->src->ops->test_clear(c->src, sub_lo, level);
			if (bit == VT_BIT_YOUNG) {
				c->found++;
				if (c->fn)
					c->fn(e, level, c->arg);
			}
		} else if (level <= c->skip_from && e >= c->start && e_end <= c->end) {
			bit = c->src->ops->test_clear(c->src, sub_lo, level);
			if (bit == VT_BIT_YOUNG)
				scan_walk(c, level - 1, sub_lo, sub_hi);
		} else {
			scan_walk(c, level - 1, sub_lo, sub_hi);
		}
		if (e_end < e)	/* wrapped at the top of the address space */
			break;
	}
}

long vt_scan_by_tests(struct vt_access_source *src, uint64_t start, uint64_t end,
		      unsigned int level, unsigned int skip_from, vt_young_fn fn, void *arg)
{
	struct vt_range map;
	struct scan_ctx c = {
		.src = src, .target = level, .skip_from = skip_from, .fn = fn, .arg = arg,
	};

	src->ops->mapped(src, &map, 1);
	c.start = MAX(start, map.start);
	c.end = MIN(end, map.end);
	if (c.start >= c.end || level < src->leaf_level)
		return 0;
	scan_walk(&c, src->levels - 1, c.start, c.end);
	return c.found;
}
