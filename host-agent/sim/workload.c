// SPDX-License-Identifier: GPL-2.0-or-later
/* The workload model: rates, masses and draws for each access pattern. */
#include <math.h>

#include "workload.h"

G_DEFINE_QUARK(vt-workload-error-quark, vt_workload_error)

void vt_workload_free(struct vt_workload *w)
{
	if (!w)
		return;
	for (unsigned int i = 0; i < w->nr_phases; i++) {
		g_free(w->phases[i].name);
		g_free(w->phases[i].ranges);
	}
	g_free(w->phases);
	g_free(w->name);
	g_free(w);
}

static bool ranges_overlap(const struct vt_hot_range *a, const struct vt_hot_range *b)
{
	return a->start < b->start + b->size && b->start < a->start + a->size;
}

bool vt_workload_validate(struct vt_workload *w, GError **error)
{
	uint64_t page = 1ULL << w->page_shift;
	uint64_t limit;

	if (w->levels != 4 && w->levels != 5) {
		g_set_error(error, VT_WORKLOAD_ERROR, VT_WORKLOAD_ERROR_INVALID,
			    "levels must be 4 or 5, not %u", w->levels);
		return false;
	}
	if (w->page_shift != 12 && w->page_shift != 21) {
		g_set_error(error, VT_WORKLOAD_ERROR, VT_WORKLOAD_ERROR_INVALID,
			    "page size must be 4KiB or 2MiB");
		return false;
	}
	limit = vt_level_size(w->levels) - 1;	/* the address space of the tree */
	if (w->footprint == 0 || w->footprint % page || w->base % page ||
	    w->footprint > limit || w->base > limit - w->footprint) {
		g_set_error(error, VT_WORKLOAD_ERROR, VT_WORKLOAD_ERROR_INVALID,
			    "footprint and base must be non-zero multiples of the page size "
			    "that fit a %u-level table (%" G_GUINT64_FORMAT " bytes)",
			    w->levels, limit + 1);
		return false;
	}
	if (w->nr_phases == 0) {
		g_set_error(error, VT_WORKLOAD_ERROR, VT_WORKLOAD_ERROR_INVALID,
			    "a workload needs at least one phase");
		return false;
	}
	w->total_s = 0;
	for (unsigned int i = 0; i < w->nr_phases; i++) {
		struct vt_phase *p = &w->phases[i];

		if (!(p->duration_s > 0) || !isfinite(p->duration_s)) {
			g_set_error(error, VT_WORKLOAD_ERROR, VT_WORKLOAD_ERROR_INVALID,
				    "phase %u: duration_s must be positive", i);
			return false;
		}
		if (!(p->access_rate >= 0) || !isfinite(p->access_rate)) {
			g_set_error(error, VT_WORKLOAD_ERROR, VT_WORKLOAD_ERROR_INVALID,
				    "phase %u: access_rate must be a non-negative number", i);
			return false;
		}
		p->weight_sum = 0;
		for (unsigned int j = 0; j < p->nr_ranges; j++) {
			struct vt_hot_range *r = &p->ranges[j];

			if (r->size == 0 || r->start % page || r->size % page ||
			    r->start < w->base || r->size > w->footprint ||
			    r->start - w->base > w->footprint - r->size) {
				g_set_error(error, VT_WORKLOAD_ERROR, VT_WORKLOAD_ERROR_INVALID,
					    "phase %u range %u: must be page-aligned, non-empty and "
					    "inside the footprint", i, j);
				return false;
			}
			if (!(r->weight > 0) || !isfinite(r->weight)) {
				g_set_error(error, VT_WORKLOAD_ERROR, VT_WORKLOAD_ERROR_INVALID,
					    "phase %u range %u: weight must be positive", i, j);
				return false;
			}
			if ((r->pattern != VT_PATTERN_UNIFORM) &&
			    (!(r->param > 0) || !isfinite(r->param) || r->param > 64)) {
				g_set_error(error, VT_WORKLOAD_ERROR, VT_WORKLOAD_ERROR_INVALID,
					    "phase %u range %u: pattern parameter must be in (0, 64]",
					    i, j);
				return false;
			}
			for (unsigned int k = 0; k < j; k++) {
				if (ranges_overlap(r, &p->ranges[k])) {
					g_set_error(error, VT_WORKLOAD_ERROR,
						    VT_WORKLOAD_ERROR_INVALID,
						    "phase %u: ranges %u and %u overlap", i, k, j);
					return false;
				}
			}
			p->weight_sum += r->weight;
		}
		w->total_s += p->duration_s;
	}
	return true;
}

unsigned int vt_workload_phase_at(const struct vt_workload *w, double t_s)
{
	double end = 0;

	for (unsigned int i = 0; i < w->nr_phases; i++) {
		end += w->phases[i].duration_s;
		if (t_s < end)
			return i;
	}
	return w->nr_phases - 1;
}

double vt_workload_phase_start(const struct vt_workload *w, unsigned int phase)
{
	double t = 0;

	for (unsigned int i = 0; i < phase && i < w->nr_phases; i++)
		t += w->phases[i].duration_s;
	return t;
}

/*
 * Generalised harmonic number H(n, s) = sum_{k=1..n} k^-s: exact up to 32 terms,
 * then Euler-Maclaurin with two correction terms (relative error < 1e-9 for the
 * exponents a spec may use).
 */
static double zipf_h(uint64_t n, double s)
{
	enum { M = 32 };
	static __thread double cached_s = -1, prefix[M + 1];
	double fm, fn, integral;

	if (s != cached_s) {
		prefix[0] = 0;
		for (unsigned int k = 1; k <= M; k++)
			prefix[k] = prefix[k - 1] + pow((double)k, -s);
		cached_s = s;
	}
	if (n <= M)
		return prefix[n];
	fm = pow((double)M, -s);
	fn = pow((double)n, -s);
	if (fabs(s - 1.0) < 1e-12)
		integral = log((double)n / (double)M);
	else
		integral = (pow((double)n, 1 - s) - pow((double)M, 1 - s)) / (1 - s);
	return prefix[M] + integral + (fn - fm) / 2 +
	       s * (fm / (double)M - fn / (double)n) / 12;
}

static double normal_cdf(double x)
{
	return 0.5 * erfc(-x / M_SQRT2);
}

double vt_range_mass(const struct vt_hot_range *r, unsigned int page_shift, uint64_t a, uint64_t b)
{
	uint64_t end = r->start + r->size;
	uint64_t pages, pa, pb;
	double mu, sigma, lo, hi;

	if (a < r->start)
		a = r->start;
	if (b > end)
		b = end;
	if (a >= b)
		return 0;
	switch (r->pattern) {
	case VT_PATTERN_UNIFORM:
		return (double)(b - a) / (double)r->size;
	case VT_PATTERN_GAUSSIAN:
		mu = (double)r->start + (double)r->size / 2;
		sigma = r->param * (double)r->size;
		lo = normal_cdf(((double)r->start - mu) / sigma);
		hi = normal_cdf(((double)end - mu) / sigma);
		return (normal_cdf(((double)b - mu) / sigma) -
			normal_cdf(((double)a - mu) / sigma)) / (hi - lo);
	case VT_PATTERN_ZIPF:
		pages = r->size >> page_shift;
		pa = (a - r->start) >> page_shift;
		pb = (b - r->start + (1ULL << page_shift) - 1) >> page_shift;
		return (zipf_h(pb, r->param) - zipf_h(pa, r->param)) / zipf_h(pages, r->param);
	}
	return 0;
}

double vt_phase_rate(const struct vt_workload *w, const struct vt_phase *p, uint64_t a, uint64_t b)
{
	double share = 0;

	if (p->weight_sum <= 0)
		return 0;
	for (unsigned int i = 0; i < p->nr_ranges; i++) {
		const struct vt_hot_range *r = &p->ranges[i];

		if (r->start < b && a < r->start + r->size)
			share += r->weight * vt_range_mass(r, w->page_shift, a, b);
	}
	return p->access_rate * share / p->weight_sum;
}

double vt_workload_accesses(const struct vt_workload *w, uint64_t a, uint64_t b, double t0, double t1)
{
	double sum = 0, start = 0;

	for (unsigned int i = 0; i < w->nr_phases && t0 < t1; i++) {
		double end = start + w->phases[i].duration_s;
		double lo = t0, hi = t1;

		if (i == w->nr_phases - 1)
			end = INFINITY;
		if (lo < start)
			lo = start;
		if (hi > end)
			hi = end;
		if (hi > lo)
			sum += (hi - lo) * vt_phase_rate(w, &w->phases[i], a, b);
		start = end;
	}
	return sum;
}

double vt_rand_gaussian(GRand *rng)
{
	double u = 1.0 - g_rand_double(rng);	/* (0, 1] */

	return sqrt(-2.0 * log(u)) * cos(2 * M_PI * g_rand_double(rng));
}

static uint64_t draw_zipf_page(uint64_t pages, double s, GRand *rng)
{
	double target = g_rand_double(rng) * zipf_h(pages, s);
	uint64_t lo = 1, hi = pages;

	/* smallest k with H(k) >= target */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (zipf_h(mid, s) >= target)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo - 1;
}

uint64_t vt_phase_draw(const struct vt_workload *w, const struct vt_phase *p, GRand *rng)
{
	double pick = g_rand_double(rng) * p->weight_sum;
	const struct vt_hot_range *r = &p->ranges[p->nr_ranges - 1];
	uint64_t pages, page;

	for (unsigned int i = 0; i < p->nr_ranges; i++) {
		if (pick < p->ranges[i].weight) {
			r = &p->ranges[i];
			break;
		}
		pick -= p->ranges[i].weight;
	}
	pages = r->size >> w->page_shift;
	switch (r->pattern) {
	case VT_PATTERN_GAUSSIAN:
		for (;;) {
			double x = (double)r->start + (double)r->size / 2 +
				   vt_rand_gaussian(rng) * r->param * (double)r->size;

			if (x >= (double)r->start && x < (double)(r->start + r->size))
				return r->start + ((((uint64_t)x - r->start) >> w->page_shift)
						   << w->page_shift);
		}
	case VT_PATTERN_ZIPF:
		page = draw_zipf_page(pages, r->param, rng);
		break;
	case VT_PATTERN_UNIFORM:
	default:
		page = (uint64_t)(g_rand_double(rng) * (double)pages);
		if (page >= pages)
			page = pages - 1;
		break;
	}
	return r->start + (page << w->page_shift);
}

static uint64_t phase_bytes(const struct vt_phase *p, uint64_t a, uint64_t b, bool scored)
{
	uint64_t sum = 0;

	for (unsigned int i = 0; i < p->nr_ranges; i++) {
		uint64_t lo = MAX(a, p->ranges[i].start);
		uint64_t hi = MIN(b, p->ranges[i].start + p->ranges[i].size);

		if (hi > lo && !(scored && p->ranges[i].unscored))
			sum += hi - lo;
	}
	return sum;
}

uint64_t vt_phase_hot_bytes(const struct vt_phase *p, uint64_t a, uint64_t b)
{
	return phase_bytes(p, a, b, true);
}

bool vt_workload_ever_accessed(const struct vt_workload *w, uint64_t a, uint64_t b)
{
	for (unsigned int i = 0; i < w->nr_phases; i++)
		if (w->phases[i].access_rate > 0 && phase_bytes(&w->phases[i], a, b, false))
			return true;
	return false;
}

uint64_t vt_phase_hot_total(const struct vt_phase *p)
{
	return vt_phase_hot_bytes(p, 0, UINT64_MAX);
}
