// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The exact model of a page table (see sim_source.h): one bit per entry at
 * every level; advance() draws each access of the workload and sets the bits
 * along its path, leaf to root, as the page walker does.
 */
#include <math.h>
#include <string.h>

#include "sim_internal.h"

static bool bit_test_clear(struct vt_sim *s, unsigned int level, uint64_t addr)
{
	uint64_t i = (addr >> vt_level_shift(level)) - s->first[level];
	uint64_t mask = 1ULL << (i % 64);
	bool young = s->bits[level][i / 64] & mask;

	s->bits[level][i / 64] &= ~mask;
	return young;
}

static int exact_test_clear(struct vt_access_source *src, uint64_t addr, unsigned int level)
{
	struct vt_sim *s = to_sim(src);

	if (!sim_present(s, addr, level))
		return VT_BIT_ABSENT;
	src->checks[level]++;
	return bit_test_clear(s, level, addr) ? VT_BIT_YOUNG : VT_BIT_OLD;
}

static int exact_batch(struct vt_access_source *src, struct vt_probe *probes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		probes[i].result = (uint8_t)exact_test_clear(src, probes[i].addr, probes[i].level);
	return 0;
}

static void exact_touch(struct vt_sim *s, uint64_t addr)
{
	for (unsigned int l = s->src.leaf_level; l < s->src.levels; l++) {
		uint64_t i = (addr >> vt_level_shift(l)) - s->first[l];

		s->bits[l][i / 64] |= 1ULL << (i % 64);
	}
}

static uint64_t draw_poisson(GRand *rng, double mean)
{
	if (mean <= 0)
		return 0;
	if (mean < 30) {	/* Knuth */
		double limit = exp(-mean), p = 1;
		uint64_t k = 0;

		do {
			k++;
			p *= g_rand_double(rng);
		} while (p > limit);
		return k - 1;
	}
	/* normal approximation; the tests use means far above 30 here */
	return (uint64_t)MAX(0.0, round(mean + sqrt(mean) * vt_rand_gaussian(rng)));
}

/* Draw and apply the accesses of (now, now + dt], phase by phase. */
static void exact_advance(struct vt_sim *s, uint64_t dt_ns)
{
	const struct vt_workload *w = s->w;
	uint64_t end_ns = s->now_ns + dt_ns;

	while (s->now_ns < end_ns) {
		double t = (double)s->now_ns / 1e9;
		unsigned int pi = vt_workload_phase_at(w, t);
		const struct vt_phase *p = &w->phases[pi];
		double phase_end = pi == w->nr_phases - 1 ? INFINITY :
				   vt_workload_phase_start(w, pi + 1);
		uint64_t seg_end = phase_end * 1e9 < (double)end_ns ?
				   (uint64_t)ceil(phase_end * 1e9) : end_ns;
		uint64_t n;

		if (seg_end <= s->now_ns)
			seg_end = end_ns;
		n = p->nr_ranges ? draw_poisson(s->rng, p->access_rate *
						(double)(seg_end - s->now_ns) / 1e9) : 0;
		for (uint64_t i = 0; i < n; i++)
			exact_touch(s, vt_phase_draw(w, p, s->rng));
		s->now_ns = seg_end;
	}
}

void vt_sim_advance(struct vt_access_source *src, uint64_t dt_ns)
{
	struct vt_sim *s = to_sim(src);

	if (s->bits[s->src.leaf_level])
		exact_advance(s, dt_ns);
	else
		s->now_ns += dt_ns;
}

static void exact_destroy(struct vt_access_source *src)
{
	vt_sim_fini(to_sim(src));
}

const struct vt_access_source_ops vt_sim_exact_ops = {
	.name = "sim-exact",
	.mapped = vt_sim_mapped,
	.test_clear = exact_test_clear,
	.batch = exact_batch,
	.scan = vt_scan_by_tests,
	.destroy = exact_destroy,
};

struct vt_access_source *vt_sim_exact_new(const struct vt_workload *w, guint32 seed, GError **error)
{
	struct vt_sim *s;

	if (w->footprint > VT_SIM_EXACT_MAX_BYTES) {
		g_set_error(error, VT_WORKLOAD_ERROR, VT_WORKLOAD_ERROR_INVALID,
			    "sim-exact keeps a bit per entry and accepts footprints up to %llu GiB; "
			    "use the Poisson model (sim) for larger ones",
			    VT_SIM_EXACT_MAX_BYTES >> 30);
		return NULL;
	}
	s = g_new0(struct vt_sim, 1);
	vt_sim_init(s, &vt_sim_exact_ops, w, seed);
	for (unsigned int l = s->src.leaf_level; l < w->levels; l++) {
		uint64_t first = w->base >> vt_level_shift(l);
		uint64_t last = (w->base + w->footprint - 1) >> vt_level_shift(l);
		uint64_t words;

		s->first[l] = first;
		s->count[l] = last - first + 1;
		words = (s->count[l] + 63) / 64;
		s->bits[l] = g_new(uint64_t, words);
		memset(s->bits[l], w->initially_young ? 0xff : 0, words * sizeof(uint64_t));
	}
	return &s->src;
}
