// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtierd.conf as a whole (daemon/config_file.c), over this host's sysfs: the
 * shipped file loads as shipped and with its [policy] uncommented; each bad
 * value is refused naming its group, key and value; a comment at the end of
 * a value line is named as such. argv[1]: the shipped vtierd.conf.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config_file.h"

static const char *shipped_path;

/* Two memory servers of a [remote.NAME] tier (their keys' form only) */
#define PK "abababababababababababababababababababababababababababababababab"
#define TWO_SERVERS "10.0.0.2:7500/" PK ", 10.0.0.3:7500/" PK

static struct vt_daemon *load(const char *text, GError **e)
{
	return vt_daemon_from_config(text, strlen(text), "/", NULL, NULL, e);
}

static void test_shipped(void **state)
{
	g_autofree char *text = NULL;
	g_autoptr(GRegex) re = g_regex_new("^#\\[policy\\]$", G_REGEX_MULTILINE, 0, NULL);
	g_autofree char *uncommented = NULL;
	GError *e = NULL;
	struct vt_daemon *d;
	GKeyFile *config = NULL;

	(void)state;
	assert_true(g_file_get_contents(shipped_path, &text, NULL, NULL));
	d = vt_daemon_from_config(text, strlen(text), "/", NULL, &config, &e);
	if (!d)
		fail_msg("shipped: %s", e->message);
	assert_non_null(config);
	assert_true(g_key_file_has_group(config, "libvirt"));
	g_key_file_free(config);
	vt_daemon_free(d);
	uncommented = g_regex_replace_literal(re, text, -1, 0, "[policy]", 0, NULL);
	assert_string_not_equal(uncommented, text);
	d = load(uncommented, &e);
	if (!d)
		fail_msg("shipped, [policy] uncommented: %s", e->message);
	vt_daemon_free(d);
}

static void test_refused(void **state)
{
	static const struct {
		const char *text;
		const char *want;
	} cases[] = {
		{ "[policy]\nballoon = 1KiB\n", "balloon: '1KiB' is out of range 4KiB.." },
		{ "[policy]\ndram_limit = 0\n", "none lifts the limit" },
		{ "[policy]\nmode = auto\xc2\xa0\n", "mode: 'auto\\xc2\\xa0' is not printable ASCII" },
		{ "[policy]\nnosuchkey = 1\n", "unknown policy key 'nosuchkey'" },
		{ "[metrics]\nlisten = localhost:9477\n", "[metrics] listen: " },
		{ "[metrics]\nlisten = localhost:9477\n", "host names are not resolved" },
		{ "[libvirt]\nattach = sometimes\n", "'sometimes' is not policy or all" },
		{ "[libvirt]\nuir = qemu:///system\n", "[libvirt]: unknown key 'uir'" },
		{ "[teir.x]\nnodes = 0\n", "unknown group [teir.x]" },
		/* names from the file are shown printable (the fuzzer's first find) */
		{ "[libvirt]\nuir\xff\xfe = qemu:///system\n", "[libvirt]: unknown key 'uir?" "?'" },
		{ "[libvirt]\nuri\x01 = qemu:///system\n", "[libvirt]: unknown key 'uri?'" },
		/* GLib's own message ("Invalid group name: ...") quotes it raw: made UTF-8 */
		{ "[tie\xff[r.x]\n", "tie\xef\xbf\xbd[r.x" },
		{ "[ctier.a]\ncodec = lz4\npool = zbud\nmedium = node:0\nprice_usd_per_gib = -1\n",
		  "[ctier.a] price_usd_per_gib: '-1' is not a number in 0..1e6" },
		/* the docs' example once had comments after values */
		{ "[policy]\nctier_age_windows = 3       # cold windows before the next step down\n",
		  "[policy] ctier_age_windows: '3       # cold windows before the next step down' "
		  "ends in a comment" },
		{ "[ctier.lz4]\ncodec = lz4\npool = zsmalloc\nmedium = node:0   # the CXL node\n",
		  "[ctier.lz4] medium: 'node:0   # the CXL node' ends in a comment" },
		/* vtierd's own AF_XDP end: its knobs' values, and none on a UDP end */
		{ "[remote.far]\nservers = " TWO_SERVERS "\nbusy_poll = yes\n",
		  "[remote.far] busy_poll: 'yes': an AF_XDP option, accepted only with transport "
		  "afxdp or auto (transport is udp, the default)" },
		{ "[remote.far]\nservers = " TWO_SERVERS "\ntransport = afxdp\nport = 7700\n"
		  "xdp_bind = native\n",
		  "[remote.far] xdp_bind: 'native': auto, copy or zerocopy accepted" },
	};

	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) e = NULL;
		struct vt_daemon *d = load(cases[i].text, &e);

		if (d)
			fail_msg("case %u loaded: %s", i, cases[i].text);
		if (!strstr(e->message, cases[i].want) || !g_utf8_validate(e->message, -1, NULL))
			fail_msg("case %u: '%s' lacks '%s'", i, e->message, cases[i].want);
	}
}

/* What the rules accept: a tier named in capitals chosen by tiers=, '#' inside a value. */
static void test_accepted(void **state)
{
	static const char *const ok[] = {
		"[tier.CXL]\nnodes = 0\n[policy]\ntiers = CXL\n",
		"[policy]\n",
		"",
		"# a comment\n[policy]\n# another\nmode = auto\n",
		"[libvirt]\nuri = qemu:///system#x\n",
		"[remote.far]\nservers = " TWO_SERVERS "\ntransport = auto\nport = 7700\n"
		"xdp_bind = copy\nneed_wakeup = no\nbusy_poll = yes\nxdp_skb = no\n",
	};

	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(ok); i++) {
		g_autoptr(GError) e = NULL;
		struct vt_daemon *d = load(ok[i], &e);

		if (!d)
			fail_msg("case %u refused: %s", i, e->message);
		vt_daemon_free(d);
	}
}

/* [tier.CXL] is chosen by tiers=CXL: the tier-name rule is one for config and policy keys. */
static void test_tier_name_in_policy(void **state)
{
	g_autoptr(GError) e = NULL;
	struct vt_daemon *d = load("[tier.CXL]\nnodes = 0\n[policy]\ntiers = CXL\n", &e);
	struct vt_vm *vm = g_new0(struct vt_vm, 1);
	uint32_t mask = 0;

	(void)state;
	if (!d)
		fail_msg("refused: %s", e->message);
	assert_string_equal(d->host.tiers.tier[0].name, "CXL");
	assert_string_equal(d->defaults.tiers, "CXL");
	vm->host = &d->host;
	vm->tiers = d->host.tiers;
	if (!vt_vm_tiers_mask(vm, d->defaults.tiers, &mask, &e))
		fail_msg("tiers=CXL: %s", e->message);
	assert_int_equal(mask, 1);
	assert_false(vt_vm_tiers_mask(vm, "cxl", &mask, &e));	/* names are case-sensitive */
	assert_non_null(strstr(e->message, "no tier 'cxl' (it has: CXL)"));
	g_free(vm);
	vt_daemon_free(d);
}

/*
 * [host]: off when absent or empty; one budget or one per node; the step's
 * default (1/16 of the budget, at most 256 MiB) and the dead band's (4 MiB).
 */
static void test_host_share(void **state)
{
	static const struct {
		const char *text;
		uint64_t budget, step, deadband;
		unsigned int nr_nodes, hold;
	} good[] = {
		{ "[host]\ndram_budget = 16GiB\n", 16ULL << 30, 256ULL << 20, 4ULL << 20, 0, 10 },
		{ "[host]\ndram_budget = 1GiB\n", 1ULL << 30, 64ULL << 20, 4ULL << 20, 0, 10 },
		{ "[host]\ndram_budget = 20MiB\n", 20ULL << 20, 2ULL << 20, 2ULL << 20, 0, 10 },
		{ "[host]\ndram_budget = 0:12G\nshare_hold = 0\n", 12ULL << 30, 256ULL << 20,
		  4ULL << 20, 1, 0 },
		{ "[host]\ndram_budget = 0 : 1GiB+512MiB\nshare_step = 128MiB\n"
		  "share_deadband = 0\nshare_hold = 3600\n", 3ULL << 29, 128ULL << 20, 0, 1, 3600 },
	};
	static const struct {
		const char *text;
		const char *want;
	} bad[] = {
		{ "[host]\ndram_budget = lots\n", "[host] dram_budget: invalid size 'lots'" },
		{ "[host]\ndram_budget = 1MiB\n", "[host] dram_budget: '1MiB' is out of range 2MiB..1PiB" },
		{ "[host]\ndram_budget = 2PiB\n", "'2PiB' is out of range 2MiB..1PiB" },
		{ "[host]\ndram_budget = 0:1G,0:2G\n", "[host] dram_budget: node 0 named twice" },
		{ "[host]\ndram_budget = x:1G\n", "'x:1G': the node is not a number in 0..63" },
		{ "[host]\ndram_budget = 64:1G\n", "'64:1G': the node is not a number in 0..63" },
		{ "[host]\ndram_budget = -1:1G\n", "'-1:1G': the node is not a number" },
		{ "[host]\ndram_budget = 0:\n", "[host] dram_budget: node 0: empty size" },
		{ "[host]\ndram_budget = 0:1M\n", "node 0: '1M' is out of range 2MiB..1PiB" },
		{ "[host]\ndram_budget = 1G,0:2G\n", "'1G' is not NODE:SIZE" },
		{ "[host]\ndram_budget = 0:1G,\n", "'' is not NODE:SIZE" },
		{ "[host]\ndram_budget = 1:4G\n",
		  "node 1 is not a memory node of this host's tiers (DRAM nodes: 0" },
		{ "[host]\nshare_step = 64MiB\n", "[host]: share_step without dram_budget" },
		{ "[host]\ndram_budget = 8G\nshare_step = 1MiB\n",
		  "[host] share_step: '1MiB' is out of range 2MiB..1PiB" },
		{ "[host]\ndram_budget = 8G\nshare_step = 4MiB\nshare_deadband = 8MiB\n",
		  "[host] share_deadband (8388608) must not exceed share_step (4194304)" },
		{ "[host]\ndram_budget = 8G\nshare_deadband = -1\n",
		  "[host] share_deadband: invalid size '-1'" },
		{ "[host]\ndram_bugdet = 8G\n", "[host]: unknown key 'dram_bugdet' (dram_budget, "
		  "share_step, share_deadband, share_hold)" },
		{ "[host]\ndram_budget = 8G\nshare_hold = 3601\n",
		  "[host] share_hold: '3601' is not a number of windows from 0 to 3600" },
		{ "[host]\ndram_budget = 8G\nshare_hold = -1\n",
		  "[host] share_hold: '-1' is not a number of windows" },
		{ "[host]\ndram_budget = 8G\nshare_hold = 10s\n",
		  "[host] share_hold: '10s' is not a number of windows" },
		{ "[host]\nshare_hold = 10\n", "[host]: share_hold without dram_budget" },
		{ "[host]\ndram_budget = 8G   # the DRAM\n", "ends in a comment" },
	};
	struct vt_tiers tiers = { .nr = 2 };
	struct vt_host_share_config c = { .on = true, .nr_nodes = 1, .node = { 1 } };
	g_autoptr(GError) e = NULL;
	struct vt_daemon *d;

	(void)state;
	d = load("[policy]\n", &e);
	assert_false(d->host.share.on);
	vt_daemon_free(d);
	d = load("[host]\n", &e);
	assert_false(d->host.share.on);
	vt_daemon_free(d);
	for (unsigned int i = 0; i < G_N_ELEMENTS(good); i++) {
		d = load(good[i].text, &e);
		if (!d)
			fail_msg("good %u refused: %s", i, e->message);
		assert_true(d->host.share.on);
		assert_int_equal(d->host.share.budget, good[i].budget);
		assert_int_equal(d->host.share.step, good[i].step);
		assert_int_equal(d->host.share.deadband, good[i].deadband);
		assert_int_equal(d->host.share.nr_nodes, good[i].nr_nodes);
		assert_int_equal(d->host.share.hold, good[i].hold);
		vt_daemon_free(d);
	}
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_clear_error(&e);
		d = load(bad[i].text, &e);
		if (d)
			fail_msg("bad %u loaded: %s", i, bad[i].text);
		if (!strstr(e->message, bad[i].want))
			fail_msg("bad %u: '%s' lacks '%s'", i, e->message, bad[i].want);
	}
	/* a node of a slower tier is not DRAM */
	g_clear_error(&e);
	g_strlcpy(tiers.tier[0].name, "dram", sizeof(tiers.tier[0].name));
	tiers.tier[0].nodes[0] = 0;
	tiers.tier[0].nr_nodes = 1;
	g_strlcpy(tiers.tier[1].name, "cxl", sizeof(tiers.tier[1].name));
	tiers.tier[1].nodes[0] = 1;
	tiers.tier[1].nr_nodes = 1;
	for (unsigned int n = 0; n < VT_MAX_NODES; n++)
		tiers.node_tier[n] = n < 2 ? (int)n : -1;
	assert_false(vt_host_share_config_check_nodes(&c, &tiers, &e));
	assert_string_equal(e->message, "[host] dram_budget: node 1 is on tier cxl, not a DRAM "
			    "node (the fastest tier, dram: nodes 0)");
	c.node[0] = 0;
	assert_true(vt_host_share_config_check_nodes(&c, &tiers, NULL));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_accepted),
		cmocka_unit_test(test_tier_name_in_policy),
		cmocka_unit_test(test_host_share),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: test_config_file SHIPPED_VTIERD_CONF\n");
		return 2;
	}
	shipped_path = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
