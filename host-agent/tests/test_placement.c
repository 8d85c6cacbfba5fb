// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The placement stage's waterfall age (engine/placement.c), which is also what
 * a guest's COLD hint may bring forward: the policy's ctier_age_windows only
 * where the waterfall runs (placement=waterfall and a compressed tier), else
 * 0, so that hints age nothing and count no chunk where nothing acts on them.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_waterfall_age),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
