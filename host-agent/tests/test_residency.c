// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The residency stage on this process's own pages (move_pages status, one
 * NUMA node is enough): the first window reads every chunk with the bytes
 * its samples stand for; then a window reads the moved chunks and a
 * round-robin slice only, so a change nobody ordered (pages touched or
 * dropped behind the agent's back) is seen within vt_refresh_windows() and
 * not at once; a moved chunk is seen the next window; vtierd's pools count
 * by their stores.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "residency.h"
#include "vm.h"

#define MIB (1ULL << 20)
#define CHUNK (2 * MIB)
#define NR_CHUNKS 64
#define PAGE 4096

struct fixture {
	struct vt_vm vm;
	GPtrArray *backends;
	char *ram;
};

static int setup(void **state)
{
	struct fixture *f = g_new0(struct fixture, 1);
	struct vt_range r;

	f->ram = mmap(NULL, NR_CHUNKS * CHUNK, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(f->ram != MAP_FAILED);
	/* 4 KiB pages: a touched byte must not bring a whole 2 MiB THP in */
	assert_int_equal(madvise(f->ram, NR_CHUNKS * CHUNK, MADV_NOHUGEPAGE), 0);
	r = (struct vt_range){ (uintptr_t)f->ram, (uintptr_t)f->ram + NR_CHUNKS * CHUNK };
	f->vm.pid = getpid();
	f->vm.tiers.nr = 1;
	for (unsigned int n = 0; n < VT_MAX_NODES; n++)
		f->vm.tiers.node_tier[n] = n == 0 ? 0 : -1;
	f->vm.ctier_kind = VT_CTIER_NONE;
	f->vm.mtm = vt_mtm_new(&r, 1, CHUNK, VT_RESIDENCY_STRIDE, 1);
	vt_residency_start(&f->vm);
	f->backends = g_ptr_array_new();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	munmap(f->ram, NR_CHUNKS * CHUNK);
	vt_mtm_free(f->vm.mtm);
	vt_refresh_free(f->vm.refresh);
	g_ptr_array_free(f->backends, TRUE);
	g_free(f);
	return 0;
}

static const struct vt_mtm_chunk *chunk(const struct fixture *f, unsigned int i)
{
	return &g_array_index(f->vm.mtm->chunks, struct vt_mtm_chunk, i);
}

static void touch(struct fixture *f, unsigned int i, uint64_t off, uint64_t len)
{
	for (uint64_t o = off; o < off + len; o += PAGE)
		f->ram[i * CHUNK + o] = 1;
}

/* A slice of @slice chunks per window, the full read done. */
static void small_slice(struct fixture *f, unsigned int slice)
{
	vt_refresh_free(f->vm.refresh);
	f->vm.refresh = vt_refresh_new(NR_CHUNKS, slice);
	assert_int_equal(vt_residency_query(&f->vm, f->backends), 0);
}

static void test_first_window_reads_all(void **state)
{
	struct fixture *f = *state;

	touch(f, 3, 0, CHUNK);
	touch(f, 5, 0, MIB);		/* half of it */
	touch(f, 7, 0, PAGE);		/* one page, the first sample's */
	touch(f, 9, PAGE, PAGE);	/* one page between samples: not seen */
	assert_int_equal(vt_residency_query(&f->vm, f->backends), 0);
	assert_int_equal(f->vm.mtm->tier_bytes[0],
			 CHUNK + MIB + VT_RESIDENCY_STRIDE);
	assert_int_equal(chunk(f, 3)->tier, 0);
	assert_int_equal(chunk(f, 3)->nr_samples, CHUNK / VT_RESIDENCY_STRIDE);
	assert_int_equal(chunk(f, 5)->samples[0], MIB / VT_RESIDENCY_STRIDE);
	assert_int_equal(chunk(f, 7)->tier, 0);
	assert_int_equal(chunk(f, 9)->tier, -1);
	assert_int_equal(chunk(f, 10)->tier, -1);
	assert_int_equal(chunk(f, 10)->nr_samples, CHUNK / VT_RESIDENCY_STRIDE);
	/*
	 * the default slice: VT_RESIDENCY_SAMPLES pages, VT_RESIDENCY_STRIDE
	 * apart, or (this small VM) every chunk once in VT_RESIDENCY_MIN_WINDOWS
	 */
	assert_true(VT_RESIDENCY_SAMPLES / (CHUNK / VT_RESIDENCY_STRIDE) > NR_CHUNKS);
	assert_int_equal(f->vm.refresh->slice, NR_CHUNKS / VT_RESIDENCY_MIN_WINDOWS);
	assert_int_equal(vt_refresh_windows(f->vm.refresh), VT_RESIDENCY_MIN_WINDOWS);
}

static void test_outside_change_within_bound(void **state)
{
	struct fixture *f = *state;
	unsigned int bound, seen_in = 0, gone_in = 0;

	touch(f, 3, 0, CHUNK);
	small_slice(f, 4);
	bound = vt_refresh_windows(f->vm.refresh);
	assert_int_equal(bound, NR_CHUNKS / 4);
	assert_int_equal(chunk(f, 40)->tier, -1);
	/* behind the agent's back: chunk 40 comes in, chunk 3 goes */
	touch(f, 40, 0, CHUNK);
	assert_int_equal(madvise(f->ram + 3 * CHUNK, CHUNK, MADV_DONTNEED), 0);
	for (unsigned int w = 1; w <= bound && (!seen_in || !gone_in); w++) {
		assert_int_equal(vt_residency_query(&f->vm, f->backends), 0);
		if (!seen_in && chunk(f, 40)->tier == 0)
			seen_in = w;
		if (!gone_in && chunk(f, 3)->tier == -1)
			gone_in = w;
	}
	/* seen within the bound, in its turn: not by a read of everything */
	assert_int_equal(gone_in, 3 / 4 + 1);
	assert_int_equal(seen_in, 40 / 4 + 1);
	assert_int_equal(f->vm.mtm->tier_bytes[0], CHUNK);
}

static void test_moved_read_next_window(void **state)
{
	struct fixture *f = *state;
	g_autoptr(GArray) orders = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_order));
	struct vt_mtm_order o = { .chunk = 50, .from_tier = -1, .to_tier = 0, .promote = true };

	small_slice(f, 4);
	touch(f, 50, 0, CHUNK);
	touch(f, 51, 0, CHUNK);		/* not ordered: waits for its turn */
	g_array_append_val(orders, o);
	vt_residency_moved(&f->vm, orders);
	assert_int_equal(vt_residency_query(&f->vm, f->backends), 0);
	assert_int_equal(chunk(f, 50)->tier, 0);
	assert_int_equal(chunk(f, 51)->tier, -1);
	assert_int_equal(f->vm.mtm->tier_bytes[0], CHUNK);
}

static void test_gone_process(void **state)
{
	struct fixture *f = *state;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	f->vm.pid = pid;
	assert_int_equal(vt_residency_query(&f->vm, f->backends), -ESRCH);
}

/* vtierd's pools: the store's count, the rest of what the samples put there is in RAM. */
static void test_tier_bytes_store_counts(void **state)
{
	struct vt_vm vm = { .ctier_kind = VT_CTIER_HANDOFF, .nr_tiers = 3 };
	struct vt_vm_stats s = { 0 };
	uint64_t sampled[VT_MAX_TIERS] = { 100 * MIB, 0, 16 * MIB, 4 * MIB };

	(void)state;
	vm.tiers.nr = 1;
	s.model.nr = 3;
	s.model.t[1].compressed = s.model.t[2].compressed = true;
	s.model.t[1].stored_bytes = 0;		/* all 16 MiB faulted back */
	s.model.t[2].stored_bytes = 6 * MIB;	/* 2 MiB the samples missed */
	vt_residency_tier_bytes(&vm, (uint64_t[]){ 100 * MIB, 16 * MIB, 4 * MIB }, &s);
	assert_int_equal(s.tier[1].resident_bytes, 0);
	assert_int_equal(s.tier[2].resident_bytes, 6 * MIB);
	assert_int_equal(s.tier[0].resident_bytes, 100 * MIB + 16 * MIB - 2 * MIB);
	/* stock QEMU (zswap) or no compressed tier: the samples as they are */
	vm.ctier_kind = VT_CTIER_ZSWAP;
	vm.nr_tiers = 2;
	vt_residency_tier_bytes(&vm, sampled, &s);
	assert_int_equal(s.tier[0].resident_bytes, 100 * MIB);
	assert_int_equal(s.tier[1].resident_bytes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_first_window_reads_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outside_change_within_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_moved_read_next_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gone_process, setup, teardown),
		cmocka_unit_test(test_tier_bytes_store_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
