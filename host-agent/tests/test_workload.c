// SPDX-License-Identifier: GPL-2.0-or-later
/* The workload model: masses sum to one, rates integrate, draws follow masses. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "workload.h"

static struct vt_workload *one_range(enum vt_pattern pattern, double param, uint64_t size)
{
	g_autofree char *json = g_strdup_printf(
		"{\"footprint\":\"1GiB\",\"phases\":[{\"duration_s\":2,\"access_rate\":1e6,\"hot\":["
		"{\"start\":\"64MiB\",\"size\":%" G_GUINT64_FORMAT "%s%s}]}]}", size,
		pattern == VT_PATTERN_GAUSSIAN ? ",\"pattern\":\"gaussian\"" :
		pattern == VT_PATTERN_ZIPF ? ",\"pattern\":\"zipf\"" : "",
		"");
	struct vt_workload *w = vt_workload_from_json(json, -1, NULL);

	assert_non_null(w);
	if (pattern != VT_PATTERN_UNIFORM)
		w->phases[0].ranges[0].param = param;
	return w;
}

static void test_masses_partition(void **state)
{
	static const struct {
		enum vt_pattern pattern;
		double param;
	} cases[] = {
		{ VT_PATTERN_UNIFORM, 0 }, { VT_PATTERN_GAUSSIAN, 1.0 / 6 },
		{ VT_PATTERN_GAUSSIAN, 0.01 }, { VT_PATTERN_ZIPF, 1.0 }, { VT_PATTERN_ZIPF, 0.7 },
		{ VT_PATTERN_ZIPF, 2.5 },
	};
	(void)state;
	for (unsigned int c = 0; c < G_N_ELEMENTS(cases); c++) {
		g_autoptr(vt_workload) w = one_range(cases[c].pattern, cases[c].param, 16 << 20);
		const struct vt_hot_range *r = &w->phases[0].ranges[0];
		double sum = 0;

		/* 2 MiB pieces, and a piece that sticks out on both sides */
		for (uint64_t a = r->start; a < r->start + r->size; a += 2 << 20) {
			double m = vt_range_mass(r, 12, a, a + (2 << 20));

			assert_true(m >= 0 && m <= 1);
			sum += m;
		}
		assert_true(fabs(sum - 1) < 1e-9);
		assert_true(fabs(vt_range_mass(r, 12, 0, 1ULL << 40) - 1) < 1e-9);
		assert_true(vt_range_mass(r, 12, 0, r->start) == 0);
		/* rate integrates to the phase's rate; accesses to rate * time */
		assert_true(fabs(vt_phase_rate(w, &w->phases[0], 0, 1ULL << 30) - 1e6) < 1e-3);
		assert_true(fabs(vt_workload_accesses(w, 0, 1ULL << 30, 0.5, 1.5) - 1e6) < 1e-3);
		/* after the last phase the last phase continues */
		assert_true(fabs(vt_workload_accesses(w, 0, 1ULL << 30, 1.0, 3.0) - 2e6) < 1e-3);
	}
}

/* The zipf mass of the first pages against the brute-force sum. */
static void test_zipf_exact(void **state)
{
	g_autoptr(vt_workload) w = one_range(VT_PATTERN_ZIPF, 1.0, 100ULL << 12);
	const struct vt_hot_range *r = &w->phases[0].ranges[0];
	double h = 0, head = 0;

	(void)state;
	for (int k = 1; k <= 100; k++)
		h += 1.0 / k;
	for (int k = 1; k <= 40; k++)
		head += 1.0 / k;
	assert_true(fabs(vt_range_mass(r, 12, r->start, r->start + (40 << 12)) - head / h) < 1e-9);
	assert_true(fabs(vt_range_mass(r, 12, r->start + (99 << 12), r->start + (100 << 12)) -
			 (1.0 / 100) / h) < 1e-9);
}

/* Draws land inside the range with the frequencies the masses predict. */
static void test_draws_follow_masses(void **state)
{
	static const enum vt_pattern patterns[] = { VT_PATTERN_UNIFORM, VT_PATTERN_GAUSSIAN,
						    VT_PATTERN_ZIPF };
	(void)state;
	for (unsigned int c = 0; c < G_N_ELEMENTS(patterns); c++) {
		g_autoptr(vt_workload) w = one_range(patterns[c], patterns[c] == VT_PATTERN_ZIPF ?
						     1.0 : 1.0 / 6, 8 << 20);
		const struct vt_hot_range *r = &w->phases[0].ranges[0];
		GRand *rng = g_rand_new_with_seed(7);
		unsigned int bins[8] = { 0 }, n = 80000;

		for (unsigned int i = 0; i < n; i++) {
			uint64_t a = vt_phase_draw(w, &w->phases[0], rng);

			assert_true(a >= r->start && a < r->start + r->size);
			assert_int_equal(a % 4096, 0);
			bins[(a - r->start) >> 20]++;
		}
		for (unsigned int b = 0; b < 8; b++) {
			double expect = n * vt_range_mass(r, 12, r->start + ((uint64_t)b << 20),
							 r->start + ((uint64_t)(b + 1) << 20));
			double sd = sqrt(expect) + 1;

			if (fabs(bins[b] - expect) > 5 * sd)
				fail_msg("pattern %u bin %u: %u draws, expected %.0f", c, b, bins[b], expect);
		}
		g_rand_free(rng);
	}
}

static void test_hot_bytes(void **state)
{
	g_autoptr(vt_workload) w = vt_workload_builtin("multi-phase", NULL);
	const struct vt_phase *p3 = &w->phases[2];

	(void)state;
	assert_int_equal(vt_phase_hot_total(p3), 20ULL << 30);
	assert_int_equal(vt_phase_hot_bytes(p3, 0, 700ULL << 30), 0);
	assert_int_equal(vt_phase_hot_bytes(p3, 0, (700ULL << 30) + 8192), 4096);
	assert_true(vt_workload_ever_accessed(w, 1ULL << 40, (1ULL << 40) + (4 << 20)));
	assert_false(vt_workload_ever_accessed(w, 0, 1ULL << 30));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_masses_partition),
		cmocka_unit_test(test_zipf_exact),
		cmocka_unit_test(test_draws_follow_masses),
		cmocka_unit_test(test_hot_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
