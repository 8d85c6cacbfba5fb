// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The host-level stage of DRAM sharing (daemon/host_share_stage.c) on VMs
 * as the daemon holds them: who takes part in a round (mode auto with a
 * placed window), what the others hold and how it comes off the budget,
 * each grant written into its VM, and the dram_min check of a policy.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "host_share_stage.h"
#include "vm_policy.h"

#define MIB (1ULL << 20)

static struct vt_vm *vm_new(GHashTable *vms, const char *name, uint64_t serial,
			    enum vt_mode mode, uint64_t ram, uint64_t dram_now, unsigned int hot_bin,
			    uint64_t hot_bytes)
{
	struct vt_vm *vm = g_new0(struct vt_vm, 1);

	g_mutex_init(&vm->lock);
	g_strlcpy(vm->name, name, sizeof(vm->name));
	vm->serial = serial;
	vt_vm_policy_default(&vm->policy);
	vm->policy.mode = mode;
	vm->ram_bytes = ram;
	vm->stats.tier[0].resident_bytes = dram_now;
	if (hot_bytes) {
		vm->stats.hist_bytes[hot_bin] = hot_bytes;
		vm->stats.hist_bytes[0] = ram - hot_bytes;
		vm->stats.hist_window = 3;
	}
	g_hash_table_insert(vms, vm->name, vm);
	return vm;
}

static void vm_free(gpointer p)
{
	struct vt_vm *vm = p;

	g_mutex_clear(&vm->lock);
	g_free(vm);
}

struct fixture {
	GHashTable *vms;
	struct vt_host_share_config cfg;
	struct vt_host_share_stage st;
};

static int setup(void **state)
{
	struct fixture *f = g_new0(struct fixture, 1);

	f->vms = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, vm_free);
	f->cfg = (struct vt_host_share_config){ .on = true, .budget = 1024 * MIB,
						.step = 1024 * MIB, .deadband = 2 * MIB };
	f->st = (struct vt_host_share_stage){ .vms = f->vms, .cfg = &f->cfg };
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	vt_host_share_stop(&f->st);
	g_hash_table_destroy(f->vms);
	g_free(f);
	return 0;
}

/* Mode auto with a placed window takes part; the rest wait, holding what they have. */
static void test_round(void **state)
{
	struct fixture *f = *state;
	struct vt_vm *hot = vm_new(f->vms, "hot", 1, VT_MODE_AUTO, 1024 * MIB, 100 * MIB, 19,
				   600 * MIB);
	struct vt_vm *warm = vm_new(f->vms, "warm", 2, VT_MODE_AUTO, 1024 * MIB, 100 * MIB, 10,
				    600 * MIB);
	struct vt_vm *off = vm_new(f->vms, "off", 3, VT_MODE_OFF, 512 * MIB, 200 * MIB, 19,
				   400 * MIB);
	struct vt_vm *fresh = vm_new(f->vms, "fresh", 4, VT_MODE_AUTO, 512 * MIB, 24 * MIB, 0, 0);

	vt_host_share_round_now(&f->st);
	assert_int_equal(f->st.rounds, 1);
	/* the waiting VMs' DRAM (200 + 24 MiB) comes off the 1 GiB first */
	assert_int_equal(f->st.waiting, 224 * MIB);
	assert_int_equal(off->share.state, VT_VM_SHARE_WAITING);
	assert_int_equal(off->share.granted, 200 * MIB);
	assert_int_equal(fresh->share.state, VT_VM_SHARE_WAITING);
	assert_int_equal(fresh->share.granted, 24 * MIB);
	/* the hotter bin first: hot's 600 MiB whole, warm the 200 MiB left */
	assert_int_equal(hot->share.state, VT_VM_SHARE_GRANTED);
	assert_int_equal(warm->share.state, VT_VM_SHARE_GRANTED);
	assert_int_equal(hot->share.granted, 600 * MIB);
	assert_int_equal(warm->share.granted, 200 * MIB);
	assert_int_equal(hot->share.granted + warm->share.granted + f->st.waiting, 1024 * MIB);
	assert_int_equal(hot->share.rounds, 1);

	/* the fresh VM's first window placed: it joins, the budget it held is shared again */
	fresh->stats.hist_bytes[19] = 100 * MIB;
	fresh->stats.hist_bytes[0] = 412 * MIB;
	fresh->stats.hist_window = 1;
	vt_host_share_round_now(&f->st);
	assert_int_equal(f->st.waiting, 200 * MIB);
	assert_int_equal(fresh->share.state, VT_VM_SHARE_GRANTED);
	assert_true(hot->share.granted + warm->share.granted + fresh->share.granted +
		    f->st.waiting <= 1024 * MIB);
	assert_true(fresh->share.granted >= 24 * MIB);
}

/* No budget: nothing runs, every VM stays off (its policy alone). */
static void test_off(void **state)
{
	struct fixture *f = *state;
	struct vt_vm *a = vm_new(f->vms, "a", 1, VT_MODE_AUTO, 1024 * MIB, 0, 19, 600 * MIB);

	f->cfg.on = false;
	vt_host_share_start(&f->st);
	assert_int_equal(f->st.timer, 0);
	vt_host_share_round_now(&f->st);
	assert_int_equal(f->st.rounds, 0);
	assert_int_equal(a->share.state, VT_VM_SHARE_OFF);
}

/* A dram_min that would take the VMs' mins over the budget is refused, naming them. */
static void test_check_policy(void **state)
{
	struct fixture *f = *state;
	struct vt_vm *a = vm_new(f->vms, "a", 1, VT_MODE_AUTO, 1024 * MIB, 0, 19, 600 * MIB);
	struct vt_vm *b = vm_new(f->vms, "b", 2, VT_MODE_AUTO, 1024 * MIB, 0, 19, 600 * MIB);
	struct vt_vm_policy p = b->policy;
	g_autoptr(GError) e = NULL;

	a->policy.dram_min_bytes = 700 * MIB;
	p.dram_min_bytes = 300 * MIB;
	assert_true(vt_host_share_check_policy(&f->st, b, &p, &e));
	p.dram_min_bytes = 400 * MIB;
	assert_false(vt_host_share_check_policy(&f->st, b, &p, &e));
	/* the key once, then the sum and the budget */
	assert_true(g_str_has_prefix(e->message, "dram_min: the VMs' mins sum to 1153433600 bytes"));
	assert_non_null(strstr(e->message, "a"));
	assert_non_null(strstr(e->message, "b"));
	/* without a host budget, any min goes */
	f->cfg.on = false;
	g_clear_error(&e);
	assert_true(vt_host_share_check_policy(&f->st, b, &p, &e));
}

/* one window's histogram: HOT bytes in bin BIN, the rest idle */
static void window(struct vt_vm *vm, unsigned int bin, uint64_t hot)
{
	memset(vm->stats.hist_bytes, 0, sizeof(vm->stats.hist_bytes));
	vm->stats.hist_bytes[bin] = hot;
	vm->stats.hist_bytes[0] += vm->ram_bytes - hot;
	vm->stats.hist_window++;
}

/*
 * Two VMs as hot as each other, one window's histogram a bin above the
 * other's by turns (the CPU each guest got in it): the rounds share the
 * contested DRAM rather than swap it window after window; a lasting change
 * still comes through within a few windows. Several rounds per window (a
 * loaded VM's windows outlast the round's second) take a window in once.
 */
static void test_demand_averaged(void **state)
{
	struct fixture *f = *state;
	struct vt_vm *a = vm_new(f->vms, "a", 1, VT_MODE_AUTO, 512 * MIB, 0, 19, 300 * MIB);
	struct vt_vm *b = vm_new(f->vms, "b", 2, VT_MODE_AUTO, 512 * MIB, 0, 18, 300 * MIB);
	uint64_t last = 0, swing = 0;

	f->cfg.budget = 400 * MIB;
	for (int w = 0; w < 12; w++) {
		if (w) {
			window(a, w % 2 ? 18 : 19, 300 * MIB);
			window(b, w % 2 ? 19 : 18, 300 * MIB);
		}
		for (int r = 0; r < 3; r++) {
			vt_host_share_round_now(&f->st);
			assert_true(a->share.granted + b->share.granted <= 400 * MIB);
		}
		if (w >= 4) {
			uint64_t d = a->share.granted > last ? a->share.granted - last :
							       last - a->share.granted;

			swing = MAX(swing, d);
		}
		last = a->share.granted;
	}
	/* one window's flip alone moved 200 MiB each way */
	assert_true(swing <= 32 * MIB);
	assert_true(a->share.granted >= 150 * MIB && b->share.granted >= 150 * MIB);

	/* b goes idle for good: a has its 300 MiB within 8 windows */
	for (int w = 0; w < 8; w++) {
		window(a, 19, 300 * MIB);
		window(b, 0, 0);
		vt_host_share_round_now(&f->st);
	}
	assert_true(a->share.granted >= 270 * MIB);
}

/*
 * A hot set that grows is claimed within 4 windows (the average rises by
 * half the gap a window); one window in which the VM got less CPU lowers
 * the claim by an eighth of the gap, not by half.
 */
static void test_demand_rises_fast_falls_slowly(void **state)
{
	struct fixture *f = *state;
	struct vt_vm *a = vm_new(f->vms, "a", 1, VT_MODE_AUTO, 512 * MIB, 0, 19, 64 * MIB);
	struct vt_vm *b = vm_new(f->vms, "b", 2, VT_MODE_AUTO, 512 * MIB, 0, 10, 400 * MIB);
	uint64_t before;

	f->cfg.budget = 300 * MIB;
	vt_host_share_round_now(&f->st);
	assert_int_equal(a->share.wanted, 64 * MIB);
	for (int w = 0; w < 4; w++) {
		window(a, 19, 160 * MIB);
		window(b, 10, 400 * MIB);
		vt_host_share_round_now(&f->st);
	}
	/* 64, 112, 136, 148, 154 MiB; a symmetric 1/8 average: 104 MiB */
	assert_true(a->share.wanted >= 144 * MIB);
	assert_true(a->share.wanted <= 160 * MIB);
	before = a->share.wanted;
	window(a, 19, 64 * MIB);
	vt_host_share_round_now(&f->st);
	assert_true(a->share.wanted >= before - (before - 64 * MIB) / 8 - MIB);
	assert_true(a->share.wanted < before);
	/* b, the colder one, had the rest of the budget in every round */
	assert_true(a->share.granted + b->share.granted <= 300 * MIB);
}

/*
 * A VM told to shrink still holds its DRAM until its worker demotes it: the
 * VM that grows is granted only what the others' holdings leave.
 */
static void test_growth_waits_for_held(void **state)
{
	struct fixture *f = *state;
	struct vt_vm *a = vm_new(f->vms, "a", 1, VT_MODE_AUTO, 512 * MIB, 300 * MIB, 19,
				 300 * MIB);
	struct vt_vm *b = vm_new(f->vms, "b", 2, VT_MODE_AUTO, 512 * MIB, 100 * MIB, 10,
				 300 * MIB);

	f->cfg.budget = 400 * MIB;
	vt_host_share_round_now(&f->st);
	assert_int_equal(a->share.granted, 300 * MIB);
	assert_int_equal(b->share.granted, 100 * MIB);
	/* a cools, b heats: a's share goes, but a holds its 300 MiB for now */
	for (int w = 0; w < 20; w++) {
		window(a, 19, 100 * MIB);
		window(b, 19, 300 * MIB);
		vt_host_share_round_now(&f->st);
		assert_true(MAX(a->share.granted, a->stats.tier[0].resident_bytes) +
			    MAX(b->share.granted, b->stats.tier[0].resident_bytes) <= 400 * MIB);
	}
	assert_true(a->share.granted < 300 * MIB);
	assert_int_equal(b->share.granted, 100 * MIB);
	/* a's worker demotes down to its grant: b grows into what it freed */
	a->stats.tier[0].resident_bytes = a->share.granted;
	vt_host_share_round_now(&f->st);
	assert_true(b->share.granted > 100 * MIB);
	assert_true(MAX(a->share.granted, a->stats.tier[0].resident_bytes) + b->share.granted <=
		    400 * MIB);
}

/*
 * A VM whose grant was lowered may still be promoting toward the grant its
 * worker took at its window's start (its published DRAM is a window old):
 * another VM's growth counts that grant as held.
 */
static void test_held_counts_the_grant_in_progress(void **state)
{
	struct fixture *f = *state;
	struct vt_vm *a = vm_new(f->vms, "a", 1, VT_MODE_AUTO, 512 * MIB, 100 * MIB, 19, 60 * MIB);
	struct vt_vm *b = vm_new(f->vms, "b", 2, VT_MODE_AUTO, 512 * MIB, 200 * MIB, 10,
				 400 * MIB);

	f->cfg.budget = 310 * MIB;
	a->share.state = b->share.state = VT_VM_SHARE_GRANTED;
	a->share.granted = a->share.applied = 108 * MIB;
	b->share.granted = b->share.applied = 200 * MIB;
	vt_host_share_round_now(&f->st);
	assert_int_equal(a->share.granted, 60 * MIB);
	/* with a's published 100 MiB as what it holds, b was given 210 MiB */
	assert_true(b->share.granted >= 200 * MIB);
	assert_true(108 * MIB + b->share.granted <= 310 * MIB);
}

/*
 * The hold on a reversal counts the VM's windows (its demand's samples),
 * not rounds: a loaded VM's window outlasts several rounds.
 */
static void test_hold_counts_windows(void **state)
{
	struct fixture *f = *state;
	struct vt_vm *a = vm_new(f->vms, "a", 1, VT_MODE_AUTO, 512 * MIB, 100 * MIB, 19,
				 150 * MIB);

	f->cfg.hold = 3;
	a->share.state = VT_VM_SHARE_GRANTED;
	a->share.granted = a->share.applied = 100 * MIB;
	a->share.last_change = -1;
	for (int r = 0; r < 8; r++) {
		vt_host_share_round_now(&f->st);
		assert_int_equal(a->share.granted, 100 * MIB);
	}
	for (int w = 0; w < 2; w++) {
		window(a, 19, 150 * MIB);
		vt_host_share_round_now(&f->st);
		assert_int_equal(a->share.granted, 100 * MIB);
	}
	window(a, 19, 150 * MIB);
	vt_host_share_round_now(&f->st);
	assert_true(a->share.granted > 100 * MIB);
	assert_int_equal(a->share.last_change, 1);
}

/* A host with DRAM on nodes 0 and 1 (tier 0) and CXL on node 2 (tier 1). */
static void two_dram_nodes(struct vt_vm *vm)
{
	vm->tiers.nr = 2;
	vm->tiers.tier[0].nr_nodes = 2;
	vm->tiers.tier[0].nodes[0] = 0;
	vm->tiers.tier[0].nodes[1] = 1;
	vm->tiers.tier[1].nr_nodes = 1;
	vm->tiers.tier[1].nodes[0] = 2;
}

static void per_node(struct fixture *f, uint64_t node0, uint64_t node1)
{
	f->cfg.nr_nodes = 2;
	f->cfg.node[0] = 0;
	f->cfg.node_budget[0] = node0;
	f->cfg.node[1] = 1;
	f->cfg.node_budget[1] = node1;
	f->cfg.budget = node0 + node1;
}

/*
 * Per-node budgets: each VM is homed on one budgeted DRAM node (within its
 * cpuset, the node its RAM fills least, in serial order) and each node's
 * round divides that node's budget between its VMs alone: a VM cooling on
 * node 0 gives its DRAM to no VM of node 1, however hot.
 */
static void test_per_node_rounds(void **state)
{
	struct fixture *f = *state;
	/* a pinned to node 1 by its cpuset; b and c free to go anywhere */
	struct vt_vm *a = vm_new(f->vms, "a", 1, VT_MODE_AUTO, 1024 * MIB, 0, 19, 900 * MIB);
	struct vt_vm *b = vm_new(f->vms, "b", 2, VT_MODE_AUTO, 1024 * MIB, 0, 19, 500 * MIB);
	struct vt_vm *c = vm_new(f->vms, "c", 3, VT_MODE_AUTO, 1024 * MIB, 0, 10, 500 * MIB);

	per_node(f, 512 * MIB, 768 * MIB);
	two_dram_nodes(a);
	two_dram_nodes(b);
	two_dram_nodes(c);
	a->stats.mems_allowed = (1ULL << 1) | (1ULL << 2);
	vt_host_share_round_now(&f->st);
	assert_true(a->share.homed && b->share.homed && c->share.homed);
	assert_int_equal(a->share.node, 1);
	/* b: 1 GiB in node 0's 512 MiB (2x) beats 2 GiB in node 1's 768 (2.7x); c: 4x, 2.7x */
	assert_int_equal(b->share.node, 0);
	assert_int_equal(c->share.node, 1);
	/* node 1: a's hottest 768 MiB of its 900 before c's lukewarm bytes */
	assert_int_equal(a->share.granted, 768 * MIB);
	assert_int_equal(c->share.granted, 0);
	assert_int_equal(f->st.node_last[1].sum, 768 * MIB);
	/* node 0: b alone, its 500 MiB and the rest (nobody else wants it) */
	assert_int_equal(b->share.granted, 512 * MIB);
	assert_int_equal(f->st.node_last[0].sum, 512 * MIB);
	assert_int_equal(f->st.last.sum, 1280 * MIB);
	/* the homes hold: b going idle leaves node 0's budget to node 0 */
	for (int w = 0; w < 12; w++) {
		window(b, 0, 0);
		window(a, 19, 900 * MIB);
		window(c, 10, 500 * MIB);
		vt_host_share_round_now(&f->st);
		assert_true(a->share.granted + c->share.granted <= 768 * MIB);
		assert_true(b->share.granted <= 512 * MIB);
	}
	assert_int_equal(c->share.node, 1);
	assert_int_equal(c->share.granted, 0);
	/*
	 * c's cpuset moving to node 0: c is homed again there and takes the
	 * budget b leaves (b's claim still falls by an eighth a window)
	 */
	c->stats.mems_allowed = 1ULL << 0;
	for (int w = 0; w < 4; w++) {
		window(b, 0, 0);
		window(c, 10, 500 * MIB);
		vt_host_share_round_now(&f->st);
		assert_int_equal(c->share.node, 0);
		assert_true(b->share.granted + c->share.granted <= 512 * MIB);
	}
	assert_true(c->share.granted >= 440 * MIB);
}

/*
 * Per-node budgets: a VM none of whose DRAM nodes has a budget is outside
 * the rounds (its policy alone); waiting VMs come off their own node's budget.
 */
static void test_per_node_unbudgeted_and_waiting(void **state)
{
	struct fixture *f = *state;
	struct vt_vm *a = vm_new(f->vms, "a", 1, VT_MODE_AUTO, 1024 * MIB, 0, 19, 600 * MIB);
	struct vt_vm *off = vm_new(f->vms, "off", 2, VT_MODE_OFF, 512 * MIB, 200 * MIB, 19,
				   400 * MIB);
	struct vt_vm *lone = vm_new(f->vms, "lone", 3, VT_MODE_AUTO, 512 * MIB, 0, 19, 400 * MIB);

	f->cfg.nr_nodes = 1;
	f->cfg.node[0] = 0;
	f->cfg.node_budget[0] = 512 * MIB;
	f->cfg.budget = 512 * MIB;
	two_dram_nodes(a);
	two_dram_nodes(off);
	two_dram_nodes(lone);
	lone->stats.mems_allowed = 1ULL << 1;
	vt_host_share_round_now(&f->st);
	assert_int_equal(a->share.node, 0);
	assert_int_equal(off->share.node, 0);
	assert_false(lone->share.homed);
	assert_int_equal(lone->share.state, VT_VM_SHARE_OFF);
	assert_true(lone->share.unhomed_logged);
	assert_int_equal(off->share.state, VT_VM_SHARE_WAITING);
	assert_int_equal(f->st.node_waiting[0], 200 * MIB);
	assert_int_equal(a->share.granted, 312 * MIB);
}

/* Per-node budgets: a dram_min is checked against its node's budget and VMs. */
static void test_per_node_check_policy(void **state)
{
	struct fixture *f = *state;
	struct vt_vm *a = vm_new(f->vms, "a", 1, VT_MODE_AUTO, 1024 * MIB, 0, 19, 600 * MIB);
	struct vt_vm *b = vm_new(f->vms, "b", 2, VT_MODE_AUTO, 1024 * MIB, 0, 19, 600 * MIB);
	struct vt_vm_policy p = b->policy;
	g_autoptr(GError) e = NULL;

	per_node(f, 512 * MIB, 512 * MIB);
	two_dram_nodes(a);
	two_dram_nodes(b);
	a->stats.mems_allowed = 1ULL << 0;
	b->stats.mems_allowed = 1ULL << 0;
	a->policy.dram_min_bytes = 400 * MIB;
	vt_host_share_round_now(&f->st);
	assert_int_equal(a->share.node, 0);
	assert_int_equal(b->share.node, 0);
	/* 400 + 100 MiB fit node 0's 512; 400 + 200 do not, whatever node 1 has */
	p.dram_min_bytes = 100 * MIB;
	assert_true(vt_host_share_check_policy(&f->st, b, &p, &e));
	p.dram_min_bytes = 200 * MIB;
	assert_false(vt_host_share_check_policy(&f->st, b, &p, &e));
	assert_true(g_str_has_prefix(e->message, "dram_min: the mins of the VMs on node 0 sum to "
				     "629145600 bytes, above its dram_budget of 536870912 bytes"));
	/* b free to go to node 1 and not homed yet: checked where it would be homed */
	g_clear_error(&e);
	b->share.homed = false;
	b->stats.mems_allowed = 0;
	assert_true(vt_host_share_check_policy(&f->st, b, &p, &e));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round, setup, teardown),
		cmocka_unit_test_setup_teardown(test_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_policy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_demand_averaged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_demand_rises_fast_falls_slowly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_growth_waits_for_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_counts_the_grant_in_progress, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_hold_counts_windows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_per_node_rounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_per_node_unbudgeted_and_waiting, setup, teardown),
		cmocka_unit_test_setup_teardown(test_per_node_check_policy, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
