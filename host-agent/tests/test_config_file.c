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

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_accepted),
		cmocka_unit_test(test_tier_name_in_policy),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: test_config_file SHIPPED_VTIERD_CONF\n");
		return 2;
	}
	shipped_path = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
