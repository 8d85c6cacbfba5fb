// SPDX-License-Identifier: GPL-2.0-or-later
/* The workload spec parser: good specs, built-ins, and malformed input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <string.h>

#include <cmocka.h>

#include "workload.h"

static void test_builtins(void **state)
{
	(void)state;
	for (const char *const *n = vt_workload_builtin_names(); *n; n++) {
		g_autoptr(GError) e = NULL;
		g_autoptr(vt_workload) w = vt_workload_builtin(*n, &e);

		assert_non_null(w);
		assert_true(w->total_s > 0);
		assert_true(w->nr_phases >= 1);
	}
	{
		g_autoptr(GError) e = NULL;
		g_autoptr(vt_workload) w = vt_workload_builtin("multi-phase", &e);

		assert_int_equal(w->footprint, 5ULL << 40);
		assert_int_equal(w->nr_phases, 3);
		assert_int_equal(w->phases[2].nr_ranges, 2);
		assert_int_equal(vt_phase_hot_total(&w->phases[0]), 10ULL << 30);
		assert_int_equal(vt_workload_phase_at(w, 79.99), 0);
		assert_int_equal(vt_workload_phase_at(w, 80.0), 1);
		assert_int_equal(vt_workload_phase_at(w, 1e9), 2);
	}
}

static void test_full_spec(void **state)
{
	const char *json = "{\"name\":\"t\",\"footprint\":\"64GiB\",\"base\":\"1GiB\","
			   "\"page_size\":\"2MiB\",\"levels\":5,\"initial_bits\":\"young\",\"phases\":["
			   "{\"name\":\"a\",\"duration_s\":1.5,\"access_rate\":1000,\"hot\":["
			   "{\"start\":\"0\",\"size\":\"2MiB\",\"weight\":3,\"pattern\":\"zipf\",\"exponent\":1.2},"
			   "{\"start\":\"4MiB\",\"size\":\"8MiB\",\"pattern\":\"gaussian\",\"sigma\":0.1},"
			   "{\"start\":\"16MiB\",\"size\":\"2MiB\",\"scored\":false}]},"
			   "{\"duration_s\":2,\"access_rate\":0,\"hot\":[]}]}";
	g_autoptr(GError) e = NULL;
	g_autoptr(vt_workload) w = vt_workload_from_json(json, -1, &e);

	(void)state;
	assert_non_null(w);
	assert_int_equal(w->page_shift, 21);
	assert_int_equal(w->levels, 5);
	assert_true(w->initially_young);
	assert_int_equal(w->phases[0].ranges[0].start, 1ULL << 30);
	assert_int_equal(w->phases[0].ranges[0].pattern, VT_PATTERN_ZIPF);
	assert_true(w->phases[0].ranges[0].param == 1.2);
	assert_true(w->phases[0].weight_sum == 5);
	/* accessed, not in the ground truth: outside the hot bytes, inside ever-accessed */
	assert_true(w->phases[0].ranges[2].unscored && !w->phases[0].ranges[1].unscored);
	assert_int_equal(vt_phase_hot_total(&w->phases[0]), 10ULL << 20);
	assert_true(vt_workload_ever_accessed(w, (1ULL << 30) + (16ULL << 20), (1ULL << 30) + (18ULL << 20)));
	assert_string_equal(w->phases[1].name, "phase 2");
	assert_true(w->total_s == 3.5);
	assert_int_equal(vt_workload_leaf_level(w), VT_LEVEL_PMD);
}

/* Every malformed spec: NULL, an error that names the problem, no crash. */
static void test_malformed(void **state)
{
	static const struct {
		const char *json;
		const char *says;
	} cases[] = {
		{ "", "JSON" },
		{ "{", "JSON" },
		{ "[]", "object" },
		{ "42", "object" },
		{ "{}", "footprint" },
		{ "{\"footprint\":\"1GiB\"}", "phases" },
		{ "{\"footprint\":\"1GiB\",\"phases\":{}}", "phases" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[]}", "at least one phase" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[],\"colour\":1}", "unknown key 'colour'" },
		{ "{\"footprint\":-5,\"phases\":[]}", "footprint" },
		{ "{\"footprint\":true,\"phases\":[]}", "footprint" },
		{ "{\"footprint\":\"1GiB\",\"page_size\":\"8KiB\",\"phases\":[]}", "page_size" },
		{ "{\"footprint\":\"1GiB\",\"levels\":3,\"phases\":[{\"duration_s\":1,\"access_rate\":1,\"hot\":[]}]}",
		  "levels" },
		{ "{\"footprint\":\"1GiB\",\"levels\":\"4\",\"phases\":[]}", "levels" },
		{ "{\"footprint\":\"1GiB\",\"initial_bits\":\"warm\",\"phases\":[]}", "initial_bits" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[1]}", "phases[0]" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[{\"access_rate\":1,\"hot\":[]}]}", "duration_s" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[{\"duration_s\":0,\"access_rate\":1,\"hot\":[]}]}",
		  "duration_s" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[{\"duration_s\":1,\"access_rate\":-1,\"hot\":[]}]}",
		  "access_rate" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[{\"duration_s\":1,\"access_rate\":\"x\",\"hot\":[]}]}",
		  "number" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[{\"duration_s\":1,\"access_rate\":1}]}", "hot" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[{\"duration_s\":1,\"access_rate\":1,\"hot\":[{\"size\":\"4KiB\"}]}]}",
		  "required" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[{\"duration_s\":1,\"access_rate\":1,\"hot\":[{\"start\":0,\"size\":\"2GiB\"}]}]}",
		  "inside the footprint" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[{\"duration_s\":1,\"access_rate\":1,\"hot\":[{\"start\":\"1KiB\",\"size\":\"4KiB\"}]}]}",
		  "page-aligned" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[{\"duration_s\":1,\"access_rate\":1,\"hot\":[{\"start\":0,\"size\":\"8KiB\"},{\"start\":\"4KiB\",\"size\":\"4KiB\"}]}]}",
		  "overlap" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[{\"duration_s\":1,\"access_rate\":1,\"hot\":[{\"start\":0,\"size\":\"4KiB\",\"pattern\":\"pareto\"}]}]}",
		  "pattern" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[{\"duration_s\":1,\"access_rate\":1,\"hot\":[{\"start\":0,\"size\":\"4KiB\",\"sigma\":0.1}]}]}",
		  "gaussian" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[{\"duration_s\":1,\"access_rate\":1,\"hot\":[{\"start\":0,\"size\":\"4KiB\",\"pattern\":\"zipf\",\"exponent\":0}]}]}",
		  "parameter" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[{\"duration_s\":1,\"access_rate\":1,\"hot\":[{\"start\":0,\"size\":\"4KiB\",\"weight\":0}]}]}",
		  "weight" },
		{ "{\"footprint\":\"1GiB\",\"phases\":[{\"duration_s\":1,\"access_rate\":1,\"hot\":[{\"start\":0,\"size\":\"4KiB\",\"scored\":0}]}]}",
		  "scored" },
		{ "{\"footprint\":\"1GiB\",\"base\":\"18446744073709551615\",\"phases\":[{\"duration_s\":1,\"access_rate\":1,\"hot\":[]}]}",
		  "footprint" },
		{ "{\"footprint\":\"300TiB\",\"phases\":[{\"duration_s\":1,\"access_rate\":1,\"hot\":[]}]}",
		  "4-level" },
	};
	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) e = NULL;
		struct vt_workload *w = vt_workload_from_json(cases[i].json, -1, &e);

		if (w || !e || !strstr(e->message, cases[i].says))
			fail_msg("case %u (%s): expected an error mentioning '%s', got %s", i,
				 cases[i].json, cases[i].says, e ? e->message : "success");
	}
}

static void test_deep_nesting(void **state)
{
	GString *s = g_string_new("{\"footprint\":\"1GiB\",\"phases\":");
	g_autoptr(GError) e = NULL;

	(void)state;
	for (unsigned int i = 0; i < 100000; i++)
		g_string_append_c(s, '[');
	assert_null(vt_workload_from_json(s->str, (gssize)s->len, &e));
	assert_non_null(strstr(e->message, "nested deeper than 64"));
	g_string_free(s, TRUE);
}

static void test_unknown_and_missing(void **state)
{
	g_autoptr(GError) e1 = NULL, e2 = NULL;

	(void)state;
	assert_null(vt_workload_builtin("no-such-scenario", &e1));
	assert_non_null(strstr(e1->message, "multi-phase"));
	assert_null(vt_workload_load("/nonexistent/spec.json", &e2));
	assert_non_null(e2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtins),
		cmocka_unit_test(test_full_spec),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_unknown_and_missing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
