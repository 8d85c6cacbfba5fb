// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Host-wide DRAM arbitration (policy/host_share.c): min first, the hottest
 * bytes of all VMs next, a contested bin by weight, caps, the rate limit and
 * the dead band, VMs arriving and leaving, the budget held in every round.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "host_share.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
#define HOT (VT_MTM_BINS - 1)

/* No rate limit: the division alone. */
static struct vt_share_params free_params(uint64_t budget)
{
	return (struct vt_share_params){ .budget = budget, .step = UINT64_MAX, .deadband = 0 };
}

static struct vt_share_vm vm(uint64_t id, uint64_t ram, uint32_t weight)
{
	return (struct vt_share_vm){ .id = id, .ram_bytes = ram, .weight = weight };
}

static void round_ok(const struct vt_share_params *p, struct vt_share_vm *v, size_t n,
		     struct vt_share_out *out, struct vt_share_round *info)
{
	uint64_t sum = 0;

	assert_int_equal(vt_host_share_round(p, v, n, out, info), 0);
	for (size_t i = 0; i < n; i++)
		sum += out[i].allot;
	assert_true(sum <= p->budget);
	assert_int_equal(info->sum, sum);
}

/* Rounds until nothing changes: the allotments carried as prev. */
static void settle(const struct vt_share_params *p, struct vt_share_vm *v, size_t n,
		   struct vt_share_out *out, unsigned int rounds)
{
	struct vt_share_round info;

	for (unsigned int r = 0; r < rounds; r++) {
		round_ok(p, v, n, out, &info);
		for (size_t i = 0; i < n; i++)
			v[i].prev = out[i].allot;
	}
}

static void test_fair_equal_weights(void **state)
{
	struct vt_share_vm v[2] = { vm(1, 16 * GIB, 100), vm(2, 16 * GIB, 100) };
	struct vt_share_params p = free_params(8 * GIB);
	struct vt_share_out out[2];
	struct vt_share_round info;

	(void)state;
	v[0].hist_bytes[HOT] = 8 * GIB;
	v[1].hist_bytes[HOT] = 8 * GIB;
	round_ok(&p, v, 2, out, &info);
	assert_int_equal(out[0].allot, 4 * GIB);
	assert_int_equal(out[1].allot, 4 * GIB);
	assert_int_equal(out[0].why, VT_SHARE_EARNED);
	/* one wants less than half: the excess goes to the other */
	v[0].hist_bytes[HOT] = 1 * GIB;
	round_ok(&p, v, 2, out, &info);
	assert_int_equal(out[0].allot, 1 * GIB);
	assert_int_equal(out[1].allot, 7 * GIB);
}

static void test_weights_split_contested_bin(void **state)
{
	struct vt_share_vm v[3] = { vm(1, 16 * GIB, 100), vm(2, 16 * GIB, 300),
				    vm(3, 16 * GIB, 100) };
	struct vt_share_params p = free_params(10 * GIB);
	struct vt_share_out out[3];
	struct vt_share_round info;

	(void)state;
	/* bin HOT: 1 + 1 GiB fit whole; bin 12 (8 + 8 GiB) gets the 8 GiB left, 1:3 */
	v[0].hist_bytes[HOT] = 1 * GIB;
	v[1].hist_bytes[HOT] = 1 * GIB;
	v[0].hist_bytes[12] = 8 * GIB;
	v[1].hist_bytes[12] = 8 * GIB;
	v[2].hist_bytes[5] = 8 * GIB;	/* colder: nothing left for it */
	round_ok(&p, v, 3, out, &info);
	assert_int_equal(out[0].allot, 1 * GIB + 2 * GIB);
	assert_int_equal(out[1].allot, 1 * GIB + 6 * GIB);
	assert_int_equal(out[2].allot, 0);
	/* water-filling: the heavy one wants only 1 GiB of the bin, the light one takes the rest */
	v[1].hist_bytes[12] = 1 * GIB;
	round_ok(&p, v, 3, out, &info);
	assert_int_equal(out[1].allot, 2 * GIB);
	assert_int_equal(out[0].allot, 8 * GIB);
	assert_int_equal(out[2].allot, 0);
}

static void test_hot_small_beats_lukewarm_big(void **state)
{
	struct vt_share_vm v[2] = { vm(1, 256 * GIB, 10000), vm(2, 2 * GIB, 1) };
	struct vt_share_params p = free_params(4 * GIB);
	struct vt_share_out out[2];
	struct vt_share_round info;

	(void)state;
	v[0].hist_bytes[8] = 64 * GIB;	/* big, lukewarm, heavy */
	v[0].hist_bytes[0] = 192 * GIB;
	v[1].hist_bytes[17] = 1536 * MIB;	/* small, hot, light */
	v[1].hist_bytes[0] = 512 * MIB;
	round_ok(&p, v, 2, out, &info);
	assert_int_equal(out[1].allot, 1536 * MIB);
	assert_int_equal(out[0].allot, 4 * GIB - 1536 * MIB);
}

static void test_dram_max_caps_excess_to_others(void **state)
{
	struct vt_share_vm v[3] = { vm(1, 16 * GIB, 100), vm(2, 16 * GIB, 100),
				    vm(3, 16 * GIB, 100) };
	struct vt_share_params p = free_params(12 * GIB);
	struct vt_share_out out[3];
	struct vt_share_round info;

	(void)state;
	for (int i = 0; i < 3; i++)
		v[i].hist_bytes[HOT] = 8 * GIB;
	v[0].dram_max = 2 * GIB;
	round_ok(&p, v, 3, out, &info);
	assert_int_equal(out[0].allot, 2 * GIB);
	assert_int_equal(out[0].why, VT_SHARE_CAPPED);
	assert_int_equal(out[1].allot, 5 * GIB);
	assert_int_equal(out[2].allot, 5 * GIB);
	assert_int_equal(out[1].why, VT_SHARE_EARNED);
	/* dram_max 0 is the RAM: a VM never gets more than its RAM */
	v[0].dram_max = 0;
	v[0].ram_bytes = 1 * GIB;
	round_ok(&p, v, 3, out, &info);
	assert_int_equal(out[0].allot, 1 * GIB);
	assert_int_equal(out[1].allot + out[2].allot, 11 * GIB);
}

static void test_min_protected_while_used(void **state)
{
	struct vt_share_vm v[2] = { vm(1, 16 * GIB, 100), vm(2, 16 * GIB, 100) };
	struct vt_share_params p = free_params(8 * GIB);
	struct vt_share_out out[2];
	struct vt_share_round info;

	(void)state;
	v[0].dram_min = 4 * GIB;
	v[0].hist_bytes[2] = 6 * GIB;		/* lukewarm, used */
	v[0].hist_bytes[0] = 10 * GIB;
	v[1].hist_bytes[HOT] = 16 * GIB;	/* hotter: would take it all */
	round_ok(&p, v, 2, out, &info);
	assert_int_equal(out[0].allot, 4 * GIB);
	assert_int_equal(out[0].why, VT_SHARE_PROTECTED);
	assert_int_equal(out[0].protected_bytes, 4 * GIB);
	assert_int_equal(out[1].allot, 4 * GIB);
	/* uses only 1 GiB: holds only that */
	v[0].hist_bytes[2] = 1 * GIB;
	v[0].hist_bytes[0] = 15 * GIB;
	round_ok(&p, v, 2, out, &info);
	assert_int_equal(out[0].allot, 1 * GIB);
	assert_int_equal(out[1].allot, 7 * GIB);
	/* idle (all in bin 0): the min is released */
	v[0].hist_bytes[2] = 0;
	v[0].hist_bytes[0] = 16 * GIB;
	round_ok(&p, v, 2, out, &info);
	assert_int_equal(out[0].allot, 0);
	assert_int_equal(out[0].protected_bytes, 0);
	assert_int_equal(out[1].allot, 8 * GIB);
	/* the min covers its hottest bytes: a hot min earns nothing twice */
	v[0].hist_bytes[HOT] = 4 * GIB;
	v[0].hist_bytes[0] = 12 * GIB;
	round_ok(&p, v, 2, out, &info);
	assert_int_equal(out[0].allot, 4 * GIB);
	assert_int_equal(out[1].allot, 4 * GIB);
}

static void test_mins_above_budget_refused(void **state)
{
	struct vt_share_vm v[3] = { vm(1, 16 * GIB, 100), vm(2, 16 * GIB, 100),
				    vm(3, 16 * GIB, 100) };
	struct vt_share_params p = free_params(8 * GIB);
	struct vt_share_out out[3];
	struct vt_share_round info;
	char err[512] = "";

	(void)state;
	v[0].name = "web";
	v[0].dram_min = 6 * GIB;
	v[1].name = "db";
	v[1].dram_min = 4 * GIB;
	v[2].name = "batch";
	assert_int_equal(vt_host_share_check_mins(8 * GIB, -1, v, 3, err, sizeof(err)), -ERANGE);
	assert_non_null(strstr(err, "web 6442450944"));
	assert_non_null(strstr(err, "db 4294967296"));
	assert_null(strstr(err, "batch"));
	assert_non_null(strstr(err, "sum to 10737418240 bytes"));
	assert_non_null(strstr(err, "dram_budget of 8589934592 bytes"));
	assert_int_equal(vt_host_share_check_mins(10 * GIB, -1, v, 3, err, sizeof(err)), 0);
	/* a sum past 2^64 does not wrap into a small one */
	v[0].dram_min = UINT64_MAX - GIB;
	assert_int_equal(vt_host_share_check_mins(10 * GIB, -1, v, 3, err, sizeof(err)), -ERANGE);
	v[0].dram_min = 6 * GIB;
	/* the round, given it anyway, stays within the budget and says so */
	for (int i = 0; i < 3; i++)
		v[i].hist_bytes[HOT] = 16 * GIB;
	round_ok(&p, v, 3, out, &info);
	assert_true(info.mins_scaled);
	assert_int_equal(info.mins_sum, 10 * GIB);
	assert_int_equal(out[0].protected_bytes + out[1].protected_bytes, 8 * GIB - 1);
	assert_true(info.sum <= 8 * GIB);
	assert_int_equal(out[2].allot, 0);
}

static void test_rate_limit_and_dead_band(void **state)
{
	struct vt_share_vm v[1] = { vm(1, 16 * GIB, 100) };
	struct vt_share_params p = { .budget = 8 * GIB, .step = 1 * GIB, .deadband = 4 * MIB };
	struct vt_share_out out[1];
	struct vt_share_round info;

	(void)state;
	v[0].hist_bytes[HOT] = 6 * GIB;
	for (unsigned int r = 1; r <= 6; r++) {
		round_ok(&p, v, 1, out, &info);
		assert_int_equal(out[0].allot, r * GIB);
		assert_int_equal(out[0].wanted, 6 * GIB);
		assert_int_equal(out[0].why, r < 6 ? VT_SHARE_RATE_LIMITED : VT_SHARE_EARNED);
		v[0].prev = out[0].allot;
	}
	/* a change under the dead band is not made, either way */
	v[0].hist_bytes[HOT] = 6 * GIB + 3 * MIB;
	round_ok(&p, v, 1, out, &info);
	assert_int_equal(out[0].allot, 6 * GIB);
	v[0].hist_bytes[HOT] = 6 * GIB - 3 * MIB;
	round_ok(&p, v, 1, out, &info);
	assert_int_equal(out[0].allot, 6 * GIB);
	/* the dead band reached: made */
	v[0].hist_bytes[HOT] = 6 * GIB - 4 * MIB;
	round_ok(&p, v, 1, out, &info);
	assert_int_equal(out[0].allot, 6 * GIB - 4 * MIB);
	/* shrinking: by the step too */
	v[0].hist_bytes[HOT] = 1 * GIB;
	round_ok(&p, v, 1, out, &info);
	assert_int_equal(out[0].allot, 5 * GIB);
	assert_int_equal(out[0].why, VT_SHARE_RATE_LIMITED);
}

static void test_arrive_and_leave(void **state)
{
	struct vt_share_vm v[3] = { vm(1, 16 * GIB, 100), vm(2, 16 * GIB, 100),
				    vm(3, 16 * GIB, 100) };
	struct vt_share_params p = { .budget = 12 * GIB, .step = 512 * MIB, .deadband = 4 * MIB };
	struct vt_share_out out[3];
	struct vt_share_round info;
	unsigned int rounds;

	(void)state;
	for (int i = 0; i < 3; i++)
		v[i].hist_bytes[HOT] = 8 * GIB;
	v[2].dram_min = 2 * GIB;
	settle(&p, v, 2, out, 40);
	assert_int_equal(out[0].allot, 6 * GIB);
	assert_int_equal(out[1].allot, 6 * GIB);
	/*
	 * VM 3 arrives (prev 0) with a 2 GiB min: it grows by the step like any
	 * VM, and only as fast as the others give bytes up (the budget is full).
	 * It wants 2 GiB + a third of the 10 GiB left: 16/3 GiB, 11 steps.
	 */
	for (rounds = 0; rounds < 100; rounds++) {
		round_ok(&p, v, 3, out, &info);
		assert_true(out[2].allot - v[2].prev <= p.step);
		assert_true(out[2].allot <= out[2].wanted);
		for (int i = 0; i < 3; i++)
			v[i].prev = out[i].allot;
		if (out[2].allot == out[2].wanted && out[0].allot == out[0].wanted)
			break;
	}
	assert_int_equal(out[2].wanted, 2 * GIB + 10 * GIB / 3 + 1);
	assert_int_equal(out[0].allot, 10 * GIB / 3);
	assert_int_equal(out[1].allot, 10 * GIB / 3);
	assert_int_equal(rounds + 1, (out[2].wanted + p.step - 1) / p.step);
	/*
	 * VM 1 leaves: its bytes reach the others within ceil(delta / step)
	 * rounds, delta the most one of them gains (to 7 and 5 GiB: 5/3 GiB each).
	 */
	v[0] = v[2];
	for (rounds = 0; rounds < 100; rounds++) {
		round_ok(&p, v, 2, out, &info);
		for (int i = 0; i < 2; i++)
			v[i].prev = out[i].allot;
		if (out[0].allot == 7 * GIB && out[1].allot == 5 * GIB)
			break;
	}
	assert_int_equal(rounds + 1, (5 * GIB / 3 + p.step - 1) / p.step);
}

/*
 * A change is not reversed within share_hold rounds (noise in the demand, not
 * a need), by however much; after them, or with no hold, it is; growth toward
 * the min is never held.
 */
static void test_reversal_held(void **state)
{
	struct vt_share_params p = { .budget = 300 * MIB, .step = 32 * MIB, .deadband = 4 * MIB,
				     .hold = 10 };
	struct vt_share_vm v[2] = { vm(1, 512 * MIB, 100), vm(2, 512 * MIB, 100) };
	struct vt_share_out out[2];
	struct vt_share_round info;

	(void)state;
	/* a: 90 MiB in the hottest bin, raised to 100 two rounds ago; b: 400 MiB lukewarm */
	v[0].hist_bytes[HOT] = 90 * MIB;
	v[0].hist_bytes[0] = 422 * MIB;
	v[1].hist_bytes[10] = 400 * MIB;
	v[1].hist_bytes[0] = 112 * MIB;
	v[0].prev = 100 * MIB;
	v[0].last_change = 1;
	v[0].since_change = 2;
	v[1].prev = 200 * MIB;
	round_ok(&p, v, 2, out, &info);
	assert_int_equal(out[0].wanted, 90 * MIB);
	assert_int_equal(out[0].allot, 100 * MIB);	/* held */
	assert_int_equal(out[0].why, VT_SHARE_RATE_LIMITED);
	assert_int_equal(out[1].allot, 200 * MIB);	/* its growth waits for a's bytes */
	v[0].since_change = 10;
	round_ok(&p, v, 2, out, &info);
	assert_int_equal(out[0].allot, 90 * MIB);
	assert_int_equal(out[1].allot, 210 * MIB);
	v[0].since_change = 2;
	p.hold = 0;
	round_ok(&p, v, 2, out, &info);
	assert_int_equal(out[0].allot, 90 * MIB);
	/* a step or more the other way waits too */
	p.hold = 10;
	v[0].prev = 140 * MIB;
	v[1].prev = 160 * MIB;	/* (else the budget takes a down to what it wants) */
	round_ok(&p, v, 2, out, &info);
	assert_int_equal(out[0].allot, 140 * MIB);
	v[1].prev = 200 * MIB;
	/* lowered lately, a rise by less than a step waits... */
	v[0].prev = 80 * MIB;
	v[0].last_change = -1;
	round_ok(&p, v, 2, out, &info);
	assert_int_equal(out[0].allot, 80 * MIB);
	/* ... unless it is below its min */
	v[0].dram_min = 88 * MIB;
	round_ok(&p, v, 2, out, &info);
	assert_int_equal(out[0].allot, 90 * MIB);
}

static void test_growing_waits_for_shrinking(void **state)
{
	struct vt_share_vm v[3] = { vm(1, 16 * GIB, 100), vm(2, 16 * GIB, 100),
				    vm(3, 16 * GIB, 100) };
	struct vt_share_params p = { .budget = 8 * GIB, .step = 1 * GIB, .deadband = 0 };
	struct vt_share_out out[3];
	struct vt_share_round info;

	(void)state;
	v[0].prev = 8 * GIB;
	/*
	 * VMs 2 and 3's hot sets appear, hotter than VM 1's: they want 4 GiB
	 * each and could grow by a step each, but VM 1 gives up one step a
	 * round: they wait, and share what is freed.
	 */
	v[0].hist_bytes[10] = 8 * GIB;
	v[1].hist_bytes[HOT] = 4 * GIB;
	v[2].hist_bytes[HOT] = 4 * GIB;
	for (unsigned int r = 1; r <= 8; r++) {
		round_ok(&p, v, 3, out, &info);
		assert_int_equal(out[0].allot, 8 * GIB - r * GIB);
		assert_int_equal(out[1].allot, r * GIB / 2);
		assert_int_equal(out[2].allot, r * GIB / 2);
		assert_int_equal(out[1].wanted, 4 * GIB);
		assert_int_equal(out[1].why, r < 8 ? VT_SHARE_RATE_LIMITED : VT_SHARE_EARNED);
		for (int i = 0; i < 3; i++)
			v[i].prev = out[i].allot;
	}
}

/* Bytes freed in a round go first to a VM still below its min, then by weight. */
static void test_below_min_grows_first(void **state)
{
	struct vt_share_vm v[3] = { vm(1, 16 * GIB, 100), vm(2, 16 * GIB, 100),
				    vm(3, 16 * GIB, 100) };
	struct vt_share_params p = { .budget = 6 * GIB, .step = 1 * GIB, .deadband = 0 };
	struct vt_share_out out[3];
	struct vt_share_round info;

	(void)state;
	v[0].hist_bytes[0] = 6 * GIB;	/* idle: wants nothing, shrinks 4 -> 3 */
	v[0].prev = 4 * GIB;
	v[1].hist_bytes[HOT] = 4 * GIB;	/* wants 4, has 2 */
	v[1].prev = 2 * GIB;
	v[2].hist_bytes[HOT] = 2 * GIB;	/* new, min 2: wants 2 */
	v[2].dram_min = 2 * GIB;
	round_ok(&p, v, 3, out, &info);
	assert_int_equal(out[0].allot, 3 * GIB);
	assert_int_equal(out[2].allot, 1 * GIB);
	assert_int_equal(out[1].allot, 2 * GIB);
	assert_int_equal(out[1].why, VT_SHARE_RATE_LIMITED);
}

static void test_budget_lowered_wins_over_step(void **state)
{
	struct vt_share_vm v[2] = { vm(1, 16 * GIB, 100), vm(2, 16 * GIB, 100) };
	struct vt_share_params p = { .budget = 4 * GIB, .step = 256 * MIB, .deadband = 4 * MIB };
	struct vt_share_out out[2];
	struct vt_share_round info;

	(void)state;
	v[0].hist_bytes[HOT] = 8 * GIB;
	v[1].hist_bytes[HOT] = 8 * GIB;
	v[0].prev = v[1].prev = 4 * GIB;	/* the budget was 8 GiB */
	round_ok(&p, v, 2, out, &info);
	assert_int_equal(out[0].allot, 2 * GIB);
	assert_int_equal(out[1].allot, 2 * GIB);
}

/* 1000 rounds of random VMs coming, going and changing: the invariants. */
static void test_random_rounds_hold_budget_and_mins(void **state)
{
	GRand *rng = g_rand_new_with_seed(32);
	struct vt_share_vm v[40];
	struct vt_share_out out[40];
	struct vt_share_round info;
	struct vt_share_params p = { .budget = 64 * GIB, .step = 1 * GIB, .deadband = 4 * MIB };
	size_t n = 0;
	uint64_t next_id = 1, held = 0;

	(void)state;
	for (unsigned int r = 0; r < 1000; r++) {
		uint64_t mins = 0;

		/* arrivals and departures */
		if (n < G_N_ELEMENTS(v) && g_rand_int_range(rng, 0, 4) == 0) {
			struct vt_share_vm *a = &v[n++];

			*a = vm(next_id++, (uint64_t)g_rand_int_range(rng, 1, 64) * GIB,
				(uint32_t)g_rand_int_range(rng, 1, 10001));
			a->dram_max = g_rand_boolean(rng) ? 0 :
				(uint64_t)g_rand_int_range(rng, 1, 64) * 512 * MIB;
			a->dram_min = g_rand_int_range(rng, 0, 3) == 0 ?
				(uint64_t)g_rand_int_range(rng, 1, 8) * 256 * MIB : 0;
		}
		if (n && g_rand_int_range(rng, 0, 6) == 0) {
			size_t gone = (size_t)g_rand_int_range(rng, 0, (gint32)n);

			v[gone] = v[--n];
		}
		/* new hot sets now and then */
		for (size_t i = 0; i < n; i++) {
			uint64_t left = v[i].ram_bytes;

			if (r && g_rand_int_range(rng, 0, 5))
				continue;
			memset(v[i].hist_bytes, 0, sizeof(v[i].hist_bytes));
			for (int b = VT_MTM_BINS - 1; b > 0 && left; b--) {
				uint64_t x = MIN(left, (uint64_t)g_rand_int_range(rng, 0, 2048) * MIB);

				if (g_rand_int_range(rng, 0, 3) == 0)
					continue;
				v[i].hist_bytes[b] = x;
				left -= x;
			}
			v[i].hist_bytes[0] = left;
		}
		/* the operator's mins fit (the daemon refuses others): drop the newest min */
		for (size_t i = 0; i < n; i++)
			mins += v[i].dram_min;
		for (size_t i = n; i-- > 0 && vt_host_share_check_mins(p.budget, -1, v, n, NULL, 0);)
			v[i].dram_min = 0;
		round_ok(&p, v, n, out, &info);
		assert_false(info.mins_scaled);
		for (size_t i = 0; i < n; i++) {
			uint64_t cap = v[i].dram_max && v[i].dram_max < v[i].ram_bytes ?
				v[i].dram_max : v[i].ram_bytes;

			assert_true(out[i].allot <= cap);
			assert_true(out[i].wanted <= cap);
			assert_true(out[i].wanted >= out[i].protected_bytes);
			/* the min, once held, is never taken */
			if (v[i].prev >= out[i].protected_bytes)
				assert_true(out[i].allot >= out[i].protected_bytes);
			else
				assert_true(out[i].allot >= v[i].prev);
			if (out[i].allot > v[i].prev)
				assert_true(out[i].allot - v[i].prev <= p.step);
			if (out[i].allot >= out[i].protected_bytes && out[i].protected_bytes)
				held++;
			v[i].prev = out[i].allot;
		}
	}
	assert_true(held > 1000);	/* the mins were exercised */
	g_rand_free(rng);
}

static void test_deterministic(void **state)
{
	GRand *rng = g_rand_new_with_seed(7);
	struct vt_share_vm v[50], rev[50];
	struct vt_share_out a[50], b[50], c[50];
	struct vt_share_params p = { .budget = 40 * GIB + 12345, .step = 1 * GIB, .deadband = 0 };
	struct vt_share_round info;

	(void)state;
	for (size_t i = 0; i < 50; i++) {
		v[i] = vm(1000 - i, 4 * GIB, (uint32_t)g_rand_int_range(rng, 1, 4) * 100);
		v[i].hist_bytes[HOT] = (uint64_t)g_rand_int_range(rng, 0, 3) * GIB + 7;
		v[i].hist_bytes[3] = (uint64_t)g_rand_int_range(rng, 0, 1024) * MIB;
		v[i].prev = (uint64_t)g_rand_int_range(rng, 0, 2) * GIB;
	}
	for (size_t i = 0; i < 50; i++)
		rev[i] = v[49 - i];
	round_ok(&p, v, 50, a, &info);
	round_ok(&p, v, 50, b, &info);
	round_ok(&p, rev, 50, c, &info);
	assert_memory_equal(a, b, sizeof(a));
	/* the order of the input does not matter: ids break ties */
	for (size_t i = 0; i < 50; i++)
		assert_memory_equal(&a[i], &c[49 - i], sizeof(a[i]));
	g_rand_free(rng);
}

static void test_empty_and_bad(void **state)
{
	struct vt_share_params p = free_params(GIB);
	struct vt_share_round info = { .sum = 1 };

	(void)state;
	assert_int_equal(vt_host_share_round(&p, NULL, 0, NULL, &info), 0);
	assert_int_equal(info.sum, 0);
	assert_int_equal(vt_host_share_round(&p, NULL, 1, NULL, &info), -EINVAL);
	assert_int_equal(vt_host_share_round(NULL, NULL, 0, NULL, NULL), -EINVAL);
	assert_string_equal(vt_share_why_name(VT_SHARE_RATE_LIMITED), "rate-limited");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fair_equal_weights),
		cmocka_unit_test(test_weights_split_contested_bin),
		cmocka_unit_test(test_hot_small_beats_lukewarm_big),
		cmocka_unit_test(test_dram_max_caps_excess_to_others),
		cmocka_unit_test(test_min_protected_while_used),
		cmocka_unit_test(test_mins_above_budget_refused),
		cmocka_unit_test(test_rate_limit_and_dead_band),
		cmocka_unit_test(test_arrive_and_leave),
		cmocka_unit_test(test_reversal_held),
		cmocka_unit_test(test_growing_waits_for_shrinking),
		cmocka_unit_test(test_below_min_grows_first),
		cmocka_unit_test(test_budget_lowered_wins_over_step),
		cmocka_unit_test(test_random_rounds_hold_budget_and_mins),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_empty_and_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
