// SPDX-License-Identifier: GPL-2.0-or-later
/* util/latency_hist.c: percentiles, Prometheus buckets and the sum of a latency histogram. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "latency_hist.h"

static void test_latency_hist(void **state)
{
	struct vt_latency_hist h = { 0 };
	uint64_t p50, p99;

	(void)state;
	assert_int_equal(vt_latency_percentile(&h, 50), 0);
	for (uint64_t i = 1; i <= 1000; i++)
		vt_latency_add(&h, i * 1000);	/* 1..1000 us */
	p50 = vt_latency_percentile(&h, 50);
	p99 = vt_latency_percentile(&h, 99);
	/* buckets are 1/8 of a power of two wide: within 13 % */
	assert_true(p50 > 500000 * 87 / 100 && p50 < 500000 * 113 / 100);
	assert_true(p99 > 990000 * 87 / 100 && p99 < 990000 * 113 / 100);
	vt_latency_add(&h, 3);
	vt_latency_add(&h, UINT64_MAX);
	assert_int_equal(h.count, 1002);
}

/* Exact below 8 ns; then a bucket le=N never counts a sample above N. */
static void test_count_le(void **state)
{
	struct vt_latency_hist h = { 0 };

	(void)state;
	for (uint64_t v = 0; v < 8; v++)
		vt_latency_add(&h, v);
	vt_latency_add(&h, 1000);
	vt_latency_add(&h, 1u << 20);
	for (uint64_t v = 0; v < 8; v++)
		assert_int_equal(vt_latency_count_le(&h, v), v + 1);
	assert_int_equal(vt_latency_count_le(&h, 999), 8);
	assert_int_equal(vt_latency_count_le(&h, 1023), 9);	/* 1000 is in [960, 1023] */
	assert_int_equal(vt_latency_count_le(&h, (1u << 20) - 1), 9);
	assert_int_equal(vt_latency_count_le(&h, UINT64_MAX), 10);
	/* midpoints: 0..7, ~1000, ~2^20 */
	assert_true(vt_latency_sum_estimate(&h) > 28 + 960 + (1u << 20) &&
		    vt_latency_sum_estimate(&h) < 28 + 1024 + (1u << 20) + (1u << 17));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_latency_hist),
		cmocka_unit_test(test_count_le),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
