// SPDX-License-Identifier: GPL-2.0-or-later
/* Region list invariants: build, split, merge, age, the checker, the budget. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "region.h"
#include "sim_source.h"

#define GiB (1ULL << 30)
#define MiB (1ULL << 20)

static struct vt_region *at(GArray *r, unsigned int i)
{
	return &g_array_index(r, struct vt_region, i);
}

static void assert_regions_ok(GArray *regions, const struct vt_range *ranges, size_t n)
{
	g_autofree char *err = vt_regions_check(regions, ranges, n);

	if (err)
		fail_msg("%s", err);
}

static void test_from_ranges_and_even_split(void **state)
{
	const struct vt_range ranges[] = { { 0, 3 * GiB + 6 * MiB }, { 8 * GiB, 9 * GiB } };
	GArray *r = vt_regions_new();

	(void)state;
	vt_regions_from_ranges(r, ranges, 2, GiB);
	assert_int_equal(r->len, 5);	/* 1+1+1+6MiB, and 1 */
	assert_int_equal(at(r, 3)->end - at(r, 3)->start, 6 * MiB);
	assert_regions_ok(r, ranges, 2);
	vt_regions_split_evenly(r, 12, 2 * MiB);
	assert_int_equal(r->len, 12);
	assert_regions_ok(r, ranges, 2);
	vt_for_each_region(x, r) {
		assert_int_equal(x->start % (2 * MiB), 0);
		assert_int_equal(x->end % (2 * MiB), 0);
	}
	/* cannot split below the alignment: stops, stays valid */
	vt_regions_split_evenly(r, 100000, GiB);
	assert_regions_ok(r, ranges, 2);
	g_array_free(r, TRUE);
}

static void test_checker_finds_breaches(void **state)
{
	const struct vt_range ranges[] = { { 0, 4 * GiB } };
	GArray *r = vt_regions_new();
	char *err;

	(void)state;
	vt_regions_from_ranges(r, ranges, 1, GiB);
	at(r, 1)->start += 4096;	/* gap */
	err = vt_regions_check(r, ranges, 1);
	assert_non_null(err);
	g_free(err);
	at(r, 1)->start -= 8192;	/* overlap */
	err = vt_regions_check(r, ranges, 1);
	assert_non_null(err);
	g_free(err);
	at(r, 1)->start += 4096;
	at(r, 3)->end -= 4096;		/* short */
	err = vt_regions_check(r, ranges, 1);
	assert_non_null(err);
	g_free(err);
	at(r, 3)->end += 4096;
	assert_regions_ok(r, ranges, 1);
	g_array_free(r, TRUE);
}

static void test_split_at_moves_probes(void **state)
{
	const struct vt_range ranges[] = { { 0, GiB } };
	GArray *r = vt_regions_new();

	(void)state;
	vt_regions_from_ranges(r, ranges, 1, 0);
	at(r, 0)->nr_prepared = 3;
	at(r, 0)->prepared[0].addr = 4096;
	at(r, 0)->prepared[1].addr = 600 * MiB;
	at(r, 0)->prepared[2].addr = 100 * MiB;
	vt_regions_split_at(r, 0, 512 * MiB);
	assert_int_equal(r->len, 2);
	assert_int_equal(at(r, 0)->nr_prepared, 2);
	assert_int_equal(at(r, 1)->nr_prepared, 1);
	assert_int_equal(at(r, 1)->prepared[0].addr, 600 * MiB);
	assert_regions_ok(r, ranges, 1);
	g_array_free(r, TRUE);
}

static void set_acc(GArray *r, const double *acc)
{
	for (unsigned int i = 0; i < r->len; i++)
		at(r, i)->accesses = acc[i];
}

static void test_merge_rules(void **state)
{
	const struct vt_range ranges[] = { { 0, 8 * GiB } };
	const double acc[] = { 0, 0.05, 0.5, 0.58, 1, 1, 0.95, 0 };
	GArray *r = vt_regions_new();

	(void)state;
	vt_regions_from_ranges(r, ranges, 1, GiB);
	set_acc(r, acc);
	vt_regions_merge(r, 0.1, 100 * GiB, false);
	/* {0,.05} {.5,.58} {1,1,.95} {0} */
	assert_int_equal(r->len, 4);
	assert_int_equal(at(r, 2)->end - at(r, 2)->start, 3 * GiB);
	assert_true(fabs(at(r, 2)->accesses - (1 + 1 + 0.95) / 3) < 1e-12);
	assert_regions_ok(r, ranges, 1);

	/* size limit */
	g_array_set_size(r, 0);
	vt_regions_from_ranges(r, ranges, 1, GiB);
	vt_regions_merge(r, 0.1, 2 * GiB, false);
	assert_int_equal(r->len, 4);

	/* fresh regions stay apart; zero stays apart from seen */
	g_array_set_size(r, 0);
	vt_regions_from_ranges(r, ranges, 1, GiB);
	set_acc(r, acc);
	at(r, 4)->fresh = true;
	vt_regions_merge(r, 0.1, 100 * GiB, true);
	/* {0} {.05} {.5,.58} {1 fresh} {1,.95} {0} */
	assert_int_equal(r->len, 6);
	assert_true(at(r, 3)->fresh);
	at(r, 0)->warm = true;	/* a scan saw young entries in the zero region */
	at(r, 3)->fresh = false;
	vt_regions_merge(r, 0.1, 100 * GiB, true);
	assert_int_equal(r->len, 4);	/* {0 warm, .05} {.5,.58} {1,1,.95} {0} */
	assert_true(at(r, 0)->warm);
	assert_regions_ok(r, ranges, 1);
	g_array_free(r, TRUE);
}

/*
 * A resolved page-level edge (~0.7) merges into its hot neighbour (1.0) and
 * the union stays resolved; it never merges with a region no scan saw young
 * (a flex overshoot that reads 1.0 beyond the edge). Before, the edge stayed
 * apart for ever and was re-cut every fourth window: scattered-200 spent
 * ~200k page checks in those windows.
 */
static void test_merge_keeps_resolved_edges(void **state)
{
	const struct vt_range ranges[] = { { 0, 4 * GiB } };
	const double acc[] = { 0, 0.7, 1.0, 1.0 };
	GArray *r = vt_regions_new();

	(void)state;
	vt_regions_from_ranges(r, ranges, 1, GiB);
	set_acc(r, acc);
	at(r, 1)->resolved = at(r, 1)->warm = true;
	at(r, 2)->warm = true;	/* region 3: read 1.0, but not warm */
	vt_regions_merge(r, 0.1, 100 * GiB, true);
	/* {0} {.7 resolved + 1 warm} {1 not warm} */
	assert_int_equal(r->len, 3);
	assert_true(at(r, 1)->resolved);
	assert_int_equal(at(r, 1)->end - at(r, 1)->start, 2 * GiB);
	assert_false(at(r, 2)->resolved);
	assert_regions_ok(r, ranges, 1);
	/* a lukewarm neighbour (< 0.5) stays apart from a resolved edge beyond the threshold */
	g_array_set_size(r, 0);
	vt_regions_from_ranges(r, ranges, 1, GiB);
	set_acc(r, (const double[]){ 0.3, 0.7, 0, 0 });
	at(r, 0)->warm = at(r, 1)->warm = at(r, 1)->resolved = true;
	vt_regions_merge(r, 0.1, 100 * GiB, true);
	assert_int_equal(r->len, 3);
	g_array_free(r, TRUE);
}

static void test_end_window_age(void **state)
{
	const struct vt_range ranges[] = { { 0, 2 * GiB } };
	GArray *r = vt_regions_new();

	(void)state;
	vt_regions_from_ranges(r, ranges, 1, GiB);
	at(r, 0)->nr_checks = 40;
	at(r, 0)->nr_young = 20;
	at(r, 1)->nr_checks = 0;
	vt_regions_end_window(r, 0.1);
	assert_true(at(r, 0)->accesses == 0.5);
	assert_int_equal(at(r, 0)->age, 0);	/* moved from 0 to 0.5 */
	assert_int_equal(at(r, 1)->age, 1);
	assert_int_equal(at(r, 0)->nr_checks, 0);
	at(r, 0)->nr_checks = 40;
	at(r, 0)->nr_young = 22;
	vt_regions_end_window(r, 0.1);
	assert_int_equal(at(r, 0)->age, 1);
	assert_true(at(r, 0)->last_accesses == 0.5);
	g_array_free(r, TRUE);
}

/* The budget: one probe each first, extra ones go where hotness moved. */
static void test_budget(void **state)
{
	const struct vt_range ranges[] = { { 0, 10 * GiB } };
	GArray *r = vt_regions_new();
	struct vt_sampler s;
	unsigned int total = 0;

	(void)state;
	vt_sampler_init(&s);
	vt_regions_from_ranges(r, ranges, 1, GiB);
	vt_for_each_region(x, r) {
		x->accesses = 0.5;
		x->last_accesses = 0.5;
	}
	at(r, 3)->last_accesses = 0;	/* changed by 0.5 */
	vt_sampler_budget(&s, r, 0, 0, 40);
	vt_for_each_region(x, r)
		assert_int_equal(x->nr_probes, 1);
	/* 10 regions x 40 samples x 2 = 800 checks for one probe each */
	vt_sampler_budget(&s, r, 4000, 0, 40);
	assert_int_equal(s.every, 1);
	vt_for_each_region(x, r) {
		assert_true(x->nr_probes >= 1 && x->nr_probes <= VT_REGION_MAX_PROBES);
		total += x->nr_probes;
	}
	assert_true(at(r, 3)->nr_probes > at(r, 0)->nr_probes);
	assert_true(total * 2 * 40 <= 4000);
	/* reserved checks shrink what sampling gets, to half the budget at most */
	vt_sampler_budget(&s, r, 4000, 3000, 40);
	total = 0;
	vt_for_each_region(x, r)
		total += x->nr_probes;
	assert_true(total * 2 * 40 <= 2000);
	assert_true(total > 10);
	/* too small for one probe each: sample every N-th interval */
	vt_sampler_budget(&s, r, 200, 0, 40);
	assert_int_equal(s.every, 4);
	vt_for_each_region(x, r)
		assert_int_equal(x->nr_probes, 1);
	vt_sampler_fini(&s);
	g_array_free(r, TRUE);
}

static unsigned int pick_pmd(const struct vt_region *r, uint64_t *addr, void *arg)
{
	(void)r;
	(void)addr;
	(void)arg;
	return VT_LEVEL_PMD;
}

/*
 * Hundreds of regions, every other one hot: each region must get the results
 * of its own probes (a batch index once wrapped at 256 and regions read their
 * neighbours' bits).
 */
static void test_sampler_many_regions(void **state)
{
	GString *json = g_string_new("{\"footprint\":\"2GiB\",\"phases\":[{\"duration_s\":10,"
				     "\"access_rate\":1e9,\"hot\":[");
	g_autoptr(vt_workload) w = NULL;
	const struct vt_range ranges[] = { { 0, 2 * GiB } };
	struct vt_access_source *src;
	GArray *r = vt_regions_new();
	GRand *rng = g_rand_new_with_seed(1);
	struct vt_sampler s;

	(void)state;
	/* hot: regions 0..299 and 600..899, each 2 MiB */
	g_string_append_printf(json, "{\"start\":\"0\",\"size\":\"600MiB\"},"
			       "{\"start\":\"1200MiB\",\"size\":\"600MiB\"}");
	g_string_append(json, "]}]}");
	w = vt_workload_from_json(json->str, -1, NULL);
	g_string_free(json, TRUE);
	assert_non_null(w);
	src = vt_sim_new(w, 1);
	vt_sampler_init(&s);
	vt_regions_from_ranges(r, ranges, 1, 2 * MiB);
	assert_int_equal(r->len, 1024);
	for (unsigned int i = 0; i < 40; i++) {
		vt_sim_advance(src, 5000000);
		assert_int_equal(vt_sampler_check(&s, src, r), 0);
		assert_int_equal(vt_sampler_prepare(&s, src, r, rng, pick_pmd, NULL), 0);
	}
	vt_regions_end_window(r, 0.1);
	for (unsigned int i = 0; i < r->len; i++) {
		double expect = (i < 300 || (i >= 600 && i < 900)) ? 1 : 0;

		if (fabs(at(r, i)->accesses - expect) > 0.01)
			fail_msg("region %u: accesses %.3f, expected %.0f", i, at(r, i)->accesses, expect);
	}
	vt_sampler_fini(&s);
	vt_source_destroy(src);
	g_rand_free(rng);
	g_array_free(r, TRUE);
}

/*
 * Cold regions of VT_REGION_JOIN_SWEPT or more together, one of them swept,
 * are left to the caller (telescope joins them after its sweep has read
 * their covers); smaller ones, and unswept ones, merge as before.
 */
static void test_merge_leaves_swept_cold(void **state)
{
	const struct vt_range ranges[] = { { 0, 4 * GiB } };
	GArray *r = vt_regions_new();

	(void)state;
	vt_regions_from_ranges(r, ranges, 1, GiB);
	at(r, 1)->swept = true;
	vt_regions_merge(r, 0.1, 100 * GiB, true);
	/* {0} {1 swept} {2, 3}: nothing joins the swept region */
	assert_int_equal(r->len, 3);
	assert_true(at(r, 1)->swept);
	assert_int_equal(at(r, 2)->start, 2 * GiB);
	assert_regions_ok(r, ranges, 1);

	/* below the size, a swept region merges (and its union is not swept) */
	g_array_set_size(r, 0);
	vt_regions_from_ranges(r, (const struct vt_range[]){ { 0, 32 * MiB } }, 1, 8 * MiB);
	at(r, 1)->swept = true;
	vt_regions_merge(r, 0.1, 100 * GiB, true);
	assert_int_equal(r->len, 1);
	assert_false(at(r, 0)->swept);
	g_array_free(r, TRUE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_from_ranges_and_even_split),
		cmocka_unit_test(test_checker_finds_breaches),
		cmocka_unit_test(test_split_at_moves_probes),
		cmocka_unit_test(test_merge_rules),
		cmocka_unit_test(test_merge_keeps_resolved_edges),
		cmocka_unit_test(test_merge_leaves_swept_cold),
		cmocka_unit_test(test_end_window_age),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_sampler_many_regions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
