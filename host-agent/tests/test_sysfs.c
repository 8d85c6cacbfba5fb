// SPDX-License-Identifier: GPL-2.0-or-later
/* util/sysfs.c: one-shot reads of small kernel files, on files written here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "sysfs.h"

static void put(const char *dir, const char *name, const char *text)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);

	assert_true(g_file_set_contents(path, text, -1, NULL));
}

static void test_text(void **state)
{
	const char *dir = *state;
	g_autofree char *on = NULL, *empty = NULL, *gone = NULL;

	put(dir, "state", "  on \n");
	put(dir, "empty", "\n");
	on = vt_sysfs_read("%s/%s", dir, "state");
	assert_string_equal(on, "on");
	empty = vt_sysfs_read("%s/empty", dir);
	assert_string_equal(empty, "");
	gone = vt_sysfs_read("%s/no-such-file", dir);
	assert_null(gone);
}

static void test_u64(void **state)
{
	static const char *const bad[] = { "", "x\n", "-1\n", "12 13\n", "0x10\n",
					   "18446744073709551616\n", "1.5\n" };
	const char *dir = *state;
	uint64_t v = 7;

	put(dir, "n", "12\n");
	assert_true(vt_sysfs_read_u64(&v, "%s/n", dir));
	assert_int_equal(v, 12);
	put(dir, "n", "18446744073709551615");
	assert_true(vt_sysfs_read_u64(&v, "%s/n", dir));
	assert_true(v == UINT64_MAX);
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		v = 7;
		put(dir, "n", bad[i]);
		if (vt_sysfs_read_u64(&v, "%s/n", dir))
			fail_msg("accepted '%s' as %llu", bad[i], (unsigned long long)v);
		assert_int_equal(v, 7);	/* untouched on a refusal */
	}
	assert_false(vt_sysfs_read_u64(&v, "%s/no-such-file", dir));
}

static int setup(void **state)
{
	*state = g_dir_make_tmp("vt-sysfs-XXXXXX", NULL);
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	static const char *const names[] = { "state", "empty", "n" };
	char *dir = *state;

	for (unsigned int i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *path = g_build_filename(dir, names[i], NULL);

		g_unlink(path);
	}
	g_rmdir(dir);
	g_free(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_u64),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
