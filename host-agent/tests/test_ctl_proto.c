// SPDX-License-Identifier: GPL-2.0-or-later
/* Control protocol requests: round trips and every way to be malformed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_proto.h"

static void test_roundtrip(void **state)
{
	char *set[] = { "mode=observe", "dram_limit=256MiB", NULL };
	struct vt_ctl_request in = { .cmd = VT_CTL_ATTACH, .vm = "vm0", .qmp = "/run/tb/vm0.qmp",
				     .set = set, .nr_set = 2 };
	struct vt_ctl_request out;
	g_autofree char *text = vt_ctl_request_to_json(&in);
	g_autoptr(GError) e = NULL;

	(void)state;
	assert_true(vt_ctl_request_parse(text, strlen(text), &out, &e));
	assert_int_equal(out.cmd, VT_CTL_ATTACH);
	assert_string_equal(out.vm, "vm0");
	assert_string_equal(out.qmp, "/run/tb/vm0.qmp");
	assert_int_equal(out.nr_set, 2);
	assert_string_equal(out.set[1], "dram_limit=256MiB");
	assert_null(out.set[2]);
	vt_ctl_request_clear(&out);
	/* attach by libvirt domain: any UTF-8 name libvirt takes */
	{
		struct vt_ctl_request din = { .cmd = VT_CTL_ATTACH, .domain = "web 01 \xc3\xa9",
					      .set = set, .nr_set = 1 };
		g_autofree char *dtext = vt_ctl_request_to_json(&din);

		assert_true(vt_ctl_request_parse(dtext, strlen(dtext), &out, &e));
		assert_string_equal(out.domain, "web 01 \xc3\xa9");
		assert_null(out.qmp);
		vt_ctl_request_clear(&out);
	}
	/* report without a VM: every VM's */
	assert_true(vt_ctl_request_parse("{\"v\":1,\"cmd\":\"report\"}", 22, &out, NULL));
	assert_int_equal(out.cmd, VT_CTL_REPORT);
	assert_null(out.vm);
	vt_ctl_request_clear(&out);
	for (unsigned int c = VT_CTL_LIST; c <= VT_CTL_REPORT; c++) {
		struct vt_ctl_request r = { .cmd = c };
		g_autofree char *t = NULL;

		if (c == VT_CTL_ATTACH)
			r.qmp = "/x.qmp";
		if (c == VT_CTL_DETACH || c == VT_CTL_STATUS || c == VT_CTL_STATS ||
		    c == VT_CTL_POLICY || c == VT_CTL_DEMOTE || c == VT_CTL_REPORT)
			r.vm = "a.b-c_1";
		t = vt_ctl_request_to_json(&r);
		assert_true(vt_ctl_request_parse(t, strlen(t), &out, NULL));
		assert_int_equal(out.cmd, c);
		vt_ctl_request_clear(&out);
	}
}

static void test_bad(void **state)
{
	static const char *const bad[] = {
		"", "\n", "null", "[]", "42", "\"list\"", "{", "{}",
		"{\"cmd\":\"list\"}",					/* no version */
		"{\"v\":2,\"cmd\":\"list\"}", "{\"v\":\"1\",\"cmd\":\"list\"}",
		"{\"v\":1.0,\"cmd\":\"list\"}", "{\"v\":1}", "{\"v\":1,\"cmd\":7}",
		"{\"v\":1,\"cmd\":\"explode\"}", "{\"v\":1,\"cmd\":\"\"}",
		"{\"v\":1,\"cmd\":\"list\",\"extra\":1}",
		"{\"v\":1,\"cmd\":\"status\"}",				/* needs vm */
		"{\"v\":1,\"cmd\":\"report\",\"vm\":\"../x\"}",
		"{\"v\":1,\"cmd\":\"report\",\"set\":[\"a=b\"]}",	/* no set */
		"{\"v\":1,\"cmd\":\"report\",\"qmp\":\"/x\"}",
		"{\"v\":1,\"cmd\":\"report\",\"vm\":7}",
		"{\"v\":1,\"cmd\":\"stats\",\"vm\":\"\"}",
		"{\"v\":1,\"cmd\":\"stats\",\"vm\":\"../etc\"}",
		"{\"v\":1,\"cmd\":\"stats\",\"vm\":\"-x\"}",
		"{\"v\":1,\"cmd\":\"stats\",\"vm\":\"a b\"}",
		"{\"v\":1,\"cmd\":\"stats\",\"vm\":[\"a\"]}",
		"{\"v\":1,\"cmd\":\"stats\",\"vm\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
		"{\"v\":1,\"cmd\":\"attach\"}",				/* needs qmp */
		"{\"v\":1,\"cmd\":\"attach\",\"qmp\":\"relative.qmp\"}",
		"{\"v\":1,\"cmd\":\"attach\",\"qmp\":null}",
		"{\"v\":1,\"cmd\":\"list\",\"qmp\":\"/x\"}",
		"{\"v\":1,\"cmd\":\"attach\",\"qmp\":\"/x\",\"domain\":\"d\"}",	/* one of them */
		"{\"v\":1,\"cmd\":\"attach\",\"domain\":\"\"}",
		"{\"v\":1,\"cmd\":\"attach\",\"domain\":\"a/b\"}",
		"{\"v\":1,\"cmd\":\"attach\",\"domain\":\"a\\nb\"}",
		"{\"v\":1,\"cmd\":\"attach\",\"domain\":7}",
		"{\"v\":1,\"cmd\":\"status\",\"vm\":\"a\",\"domain\":\"a\"}",
		"{\"v\":1,\"cmd\":\"stats\",\"vm\":\"a\",\"set\":[\"mode=off\"]}",
		"{\"v\":1,\"cmd\":\"policy\",\"vm\":\"a\",\"set\":\"mode=off\"}",
		"{\"v\":1,\"cmd\":\"policy\",\"vm\":\"a\",\"set\":[1]}",
		"{\"v\":1,\"cmd\":\"policy\",\"vm\":\"a\",\"set\":[\"novalue\"]}",
		"{\"v\":1,\"cmd\":\"list\"}{\"v\":1,\"cmd\":\"list\"}",
		"{\"v\":1,\"cmd\":\"list\"}\n{}",
		/* json-glib's octal escapes make bytes that are not UTF-8 (the fuzzer's find) */
		"{\"v\":1,\"cmd\":\"attach\",\"qmp\":\"/run/qmp.sock\\233\"}",
		"{\"v\":1,\"cmd\":\"policy\",\"vm\":\"a\",\"set\":[\"mode=\\377\"]}",
		"{\"v\":1,\"cmd\":\"attach\",\"domain\":\"d\\377\"}",
	};
	struct vt_ctl_request r;

	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e = NULL;

		if (vt_ctl_request_parse(bad[i], strlen(bad[i]), &r, &e))
			fail_msg("accepted: %s", bad[i]);
		assert_non_null(e);
		assert_null(r.vm);
		assert_null(r.set);
	}
	/* NUL inside, oversize, too many assignments */
	{
		const char nul[] = "{\"v\":1,\"cmd\":\"li\0st\"}";
		g_autoptr(GError) e = NULL;

		assert_false(vt_ctl_request_parse(nul, sizeof(nul) - 1, &r, &e));
	}
	{
		g_autofree char *big = g_strnfill(VT_CTL_MAX_REQUEST + 1, ' ');
		g_autoptr(GError) e = NULL;

		assert_false(vt_ctl_request_parse(big, strlen(big), &r, &e));
		assert_int_equal(e->code, E2BIG);
	}
	{
		g_autoptr(GString) s = g_string_new("{\"v\":1,\"cmd\":\"policy\",\"vm\":\"a\",\"set\":[");
		g_autoptr(GError) e = NULL;

		for (int i = 0; i < VT_CTL_MAX_ASSIGN + 1; i++)
			g_string_append_printf(s, "%s\"mode=off\"", i ? "," : "");
		g_string_append(s, "]}");
		assert_false(vt_ctl_request_parse(s->str, s->len, &r, &e));
		assert_int_equal(e->code, E2BIG);
	}
}

/* Deep nesting is refused by the depth scan, before json-glib recurses. */
static void test_deep_nesting(void **state)
{
	GString *s = g_string_new("{\"v\":1,\"cmd\":\"list\",\"set\":");
	g_autoptr(GError) e = NULL;
	struct vt_ctl_request req;

	(void)state;
	for (unsigned int i = 0; i < 30000; i++)
		g_string_append_c(s, '[');
	for (unsigned int i = 0; i < 30000; i++)
		g_string_append_c(s, ']');
	g_string_append_c(s, '}');
	assert_false(vt_ctl_request_parse(s->str, s->len, &req, &e));
	assert_non_null(strstr(e->message, "nested deeper than 64"));
	vt_ctl_request_clear(&req);
	g_string_free(s, TRUE);
}

/* Errors go into JSON replies: never raw bytes from the request. */
static void test_error_text(void **state)
{
	static const char *const bad[] = {
		"{\"v\":1,\"cmd\":\"stats\",\"vm\":\"\xff\xfe\"}",
		"{\"v\":1,\"cmd\":\"ex\xc3plode\"}",
		"{\"v\":1,\"cmd\":\"stats\",\"vm\":\"a\\u0001b\"}",
		"{\"v\":1,\"cmd\":\"policy\",\"vm\":\"a\",\"set\":[\"mode=\xff\"]}",
		"{\"v\":1,\"cmd\":\"list\",\"\xff\":1}",
		"{\"\xc3\":1",
	};

	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		struct vt_ctl_request req;
		g_autoptr(GError) e = NULL;

		if (vt_ctl_request_parse(bad[i], strlen(bad[i]), &req, &e))
			fail_msg("accepted %s", bad[i]);
		if (!g_utf8_validate(e->message, -1, NULL))
			fail_msg("error for case %u is not UTF-8: %s", i, e->message);
		vt_ctl_request_clear(&req);
	}
}

static void test_names(void **state)
{
	(void)state;
	assert_true(vt_ctl_name_valid("vm0"));
	assert_true(vt_ctl_name_valid("guest.example-1_a"));
	assert_false(vt_ctl_name_valid(""));
	assert_false(vt_ctl_name_valid(NULL));
	assert_false(vt_ctl_name_valid(".hidden"));
	assert_false(vt_ctl_name_valid("a/b"));
	assert_false(vt_ctl_name_valid("é"));
	/* a name becomes part of paths (the hint region's): never a path itself */
	{
		static const char *const bad[] = { "..", ".", "../x", "x/..", "-rf", "vm 0",
						   "vm\xc2\xa0" "0", "a\nb", "a\\b", "vm0\t" };
		char name[VT_CTL_MAX_NAME + 1];
		struct vt_ctl_request req;
		g_autoptr(GError) e = NULL;
		static const char attach[] =
			"{\"v\":1,\"cmd\":\"attach\",\"qmp\":\"/run/q\",\"vm\":\"..\"}";

		for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++)
			if (vt_ctl_name_valid(bad[i]))
				fail_msg("name '%s' accepted", bad[i]);
		memset(name, 'a', sizeof(name));
		name[VT_CTL_MAX_NAME - 1] = '\0';
		assert_true(vt_ctl_name_valid(name));		/* 63 characters */
		name[VT_CTL_MAX_NAME - 1] = 'a';
		name[VT_CTL_MAX_NAME] = '\0';
		assert_false(vt_ctl_name_valid(name));		/* 64 */
		assert_true(vt_ctl_name_valid("1234"));		/* a pid-like name is a name */
		static const char ctrl[] = "{\"v\":1,\"cmd\":\"stats\",\"vm\":\"a\\u0001b\"}";

		/* the rule as it is: ".." matches [A-Za-z0-9._-]{1,63} alone */
		assert_false(vt_ctl_request_parse(attach, strlen(attach), &req, &e));
		assert_non_null(strstr(e->message, "VM name '..' is not [A-Za-z0-9._-]{1,63} "
				       "starting with a letter, a digit or '_'"));
		g_clear_error(&e);
		/* a control character is shown as '?', not echoed */
		assert_false(vt_ctl_request_parse(ctrl, strlen(ctrl), &req, &e));
		assert_non_null(strstr(e->message, "VM name 'a?b'"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_error_text),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
