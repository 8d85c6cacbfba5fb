// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The DAMON baseline, faithful to mm/damon/core.c with its defaults: regions
 * start as min_nr_regions even pieces; every sampling interval one random
 * 4 KiB page per region is checked (its PTE cleared one interval before);
 * at each aggregation (our window) adjacent regions whose access counts differ
 * by at most a tenth of the maximum merge while no larger than total /
 * min_nr_regions (threshold doubled while there are too many regions), then
 * every region is split into two (three when regions are few and stable)
 * pieces at random tenths, unless there are more than max_nr_regions / 2.
 */

#include "region.h"

struct damon_like {
	GArray *regions;
	struct vt_sampler sampler;
	uint64_t total;
	unsigned int last_nr_regions;
};

static unsigned int pick_leaf(const struct vt_region *r, uint64_t *addr, void *arg)
{
	(void)r;
	(void)addr;
	return ((const struct vt_access_source *)arg)->leaf_level;
}

static int damon_init(struct vt_profiler *p)
{
	struct damon_like *d = g_new0(struct damon_like, 1);

	d->regions = vt_regions_new();
	vt_sampler_init(&d->sampler);
	p->priv = d;
	return 0;
}

static int damon_start(struct vt_profiler *p)
{
	struct damon_like *d = p->priv;

	vt_regions_from_ranges(d->regions, p->ranges, p->nr_ranges, 0);
	d->total = vt_regions_total(d->regions);
	vt_regions_split_evenly(d->regions, p->attrs.min_regions, vt_level_size(p->src->leaf_level));
	return 0;
}

static int damon_sample(struct vt_profiler *p)
{
	struct damon_like *d = p->priv;

	int ret = vt_sampler_check(&d->sampler, p->src, d->regions);

	if (ret < 0 || vt_profiler_last_sample(p))
		return ret;
	return vt_sampler_prepare(&d->sampler, p->src, d->regions, p->rng, pick_leaf, p->src);
}

static void damon_split(struct vt_profiler *p)
{
	struct damon_like *d = p->priv;
	uint64_t min_sz = vt_level_size(p->src->leaf_level);
	unsigned int nr = d->regions->len, nr_subs = 2;

	if (nr > p->attrs.max_regions / 2)
		return;
	if (d->last_nr_regions == nr && nr < p->attrs.max_regions / 3)
		nr_subs = 3;
	for (unsigned int i = 0; i < d->regions->len; i++) {
		struct vt_region *r = &g_array_index(d->regions, struct vt_region, i);
		uint64_t sz = vt_region_size(r);
		unsigned int made = 0;

		/* as damon_split_regions_of(): cut the left part again, skip the pieces */
		for (unsigned int k = 0; k < nr_subs - 1 && sz > 2 * min_sz; k++) {
			uint64_t sub = (uint64_t)g_rand_int_range(p->rng, 1, 10) * (sz / 10);

			sub -= sub % min_sz;
			if (sub == 0 || sub >= sz)
				continue;
			vt_regions_split_at(d->regions, i, r->start + sub);
			r = &g_array_index(d->regions, struct vt_region, i);
			sz = sub;
			made++;
		}
		i += made;
	}
	d->last_nr_regions = nr;
}

static int damon_window(struct vt_profiler *p, struct vt_snapshot *snap)
{
	struct damon_like *d = p->priv;
	double thr = p->attrs.merge_threshold;
	uint64_t limit = MAX(d->total / p->attrs.min_regions, vt_level_size(p->src->leaf_level));

	vt_regions_end_window(d->regions, thr);
	vt_regions_snapshot(d->regions, snap);
	do {
		vt_regions_merge(d->regions, thr, limit, false);
		thr *= 2;
	} while (d->regions->len > p->attrs.max_regions && thr / 2 < 1.0);
	damon_split(p);
	vt_for_each_region(r, d->regions)
		r->level = 0;
	return vt_sampler_prepare(&d->sampler, p->src, d->regions, p->rng, pick_leaf, p->src);
}

static void damon_destroy(struct vt_profiler *p)
{
	struct damon_like *d = p->priv;

	if (!d)
		return;
	g_array_free(d->regions, TRUE);
	vt_sampler_fini(&d->sampler);
	g_free(d);
}

const struct vt_profiler_ops vt_damon_like_ops = {
	.name = "damon-like",
	.summary = "DAMON's defaults: one random 4 KiB page per region per sample",
	.init = damon_init,
	.start = damon_start,
	.sample = damon_sample,
	.window = damon_window,
	.destroy = damon_destroy,
};
