// SPDX-License-Identifier: GPL-2.0-or-later
/* The tier model's prices, ratios and latencies; the TCO report's arithmetic and JSON. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "handoff_proto.h"
#include "json_pin.h"
#include "tco.h"
#include "tco_report.h"

#define GIB (1ULL << 30)
#define MIB (1ULL << 20)

static void assert_close(double a, double b)
{
	if (fabs(a - b) > 1e-9 * MAX(1.0, MAX(fabs(a), fabs(b))))
		fail_msg("%.12g != %.12g", a, b);
}

/* dram node 0 (3 USD/GiB, 100 ns), cxl node 1 (1.5, 250 ns) */
static void two_numa(struct vt_tiers *t)
{
	memset(t, 0, sizeof(*t));
	t->nr = 2;
	for (unsigned int i = 0; i < VT_MAX_NODES; i++)
		t->node_tier[i] = -1;
	t->tier[0] = (struct vt_tier){ .name = "dram", .nodes = { 0 }, .nr_nodes = 1,
				       .latency_ns = 100, .price_usd_gib = 3.0, .source = "sysfs" };
	t->tier[1] = (struct vt_tier){ .name = "cxl", .nodes = { 1 }, .nr_nodes = 1,
				       .latency_ns = 250, .price_usd_gib = 1.5, .source = "config" };
	t->node_tier[0] = 0;
	t->node_tier[1] = 1;
}

static const struct vt_ctier_spec specs[3] = {
	{ .name = "lz4", .codec = VT_CODEC_LZ4, .pool = VT_POOL_ZSMALLOC, .medium = VT_MEDIUM_NODE,
	  .node = 1 },
	{ .name = "zstd", .codec = VT_CODEC_ZSTD, .level = 3, .pool = VT_POOL_ZBUD,
	  .medium = VT_MEDIUM_NODE, .node = 7 },
	{ .name = "cold", .codec = VT_CODEC_DEFLATE, .level = 6, .pool = VT_POOL_ZSMALLOC,
	  .medium = VT_MEDIUM_FILE, .dir = "/x" },
};

static void test_model_priors_and_prices(void **state)
{
	struct vt_tiers numa;
	struct vt_tier_model m;
	double price[3] = { -1, -1, -1 };

	(void)state;
	two_numa(&numa);
	vt_tier_model_build(&m, &numa, specs, price, NULL, 3, NULL, false);
	assert_int_equal(m.nr, 5);
	assert_int_equal(m.nr_numa, 2);
	assert_string_equal(m.t[1].latency_from, "config");
	assert_close(m.t[1].latency_ns, 250);
	/* lz4 on node 1: the cxl tier's price, the prior ratio 1.8 */
	assert_true(m.t[2].compressed);
	assert_close(m.t[2].medium_usd_per_gib, 1.5);
	assert_close(m.t[2].ratio, 1.8);
	assert_close(m.t[2].usd_per_gib, 1.5 / 1.8);
	assert_string_equal(m.t[2].ratio_from, "prior");
	assert_string_equal(m.t[2].latency_from, "prior");
	/* zstd on a node in no tier: priced as DRAM, never as free; zbud caps the prior at 2 */
	assert_close(m.t[3].medium_usd_per_gib, 3.0);
	assert_close(m.t[3].ratio, 2.0);
	/* the file medium: an SSD's price, and slower */
	assert_close(m.t[4].medium_usd_per_gib, VT_PRICE_FILE_USD_GIB);
	assert_true(m.t[4].latency_ns > m.t[3].latency_ns);
	/* a configured price wins */
	price[0] = 0.9;
	vt_tier_model_build(&m, &numa, specs, price, NULL, 3, NULL, false);
	assert_close(m.t[2].medium_usd_per_gib, 0.9);
	assert_close(m.t[2].usd_per_gib, 0.5);
	/* a remote tier: a server's DRAM per copy, two copies (half the ratio), a round trip */
	{
		static const struct vt_ctier_spec remote = { .name = "far", .codec = VT_CODEC_LZ4,
							     .medium = VT_MEDIUM_REMOTE, .node = -1 };

		vt_tier_model_build(&m, &numa, &remote, NULL, NULL, 1, NULL, false);
		assert_close(m.t[2].medium_usd_per_gib, 3.0);
		assert_close(m.t[2].ratio, 0.9);
		assert_true(m.t[2].latency_ns >= 100000);
	}
}

static void test_model_measured(void **state)
{
	struct vt_tiers numa;
	struct vt_tier_model m;
	struct vt_ctier_measured meas[3] = {
		/* 64 MiB in 16 MiB: ratio 4; 1000 faults at 12 us */
		{ 64 * MIB, 16 * MIB, 1000, 12000 },
		/* too little to trust: the priors stay */
		{ MIB / 2, MIB / 8, VT_MODEL_MIN_FAULTS - 1, 5000 },
		/* only zero pages: no pool bytes; the ratio is capped, never infinite */
		{ 8 * MIB, 0, 0, 0 },
	};

	(void)state;
	two_numa(&numa);
	vt_tier_model_build(&m, &numa, specs, NULL, NULL, 3, meas, false);
	assert_close(m.t[2].ratio, 4.0);
	assert_string_equal(m.t[2].ratio_from, "measured");
	assert_close(m.t[2].latency_ns, 12000);
	assert_string_equal(m.t[2].latency_from, "measured");
	assert_close(m.t[2].usd_per_gib, 1.5 / 4);
	assert_string_equal(m.t[3].ratio_from, "prior");
	assert_string_equal(m.t[3].latency_from, "prior");
	assert_close(m.t[4].ratio, 64.0);
	assert_true(isfinite(m.t[4].usd_per_gib));

	/* zswap: one compressed tier, in DRAM */
	vt_tier_model_build(&m, &numa, specs, NULL, NULL, 3, meas, true);
	assert_int_equal(m.nr, 3);
	assert_string_equal(m.t[2].name, "zswap");
	assert_close(m.t[2].medium_usd_per_gib, 3.0);
}

/*
 * A remote tier, both variants: two server copies (the prior ratio halved),
 * or one server copy and a local copy priced at the local tier's medium
 * over its own ratio; in the report JSON.
 */
static void test_model_remote_local_copy(void **state)
{
	static const struct vt_ctier_spec rs[2] = {
		{ .name = "far", .codec = VT_CODEC_LZ4, .medium = VT_MEDIUM_REMOTE, .node = -1 },
		{ .name = "near", .codec = VT_CODEC_LZ4, .pool = VT_POOL_ZSMALLOC,
		  .medium = VT_MEDIUM_NODE, .node = 1 },
	};
	const int two[2] = { -1, -1 }, local[2] = { 1, -1 };
	/* far: 64 MiB in 32 MiB on the servers and 16 MiB of local copies */
	struct vt_ctier_measured meas[2] = { { 64 * MIB, 32 * MIB, 0, 0, 16 * MIB } };
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonNode) root = NULL;
	struct vt_tco_report_input in;
	struct vt_tco_report r;
	struct vt_tiers numa;
	struct vt_tier_model m;
	JsonObject *t;

	(void)state;
	two_numa(&numa);
	vt_tier_model_build(&m, &numa, rs, NULL, two, 2, NULL, false);
	assert_close(m.t[2].ratio, 0.9);
	assert_close(m.t[2].usd_per_gib, 3.0 / 0.9);
	assert_close(m.t[2].local_copy_usd_per_gib, 0);
	/* priors: one lz4 copy on a server (3.0 / 1.8), one in near's node 1 memory (1.5 / 1.8) */
	vt_tier_model_build(&m, &numa, rs, NULL, local, 2, NULL, false);
	assert_close(m.t[2].ratio, 1.8);
	assert_close(m.t[2].local_copy_ratio, 1.8);
	assert_close(m.t[2].local_copy_usd_per_gib, 1.5 / 1.8);
	assert_close(m.t[2].usd_per_gib, 3.0 / 1.8 + 1.5 / 1.8);
	/* measured: ratio 2 on the servers, 4 locally */
	vt_tier_model_build(&m, &numa, rs, (const double[]){ 1.2, 0.6 }, local, 2, meas, false);
	assert_close(m.t[2].ratio, 2.0);
	assert_string_equal(m.t[2].ratio_from, "measured");
	assert_close(m.t[2].local_copy_ratio, 4.0);
	assert_close(m.t[2].local_copy_usd_per_gib, 0.6 / 4);
	assert_close(m.t[2].usd_per_gib, 1.2 / 2 + 0.6 / 4);
	/* the near tier itself is priced as before */
	assert_close(m.t[3].local_copy_usd_per_gib, 0);
	/* in the report: the tier's line carries the local copy's share */
	memset(&in, 0, sizeof(in));
	g_strlcpy(in.name, "vm0", sizeof(in.name));
	in.placement = "tco";
	in.model = m;
	in.bytes[2] = GIB;
	vt_tco_report_compute(&in, &r);
	assert_close(r.tier[2].usd_per_hour, vt_tco_usd_per_hour(GIB, 1.2 / 2 + 0.6 / 4));
	vt_tco_report_to_json(&in, &r, b);
	root = json_builder_get_root(b);
	t = json_array_get_object_element(json_object_get_array_member(json_node_get_object(root),
								       "tiers"), 2);
	assert_string_equal(json_object_get_string_member(t, "tier"), "far");
	assert_close(json_object_get_double_member(t, "local_copy_usd_per_gib"), 0.6 / 4);
	assert_close(json_object_get_double_member(t, "local_copy_ratio"), 4.0);
	assert_close(json_object_get_double_member(t, "usd_per_gib"), 1.2 / 2 + 0.6 / 4);
	t = json_array_get_object_element(json_object_get_array_member(json_node_get_object(root),
								       "tiers"), 3);
	assert_false(json_object_has_member(t, "local_copy_usd_per_gib"));
}

static void input(struct vt_tco_report_input *in)
{
	struct vt_tiers numa;

	memset(in, 0, sizeof(*in));
	two_numa(&numa);
	g_strlcpy(in->name, "vm0", sizeof(in->name));
	in->placement = "tco";
	in->tco_alpha = 0.3;
	in->windows = 42;
	/* lz4 at ratio 3 (measured): 0.5 USD/GiB; the price table as in two_numa */
	{
		struct vt_ctier_measured meas = { 3 * GIB, GIB, 100, 15000 };

		vt_tier_model_build(&in->model, &numa, specs, NULL, NULL, 1, &meas, false);
	}
	in->bytes[0] = 1 * GIB;
	in->bytes[1] = 2 * GIB;
	in->bytes[2] = 3 * GIB;
	/* accesses: 3 parts on dram, 1 on cxl (150 ns more): 37.5 % more latency on average */
	in->access_weight[0] = 3;
	in->access_weight[1] = 1;
	/* 20 ms of fault service per second: 2 % */
	in->fault_ns_per_s[2] = 20e6;
	in->hot_bytes = 512 * MIB;
	in->stable_windows = 7;
	in->phase_changes = 2;
}

static void test_report_arithmetic(void **state)
{
	struct vt_tco_report_input in;
	struct vt_tco_report r;
	double h = VT_TCO_AMORTIZE_HOURS;

	(void)state;
	input(&in);
	vt_tco_report_compute(&in, &r);
	assert_int_equal(r.bytes, 6 * GIB);
	assert_close(r.tier[0].usd_per_hour, 3.0 / h);
	assert_close(r.tier[1].usd_per_hour, 2 * 1.5 / h);
	assert_close(r.tier[2].usd_per_hour, 3 * 0.5 / h);
	assert_close(r.usd_per_hour, 7.5 / h);
	assert_close(r.all_dram_usd_per_hour, 18.0 / h);
	assert_close(r.saving_pct, 100 * (1 - 7.5 / 18));
	assert_close(r.saving_usd_per_month, 10.5 / h * VT_TCO_HOURS_PER_MONTH);
	assert_close(r.fault_time_pct, 2.0);
	assert_close(r.numa_extra_latency_pct, 100 * (1 * 150.0 / 4) / 100);
	/* no history yet: the hour is now */
	assert_int_equal(r.hour_samples, 0);
	assert_close(r.tier[1].bytes_hour_avg, 2.0 * GIB);
	assert_close(r.usd_per_hour_hour_avg, r.usd_per_hour);
}

static void test_history(void **state)
{
	struct vt_tco_report_input in;
	struct vt_tco_report r;
	uint64_t b[VT_MAX_TIERS] = { 0 };
	gint64 t0 = 1000 * G_USEC_PER_SEC;

	(void)state;
	input(&in);
	/* one sample a minute; samples closer than a minute are not kept */
	for (unsigned int k = 0; k < 90; k++) {
		b[0] = (k + 1) * GIB;
		vt_tco_history_add(&in.history, t0 + (gint64)k * VT_TCO_SAMPLE_US, b);
		vt_tco_history_add(&in.history, t0 + (gint64)k * VT_TCO_SAMPLE_US + 1, b);
	}
	assert_int_equal(in.history.len, VT_TCO_HISTORY);
	vt_tco_report_compute(&in, &r);
	/* the last 60 minutes: 31..90 GiB */
	assert_int_equal(r.hour_samples, 60);
	assert_close(r.tier[0].bytes_hour_avg, (31 + 90) / 2.0 * GIB);
	assert_int_equal(r.tier[0].bytes_hour_max, 90 * GIB);
	assert_close(r.tier[1].bytes_hour_avg, 0);
}

static double member_double(JsonObject *o, const char *k)
{
	assert_true(json_object_has_member(o, k));
	return json_node_get_double(json_object_get_member(o, k));
}

static void test_report_json(void **state)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonGenerator) g = json_generator_new();
	g_autoptr(JsonParser) p = json_parser_new();
	g_autoptr(JsonNode) root = NULL;
	g_autofree char *text = NULL;
	struct vt_tco_report_input in;
	struct vt_tco_report r;
	JsonObject *o, *t, *sd, *prof;
	JsonArray *tiers;

	(void)state;
	input(&in);
	vt_tco_report_compute(&in, &r);
	vt_tco_report_to_json(&in, &r, b);
	root = json_builder_get_root(b);
	json_generator_set_root(g, root);
	text = json_generator_to_data(g, NULL);
	assert_true(json_parser_load_from_data(p, text, -1, NULL));
	o = json_node_get_object(json_parser_get_root(p));
	assert_string_equal(json_object_get_string_member(o, "name"), "vm0");
	assert_string_equal(json_object_get_string_member(o, "placement"), "tco");
	assert_close(member_double(o, "tco_alpha"), 0.3);
	assert_int_equal(json_object_get_int_member(o, "windows"), 42);
	assert_int_equal(json_object_get_int_member(o, "bytes"), (gint64)(6 * GIB));
	assert_close(member_double(o, "usd_per_hour"), r.usd_per_hour);
	assert_close(member_double(o, "all_dram_usd_per_hour"), r.all_dram_usd_per_hour);
	assert_close(member_double(o, "saving_pct"), r.saving_pct);
	assert_close(member_double(o, "saving_usd_per_month"), r.saving_usd_per_month);
	assert_int_equal(json_object_get_int_member(o, "hot_set_bytes"), (gint64)(512 * MIB));
	tiers = json_object_get_array_member(o, "tiers");
	assert_int_equal(json_array_get_length(tiers), 3);
	t = json_array_get_object_element(tiers, 2);
	assert_string_equal(json_object_get_string_member(t, "tier"), "lz4");
	assert_string_equal(json_object_get_string_member(t, "kind"), "compressed");
	assert_int_equal(json_object_get_int_member(t, "bytes"), (gint64)(3 * GIB));
	assert_close(member_double(t, "ratio"), 3.0);
	assert_string_equal(json_object_get_string_member(t, "ratio_from"), "measured");
	assert_close(member_double(t, "latency_ns"), 15000);
	assert_close(member_double(t, "usd_per_gib"), 0.5);
	assert_close(member_double(t, "usd_per_hour"), r.tier[2].usd_per_hour);
	t = json_array_get_object_element(tiers, 0);
	assert_string_equal(json_object_get_string_member(t, "kind"), "numa");
	sd = json_object_get_object_member(o, "slowdown");
	assert_close(member_double(sd, "fault_time_pct"), 2.0);
	assert_close(member_double(sd, "numa_extra_latency_pct"), 37.5);
	prof = json_object_get_object_member(o, "profile");
	assert_int_equal(json_object_get_int_member(prof, "windows_since_phase_change"), 7);
	assert_int_equal(json_object_get_int_member(prof, "phase_changes"), 2);
}

/* The report as STATS carries it: fixed point, rounded, and what QEMU accepts. */
static void test_report_wire(void **state)
{
	struct {
		struct vtier_handoff_stats s;
		struct vtier_handoff_tco tco;
		struct vtier_handoff_tco_tier t[VTIER_HANDOFF_TIERS_MAX];
	} w = { .s = { .flags = VTIER_STATS_F_TCO } };
	struct vt_tco_report_input in;
	struct vt_tco_report r;
	struct vt_handoff_stats st;
	char err[VT_HANDOFF_ERR_LEN];
	size_t size = sizeof(w.s) + sizeof(w.tco) + 3 * sizeof(w.t[0]);	/* 3 tiers */

	(void)state;
	input(&in);
	vt_tco_report_compute(&in, &r);
	vt_tco_report_to_wire(&in, &r, &w.tco, w.t);
	assert_int_equal(w.tco.windows, 42);
	assert_string_equal(w.tco.placement, "tco");
	assert_int_equal(w.tco.tco_alpha_milli, 300);
	assert_int_equal(w.tco.bytes, 6 * GIB);
	/* 7.5 USD amortised over 43800 h: 171232.88 nano-USD per hour */
	assert_int_equal(w.tco.cost_nusd_per_hour, 171233);
	assert_int_equal(w.tco.cost_hour_avg_nusd_per_hour, 171233);
	assert_int_equal(w.tco.all_dram_nusd_per_hour, 410959);
	assert_int_equal(w.tco.saving_nusd_per_month, 175000000);
	assert_int_equal(w.tco.saving_pct_milli, 58333);
	assert_int_equal(w.tco.fault_time_pct_milli, 2000);
	assert_int_equal(w.tco.numa_extra_latency_pct_milli, 37500);
	assert_int_equal(w.tco.hot_set_bytes, 512 * MIB);
	assert_int_equal(w.tco.windows_since_phase_change, 7);
	assert_int_equal(w.tco.phase_changes, 2);
	assert_int_equal(w.tco.hour_samples, 0);
	assert_int_equal(w.tco.n_tiers, 3);
	assert_string_equal(w.t[0].name, "dram");
	assert_int_equal(w.t[0].kind, VTIER_TCO_TIER_NUMA);
	assert_int_equal(w.t[0].ratio_milli, 1000);
	assert_int_equal(w.t[0].latency_ns, 100);
	assert_int_equal(w.t[0].price_nusd_per_gib, 3000000000ULL);
	assert_int_equal(w.t[0].cost_nusd_per_hour, 68493);
	assert_string_equal(w.t[2].name, "lz4");
	assert_int_equal(w.t[2].kind, VTIER_TCO_TIER_COMPRESSED);
	assert_int_equal(w.t[2].ratio_milli, 3000);
	assert_int_equal(w.t[2].latency_ns, 15000);
	assert_int_equal(w.t[2].price_nusd_per_gib, 500000000);
	assert_int_equal(w.t[2].bytes, 3 * GIB);
	/* no hour samples: the average is now's bytes, the maximum 0 */
	assert_int_equal(w.t[2].bytes_hour_avg, 3 * GIB);
	assert_int_equal(w.t[2].bytes_hour_max, 0);
	assert_int_equal(vt_handoff_check_stats(&w, size, &st, err, sizeof(err)), 0);

	/*
	 * Out of range figures are clamped to what the wire holds: a tier dearer than
	 * DRAM makes the saving negative; the name is cut to 15 bytes.
	 */
	g_strlcpy(in.model.t[1].name, "a-very-long-tier-name", sizeof(in.model.t[1].name));
	in.model.t[1].usd_per_gib = 30;
	in.stable_windows = 1000;
	vt_tco_report_compute(&in, &r);
	vt_tco_report_to_wire(&in, &r, &w.tco, w.t);
	assert_string_equal(w.t[1].name, "a-very-long-tie");
	assert_true(w.tco.saving_pct_milli < 0);
	assert_true(w.tco.saving_nusd_per_month < 0);
	assert_int_equal(w.tco.windows_since_phase_change, 42);
	assert_int_equal(vt_handoff_check_stats(&w, size, &st, err, sizeof(err)), 0);
}

/* A VM with nothing present: no division by zero, no saving claimed. */
static void test_report_empty(void **state)
{
	struct vt_tco_report_input in;
	struct vt_tco_report r;

	(void)state;
	input(&in);
	memset(in.bytes, 0, sizeof(in.bytes));
	memset(in.access_weight, 0, sizeof(in.access_weight));
	vt_tco_report_compute(&in, &r);
	assert_close(r.usd_per_hour, 0);
	assert_close(r.saving_pct, 0);
	assert_close(r.numa_extra_latency_pct, 0);
	assert_true(isfinite(r.saving_usd_per_month));
}

/* The report's text, byte for byte: the view may be written another way, not change. */
static void test_report_json_pinned(void **state)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autofree char *text = NULL;
	struct vt_tco_report_input in;
	struct vt_tco_report r;

	(void)state;
	input(&in);
	vt_tco_report_compute(&in, &r);
	vt_tco_report_to_json(&in, &r, b);
	text = json_pin_text(b);
	assert_true(json_pin_matches("tco report", text,
		"d613e85e50753ba43677d48aa469256e603d3754302adfa33f4c0cee2a456b3f"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model_priors_and_prices),
		cmocka_unit_test(test_model_measured),
		cmocka_unit_test(test_model_remote_local_copy),
		cmocka_unit_test(test_report_arithmetic),
		cmocka_unit_test(test_history),
		cmocka_unit_test(test_report_json),
		cmocka_unit_test(test_report_json_pinned),
		cmocka_unit_test(test_report_empty),
		cmocka_unit_test(test_report_wire),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
