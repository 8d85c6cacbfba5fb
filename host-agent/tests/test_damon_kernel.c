// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * damon-kernel on this host, without disturbing it: the probe's answer must
 * match what the DAMON sysfs independently says (absent, busy with someone
 * else's kdamond, or usable), and leave every kdamond as it was. The full
 * profiler runs in the testbed (tests/testbed/scenarios/vtierd-*.sh).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "damon_kernel.h"
#include "profiler.h"
#include "sim_source.h"
#include "workload.h"

static char *snapshot_state(void)
{
	GString *s = g_string_new(NULL);
	g_autofree char *nr = NULL;
	guint64 n = 0;

	if (!g_file_get_contents(VT_DAMON_ADMIN "/kdamonds/nr_kdamonds", &nr, NULL, NULL))
		return g_string_free(s, FALSE);
	g_string_append(s, nr);
	g_ascii_string_to_unsigned(g_strstrip(nr), 10, 0, 1000, &n, NULL);
	for (guint64 i = 0; i < n; i++) {
		g_autofree char *p = g_strdup_printf(VT_DAMON_ADMIN "/kdamonds/%" G_GUINT64_FORMAT
						     "/state", i);
		g_autofree char *st = NULL;

		if (g_file_get_contents(p, &st, NULL, NULL))
			g_string_append(s, st);
	}
	return g_string_free(s, FALSE);
}

static void test_probe_matches_sysfs(void **state)
{
	g_autofree char *before = snapshot_state();
	g_autofree char *after = NULL, *why = NULL;
	bool foreign_on = strstr(before, "on") != NULL;
	int ret;

	(void)state;
	ret = vt_damon_kernel_probe(&why);
	after = snapshot_state();
	assert_string_equal(before, after);	/* changed nothing */
	assert_non_null(why);
	print_message("# probe: %d (%s)\n", ret, why);
	if (!g_file_test(VT_DAMON_ADMIN, G_FILE_TEST_IS_DIR)) {
		assert_int_equal(ret, -ENOENT);
		assert_non_null(strstr(why, "CONFIG_DAMON_SYSFS"));
	} else if (geteuid() != 0) {
		assert_int_equal(ret, -EACCES);
	} else if (foreign_on) {
		assert_int_equal(ret, -EBUSY);
		assert_non_null(strstr(why, "not started by vtierd"));
	} else {
		assert_true(ret == 0 || ret == -EOPNOTSUPP);
	}
}

static void test_needs_process_source(void **state)
{
	g_autoptr(vt_workload) w = vt_workload_builtin("multi-phase", NULL);
	struct vt_access_source *sim = vt_sim_new(w, 1);
	struct vt_profiler_attrs attrs;
	struct vt_range r = { 0x10000, 0x20000 };
	struct vt_access_source *proc = vt_damon_kernel_source_new(getpid(), &r, 1);
	struct vt_range out[2];
	int err = 0;

	(void)state;
	vt_profiler_attrs_default(&attrs);
	assert_null(vt_damon_kernel_profiler_new(sim, &attrs, 0, &err));
	assert_int_equal(err, -EINVAL);
	/* the process source only lists ranges; bit operations are the kernel's */
	assert_int_equal(vt_source_mapped(proc, out, 2), 1);
	assert_int_equal(out[0].end, 0x20000);
	assert_int_equal(vt_source_test_clear(proc, 0x10000, 0), -EOPNOTSUPP);
	assert_null(vt_damon_kernel_source_new(getpid(), &r, VT_MAX_RANGES + 1));
	vt_source_destroy(proc);
	vt_source_destroy(sim);
}

/* fixed regions: chunk-aligned from each range's start, the last piece short */
static void test_fixed_regions(void **state)
{
	const uint64_t mib = 1 << 20;
	struct vt_range ranges[] = { { 64 * mib, 70 * mib }, { 4096 * mib, 4101 * mib } };
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct vt_range));
	const uint64_t want[][2] = { { 64, 66 }, { 66, 68 }, { 68, 70 },
				     { 4096, 4098 }, { 4098, 4100 }, { 4100, 4101 } };

	(void)state;
	vt_damon_kernel_fixed_regions(ranges, 2, 2 * mib, out);
	assert_int_equal(out->len, G_N_ELEMENTS(want));
	for (unsigned int i = 0; i < out->len; i++) {
		assert_int_equal(g_array_index(out, struct vt_range, i).start, want[i][0] * mib);
		assert_int_equal(g_array_index(out, struct vt_range, i).end, want[i][1] * mib);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe_matches_sysfs),
		cmocka_unit_test(test_needs_process_source),
		cmocka_unit_test(test_fixed_regions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
