// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The cover of a range (cover.h): spans tile the range exactly, each aligned
 * to its level, as high as fits; and vt_cover_test() finds what was touched
 * at any stride and phase, as do covers planned into one batch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cover.h"
#include "sim_source.h"

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define TiB (1ULL << 40)

/* The source keeps a pointer to the workload: free both at the end. */
static struct vt_workload *workload;

static struct vt_access_source *sim_of(const char *json)
{
	vt_workload_free(workload);
	workload = vt_workload_from_json(json, -1, NULL);
	assert_non_null(workload);
	return vt_sim_new(workload, 1);
}

static void check_tiling(const struct vt_access_source *src, uint64_t start, uint64_t end)
{
	struct vt_cover_span spans[VT_COVER_MAX_SPANS];
	unsigned int n = vt_cover_spans(src, start, end, spans);
	uint64_t at = start;

	assert_true(n <= VT_COVER_MAX_SPANS);
	for (unsigned int i = 0; i < n; i++) {
		uint64_t size = vt_level_size(spans[i].level);

		if (spans[i].start != at || spans[i].end <= spans[i].start ||
		    spans[i].start % size || spans[i].end % size)
			fail_msg("[%#" G_GINT64_MODIFIER "x, %#" G_GINT64_MODIFIER "x) span %u: "
				 "[%#" G_GINT64_MODIFIER "x, %#" G_GINT64_MODIFIER "x) level %u",
				 start, end, i, spans[i].start, spans[i].end, spans[i].level);
		/* as high as fits: no entry of the next level lies wholly inside the span */
		if (spans[i].level < vt_top_level(src)) {
			uint64_t up = vt_level_size(spans[i].level + 1);
			uint64_t lo = (spans[i].start + up - 1) & ~(up - 1);

			assert_false(lo + up <= spans[i].end &&
				     vt_cover_entries(src, lo, lo + up) == 1 && lo >= start &&
				     lo + up <= end && spans[i].end - spans[i].start > up);
		}
		at = spans[i].end;
	}
	assert_int_equal(at, end);
}

static void test_spans(void **state)
{
	struct vt_access_source *src = sim_of("{\"footprint\":\"4TiB\",\"phases\":[{\"duration_s\":1,"
					      "\"access_rate\":0,\"hot\":[]}]}");
	struct vt_cover_span spans[VT_COVER_MAX_SPANS];
	GRand *rng = g_rand_new_with_seed(3);

	(void)state;
	/* 1 GiB + 3 MiB + 12 KiB .. 3 TiB + 5 GiB: PTEs, PMDs, PUDs, P4Ds, PUDs */
	assert_int_equal(vt_cover_spans(src, GiB + 3 * MiB + 12 * KiB, 3 * TiB + 5 * GiB, spans), 5);
	assert_int_equal(spans[0].level, VT_LEVEL_PTE);
	assert_int_equal(spans[0].end, GiB + 4 * MiB);
	assert_int_equal(spans[1].level, VT_LEVEL_PMD);
	assert_int_equal(spans[1].end, 2 * GiB);
	assert_int_equal(spans[2].level, VT_LEVEL_PUD);
	assert_int_equal(spans[2].end, 512 * GiB);
	assert_int_equal(spans[3].level, VT_LEVEL_P4D);
	assert_int_equal(spans[3].end, 3 * TiB);
	assert_int_equal(spans[4].level, VT_LEVEL_PUD);
	assert_int_equal(vt_cover_entries(src, GiB + 3 * MiB + 12 * KiB, 3 * TiB + 5 * GiB),
			 253 + 510 + 510 + 5 + 5);
	/* inside one PMD: PTEs only */
	assert_int_equal(vt_cover_spans(src, 4 * KiB, 2 * MiB - 4 * KiB, spans), 1);
	assert_int_equal(spans[0].level, VT_LEVEL_PTE);
	/* random ranges tile */
	for (unsigned int i = 0; i < 2000; i++) {
		uint64_t a = (uint64_t)g_rand_double_range(rng, 0, (double)(4 * TiB)) & ~(4 * KiB - 1);
		uint64_t b = (uint64_t)g_rand_double_range(rng, 0, (double)(4 * TiB)) & ~(4 * KiB - 1);

		if (a != b)
			check_tiling(src, MIN(a, b), MAX(a, b));
	}
	g_rand_free(rng);
	vt_source_destroy(src);
}

/* A 64 MiB hot range inside a cold 100 GiB range is found at every phase of a stride of 8. */
static void test_finds_touched(void **state)
{
	struct vt_access_source *src = sim_of(
		"{\"footprint\":\"256GiB\",\"phases\":[{\"duration_s\":10,\"access_rate\":1e7,"
		"\"hot\":[{\"start\":\"60GiB+6MiB\",\"size\":\"64MiB\"}]}]}");
	g_autoptr(GArray) young = g_array_new(FALSE, FALSE, sizeof(struct vt_cover_span));
	uint64_t start = 5 * GiB + 3 * MiB + 12 * KiB, end = 105 * GiB + 7 * MiB;

	(void)state;
	vt_cover_test(src, start, end, VT_LEVEL_PMD, 1, false, 0, young);	/* clear */
	for (unsigned int phase = 0; phase < 8; phase++) {
		g_array_set_size(young, 0);
		vt_sim_advance(src, 200 * 1000 * 1000);
		assert_true(vt_cover_test(src, start, end, VT_LEVEL_PMD, 8, false, phase, young) > 0);
		assert_int_equal(young->len, 1);
		/* the PUD holding it: the cover's top level is tested whole */
		assert_int_equal(g_array_index(young, struct vt_cover_span, 0).start, 60 * GiB);
		assert_int_equal(g_array_index(young, struct vt_cover_span, 0).end, 61 * GiB);
	}
	/* nothing touched in a cold range next to it */
	g_array_set_size(young, 0);
	vt_cover_test(src, 62 * GiB + 4 * KiB, 90 * GiB, VT_LEVEL_PMD, 1, false, 0, young);
	vt_sim_advance(src, 200 * 1000 * 1000);
	assert_int_equal(vt_cover_test(src, 62 * GiB + 4 * KiB, 90 * GiB, VT_LEVEL_PMD, 8, false, 1, young), 0);
	vt_source_destroy(src);
}

/*
 * A cover whose top is the PMD, strided too (stride_top): one PMD in 8 tested
 * per phase, and a 64 MiB hot range (32 PMDs) is still found at every phase,
 * widened by the untested PMDs beside it; whole, it is found exactly.
 */
static void test_stride_top(void **state)
{
	struct vt_access_source *src = sim_of(
		"{\"footprint\":\"256GiB\",\"phases\":[{\"duration_s\":10,\"access_rate\":1e7,"
		"\"hot\":[{\"start\":\"60GiB+6MiB\",\"size\":\"64MiB\"}]}]}");
	g_autoptr(GArray) young = g_array_new(FALSE, FALSE, sizeof(struct vt_cover_span));
	uint64_t start = 60 * GiB + 12 * KiB, end = 60 * GiB + 900 * MiB;
	const struct vt_cover_span *y;
	uint64_t before;

	(void)state;
	vt_cover_test(src, start, end, VT_LEVEL_PMD, 1, false, 0, young);	/* clear */
	for (unsigned int phase = 0; phase < 8; phase++) {
		g_array_set_size(young, 0);
		vt_sim_advance(src, 200 * 1000 * 1000);
		before = vt_source_checks_total(src);
		assert_true(vt_cover_test(src, start, end, VT_LEVEL_PMD, 8, true, phase, young) > 0);
		/* 449 PMDs in the cover, one in 8 of them tested */
		assert_true(vt_source_checks_total(src) - before <= 449 / 8 + 1);
		assert_int_equal(young->len, 1);
		y = &g_array_index(young, struct vt_cover_span, 0);
		assert_true(y->start <= 60 * GiB + 6 * MiB && y->start + 14 * MiB >= 60 * GiB + 6 * MiB);
		assert_true(y->end >= 60 * GiB + 70 * MiB && y->end <= 60 * GiB + 84 * MiB);
	}
	g_array_set_size(young, 0);
	vt_sim_advance(src, 200 * 1000 * 1000);
	vt_cover_test(src, start, end, VT_LEVEL_PMD, 8, false, 0, young);
	assert_int_equal(young->len, 1);
	y = &g_array_index(young, struct vt_cover_span, 0);
	assert_int_equal(y->start, 60 * GiB + 6 * MiB);
	assert_int_equal(y->end, 60 * GiB + 70 * MiB);
	vt_source_destroy(src);
}

/*
 * Two covers planned into one batch (vt_cover_plan(), vt_cover_read()) read
 * what each reads alone: the cold range reads nothing, the one holding the
 * hot range its PUD, and the probes are those of the two tests.
 */
static void test_plan_batch(void **state)
{
	struct vt_access_source *src = sim_of(
		"{\"footprint\":\"256GiB\",\"phases\":[{\"duration_s\":10,\"access_rate\":1e7,"
		"\"hot\":[{\"start\":\"60GiB+6MiB\",\"size\":\"64MiB\"}]}]}");
	g_autoptr(GArray) young = g_array_new(FALSE, FALSE, sizeof(struct vt_cover_span));
	g_autoptr(GArray) probes = g_array_new(FALSE, FALSE, sizeof(struct vt_probe));
	uint64_t a_start = 5 * GiB + 3 * MiB + 12 * KiB, a_end = 59 * GiB + 7 * MiB;
	uint64_t b_start = 59 * GiB + 7 * MiB, b_end = 105 * GiB + 7 * MiB, before;
	struct vt_cover_plan a, b;

	(void)state;
	vt_cover_test(src, a_start, b_end, VT_LEVEL_PMD, 1, false, 0, young);	/* clear */
	vt_sim_advance(src, 200 * 1000 * 1000);
	vt_cover_plan(src, a_start, a_end, VT_LEVEL_PMD, 8, false, 3, &a, probes);
	vt_cover_plan(src, b_start, b_end, VT_LEVEL_PMD, 8, false, 3, &b, probes);
	assert_int_equal(a.first, 0);
	assert_int_equal(b.first, a.nr_probes);
	assert_int_equal(probes->len, a.nr_probes + b.nr_probes);
	before = vt_source_checks_total(src);
	assert_int_equal(vt_source_batch(src, (struct vt_probe *)(void *)probes->data, probes->len), 0);
	assert_int_equal(vt_source_checks_total(src) - before, probes->len);
	g_array_set_size(young, 0);
	assert_int_equal(vt_cover_read(&a, (const struct vt_probe *)(void *)probes->data, young), 0);
	assert_int_equal(young->len, 0);
	assert_true(vt_cover_read(&b, (const struct vt_probe *)(void *)probes->data, young) > 0);
	assert_int_equal(young->len, 1);
	assert_int_equal(g_array_index(young, struct vt_cover_span, 0).start, 60 * GiB);
	assert_int_equal(g_array_index(young, struct vt_cover_span, 0).end, 61 * GiB);
	vt_source_destroy(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spans),
		cmocka_unit_test(test_finds_touched),
		cmocka_unit_test(test_stride_top),
		cmocka_unit_test(test_plan_batch),
	};

	int ret = cmocka_run_group_tests(tests, NULL, NULL);

	vt_workload_free(workload);
	return ret;
}
