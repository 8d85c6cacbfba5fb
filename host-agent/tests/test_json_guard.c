// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * util/json_guard: the depth scan that runs before json-glib (strings,
 * escapes, the exact limit, 200 KB of '['), and peer text sanitising.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <glib.h>

#include "json_guard.h"

static char *nested(char open, char close, unsigned int depth)
{
	char *s = g_malloc(2 * (size_t)depth + 1);

	memset(s, open, depth);
	memset(s + depth, close, depth);
	s[2 * (size_t)depth] = '\0';
	return s;
}

static void test_depth_limit(void **state)
{
	g_autofree char *at = nested('[', ']', VT_JSON_MAX_DEPTH);
	g_autofree char *over = nested('[', ']', VT_JSON_MAX_DEPTH + 1);
	g_autofree char *objs = nested('{', '}', VT_JSON_MAX_DEPTH + 1);
	char err[96] = "";

	(void)state;
	assert_int_equal(vt_json_check_depth(at, strlen(at), VT_JSON_MAX_DEPTH, err, sizeof(err)), 0);
	assert_int_equal(vt_json_check_depth(over, strlen(over), VT_JSON_MAX_DEPTH, err,
					     sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "deeper than 64"));
	assert_int_equal(vt_json_check_depth(objs, strlen(objs), VT_JSON_MAX_DEPTH, NULL, 0), -ELOOP);
	/* siblings do not add up: depth, not count */
	assert_int_equal(vt_json_check_depth("[[],[],[[]],{}]", 15, 2, NULL, 0), -ELOOP);
	assert_int_equal(vt_json_check_depth("[[],[],[],{}]", 13, 2, NULL, 0), 0);
}

static void test_huge_input(void **state)
{
	size_t len = 200 * 1024;
	g_autofree char *s = g_malloc(len);

	(void)state;
	memset(s, '[', len);
	assert_int_equal(vt_json_check_depth(s, len, VT_JSON_MAX_DEPTH, NULL, 0), -ELOOP);
	/* unbalanced closers never underflow into a "negative" depth */
	memset(s, ']', len);
	assert_int_equal(vt_json_check_depth(s, len, VT_JSON_MAX_DEPTH, NULL, 0), 0);
}

static void test_strings(void **state)
{
	static const char in_string[] = "{\"a\":\"[[[[[[[[[[\"}";
	static const char escaped[] = "{\"a\":\"\\\"[[[[[[\"}";
	static const char escaped_backslash[] = "{\"a\":\"\\\\\",\"b\":[[[[]]]]}";

	(void)state;
	assert_int_equal(vt_json_check_depth(in_string, strlen(in_string), 2, NULL, 0), 0);
	assert_int_equal(vt_json_check_depth(escaped, strlen(escaped), 2, NULL, 0), 0);
	/* "\\" ends the string: the brackets after it count */
	assert_int_equal(vt_json_check_depth(escaped_backslash, strlen(escaped_backslash), 4, NULL,
					     0), -ELOOP);
	assert_int_equal(vt_json_check_depth(escaped_backslash, strlen(escaped_backslash), 5, NULL,
					     0), 0);
	/* the length bounds the scan, not a NUL */
	assert_int_equal(vt_json_check_depth("[[[", 1, 1, NULL, 0), 0);
}

static void test_printable(void **state)
{
	char out[8];

	(void)state;
	assert_string_equal(vt_text_printable(out, sizeof(out), "ab\n\x01\xff", 5), "ab???");
	assert_string_equal(vt_text_printable(out, sizeof(out), "0123456789", 10), "0123456");
	assert_string_equal(vt_text_printable(out, sizeof(out), "a\0b", 3), "a");
	assert_string_equal(vt_text_printable(out, sizeof(out), "\xc3\xa9", 2), "??");
	assert_true(vt_text_is_printable("dram-0_x:y."));
	assert_false(vt_text_is_printable("tab\there"));
	assert_false(vt_text_is_printable("\xc3\xa9"));
	assert_false(vt_text_is_printable("del\x7f"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_huge_input),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_printable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
