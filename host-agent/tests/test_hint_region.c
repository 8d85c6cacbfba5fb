// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Finding a VM's hint region: names that are no plain names, links, FIFOs,
 * directories, wrong sizes and owners, a file QEMU does not map, a file that
 * shrinks, all refused with a reason; the right file is opened read-write
 * (never mapped: reads and writes go through the file).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "hint_region.h"

struct fixture {
	char *dir;
	char path[512];
	void *qemu_map;		/* this process plays QEMU: it maps the file */
	size_t qemu_size;
};

static int setup(void **state)
{
	struct fixture *f = g_new0(struct fixture, 1);

	f->dir = g_dir_make_tmp("vtier-hints-XXXXXX", NULL);
	assert_non_null(f->dir);
	g_snprintf(f->path, sizeof(f->path), "%s/vtier-hints-vm0", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", f->dir);

	if (f->qemu_map)
		munmap(f->qemu_map, f->qemu_size);
	assert_int_equal(system(cmd), 0);
	g_free(f->dir);
	g_free(f);
	return 0;
}

/* The file QEMU would create, of @size bytes, mapped by this process when @map. */
static void make_region(struct fixture *f, off_t size, bool map)
{
	int fd = open(f->path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, size), 0);
	if (map) {
		f->qemu_map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		assert_true(f->qemu_map != MAP_FAILED);
		f->qemu_size = (size_t)size;
	}
	close(fd);
}

static int open_vm0(struct fixture *f, struct vt_hint_region *r, char *err, size_t len)
{
	return vt_hint_region_open(f->dir, "vm0", getpid(), getuid(), r, err, len);
}

static void test_names(void **state)
{
	struct fixture *f = *state;
	static const char *const bad[] = {
		"", ".", "..", ".hidden", "-x", "a/b", "../vm0", "vm 0", "vm0\n", "vm\\0",
		"0123456789012345678901234567890123456789012345678901234567890123",
	};
	struct vt_hint_region r;
	char err[200];

	make_region(f, 1 << 20, true);
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		err[0] = '\0';
		assert_int_equal(vt_hint_region_open(f->dir, bad[i], getpid(), getuid(), &r, err,
						     sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "plain name"));
		assert_int_equal(r.fd, -1);
	}
}

static void test_good_region_is_shared(void **state)
{
	struct fixture *f = *state;
	struct vt_hint_region r;
	char err[200] = "";
	uint32_t v;

	make_region(f, 1 << 20, true);
	assert_int_equal(open_vm0(f, &r, err, sizeof(err)), 0);
	assert_int_equal(r.size, 1 << 20);
	/* what "QEMU" writes the agent reads from the file, and back */
	((volatile uint32_t *)f->qemu_map)[1024] = 0x47475456;
	assert_int_equal(pread(r.fd, &v, sizeof(v), 4096), sizeof(v));
	assert_int_equal(v, 0x47475456);
	v = 42;
	assert_int_equal(pwrite(r.fd, &v, sizeof(v), 0), sizeof(v));
	assert_int_equal(((volatile uint32_t *)f->qemu_map)[0], 42);
	assert_int_equal(vt_hint_region_check(&r, err, sizeof(err)), 0);
	vt_hint_region_close(&r);
	assert_int_equal(r.fd, -1);
	vt_hint_region_close(&r);	/* twice is fine */
}

static void test_missing_link_fifo_dir(void **state)
{
	struct fixture *f = *state;
	g_autofree char *target = g_strdup_printf("%s/elsewhere", f->dir);
	struct vt_hint_region r;
	char err[200];
	int fd;

	assert_int_equal(open_vm0(f, &r, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "ivshmem"));
	/* a link to a good file is still a link */
	fd = open(target, O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	close(fd);
	assert_int_equal(symlink(target, f->path), 0);
	assert_int_equal(open_vm0(f, &r, err, sizeof(err)), -ELOOP);
	unlink(f->path);
	/* a FIFO must neither block nor pass */
	assert_int_equal(mkfifo(f->path, 0600), 0);
	assert_int_equal(open_vm0(f, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a regular file"));
	unlink(f->path);
	assert_int_equal(mkdir(f->path, 0700), 0);
	assert_true(open_vm0(f, &r, err, sizeof(err)) < 0);
	rmdir(f->path);
	assert_int_equal(r.fd, -1);
}

static void test_sizes(void **state)
{
	struct fixture *f = *state;
	static const off_t bad[] = { 0, 4096, 8192, 20000, 3 << 20, 128 << 20 };
	struct vt_hint_region r;
	char err[200];

	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		make_region(f, bad[i], false);
		assert_int_equal(open_vm0(f, &r, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "power of 2"));
	}
}

static void test_owner_and_mapping(void **state)
{
	struct fixture *f = *state;
	struct vt_hint_region r;
	char err[200];

	make_region(f, 1 << 16, false);
	/* nobody maps it: not the VM's */
	assert_int_equal(open_vm0(f, &r, err, sizeof(err)), -ESRCH);
	assert_non_null(strstr(err, "not mapped by QEMU"));
	/* another file of the same name mapped earlier does not count */
	make_region(f, 1 << 16, true);
	assert_int_equal(open_vm0(f, &r, err, sizeof(err)), 0);
	vt_hint_region_close(&r);
	unlink(f->path);
	make_region(f, 1 << 16, false);
	assert_int_equal(open_vm0(f, &r, err, sizeof(err)), -ESRCH);
	/* the QEMU process runs as another user */
	assert_int_equal(vt_hint_region_open(f->dir, "vm0", getpid(), getuid() + 1, &r, err,
					     sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "owned by"));
}

static void test_shrunk(void **state)
{
	struct fixture *f = *state;
	struct vt_hint_region r;
	char err[200];

	make_region(f, 1 << 20, true);
	assert_int_equal(open_vm0(f, &r, err, sizeof(err)), 0);
	assert_int_equal(truncate(f->path, 1 << 12), 0);
	assert_int_equal(vt_hint_region_check(&r, err, sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "shrunk"));
	vt_hint_region_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_good_region_is_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_link_fifo_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner_and_mapping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shrunk, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
