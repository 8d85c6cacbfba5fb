// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The migration profile between two VMs' MTM states (handoff/migration_profile.c,
 * migration/migration.c): a source placed hot on DRAM and cold on a slower node
 * and a compressed tier writes its profile; a destination with other tiers
 * (other names, one compressed tier fewer) seeds from it: warm EMAs, ages,
 * incompressible chunks kept off the compressed tiers, and in its first
 * window the orders that put every chunk where the profile says (within its
 * room and allowed tiers). Also the tier mapping's cases and the hold of
 * promotions while a migration is outgoing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "migration.h"
#include "migration_profile.h"
#include "vm.h"

#define MIB (1ULL << 20)
#define CHUNK (2 * MIB)
#define STRIDE (128 * 1024)
#define PER_CHUNK (CHUNK / STRIDE)
#define NCHUNK 64u
#define HVA (0x7f0000000000ULL)
#define SIZE (NCHUNK * CHUNK)

/* chunk i of the source: hot for i < 8 on DRAM; cold on cxl (8..31) or lz4 (32..63) */
static int src_tier(unsigned int i)
{
	return i < 8 ? 0 : i < 32 ? 1 : 2;
}

static struct vt_mtm *mtm_new(unsigned int nr_tiers)
{
	struct vt_range r = { HVA, HVA + SIZE };

	return vt_mtm_new(&r, 1, CHUNK, STRIDE, nr_tiers);
}

static void place(struct vt_mtm *m, unsigned int i, int tier)
{
	uint32_t samples[VT_MTM_MAX_TIERS] = { 0 };

	if (tier >= 0)
		samples[tier] = PER_CHUNK;
	vt_mtm_residency_set(m, i, samples, PER_CHUNK);
}

static const struct vt_profile_tier src_tiers[] = {
	{ "dram", VTIER_PROFILE_TIER_NUMA },
	{ "cxl", VTIER_PROFILE_TIER_NUMA },
	{ "lz4", VTIER_PROFILE_TIER_COMPRESSED },
};

/* The source's profile: 10 windows of the hot set, chunks placed, chunk 40 refused by lz4. */
static uint8_t *source_profile(size_t *len)
{
	struct vt_mtm *m = mtm_new(3);
	struct vt_mtm_region r[2] = {
		{ HVA, HVA + 8 * CHUNK, 1.0 },
		{ HVA + 8 * CHUNK, HVA + SIZE, 0 },
	};
	double ratio[3] = { 1, 1, 3.1 };
	struct vt_profile_source src = {
		.mtm = m, .hva = HVA, .size = SIZE, .tiers = src_tiers, .n_tiers = 3,
		.ratio = ratio, .windows = 10,
	};
	uint8_t *buf = NULL;

	for (unsigned int w = 0; w < 10; w++)
		vt_mtm_observe(m, r, 2);
	for (unsigned int i = 0; i < NCHUNK; i++)
		place(m, i, src_tier(i));
	vt_mtm_seed(m, 40, 0, 0, 1U << 2);	/* as if lz4 had refused chunk 40 */
	g_array_index(m->chunks, struct vt_mtm_chunk, 40).tier = 1;
	assert_int_equal(vt_migration_profile_write(&src, &buf, len), 0);
	vt_mtm_free(m);
	return buf;
}

static void test_write_read(void **state)
{
	size_t len;
	g_autofree uint8_t *buf = source_profile(&len);
	struct vt_profile p;
	struct vt_profile_chunk c;
	char err[VT_PROFILE_ERR_LEN] = "";

	(void)state;
	assert_int_equal(vt_profile_read(buf, len, SIZE, &p, err, sizeof(err)), 0);
	assert_int_equal(p.version, 2);
	assert_int_equal(p.chunk_shift, 21);
	assert_int_equal(p.n_chunks, NCHUNK);
	assert_int_equal(p.windows, 10);
	vt_profile_chunk(&p, 0, &c);
	assert_true(c.ema > 0.99);
	assert_int_equal(c.tier, 0);
	assert_int_equal(c.cold_windows, 0);
	vt_profile_chunk(&p, 20, &c);
	assert_true(c.ema == 0);
	assert_int_equal(c.tier, 1);
	assert_int_equal(c.cold_windows, 10);
	assert_int_equal(c.size_class, VTIER_PROFILE_SIZE_UNKNOWN);
	vt_profile_chunk(&p, 50, &c);
	assert_int_equal(c.tier, 2);
	assert_int_equal(c.size_class, 3);	/* ratio 3.1: at most 3/8 */
	vt_profile_chunk(&p, 40, &c);
	assert_int_equal(c.size_class, VTIER_PROFILE_SIZE_INCOMPRESSIBLE);
}

/* A backend bigger than what 2 MiB chunks fit in 8 MiB: coarser profile chunks, still read. */
static void test_write_coarse(void **state)
{
	struct vt_range r = { HVA, HVA + (4ULL << 40) };
	struct vt_mtm *m = vt_mtm_new(&r, 1, 1ULL << 30, 1ULL << 30, 3);	/* 1 GiB chunks */
	struct vt_profile_source src = {
		.mtm = m, .hva = HVA, .size = 4ULL << 40, .tiers = src_tiers, .n_tiers = 3,
	};
	g_autofree uint8_t *buf = NULL;
	struct vt_profile p;
	size_t len;
	char err[VT_PROFILE_ERR_LEN] = "";

	(void)state;
	assert_int_equal(vt_migration_profile_write(&src, &buf, &len), 0);
	assert_true(len <= VTIER_HANDOFF_PROFILE_MAX);
	assert_int_equal(vt_profile_read(buf, len, 4ULL << 40, &p, err, sizeof(err)), 0);
	assert_int_equal(p.chunk_shift, 30);
	vt_mtm_free(m);
}

static void test_map_tiers(void **state)
{
	struct vt_profile p = { .n_tiers = 4 };
	const struct vt_profile_tier same[] = {
		{ "dram", VTIER_PROFILE_TIER_NUMA }, { "pmem", VTIER_PROFILE_TIER_NUMA },
		{ "cxl", VTIER_PROFILE_TIER_NUMA }, { "zstd", VTIER_PROFILE_TIER_COMPRESSED },
		{ "lz4", VTIER_PROFILE_TIER_COMPRESSED },
	};
	const struct vt_profile_tier dram_only[] = { { "node0", VTIER_PROFILE_TIER_NUMA } };
	const struct vt_profile_tier other[] = {
		{ "node0", VTIER_PROFILE_TIER_NUMA }, { "node2", VTIER_PROFILE_TIER_NUMA },
		{ "zswap", VTIER_PROFILE_TIER_COMPRESSED },
	};
	int map[4];

	(void)state;
	memcpy(p.tiers, src_tiers, sizeof(src_tiers));
	p.tiers[3] = (struct vt_profile_tier){ "zstd", VTIER_PROFILE_TIER_COMPRESSED };
	/* by name, wherever the destination has them */
	vt_migration_profile_map_tiers(&p, same, 5, map);
	assert_int_equal(map[0], 0);
	assert_int_equal(map[1], 2);
	assert_int_equal(map[2], 4);
	assert_int_equal(map[3], 3);
	/* by kind and rank: the second compressed tier is the only one there is */
	vt_migration_profile_map_tiers(&p, other, 3, map);
	assert_int_equal(map[0], 0);
	assert_int_equal(map[1], 1);
	assert_int_equal(map[2], 2);
	assert_int_equal(map[3], 2);
	/* no compressed tier: the slowest memory */
	vt_migration_profile_map_tiers(&p, dram_only, 1, map);
	assert_int_equal(map[0], 0);
	assert_int_equal(map[1], 0);
	assert_int_equal(map[2], 0);
	assert_int_equal(map[3], 0);
}

/* The destination: node0 + node2, one compressed tier; every page arrived on node0. */
static void test_seed_and_place(void **state)
{
	size_t len;
	g_autofree uint8_t *buf = source_profile(&len);
	const struct vt_profile_tier ours[] = {
		{ "node0", VTIER_PROFILE_TIER_NUMA }, { "node2", VTIER_PROFILE_TIER_NUMA },
		{ "zswap", VTIER_PROFILE_TIER_COMPRESSED },
	};
	struct vt_mtm *m = mtm_new(3);
	g_autoptr(GArray) plan = g_array_new(FALSE, FALSE, sizeof(struct vt_seed_order));
	g_autoptr(GArray) orders = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_order));
	struct vt_mtm_window_stats ws = { 0 };
	uint64_t room[3] = { 1ULL << 40, 1ULL << 40, 1ULL << 40 };
	uint64_t any[3] = { UINT64_MAX, UINT64_MAX, UINT64_MAX };
	struct vt_profile p;
	char err[VT_PROFILE_ERR_LEN];
	int map[3];
	unsigned int n, to[3] = { 0 };

	(void)state;
	assert_int_equal(vt_profile_read(buf, len, SIZE, &p, err, sizeof(err)), 0);
	vt_migration_profile_map_tiers(&p, ours, 3, map);
	n = vt_migration_profile_seed(m, HVA, &p, map, 2, plan);
	assert_int_equal(n, NCHUNK);
	/* warm: the hot set's EMA, the cold chunks' age */
	assert_true(g_array_index(m->chunks, struct vt_mtm_chunk, 3).ema > 0.99);
	assert_int_equal(vt_mtm_cold_windows(m, &g_array_index(m->chunks, struct vt_mtm_chunk, 3)), 0);
	assert_true(g_array_index(m->chunks, struct vt_mtm_chunk, 20).ema == 0);
	assert_int_equal(vt_mtm_cold_windows(m, &g_array_index(m->chunks, struct vt_mtm_chunk, 20)),
			 10);
	/* chunk 40 compressed badly on the source: the compressed tier is refused here too */
	assert_true(g_array_index(m->chunks, struct vt_mtm_chunk, 40).refused & (1U << 2));
	/* the plan: every cold chunk below tier 0, none to tier 0 (MTM's, by the EMAs) */
	assert_int_equal(plan->len, NCHUNK - 8);
	/* at the hand-off, before any residency: the compressed tier's chunks, in bulk */
	n = vt_migration_profile_at_handoff(m, plan, 0, 2, 0x7, HVA, HVA + SIZE, any, orders);
	assert_int_equal(n, 31);
	for (unsigned int k = 0; k < orders->len; k++) {
		const struct vt_mtm_order *o = &g_array_index(orders, struct vt_mtm_order, k);

		assert_int_equal(o->to_tier, 2);
		assert_int_equal(src_tier(o->chunk), 2);
		assert_true(o->bulk);
		to[0] += o->chunk < 48;
	}
	g_array_set_size(orders, 0);
	/* only inside the backend's range, only tiers the policy allows, only from @from on */
	assert_int_equal(vt_migration_profile_at_handoff(m, plan, 0, 2, 0x7, HVA,
							 HVA + 48 * CHUNK, any, orders), to[0]);
	assert_int_equal(to[0], 15);	/* 32..47 but 40 (refused) */
	g_array_set_size(orders, 0);
	assert_int_equal(vt_migration_profile_at_handoff(m, plan, 0, 2, 0x3, HVA, HVA + SIZE, any,
							 orders), 0);
	assert_int_equal(vt_migration_profile_at_handoff(m, plan, plan->len, 2, 0x7, HVA, HVA + SIZE,
							 any, orders), 0);
	/* a pool capped at 10 chunks' bytes takes 10 at the hand-off, the windows the rest */
	{
		uint64_t capped[3] = { UINT64_MAX, UINT64_MAX, 10 * CHUNK + CHUNK / 2 };

		assert_int_equal(vt_migration_profile_at_handoff(m, plan, 0, 2, 0x7, HVA, HVA + SIZE,
								 capped, orders), 10);
		assert_int_equal(capped[2], CHUNK / 2);
		g_array_set_size(orders, 0);
	}
	to[0] = 0;
	for (unsigned int i = 0; i < NCHUNK; i++)
		place(m, i, 0);
	n = vt_migration_profile_place(m, plan, 0x7, room, orders, &ws);
	assert_int_equal(n, NCHUNK - 8);
	for (unsigned int k = 0; k < orders->len; k++) {
		const struct vt_mtm_order *o = &g_array_index(orders, struct vt_mtm_order, k);

		assert_int_equal(o->from_tier, 0);
		assert_int_equal(o->to_tier, o->chunk == 40 ? 1 : src_tier(o->chunk));
		assert_false(o->promote);
		assert_true(o->bulk);	/* known ahead: the movers take it in spans */
		to[o->to_tier]++;
	}
	assert_int_equal(to[1], 24 + 1);
	assert_int_equal(to[2], 31);
	assert_int_equal(ws.demote_bytes, (NCHUNK - 8) * CHUNK);
	assert_int_equal(room[2], (1ULL << 40) - 31 * CHUNK);
	/* next window: the chunks are there, the plan is done */
	for (unsigned int k = 0; k < orders->len; k++) {
		const struct vt_mtm_order *o = &g_array_index(orders, struct vt_mtm_order, k);

		place(m, o->chunk, o->to_tier);
	}
	g_array_set_size(orders, 0);
	assert_int_equal(vt_migration_profile_place(m, plan, 0x7, room, orders, &ws), 0);
	assert_int_equal(plan->len, 0);
	vt_mtm_free(m);
}

/* Within the destination's limits: a tier it may not use, a tier without room, orders already given. */
static void test_place_limits(void **state)
{
	size_t len;
	g_autofree uint8_t *buf = source_profile(&len);
	struct vt_mtm *m = mtm_new(3);
	g_autoptr(GArray) plan = g_array_new(FALSE, FALSE, sizeof(struct vt_seed_order));
	g_autoptr(GArray) orders = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_order));
	struct vt_mtm_window_stats ws = { 0 };
	uint64_t room[3] = { 1ULL << 40, 4 * CHUNK, 1ULL << 40 };
	struct vt_profile p;
	char err[VT_PROFILE_ERR_LEN];
	int map[3] = { 0, 1, 2 };

	(void)state;
	assert_int_equal(vt_profile_read(buf, len, SIZE, &p, err, sizeof(err)), 0);
	vt_migration_profile_seed(m, HVA, &p, map, 2, plan);
	for (unsigned int i = 0; i < NCHUNK; i++)
		place(m, i, i == 60 ? -1 : 0);	/* chunk 60: nothing present */
	/* chunk 9 already has an order from MTM this window */
	g_array_append_val(orders, ((struct vt_mtm_order){ 9, 0, 2, false }));
	/* the compressed tier is not allowed (policy tiers=) */
	assert_int_equal(vt_migration_profile_place(m, plan, 0x3, room, orders, &ws), 4);
	assert_int_equal(orders->len, 5);
	for (unsigned int k = 1; k < orders->len; k++)
		assert_int_equal(g_array_index(orders, struct vt_mtm_order, k).to_tier, 1);
	assert_int_equal(room[1], 0);
	/* chunk 60 (no page) left the plan; the others wait for room or their tier */
	assert_int_equal(plan->len, NCHUNK - 8 - 1);
	vt_mtm_free(m);
}

/* A v1 profile seeds EMAs only: no tiers, no plan. */
static void test_seed_v1(void **state)
{
	struct {
		struct vtier_profile_v1 h;
		uint8_t heat[NCHUNK];
	} b = {
		.h = { .magic = VTIER_PROFILE_MAGIC, .version = VTIER_PROFILE_VERSION,
		       .chunk_shift = 21, .size_bytes = SIZE, .n_chunks = NCHUNK },
	};
	struct vt_mtm *m = mtm_new(2);
	g_autoptr(GArray) plan = g_array_new(FALSE, FALSE, sizeof(struct vt_seed_order));
	struct vt_profile p;
	char err[VT_PROFILE_ERR_LEN];

	(void)state;
	b.heat[5] = 255;
	assert_int_equal(vt_profile_read(&b, sizeof(b), SIZE, &p, err, sizeof(err)), 0);
	assert_int_equal(vt_migration_profile_seed(m, HVA, &p, NULL, 1, plan), NCHUNK);
	assert_int_equal(plan->len, 0);
	assert_true(g_array_index(m->chunks, struct vt_mtm_chunk, 5).ema == 1.0);
	assert_true(g_array_index(m->chunks, struct vt_mtm_chunk, 6).ema == 0);
	vt_mtm_free(m);
}

/*
 * Source: the cold chunks on the compressed tier at the start are kept; the
 * migration faults some back (present on tier 0 again); each window evicts
 * them again within the budget; one the guest warms up leaves the plan.
 */
static void test_reevict(void **state)
{
	struct vt_mtm *m = mtm_new(3);
	struct vt_mtm_region r[2] = {
		{ HVA, HVA + 8 * CHUNK, 1.0 },
		{ HVA + 8 * CHUNK, HVA + SIZE, 0 },
	};
	g_autoptr(GArray) keep = g_array_new(FALSE, FALSE, sizeof(struct vt_seed_order));
	g_autoptr(GArray) orders = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_order));
	struct vt_mtm_window_stats ws = { 0 };
	uint64_t room[3] = { 1ULL << 40, 1ULL << 40, 1ULL << 40 };
	struct vt_mtm_region warm = { HVA + 40 * CHUNK, HVA + 41 * CHUNK, 1.0 };

	(void)state;
	vt_mtm_observe(m, r, 2);
	for (unsigned int i = 0; i < NCHUNK; i++)
		place(m, i, src_tier(i));
	/* chunks 32..63 are cold on lz4 (tier 2); the hot set and cxl are not kept */
	assert_int_equal(vt_migration_keep_plan(m, 2, keep), 32);
	/* nothing faulted back yet: no order */
	assert_int_equal(vt_migration_reevict(m, keep, UINT64_MAX, room, orders, &ws), 0);
	/* the migration thread read chunks 32..43: present on tier 0 (partly) */
	for (unsigned int i = 32; i < 44; i++) {
		uint32_t samples[VT_MTM_MAX_TIERS] = { 0 };

		samples[0] = 3;
		samples[2] = PER_CHUNK - 3;
		vt_mtm_residency_set(m, i, samples, PER_CHUNK);
	}
	/* chunk 33 already has an order this window; the budget takes 4 chunks */
	g_array_append_val(orders, ((struct vt_mtm_order){ 33, 2, 1, false }));
	assert_int_equal(vt_migration_reevict(m, keep, 4 * CHUNK, room, orders, &ws), 4);
	assert_int_equal(orders->len, 5);
	for (unsigned int k = 1; k < orders->len; k++) {
		const struct vt_mtm_order *o = &g_array_index(orders, struct vt_mtm_order, k);

		assert_int_equal(o->to_tier, 2);
		assert_false(o->promote);
		assert_false(o->bulk);	/* the source runs the guest: ordinary runs */
		assert_true(o->chunk >= 32 && o->chunk < 44 && o->chunk != 33);
	}
	assert_int_equal(ws.demote_bytes, 4 * CHUNK);
	/* unlimited (past migration_extra): every chunk back on tier 0 */
	g_array_set_size(orders, 0);
	assert_int_equal(vt_migration_reevict(m, keep, UINT64_MAX, room, orders, &ws), 12);
	/* the guest warms chunk 40 up: it is MTM's now, not re-evicted, out of the plan */
	for (unsigned int w = 0; w < 3; w++)
		vt_mtm_observe(m, &warm, 1);
	g_array_set_size(orders, 0);
	assert_int_equal(vt_migration_reevict(m, keep, UINT64_MAX, room, orders, &ws), 11);
	assert_int_equal(keep->len, 31);
	vt_mtm_free(m);
}

/*
 * While a migration is outgoing, the window's promotions are held, and so are
 * demotions that free no DRAM (from a slower tier on down); those out of DRAM
 * go on.
 */
static void test_hold(void **state)
{
	g_autofree struct vt_vm *vm = g_new0(struct vt_vm, 1);
	struct vt_vm_stats s = { 0 };
	g_autoptr(GArray) orders = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_order));
	const struct vt_mtm_order o[] = {
		{ 1, 1, 0, true }, { 2, 0, 1, false }, { 3, 2, 0, true }, { 4, 0, 2, false },
		{ 5, 1, 2, false }, { 6, 3, 4, false }, { 7, -1, 3, false },
	};

	(void)state;
	g_array_append_vals(orders, o, G_N_ELEMENTS(o));
	vt_migration_hold(vm, orders, &s);
	assert_int_equal(orders->len, G_N_ELEMENTS(o));
	vm->migration.state = VT_MIGRATION_OUTGOING;
	vt_migration_hold(vm, orders, &s);
	assert_int_equal(orders->len, 3);
	assert_int_equal(g_array_index(orders, struct vt_mtm_order, 0).chunk, 2);
	assert_int_equal(g_array_index(orders, struct vt_mtm_order, 1).chunk, 4);
	assert_int_equal(g_array_index(orders, struct vt_mtm_order, 2).chunk, 7);
	assert_int_equal(s.migration.promotions_held, 2);
	assert_int_equal(s.migration.demotions_held, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_write_coarse),
		cmocka_unit_test(test_map_tiers),
		cmocka_unit_test(test_seed_and_place),
		cmocka_unit_test(test_place_limits),
		cmocka_unit_test(test_seed_v1),
		cmocka_unit_test(test_reevict),
		cmocka_unit_test(test_hold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
