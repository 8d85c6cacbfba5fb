// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The Poisson model of a page table (see sim_source.h): a bit is drawn when it
 * is tested, from the expected number of accesses since the entry was last
 * cleared. Only entries ever cleared have state.
 */
#include <math.h>

#include "sim_internal.h"

static uint64_t last_cleared(struct vt_sim *s, unsigned int level, uint64_t idx)
{
	return GPOINTER_TO_SIZE(g_hash_table_lookup(s->cleared[level], GSIZE_TO_POINTER(idx + 1)));
}

/*
 * Remember when the entry was cleared. When bits start old, an entry that no
 * phase ever accesses reads old whenever it was cleared: no state needed.
 */
static void set_cleared(struct vt_sim *s, unsigned int level, uint64_t idx)
{
	uint64_t e = idx << vt_level_shift(level);

	if (!s->w->initially_young &&
	    !vt_workload_ever_accessed(s->w, e, e + vt_level_size(level)))
		return;
	g_hash_table_insert(s->cleared[level], GSIZE_TO_POINTER(idx + 1),
			    GSIZE_TO_POINTER(s->now_ns + 1));
}

/* Expected accesses into the entry since @prev (ns + 1; 0 = never cleared). */
static double entry_accesses(struct vt_sim *s, uint64_t e, unsigned int level, uint64_t prev)
{
	uint64_t lo = MAX(e, s->w->base), hi = MIN(e + vt_level_size(level), sim_end(s));

	if (!prev && s->w->initially_young)
		return INFINITY;
	if (!prev)
		prev = 1;	/* cleared at time 0 */
	return vt_workload_accesses(s->w, lo, hi, (double)(prev - 1) / 1e9, (double)s->now_ns / 1e9);
}

static int poisson_test_clear(struct vt_access_source *src, uint64_t addr, unsigned int level)
{
	struct vt_sim *s = to_sim(src);
	uint64_t idx = addr >> vt_level_shift(level), prev;
	double n;

	if (!sim_present(s, addr, level))
		return VT_BIT_ABSENT;
	src->checks[level]++;
	prev = last_cleared(s, level, idx);
	set_cleared(s, level, idx);
	n = entry_accesses(s, idx << vt_level_shift(level), level, prev);
	if (n == INFINITY)
		return VT_BIT_YOUNG;
	return g_rand_double(s->rng) < -expm1(-n) ? VT_BIT_YOUNG : VT_BIT_OLD;
}

static int poisson_batch(struct vt_access_source *src, struct vt_probe *probes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		probes[i].result = (uint8_t)poisson_test_clear(src, probes[i].addr, probes[i].level);
	return 0;
}

struct pscan {
	struct vt_sim *s;
	uint64_t start, end;
	unsigned int target, skip_from;
	vt_young_fn fn;
	void *arg;
	long found;
};

static void pscan_level(struct pscan *c, unsigned int level, uint64_t lo, uint64_t hi,
			bool parent_young, uint64_t parent_prev);

static bool children_cleared_with(struct vt_sim *s, unsigned int level, uint64_t lo, uint64_t hi,
				  uint64_t prev)
{
	uint64_t size = vt_level_size(level);

	for (uint64_t e = vt_entry_start(lo, level); e < hi; e += size) {
		if (!s->w->initially_young && !vt_workload_ever_accessed(s->w, e, e + size))
			continue;	/* old whenever it was cleared */
		if (last_cleared(s, level, e >> vt_level_shift(level)) != prev)
			return false;
	}
	return true;
}

/* A tested entry was found young or old: report it, or descend into it. */
static void pscan_found(struct pscan *c, unsigned int level, uint64_t e, bool young,
			uint64_t prev)
{
	uint64_t lo = MAX(e, c->start), hi = MIN(e + vt_level_size(level), c->end);

	if (!young)
		return;
	if (level == c->target) {
		c->found++;
		if (c->fn)
			c->fn(e, level, c->arg);
		return;
	}
	pscan_level(c, level - 1, lo, hi, true, prev);
}

/*
 * The children of a parent just found young, all last cleared together with
 * it: draw them conditioned on at least one access, child by child,
 * P(young | none so far) = p_i / P(any of i..n). Every child is tested (a
 * tested parent lies wholly inside the range).
 */
static void pscan_conditioned(struct pscan *c, unsigned int level, uint64_t lo, uint64_t hi,
			      uint64_t prev)
{
	struct vt_sim *s = c->s;
	uint64_t size = vt_level_size(level);
	unsigned int count = (unsigned int)((hi - lo + size - 1) / size), i;
	double suffix = 0, n[512];
	bool need = true;
	uint64_t e;

	for (i = 0, e = lo; i < count; i++, e += size) {
		n[i] = entry_accesses(s, e, level, prev);
		suffix += n[i];
	}
	for (i = 0, e = lo; i < count; i++, e += size) {
		double p = -expm1(-n[i]), any = -expm1(-suffix);
		bool young;

		if (need && any > 0)
			young = g_rand_double(s->rng) * any < p;
		else
			young = g_rand_double(s->rng) < p;
		suffix -= n[i];
		if (young)
			need = false;
		s->src.checks[level]++;
		set_cleared(s, level, e >> vt_level_shift(level));
		pscan_found(c, level, e, young, prev);
	}
}

/* Visit the level-@level entries of [@lo, @hi), all under one parent entry. */
static void pscan_level(struct pscan *c, unsigned int level, uint64_t lo, uint64_t hi,
			bool parent_young, uint64_t parent_prev)
{
	struct vt_sim *s = c->s;
	uint64_t size = vt_level_size(level);

	if (parent_young && (parent_prev || !s->w->initially_young) &&
	    children_cleared_with(s, level, lo, hi, parent_prev)) {
		pscan_conditioned(c, level, vt_entry_start(lo, level), hi, parent_prev);
		return;
	}
	for (uint64_t e = vt_entry_start(lo, level); e < hi; e += size) {
		uint64_t e_end = e + size;
		uint64_t sub_lo = MAX(e, lo), sub_hi = MIN(e_end, hi);
		bool tested = level == c->target ||
			      (level <= c->skip_from && e >= c->start && e_end <= c->end);

		if (!tested) {
			pscan_level(c, level - 1, sub_lo, sub_hi, false, 0);
		} else {
			uint64_t prev = last_cleared(s, level, e >> vt_level_shift(level));
			int bit = poisson_test_clear(&s->src, sub_lo, level);

			pscan_found(c, level, e, bit == VT_BIT_YOUNG, prev);
		}
		if (e_end < e)
			break;
	}
}

static long poisson_scan(struct vt_access_source *src, uint64_t start, uint64_t end,
			 unsigned int level, unsigned int skip_from, vt_young_fn fn, void *arg)
{
	struct vt_sim *s = to_sim(src);
	struct pscan c = {
		.s = s, .target = level, .skip_from = skip_from, .fn = fn, .arg = arg,
	};

	c.start = MAX(start, s->w->base);
	c.end = MIN(end, sim_end(s));
	if (c.start >= c.end || level < src->leaf_level)
		return 0;
	pscan_level(&c, src->levels - 1, c.start, c.end, false, 0);
	return c.found;
}

static void poisson_destroy(struct vt_access_source *src)
{
	vt_sim_fini(to_sim(src));
}

const struct vt_access_source_ops vt_sim_poisson_ops = {
	.name = "sim",
	.mapped = vt_sim_mapped,
	.test_clear = poisson_test_clear,
	.batch = poisson_batch,
	.scan = poisson_scan,
	.destroy = poisson_destroy,
};

struct vt_access_source *vt_sim_new(const struct vt_workload *w, guint32 seed)
{
	struct vt_sim *s = g_new0(struct vt_sim, 1);

	vt_sim_init(s, &vt_sim_poisson_ops, w, seed);
	for (unsigned int l = 0; l < w->levels; l++)
		s->cleared[l] = g_hash_table_new(g_direct_hash, g_direct_equal);
	return &s->src;
}
