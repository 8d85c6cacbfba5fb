// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The tdp source's paths that need no module: a missing device is one clear
 * error naming it and the module, never a silent fallback; a process without
 * a KVM VM fd is named; a QMP socket leads to the process behind it.
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

#include "tdp_source.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_device),
		cmocka_unit_test(test_not_a_device),
		cmocka_unit_test(test_no_vm_fd),
		cmocka_unit_test(test_pid_of_socket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
