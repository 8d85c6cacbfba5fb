// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The tdp source's paths that need no module: a missing device is one clear
 * error naming it and the module, never a silent fallback; a process without
 * a KVM VM fd is named; a QMP socket leads to the process behind it.
 * And, with ioctl() wrapped (-Wl,--wrap=ioctl) by a fake module that keeps
 * include/vtier/tdp.h's contract (fake_tdp.c), guest RAM under 2 MiB NPT/EPT leaves: the
 * source must ask the module to answer for huge leaves when it can, and hand
 * a young huge leaf to profilers as the leaf-level entries it covers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include <sys/ioctl.h>
#include <vtier/tdp.h>

#include "fake_tdp.h"
#include "tdp_source.h"

struct young_list {
	uint64_t addr[1100];
	unsigned int level[1100];
	unsigned int n;
};

static void record_young(uint64_t entry_start, unsigned int level, void *arg)
{
	struct young_list *y = arg;

	if (y->n < G_N_ELEMENTS(y->addr)) {
		y->addr[y->n] = entry_start;
		y->level[y->n] = level;
	}
	y->n++;
}

static void test_missing_device(void **state)
{
	g_autoptr(GError) error = NULL;
	struct vt_access_source *src;

	(void)state;
	setenv("VTIER_TDP_DEVICE", "/nonexistent/vtier-tdp", 1);
	src = vt_tdp_new(0, &error);
	assert_null(src);
	assert_non_null(error);
	assert_int_equal(error->code, ENOENT);
	assert_non_null(strstr(error->message, "/nonexistent/vtier-tdp"));
	assert_non_null(strstr(error->message, "vtier_tdp.ko"));
	g_clear_error(&error);
	/* By pid too: the device is checked before the VM is looked for. */
	src = vt_tdp_new_pid(getpid(), &error);
	assert_null(src);
	assert_non_null(strstr(error->message, "vtier_tdp.ko"));
	unsetenv("VTIER_TDP_DEVICE");
}

static void test_not_a_device(void **state)
{
	g_autoptr(GError) error = NULL;

	(void)state;
	/* /dev/null opens but is not vtier-tdp: ATTACH fails, the error says so. */
	setenv("VTIER_TDP_DEVICE", "/dev/null", 1);
	assert_null(vt_tdp_new(0, &error));
	assert_non_null(error);
	assert_non_null(strstr(error->message, "attach"));
	unsetenv("VTIER_TDP_DEVICE");
}

static void test_no_vm_fd(void **state)
{
	g_autoptr(GError) error = NULL;

	(void)state;
	assert_int_equal(vt_tdp_vm_fd_of_pid(getpid(), &error), -ENOENT);
	assert_non_null(strstr(error->message, "no KVM VM fd"));
	g_clear_error(&error);
	assert_true(vt_tdp_vm_fd_of_pid(0x7ffffff0, &error) < 0);
	assert_non_null(error);
}

static void test_pid_of_socket(void **state)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *dir = g_dir_make_tmp("vtier-tdp-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "qmp.sock", NULL);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	pid_t pid = 0;
	int s;

	(void)state;
	assert_int_equal(vt_tdp_pid_of_socket(path, &pid, &error), -ENOENT);
	g_clear_error(&error);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	strcpy(sa.sun_path, path);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s, 1), 0);
	assert_int_equal(vt_tdp_pid_of_socket(path, &pid, &error), 0);
	assert_int_equal(pid, getpid());
	close(s);
	unlink(path);
	rmdir(dir);
}

static void test_huge_leaves(void **state)
{
	struct vt_access_source *src;
	struct young_list y = { 0 };
	struct vt_probe p[3] = {
		{ .addr = HUGE_GPA + 0x3000, .level = 0 },
		{ .addr = HUGE_GPA + 0x1ff000, .level = 0 },
		{ .addr = 0x402000, .level = 0 },
	};

	(void)state;
	src = fake_source(VTIER_TDP_F_UPPER_ACCESSED | VTIER_TDP_F_SAMPLE | VTIER_TDP_F_SCAN |
			  VTIER_TDP_F_HUGE_LEAVES);
	assert_non_null(src);
	/* a mixed table: 4 KiB leaves exist, so profilers work at level 0 */
	assert_int_equal(src->leaf_level, 0);
	/* a 4 KiB probe under the young 2 MiB leaf reads young, not absent */
	assert_int_equal(vt_source_batch(src, p, 3), 0);
	assert_int_equal(last_flags, VTIER_TDP_HUGE_LEAVES);
	assert_int_equal(p[0].result, VT_BIT_YOUNG);
	assert_int_equal(p[1].result, VT_BIT_YOUNG);
	assert_int_equal(p[2].result, VT_BIT_OLD);
	/*
	 * A level-0 scan of [2 MiB + 1 MiB, 4 MiB + 8 KiB): the young leaf gives
	 * the 256 level-0 entries of it inside the range, then the 4 KiB leaf.
	 */
	assert_int_equal(vt_source_scan(src, HUGE_GPA + 0x100000, 2 * HUGE_GPA + 0x2000, 0, 0,
					record_young, &y), 257);
	assert_int_equal(last_flags, VTIER_TDP_HUGE_LEAVES);
	assert_int_equal(y.n, 257);
	assert_int_equal(y.addr[0], HUGE_GPA + 0x100000);
	assert_int_equal(y.addr[255], 2 * HUGE_GPA - 0x1000);
	assert_int_equal(y.addr[256], 0x401000);
	for (unsigned int i = 0; i < y.n; i++) {
		assert_int_equal(y.level[i], 0);
		if (i)
			assert_true(y.addr[i] > y.addr[i - 1]);
	}
	vt_source_destroy(src);
	fake_active = false;
}

static void test_old_module(void **state)
{
	struct vt_access_source *src;
	struct young_list y = { 0 };
	struct vt_probe p = { .addr = HUGE_GPA + 0x3000, .level = 0 };

	(void)state;
	/* a module without the feature must not get the flag (it would say EINVAL) */
	src = fake_source(VTIER_TDP_F_UPPER_ACCESSED | VTIER_TDP_F_SAMPLE | VTIER_TDP_F_SCAN);
	assert_non_null(src);
	assert_int_equal(vt_source_batch(src, &p, 1), 0);
	assert_int_equal(last_flags, 0);
	assert_int_equal(p.result, VT_BIT_ABSENT);
	assert_int_equal(vt_source_scan(src, 0, 8 << 20, 0, 0, record_young, &y), 1);
	assert_int_equal(last_flags, 0);
	vt_source_destroy(src);
	fake_active = false;
}

static void test_flush_once_per_window(void **state)
{
	struct vt_access_source *src;
	struct vt_tdp_stats st;
	struct vt_probe p = { .addr = 0x401000, .level = 0 };

	(void)state;
	memset(fake_cookies, 0, sizeof(fake_cookies));
	src = fake_source(V2_FEATURES);
	assert_non_null(src);
	/* off by default: no call carries the flag, even at a window start */
	vt_tdp_window_begin(src);
	assert_int_equal(vt_source_batch(src, &p, 1), 0);
	assert_int_equal(last_flags & VTIER_TDP_FLUSH_TLB, 0);
	assert_int_equal(vt_tdp_set_flush(src, VT_TDP_FLUSH_WINDOW), 0);
	for (int w = 0; w < 3; w++) {
		vt_tdp_window_begin(src);
		/* the window's first call flushes, the others do not */
		assert_int_equal(vt_source_batch(src, &p, 1), 0);
		assert_int_equal(last_flags & VTIER_TDP_FLUSH_TLB, VTIER_TDP_FLUSH_TLB);
		assert_int_equal(vt_source_batch(src, &p, 1), 0);
		assert_int_equal(last_flags & VTIER_TDP_FLUSH_TLB, 0);
		assert_true(vt_source_scan(src, 0, 8 << 20, 0, 0, NULL, NULL) >= 0);
		assert_int_equal(last_flags & VTIER_TDP_FLUSH_TLB, 0);
	}
	/* a window that starts with a scan: the scan carries it */
	vt_tdp_window_begin(src);
	assert_true(vt_source_scan(src, 0, 8 << 20, 0, 0, NULL, NULL) >= 0);
	assert_int_equal(last_flags & VTIER_TDP_FLUSH_TLB, VTIER_TDP_FLUSH_TLB);
	assert_int_equal(fake_flushes, 4);
	vt_tdp_get_stats(src, &st);
	assert_int_equal(st.flushes, 4);
	assert_int_equal(st.flush_ns, 4000);
	assert_int_equal(st.abi_version, 2);
	assert_int_equal(st.ioctls, 11);	/* each SAMPLE and SCAN counted once */
	vt_source_destroy(src);
	fake_active = false;
}

static void test_root_swaps(void **state)
{
	static const uint64_t seq[] = { 1, 1, 0, 2, 2, 3, 3, 3 };
	struct vt_access_source *src;
	struct vt_tdp_stats st;
	struct vt_probe p = { .addr = 0x401000, .level = 0 };

	(void)state;
	/* root 1; a zap (no root); root 2; root 3 right away: two swaps */
	memcpy(fake_cookies, seq, sizeof(seq));
	src = fake_source(V2_FEATURES);
	assert_non_null(src);
	for (int i = 0; i < 8; i++)
		assert_int_equal(vt_source_batch(src, &p, 1), 0);
	vt_tdp_get_stats(src, &st);
	assert_int_equal(st.root_swaps, 2);
	assert_int_equal(st.root_cookie, 3);
	vt_source_destroy(src);
	fake_active = false;
	memset(fake_cookies, 0, sizeof(fake_cookies));
}

static void test_version1_module(void **state)
{
	struct vt_access_source *src;
	struct vt_tdp_stats st;
	struct vt_probe p = { .addr = 0x401000, .level = 0 };

	(void)state;
	/* a module of before version 2: attach in version 1, use its ioctl sizes */
	fake_v1 = true;
	src = fake_source(VTIER_TDP_F_UPPER_ACCESSED | VTIER_TDP_F_SAMPLE | VTIER_TDP_F_SCAN |
			  VTIER_TDP_F_HUGE_LEAVES);
	assert_non_null(src);
	assert_int_equal(last_req, VTIER_TDP_INFO_V1);
	assert_int_equal(vt_source_batch(src, &p, 1), 0);
	assert_int_equal(last_req, VTIER_TDP_SAMPLE_V1);
	assert_int_equal(p.result, VT_BIT_YOUNG);
	assert_int_equal(vt_source_scan(src, 0, 8 << 20, 0, 0, NULL, NULL), 513);
	assert_int_equal(last_req, VTIER_TDP_SCAN_V1);
	/* it cannot flush: asking is an error, not a silent no-op */
	assert_int_equal(vt_tdp_set_flush(src, VT_TDP_FLUSH_WINDOW), -EOPNOTSUPP);
	vt_tdp_get_stats(src, &st);
	assert_int_equal(st.abi_version, 1);
	vt_source_destroy(src);
	fake_active = false;
	fake_v1 = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_device),
		cmocka_unit_test(test_not_a_device),
		cmocka_unit_test(test_no_vm_fd),
		cmocka_unit_test(test_pid_of_socket),
		cmocka_unit_test(test_huge_leaves),
		cmocka_unit_test(test_old_module),
		cmocka_unit_test(test_flush_once_per_window),
		cmocka_unit_test(test_root_swaps),
		cmocka_unit_test(test_version1_module),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
