// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The NUMA mover on this process (and a child): batching over more than one
 * batch, per-page accounting of present, absent and already-placed pages, and
 * whole-move errors. On a one-node host every move targets node 0.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "numa.h"

#define PAGES 1300	/* > 2 batches */

static void test_move_self(void **state)
{
	size_t len = PAGES * 4096UL;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct vt_move_result r = { 0 };
	int nodes[PAGES];

	(void)state;
	assert_true(p != MAP_FAILED);
	/* touch the first 1000 pages only: the rest are absent */
	for (unsigned int i = 0; i < 1000; i++)
		p[i * 4096UL] = (char)i;
	assert_int_equal(vt_numa_query(getpid(), (uint64_t)(uintptr_t)p, 4096, PAGES, nodes), 0);
	assert_int_equal(nodes[0], 0);
	assert_int_equal(nodes[999], 0);
	assert_true(nodes[1000] < 0);	/* -ENOENT or -EFAULT: not present */
	/* the same as a list, in any order, over more than one batch */
	{
		uint64_t addrs[PAGES];
		int lnodes[PAGES];

		for (unsigned int i = 0; i < PAGES; i++)
			addrs[i] = (uint64_t)(uintptr_t)p + (uint64_t)(PAGES - 1 - i) * 4096;
		assert_int_equal(vt_numa_query_list(getpid(), addrs, PAGES, lnodes), 0);
		for (unsigned int i = 0; i < PAGES; i++)
			assert_int_equal(lnodes[i] < 0, nodes[PAGES - 1 - i] < 0);
		assert_int_equal(vt_numa_query_list(getpid(), addrs, 0, lnodes), 0);
	}
	assert_int_equal(vt_numa_move(getpid(), (uint64_t)(uintptr_t)p, len, 0, 4096, &r), 0);
	assert_int_equal(r.pages, PAGES);
	assert_int_equal(r.moved, 1000);
	assert_int_equal(r.already, 1000);
	assert_int_equal(r.absent, 300);
	assert_int_equal(r.busy + r.nomem + r.other, 0);
	assert_int_equal(r.calls, 2);	/* one list of 1300: a query and a move */
	for (unsigned int i = 0; i < 1000; i++)
		assert_int_equal(p[i * 4096UL], (char)i);	/* content untouched */
	munmap(p, len);
}

/*
 * Ranges moved as one page list: each range gets its own counts, the calls
 * go by VT_NUMA_RANGES_BATCH pages across range boundaries.
 */
static void test_move_ranges(void **state)
{
	const unsigned int total = VT_NUMA_RANGES_BATCH + 904;	/* two lists */
	size_t len = total * 4096UL;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t base = (uint64_t)(uintptr_t)p;
	/* touched, untouched, touched: the last range crosses the list boundary */
	struct vt_numa_range r[3] = {
		{ .hva = base, .len = 1000 * 4096UL },
		{ .hva = base + 1000 * 4096UL, .len = 300 * 4096UL },
		{ .hva = base + 1300 * 4096UL, .len = (total - 1300) * 4096UL },
	};
	struct vt_move_result t = { 0 };

	(void)state;
	assert_true(p != MAP_FAILED);
	for (unsigned int i = 0; i < total; i++)
		if (i < 1000 || i >= 1300)
			p[i * 4096UL] = (char)(i * 7);
	assert_int_equal(vt_numa_move_ranges(getpid(), r, 3, 0, 4096, &t), 0);
	assert_int_equal(r[0].res.pages, 1000);
	assert_int_equal(r[0].res.moved, 1000);
	assert_int_equal(r[0].res.absent, 0);
	assert_int_equal(r[1].res.pages, 300);
	assert_int_equal(r[1].res.moved, 0);
	assert_int_equal(r[1].res.absent, 300);
	assert_int_equal(r[2].res.pages, total - 1300);
	assert_int_equal(r[2].res.moved, total - 1300);
	assert_int_equal(t.pages, total);
	assert_int_equal(t.moved, total - 300);
	assert_int_equal(t.absent, 300);
	assert_int_equal(t.calls, 2 * 2);	/* two lists, a query and a move each */
	assert_true(t.entries <= total);
	for (unsigned int i = 0; i < total; i++)
		if (i < 1000 || i >= 1300)
			assert_int_equal(p[i * 4096UL], (char)(i * 7));
	/* no ranges: nothing asked, no call */
	memset(&t, 0, sizeof(t));
	assert_int_equal(vt_numa_move_ranges(getpid(), r, 0, 0, 4096, &t), 0);
	assert_int_equal(t.calls, 0);
	munmap(p, len);
}

/*
 * A PMD-mapped THP is listed by its head alone and counted for its 512
 * pages (where this host gives a THP and its kernel has PAGEMAP_SCAN).
 */
static void test_move_thp(void **state)
{
	size_t len = 4UL << 20;
	char *raw = mmap(NULL, len + (2UL << 20), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *p = (char *)(((uintptr_t)raw + (2UL << 20) - 1) & ~((2UL << 20) - 1));
	struct vt_numa_range r = { .hva = (uint64_t)(uintptr_t)p, .len = len };
	struct vt_move_result t = { 0 };
	int nodes[1];

	(void)state;
	assert_true(raw != MAP_FAILED);
	if (madvise(p, len, MADV_HUGEPAGE)) {
		munmap(raw, len + (2UL << 20));
		skip();
	}
	for (size_t i = 0; i < len; i += 4096)
		p[i] = (char)(i >> 12);
	assert_int_equal(vt_numa_move_ranges(getpid(), &r, 1, 0, 4096, &t), 0);
	assert_int_equal(t.pages, len / 4096);
	assert_int_equal(t.moved, len / 4096);
	assert_int_equal(r.res.moved, len / 4096);
	assert_int_equal(vt_numa_query(getpid(), (uint64_t)(uintptr_t)p, 4096, 1, nodes), 0);
	if (t.entries == len / 4096) {
		fprintf(stderr, "# no THP here (or no PAGEMAP_SCAN): 4 KiB entries\n");
	} else {
		/* one entry per THP: 2 when both 2 MiB blocks are huge, fewer than 513 if one is */
		assert_true(t.entries == 2 || t.entries == 1 + 512);
	}
	for (size_t i = 0; i < len; i += 4096)
		assert_int_equal(p[i], (char)(i >> 12));
	munmap(raw, len + (2UL << 20));
}

static void test_move_child(void **state)
{
	size_t len = 64 * 4096UL;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct vt_move_result r = { 0 };
	int fds[2];
	pid_t child;
	char c;

	(void)state;
	assert_true(p != MAP_FAILED);
	assert_int_equal(pipe(fds), 0);
	child = fork();
	if (child == 0) {
		memset(p, 0x5a, len);	/* the child's pages, at the same address */
		if (write(fds[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_int_equal(read(fds[0], &c, 1), 1);
	assert_int_equal(vt_numa_probe(child), 0);
	assert_int_equal(vt_numa_move(child, (uint64_t)(uintptr_t)p, len, 0, 4096, &r), 0);
	assert_int_equal(r.moved, 64);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	/* gone: the whole move fails, nothing counted as moved */
	memset(&r, 0, sizeof(r));
	assert_int_equal(vt_numa_move(child, (uint64_t)(uintptr_t)p, len, 0, 4096, &r), -ESRCH);
	assert_int_equal(r.moved, 0);
	assert_int_equal(vt_numa_probe(child), -ESRCH);
	close(fds[0]);
	close(fds[1]);
	munmap(p, len);
}

static void test_bad_node(void **state)
{
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct vt_move_result r = { 0 };
	int ret;

	(void)state;
	p[0] = 1;
	/* a node that does not exist: the kernel refuses the call (-ENODEV / -EINVAL) */
	ret = vt_numa_move(getpid(), (uint64_t)(uintptr_t)p, 4096, 4095, 4096, &r);
	assert_true(ret == -ENODEV || ret == -EINVAL);
	assert_int_equal(r.moved, 0);
	munmap(p, 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_move_self),
		cmocka_unit_test(test_move_ranges),
		cmocka_unit_test(test_move_thp),
		cmocka_unit_test(test_move_child),
		cmocka_unit_test(test_bad_node),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
