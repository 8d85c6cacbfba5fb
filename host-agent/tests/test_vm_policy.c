// SPDX-License-Identifier: GPL-2.0-or-later
/* Per-VM policy keys: every key's good values, malformed values, all-or-nothing apply. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vm_policy.h"

/* The policy as JSON text (vt_vm_policy_to_json). */
static char *policy_json(const struct vt_vm_policy *p)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonGenerator) g = json_generator_new();
	g_autoptr(JsonNode) root = NULL;

	vt_vm_policy_to_json(p, b);
	root = json_builder_get_root(b);
	json_generator_set_root(g, root);
	return json_generator_to_data(g, NULL);
}

static void test_good(void **state)
{
	struct vt_vm_policy p;
	GError *e = NULL;

	(void)state;
	vt_vm_policy_default(&p);
	assert_int_equal(p.mode, VT_MODE_AUTO);
	assert_true(vt_vm_policy_set(&p, "mode", "observe", &e));
	assert_int_equal(p.mode, VT_MODE_OBSERVE);
	assert_true(vt_vm_policy_set(&p, "mode", "off", &e));
	assert_int_equal(p.mode, VT_MODE_OFF);
	assert_true(vt_vm_policy_set(&p, "dram_limit", "256MiB", &e));
	assert_int_equal(p.dram_limit_bytes, 256ULL << 20);
	assert_true(vt_vm_policy_set(&p, "dram_limit", "none", &e));
	assert_int_equal(p.dram_limit_bytes, 0);
	assert_int_equal(p.migration_extra_bytes, 0);
	assert_true(vt_vm_policy_set(&p, "migration_extra", "512MiB", &e));
	assert_int_equal(p.migration_extra_bytes, 512ULL << 20);
	assert_true(vt_vm_policy_set(&p, "migration_extra", "none", &e));
	assert_int_equal(p.migration_extra_bytes, 0);
	assert_true(vt_vm_policy_set(&p, "dram_share", "0.25", &e));
	assert_true(p.dram_share == 0.25);
	assert_true(vt_vm_policy_set(&p, "budget", "64M", &e));
	assert_int_equal(p.budget_bytes, 64ULL << 20);
	assert_true(vt_vm_policy_set(&p, "window_ms", "500", &e));
	assert_true(vt_vm_policy_set(&p, "sample_ms", "5", &e));
	assert_true(vt_vm_policy_set(&p, "hot_threshold", "0.1", &e));
	assert_true(vt_vm_policy_set(&p, "thrash_windows", "8", &e));
	assert_true(vt_vm_policy_set(&p, "thrash_step", "0.5", &e));
	assert_int_equal(p.move_hold, 0);	/* the default: off */
	assert_true(vt_vm_policy_set(&p, "move_hold", "10", &e));
	assert_int_equal(p.move_hold, 10);
	assert_true(vt_vm_policy_set(&p, "chunk", "4MiB", &e));
	assert_int_equal(p.chunk_bytes, 4ULL << 20);
	assert_true(vt_vm_policy_set(&p, "profiler", "damon-kernel", &e));
	assert_string_equal(p.profiler, "damon-kernel");
	assert_int_equal(p.placement, VT_PLACEMENT_WATERFALL);	/* the default */
	assert_true(vt_vm_policy_set(&p, "placement", "tco", &e));
	assert_int_equal(p.placement, VT_PLACEMENT_TCO);
	assert_true(vt_vm_policy_set(&p, "tco_alpha", "0.3", &e));
	assert_true(p.tco_alpha == 0.3);
	assert_true(vt_vm_policy_set(&p, "tco_alpha", "0", &e));
	assert_true(vt_vm_policy_set(&p, "tco_alpha", "1", &e));
	assert_true(p.tco_alpha == 1.0);
	assert_true(vt_vm_policy_set(&p, "placement", "waterfall", &e));
	assert_int_equal(p.placement, VT_PLACEMENT_WATERFALL);
	assert_null(e);
}

/* The TCO keys refuse what is not a placement or an alpha in [0, 1], and say so. */
static void test_tco_keys_bad(void **state)
{
	static const char *const bad[][2] = {
		{ "placement", "" }, { "placement", "TCO" }, { "placement", "mtm" },
		{ "placement", "tco " }, { "tco_alpha", "" }, { "tco_alpha", "-0.01" },
		{ "tco_alpha", "1.0001" }, { "tco_alpha", "nan" }, { "tco_alpha", "inf" },
		{ "tco_alpha", "-inf" }, { "tco_alpha", "0.3x" }, { "tco_alpha", "30%" },
		{ "tco_alpha", "1e400" }, { "tco_alpha", "0x1p-2" "junk" },
	};
	struct vt_vm_policy p, before;

	(void)state;
	vt_vm_policy_default(&p);
	before = p;
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e = NULL;

		assert_false(vt_vm_policy_set(&p, bad[i][0], bad[i][1], &e));
		assert_non_null(e);
		assert_non_null(strstr(e->message, bad[i][0]));
		assert_memory_equal(&p, &before, sizeof(p));
	}
	{
		g_autoptr(GError) e = NULL;
		char *set[] = { "placement=tco", "tco_alpha=2" };

		/* all or nothing: the good placement does not stay when alpha is refused */
		assert_false(vt_vm_policy_apply(&p, set, 2, &e));
		assert_non_null(strstr(e->message, "0..1"));
		assert_memory_equal(&p, &before, sizeof(p));
	}
}

/* tiers=: a list of tier names, or all; whether the host has them is the engine's check. */
static void test_tiers_key(void **state)
{
	static const char *const bad[] = {
		",", "dram,", ",dram", "dram,,lz4", "dram lz4", "dram;lz4", "../x",
		"dram,a\xc2\xa0" "b", "0123456789abcdef",
		"dram,lz4,dram", "a,b,c,d,e,f,g,h,i",
		"a123456789012345678901234567890123456789012345678901234567890123456789"
		"0123456789012345678901234567890123456789012345678901234567890123456789",
	};
	struct vt_vm_policy p, before;
	g_autoptr(GError) e = NULL;

	(void)state;
	vt_vm_policy_default(&p);
	assert_string_equal(p.tiers, "");	/* the default: every tier */
	assert_true(vt_vm_policy_set(&p, "tiers", "dram,lz4", &e));
	assert_string_equal(p.tiers, "dram,lz4");
	assert_true(vt_vm_policy_set(&p, "tiers", "node-1,cold_2,file:x", &e));
	assert_true(vt_vm_policy_set(&p, "tiers", "a,b,c,d,e,f,g,h", &e));
	/* the rule of [tier.NAME] groups: every config tier can be chosen */
	assert_true(vt_vm_policy_set(&p, "tiers", "CXL,dram.0,0123456789abcde", &e));
	assert_string_equal(p.tiers, "CXL,dram.0,0123456789abcde");
	assert_true(vt_vm_policy_set(&p, "tiers", "all", &e));
	assert_string_equal(p.tiers, "");
	assert_null(e);
	before = p;
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e2 = NULL;

		assert_false(vt_vm_policy_set(&p, "tiers", bad[i], &e2));
		assert_non_null(e2);
		if (!strstr(e2->message, "tiers"))
			fail_msg("%s: '%s'", bad[i], e2->message);
		assert_memory_equal(&p, &before, sizeof(p));
	}
}

/*
 * The host-share keys: dram_min (a size, 0/none: none), weight (1..10000),
 * dram_max (dram_limit's other name: one field; both in one request must
 * agree); dram_min above dram_max is refused naming both, in either order.
 */
static void test_share_keys(void **state)
{
	static const char *const bad[][3] = {
		{ "dram_min", "1M", "dram_min: '1M' is out of range 2M.." },
		{ "dram_min", "lots", "dram_min: invalid size 'lots'" },
		{ "dram_min", "-1G", "dram_min: invalid size '-1G'" },
		{ "dram_min", "", "dram_min" },
		{ "dram_min", "2PiB", "dram_min: '2PiB' is out of range" },
		{ "weight", "0", "weight: '0' is not a whole number in 1..10000" },
		{ "weight", "10001", "weight: '10001' is not a whole number in 1..10000" },
		{ "weight", "-5", "weight: '-5'" },
		{ "weight", "1.5", "weight: '1.5'" },
		{ "weight", "", "weight: ''" },
		{ "dram_max", "1k", "dram_max: invalid size '1k'" },
		{ "dram_max", "0", "dram_max: '0' is out of range" },
	};
	char *both_same[] = { "dram_max=4GiB", "dram_limit=4096M" };
	char *both_differ[] = { "dram_limit=4GiB", "dram_max=8GiB" };
	char *min_first[] = { "dram_min=8GiB", "dram_max=4GiB" };
	char *max_first[] = { "dram_max=4GiB", "dram_min=8GiB" };
	char *fits[] = { "dram_min=4GiB", "dram_max=4GiB", "weight=300" };
	struct vt_vm_policy p, before;
	GError *e = NULL;

	(void)state;
	vt_vm_policy_default(&p);
	assert_int_equal(p.dram_min_bytes, 0);
	assert_int_equal(p.weight, 100);
	assert_true(vt_vm_policy_set(&p, "dram_min", "1GiB", &e));
	assert_int_equal(p.dram_min_bytes, 1ULL << 30);
	assert_true(vt_vm_policy_set(&p, "dram_min", "none", &e));
	assert_int_equal(p.dram_min_bytes, 0);
	assert_true(vt_vm_policy_set(&p, "weight", "1", &e));
	assert_true(vt_vm_policy_set(&p, "weight", "10000", &e));
	assert_int_equal(p.weight, 10000);
	assert_true(vt_vm_policy_set(&p, "dram_max", "2GiB", &e));
	assert_int_equal(p.dram_limit_bytes, 2ULL << 30);
	assert_true(vt_vm_policy_set(&p, "dram_max", "none", &e));
	assert_int_equal(p.dram_limit_bytes, 0);
	assert_null(e);
	before = p;
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e2 = NULL;

		assert_false(vt_vm_policy_set(&p, bad[i][0], bad[i][1], &e2));
		if (!strstr(e2->message, bad[i][2]))
			fail_msg("%s=%s: '%s'", bad[i][0], bad[i][1], e2->message);
		assert_memory_equal(&p, &before, sizeof(p));
	}
	assert_true(vt_vm_policy_apply(&p, both_same, 2, NULL));
	assert_int_equal(p.dram_limit_bytes, 4ULL << 30);
	before = p;
	assert_false(vt_vm_policy_apply(&p, both_differ, 2, &e));
	assert_non_null(strstr(e->message, "dram_limit: '4GiB' and dram_max: '8GiB' differ"));
	assert_memory_equal(&p, &before, sizeof(p));
	for (unsigned int i = 0; i < 2; i++) {
		g_clear_error(&e);
		assert_false(vt_vm_policy_apply(&p, i ? max_first : min_first, 2, &e));
		assert_non_null(strstr(e->message, "dram_min (8589934592) must not exceed dram_max "
					     "(4294967296)"));
		assert_memory_equal(&p, &before, sizeof(p));
	}
	g_clear_error(&e);
	/* a later dram_max under the min is refused too */
	assert_true(vt_vm_policy_apply(&p, fits, 3, NULL));
	assert_int_equal(p.weight, 300);
	assert_false(vt_vm_policy_set(&p, "dram_limit", "2GiB", &e));
	assert_non_null(strstr(e->message, "dram_min"));
	g_clear_error(&e);
	/* shown in the JSON */
	{
		g_autofree char *text = policy_json(&p);

		assert_non_null(strstr(text, "\"dram_max\":4294967296"));
		assert_non_null(strstr(text, "\"dram_min\":4294967296"));
		assert_non_null(strstr(text, "\"weight\":300"));
	}
}

static void test_bad(void **state)
{
	static const char *const bad[][2] = {
		{ "mode", "on" }, { "mode", "" }, { "mode", "AUTO" }, { "dram_limit", "-1" },
		{ "dram_limit", "1k" }, { "dram_limit", "lots" }, { "dram_limit", "2PiB" },
		{ "migration_extra", "1MiB" }, { "migration_extra", "-1" }, { "migration_extra", "" },
		{ "dram_share", "1.5" }, { "dram_share", "-0.1" }, { "dram_share", "nan" },
		{ "dram_share", "inf" }, { "dram_share", "0.5x" }, { "dram_share", "" },
		{ "budget", "0" }, { "budget", "1MiB" }, { "window_ms", "0" }, { "window_ms", "99" },
		{ "window_ms", "1e3" }, { "window_ms", "+500" }, { "window_ms", "18446744073709551616" },
		{ "sample_ms", "0" }, { "sample_ms", "2000" }, { "hot_threshold", "2" },
		{ "thrash_windows", "-3" }, { "thrash_windows", "1001" }, { "move_hold", "1001" },
		{ "move_hold", "-1" }, { "move_hold", "2w" }, { "move_hold", "" }, { "chunk", "3MiB" },
		{ "chunk", "2GiB" }, { "profiler", "magic" }, { "profiler", "" }, { "nosuchkey", "1" },
		{ "", "1" },
	};
	struct vt_vm_policy p, before;

	(void)state;
	vt_vm_policy_default(&p);
	before = p;
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e = NULL;

		assert_false(vt_vm_policy_set(&p, bad[i][0], bad[i][1], &e));
		assert_non_null(e);
		assert_true(strlen(e->message) > 5);
		assert_memory_equal(&p, &before, sizeof(p));
	}
	{
		g_autoptr(GError) e = NULL;

		assert_false(vt_vm_policy_set(&p, "mode", NULL, &e));
	}
	{
		g_autoptr(GError) e = NULL;

		assert_false(vt_vm_policy_set(&p, "nosuchkey", "1", &e));
		assert_non_null(strstr(e->message, "dram_limit"));	/* lists the known keys */
	}
}

/*
 * Cross-key constraints are judged after all keys of one request: both
 * orders of a valid pair pass (sample_ms=5000 first used to fail against the
 * default window of 1000 ms), the truly bad pair fails in both orders and
 * changes nothing.
 */
/*
 * tdp_flush: never (the default) or window; anything else is refused naming
 * the key, the value and both words, and changes nothing.
 */
static void test_tdp_flush(void **state)
{
	static const char *const bad[] = {
		"", "always", "Window", "window ", "on", "1", "once", "never,window",
	};
	struct vt_vm_policy p, before;
	g_autofree char *json_never = NULL;
	g_autofree char *json_window = NULL;
	char *set[] = { "tdp_flush=window", "profiler=telescope-flex" };

	(void)state;
	vt_vm_policy_default(&p);
	assert_int_equal(p.tdp_flush, VT_POLICY_TDP_FLUSH_NEVER);
	json_never = policy_json(&p);
	assert_non_null(strstr(json_never, "\"tdp_flush\":\"never\""));
	assert_true(vt_vm_policy_set(&p, "tdp_flush", "window", NULL));
	assert_int_equal(p.tdp_flush, VT_POLICY_TDP_FLUSH_WINDOW);
	json_window = policy_json(&p);
	assert_non_null(strstr(json_window, "\"tdp_flush\":\"window\""));
	assert_true(vt_vm_policy_set(&p, "tdp_flush", "never", NULL));
	assert_int_equal(p.tdp_flush, VT_POLICY_TDP_FLUSH_NEVER);
	before = p;
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e = NULL;
		g_autofree char *want = g_strdup_printf("tdp_flush: '%s' is not one of never, window",
							 bad[i]);

		assert_false(vt_vm_policy_set(&p, "tdp_flush", bad[i], &e));
		assert_string_equal(e->message, want);
		assert_memory_equal(&p, &before, sizeof(p));
	}
	/* in a request with other keys, all or nothing */
	assert_true(vt_vm_policy_apply(&p, set, 2, NULL));
	assert_int_equal(p.tdp_flush, VT_POLICY_TDP_FLUSH_WINDOW);
	assert_string_equal(vt_policy_tdp_flush_name(p.tdp_flush), "window");
}

/* A size refusal names key and value and quotes the range in the unit typed. */
static void test_size_errors(void **state)
{
	static const char *const cases[][4] = {
		{ "balloon", "1KiB", "'1KiB' is out of range 4KiB..1099511627776KiB", "0 or none" },
		{ "dram_limit", "0", "'0' is out of range 2097152..1125899906842624",
		  "none lifts the limit" },
		{ "dram_limit", "1M", "'1M' is out of range 2M..1073741824M", "none lifts" },
		{ "budget", "2TiB", "'2TiB' is out of range 2MiB..1TiB", "budget" },
		{ "chunk", "4G", "'4G' is out of range 2M..1G", "multiple of 2MiB" },
		{ "dram_limit", "-1G", "dram_limit: invalid size '-1G'", "none lifts" },
		{ "migration_extra", "1KiB", "'1KiB' is out of range 2048KiB..", "none: no extra" },
	};
	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct vt_vm_policy p;
		g_autoptr(GError) e = NULL;

		vt_vm_policy_default(&p);
		assert_false(vt_vm_policy_set(&p, cases[i][0], cases[i][1], &e));
		if (!strstr(e->message, cases[i][2]) || !strstr(e->message, cases[i][3]) ||
		    !strstr(e->message, cases[i][0]))
			fail_msg("%s=%s: '%s'", cases[i][0], cases[i][1], e->message);
	}
}

static void test_apply_order(void **state)
{
	char *sample_first[] = { "sample_ms=5000", "window_ms=10000" };
	char *window_first[] = { "window_ms=10000", "sample_ms=5000" };
	char *bad_a[] = { "sample_ms=5000", "window_ms=2000" };
	char *bad_b[] = { "window_ms=2000", "sample_ms=5000" };
	char *shrink[] = { "window_ms=100" };
	struct vt_vm_policy p, before;

	(void)state;
	vt_vm_policy_default(&p);
	assert_true(vt_vm_policy_apply(&p, sample_first, 2, NULL));
	assert_int_equal(p.sample_ms, 5000);
	assert_int_equal(p.window_ms, 10000);
	vt_vm_policy_default(&p);
	assert_true(vt_vm_policy_apply(&p, window_first, 2, NULL));
	assert_int_equal(p.sample_ms, 5000);
	before = p;
	for (unsigned int i = 0; i < 3; i++) {
		char **set = i == 0 ? bad_a : i == 1 ? bad_b : shrink;
		g_autoptr(GError) e = NULL;

		assert_false(vt_vm_policy_apply(&p, set, i < 2 ? 2 : 1, &e));
		assert_non_null(strstr(e->message, "must not exceed window_ms"));
		assert_memory_equal(&p, &before, sizeof(p));
	}
	/* values with control characters or non-ASCII bytes never reach an error message */
	{
		char *bad_bytes[] = { "mode=\xff\xfe", "mode=a\nb", "mo\001de=off" };
		g_autoptr(GError) e = NULL;

		for (unsigned int i = 0; i < 3; i++) {
			g_clear_error(&e);
			assert_false(vt_vm_policy_apply(&p, &bad_bytes[i], 1, &e));
			assert_non_null(strstr(e->message, "printable ASCII"));
		}
	}
	/* a pasted no-break space: the key and the value named, the bytes shown */
	{
		char *nbsp[] = { "budget=64\xc2\xa0MiB", "dram\xc2\xa0limit=1G" };
		const char *want[] = { "budget: '64\\xc2\\xa0MiB' is not printable ASCII "
				       "(\\xc2\\xa0 is a no-break space)",
				       "policy: key dram\\xc2\\xa0limit: '1G' is not printable" };
		g_autoptr(GError) e = NULL;

		for (unsigned int i = 0; i < 2; i++) {
			g_clear_error(&e);
			assert_false(vt_vm_policy_apply(&p, &nbsp[i], 1, &e));
			if (!strstr(e->message, want[i]))
				fail_msg("'%s' lacks '%s'", e->message, want[i]);
		}
	}
	/* the one-key setter still checks the whole result */
	assert_false(vt_vm_policy_set(&p, "window_ms", "1000", NULL));
	assert_true(vt_vm_policy_check(&p, NULL));
}

static void test_apply(void **state)
{
	char *good[] = { "mode=observe", "dram_limit=256MiB", "budget=32MiB" };
	char *half[] = { "mode=off", "dram_limit=banana" };
	char *noeq[] = { "mode" };
	char *empty_key[] = { "=1" };
	struct vt_vm_policy p, before;
	g_autoptr(GError) e1 = NULL, e2 = NULL, e3 = NULL, e4 = NULL, e5 = NULL;

	(void)state;
	vt_vm_policy_default(&p);
	assert_true(vt_vm_policy_apply(&p, good, 3, &e1));
	assert_int_equal(p.mode, VT_MODE_OBSERVE);
	assert_int_equal(vt_vm_policy_dram_allowance(&p, 1ULL << 30), 256ULL << 20);
	before = p;
	assert_false(vt_vm_policy_apply(&p, half, 2, &e2));
	assert_memory_equal(&p, &before, sizeof(p));	/* nothing of it applied */
	assert_false(vt_vm_policy_apply(&p, noeq, 1, &e3));
	assert_false(vt_vm_policy_apply(&p, empty_key, 1, &e4));
	assert_false(vt_vm_policy_apply(&p, good, 0, &e5));
	/* sample_ms may not exceed window_ms, whichever is set last */
	{
		char *w[] = { "window_ms=200", "sample_ms=300" };
		g_autoptr(GError) e = NULL;

		assert_false(vt_vm_policy_apply(&p, w, 2, &e));
		assert_non_null(strstr(e->message, "sample_ms"));
	}
	/* share and limit: the smaller wins */
	vt_vm_policy_default(&p);
	p.dram_share = 0.5;
	assert_int_equal(vt_vm_policy_dram_allowance(&p, 1ULL << 30), 512ULL << 20);
	p.dram_limit_bytes = 100ULL << 20;
	assert_int_equal(vt_vm_policy_dram_allowance(&p, 1ULL << 30), 100ULL << 20);
}

/*
 * Which keys a running engine takes at its next window (vt_vm_policy_live())
 * and which restart it: every key once, each from a base it is valid on.
 */
static void test_live_keys(void **state)
{
	static const struct {
		const char *base;	/* assignments first, or NULL */
		const char *set;
		bool live;
	} cases[] = {
		{ NULL, "mode=observe", false },
		{ NULL, "dram_limit=1GiB", true },
		{ NULL, "dram_max=1GiB", true },
		{ "dram_max=1GiB", "dram_min=256MiB", true },
		{ NULL, "weight=300", true },
		{ NULL, "dram_share=0.5", true },
		{ NULL, "budget=64MiB", true },
		{ NULL, "window_ms=500", false },
		{ NULL, "sample_ms=10", false },
		{ NULL, "hot_threshold=0.2", true },
		{ NULL, "thrash_windows=8", true },
		{ NULL, "thrash_step=0.1", true },
		{ NULL, "move_hold=2", true },
		{ NULL, "chunk=4MiB", false },
		{ NULL, "profiler=damon-kernel", false },
		{ NULL, "tdp_flush=window", false },
		{ NULL, "ctier_age_windows=5", true },
		{ NULL, "placement=tco", true },
		{ NULL, "tco_alpha=0.3", true },
		{ NULL, "tiers=lz4", false },
		{ NULL, "hints=on", false },
		{ "hints=on", "balloon=256MiB", true },
		{ NULL, "migration_extra=64MiB", true },
	};
	const char *const *k;
	unsigned int nr_keys = 0;

	(void)state;
	for (k = vt_vm_policy_keys(); *k; k++)
		nr_keys++;
	assert_int_equal(G_N_ELEMENTS(cases), nr_keys);	/* a new key gets its case */
	for (unsigned int i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct vt_vm_policy a, b;
		char *base[] = { (char *)cases[i].base }, *set[] = { (char *)cases[i].set };
		g_autoptr(GError) e = NULL;

		vt_vm_policy_default(&a);
		if (cases[i].base)
			assert_true(vt_vm_policy_apply(&a, base, 1, &e));
		b = a;
		assert_true(vt_vm_policy_apply(&b, set, 1, &e));
		assert_true(memcmp(&a, &b, sizeof(a)) != 0);
		if (vt_vm_policy_live(&a, &b) != cases[i].live)
			fail_msg("%s: live %d, want %d", cases[i].set, !cases[i].live, cases[i].live);
		assert_true(vt_vm_policy_live(&a, &a));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_share_keys),
		cmocka_unit_test(test_tco_keys_bad),
		cmocka_unit_test(test_tiers_key),
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_apply_order),
		cmocka_unit_test(test_size_errors),
		cmocka_unit_test(test_tdp_flush),
		cmocka_unit_test(test_live_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
