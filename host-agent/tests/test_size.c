// SPDX-License-Identifier: GPL-2.0-or-later
/* Byte sizes as people write them: the forms accepted, and what is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <string.h>

#include <cmocka.h>

#include "size.h"

static void test_sizes(void **state)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} good[] = {
		{ "4096", 4096 }, { "4KiB", 4096 }, { "4 KiB", 4096 }, { "2MiB", 2 << 20 },
		{ "1TiB+3MiB+12KiB", (1ULL << 40) + (3 << 20) + (12 << 10) }, { "5T", 5ULL << 40 },
		{ "0", 0 }, { "16PiB", 16ULL << 50 }, { "0x10", 16 }, { "0x1000+4KiB", 8192 },
		{ "0X2MiB", 2 << 20 }, { "0xffffffffffffffff", UINT64_MAX }, { "512M", 512 << 20 },
	};
	static const char *const bad[] = {
		"", "KiB", "-4KiB", "4XiB", "4KiB+", "+4KiB", "99999999999999999999", "16385PiB",
		"18446744073709551615+1", "4 KiB x", "0x", "0xg", "-0x1", "0x10000000000000000",
		"-1", " -1", "1.5G", "1e3",
	};
	static const char *const neg[] = { "-1", " -4KiB", "4KiB+-1" };
	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(good); i++) {
		uint64_t v = 1;
		GError *e = NULL;

		assert_true(vt_parse_size(good[i].text, &v, &e));
		assert_null(e);
		assert_int_equal(v, good[i].bytes);
	}
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		uint64_t v;
		g_autoptr(GError) e = NULL;

		assert_false(vt_parse_size(bad[i], &v, &e));
		assert_true(g_error_matches(e, VT_SIZE_ERROR, 0));
		assert_non_null(strstr(e->message, "size"));
	}
	/* a negative one says so, with the value (demote gpa=-1 once meant all RAM) */
	for (unsigned int i = 0; i < G_N_ELEMENTS(neg); i++) {
		uint64_t v;
		g_autoptr(GError) e = NULL;
		g_autofree char *want = g_strdup_printf("invalid size '%s': negative", neg[i]);

		assert_false(vt_parse_size(neg[i], &v, &e));
		if (!strstr(e->message, want))
			fail_msg("'%s': %s", neg[i], e->message);
	}
}

/* Bounds quoted in the unit the user typed, else the largest of its kind that fits. */
static void test_units_of(void **state)
{
	static const struct {
		uint64_t bytes;
		const char *typed, *want;
	} cases[] = {
		{ 4096, "1KiB", "4KiB" }, { 1ULL << 50, "1KiB", "1099511627776KiB" },
		{ 2 << 20, "1G", "2M" }, { 2 << 20, "3GiB", "2MiB" }, { 4096, "7", "4096" },
		{ 4096, "7B", "4096B" }, { 4097, "1MiB", "4097" }, { 4096, "0x10", "0x1000" },
		{ 1 << 30, "1MiB+1G", "1G" }, { 4096, "junk", "4096" },
	};
	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *s = vt_size_in_units_of(cases[i].bytes, cases[i].typed);

		assert_string_equal(s, cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_units_of),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
