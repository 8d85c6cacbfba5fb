// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A VM's hint reader (guestchan/hint_reader.c) on a region in ordinary memory,
 * with this file playing the guest and the VM: a FREE range is discarded at
 * its hva before the guest gets its ack, and the ack waits while a discard is
 * in progress; observe mode only counts; COLD ages chunks the host does not
 * see hot and is refused on a hot one; HOT and DEFLATE never move anything;
 * the CPU cap stops reading; closing cancels queued discards before the ack.
 */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "hint_reader.h"

#define REGION (64u << 10)		/* 1024 records */
#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define CHUNK (2 * MIB)
#define HVA0 0x7f0000000000ull		/* where "QEMU" maps the first GiB */
#define HVA1 0x7f0080000000ull		/* ... and the GiB at 4 GiB */

static const struct vt_hint_map map[] = {
	{ .gpa = 0, .len = GIB, .hva = HVA0 },
	{ .gpa = 4 * GIB, .len = GIB, .hva = HVA1 },
};

struct call {
	uint64_t hva;
	uint64_t len;
	uint32_t cons_then;	/* the host's consumer index when the discard was asked */
};

struct fix {
	int fd;
	uint8_t *mem;
	struct vtier_guest_host *host;
	struct vtier_guest_guest *guest;
	struct vtier_guest_hint *ring;
	uint32_t prod;
	struct vt_hint_reader *r;
	struct vt_mtm *mtm;
	struct vt_hint_env env;
	int discard_ret;		/* what discard() answers */
	unsigned int pending;
	unsigned int cancels;
	struct call calls[64];
	unsigned int n_calls;
};

static uint64_t cpu_clock;

/* Each look at the clock costs a millisecond. */
static uint64_t fake_cpu_ns(void)
{
	return cpu_clock += 1000000;
}

static uint32_t host_cons(struct fix *f)
{
	return le32toh(__atomic_load_n(&f->host->cons, __ATOMIC_ACQUIRE));
}

static int fake_discard(void *opaque, uint64_t hva, uint64_t len)
{
	struct fix *f = opaque;

	assert_true(f->n_calls < 64);
	f->calls[f->n_calls++] = (struct call){ hva, len, host_cons(f) };
	if (f->discard_ret == 1)
		f->pending++;
	return f->discard_ret;
}

static unsigned int fake_pending(void *opaque)
{
	return ((struct fix *)opaque)->pending;
}

static void fake_cancel(void *opaque)
{
	struct fix *f = opaque;

	f->cancels++;
	f->pending = 0;
}

static void push(struct fix *f, uint16_t kind, uint16_t flags, uint64_t gpa, uint64_t size,
		 uint64_t arg)
{
	struct vtier_guest_hint *r = &f->ring[f->prod & 1023];

	r->seq = htole32(f->prod);
	r->kind = htole16(kind);
	r->flags = htole16(flags);
	r->gpa = htole64(gpa);
	r->size_bytes = htole64(size);
	r->arg = htole64(arg);
	f->prod++;
	__atomic_store_n(&f->guest->prod, htole32(f->prod), __ATOMIC_RELEASE);
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct vt_range hva[2] = { { HVA0, HVA0 + GIB }, { HVA1, HVA1 + GIB } };
	char err[200] = "";

	/* the region's file, as QEMU's; this test maps it to play the guest */
	f->fd = memfd_create("vtier-hints-test", MFD_CLOEXEC);
	assert_true(f->fd >= 0);
	assert_int_equal(ftruncate(f->fd, REGION), 0);
	f->mem = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	assert_true(f->mem != MAP_FAILED);
	f->host = (void *)(f->mem + VTIER_GUEST_HOST_OFFSET);
	f->guest = (void *)(f->mem + VTIER_GUEST_GUEST_OFFSET);
	f->ring = (void *)(f->mem + VTIER_GUEST_RING_OFFSET);
	f->guest->abi_version = htole16(VTIER_GUEST_ABI_VERSION);
	f->guest->header_size = htole16(sizeof(*f->guest));
	f->guest->magic = htole32(VTIER_GUEST_GUEST_MAGIC);
	/* every chunk on tier 0, cold (EMA 0) */
	f->mtm = vt_mtm_new(hva, 2, CHUNK, 4096, 3);
	for (unsigned int i = 0; i < f->mtm->chunks->len; i++) {
		uint32_t on0[3] = { CHUNK / 4096, 0, 0 };

		vt_mtm_residency_set(f->mtm, i, on0, CHUNK / 4096);
	}
	f->env = (struct vt_hint_env){
		.map = map, .n_map = 2, .mtm = f->mtm, .hot_threshold = 0.05, .cold_age = 3,
		.act = true, .cpu_budget_ns = UINT64_MAX, .cpu_ns = fake_cpu_ns, .now_ns = 1,
		.discard = fake_discard, .pending = fake_pending, .cancel = fake_cancel,
		.opaque = f,
	};
	assert_int_equal(vt_hint_reader_open(&f->r, f->fd, REGION, map, 2, NULL, 0, err,
					     sizeof(err)), 0);
	assert_int_equal(le32toh(f->host->flags),
			 VTIER_GUEST_HOST_ACTIVE | VTIER_GUEST_HOST_FREE | VTIER_GUEST_HOST_COLD |
			 VTIER_GUEST_HOST_RECLAIM);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	vt_hint_reader_close(f->r, &f->env);
	vt_mtm_free(f->mtm);
	munmap(f->mem, REGION);
	close(f->fd);
	free(f);
	return 0;
}

static struct vt_hint_stats stats(struct fix *f)
{
	struct vt_hint_stats s;

	vt_hint_reader_stats(f->r, &s);
	return s;
}

static struct vt_mtm_chunk *chunk_at(struct fix *f, uint64_t hva)
{
	return &g_array_index(f->mtm->chunks, struct vt_mtm_chunk, (hva - HVA0) / CHUNK);
}

/*
 * A FREE range queued for discard: the guest gets no ack until the discard
 * is done, however many windows that takes; nothing more is read meanwhile.
 */
static void test_free_acked_only_after_discard(void **state)
{
	struct fix *f = *state;

	f->discard_ret = 1;
	push(f, VTIER_GUEST_FREE, 0, 4 * GIB + 6 * MIB, 4 * MIB, 0);
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(f->n_calls, 1);
	assert_int_equal(f->calls[0].hva, HVA1 + 6 * MIB);
	assert_int_equal(f->calls[0].len, 4 * MIB);
	assert_int_equal(f->calls[0].cons_then, 0);
	assert_int_equal(host_cons(f), 0);
	push(f, VTIER_GUEST_FREE, 0, 10 * MIB, 2 * MIB, 0);
	vt_hint_reader_window(f->r, &f->env);
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(host_cons(f), 0);	/* still discarding */
	assert_int_equal(f->n_calls, 1);	/* and nothing more read */
	assert_int_equal(stats(f).ack_waits, 2);
	f->pending = 0;
	vt_hint_reader_window(f->r, &f->env);
	/* the first record acknowledged; the second read, discarded, waiting */
	assert_int_equal(f->n_calls, 2);
	assert_int_equal(f->calls[1].hva, HVA0 + 10 * MIB);
	assert_int_equal(f->calls[1].cons_then, 1);
	assert_int_equal(host_cons(f), 1);
	f->pending = 0;
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(host_cons(f), 2);
	assert_int_equal(stats(f).discard_bytes, 6 * MIB);
	assert_int_equal(stats(f).ch.accepted[VTIER_GUEST_FREE], 2);
}

/* try_ack: the ack goes out as soon as the discards are done, not a window later. */
static void test_try_ack(void **state)
{
	struct fix *f = *state;

	f->discard_ret = 1;
	push(f, VTIER_GUEST_FREE, 0, 0, 2 * MIB, 0);
	vt_hint_reader_window(f->r, &f->env);
	assert_false(vt_hint_reader_try_ack(f->r, &f->env));
	assert_int_equal(host_cons(f), 0);
	f->pending = 0;
	assert_true(vt_hint_reader_try_ack(f->r, &f->env));
	assert_int_equal(host_cons(f), 1);
	assert_true(vt_hint_reader_try_ack(f->r, &f->env));
	assert_int_equal(host_cons(f), 1);
}

/* A discard done at once (page-out) is acknowledged in the same window; a failed one too. */
static void test_free_sync_and_failed(void **state)
{
	struct fix *f = *state;

	f->discard_ret = 0;
	push(f, VTIER_GUEST_FREE, 0, 0, 2 * MIB, 0);
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(host_cons(f), 1);
	f->discard_ret = -ENOTSUP;
	push(f, VTIER_GUEST_FREE, 0, 2 * MIB, 2 * MIB, 0);
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(host_cons(f), 2);
	assert_int_equal(stats(f).discard_failed, 1);
	assert_int_equal(f->calls[1].cons_then, 1);
}

/* Observe mode: counted, never discarded, acknowledged. */
static void test_observe_only_counts(void **state)
{
	struct fix *f = *state;

	f->env.act = false;
	push(f, VTIER_GUEST_FREE, 0, 0, 8 * MIB, 0);
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(f->n_calls, 0);
	assert_int_equal(stats(f).observe_discard_bytes, 8 * MIB);
	assert_int_equal(host_cons(f), 1);
}

/* Ranges outside guest RAM (the hole between the pieces, across it, past it) do nothing. */
static void test_outside_ram(void **state)
{
	struct fix *f = *state;

	f->discard_ret = 0;
	push(f, VTIER_GUEST_FREE, 0, 2 * GIB, 4096, 0);
	push(f, VTIER_GUEST_FREE, 0, GIB - 4096, 8192, 0);
	push(f, VTIER_GUEST_FREE, 0, 5 * GIB, 4096, 0);
	push(f, VTIER_GUEST_COLD, VTIER_GUEST_HINT_CLEAN, 3 * GIB, 2 * MIB, 0);
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(f->n_calls, 0);
	assert_int_equal(stats(f).ch.rejected[VT_GHINT_R_RANGE], 4);
	assert_int_equal(host_cons(f), 4);
}

/*
 * COLD: chunks covered at least half, not hot, are due for the waterfall at
 * once; a range over a chunk the host sees hot is refused as contradicted.
 */
static void test_cold(void **state)
{
	struct fix *f = *state;

	chunk_at(f, HVA0 + 20 * MIB)->ema = 0.5;	/* the host sees it hot */
	chunk_at(f, HVA0 + 30 * MIB)->ema = 0.02;	/* warm, not hot */
	push(f, VTIER_GUEST_COLD, VTIER_GUEST_HINT_CLEAN, 18 * MIB, 4 * MIB, 0);	/* 18-22 */
	push(f, VTIER_GUEST_COLD, VTIER_GUEST_HINT_CLEAN, 30 * MIB, 2 * MIB, 1000);
	push(f, VTIER_GUEST_COLD, 0, 40 * MIB, MIB, 0);		/* half of a chunk */
	push(f, VTIER_GUEST_COLD, 0, 50 * MIB, MIB - 4096, 0);	/* less than half */
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(stats(f).ch.rejected[VT_GHINT_R_CONTRADICTED], 1);
	assert_int_equal(chunk_at(f, HVA0 + 18 * MIB)->cold_windows, 0);
	assert_int_equal(chunk_at(f, HVA0 + 30 * MIB)->cold_windows, 3);
	assert_int_equal(chunk_at(f, HVA0 + 40 * MIB)->cold_windows, 3);
	assert_int_equal(chunk_at(f, HVA0 + 50 * MIB)->cold_windows, 0);
	assert_int_equal(stats(f).cold_chunks, 2);
	assert_int_equal(stats(f).cold_hint_bytes, 2 * MIB + MIB + MIB - 4096);
	/* the other half of 50..52 later: due then */
	push(f, VTIER_GUEST_COLD, 0, 51 * MIB, MIB, 0);
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(chunk_at(f, HVA0 + 50 * MIB)->cold_windows, 3);
	assert_int_equal(f->n_calls, 0);
	assert_int_equal(host_cons(f), 5);
}

/*
 * The guest walks its frames again each poll and reports the same cache
 * again: a range reported twice covers no more of its chunk than once. A
 * chunk that telemetry has aged that far already keeps its age, uncounted;
 * one that is idle and younger gets exactly the waterfall's age.
 */
static void test_cold_counts_once(void **state)
{
	struct fix *f = *state;

	for (int k = 0; k < 4; k++)
		push(f, VTIER_GUEST_COLD, 0, 50 * MIB, MIB - 4096, 0);	/* less than half, 4 times */
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(stats(f).cold_hint_bytes, 4 * (MIB - 4096));
	assert_int_equal(chunk_at(f, HVA0 + 50 * MIB)->cold_windows, 0);
	assert_int_equal(stats(f).cold_chunks, 0);

	/* every chunk idle for 2 windows (EMA 0): 2 cold windows by telemetry */
	vt_mtm_observe(f->mtm, NULL, 0);
	vt_mtm_observe(f->mtm, NULL, 0);
	assert_int_equal(vt_mtm_cold_windows(f->mtm, chunk_at(f, HVA0 + 70 * MIB)), 2);
	push(f, VTIER_GUEST_COLD, 0, 70 * MIB, 2 * MIB, 0);
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(vt_mtm_cold_windows(f->mtm, chunk_at(f, HVA0 + 70 * MIB)), 3);
	assert_int_equal(stats(f).cold_chunks, 1);
	/* 3 more: 6 cold windows, past the age; a hint leaves it and counts nothing */
	for (int k = 0; k < 3; k++)
		vt_mtm_observe(f->mtm, NULL, 0);
	push(f, VTIER_GUEST_COLD, 0, 72 * MIB, 2 * MIB, 0);
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(vt_mtm_cold_windows(f->mtm, chunk_at(f, HVA0 + 72 * MIB)), 5);
	assert_int_equal(vt_mtm_cold_windows(f->mtm, chunk_at(f, HVA0 + 70 * MIB)), 6);
	assert_int_equal(stats(f).cold_chunks, 1);
}

/* No waterfall (cold_age 0: no compressed tier, placement=tco): COLD is only counted. */
static void test_cold_without_waterfall(void **state)
{
	struct fix *f = *state;

	f->env.cold_age = 0;
	push(f, VTIER_GUEST_COLD, 0, 40 * MIB, 2 * MIB, 0);
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(stats(f).cold_hint_bytes, 2 * MIB);
	assert_int_equal(chunk_at(f, HVA0 + 40 * MIB)->cold_windows, 0);
	assert_int_equal(stats(f).cold_chunks, 0);
}

/* HOT is not asked for; DEFLATE only counts; nothing is promoted or discarded. */
static void test_hot_and_deflate_move_nothing(void **state)
{
	struct fix *f = *state;

	f->discard_ret = 0;
	push(f, VTIER_GUEST_HOT, 0, 0, 2 * MIB, 10);
	vt_hint_reader_set_balloon(f->r, 64 * MIB);
	assert_int_equal(le64toh(f->host->balloon_target_pages), 64 * MIB / 4096);
	assert_int_equal(le32toh(f->host->reclaim_seq), 1);
	push(f, VTIER_GUEST_INFLATE, 0, 100 * MIB, 2 * MIB, 1);
	push(f, VTIER_GUEST_DEFLATE, 0, 100 * MIB, 2 * MIB, 1);
	push(f, VTIER_GUEST_DEFLATE, 0, 100 * MIB, 2 * MIB, 1);	/* more than inflated */
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(stats(f).ch.rejected[VT_GHINT_R_UNWANTED], 1);
	assert_int_equal(stats(f).ch.rejected[VT_GHINT_R_BALLOON], 1);
	assert_int_equal(stats(f).ch.accepted[VTIER_GUEST_DEFLATE], 1);
	assert_int_equal(f->n_calls, 1);		/* the INFLATE alone */
	assert_int_equal(f->calls[0].hva, HVA0 + 100 * MIB);
	assert_int_equal(stats(f).balloon_target_bytes, 64 * MIB);
	for (unsigned int i = 0; i < f->mtm->chunks->len; i++)
		assert_int_equal(g_array_index(f->mtm->chunks, struct vt_mtm_chunk, i).tier, 0);
}

/* The CPU cap: reading stops after the batch that went over it. */
static void test_cpu_cap(void **state)
{
	struct fix *f = *state;

	f->discard_ret = 0;
	for (int i = 0; i < 600; i++)
		push(f, VTIER_GUEST_HOT, 0, 0, 4096, 0);	/* cheap: refused as unwanted */
	f->env.cpu_budget_ns = 0;
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(host_cons(f), VT_HINT_BATCH);
	assert_int_equal(stats(f).cpu_capped, 1);
	assert_true(stats(f).cpu_ns_last > 0);
	f->env.cpu_budget_ns = UINT64_MAX;
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(host_cons(f), 600);
}

/* Closing with discards queued cancels them before the guest gets its ack. */
static void test_close_cancels_first(void **state)
{
	struct fix *f = *state;

	f->discard_ret = 1;
	push(f, VTIER_GUEST_FREE, 0, 0, 2 * MIB, 0);
	vt_hint_reader_window(f->r, &f->env);
	assert_int_equal(host_cons(f), 0);
	vt_hint_reader_close(f->r, &f->env);
	f->r = NULL;
	assert_int_equal(f->cancels, 1);
	assert_int_equal(host_cons(f), 1);
	assert_int_equal(le32toh(f->host->flags), 0);
}

/* Attach refuses a RAM map the channel cannot take. */
static void test_open_refuses(void **state)
{
	struct fix *f = *state;
	struct vt_hint_map many[65];
	struct vt_hint_reader *r;
	char err[200] = "";

	for (int i = 0; i < 65; i++)
		many[i] = (struct vt_hint_map){ (uint64_t)i * GIB, MIB, HVA0 };
	assert_int_equal(vt_hint_reader_open(&r, f->fd, REGION, many, 65, NULL, 0, err,
					     sizeof(err)), -EINVAL);
	assert_null(r);
	assert_int_equal(vt_hint_reader_open(&r, f->fd, REGION, map, 0, NULL, 0, err,
					     sizeof(err)), -EINVAL);
	assert_int_equal(vt_hint_reader_open(&r, f->fd, 5000, map, 2, NULL, 0, err,
					     sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "power of 2"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_free_acked_only_after_discard, setup, teardown),
		cmocka_unit_test_setup_teardown(test_try_ack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_sync_and_failed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_observe_only_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outside_ram, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cold, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cold_counts_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cold_without_waterfall, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hot_and_deflate_move_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cpu_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_cancels_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_refuses, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
