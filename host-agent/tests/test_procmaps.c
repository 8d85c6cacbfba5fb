// SPDX-License-Identifier: GPL-2.0-or-later
/* /proc/PID/maps parsing: real maps of this process (a memfd: its device and inode), malformed lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "procmaps.h"

static void test_sample(void **state)
{
	static const char text[] =
		"55d0c0a00000-55d0c0a2e000 r--p 00000000 fd:01 1234    /usr/bin/qemu-system-x86_64\n"
		"7fc02bfff000-7fc03bfff000 rw-s 00000000 00:01 27      /memfd:memory-backend-memfd (deleted)\n"
		"7fc040000000-7fc080000000 rw-p 00000000 00:00 0 \n"
		"7ffd1c5e0000-7ffd1c601000 rw-p 00000000 00:00 0                          [stack]";
	g_autoptr(GArray) m = g_array_new(FALSE, TRUE, sizeof(struct vt_mapping));
	const struct vt_mapping *f;

	(void)state;
	assert_true(vt_procmaps_parse(text, strlen(text), m, NULL));
	assert_int_equal(m->len, 4);
	f = vt_procmaps_find(m, 0x7fc02bfff000, 0x7fc03bfff000);
	assert_non_null(f);
	assert_string_equal(f->path, "/memfd:memory-backend-memfd (deleted)");
	assert_string_equal(f->perms, "rw-s");
	f = vt_procmaps_find(m, 0x7fc040001000, 0x7fc040002000);
	assert_non_null(f);
	assert_string_equal(f->path, "");
	assert_null(vt_procmaps_find(m, 0x7fc03bffe000, 0x7fc040001000));	/* spans two */
	assert_string_equal(g_array_index(m, struct vt_mapping, 3).path, "[stack]");
	f = &g_array_index(m, struct vt_mapping, 0);
	assert_int_equal(f->dev_major, 0xfd);
	assert_int_equal(f->dev_minor, 1);
	assert_int_equal(f->inode, 1234);
	f = &g_array_index(m, struct vt_mapping, 1);
	assert_int_equal(f->dev_major, 0);
	assert_int_equal(f->dev_minor, 1);
	assert_int_equal(f->inode, 27);
}

/* A memfd mapped here: the device and inode maps shows are the fd's own. */
static void test_self_memfd(void **state)
{
	g_autoptr(GArray) m = g_array_new(FALSE, TRUE, sizeof(struct vt_mapping));
	size_t len = 2 << 20;
	int fd = memfd_create("vt-procmaps", MFD_CLOEXEC);
	const struct vt_mapping *f;
	struct stat st;
	void *p;

	(void)state;
	assert_true(fd >= 0 && ftruncate(fd, (off_t)len) == 0 && fstat(fd, &st) == 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	assert_true(vt_procmaps_read(getpid(), m, NULL));
	f = vt_procmaps_find(m, (uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)p + len);
	assert_non_null(f);
	assert_string_equal(f->perms, "rw-s");
	assert_int_equal(f->dev_major, major(st.st_dev));
	assert_int_equal(f->dev_minor, minor(st.st_dev));
	assert_int_equal(f->inode, st.st_ino);
	munmap(p, len);
	close(fd);
}

static void test_self(void **state)
{
	g_autoptr(GArray) m = g_array_new(FALSE, TRUE, sizeof(struct vt_mapping));
	size_t len = 8 << 20;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const struct vt_mapping *f;

	(void)state;
	assert_true(p != MAP_FAILED);
	assert_true(vt_procmaps_read(getpid(), m, NULL));
	f = vt_procmaps_find(m, (uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)p + len);
	assert_non_null(f);
	assert_string_equal(f->perms, "rw-p");
	munmap(p, len);
	{
		g_autoptr(GError) e = NULL;

		assert_false(vt_procmaps_read(0x7ffffff0, m, &e));	/* no such pid */
		assert_int_equal(e->code, ESRCH);
	}
}

static void test_bad(void **state)
{
	static const char *const bad[] = {
		"garbage\n", "7fc0-7fb0 rw-p 00000000 00:00 0\n", "7fc0 rw-p 00000000 00:00 0\n",
		"xyz-7fb0 rw-p 00000000 00:00 0\n", "1000-2000 rw-p\n", "1000-2000 rwxps 0 00:00 0\n",
		"1000-2000 rw-p zz 00:00 0\n", "10000000000000000-20000000000000000 rw-p 0 00:00 0\n",
		"-2000 rw-p 0 00:00 0\n", "1000-2000 rw-p 0 zz:00 0\n", "1000-2000 rw-p 0 0000 0\n",
		"1000-2000 rw-p 0 00: 0\n", "1000-2000 rw-p 0 100000000:00 0\n",
		"1000-2000 rw-p 0 00:00 x\n", "1000-2000 rw-p 0 00:00 -1\n",
	};

	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GArray) m = g_array_new(FALSE, TRUE, sizeof(struct vt_mapping));
		g_autoptr(GError) e = NULL;

		if (vt_procmaps_parse(bad[i], strlen(bad[i]), m, &e))
			fail_msg("accepted: %s", bad[i]);
		assert_non_null(strstr(e->message, "malformed"));
	}
	{
		const char nul[] = "1000-2000 rw-p 0 00:00 0 /a\0b\n";
		g_autoptr(GArray) m = g_array_new(FALSE, TRUE, sizeof(struct vt_mapping));

		assert_false(vt_procmaps_parse(nul, sizeof(nul) - 1, m, NULL));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_self_memfd),
		cmocka_unit_test(test_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
