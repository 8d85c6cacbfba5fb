// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The residency refresh plan: every chunk in the first plan; the moved
 * chunks in the next one, once; a chunk queued to a mover once the mover is
 * done; the round robin reaches every chunk within vt_refresh_windows()
 * plans, and not sooner than the bound says when the slice is smaller.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "refresh.h"

static unsigned int count_of(const GArray *plan, unsigned int i)
{
	unsigned int n = 0;

	for (unsigned int k = 0; k < plan->len; k++)
		n += g_array_index(plan, unsigned int, k) == i;
	return n;
}

static bool never_done(unsigned int i, void *opaque)
{
	(void)i;
	(void)opaque;
	return false;
}

static bool done_if_set(unsigned int i, void *opaque)
{
	(void)i;
	return *(bool *)opaque;
}

static void test_first_plan_is_all(void **state)
{
	struct vt_refresh *r = vt_refresh_new(1000, 7);
	g_autoptr(GArray) plan = g_array_new(FALSE, FALSE, sizeof(unsigned int));

	(void)state;
	vt_refresh_moved(r, 5);
	vt_refresh_plan(r, never_done, NULL, plan);
	assert_int_equal(plan->len, 1000);
	for (unsigned int i = 0; i < 1000; i++)
		assert_int_equal(count_of(plan, i), 1);
	/* then only the slice */
	vt_refresh_plan(r, never_done, NULL, plan);
	assert_int_equal(plan->len, 7);
	assert_int_equal(vt_refresh_windows(r), 143);
	/* asked again: all, once, and the round robin goes on where it was */
	vt_refresh_all(r);
	vt_refresh_plan(r, never_done, NULL, plan);
	assert_int_equal(plan->len, 1000);
	vt_refresh_plan(r, never_done, NULL, plan);
	assert_int_equal(plan->len, 7);
	assert_int_equal(g_array_index(plan, unsigned int, 0), 7);
	vt_refresh_free(r);
	vt_refresh_free(NULL);
}

/* Every chunk within the bound, for chunk counts around the slice. */
static void test_rotation_bound(void **state)
{
	static const unsigned int shapes[][2] = {
		{ 1, 1 }, { 10, 3 }, { 12, 3 }, { 5, 64 }, { 1000, 7 }, { 524288, 256 },
	};

	(void)state;
	for (unsigned int s = 0; s < G_N_ELEMENTS(shapes); s++) {
		unsigned int n = shapes[s][0], slice = shapes[s][1];
		struct vt_refresh *r = vt_refresh_new(n, slice);
		g_autoptr(GArray) plan = g_array_new(FALSE, FALSE, sizeof(unsigned int));
		g_autofree guint8 *seen = g_new0(guint8, n);
		unsigned int bound = vt_refresh_windows(r), covered = 0;

		assert_int_equal(bound, (n + slice - 1) / slice);
		vt_refresh_plan(r, never_done, NULL, plan);	/* the full read */
		for (unsigned int w = 0; w < bound; w++) {
			vt_refresh_plan(r, never_done, NULL, plan);
			assert_true(plan->len <= slice);
			for (unsigned int k = 0; k < plan->len; k++) {
				unsigned int i = g_array_index(plan, unsigned int, k);

				assert_true(i < n);
				covered += !seen[i];
				seen[i] = 1;
			}
			/* the bound is tight: before its last window, some chunk is left */
			if (w + 1 < bound)
				assert_true(covered < n);
		}
		assert_int_equal(covered, n);
		vt_refresh_free(r);
	}
}

static void test_moved_next_window_once(void **state)
{
	struct vt_refresh *r = vt_refresh_new(100, 10);
	g_autoptr(GArray) plan = g_array_new(FALSE, FALSE, sizeof(unsigned int));

	(void)state;
	vt_refresh_plan(r, never_done, NULL, plan);
	vt_refresh_moved(r, 50);
	vt_refresh_moved(r, 50);	/* twice: read once */
	vt_refresh_moved(r, 3);		/* also in this window's slice (0..9) */
	vt_refresh_moved(r, 100);	/* out of range: ignored */
	vt_refresh_plan(r, never_done, NULL, plan);
	assert_int_equal(count_of(plan, 50), 1);
	assert_int_equal(count_of(plan, 3), 1);
	assert_int_equal(count_of(plan, 100), 0);
	assert_int_equal(plan->len, 11);	/* 2 moved + the slice 0..9 less chunk 3 */
	for (unsigned int i = 0; i < 10; i++)
		assert_int_equal(count_of(plan, i), 1);
	/* read: not again unless moved again */
	vt_refresh_plan(r, never_done, NULL, plan);
	assert_int_equal(count_of(plan, 50), 0);
	assert_int_equal(plan->len, 10);
	vt_refresh_free(r);
}

static void test_waiting_until_mover_done(void **state)
{
	struct vt_refresh *r = vt_refresh_new(100, 10);
	g_autoptr(GArray) plan = g_array_new(FALSE, FALSE, sizeof(unsigned int));
	bool done = false;

	(void)state;
	vt_refresh_plan(r, done_if_set, &done, plan);
	vt_refresh_wait(r, 70);
	vt_refresh_wait(r, 70);
	vt_refresh_moved(r, 70);	/* already waiting: stays waiting */
	for (unsigned int w = 0; w < 3; w++) {
		vt_refresh_plan(r, done_if_set, &done, plan);
		assert_int_equal(count_of(plan, 70), 0);
	}
	done = true;
	vt_refresh_plan(r, done_if_set, &done, plan);
	assert_int_equal(count_of(plan, 70), 1);
	vt_refresh_plan(r, done_if_set, &done, plan);
	assert_int_equal(count_of(plan, 70), 0);
	/* a waiting chunk still gets its round-robin turn (its mover may never get to it) */
	vt_refresh_wait(r, 65);
	done = false;
	for (unsigned int w = 0; w < vt_refresh_windows(r); w++) {
		vt_refresh_plan(r, done_if_set, &done, plan);
		if (count_of(plan, 65))
			break;
		assert_true(w + 1 < vt_refresh_windows(r));
	}
	vt_refresh_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_plan_is_all),
		cmocka_unit_test(test_rotation_bound),
		cmocka_unit_test(test_moved_next_window_once),
		cmocka_unit_test(test_waiting_until_mover_done),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
