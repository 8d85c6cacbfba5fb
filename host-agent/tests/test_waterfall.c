// SPDX-License-Identifier: GPL-2.0-or-later
/* The waterfall: cold chunks step down one tier with room at a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "waterfall.h"

#define CHUNK (2ULL << 20)
#define NR_CHUNKS 8
#define NR_TIERS 5	/* 0 dram, 1 cxl, 2 pmem (NUMA); 3 lz4, 4 zstd (compressed) */

static struct vt_mtm *mtm(void)
{
	struct vt_range r = { 0, NR_CHUNKS * CHUNK };
	struct vt_mtm *m = vt_mtm_new(&r, 1, CHUNK, 16384, NR_TIERS);

	assert_non_null(m);
	return m;
}

static struct vt_mtm_chunk *chunk(struct vt_mtm *m, unsigned int i)
{
	return &g_array_index(m->chunks, struct vt_mtm_chunk, i);
}

static void test_steps_down(void **state)
{
	struct vt_mtm *m = mtm();
	g_autoptr(GArray) orders = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_order));
	uint64_t room[NR_TIERS] = { ~0ULL, ~0ULL, 0, ~0ULL, ~0ULL };
	struct vt_waterfall_params p = { .age_windows = 2, .budget_bytes = 3 * CHUNK,
					 .first_ctier = 3 };
	const struct vt_mtm_order *o;

	(void)state;
	/* chunk 0 hot on dram; 1 cold long enough on dram; 2 cold on cxl (pmem is full:
	 * it skips to lz4); 3 cold for 2 windows on lz4 (not enough to leave a compressed
	 * tier); 4 cold for 8 windows on lz4; 5 on zstd, the last tier; 6 not yet cold */
	for (unsigned int i = 0; i < NR_CHUNKS; i++)
		chunk(m, i)->tier = -1;
	chunk(m, 0)->tier = 0;
	chunk(m, 1)->tier = 0, chunk(m, 1)->cold_windows = 2;
	chunk(m, 2)->tier = 1, chunk(m, 2)->cold_windows = 5;
	chunk(m, 3)->tier = 3, chunk(m, 3)->cold_windows = 2;
	chunk(m, 4)->tier = 3, chunk(m, 4)->cold_windows = 8;
	chunk(m, 5)->tier = 4, chunk(m, 5)->cold_windows = 99;
	chunk(m, 6)->tier = 0, chunk(m, 6)->cold_windows = 1;
	assert_int_equal(vt_waterfall_decide(m, &p, room, orders), 3 * CHUNK);
	assert_int_equal(orders->len, 3);
	o = &g_array_index(orders, struct vt_mtm_order, 0);
	assert_true(o->chunk == 1 && o->from_tier == 0 && o->to_tier == 1 && !o->promote);
	o = &g_array_index(orders, struct vt_mtm_order, 1);
	assert_true(o->chunk == 2 && o->from_tier == 1 && o->to_tier == 3);
	o = &g_array_index(orders, struct vt_mtm_order, 2);
	assert_true(o->chunk == 4 && o->from_tier == 3 && o->to_tier == 4);
	/* the budget is spent: nothing more, and room was charged */
	assert_int_equal(room[1], ~0ULL - CHUNK);
	vt_mtm_free(m);
}

/* A tier that refused a chunk (vt_mtm_arrivals) is skipped for it: the next one takes it. */
static void test_skips_refused(void **state)
{
	struct vt_mtm *m = mtm();
	g_autoptr(GArray) orders = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_order));
	uint64_t room[NR_TIERS] = { ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL };
	struct vt_waterfall_params p = { .age_windows = 1, .budget_bytes = 8 * CHUNK,
					 .first_ctier = 3 };
	const struct vt_mtm_order *o;

	(void)state;
	for (unsigned int i = 0; i < NR_CHUNKS; i++)
		chunk(m, i)->tier = -1;
	/* on pmem, cold for long: lz4 refused it (it does not compress), zstd did not */
	chunk(m, 0)->tier = 2, chunk(m, 0)->cold_windows = 99, chunk(m, 0)->refused = 1U << 3;
	/* refused by both compressed tiers: stays */
	chunk(m, 1)->tier = 2, chunk(m, 1)->cold_windows = 99;
	chunk(m, 1)->refused = (1U << 3) | (1U << 4);
	assert_int_equal(vt_waterfall_decide(m, &p, room, orders), CHUNK);
	assert_int_equal(orders->len, 1);
	o = &g_array_index(orders, struct vt_mtm_order, 0);
	assert_true(o->chunk == 0 && o->from_tier == 2 && o->to_tier == 4);
	vt_mtm_free(m);
}

static void test_budget_order_and_off(void **state)
{
	struct vt_mtm *m = mtm();
	g_autoptr(GArray) orders = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_order));
	uint64_t room[NR_TIERS] = { ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL };
	struct vt_waterfall_params p = { .age_windows = 1, .budget_bytes = CHUNK };
	struct vt_mtm_order taken = { .chunk = 0, .from_tier = 0, .to_tier = 1 };

	(void)state;
	for (unsigned int i = 0; i < NR_CHUNKS; i++)
		chunk(m, i)->tier = 0, chunk(m, i)->cold_windows = 3;
	/* a chunk MTM ordered already is not ordered twice */
	g_array_append_val(orders, taken);
	assert_int_equal(vt_waterfall_decide(m, &p, room, orders), CHUNK);
	assert_int_equal(orders->len, 2);
	assert_int_equal(g_array_index(orders, struct vt_mtm_order, 1).chunk, 1);
	/* age_windows 0: the waterfall is off */
	p.age_windows = 0;
	assert_int_equal(vt_waterfall_decide(m, &p, room, orders), 0);
	assert_int_equal(orders->len, 2);
	vt_mtm_free(m);
}

/* The round robin goes on where the budget stopped it, and looks at VT_WATERFALL_VISIT chunks a window. */
/* a chunk MTM (or another stage) already ordered this window gets no second order */
static void test_skips_ordered(void **state)
{
	struct vt_range r = { 0, 130 * CHUNK };
	struct vt_mtm *m = vt_mtm_new(&r, 1, CHUNK, 16384, NR_TIERS);
	g_autoptr(GArray) orders = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_order));
	uint64_t room[NR_TIERS] = { ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL };
	struct vt_waterfall_params p = { .age_windows = 1, .budget_bytes = ~0ULL, .first_ctier = 3 };
	struct vt_mtm_order earlier = { .chunk = 129, .from_tier = 0, .to_tier = 2 };

	(void)state;
	assert_non_null(m);
	for (unsigned int i = 0; i < m->chunks->len; i++)
		chunk(m, i)->tier = -1;
	chunk(m, 5)->tier = 0, chunk(m, 5)->cold_windows = 3;
	chunk(m, 129)->tier = 0, chunk(m, 129)->cold_windows = 3;
	g_array_append_val(orders, earlier);
	/* a stale mark from an earlier window must not hide chunk 5 */
	m->ordered[0] = ~0ULL;
	assert_int_equal(vt_waterfall_decide(m, &p, room, orders), CHUNK);
	assert_int_equal(orders->len, 2);
	assert_int_equal(g_array_index(orders, struct vt_mtm_order, 1).chunk, 5);
	assert_true(vt_mtm_ordered(m, 129) && !vt_mtm_ordered(m, 128) && !vt_mtm_ordered(m, 5));
	vt_mtm_free(m);
}

static void test_round_robin(void **state)
{
	unsigned int n = VT_WATERFALL_VISIT + 10;
	struct vt_range r = { 0, n * CHUNK };
	struct vt_mtm *m = vt_mtm_new(&r, 1, CHUNK, 16384, NR_TIERS);
	g_autoptr(GArray) orders = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_order));
	uint64_t room[NR_TIERS] = { ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL };
	struct vt_waterfall_params p = { .age_windows = 1, .budget_bytes = 2 * CHUNK };

	(void)state;
	for (unsigned int i = 0; i < n; i++)
		chunk(m, i)->tier = 1;
	chunk(m, 3)->tier = chunk(m, 5)->tier = chunk(m, 8)->tier = 0;
	chunk(m, 3)->cold_windows = chunk(m, 5)->cold_windows = chunk(m, 8)->cold_windows = 1;
	chunk(m, n - 1)->tier = 0, chunk(m, n - 1)->cold_windows = 1;
	assert_int_equal(vt_waterfall_decide(m, &p, room, orders), 2 * CHUNK);
	assert_int_equal(g_array_index(orders, struct vt_mtm_order, 0).chunk, 3);
	assert_int_equal(g_array_index(orders, struct vt_mtm_order, 1).chunk, 5);
	/* next window: from chunk 8, not from 0 (3 and 5 are still due: not yet moved) */
	g_array_set_size(orders, 0);
	p.budget_bytes = CHUNK;
	assert_int_equal(vt_waterfall_decide(m, &p, room, orders), CHUNK);
	assert_int_equal(g_array_index(orders, struct vt_mtm_order, 0).chunk, 8);
	/* only the last chunk due, the round robin at 0: it is past VT_WATERFALL_VISIT chunks */
	for (unsigned int i = 0; i < n - 1; i++)
		chunk(m, i)->cold_windows = 0;
	m->waterfall_next = 0;
	g_array_set_size(orders, 0);
	assert_int_equal(vt_waterfall_decide(m, &p, room, orders), 0);
	assert_int_equal(m->waterfall_next, VT_WATERFALL_VISIT);
	assert_int_equal(vt_waterfall_decide(m, &p, room, orders), CHUNK);
	assert_int_equal(g_array_index(orders, struct vt_mtm_order, 0).chunk, n - 1);
	vt_mtm_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steps_down),
		cmocka_unit_test(test_skips_refused),
		cmocka_unit_test(test_skips_ordered),
		cmocka_unit_test(test_budget_order_and_off),
		cmocka_unit_test(test_round_robin),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
