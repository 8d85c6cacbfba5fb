// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tier discovery on sysfs trees shaped like the testbed's L1 host (three nodes
 * in three memory tiers, HMAT latencies) and like a host without
 * memory_tiering; config overrides, and malformed configs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tiers.h"
#include "json_pin.h"

static void put(const char *root, const char *rel, const char *text)
{
	g_autofree char *path = g_build_filename(root, rel, NULL);
	g_autofree char *dir = g_path_get_dirname(path);

	assert_int_equal(g_mkdir_with_parents(dir, 0755), 0);
	assert_true(g_file_set_contents(path, text, -1, NULL));
}

static void node(const char *root, int n, unsigned int total_mib, unsigned int free_mib,
		 const char *distance, int latency)
{
	g_autofree char *mi = g_strdup_printf(
		"Node %d MemTotal:       %u kB\nNode %d MemFree:        %u kB\nNode %d MemUsed: 1 kB\n",
		n, total_mib * 1024, n, free_mib * 1024, n);
	g_autofree char *p = g_strdup_printf("sys/devices/system/node/node%d/meminfo", n);
	g_autofree char *d = g_strdup_printf("sys/devices/system/node/node%d/distance", n);

	put(root, p, mi);
	put(root, d, distance);
	if (latency > 0) {
		g_autofree char *l = g_strdup_printf(
			"sys/devices/system/node/node%d/access0/initiators/read_latency", n);
		g_autofree char *v = g_strdup_printf("%d\n", latency);

		put(root, l, v);
	}
}

static char *tree(bool tiering, bool hmat)
{
	char *root = g_dir_make_tmp("vtier-sysfs-XXXXXX", NULL);

	put(root, "sys/devices/system/node/has_memory", "0-2\n");
	node(root, 0, 3072, 2000, "10 20 30\n", hmat ? 100 : 0);
	node(root, 1, 2048, 2040, "20 10 20\n", hmat ? 250 : 0);
	node(root, 2, 1024, 1020, "30 20 10\n", hmat ? 400 : 0);
	if (tiering) {
		/* directory order does not say which is fastest */
		put(root, "sys/devices/virtual/memory_tiering/memory_tier72/nodelist", "2\n");
		put(root, "sys/devices/virtual/memory_tiering/memory_tier4/nodelist", "0\n");
		put(root, "sys/devices/virtual/memory_tiering/memory_tier22/nodelist", "1\n");
	}
	return root;
}

static void rm_tree(const char *root)
{
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", root);

	assert_int_equal(system(cmd), 0);
}

static void test_testbed_shape(void **state)
{
	g_autofree char *root = tree(true, true);
	struct vt_tiers t;
	g_autoptr(GError) e = NULL;

	(void)state;
	assert_true(vt_tiers_discover(&t, root, NULL, &e));
	assert_int_equal(t.nr, 3);
	assert_int_equal(t.tier[0].nodes[0], 0);
	assert_int_equal(t.tier[0].kernel_tier, 4);
	assert_int_equal(t.tier[1].nodes[0], 1);
	assert_int_equal(t.tier[2].nodes[0], 2);
	assert_int_equal(t.tier[1].latency_ns, 250);
	assert_int_equal(t.tier[0].capacity_bytes, 3072ULL << 20);
	assert_int_equal(t.tier[2].free_bytes, 1020ULL << 20);
	assert_string_equal(t.tier[0].name, "dram");
	assert_true(t.tier[0].price_usd_gib > t.tier[1].price_usd_gib);
	/* node -> tier index after ordering (directory order is 72, 4, 22 or any) */
	for (unsigned int i = 0; i < t.nr; i++)
		for (unsigned int j = 0; j < t.tier[i].nr_nodes; j++)
			assert_int_equal(vt_tiers_of_node(&t, t.tier[i].nodes[j]), i);
	assert_int_equal(vt_tiers_of_node(&t, 0), 0);
	assert_int_equal(vt_tiers_of_node(&t, 1), 1);
	assert_int_equal(vt_tiers_of_node(&t, 2), 2);
	assert_int_equal(vt_tiers_of_node(&t, 5), -1);
	assert_int_equal(vt_tiers_of_node(&t, -1), -1);
	rm_tree(root);
}

static void test_no_tiering_no_hmat(void **state)
{
	g_autofree char *root = tree(false, false);
	struct vt_tiers t;

	(void)state;
	assert_true(vt_tiers_discover(&t, root, NULL, NULL));
	assert_int_equal(t.nr, 3);	/* one per node, ordered by SLIT distance */
	assert_int_equal(t.tier[0].nodes[0], 0);
	assert_int_equal(t.tier[0].latency_ns, 100);
	assert_int_equal(t.tier[2].nodes[0], 2);
	assert_int_equal(t.tier[2].latency_ns, 300);
	assert_int_equal(vt_tiers_of_node(&t, 2), 2);
	assert_int_equal(vt_tiers_of_node(&t, 1), 1);
	rm_tree(root);
}

static void test_config(void **state)
{
	g_autofree char *root = tree(true, true);
	g_autoptr(GKeyFile) k = g_key_file_new();
	struct vt_tiers t;
	g_autoptr(GError) e = NULL;

	(void)state;
	assert_true(g_key_file_load_from_data(k,
		"[tier.dram]\nnodes=0\nprice_usd_per_gib=4.5\n"
		"[tier.slow]\nnodes=1-2\nlatency_ns=300\nprice_usd_per_gib=1\n", -1, 0, NULL));
	assert_true(vt_tiers_discover(&t, root, k, &e));
	assert_int_equal(t.nr, 2);
	assert_string_equal(t.tier[1].name, "slow");
	assert_int_equal(t.tier[1].nr_nodes, 2);
	assert_int_equal(t.tier[1].capacity_bytes, 3072ULL << 20);
	assert_int_equal(t.tier[1].latency_ns, 300);
	assert_int_equal(vt_tiers_of_node(&t, 2), 1);
	assert_int_equal(vt_tiers_of_node(&t, 0), 0);
	assert_true(t.tier[0].price_usd_gib == 4.5);
	assert_int_equal(t.tier[0].latency_ns, 100);	/* from HMAT when not configured */
	assert_string_equal(t.tier[0].source, "config");
	rm_tree(root);
}

/* The mover's target node: the roomiest of the tier's nodes at the window's one refresh. */
static void test_roomiest_node(void **state)
{
	g_autofree char *root = tree(true, true);
	g_autoptr(GKeyFile) k = g_key_file_new();
	struct vt_tiers t;
	g_autoptr(GError) e = NULL;

	(void)state;
	assert_true(g_key_file_load_from_data(k, "[tier.dram]\nnodes=0\n[tier.slow]\nnodes=1-2\n",
					      -1, 0, NULL));
	assert_true(vt_tiers_discover(&t, root, k, &e));
	vt_tiers_refresh(&t);
	assert_int_equal(t.node_free_bytes[1], 2040ULL << 20);
	assert_int_equal(t.tier[1].free_bytes, 3060ULL << 20);
	assert_int_equal(vt_tiers_roomiest_node(&t, 1), 1);
	assert_int_equal(vt_tiers_roomiest_node(&t, 0), 0);
	/* node 2 frees memory: seen at the next refresh, not before */
	node(root, 2, 4096, 4000, "30 20 10\n", 400);
	assert_int_equal(vt_tiers_roomiest_node(&t, 1), 1);
	vt_tiers_refresh(&t);
	assert_int_equal(vt_tiers_roomiest_node(&t, 1), 2);
	assert_int_equal(t.tier[1].free_bytes, 6040ULL << 20);
	/* within a mask (QEMU's cpuset, a home node): the roomiest of those, -1 for none */
	assert_int_equal(vt_tiers_node_mask(&t, 1), 0x6);
	assert_int_equal(vt_tiers_node_mask(&t, 5), 0);
	assert_int_equal(vt_tiers_roomiest_node_in(&t, 1, 0x6), 2);
	assert_int_equal(vt_tiers_roomiest_node_in(&t, 1, 0x3), 1);
	assert_int_equal(vt_tiers_roomiest_node_in(&t, 1, 0x1), -1);
	assert_int_equal(vt_tiers_roomiest_node_in(&t, 0, UINT64_MAX), 0);
	/* sysfs gone: the answer is still the last refresh's (no read of its own) */
	rm_tree(root);
	assert_int_equal(vt_tiers_roomiest_node(&t, 1), 2);
}

/* QEMU's cpuset mems from /proc/PID/status, and every text that is not one. */
static void test_mems_allowed(void **state)
{
	uint64_t m = 42;

	(void)state;
	assert_true(vt_parse_mems_allowed("Name:\tqemu\nMems_allowed:\t00000000,00000003\n"
					  "Mems_allowed_list:\t0-1\nvoluntary_ctxt_switches:\t1\n",
					  &m));
	assert_int_equal(m, 0x3);
	assert_true(vt_parse_mems_allowed("Mems_allowed_list:\t2,5-6", &m));
	assert_int_equal(m, 0x64);
	assert_true(vt_parse_mems_allowed("Mems_allowed_list:\t63\n", &m));
	assert_int_equal(m, 1ULL << 63);
	m = 42;
	/* no line, the key not at a line's start, an empty list, a node past 63, garbage */
	assert_false(vt_parse_mems_allowed("", &m));
	assert_false(vt_parse_mems_allowed("Name:\tqemu\n", &m));
	assert_false(vt_parse_mems_allowed("x Mems_allowed_list:\t0\n", &m));
	assert_false(vt_parse_mems_allowed("Mems_allowed_list:\t\n", &m));
	assert_false(vt_parse_mems_allowed("Mems_allowed_list:\t0-64\n", &m));
	assert_false(vt_parse_mems_allowed("Mems_allowed_list:\t0-1023\n", &m));
	assert_false(vt_parse_mems_allowed("Mems_allowed_list:\tzero\n", &m));
	assert_false(vt_parse_mems_allowed("Mems_allowed_list:\t1-0\n", &m));
	assert_int_equal(m, 42);
}

static void test_config_groups(void **state)
{
	/* each config fails with a message that says it, in valid UTF-8 */
	static const struct {
		const char *config;
		const char *says;
	} bad[] = {
		{ "[tier.dram]\nnodes=0\n[teir.x]\nnodes=1\n", "unknown group [teir.x]" },
		/* bad names and values are shown printable, never as raw bytes */
		{ "[tier.\xff\xfe]\nnodes=0\n", "[tier.??]: bad tier name" },
		/* found by fuzz_tiers_config */
		{ "[tier.a]\nnodes=\3340-\n", "'?0-'" },
	};
	g_autofree char *root = tree(true, true);
	struct vt_tiers t;

	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GKeyFile) k = g_key_file_new();
		g_autoptr(GError) e = NULL;

		assert_true(g_key_file_load_from_data(k, bad[i].config, -1, 0, NULL));
		assert_false(vt_tiers_discover(&t, root, k, &e));
		if (!strstr(e->message, bad[i].says) || !g_utf8_validate(e->message, -1, NULL))
			fail_msg("case %u: '%s' lacks '%s'", i, e->message, bad[i].says);
	}
	{
		g_autoptr(GKeyFile) k = g_key_file_new();
		g_autoptr(GError) e = NULL;

		/* ctier groups belong to the compressed-tier parser, [policy] to the
		 * daemon's VM defaults: accepted here */
		assert_true(g_key_file_load_from_data(k, "[tier.dram]\nnodes=0\n"
						      "[ctier.lz4]\ncompressor=lz4\n"
						      "[policy]\nwindow_ms=500\n", -1, 0, NULL));
		assert_true(vt_tiers_discover(&t, root, k, &e));
		assert_int_equal(t.nr, 1);
	}
	assert_true(vt_tier_name_valid("dram"));
	assert_true(vt_tier_name_valid("cxl-0.slow:x_1"));
	assert_false(vt_tier_name_valid(""));
	assert_false(vt_tier_name_valid("a\tb"));
	assert_false(vt_tier_name_valid("0123456789abcdef0123456789abcdef"));
	/* one rule with tiers= and the 16-byte wire fields: 15 characters at most */
	assert_true(vt_tier_name_valid("CXL"));
	assert_true(vt_tier_name_valid("0123456789abcde"));
	assert_false(vt_tier_name_valid("0123456789abcdef"));
	rm_tree(root);
}

static void test_bad_config(void **state)
{
	static const char *const bad[] = {
		"[tier.a]\nnodes=\n", "[tier.a]\nnodes=x\n", "[tier.a]\nnodes=0-\n",
		"[tier.a]\nnodes=2-1\n", "[tier.a]\nnodes=64\n", "[tier.a]\nnodes=9\n",
		"[tier.a]\nnodes=0,0\n", "[tier.a]\nnodes=0\n[tier.b]\nnodes=0\n",
		"[tier.a]\nlatency_ns=5\n", "[tier.a]\nnodes=0\nlatency_ns=0\n",
		"[tier.a]\nnodes=0\nlatency_ns=fast\n", "[tier.a]\nnodes=0\nprice_usd_per_gib=-1\n",
		"[tier.a]\nnodes=0\nprice_usd_per_gib=nan\n", "[tier.a]\nnodes=0\nprice_usd_per_gib=\n",
		"[tier.a]\nnodes=0\ncolour=blue\n", "[tier.]\nnodes=0\n",
		"[tier.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\nnodes=0\n",
		/* 16 characters: longer than the STATS and profile name fields */
		"[tier.cxl-expander-0123]\nnodes=0\n",
		/* misspelt or unknown groups are errors, not silently ignored */
		"[tier.a]\nnodes=0\n[teir.b]\nnodes=1\n", "[daemon]\nx=1\n", "[tiers]\n",
		/* names that would break JSON replies, logs or tier lists */
		"[tier.\xff\xfe]\nnodes=0\n", "[tier.caf\xc3\xa9]\nnodes=0\n",
		"[tier.a b]\nnodes=0\n", "[tier.a,b]\nnodes=0\n", "[tier.a\"b]\nnodes=0\n",
	};
	g_autofree char *root = tree(true, true);

	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GKeyFile) k = g_key_file_new();
		g_autoptr(GError) e = NULL;
		struct vt_tiers t;

		assert_true(g_key_file_load_from_data(k, bad[i], -1, 0, NULL));
		if (vt_tiers_discover(&t, root, k, &e))
			fail_msg("accepted config %s", bad[i]);
		assert_non_null(strstr(e->message, "config"));
	}
	rm_tree(root);
	{
		struct vt_tiers t;
		g_autoptr(GError) e = NULL;

		assert_false(vt_tiers_discover(&t, "/nonexistent", NULL, &e));
		assert_non_null(strstr(e->message, "has_memory"));
	}
}

static void test_nodelist(void **state)
{
	int n[VT_MAX_NODES];
	unsigned int nr;

	(void)state;
	assert_true(vt_parse_nodelist("0-2,5", n, &nr));
	assert_int_equal(nr, 4);
	assert_int_equal(n[3], 5);
	assert_true(vt_parse_nodelist("", n, &nr));
	assert_int_equal(nr, 0);
	assert_false(vt_parse_nodelist("1,,2", n, &nr));
	assert_false(vt_parse_nodelist("-1", n, &nr));
	assert_false(vt_parse_nodelist("0-63,0", n, &nr));
}

/* The tier list's text, byte for byte: the view may be written another way, not change. */
static void test_json_pinned(void **state)
{
	g_autofree char *root = tree(true, true);
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autofree char *text = NULL;
	struct vt_tiers t;

	(void)state;
	assert_true(vt_tiers_discover(&t, root, NULL, NULL));
	vt_tiers_to_json(&t, b);
	text = json_pin_text(b);
	assert_true(json_pin_matches("tiers", text,
		"76a53c0256012555add344b501ad1e1000d7d7a50332c3d98fda8082b154fb2c"));
	rm_tree(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_testbed_shape),
		cmocka_unit_test(test_json_pinned),
		cmocka_unit_test(test_no_tiering_no_hmat),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_roomiest_node),
		cmocka_unit_test(test_mems_allowed),
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_config_groups),
		cmocka_unit_test(test_nodelist),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
