// SPDX-License-Identifier: GPL-2.0-or-later
/* Phase changes of the hot set: one chunk warming up is not one, a moved hot set is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "phase.h"

#define CHUNK (2ULL << 20)

static void set_hot(struct vt_mtm *m, unsigned int from, unsigned int to)
{
	for (unsigned int i = 0; i < m->chunks->len; i++)
		vt_mtm_set_ema(m, i, i >= from && i < to ? 0.9 : 0);
}

static void test_phases(void **state)
{
	struct vt_range r = { 0, 40 * CHUNK };
	struct vt_mtm *m = vt_mtm_new(&r, 1, CHUNK, 16384, 2);
	struct vt_phase_tracker p;

	(void)state;
	vt_phase_init(&p);
	set_hot(m, 0, 0);
	vt_phase_update(&p, m, 0.5);
	assert_int_equal(p.stable_windows, 1);
	/* a hot set appears: 10 chunks enter, a phase change */
	set_hot(m, 0, 10);
	vt_phase_update(&p, m, 0.5);
	assert_int_equal(p.changes, 1);
	assert_int_equal(p.stable_windows, 0);
	for (unsigned int w = 0; w < 5; w++)
		vt_phase_update(&p, m, 0.5);
	assert_int_equal(p.stable_windows, 5);
	/* one more chunk (10 %) is not a phase change; nor are 2 of 10 (20 %) */
	set_hot(m, 0, 11);
	vt_phase_update(&p, m, 0.5);
	set_hot(m, 2, 11);
	vt_phase_update(&p, m, 0.5);
	assert_int_equal(p.changes, 1);
	assert_int_equal(p.stable_windows, 7);
	assert_int_equal(p.last_diff, 2);
	/* the hot set moves elsewhere */
	set_hot(m, 20, 29);
	vt_phase_update(&p, m, 0.5);
	assert_int_equal(p.changes, 2);
	assert_int_equal(p.stable_windows, 0);
	vt_phase_clear(&p);
	vt_phase_clear(&p);	/* twice is fine */
	vt_mtm_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_phases),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
