// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The simulated sources: the contract's corner cases, subtree skipping, and
 * the Poisson model against the exact bit arrays (they must agree in law).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim_source.h"

#define GiB (1ULL << 30)
#define MiB (1ULL << 20)

static struct vt_workload *spec(const char *pattern, const char *extra, double rate)
{
	g_autofree char *json = g_strdup_printf(
		"{\"footprint\":\"1GiB\",\"base\":\"1GiB\"%s,\"phases\":[{\"duration_s\":100,"
		"\"access_rate\":%g,\"hot\":[{\"start\":\"%s\",\"size\":\"64MiB\","
		"\"pattern\":\"%s\"}]}]}", extra, rate,
		strstr(extra, "2MiB") ? "300MiB" : "300MiB+12KiB", pattern);
	g_autoptr(GError) e = NULL;
	struct vt_workload *w = vt_workload_from_json(json, -1, &e);

	if (!w)
		fail_msg("%s", e->message);
	return w;
}

static void test_contract_edges(void **state)
{
	g_autoptr(vt_workload) w = spec("uniform", ",\"page_size\":\"2MiB\"", 1e6);
	g_autoptr(vt_workload) w4k = spec("uniform", "", 1e6);
	struct vt_access_source *srcs[3] = {
		vt_sim_new(w, 1), vt_sim_exact_new(w, 1, NULL), vt_sim_new(w4k, 1),
	};
	struct vt_range map[2];

	(void)state;
	for (unsigned int i = 0; i < 3; i++) {
		struct vt_access_source *s = srcs[i];

		assert_int_equal(vt_source_mapped(s, map, 2), 1);
		assert_int_equal(map[0].start, GiB);
		assert_int_equal(map[0].end, 2 * GiB);
		assert_int_equal(vt_source_test_clear(s, 0, VT_LEVEL_PMD), VT_BIT_ABSENT);
		assert_int_equal(vt_source_test_clear(s, 2 * GiB, VT_LEVEL_PMD), VT_BIT_ABSENT);
		assert_int_equal(vt_source_test_clear(s, GiB, 4), -EINVAL);
		assert_int_equal(vt_source_scan(s, GiB, 2 * GiB, VT_LEVEL_PUD, VT_LEVEL_PMD, NULL,
						NULL), -EINVAL);
		/* bits start old by default */
		assert_int_equal(vt_source_test_clear(s, GiB + 300 * MiB, VT_LEVEL_PMD), VT_BIT_OLD);
	}
	/* 2 MiB pages: no PTE level */
	assert_int_equal(vt_source_test_clear(srcs[0], GiB, VT_LEVEL_PTE), VT_BIT_ABSENT);
	assert_int_equal(vt_source_test_clear(srcs[1], GiB, VT_LEVEL_PTE), VT_BIT_ABSENT);
	assert_int_equal(srcs[0]->leaf_level, VT_LEVEL_PMD);
	for (unsigned int i = 0; i < 3; i++)
		vt_source_destroy(srcs[i]);
	/* too large for bit arrays: a clear error */
	{
		g_autoptr(vt_workload) big = vt_workload_builtin("subtb-100g", NULL);
		g_autoptr(GError) e = NULL;

		assert_null(vt_sim_exact_new(big, 1, &e));
		assert_non_null(strstr(e->message, "sim-exact"));
	}
}

static void test_initially_young(void **state)
{
	g_autoptr(vt_workload) w = spec("uniform", ",\"initial_bits\":\"young\"", 0);
	struct vt_access_source *srcs[2] = { vt_sim_new(w, 1), vt_sim_exact_new(w, 1, NULL) };

	(void)state;
	for (unsigned int i = 0; i < 2; i++) {
		assert_int_equal(vt_source_test_clear(srcs[i], GiB, VT_LEVEL_PTE), VT_BIT_YOUNG);
		assert_int_equal(vt_source_test_clear(srcs[i], GiB, VT_LEVEL_PTE), VT_BIT_OLD);
		/* other levels keep their own bits */
		assert_int_equal(vt_source_test_clear(srcs[i], GiB, VT_LEVEL_PMD), VT_BIT_YOUNG);
		vt_sim_advance(srcs[i], 1000000000);
		/* no accesses at rate 0 */
		assert_int_equal(vt_source_test_clear(srcs[i], GiB, VT_LEVEL_PTE), VT_BIT_OLD);
		vt_source_destroy(srcs[i]);
	}
}

static void count_young(uint64_t e, unsigned int level, void *arg)
{
	GHashTable *parents = arg;

	(void)level;
	g_hash_table_add(parents, GSIZE_TO_POINTER(vt_entry_start(e, VT_LEVEL_PMD) + 1));
}

/*
 * Subtree skipping: after a full clear, touch a few pages; a scan from the
 * top visits the children of young entries only, and every young parent it
 * descends into has a young child (the Poisson model conditions on it).
 */
static void test_scan_skips_cold_subtrees(void **state)
{
	g_autoptr(vt_workload) w = spec("uniform", "", 2000);

	(void)state;
	for (unsigned int model = 0; model < 2; model++) {
		struct vt_access_source *s = model ? vt_sim_exact_new(w, 3, NULL) : vt_sim_new(w, 3);
		GHashTable *parents = g_hash_table_new(g_direct_hash, g_direct_equal);
		long young;

		for (unsigned int l = 0; l < 4; l++)
			assert_true(vt_source_scan(s, 0, 4 * GiB, l, l, NULL, NULL) >= 0);
		vt_sim_advance(s, 5000000);	/* 5 ms at 2000/s: ~10 accesses in 32 PMDs */
		memset(s->checks, 0, sizeof(s->checks));
		young = vt_source_scan(s, 0, 4 * GiB, VT_LEVEL_PTE, 3, count_young, parents);
		assert_true(young >= 1 && young <= 40);
		/* leaves tested only under young PMDs, each of which had a young leaf */
		assert_int_equal(s->checks[VT_LEVEL_PTE], 512 * g_hash_table_size(parents));
		assert_int_equal(s->checks[VT_LEVEL_PMD], 512);	/* one young PUD */
		assert_int_equal(s->checks[VT_LEVEL_PUD], 1);	/* the mapped PUD, inside the range */
		g_hash_table_destroy(parents);
		vt_source_destroy(s);
	}
}

/* Fraction of young entries at @level in the hot range after @dt_ms. */
static double young_fraction(struct vt_access_source *s, unsigned int level, uint64_t lo,
			     uint64_t hi, unsigned int dt_ms, unsigned int trials, double *expect,
			     const struct vt_workload *w)
{
	uint64_t young = 0, total = 0;

	*expect = 0;
	for (unsigned int t = 0; t < trials; t++) {
		long n;

		assert_true(vt_source_scan(s, lo, hi, level, level, NULL, NULL) >= 0);
		vt_sim_advance(s, (uint64_t)dt_ms * 1000000);
		n = vt_source_scan(s, lo, hi, level, level, NULL, NULL);
		assert_true(n >= 0);
		young += (uint64_t)n;
		for (uint64_t e = lo; e < hi; e += vt_level_size(level)) {
			double acc = vt_phase_rate(w, &w->phases[0], e, e + vt_level_size(level)) *
				     dt_ms / 1000.0;

			*expect += -expm1(-acc);
			total++;
		}
	}
	*expect /= (double)total;
	return (double)young / (double)total;
}

/* The two models agree with each other and with 1 - exp(-accesses) per entry. */
static void test_poisson_matches_exact(void **state)
{
	static const char *const patterns[] = { "uniform", "gaussian", "zipf" };
	static const struct {
		unsigned int level;
		unsigned int dt_ms;
		unsigned int trials;
	} cases[] = {
		{ VT_LEVEL_PTE, 5, 4 }, { VT_LEVEL_PTE, 50, 2 }, { VT_LEVEL_PMD, 1, 40 },
	};
	(void)state;
	for (unsigned int p = 0; p < G_N_ELEMENTS(patterns); p++) {
		g_autoptr(vt_workload) w = spec(patterns[p], "", 2e6);
		uint64_t lo = GiB + 300 * MiB + 12 * 1024, hi = lo + 64 * MiB;

		for (unsigned int c = 0; c < G_N_ELEMENTS(cases); c++) {
			struct vt_access_source *ps = vt_sim_new(w, 11), *es = vt_sim_exact_new(w, 12, NULL);
			unsigned int l = cases[c].level;
			uint64_t a = (lo + vt_level_size(l) - 1) & ~(vt_level_size(l) - 1);
			uint64_t b = hi & ~(vt_level_size(l) - 1);
			uint64_t n = (b - a) / vt_level_size(l) * cases[c].trials;
			double ep, ee, fp, fe, sd;

			fp = young_fraction(ps, l, a, b, cases[c].dt_ms, cases[c].trials, &ep, w);
			fe = young_fraction(es, l, a, b, cases[c].dt_ms, cases[c].trials, &ee, w);
			sd = sqrt(ep * (1 - ep) / (double)n) + 1e-3;
			if (fabs(fp - ep) > 5 * sd || fabs(fe - ep) > 5 * sd)
				fail_msg("%s level %u dt %u ms: poisson %.4f exact %.4f expected %.4f (sd %.4f)",
					 patterns[p], l, cases[c].dt_ms, fp, fe, ep, sd);
			vt_source_destroy(ps);
			vt_source_destroy(es);
		}
	}
}

/* The Poisson model keeps no state for memory no phase accesses. */
static void test_poisson_state_is_sparse(void **state)
{
	g_autoptr(vt_workload) w = vt_workload_builtin("multi-phase", NULL);
	struct vt_access_source *s = vt_sim_new(w, 1);
	long n;

	(void)state;
	/* all 1280 PUDs, and every PTE of a cold 1 GiB */
	n = vt_source_scan(s, 0, 5ULL << 40, VT_LEVEL_PUD, VT_LEVEL_PUD, NULL, NULL);
	assert_int_equal(n, 0);
	n = vt_source_scan(s, 4 * GiB, 5 * GiB, VT_LEVEL_PTE, VT_LEVEL_PTE, NULL, NULL);
	assert_int_equal(n, 0);
	assert_int_equal(s->checks[VT_LEVEL_PTE], 262144);
	vt_source_destroy(s);
}

/*
 * The wrappers count every call; only a timed source (a bench's) reads the
 * thread CPU clock around it: vtierd's sources pay no system call for it.
 */
static void test_timing_opt_in(void **state)
{
	g_autoptr(vt_workload) w = spec("uniform", "", 1e6);
	struct vt_access_source *s = vt_sim_new(w, 1);
	struct vt_probe probe = { .addr = GiB + 300 * MiB, .level = VT_LEVEL_PTE };
	uint64_t c = vt_source_clock_ns();

	(void)state;
	assert_true(c > 0 && c < 1000000);
	assert_false(s->timed);
	for (int i = 0; i < 2000; i++) {
		assert_true(vt_source_test_clear(s, GiB + 300 * MiB, VT_LEVEL_PTE) >= 0);
		assert_int_equal(vt_source_batch(s, &probe, 1), 0);
	}
	assert_true(vt_source_scan(s, GiB, 2 * GiB, VT_LEVEL_PMD, VT_LEVEL_PMD, NULL, NULL) >= 0);
	assert_int_equal(s->calls, 4001);
	assert_int_equal(s->cost_ns, 0);
	/* refused calls are not calls into the source */
	assert_int_equal(vt_source_test_clear(s, GiB, 4), -EINVAL);
	assert_int_equal(vt_source_batch(s, &probe, 0), 0);
	assert_int_equal(s->calls, 4001);
	s->timed = true;
	for (int i = 0; i < 2000; i++)
		assert_true(vt_source_test_clear(s, GiB + 300 * MiB, VT_LEVEL_PTE) >= 0);
	assert_int_equal(s->calls, 6001);
	/* each timed call holds at least part of a clock read */
	assert_true(s->cost_ns > 0);
	vt_source_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_contract_edges),
		cmocka_unit_test(test_initially_young),
		cmocka_unit_test(test_scan_skips_cold_subtrees),
		cmocka_unit_test(test_poisson_matches_exact),
		cmocka_unit_test(test_poisson_state_is_sparse),
		cmocka_unit_test(test_timing_opt_in),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
