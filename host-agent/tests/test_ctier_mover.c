// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The compressed-tier mover with real parts: a memfd mapped shared (QEMU's
 * guest RAM), a userfaultfd registered on it, a page store in a temporary
 * directory (for one test with a remote tier, on memory servers of this
 * process). The test's own threads play the vCPUs and check every page.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
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
#include <glib.h>

#include "ctier_csum.h"
#include "ctier_mover.h"
#include "fake_qemu.h"
#include "remote_servers.h"

#define PAGE 4096ul
#define NPAGES 1024ul		/* 4 MiB */

struct fixture {
	struct fake_qemu_ram ram;	/* the "QEMU" mapping of guest RAM */
	int memfd;
	uint8_t *map;
	char *dir;
	struct vt_store *store;
	struct vt_ctier_mover *mover;
	uint32_t version[NPAGES];	/* what each page must hold */
	uint64_t zero_map[NPAGES / 64];	/* the mover's zero map: outlives it */
};

/* Page content by kind (index % 4): zeros, one repeated word, text-like, random. */
static void page_content(uint64_t page, uint32_t version, uint64_t *w)
{
	uint64_t x = page * 0x9e3779b97f4a7c15ull ^ version;

	for (unsigned int i = 0; i < PAGE / 8; i++) {
		switch (page % 4) {
		case 0:
			w[i] = 0;
			break;
		case 1:
			w[i] = x | 1;
			break;
		case 2:
			w[i] = 0x2065687420666f20ull + (i / 64) + version;	/* runs: compress */
			break;
		default:
			x ^= x >> 12;
			x ^= x << 25;
			x ^= x >> 27;
			w[i] = x * 0x2545f4914f6cdd1dull;
			break;
		}
	}
	if (page % 4 >= 2)
		w[0] = page << 32 | version;	/* identity of the non-uniform pages */
}

static bool page_ok(struct fixture *f, uint64_t page)
{
	uint64_t want[PAGE / 8];

	page_content(page, f->version[page], want);
	return memcmp(f->map + page * PAGE, want, PAGE) == 0;
}

static void write_page(struct fixture *f, uint64_t page, uint32_t version)
{
	uint64_t buf[PAGE / 8];

	page_content(page, version, buf);
	memcpy(f->map + page * PAGE, buf, PAGE);
	f->version[page] = version;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct vt_ctier_spec spec[2] = {
		{ .name = "lz4", .codec = VT_CODEC_LZ4, .pool = VT_POOL_ZSMALLOC,
		  .medium = VT_MEDIUM_NODE, .node = 0, .max_stored_pct = 75 },
		{ .name = "zstd", .codec = VT_CODEC_ZSTD, .level = 3, .pool = VT_POOL_ZBUD,
		  .medium = VT_MEDIUM_NODE, .node = 0, .max_stored_pct = 75 },
	};
	struct vt_store_key key = { .backend_id = "mem0", .size_bytes = NPAGES * PAGE,
				    .page_size = PAGE };
	struct vtier_handoff_hello hello;
	struct vt_pager pager;
	char why[200];
	int ret = fake_qemu_ram_open(&f->ram, NPAGES * PAGE, false);

	if (ret) {
		fprintf(stderr, "# skip: userfaultfd with shmem missing + write-protect: %s\n",
			strerror(-ret));
		free(f);
		skip();
		return 0;
	}
	f->memfd = f->ram.memfd;
	f->map = f->ram.map;
	/* filled before the registration: these pages never fault */
	for (uint64_t p = 0; p < NPAGES; p++)
		write_page(f, p, 1);
	assert_int_equal(fake_qemu_ram_register(&f->ram), 0);
	hello = fake_qemu_hello(&f->ram, "mem0", 1);
	f->dir = g_dir_make_tmp("vtier-mover-XXXXXX", NULL);
	assert_non_null(f->dir);
	assert_int_equal(vt_store_open(f->dir, &key, spec, 2, true, &f->store, why, sizeof(why)), 0);
	assert_int_equal(vt_pager_open(&pager, &hello, dup(f->memfd), dup(f->ram.uffd)), 0);
	assert_int_equal(vt_ctier_mover_start(&pager, f->store, -1, NULL, NULL, &f->mover), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	vt_ctier_mover_stop(f->mover);
	vt_store_close(f->store);
	vt_store_destroy(f->dir);
	g_free(f->dir);
	fake_qemu_ram_close(&f->ram);
	free(f);
	return 0;
}

static void wait_idle(struct fixture *f)
{
	/* the backlog counts the order in progress until its last slice is done */
	for (int i = 0; i < 60000 && vt_ctier_mover_backlog(f->mover); i++)
		g_usleep(500);
	assert_int_equal(vt_ctier_mover_backlog(f->mover), 0);
}

static uint64_t present_pages(struct fixture *f)
{
	unsigned char vec[NPAGES];
	uint64_t n = 0;

	/* mincore on the shared mapping: resident in the page cache of the memfd */
	assert_int_equal(mincore(f->map, NPAGES * PAGE, vec), 0);
	for (uint64_t p = 0; p < NPAGES; p++)
		n += vec[p] & 1;
	return n;
}

/*
 * Stats once @want stored pages came back, by their fault or ahead of one
 * (30 s at most): the mover counts them after the copy went.
 */
static void wait_stored_back(struct fixture *f, struct vt_ctier_mover_stats *st, uint64_t want)
{
	for (int i = 0; i < 30000; i++) {
		vt_ctier_mover_get_stats(f->mover, st);
		if (st->faults_stored + st->stored_ahead >= want)
			return;
		g_usleep(1000);
	}
}

/* Evict everything, read everything back: every page as it was, random pages never left. */
static void test_evict_and_fault_back(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	struct vt_store_tier_stats ts;

	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES * PAGE, 0), 0);
	wait_idle(f);
	vt_ctier_mover_get_stats(f->mover, &st);
	/* 3 of 4 kinds compress; the random quarter stays resident */
	assert_int_equal(st.evicted, NPAGES * 3 / 4);
	assert_int_equal(st.evict_e2big, NPAGES / 4);
	assert_int_equal(present_pages(f), NPAGES / 4);
	assert_int_equal(vt_store_stats(f->store, &ts, 1), 1);	/* tier 0 */
	assert_int_equal(ts.pages, NPAGES * 3 / 4);
	assert_int_equal(ts.zero_pages, NPAGES / 4);
	assert_int_equal(ts.same_pages, NPAGES / 4);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
	/*
	 * each stored page came back by its fault or ahead of it (read in
	 * order), counted just after the faulting thread was woken
	 */
	wait_stored_back(f, &st, NPAGES * 3 / 4);
	assert_int_equal(st.faults_stored + st.stored_ahead, NPAGES * 3 / 4);
	assert_int_equal(st.faults_zero, 0);
	assert_true(vt_latency_percentile(&st.fault_ns, 50) > 0);
	assert_int_equal(vt_store_stats(f->store, &ts, 1), 1);	/* tier 0 */
	assert_int_equal(ts.pages, 0);
}

struct writer {
	struct fixture *f;
	volatile bool stop;
	uint64_t writes;
};

static void *writer_main(void *opaque)
{
	struct writer *w = opaque;
	uint32_t v = 2;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		for (uint64_t p = 2; p < NPAGES; p += 16)
			write_page(w->f, p, v);
		v++;
		__atomic_add_fetch(&w->writes, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* A vCPU writes while pages are evicted: no write is lost. */
static void test_writes_race_eviction(void **state)
{
	struct fixture *f = *state;
	struct writer w = { .f = f };
	pthread_t t;

	uint64_t start, raced;

	assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
	/* the writer is under way before the first eviction ... */
	for (int i = 0; i < 30000 && !__atomic_load_n(&w.writes, __ATOMIC_ACQUIRE); i++)
		g_usleep(1000);
	start = __atomic_load_n(&w.writes, __ATOMIC_ACQUIRE);
	assert_true(start > 0);
	/* ... and sweeps its pages at least twice while they are evicted, however slow
	 * a loaded machine makes it (four rounds at least, 30 s at most) */
	for (int round = 0; round < 4 || (__atomic_load_n(&w.writes, __ATOMIC_ACQUIRE) - start < 2 &&
					  round < 3000); round++) {
		assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES * PAGE, 0), 0);
		wait_idle(f);
		if (round >= 4)
			g_usleep(10000);
	}
	__atomic_store_n(&w.stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	raced = w.writes - start;
	assert_true(raced >= 2);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
}

/*
 * A bulk eviction (a migration profile's placement): the whole backend in one
 * span, one protection and one punch, every page as it was when read back.
 */
static void test_bulk_one_span(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;

	assert_int_equal(vt_ctier_mover_evict_bulk(f->mover, 0, NPAGES * PAGE, 1), 0);
	wait_idle(f);
	vt_ctier_mover_get_stats(f->mover, &st);
	assert_int_equal(st.evict_runs, 1);
	assert_int_equal(st.evicted, NPAGES * 3 / 4);	/* the random quarter stays */
	assert_int_equal(st.evicted_by_tier[1], NPAGES * 3 / 4);
	assert_int_equal(present_pages(f), NPAGES / 4);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
}

/*
 * A bulk span stored by 1, 3 and 8 threads, with a vCPU writing into it: the
 * same pages out, each in its tier, no write lost.
 */
static void test_bulk_span_threads(void **state)
{
	struct fixture *f = *state;
	const unsigned int threads[] = { 1, 3, 8 };
	struct writer w = { .f = f };
	pthread_t t;

	assert_int_equal(vt_ctier_mover_set_store_threads(f->mover, 0), 1);
	assert_int_equal(vt_ctier_mover_set_store_threads(f->mover, 99), 8);
	assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
	for (unsigned int k = 0; k < G_N_ELEMENTS(threads); k++) {
		struct vt_ctier_mover_stats st;

		assert_int_equal(vt_ctier_mover_set_store_threads(f->mover, threads[k]), threads[k]);
		assert_int_equal(vt_ctier_mover_evict_bulk(f->mover, 0, NPAGES * PAGE, k % 2), 0);
		wait_idle(f);
		vt_ctier_mover_get_stats(f->mover, &st);
		/* what is out is in its tier; what a write kept stays; nothing else */
		for (uint64_t p = 0; p < NPAGES; p++) {
			int tier = vt_store_tier_of(f->store, p);

			if (p % 4 == 3)
				assert_int_equal(tier, -ENOENT);
			else if (tier >= 0)
				assert_int_equal(tier, (int)(k % 2));
		}
		assert_int_equal(st.evict_failed, 0);
		assert_int_equal(vt_ctier_mover_fetch(f->mover, 0, NPAGES * PAGE), 0);
		wait_idle(f);
	}
	__atomic_store_n(&w.stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
	/* and without a writer, exact counts */
	assert_int_equal(vt_ctier_mover_set_store_threads(f->mover, 8), 8);
	assert_int_equal(vt_ctier_mover_evict_bulk(f->mover, 0, NPAGES * PAGE, 1), 0);
	wait_idle(f);
	assert_int_equal(present_pages(f), NPAGES / 4);
	/* every tier first: reading a page in order serves the stored ones after it */
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_int_equal(vt_store_tier_of(f->store, p), p % 4 == 3 ? -ENOENT : 1);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
}

/*
 * Bulk orders queued one behind the other are taken as spans of several
 * (fewer runs than orders; a run of the ordinary path is 32 pages), while a
 * vCPU writes into them: no write is lost, pages in a faster tier move down.
 */
static void test_bulk_spans_race_writes(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	struct writer w = { .f = f };
	uint64_t order = NPAGES / 8 * PAGE;
	pthread_t t;

	/* a quarter of it in tier 0 first: the bulk orders take it down to tier 1 */
	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES / 4 * PAGE, 0), 0);
	wait_idle(f);
	vt_ctier_mover_get_stats(f->mover, &st);
	assert_int_equal(st.evicted_by_tier[0], NPAGES / 4 * 3 / 4);
	assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
	while (!__atomic_load_n(&w.writes, __ATOMIC_ACQUIRE))
		g_usleep(1000);	/* the writer is at it before the first order */
	for (int round = 0; round < 4; round++) {
		uint64_t runs;

		vt_ctier_mover_get_stats(f->mover, &st);
		runs = st.evict_runs;
		for (uint64_t o = 0; o < NPAGES * PAGE; o += order)
			assert_int_equal(vt_ctier_mover_evict_bulk(f->mover, o, order, 1), 0);
		wait_idle(f);
		vt_ctier_mover_get_stats(f->mover, &st);
		assert_true(st.evict_runs - runs <= 8);
	}
	__atomic_store_n(&w.stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	assert_true(w.writes > 0);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
	vt_ctier_mover_get_stats(f->mover, &st);
	assert_true(st.evicted_by_tier[1] > 0);
	assert_true(st.fetched > 0);	/* tier 0's pages, on their way down */
}

/*
 * Bulk orders into alternating tiers, one behind the other (a profile's
 * chunks, tier by tier): taken as spans across tiers (fewer runs than the
 * 8 orders), each page in its own order's tier.
 */
static void test_bulk_span_of_tiers(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	uint64_t order = NPAGES / 8;

	for (uint64_t o = 0; o < 8; o++)
		assert_int_equal(vt_ctier_mover_evict_bulk(f->mover, o * order * PAGE, order * PAGE,
							   (unsigned int)(o % 2)), 0);
	wait_idle(f);
	vt_ctier_mover_get_stats(f->mover, &st);
	assert_true(st.evict_runs < 8);
	assert_int_equal(st.evicted, NPAGES * 3 / 4);
	assert_int_equal(st.evicted_by_tier[0], NPAGES * 3 / 8);
	assert_int_equal(st.evicted_by_tier[1], NPAGES * 3 / 8);
	/* every tier first: reading a page in order serves the stored ones after it */
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_int_equal(vt_store_tier_of(f->store, p),
				 p % 4 == 3 ? -ENOENT : (int)(p / order % 2));
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
}

struct reader {
	struct fixture *f;
	uint64_t from, to;
	uint64_t done;		/* pages read */
	int bad;
	bool go;		/* atomic: start reading (the thread waits for it, running) */
};

static void *reader_main(void *opaque)
{
	struct reader *r = opaque;

	while (!__atomic_load_n(&r->go, __ATOMIC_ACQUIRE))
		sched_yield();
	for (uint64_t p = r->from; p < r->to; p++) {
		if (!page_ok(r->f, p))
			r->bad++;
		__atomic_add_fetch(&r->done, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/*
 * @r reads while a bulk span of pages [@from, @from + @len) is stored into
 * tier 1: its thread runs before the span starts and goes at the span's
 * first page stored. The stats once the span is done, in one run.
 */
static void read_during_span(struct fixture *f, struct reader *r, uint64_t from, uint64_t len,
			     struct vt_ctier_mover_stats *st)
{
	uint64_t runs;
	pthread_t t;

	vt_ctier_mover_get_stats(f->mover, st);
	runs = st->evict_runs;
	assert_int_equal(pthread_create(&t, NULL, reader_main, r), 0);
	assert_int_equal(vt_ctier_mover_evict_bulk(f->mover, from * PAGE, len * PAGE, 1), 0);
	for (int i = 0; i < 50000000 && vt_store_tier_of(f->store, from) != 1; i++)
		if (i % 64 == 63)
			sched_yield();
	assert_int_equal(vt_store_tier_of(f->store, from), 1);
	__atomic_store_n(&r->go, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	wait_idle(f);
	assert_int_equal(r->bad, 0);
	vt_ctier_mover_get_stats(f->mover, st);
	assert_int_equal(st->evict_runs, runs + 1);	/* one span */
}

/*
 * While a bulk span is stored, a vCPU reading evicted pages elsewhere gets
 * them (the faults are served between the span's pages, not after it) and
 * those faults are not counted as the idle mover's; every page as it was.
 * The reader starts once the span stores its first page; on a loaded machine
 * the span may end before its first fault: then again, with the span's pages
 * fetched back and the reader's evicted again (50 times at most; a mover
 * that holds faults until the commit never gets there).
 */
static void test_span_serves_faults_elsewhere(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	uint64_t span = NPAGES * 3 / 4;
	int attempt;

	for (attempt = 0; attempt < 50; attempt++) {
		struct reader r = { .f = f, .from = span, .to = NPAGES };

		assert_int_equal(vt_ctier_mover_fetch(f->mover, 0, span * PAGE), 0);
		assert_int_equal(vt_ctier_mover_evict(f->mover, span * PAGE, (NPAGES - span) * PAGE,
						      0), 0);
		wait_idle(f);
		read_during_span(f, &r, 0, span, &st);
		assert_int_equal(st.evicted_by_tier[1], (attempt + 1) * span * 3 / 4);
		/* and a stored fault served beside it is not one of the idle mover's */
		if (st.span_faults && st.idle_fault_ns.count < st.faults_stored)
			break;
	}
	assert_true(attempt < 50);
	assert_true(st.span_faults <= (NPAGES - span) * 3 / 4);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
}

static bool zeros_at(struct fixture *f, uint64_t page)
{
	static const uint8_t zero[PAGE];

	return memcmp(f->map + page * PAGE, zero, PAGE) == 0;
}

/*
 * An outgoing migration reads never-touched memory: the zero fills are
 * punched again once read, a page written meanwhile (by a racing vCPU too)
 * keeps its data, and nothing is tracked once the migration ends.
 */
static void test_zero_fills_punched_again(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st = { 0 };
	struct writer w = { .f = f };
	unsigned char vec[NPAGES / 2];
	uint64_t hole = NPAGES / 2, left;
	pthread_t t;

	/* the second half never touched (a hole of the memfd) */
	assert_int_equal(fallocate(f->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   (off_t)(hole * PAGE), (off_t)(hole * PAGE)), 0);
	vt_ctier_mover_track_reads(f->mover, true, 0);
	assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
	/* the migration thread reads it: zero fills */
	for (uint64_t p = hole; p < NPAGES; p++) {
		if ((p - 2) % 16)
			assert_true(zeros_at(f, p));
	}
	write_page(f, hole + 101, 9);	/* the guest writes one (not a zero page) after it was read */
	/* and the writer went over all its pages at least once since */
	for (uint64_t seen = __atomic_load_n(&w.writes, __ATOMIC_ACQUIRE);
	     __atomic_load_n(&w.writes, __ATOMIC_ACQUIRE) < seen + 2;)
		g_usleep(1000);
	__atomic_store_n(&w.stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	/* a second after each fill, and until no run is done for 0.3 s (on a loaded
	 * machine: until most are punched, 10 s at most) */
	for (int i = 0, quiet = 0;
	     i < 10000 && (i < 1200 || quiet < 300 || st.zero_repunched <= hole / 2); i++) {
		uint64_t runs = st.repunch_runs;

		vt_ctier_mover_get_stats(f->mover, &st);
		quiet = st.repunch_runs == runs ? quiet + 1 : 0;
		g_usleep(1000);
	}
	assert_true(st.zero_repunched > hole / 2);
	assert_true(st.repunch_runs > 0);
	/* only pages with data stayed: the written one and the writer's */
	assert_int_equal(mincore(f->map + hole * PAGE, hole * PAGE, vec), 0);
	left = 0;
	for (uint64_t i = 0; i < hole; i++) {
		left += vec[i] & 1;
		if ((vec[i] & 1) && i != 101 && (hole + i - 2) % 16)
			fail_msg("page %" PRIu64 " (all zeros) is still in the memfd", hole + i);
	}
	assert_true(left >= 1 + hole / 16);	/* page 101 and the writer's */
	/* the migration ended: what was left goes at once, nothing is tracked from here on */
	vt_ctier_mover_track_reads(f->mover, false, 0);
	for (int i = 0; i < 10000 && vt_ctier_mover_reads_held(f->mover); i++)
		g_usleep(1000);
	assert_int_equal(vt_ctier_mover_reads_held(f->mover), 0);
	/* every page as the guest left it: zeros where nothing was written */
	for (uint64_t p = 0; p < NPAGES; p++) {
		if (p >= hole && p != hole + 101 && (p - 2) % 16)
			assert_true(zeros_at(f, p));
		else
			assert_true(page_ok(f, p));
	}
	/* ... so the fills of those reads stay */
	vt_ctier_mover_get_stats(f->mover, &st);
	left = st.zero_repunched;
	g_usleep(1500 * 1000);
	vt_ctier_mover_get_stats(f->mover, &st);
	assert_int_equal(st.zero_repunched, left);
	assert_int_equal(present_pages(f), NPAGES);
}

/* Stats once the counter at @off reaches @want (10 s at most). */
static void wait_stat(struct fixture *f, struct vt_ctier_mover_stats *st, size_t off,
		      uint64_t want)
{
	for (int i = 0; i < 10000; i++) {
		vt_ctier_mover_get_stats(f->mover, st);
		if (*(const uint64_t *)((const char *)st + off) >= want)
			return;
		g_usleep(1000);
	}
}

/* Stats once no repunch run was done for 0.3 s (10 s at most). */
static void wait_repunch_quiet(struct fixture *f, struct vt_ctier_mover_stats *st)
{
	vt_ctier_mover_get_stats(f->mover, st);
	for (int i = 0, quiet = 0; i < 10000 && quiet < 300; i++) {
		uint64_t runs = st->repunch_runs;

		g_usleep(1000);
		vt_ctier_mover_get_stats(f->mover, st);
		quiet = st->repunch_runs == runs && !vt_ctier_mover_reads_held(f->mover) ?
			quiet + 1 : 0;
	}
}

/*
 * The first @pages pages evicted (3 in 4 stored: the random ones do not
 * compress), then an outgoing migration's reads tracked without a bound.
 * Returns the pages stored.
 */
static uint64_t stored_then_tracked(struct fixture *f, uint64_t pages)
{
	struct vt_ctier_mover_stats st;

	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, pages * PAGE, 0), 0);
	wait_idle(f);
	vt_ctier_mover_get_stats(f->mover, &st);
	assert_int_equal(st.evicted, pages * 3 / 4);
	vt_ctier_mover_track_reads(f->mover, true, 0);
	return st.evicted;
}

/*
 * An outgoing migration reads evicted pages through: each is served with its
 * stored copy kept and punched again once read, if the guest did not write
 * it meanwhile (then the page stays, the copy goes); the copies serve the
 * next reads. Every page as the guest left it throughout.
 */
static void test_reads_through_store(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	uint64_t stored, written = 6;	/* a text-like page: stored */

	stored = stored_then_tracked(f, NPAGES);
	/* the migration thread reads every page */
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
	/* the mover counts a fault after it woke the reader */
	wait_stat(f, &st, offsetof(struct vt_ctier_mover_stats, read_through), stored);
	assert_int_equal(st.read_through, stored);
	assert_int_equal(present_pages(f), NPAGES);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(vt_store_tier_of(f->store, p) == (p % 4 == 3 ? -ENOENT : 0));
	/* the guest writes one of them after the migration read it */
	write_page(f, written, 5);
	wait_repunch_quiet(f, &st);
	assert_int_equal(st.read_repunched, stored - 1);
	assert_int_equal(st.read_dirtied, 1);
	assert_int_equal(st.zero_repunched, 0);
	assert_int_equal(vt_store_tier_of(f->store, written), -ENOENT);
	/* resident: the random quarter (never stored) and the written page */
	assert_int_equal(present_pages(f), NPAGES / 4 + 1);
	/* a second pass of the migration: from the copies again, every page right */
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
	wait_stat(f, &st, offsetof(struct vt_ctier_mover_stats, read_through), 2 * stored - 1);
	assert_int_equal(st.read_through, 2 * stored - 1);
	/*
	 * read ahead of the reader: a fault per window (64 KiB doubling up to
	 * 2 MiB, 7 for 4 MiB), not per page
	 */
	assert_in_range(st.faults_stored, 2, 14);
	assert_int_equal(st.read_around, st.read_through - st.faults_stored);
	/* it ends: the reads of the second pass go at once, the copies serve them */
	vt_ctier_mover_track_reads(f->mover, false, 0);
	wait_repunch_quiet(f, &st);
	assert_int_equal(st.read_repunched, 2 * stored - 2);
	assert_int_equal(present_pages(f), NPAGES / 4 + 1);
	/* not tracking: a read takes the page back for good, the copy goes */
	assert_true(page_ok(f, 2));
	for (int i = 0; i < 10000 && vt_store_tier_of(f->store, 2) >= 0; i++)
		g_usleep(1000);	/* dropped after the reader was woken */
	assert_int_equal(vt_store_tier_of(f->store, 2), -ENOENT);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
	assert_int_equal(present_pages(f), NPAGES);
}

/*
 * Past the bound, new faults wait until the oldest range is punched again (50
 * ms after its last fill): a reader as fast as it can go never has much more
 * than the bound held for it, and reads every page right.
 */
static void test_reads_bound(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	uint64_t held_max = 0, bound = 64 * PAGE;

	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES * PAGE, 0), 0);
	wait_idle(f);
	vt_ctier_mover_track_reads(f->mover, true, bound);
	for (uint64_t p = 0; p < NPAGES; p++) {
		assert_true(page_ok(f, p));
		held_max = MAX(held_max, vt_ctier_mover_reads_held(f->mover));
	}
	wait_repunch_quiet(f, &st);
	assert_true(st.reads_waits > 0);
	assert_true(st.reads_early > 0);
	/* the bound and the page whose fault was served before the check saw it */
	if (held_max > bound + PAGE)
		fail_msg("held %" PRIu64 " bytes for the reads, bound %" PRIu64, held_max, bound);
	assert_int_equal(st.read_repunched, NPAGES * 3 / 4);
	assert_int_equal(present_pages(f), NPAGES / 4);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
	vt_ctier_mover_track_reads(f->mover, false, 0);
}

/*
 * What the migration's reads hold is punched again by their ranges, not stored
 * a second time: an eviction ordered over them (a re-eviction of the VM's
 * cold chunks) leaves their zero fills and read-through pages alone, and
 * every page reads right afterwards.
 */
static void test_reads_not_evicted_twice(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	uint64_t half = NPAGES / 2, stored;

	/* the second half never touched (discarded), the first stored */
	assert_int_equal(vt_ctier_mover_discard(f->mover, half * PAGE, half * PAGE), 0);
	for (int i = 0; i < 10000 && vt_ctier_mover_discards_pending(f->mover); i++)
		g_usleep(1000);
	stored = stored_then_tracked(f, half);
	for (uint64_t p = 0; p < NPAGES; p++) {
		if (p < half)
			assert_true(page_ok(f, p));
		else
			assert_true(f->map[p * PAGE] == 0 &&
				    !memcmp(f->map + p * PAGE, f->map + p * PAGE + 1, PAGE - 1));
	}
	/* well within the second the ranges are held */
	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES * PAGE, 1), 0);
	wait_idle(f);
	vt_ctier_mover_get_stats(f->mover, &st);
	assert_int_equal(st.evicted, stored);
	assert_true(st.evict_read_held > 0);
	wait_repunch_quiet(f, &st);
	assert_int_equal(st.evicted, stored);
	assert_int_equal(st.read_repunched, stored);
	assert_int_equal(st.zero_repunched, half);
	assert_int_equal(present_pages(f), half / 4);
	for (uint64_t p = 0; p < half; p++)
		assert_true(page_ok(f, p));
	vt_ctier_mover_track_reads(f->mover, false, 0);
}

/*
 * @p (PAGE bytes) with its last 4 bytes changed so that its crc32c becomes
 * @want: CRC is affine, so the 32 bit flips there span every difference.
 */
static void crc_forge(uint8_t *p, uint32_t want)
{
	uint32_t vec[32], comb[32], have = vt_crc32c(p, PAGE), t, sel = 0;
	unsigned int rank = 0;

	for (unsigned int k = 0; k < 32; k++) {
		p[PAGE - 4 + k / 8] ^= (uint8_t)(1u << (k % 8));
		vec[k] = vt_crc32c(p, PAGE) ^ have;
		p[PAGE - 4 + k / 8] ^= (uint8_t)(1u << (k % 8));
		comb[k] = 1u << k;
	}
	for (int b = 31; b >= 0; b--) {
		unsigned int r;

		for (r = rank; r < 32 && !(vec[r] >> b & 1); r++)
			;
		if (r == 32)
			continue;
		t = vec[r], vec[r] = vec[rank], vec[rank] = t;
		t = comb[r], comb[r] = comb[rank], comb[rank] = t;
		for (unsigned int o = 0; o < 32; o++)
			if (o != rank && (vec[o] >> b & 1)) {
				vec[o] ^= vec[rank];
				comb[o] ^= comb[rank];
			}
		rank++;
	}
	t = have ^ want;
	for (unsigned int r = 0; r < rank; r++)
		if (t & (1u << (31 - __builtin_clz(vec[r])))) {
			t ^= vec[r];
			sel ^= comb[r];
		}
	assert_int_equal(t, 0);
	for (unsigned int k = 0; k < 32; k++)
		if (sel >> k & 1)
			p[PAGE - 4 + k / 8] ^= (uint8_t)(1u << (k % 8));
	assert_int_equal(vt_crc32c(p, PAGE), want);
}

/*
 * A page the guest rewrote after the migration read it through, to other
 * bytes with the same crc32c as its stored copy: it is not punched (the copy
 * would come back on the next fault), its copy goes, the guest's bytes stay.
 */
static void test_reads_same_crc(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	uint8_t was[PAGE], now[PAGE];
	uint64_t page = 6;	/* text-like: stored */

	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES * PAGE, 0), 0);
	wait_idle(f);
	vt_ctier_mover_track_reads(f->mover, true, 0);
	memcpy(was, f->map + page * PAGE, PAGE);	/* read through */
	memcpy(now, was, PAGE);
	now[100] ^= 0x5a;
	crc_forge(now, vt_crc32c(was, PAGE));
	assert_memory_not_equal(now, was, PAGE);
	memcpy(f->map + page * PAGE, now, PAGE);
	wait_repunch_quiet(f, &st);
	assert_int_equal(st.read_dirtied, 1);
	/* the pages read ahead of it went again, unchanged */
	assert_true(st.read_around > 0);
	assert_int_equal(st.read_repunched, st.read_around);
	assert_int_equal(vt_store_tier_of(f->store, page), -ENOENT);
	assert_memory_equal(f->map + page * PAGE, now, PAGE);
	vt_ctier_mover_track_reads(f->mover, false, 0);
}

/* Fetch brings stored pages back without a fault. */
static bool zero_bit(struct fixture *f, uint64_t page)
{
	return __atomic_load_n(&f->zero_map[page / 64], __ATOMIC_ACQUIRE) >> (page % 64) & 1;
}

static uint64_t zero_bits(struct fixture *f)
{
	uint64_t n = 0;

	for (uint64_t w = 0; w < NPAGES / 64; w++)
		n += (uint64_t)__builtin_popcountll(__atomic_load_n(&f->zero_map[w],
								    __ATOMIC_ACQUIRE));
	return n;
}

/*
 * The zero map while a migration reads: the scan at its start marks the
 * memfd's holes that have no copy (not the pages with data, not the stored
 * ones), a fault clears a page's bit before the page is filled, the zero
 * pages punched again are marked again, and the end of the migration
 * clears every bit.
 */
static void test_zero_map(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	uint64_t hole = NPAGES / 2, stored, marked = 0;

	vt_ctier_mover_set_zero_map(f->mover, f->zero_map);
	/* the first 64 pages evicted (the random quarter stays), the second half a hole */
	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, 64 * PAGE, 0), 0);
	wait_idle(f);
	vt_ctier_mover_get_stats(f->mover, &st);
	stored = st.evicted;
	assert_int_equal(stored, 48);
	assert_int_equal(fallocate(f->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   (off_t)(hole * PAGE), (off_t)(hole * PAGE)), 0);
	/* nothing is marked while no migration reads */
	g_usleep(100 * 1000);
	assert_int_equal(zero_bits(f), 0);
	vt_ctier_mover_track_reads(f->mover, true, 0);
	wait_stat(f, &st, offsetof(struct vt_ctier_mover_stats, zero_map_set), hole);
	assert_int_equal(st.zero_map_set, hole);
	for (uint64_t p = 0; p < NPAGES; p++)
		if (zero_bit(f, p) != (p >= hole))
			fail_msg("page %" PRIu64 ": zero bit %d", p, zero_bit(f, p));
	/* a read of a hole: its fault-around window is filled, its bits cleared first */
	assert_true(zeros_at(f, hole + 200));
	assert_false(zero_bit(f, hole + 200));
	/* a write to one (not of zeros): cleared before the fill, so before the write */
	write_page(f, hole + 301, 7);
	assert_false(zero_bit(f, hole + 301));
	/* a stored page read through keeps no bit */
	assert_true(page_ok(f, 5));
	assert_false(zero_bit(f, 5));
	/* the filled zeros punched again: marked again; the written page is not */
	wait_repunch_quiet(f, &st);
	assert_true(st.zero_repunched > 0);
	assert_false(zero_bit(f, hole + 301));
	for (uint64_t p = hole; p < NPAGES; p++)
		marked += zero_bit(f, p);
	assert_int_equal(marked, hole - 1);
	/* the migration ends: no bit stays */
	vt_ctier_mover_track_reads(f->mover, false, 0);
	assert_int_equal(zero_bits(f), 0);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(p >= hole && p != hole + 301 ? zeros_at(f, p) : page_ok(f, p));
}

/* The guest of test_zero_map_never_lies: writes[p] is odd while page p is written. */
struct zero_guest {
	struct fixture *f;
	bool stop;
	uint64_t writes[NPAGES];
	uint64_t rounds;
};

static void *zero_guest_main(void *opaque)
{
	struct zero_guest *g = opaque;
	uint32_t v = 10;

	for (uint64_t x = 1; !__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE); v++) {
		for (unsigned int i = 0; i < 64; i++) {
			uint64_t p = NPAGES / 2 + (x = x * 6364136223846793005ull + 1) % (NPAGES / 2);

			if (p % 4 == 0)
				continue;	/* a zero page: content alone shows no write */
			__atomic_add_fetch(&g->writes[p], 1, __ATOMIC_SEQ_CST);
			write_page(g->f, p, v);
			__atomic_add_fetch(&g->writes[p], 1, __ATOMIC_SEQ_CST);
		}
		__atomic_add_fetch(&g->rounds, 1, __ATOMIC_RELEASE);
		g_usleep(2000);
	}
	return NULL;
}

/*
 * What a migration's reader relies on, checked against everything that
 * moves pages at once: a guest writing into what was a hole, the pages
 * evicted again and again, the migration reading every page (zero fills,
 * read-through, punches). The reader of the map reads a page's bit and then
 * the page with pread(2) (which fills no hole): a bit set over a page that
 * holds data no write of the guest put there since is the lie.
 */
static void test_zero_map_never_lies(void **state)
{
	struct fixture *f = *state;
	struct zero_guest *g = g_new0(struct zero_guest, 1);
	struct vt_ctier_mover_stats st;
	uint64_t hole = NPAGES / 2, checked = 0, set_seen = 0, buf[PAGE / 8];
	uint64_t t_end = (uint64_t)g_get_monotonic_time() + 3 * G_USEC_PER_SEC;
	pthread_t t;

	g->f = f;
	vt_ctier_mover_set_zero_map(f->mover, f->zero_map);
	assert_int_equal(fallocate(f->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   (off_t)(hole * PAGE), (off_t)(hole * PAGE)), 0);
	for (uint64_t p = hole; p < NPAGES; p++)
		f->version[p] = 0;
	vt_ctier_mover_track_reads(f->mover, true, 128 * PAGE);
	assert_int_equal(pthread_create(&t, NULL, zero_guest_main, g), 0);
	for (uint64_t round = 0; (uint64_t)g_get_monotonic_time() < t_end; round++) {
		/* evict the hole's half again: what the guest wrote goes to the store */
		if (!vt_ctier_mover_backlog(f->mover))
			assert_int_equal(vt_ctier_mover_evict(f->mover, hole * PAGE, hole * PAGE,
							      round % 2), 0);
		for (uint64_t p = hole; p < NPAGES; p++) {
			uint64_t w0 = __atomic_load_n(&g->writes[p], __ATOMIC_SEQ_CST), w1;
			bool bit;

			if (w0 % 2)
				continue;	/* being written */
			bit = zero_bit(f, p);
			assert_int_equal(pread(f->memfd, buf, PAGE, (off_t)(p * PAGE)), (ssize_t)PAGE);
			w1 = __atomic_load_n(&g->writes[p], __ATOMIC_SEQ_CST);
			set_seen += bit;
			checked++;
			if (bit && w1 == w0 && (buf[0] | buf[1] | buf[PAGE / 16] | buf[PAGE / 8 - 1]))
				fail_msg("page %" PRIu64 " is marked zero and holds data the guest did "
					 "not write since (writes %" PRIu64 ")", p, w0);
			/* the migration reads every other page of the round (faults) */
			if ((p + round) % 2 == 0)
				(void)*(volatile uint8_t *)(f->map + p * PAGE);
		}
	}
	__atomic_store_n(&g->stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	wait_idle(f);
	vt_ctier_mover_get_stats(f->mover, &st);
	/* the map was in use: set bits were seen, pages were punched again and evicted */
	assert_true(set_seen > 0);
	assert_true(st.zero_map_set > hole);
	assert_true(st.zero_repunched > 0);
	assert_true(st.evicted > 0);
	assert_true(__atomic_load_n(&g->rounds, __ATOMIC_ACQUIRE) > 10);
	vt_ctier_mover_track_reads(f->mover, false, 0);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(p >= hole && !f->version[p] ? zeros_at(f, p) : page_ok(f, p));
	printf("# %" PRIu64 " pages checked, %" PRIu64 " marked zero; bits set %" PRIu64
	       ", zero pages punched again %" PRIu64 ", evicted %" PRIu64 "\n", checked,
	       set_seen, st.zero_map_set, st.zero_repunched, st.evicted);
	g_free(g);
}

static void test_fetch(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;

	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES * PAGE, 0), 0);
	wait_idle(f);
	assert_int_equal(vt_ctier_mover_fetch(f->mover, 0, NPAGES * PAGE), 0);
	wait_idle(f);
	vt_ctier_mover_get_stats(f->mover, &st);
	assert_int_equal(st.fetched, NPAGES * 3 / 4);
	assert_int_equal(present_pages(f), NPAGES);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
	vt_ctier_mover_get_stats(f->mover, &st);
	assert_int_equal(st.faults_stored, 0);
}

static bool present(struct fixture *f, uint64_t page)
{
	unsigned char v;

	assert_int_equal(mincore(f->map + page * PAGE, PAGE, &v), 0);
	return v & 1;
}

/*
 * A first touch fills its neighbours with zeros too (fault-around), never a
 * stored page: that one comes from the store when it is touched.
 */
static void test_zero_fault_around(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	static const uint8_t zero[PAGE];

	/* page 522 goes to the store; pages 512.. become holes never evicted */
	assert_int_equal(vt_ctier_mover_evict(f->mover, 522 * PAGE, PAGE, 0), 0);
	wait_idle(f);
	assert_false(present(f, 522));
	assert_int_equal(fallocate(f->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   512 * PAGE, 10 * PAGE), 0);
	assert_int_equal(fallocate(f->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   523 * PAGE, 105 * PAGE), 0);
	assert_memory_equal(f->map + 514 * PAGE, zero, PAGE);	/* one fault */
	/* the 64 KiB window of page 514 (512..527) is there, but for the stored page */
	for (uint64_t p = 512; p < 528; p++)
		assert_true(p == 522 ? !present(f, p) : present(f, p));
	assert_false(present(f, 530));
	assert_true(page_ok(f, 522));	/* from the store, not zeros */
	for (uint64_t p = 512; p < 528; p++)
		if (p != 522)
			assert_memory_equal(f->map + p * PAGE, zero, PAGE);
	for (int i = 0; i < 30000; i++) {	/* counted just after the wake-up */
		vt_ctier_mover_get_stats(f->mover, &st);
		if (st.faults_stored)
			break;
		g_usleep(1000);
	}
	assert_int_equal(st.faults_stored, 1);
	assert_true(st.zero_filled_around >= 15);
}

static void wait_discarded(struct fixture *f)
{
	for (int i = 0; i < 60000 && vt_ctier_mover_discards_pending(f->mover); i++)
		g_usleep(500);
	assert_int_equal(vt_ctier_mover_discards_pending(f->mover), 0);
}

/*
 * A discard (a guest's FREE hint) drops the stored copies of its range and
 * punches the rest: the range reads zeros afterwards, every page outside it
 * keeps its content, and the counts say what was freed.
 */
static void test_discard(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	struct vt_store_tier_stats ts;
	static const uint8_t zero[PAGE];

	/* pages 0..255 to the store (the random quarter stays), then discard 128..383 */
	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, 256 * PAGE, 0), 0);
	wait_idle(f);
	assert_int_equal(vt_store_stats(f->store, &ts, 1), 1);
	assert_int_equal(ts.pages, 192);
	assert_int_equal(vt_ctier_mover_discard(f->mover, 128 * PAGE, 256 * PAGE), 0);
	wait_discarded(f);
	vt_ctier_mover_get_stats(f->mover, &st);
	assert_int_equal(st.discarded_stored_pages, 96);	/* 3 of 4 of 128..255 */
	/* resident were the random quarter of 128..255 and all of 256..383 */
	assert_int_equal(st.discarded_resident_bytes, (32 + 128) * PAGE);
	assert_true(st.discard_runs >= 1);
	assert_int_equal(vt_store_stats(f->store, &ts, 1), 1);
	assert_int_equal(ts.pages, 96);
	for (uint64_t p = 128; p < 384; p++)
		assert_false(present(f, p));
	for (uint64_t p = 0; p < NPAGES; p++) {
		if (p >= 128 && p < 384)
			assert_memory_equal(f->map + p * PAGE, zero, PAGE);
		else
			assert_true(page_ok(f, p));
	}
}

/* Bad discards are refused; cancel empties the queue and returns. */
static void test_discard_bad_and_cancel(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(vt_ctier_mover_discard(f->mover, 1, PAGE), -EINVAL);
	assert_int_equal(vt_ctier_mover_discard(f->mover, 0, PAGE + 1), -EINVAL);
	assert_int_equal(vt_ctier_mover_discard(f->mover, NPAGES * PAGE, PAGE), -EINVAL);
	assert_int_equal(vt_ctier_mover_discard(f->mover, PAGE, NPAGES * PAGE), -EINVAL);
	assert_int_equal(vt_ctier_mover_discard(f->mover, 0, 0), 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(vt_ctier_mover_discard(f->mover, (uint64_t)i * 16 * PAGE,
							16 * PAGE), 0);
	vt_ctier_mover_discard_cancel(f->mover);
	assert_int_equal(vt_ctier_mover_discards_pending(f->mover), 0);
	/* whatever was discarded reads zeros; the rest is intact */
	for (uint64_t p = 0; p < NPAGES; p++) {
		static const uint8_t zero[PAGE];

		if (!page_ok(f, p))
			assert_memory_equal(f->map + p * PAGE, zero, PAGE);
	}
}

/* From one compressed tier to the next: every page moves, none is lost. */
static void test_retier(void **state)
{
	struct fixture *f = *state;
	struct vt_store_tier_stats ts[2];

	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES * PAGE, 0), 0);
	wait_idle(f);
	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES * PAGE, 1), 0);
	wait_idle(f);
	assert_int_equal(vt_store_stats(f->store, ts, 2), 2);
	assert_int_equal(ts[0].pages, 0);
	assert_int_equal(ts[1].pages, NPAGES * 3 / 4);
	/* asked again: nothing to do */
	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES * PAGE, 1), 0);
	wait_idle(f);
	assert_int_equal(vt_store_stats(f->store, ts, 2), 2);
	assert_int_equal(ts[1].pages, NPAGES * 3 / 4);
	/* an eviction into the faster tier leaves the colder pages where they are */
	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES * PAGE, 0), 0);
	wait_idle(f);
	assert_int_equal(vt_store_stats(f->store, ts, 2), 2);
	assert_int_equal(ts[0].pages, 0);
	assert_int_equal(ts[1].pages, NPAGES * 3 / 4);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
}

static sigjmp_buf sigbus_jmp;
static volatile int sigbus_code;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	sigbus_code = si->si_code;
	siglongjmp(sigbus_jmp, 1);
}

/* Read the first byte of @page as a vCPU would: the si_code of a SIGBUS, or 0. */
static int touch_page(struct fixture *f, uint64_t page, uint8_t *byte)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO }, old;

	sigbus_code = 0;
	assert_int_equal(sigaction(SIGBUS, &sa, &old), 0);
	if (!sigsetjmp(sigbus_jmp, 1))
		*byte = *(volatile uint8_t *)(f->map + page * PAGE);
	assert_int_equal(sigaction(SIGBUS, &old, NULL), 0);
	return sigbus_code;
}

/*
 * The SIGBUS of a poisoned page: BUS_MCEERR_AR, or BUS_ADRERR from a kernel
 * built without CONFIG_MEMORY_FAILURE (as the 6.18 kernel of our build host).
 */
static bool memory_error(int si_code)
{
	return si_code == BUS_MCEERR_AR || si_code == BUS_ADRERR;
}

/* Flip bytes of the first data a tier's pool file holds (its only page). */
static void corrupt_pool(struct fixture *f, const char *name)
{
	g_autofree char *path = g_build_filename(f->dir, name, NULL);
	uint8_t buf[PAGE];
	int fd = open(path, O_RDWR);
	off_t at;

	assert_true(fd >= 0);
	at = lseek(fd, 0, SEEK_DATA);
	assert_true(at >= 0);
	assert_int_equal(pread(fd, buf, sizeof(buf), at), sizeof(buf));
	for (unsigned int i = 8; i < 40; i++)
		buf[i] ^= 0x5a;
	assert_int_equal(pwrite(fd, buf, sizeof(buf), at), sizeof(buf));
	close(fd);
}

/* Skip without UFFDIO_POISON; else @page alone in tier 0's pool, its copy damaged. */
static void store_damaged(struct fixture *f, uint64_t page)
{
	if (!(f->ram.ioctls & (1ull << 0x08))) {	/* _UFFDIO_POISON, Linux 6.6 */
		fprintf(stderr, "# skip: this kernel's userfaultfd has no UFFDIO_POISON\n");
		skip();
	}
	assert_int_equal(vt_ctier_mover_evict(f->mover, page * PAGE, PAGE, 0), 0);
	wait_idle(f);
	corrupt_pool(f, "pool-0");
}

/* The mover's stats once a page was poisoned (counted just after the wake-up). */
static void wait_poisoned(struct fixture *f, struct vt_ctier_mover_stats *st)
{
	for (int i = 0; i < 30000; i++) {
		vt_ctier_mover_get_stats(f->mover, st);
		if (st->poisoned)
			return;
		g_usleep(1000);
	}
}

/*
 * A stored copy that fails its checksum is never handed out: the faulting
 * thread gets a memory error (SIGBUS), not zeros, not the damaged bytes, and
 * the other stored pages still come back intact. The eviction left a uffd-wp
 * marker where the page was, which UFFDIO_POISON does not replace: taken for
 * a page that is there, the thread was woken and read zeros.
 */
static void test_poison(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	uint8_t byte = 0xee;

	/* page 2 alone in tier 0's pool, then page 6 next to it */
	store_damaged(f, 2);
	assert_int_equal(vt_ctier_mover_evict(f->mover, 6 * PAGE, PAGE, 0), 0);
	wait_idle(f);
	assert_false(present(f, 2));
	assert_false(present(f, 6));

	assert_true(memory_error(touch_page(f, 2, &byte)));
	assert_int_equal(byte, 0xee);
	/* poisoned for good: a second touch does not ask the agent again */
	assert_true(memory_error(touch_page(f, 2, &byte)));
	wait_poisoned(f, &st);
	assert_int_equal(st.poisoned, 1);
	assert_int_equal(st.poison_unsupported, 0);
	assert_int_equal(vt_store_tier_of(f->store, 2), 0);	/* kept: never zero-filled */
	assert_true(page_ok(f, 6));
}

/*
 * A poisoned page stays poisoned when a first touch next to it fills its
 * window with zeros (fault-around): the zeros went over the poison, and the
 * guest read zeros where its data was lost.
 */
static void test_poison_outlives_fault_around(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	static const uint8_t zero[PAGE];
	uint8_t byte = 0xee;

	/* page 2, damaged in the store, poisoned by its fault */
	store_damaged(f, 2);
	assert_true(memory_error(touch_page(f, 2, &byte)));
	wait_poisoned(f, &st);
	assert_int_equal(st.poisoned, 1);
	/* page 5 a hole never stored: its first touch fills 0..15 with zeros */
	assert_int_equal(fallocate(f->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   5 * PAGE, PAGE), 0);
	assert_memory_equal(f->map + 5 * PAGE, zero, PAGE);
	assert_true(present(f, 4) && present(f, 5));
	/* but not over the poison: page 2 is still a memory error, never zeros */
	byte = 0xee;
	assert_true(memory_error(touch_page(f, 2, &byte)));
	assert_int_equal(byte, 0xee);
	assert_false(present(f, 2));
}

/* A vCPU of test_churn: sweeps the blocks of 8 pages it owns (block % 3 == owner). */
struct churner {
	struct fixture *f;
	unsigned int owner;	/* 0, 1: reads and writes its pages; 2: reads only (two of them) */
	uint64_t sweeps, bad;
	bool stop;		/* atomic */
};

static void *churner_main(void *opaque)
{
	struct churner *c = opaque;
	uint64_t x = c->owner * 0x9e3779b97f4a7c15ull + 1;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		for (uint64_t p = 0; p < NPAGES; p++) {
			if ((p / 8) % 3 != c->owner)
				continue;
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			if (c->owner < 2 && x % 4 == 0)
				write_page(c->f, p, c->f->version[p] + 1);
			else if (!page_ok(c->f, p))
				c->bad++;
		}
		__atomic_add_fetch(&c->sweeps, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/*
 * vCPUs read their pages in order (stored faults in order, on the same pages
 * from two readers) and write others, while the mover evicts, moves and
 * fetches the whole backend, in runs and in bulk spans that serve faults
 * meanwhile: every page read holds its latest write, and so does every page
 * at the end.
 */
static void test_churn(void **state)
{
	struct fixture *f = *state;
	struct churner c[4] = { { .f = f, .owner = 0 }, { .f = f, .owner = 1 },
				{ .f = f, .owner = 2 }, { .f = f, .owner = 2 } };
	struct vt_ctier_mover_stats st;
	pthread_t t[4];

	for (unsigned int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churner_main, &c[i]), 0);
	/* every vCPU has swept its pages once before the mover starts */
	for (unsigned int i = 0; i < 4; i++)
		for (int k = 0; k < 30000 && !__atomic_load_n(&c[i].sweeps, __ATOMIC_ACQUIRE); k++)
			g_usleep(1000);
	for (unsigned int round = 0; round < 24; round++) {
		unsigned int tier = round % 2;

		if (round % 3 == 0)
			assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES * PAGE, tier), 0);
		else if (round % 3 == 1)	/* half a backend: faults on the other half served */
			assert_int_equal(vt_ctier_mover_evict_bulk(f->mover, tier * NPAGES / 2 * PAGE,
								   NPAGES / 2 * PAGE, tier), 0);
		else
			assert_int_equal(vt_ctier_mover_fetch(f->mover, (round % 4) * NPAGES / 4 * PAGE,
							      NPAGES / 4 * PAGE), 0);
		wait_idle(f);
	}
	/* all stopped before any is judged: a failed assertion unmaps their pages */
	for (unsigned int i = 0; i < 4; i++)
		__atomic_store_n(&c[i].stop, true, __ATOMIC_RELEASE);
	for (unsigned int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (unsigned int i = 0; i < 4; i++)
		assert_int_equal(c[i].bad, 0);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
	vt_ctier_mover_get_stats(f->mover, &st);
	assert_true(st.faults_stored > 0);	/* the vCPUs met the store */
	fprintf(stderr, "# churn: sweeps %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		", evicted %" PRIu64 ", faults_stored %" PRIu64 ", faults_zero %" PRIu64
		", span_faults %" PRIu64 ", evict_busy %" PRIu64 ", stored_ahead %" PRIu64 "\n",
		c[0].sweeps, c[1].sweeps, c[2].sweeps, c[3].sweeps, st.evicted, st.faults_stored,
		st.faults_zero, st.span_faults, st.evict_busy, st.stored_ahead);
}

/*
 * A guest reading a stored range back in order (verifying its memory after
 * tiering): each fault in order serves the stored pages after it too
 * (store-ahead), so far fewer faults than pages, and every page reads back
 * with the checksum it had before it was stored.
 */
static void test_stored_read_ahead(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	struct vt_store_tier_stats ts;
	static uint32_t crc[NPAGES];
	uint64_t stored = NPAGES * 3 / 4;	/* the random quarter stays */

	for (uint64_t p = 0; p < NPAGES; p++)
		crc[p] = vt_crc32c(f->map + p * PAGE, PAGE);
	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES * PAGE, 0), 0);
	wait_idle(f);
	assert_int_equal(present_pages(f), NPAGES - stored);
	for (uint64_t p = 0; p < NPAGES; p++) {
		assert_int_equal(vt_crc32c(f->map + p * PAGE, PAGE), crc[p]);
		assert_true(page_ok(f, p));
	}
	wait_stored_back(f, &st, stored);
	assert_int_equal(st.faults_stored + st.stored_ahead, stored);
	/* windows of 16, 32, then 64 KiB: about a fault in 16 pages, not one a page */
	assert_true(st.stored_ahead > 0);
	assert_in_range(st.faults_stored, 2, stored / 8);
	assert_int_equal(present_pages(f), NPAGES);
	assert_int_equal(vt_store_stats(f->store, &ts, 1), 1);
	assert_int_equal(ts.pages, 0);
	assert_int_equal(ts.bad_checksum, 0);
}

/*
 * Evict the backend (the random quarter stays), read every page back in the
 * order @page_at gives (the i-th page read), each as it was; the stats once
 * every stored page came back.
 */
static void read_back(struct fixture *f, uint64_t (*page_at)(uint64_t i),
		      struct vt_ctier_mover_stats *st)
{
	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES * PAGE, 0), 0);
	wait_idle(f);
	for (uint64_t i = 0; i < NPAGES; i++)
		assert_true(page_ok(f, page_at(i)));
	wait_stored_back(f, st, NPAGES * 3 / 4);
	assert_int_equal(st->faults_stored + st->stored_ahead, NPAGES * 3 / 4);
	/* the mover had nothing to do: every stored fault was served with it idle */
	assert_int_equal(st->idle_fault_ns.count, st->faults_stored);
}

/* 0, 512, 1, 513, ...: two vCPUs each reading its half */
static uint64_t interleaved_page(uint64_t i)
{
	return i / 2 + (i % 2) * (NPAGES / 2);
}

/* 0, 64, 128, ..., 960, 1, 65, ...: VT_CTIER_AHEAD_STREAMS readers, each its share */
static uint64_t streams_page(uint64_t i)
{
	G_STATIC_ASSERT(NPAGES % VT_CTIER_AHEAD_STREAMS == 0);
	return i / VT_CTIER_AHEAD_STREAMS +
	       (i % VT_CTIER_AHEAD_STREAMS) * (NPAGES / VT_CTIER_AHEAD_STREAMS);
}

/* 992, 960, ..., 0, 993, 961, ...: 32 pages apart from the top down, then one further */
static uint64_t out_of_order_page(uint64_t i)
{
	G_STATIC_ASSERT(NPAGES / 32 > VT_CTIER_AHEAD_STREAMS);
	return (NPAGES / 32 - 1 - i % (NPAGES / 32)) * 32 + i / (NPAGES / 32);
}

/*
 * Two streams read back in turn: each fault follows its own stream's last
 * one, so both are served ahead, about a fault in 16 stored pages.
 */
static void test_read_back_interleaved(void **state)
{
	struct vt_ctier_mover_stats st;

	read_back(*state, interleaved_page, &st);
	assert_in_range(st.faults_stored, 2, NPAGES * 3 / 4 / 8);
}

/*
 * As many streams in turn as are followed: each fault follows its own
 * stream's last one, so every stream is served ahead.
 */
static void test_read_back_streams(void **state)
{
	struct vt_ctier_mover_stats st;

	read_back(*state, streams_page, &st);
	assert_in_range(st.faults_stored, VT_CTIER_AHEAD_STREAMS, NPAGES * 3 / 4 / 4);
}

/*
 * Faults that follow no stream fill nothing ahead, though the pages after
 * each are stored: a fault for every stored page, none served ahead. (32
 * readers in turn, more than VT_CTIER_AHEAD_STREAMS: each stream was taken
 * over by others before its next fault.)
 */
static void test_read_back_out_of_order(void **state)
{
	struct vt_ctier_mover_stats st;

	read_back(*state, out_of_order_page, &st);
	assert_int_equal(st.stored_ahead, 0);
}

/*
 * A damaged copy inside a read-ahead window: the window stops there (the
 * stored pages after it stay stored), the damaged page is not served and
 * stays stored, and its own fault reports the damage as ever (a memory
 * error); every page before it and after it reads back right.
 */
static void test_read_ahead_stops_at_damaged(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	struct vt_store_tier_stats ts;
	static uint32_t crc[NPAGES];
	uint64_t bad = 10, n = 64;	/* text-like: compressed, alone in the pool first */
	uint8_t byte = 0xee;

	for (uint64_t p = 0; p < n; p++)
		crc[p] = vt_crc32c(f->map + p * PAGE, PAGE);
	assert_int_equal(vt_ctier_mover_evict(f->mover, bad * PAGE, PAGE, 0), 0);
	wait_idle(f);
	corrupt_pool(f, "pool-0");
	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, n * PAGE, 0), 0);
	wait_idle(f);
	/*
	 * read in order up to it: faults at 0 (not in order), 1 (2..5 ahead) and
	 * 6, whose 32 KiB window (7..14) reaches page 10
	 */
	for (uint64_t p = 0; p < bad; p++) {
		assert_int_equal(vt_crc32c(f->map + p * PAGE, PAGE), crc[p]);
		assert_true(page_ok(f, p));
	}
	wait_stored_back(f, &st, bad - bad / 4);
	assert_int_equal(st.faults_stored + st.stored_ahead, bad - bad / 4);
	assert_true(st.stored_ahead > 0);
	/*
	 * the window read its copy, found it damaged and left it where it was,
	 * uncounted: bad_checksum counts the damaged copies faults met
	 */
	assert_int_equal(vt_store_stats(f->store, &ts, 1), 1);
	assert_true(ts.gets > 0);
	assert_int_equal(ts.bad_checksum, 0);
	assert_int_equal(vt_store_tier_of(f->store, bad), 0);
	assert_false(present(f, bad));
	assert_int_equal(st.poisoned, 0);
	/* and went no further: the stored pages after it wait for their faults */
	for (uint64_t p = bad + 2; p < bad + 5; p++) {
		assert_int_equal(vt_store_tier_of(f->store, p), 0);
		assert_false(present(f, p));
	}
	if (f->ram.ioctls & (1ull << 0x08)) {	/* _UFFDIO_POISON: else the vCPU would wait */
		assert_true(memory_error(touch_page(f, bad, &byte)));
		assert_int_equal(byte, 0xee);
		for (int i = 0; i < 30000 && !st.poisoned; i++) {
			g_usleep(1000);
			vt_ctier_mover_get_stats(f->mover, &st);
		}
		assert_int_equal(st.poisoned, 1);
		assert_int_equal(vt_store_tier_of(f->store, bad), 0);	/* kept: never zero-filled */
		/* its own fault met it: counted once */
		assert_int_equal(vt_store_stats(f->store, &ts, 1), 1);
		assert_int_equal(ts.bad_checksum, 1);
	} else {
		fprintf(stderr, "# no UFFDIO_POISON: the damaged page's own fault not tried\n");
	}
	for (uint64_t p = bad + 1; p < NPAGES; p++) {
		if (p < n)
			assert_int_equal(vt_crc32c(f->map + p * PAGE, PAGE), crc[p]);
		assert_true(page_ok(f, p));
	}
}

/*
 * A read-ahead window that reaches a bulk span being stored stops at its
 * start: the span's pages are still there until its commit punches them, so
 * a copy taken out of the store there would leave the page with nothing
 * once punched. A vCPU reads the stored pages just before the span, in
 * order, while the span is stored (again, as in
 * test_span_serves_faults_elsewhere, until its faults were served during
 * the span); every page of the span is in its tier, every page reads right.
 */
static void test_read_ahead_stops_at_span(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_mover_stats st;
	uint64_t q = NPAGES / 4, span = NPAGES - q, faults;
	int attempt;

	for (attempt = 0; attempt < 50; attempt++) {
		/* its windows: 16, 32, 64, then 64 KiB reaching 2 pages into the span (5 faults) */
		struct reader r = { .f = f, .from = q - 48, .to = q };

		assert_int_equal(vt_ctier_mover_fetch(f->mover, q * PAGE, span * PAGE), 0);
		assert_int_equal(vt_ctier_mover_evict(f->mover, 0, q * PAGE, 0), 0);
		wait_idle(f);
		vt_ctier_mover_get_stats(f->mover, &st);
		faults = st.span_faults;
		read_during_span(f, &r, q, span, &st);
		assert_true(st.stored_ahead > 0);
		/*
		 * before any read of the span: each of its pages in the store, or
		 * back in the memfd (a window that came after the commit), never
		 * neither (a copy taken out before the commit punched its page)
		 */
		for (uint64_t p = q; p < NPAGES; p++) {
			int tier = vt_store_tier_of(f->store, p);

			assert_true(tier == (p % 4 == 3 ? -ENOENT : 1) || (tier < 0 && p < q + 16));
			assert_true(tier >= 0 || present(f, p));
		}
		if (st.span_faults - faults >= 5)
			break;
	}
	assert_true(attempt < 50);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_true(page_ok(f, p));
}

/*
 * A read-ahead window that reaches a page on a remote tier stops there
 * (reading it is a round trip to a server): the remote pages wait for their
 * own faults, which serve them from the servers as ever. The fixture's
 * mover and store are replaced by a store whose tier 1 is on two memory
 * servers of this process.
 */
static void test_read_ahead_stops_at_remote(void **state)
{
	struct fixture *f = *state;
	struct vt_ctier_spec spec[2] = {
		{ .name = "lz4", .codec = VT_CODEC_LZ4, .pool = VT_POOL_ZSMALLOC,
		  .medium = VT_MEDIUM_NODE, .node = 0, .max_stored_pct = 75 },
		{ .name = "far", .codec = VT_CODEC_LZ4, .pool = VT_POOL_ZSMALLOC,
		  .medium = VT_MEDIUM_REMOTE, .node = -1, .max_stored_pct = 75 },
	};
	struct vt_store_key key = { .backend_id = "mem0", .size_bytes = NPAGES * PAGE,
				    .page_size = PAGE };
	struct vtier_handoff_hello hello = fake_qemu_hello(&f->ram, "mem0", 1);
	struct vt_ctier_mover_stats st;
	struct server srv[2];
	struct vt_rc_config cfg;
	struct vt_pager pager;
	static uint32_t crc[NPAGES];
	uint64_t near = 12, far = 32, ahead;	/* pages [0, 12) near, [12, 32) far */
	char why[300];

	vt_ctier_mover_stop(f->mover);
	vt_store_close(f->store);
	vt_store_destroy(f->dir);
	for (unsigned int k = 0; k < 2; k++)
		server_start(&srv[k], k);
	servers_config(srv, 2, &cfg);
	assert_int_equal(vt_store_open(f->dir, &key, spec, 2, true, &f->store, why, sizeof(why)),
			 0);
	if (vt_store_remote_attach(f->store, 1, &cfg, NULL, why, sizeof(why)))
		fail_msg("vt_store_remote_attach: %s", why);
	assert_int_equal(vt_pager_open(&pager, &hello, dup(f->memfd), dup(f->ram.uffd)), 0);
	assert_int_equal(vt_ctier_mover_start(&pager, f->store, -1, NULL, NULL, &f->mover), 0);

	for (uint64_t p = 0; p < far; p++)
		crc[p] = vt_crc32c(f->map + p * PAGE, PAGE);
	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, near * PAGE, 0), 0);
	assert_int_equal(vt_ctier_mover_evict(f->mover, near * PAGE, (far - near) * PAGE, 1), 0);
	wait_idle(f);
	vt_ctier_mover_get_stats(f->mover, &st);
	assert_int_equal(st.evicted, far * 3 / 4);
	/* faults at 0, 1 (2..5 ahead) and 6, whose 32 KiB window (7..14) reaches page 12 */
	for (uint64_t p = 0; p < near; p++) {
		assert_int_equal(vt_crc32c(f->map + p * PAGE, PAGE), crc[p]);
		assert_true(page_ok(f, p));
	}
	wait_stored_back(f, &st, near * 3 / 4);
	assert_int_equal(st.faults_stored + st.stored_ahead, near * 3 / 4);
	assert_true(st.stored_ahead > 0);
	/* it stopped at the first remote page: those in the window wait for their faults */
	for (uint64_t p = near; p < near + 3; p++) {
		assert_int_equal(vt_store_tier_of(f->store, p), 1);
		assert_false(present(f, p));
	}
	/* which the servers answer, a fault each: none is served ahead */
	ahead = st.stored_ahead;
	for (uint64_t p = near; p < NPAGES; p++) {
		if (p < far)
			assert_int_equal(vt_crc32c(f->map + p * PAGE, PAGE), crc[p]);
		assert_true(page_ok(f, p));
	}
	for (uint64_t p = near; p < far; p++) {	/* dropped after the reader was woken */
		for (int i = 0; i < 10000 && vt_store_tier_of(f->store, p) >= 0; i++)
			g_usleep(1000);
		assert_int_equal(vt_store_tier_of(f->store, p), -ENOENT);
	}
	vt_ctier_mover_get_stats(f->mover, &st);
	assert_int_equal(st.stored_ahead, ahead);
	vt_ctier_mover_stop(f->mover);
	f->mover = NULL;
	for (unsigned int k = 0; k < 2; k++)
		server_stop(&srv[k]);
}

/* Orders outside the backend or unaligned are refused. */
static void test_bad_orders(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(vt_ctier_mover_evict(f->mover, 1, PAGE, 0), -EINVAL);
	assert_int_equal(vt_ctier_mover_evict(f->mover, 0, NPAGES * PAGE + PAGE, 0), -EINVAL);
	assert_int_equal(vt_ctier_mover_fetch(f->mover, NPAGES * PAGE, PAGE), -EINVAL);
	assert_int_equal(vt_ctier_mover_evict(f->mover, UINT64_MAX & ~(PAGE - 1), PAGE * 2, 0),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_evict_and_fault_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writes_race_eviction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bulk_one_span, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bulk_spans_race_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bulk_span_of_tiers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bulk_span_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_span_serves_faults_elsewhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_fills_punched_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reads_through_store, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reads_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reads_same_crc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reads_not_evicted_twice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_map, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_map_never_lies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fetch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_orders, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_fault_around, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retier, setup, teardown),
		cmocka_unit_test_setup_teardown(test_poison, setup, teardown),
		cmocka_unit_test_setup_teardown(test_poison_outlives_fault_around, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stored_read_ahead, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_back_interleaved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_back_streams, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_back_out_of_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_ahead_stops_at_damaged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_ahead_stops_at_span, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_ahead_stops_at_remote, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discard, setup, teardown),
		cmocka_unit_test_setup_teardown(test_churn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discard_bad_and_cancel, setup, teardown),
	};

	/* one test, or those a pattern names, again and again: a soak */
	if (g_getenv("VT_TEST_FILTER"))
		cmocka_set_test_filter(g_getenv("VT_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
