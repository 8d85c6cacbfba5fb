// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The placement stage's waterfall age (engine/placement.c), which is also what
 * a guest's COLD hint may bring forward: the policy's ctier_age_windows only
 * where the waterfall runs (placement=waterfall and a compressed tier), else
 * 0, so that hints age nothing and count no chunk where nothing acts on them.
 * And the DRAM allowance a window places by: the policy's, capped by the
 * host's DRAM sharing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "placement.h"

static void test_waterfall_age(void **state)
{
	static const struct {
		enum vt_placement placement;
		enum vt_ctier_kind ctier_kind;
		unsigned int age;
		unsigned int want;
	} cases[] = {
		{ VT_PLACEMENT_WATERFALL, VT_CTIER_HANDOFF, 10, 10 },
		{ VT_PLACEMENT_WATERFALL, VT_CTIER_ZSWAP, 3, 3 },
		{ VT_PLACEMENT_WATERFALL, VT_CTIER_HANDOFF, 0, 0 },	/* waterfall off */
		{ VT_PLACEMENT_WATERFALL, VT_CTIER_NONE, 3, 0 },	/* NUMA tiers only */
		{ VT_PLACEMENT_TCO, VT_CTIER_HANDOFF, 3, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vt_vm vm = { .ctier_kind = cases[i].ctier_kind };

		vm.policy.placement = cases[i].placement;
		vm.policy.ctier_age_windows = cases[i].age;
		assert_int_equal(vt_placement_waterfall_age(&vm), cases[i].want);
	}
}

static void test_dram_allowance(void **state)
{
	struct vt_vm vm = { .ram_bytes = 1024ULL << 20 };
	struct vt_vm_stats s = { 0 };
	struct vt_window w = { .vm = &vm, .s = &s };

	(void)state;
	vt_vm_policy_default(&vm.policy);
	vm.policy.dram_limit_bytes = 512ULL << 20;
	/* no host budget: the policy's */
	assert_int_equal(vt_placement_dram_allowance(&w), 512ULL << 20);
	/* granted below it: the grant; above it: the policy's still */
	w.share = (struct vt_vm_share){ .state = VT_VM_SHARE_GRANTED, .granted = 200ULL << 20 };
	assert_int_equal(vt_placement_dram_allowance(&w), 200ULL << 20);
	w.share.granted = 900ULL << 20;
	assert_int_equal(vt_placement_dram_allowance(&w), 512ULL << 20);
	/* a grant of nothing is nothing, not "no cap" */
	w.share.granted = 0;
	assert_int_equal(vt_placement_dram_allowance(&w), 0);
	/* waiting before its first placed window: the policy's; after: what it holds */
	w.share = (struct vt_vm_share){ .state = VT_VM_SHARE_WAITING };
	s.tier[0].resident_bytes = 300ULL << 20;
	assert_int_equal(vt_placement_dram_allowance(&w), 512ULL << 20);
	s.hist_window = 4;
	assert_int_equal(vt_placement_dram_allowance(&w), 300ULL << 20);
}

/* The nodes a window may move to: the cpuset's, DRAM's home node; the room on them. */
static void test_node_room(void **state)
{
	struct vt_vm vm = { 0 };
	struct vt_vm_stats s = { 0 };
	struct vt_window w = { .vm = &vm, .s = &s };
	uint64_t room[VT_MTM_MAX_TIERS] = { 0 };
	const uint64_t mib = 1ULL << 20;

	(void)state;
	vm.tiers.nr = 2;
	vm.tiers.tier[0].nr_nodes = 2;
	vm.tiers.tier[0].nodes[0] = 0;
	vm.tiers.tier[0].nodes[1] = 1;
	vm.tiers.tier[1].nr_nodes = 1;
	vm.tiers.tier[1].nodes[0] = 2;
	vm.tiers.node_free_bytes[0] = 1000 * mib;
	vm.tiers.node_free_bytes[1] = 500 * mib;
	vm.tiers.node_free_bytes[2] = 4000 * mib;
	/* cpuset not read, no home: every node of each tier, the room less 32 MiB */
	vt_placement_node_room(&w, room);
	assert_int_equal(w.node_mask[0], 0x3);
	assert_int_equal(w.node_mask[1], 0x4);
	assert_int_equal(room[0], 1468 * mib);
	assert_int_equal(room[1], 3968 * mib);
	/* homed on node 1 under a per-node budget: DRAM is node 1 alone */
	w.share = (struct vt_vm_share){ .state = VT_VM_SHARE_GRANTED, .homed = true, .node = 1 };
	vt_placement_node_room(&w, room);
	assert_int_equal(w.node_mask[0], 0x2);
	assert_int_equal(room[0], 468 * mib);
	/* a cpuset of node 0 only: no CXL, and a home it no longer allows is not used */
	s.mems_allowed = 0x1;
	vt_placement_node_room(&w, room);
	assert_int_equal(w.node_mask[0], 0x1);
	assert_int_equal(room[0], 968 * mib);
	assert_int_equal(w.node_mask[1], 0);
	assert_int_equal(room[1], 0);
}

static void test_move_hold(void **state)
{
	struct vt_vm vm = { .ram_bytes = 1024ULL << 20 };
	struct vt_vm_stats s = { 0 };
	struct vt_window w = { .vm = &vm, .s = &s };

	(void)state;
	vt_vm_policy_default(&vm.policy);
	/* off by default, the policy's when set */
	assert_int_equal(vt_placement_move_hold(&w), 0);
	vm.policy.move_hold = 6;
	assert_int_equal(vt_placement_move_hold(&w), 6);
	/* under a grant: the longer of the two; a waiting VM's share_hold is not its own */
	w.share = (struct vt_vm_share){ .state = VT_VM_SHARE_GRANTED, .hold = 10 };
	assert_int_equal(vt_placement_move_hold(&w), 10);
	vm.policy.move_hold = 20;
	assert_int_equal(vt_placement_move_hold(&w), 20);
	vm.policy.move_hold = 0;
	w.share.state = VT_VM_SHARE_WAITING;
	assert_int_equal(vt_placement_move_hold(&w), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_waterfall_age),
		cmocka_unit_test(test_dram_allowance),
		cmocka_unit_test(test_node_room),
		cmocka_unit_test(test_move_hold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
