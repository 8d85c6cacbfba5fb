// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the userfaultfd pager (host-agent/iface/handoff_pager.c) on a
 * real memfd and userfaultfd, with QEMU played by this process: a shared
 * mapping of the memfd registered for missing + write-protect faults, and a
 * "vCPU" thread touching it while the test serves the faults. Every page is
 * checked against the pattern it was written with.
 *
 * Needs userfaultfd with shmem write-protect: a missing feature is a skip
 * with the reason, never a pass.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "handoff_pager.h"

#define PAGE 4096ul
#define NPAGES 192ul	/* a span of more than one run (64 pages) */

struct fixture {
	int memfd;		/* QEMU's fds: they outlive any pager */
	int uffd;
	uint8_t *qemu_map;	/* QEMU's view of guest RAM */
	struct vtier_handoff_hello hello;
	struct vt_pager pager;
	uint8_t store[NPAGES][PAGE];	/* the agent's copies */
	bool stored[NPAGES];
};

static uint64_t pattern(uint64_t page, uint64_t word, uint64_t seed)
{
	uint64_t x = (page << 32 | word) ^ seed * 0x9e3779b97f4a7c15ull;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ x >> 29;
}

static void fill_page(uint8_t *p, uint64_t page, uint64_t seed)
{
	uint64_t *w = (uint64_t *)p;

	for (uint64_t i = 0; i < PAGE / 8; i++)
		w[i] = pattern(page, i, seed);
}

static bool page_is(const uint8_t *p, uint64_t page, uint64_t seed)
{
	const uint64_t *w = (const uint64_t *)p;

	for (uint64_t i = 0; i < PAGE / 8; i++) {
		if (w[i] != pattern(page, i, seed))
			return false;
	}
	return true;
}

static int open_pager(struct fixture *f)
{
	return vt_pager_open(&f->pager, &f->hello, dup(f->memfd), dup(f->uffd));
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_MISSING_SHMEM | UFFD_FEATURE_WP_HUGETLBFS_SHMEM,
	};
	struct uffdio_register reg;

	f->memfd = memfd_create("test-pager", MFD_CLOEXEC);
	assert_true(f->memfd >= 0);
	assert_int_equal(ftruncate(f->memfd, NPAGES * PAGE), 0);
	f->qemu_map = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f->memfd, 0);
	assert_true(f->qemu_map != MAP_FAILED);
	f->uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (f->uffd < 0 || ioctl(f->uffd, UFFDIO_API, &api)) {
		fprintf(stderr, "# skip: userfaultfd with shmem missing + write-protect: %s\n",
			strerror(errno));
		munmap(f->qemu_map, NPAGES * PAGE);
		close(f->memfd);
		if (f->uffd >= 0)
			close(f->uffd);
		free(f);
		skip();
		return 0;
	}
	reg = (struct uffdio_register) {
		.range = { (uintptr_t)f->qemu_map, NPAGES * PAGE },
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};
	assert_int_equal(ioctl(f->uffd, UFFDIO_REGISTER, &reg), 0);
	f->hello = (struct vtier_handoff_hello) {
		.flags = VTIER_HELLO_F_WP,
		.size_bytes = NPAGES * PAGE,
		.page_size = PAGE,
		.hva = (uintptr_t)f->qemu_map,
		.uffd_ioctls = reg.ioctls,
		.generation = 1,
		.backend_id = "mem0",
	};
	assert_int_equal(open_pager(f), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	vt_pager_close(&f->pager);
	munmap(f->qemu_map, NPAGES * PAGE);
	close(f->uffd);
	close(f->memfd);
	free(f);
	return 0;
}

/* The "vCPU": runs @fn over guest RAM in its own thread. */
struct vcpu {
	pthread_t thread;
	struct fixture *f;
	void (*fn)(struct vcpu *v);
	uint64_t arg;
	int bad;
	volatile bool done;
};

static void *vcpu_main(void *opaque)
{
	struct vcpu *v = opaque;

	v->fn(v);
	__atomic_store_n(&v->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void vcpu_start(struct vcpu *v, struct fixture *f, void (*fn)(struct vcpu *v), uint64_t arg)
{
	*v = (struct vcpu) { .f = f, .fn = fn, .arg = arg };
	assert_int_equal(pthread_create(&v->thread, NULL, vcpu_main, v), 0);
}

static bool vcpu_done(struct vcpu *v)
{
	return __atomic_load_n(&v->done, __ATOMIC_ACQUIRE);
}

static void vcpu_read_all(struct vcpu *v)
{
	for (uint64_t i = 0; i < NPAGES; i++) {
		if (!page_is(v->f->qemu_map + i * PAGE, i, v->arg))
			v->bad++;
	}
}

static void vcpu_write_word(struct vcpu *v)
{
	((volatile uint64_t *)(v->f->qemu_map + v->arg * PAGE))[3] = 0xfeedull;
}

static void vcpu_read_page(struct vcpu *v)
{
	if (!page_is(v->f->qemu_map + v->arg * PAGE, v->arg, 1))
		v->bad++;
}

/* Serve faults the way an agent does until the vCPU is done. */
/*
 * Serve the faults until the vCPU thread is done, then the ones still queued:
 * a fault the vCPU raised may have been resolved without this thread (a commit
 * that unprotects a kept page wakes its writer), and its message must not be
 * left for the next step to count.
 */
static void serve_until_done(struct fixture *f, struct vcpu *v)
{
	bool last = false;

	for (int spins = 0; !last; spins++) {
		struct pollfd pfd = { .fd = f->pager.uffd, .events = POLLIN };
		struct vt_pager_fault fault;
		int ret;

		assert_true(spins < 5000);	/* 5 s */
		last = vcpu_done(v);
		poll(&pfd, 1, last ? 0 : 1);
		while ((ret = vt_pager_next_fault(&f->pager, &fault)) == 0) {
			uint64_t page = fault.offset / PAGE;

			if (fault.wp) {
				assert_int_equal(vt_pager_unprotect(&f->pager, fault.offset, PAGE), 0);
			} else {
				ret = vt_pager_fill(&f->pager, fault.offset,
						    f->stored[page] ? f->store[page] : NULL);
				assert_true(ret >= 0);
				f->stored[page] = false;
			}
		}
		assert_int_equal(ret, -EAGAIN);
	}
	pthread_join(v->thread, NULL);
}

/*
 * Write guest RAM through the memfd, not through the registered mapping:
 * this thread serves the faults, it must not raise one.
 */
static void fill_all(struct fixture *f, uint64_t seed)
{
	static uint8_t buf[PAGE];

	for (uint64_t i = 0; i < NPAGES; i++) {
		fill_page(buf, i, seed);
		assert_int_equal(pwrite(f->memfd, buf, PAGE, i * PAGE), PAGE);
	}
}

static void evict(struct fixture *f, uint64_t page)
{
	assert_int_equal(vt_pager_evict_begin(&f->pager, page * PAGE, f->store[page]), 0);
	f->stored[page] = true;
	assert_int_equal(vt_pager_evict_commit(&f->pager, page * PAGE), 0);
	assert_int_equal(vt_pager_present(&f->pager, page * PAGE), 0);
}

static void test_evict_and_serve(void **state)
{
	struct fixture *f = *state;
	struct vcpu v;

	fill_all(f, 1);
	for (uint64_t i = 0; i < NPAGES; i += 2)
		evict(f, i);
	assert_int_equal(f->pager.nr_evicted, NPAGES / 2);
	/* Evicting a hole is refused: there is nothing to copy. */
	assert_int_equal(vt_pager_evict_begin(&f->pager, 0, f->store[0]), -ENOENT);

	vcpu_start(&v, f, vcpu_read_all, 1);
	serve_until_done(f, &v);
	assert_int_equal(v.bad, 0);
	assert_int_equal(f->pager.nr_filled, NPAGES / 2);
	assert_int_equal(f->pager.nr_zero_filled, 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		assert_int_equal(vt_pager_present(&f->pager, i * PAGE), 1);
}

/*
 * A run with holes goes out with one protection and one punch (the holes
 * inside are punched along), and comes back intact; a page not kept splits
 * the punch and stays, unprotected.
 */
static void test_evict_run_and_serve(void **state)
{
	struct fixture *f = *state;
	uint64_t present = 0, punched = 0, keep;
	uint8_t *buf = malloc(16 * PAGE);
	struct vcpu v;

	assert_non_null(buf);
	fill_all(f, 1);
	/* holes at 2 and 11 */
	evict(f, 2);
	evict(f, 11);
	assert_int_equal(vt_pager_present_span(&f->pager, 0, 16 * PAGE, &present), 0);
	assert_int_equal(present, 0xf7fb);
	assert_int_equal(vt_pager_present_span(&f->pager, 11 * PAGE, PAGE, &present), 0);
	assert_int_equal(present, 0);
	assert_int_equal(vt_pager_present_span(&f->pager, 4 * PAGE, 3, &present), -EINVAL);

	/* pages 0..15 of the run: 2 and 11 are holes, 6 and 13 are not kept */
	assert_int_equal(vt_pager_evict_begin_span(&f->pager, 0, 16 * PAGE, buf, &present), 0);
	assert_int_equal(present, 0xf7fb);
	for (uint64_t i = 0; i < 16; i++) {
		if (i == 2 || i == 11)
			continue;
		assert_true(page_is(buf + i * PAGE, i, 1));
		if (i != 6 && i != 13) {
			memcpy(f->store[i], buf + i * PAGE, PAGE);
			f->stored[i] = true;
		}
	}
	keep = 0xf7fb & ~0x2040ull;
	assert_int_equal(vt_pager_evict_commit_span(&f->pager, 0, 16 * PAGE, &present, &keep,
						    &punched), 0);
	assert_int_equal(punched, 0xf7fb & ~0x2040ull);
	for (uint64_t i = 0; i < 16; i++)
		assert_int_equal(vt_pager_present(&f->pager, i * PAGE), i == 6 || i == 13);
	assert_int_equal(f->pager.nr_evicted, 2 + 12);
	/* page 6 takes a write without a fault: its protection is gone */
	vcpu_start(&v, f, vcpu_write_word, 6);
	serve_until_done(f, &v);
	assert_int_equal(((uint64_t *)(f->qemu_map + 6 * PAGE))[3], 0xfeed);
	assert_int_equal(f->pager.nr_filled, 0);

	/* a run with nothing in the memfd protects nothing */
	assert_int_equal(vt_pager_evict_begin_span(&f->pager, 0, 4 * PAGE, buf, &present), 0);
	assert_int_equal(present, 0);

	vcpu_start(&v, f, vcpu_read_all, 1);
	serve_until_done(f, &v);
	assert_int_equal(v.bad, 1);	/* page 6, written above */
	free(buf);
}

/* A write into a run being evicted keeps its page; the rest of the run goes. */
static void test_racing_write_keeps_its_page_of_a_run(void **state)
{
	struct fixture *f = *state;
	struct pollfd pfd = { .fd = f->uffd, .events = POLLIN };
	uint8_t *buf = malloc(4 * PAGE);
	uint64_t punched = 0, present = 0, keep = 0xf;
	struct vcpu v;

	assert_non_null(buf);
	fill_all(f, 1);
	assert_int_equal(vt_pager_evict_begin_span(&f->pager, 8 * PAGE, 4 * PAGE, buf, &present), 0);
	assert_int_equal(present, 0xf);
	for (uint64_t i = 0; i < 4; i++) {
		memcpy(f->store[8 + i], buf + i * PAGE, PAGE);
		f->stored[8 + i] = true;
	}
	vcpu_start(&v, f, vcpu_write_word, 10);
	assert_int_equal(poll(&pfd, 1, 2000), 1);
	usleep(20000);
	assert_false(vcpu_done(&v));	/* waits on the protection */
	assert_int_equal(vt_pager_evict_commit_span(&f->pager, 8 * PAGE, 4 * PAGE, &present, &keep,
						    &punched), 0);
	assert_int_equal(punched, 0xb);	/* all but page 10 */
	assert_int_equal(f->pager.nr_evict_aborted, 1);
	f->stored[10] = false;		/* its copy is stale */
	serve_until_done(f, &v);
	assert_int_equal(vt_pager_present(&f->pager, 10 * PAGE), 1);
	assert_int_equal(((uint64_t *)(f->qemu_map + 10 * PAGE))[3], 0xfeed);
	assert_int_equal(((uint64_t *)(f->qemu_map + 10 * PAGE))[4], pattern(10, 4, 1));
	for (uint64_t i = 8; i < 12; i++)
		assert_int_equal(vt_pager_present(&f->pager, i * PAGE), i == 10);
	/* the others come back from their copies */
	vcpu_start(&v, f, vcpu_read_page, 9);
	serve_until_done(f, &v);
	assert_int_equal(v.bad, 0);
	vcpu_start(&v, f, vcpu_read_page, 11);
	serve_until_done(f, &v);
	assert_int_equal(v.bad, 0);
	free(buf);
}

static bool bit(const uint64_t *mask, uint64_t i)
{
	return (mask[i / 64] >> (i % 64)) & 1;
}

/*
 * A span of three runs (a bulk eviction) goes out with one protection: the
 * holes are skipped, a page not kept stays, a write racing the span keeps
 * its page (and the write), every other page comes back intact.
 */
static void test_span_with_racing_write(void **state)
{
	struct fixture *f = *state;
	struct pollfd pfd = { .fd = f->uffd, .events = POLLIN };
	uint64_t present[3], keep[3], punched[3], big[VT_PAGER_SPAN_WORDS(VT_PAGER_SPAN_MAX + 1)];
	uint8_t *buf = malloc(NPAGES * PAGE);
	uint64_t unprotected;
	struct vcpu v;

	assert_non_null(buf);
	fill_all(f, 1);
	evict(f, 70);		/* holes at 70 and 130 */
	evict(f, 130);
	assert_int_equal(vt_pager_present_span(&f->pager, 0, NPAGES * PAGE, present), 0);
	assert_int_equal(present[0], ~0ull);
	assert_int_equal(present[1], ~(1ull << 6));
	assert_int_equal(present[2], ~(1ull << 2));
	assert_int_equal(vt_pager_present_span(&f->pager, 0, 3, present), -EINVAL);
	assert_int_equal(vt_pager_present_span(&f->pager, 0, (VT_PAGER_SPAN_MAX + 1) * PAGE, big),
			 -EINVAL);

	assert_int_equal(vt_pager_evict_begin_span(&f->pager, 0, NPAGES * PAGE, buf, present), 0);
	memcpy(keep, present, sizeof(keep));
	keep[1] &= ~(1ull << (100 - 64));	/* page 100: its copy was refused */
	for (uint64_t i = 0; i < NPAGES; i++) {
		if (!bit(present, i))
			continue;
		assert_true(page_is(buf + i * PAGE, i, 1));
		if (bit(keep, i)) {
			memcpy(f->store[i], buf + i * PAGE, PAGE);
			f->stored[i] = true;
		}
	}
	/* a write into the span (page 150) waits on its protection */
	vcpu_start(&v, f, vcpu_write_word, 150);
	assert_int_equal(poll(&pfd, 1, 2000), 1);
	usleep(20000);
	assert_false(vcpu_done(&v));
	assert_int_equal(vt_pager_evict_commit_span(&f->pager, 0, NPAGES * PAGE, present, keep,
						    punched), 0);
	assert_int_equal(f->pager.nr_evict_aborted, 1);
	for (uint64_t i = 0; i < NPAGES; i++)
		assert_int_equal(bit(punched, i), bit(keep, i) && i != 150);
	f->stored[150] = false;	/* its copy is stale */
	/* the commit dropped the span's protection and woke the writer: it ends
	 * without this thread, its fault message still queued (served below) */
	for (int i = 0; i < 5000 && !vcpu_done(&v); i++)
		usleep(1000);
	assert_true(vcpu_done(&v));
	serve_until_done(f, &v);
	for (uint64_t i = 0; i < NPAGES; i++)
		assert_int_equal(vt_pager_present(&f->pager, i * PAGE), i == 100 || i == 150);
	assert_int_equal(((uint64_t *)(f->qemu_map + 150 * PAGE))[3], 0xfeed);
	assert_int_equal(((uint64_t *)(f->qemu_map + 150 * PAGE))[4], pattern(150, 4, 1));
	/* page 100 stayed and is not protected: a write goes through without a fault */
	unprotected = f->pager.nr_unprotected;	/* page 150's, served above */
	vcpu_start(&v, f, vcpu_write_word, 100);
	serve_until_done(f, &v);
	assert_int_equal(f->pager.nr_unprotected, unprotected);
	/* the rest comes back from the copies: pages 100 and 150 were written */
	vcpu_start(&v, f, vcpu_read_all, 1);
	serve_until_done(f, &v);
	assert_int_equal(v.bad, 2);
	assert_int_equal(f->pager.nr_filled, NPAGES - 2);
	free(buf);
}

/*
 * While a span (pages 0-127) is protected and stored, a read of an evicted
 * page outside it (160) is served at once, a write into it (page 40) stays
 * queued for the commit, which keeps that page and its write; the write is
 * served after the commit.
 */
static void test_fault_outside_span_served_meanwhile(void **state)
{
	struct fixture *f = *state;
	struct pollfd pfd = { .fd = f->uffd, .events = POLLIN };
	uint64_t present[2], punched[2];
	uint8_t *buf = malloc(128 * PAGE);
	struct vt_pager_fault fault;
	struct vcpu writer, reader;

	assert_non_null(buf);
	fill_all(f, 1);
	evict(f, 160);
	assert_int_equal(vt_pager_evict_begin_span(&f->pager, 0, 128 * PAGE, buf, present), 0);
	for (uint64_t i = 0; i < 128; i++) {
		memcpy(f->store[i], buf + i * PAGE, PAGE);
		f->stored[i] = true;
	}
	/* the write first: it is ahead of the read in the queue */
	vcpu_start(&writer, f, vcpu_write_word, 40);
	assert_int_equal(poll(&pfd, 1, 2000), 1);
	vcpu_start(&reader, f, vcpu_read_page, 160);
	for (int i = 0; i < 200 && vt_pager_next_fault_outside(&f->pager, 0, 128 * PAGE,
							       &fault) == -EAGAIN; i++)
		usleep(10000);
	assert_int_equal(fault.offset, 160 * PAGE);
	assert_false(fault.wp);
	assert_int_equal(f->pager.n_pending, 1);	/* the span's write, still queued */
	assert_int_equal(vt_pager_fill(&f->pager, fault.offset, f->store[160]), 1);
	f->stored[160] = false;
	pthread_join(reader.thread, NULL);
	assert_int_equal(reader.bad, 0);
	assert_false(vcpu_done(&writer));
	assert_int_equal(vt_pager_next_fault_outside(&f->pager, 0, 128 * PAGE, &fault), -EAGAIN);
	/* the commit sees the write: page 40 stays, with it */
	assert_int_equal(vt_pager_evict_commit_span(&f->pager, 0, 128 * PAGE, present, present,
						    punched), 0);
	for (uint64_t i = 0; i < 128; i++)
		assert_int_equal(bit(punched, i), i != 40);
	f->stored[40] = false;
	assert_int_equal(vt_pager_next_fault(&f->pager, &fault), 0);
	assert_int_equal(fault.offset, 40 * PAGE);
	assert_true(fault.wp);
	assert_int_equal(vt_pager_unprotect(&f->pager, fault.offset, PAGE), 0);
	pthread_join(writer.thread, NULL);
	assert_int_equal(((uint64_t *)(f->qemu_map + 40 * PAGE))[3], 0xfeed);
	assert_int_equal(((uint64_t *)(f->qemu_map + 40 * PAGE))[4], pattern(40, 4, 1));
	/* every other page comes back from its copy */
	vcpu_start(&reader, f, vcpu_read_all, 1);
	serve_until_done(f, &reader);
	assert_int_equal(reader.bad, 1);
	free(buf);
}

static void test_untouched_page_is_zero(void **state)
{
	struct fixture *f = *state;
	struct vcpu v;

	/* Page 9 was never written: its first touch faults and reads zeros. */
	vcpu_start(&v, f, vcpu_read_page, 9);
	serve_until_done(f, &v);
	assert_int_equal(v.bad, 1);	/* not the pattern ... */
	for (uint64_t i = 0; i < PAGE; i++)
		assert_int_equal(f->qemu_map[9 * PAGE + i], 0);	/* ... but zeros */
	assert_int_equal(f->pager.nr_zero_filled, 1);
}

static void test_write_after_evict(void **state)
{
	struct fixture *f = *state;
	struct vcpu v;
	uint64_t *w;

	fill_all(f, 1);
	evict(f, 5);
	vcpu_start(&v, f, vcpu_write_word, 5);
	serve_until_done(f, &v);
	w = (uint64_t *)(f->qemu_map + 5 * PAGE);
	assert_int_equal(w[3], 0xfeed);
	for (uint64_t i = 0; i < PAGE / 8; i++) {
		if (i != 3)
			assert_int_equal(w[i], pattern(5, i, 1));
	}
}

static void test_racing_write_aborts_eviction(void **state)
{
	struct fixture *f = *state;
	struct pollfd pfd = { .fd = f->uffd, .events = POLLIN };
	struct vcpu v;
	uint64_t *w;

	fill_all(f, 1);
	assert_int_equal(vt_pager_evict_begin(&f->pager, 3 * PAGE, f->store[3]), 0);
	/* The guest writes while the copy is being stored: it must wait ... */
	vcpu_start(&v, f, vcpu_write_word, 3);
	assert_int_equal(poll(&pfd, 1, 2000), 1);
	usleep(20000);
	assert_false(vcpu_done(&v));
	/* ... and the eviction must give up rather than lose the write. */
	assert_int_equal(vt_pager_evict_commit(&f->pager, 3 * PAGE), -EBUSY);
	assert_int_equal(f->pager.nr_evict_aborted, 1);
	serve_until_done(f, &v);
	assert_int_equal(vt_pager_present(&f->pager, 3 * PAGE), 1);
	w = (uint64_t *)(f->qemu_map + 3 * PAGE);
	assert_int_equal(w[3], 0xfeed);
	assert_int_equal(w[4], pattern(3, 4, 1));
	assert_int_equal(f->pager.nr_evicted, 0);
}

static void test_agent_dies_with_fault_in_flight(void **state)
{
	struct fixture *f = *state;
	struct pollfd pfd = { .fd = f->uffd, .events = POLLIN };
	struct vt_pager_fault fault;
	struct vcpu v;

	fill_all(f, 1);
	evict(f, 7);
	vcpu_start(&v, f, vcpu_read_page, 7);
	assert_int_equal(poll(&pfd, 1, 2000), 1);
	/* The first agent reads the fault, then dies before serving it. */
	assert_int_equal(vt_pager_next_fault(&f->pager, &fault), 0);
	assert_int_equal(fault.offset, 7 * PAGE);
	vt_pager_close(&f->pager);
	usleep(50000);
	assert_false(vcpu_done(&v));	/* the vCPU waits; it reads no zeros */

	/* QEMU hands the fds it kept to the next agent and wakes the waiters. */
	assert_int_equal(open_pager(f), 0);
	assert_int_equal(vt_pager_wake_all(&f->pager), 0);
	serve_until_done(f, &v);
	assert_int_equal(v.bad, 0);
	assert_int_equal(f->pager.nr_filled, 1);
}

static void test_fault_raised_twice(void **state)
{
	struct fixture *f = *state;

	fill_all(f, 1);
	/* Filling a present page is a no-op that still wakes the waiters. */
	assert_int_equal(vt_pager_fill(&f->pager, 2 * PAGE, f->store[0]), 0);
	assert_int_equal(f->pager.nr_already_present, 1);
	assert_true(page_is(f->qemu_map + 2 * PAGE, 2, 1));
	assert_int_equal(vt_pager_fill(&f->pager, NPAGES * PAGE, NULL), -EINVAL);
	assert_int_equal(vt_pager_fill(&f->pager, 100, NULL), -EINVAL);
}

static void test_open_rejects_non_tmpfs(void **state)
{
	struct fixture *f = *state;
	struct vt_pager p;
	int pipefd[2];

	assert_int_equal(pipe(pipefd), 0);
	close(pipefd[1]);
	assert_int_equal(vt_pager_open(&p, &f->hello, pipefd[0], dup(f->uffd)), -ENOTSUP);
	assert_int_equal(p.memfd, -1);	/* both fds closed */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_evict_and_serve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_evict_run_and_serve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_racing_write_keeps_its_page_of_a_run, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_span_with_racing_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fault_outside_span_served_meanwhile, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_untouched_page_is_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_after_evict, setup, teardown),
		cmocka_unit_test_setup_teardown(test_racing_write_aborts_eviction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_dies_with_fault_in_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fault_raised_twice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_rejects_non_tmpfs, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
