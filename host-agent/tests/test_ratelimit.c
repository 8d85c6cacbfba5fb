// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Rate limits of log lines (util/ratelimit.c) and of vtierd's own log
 * (vt_daemon_log): a bucket on a clock the test drives, keys by call site
 * and subject, the bound on keys; then 2,500 peer-triggered lines from four
 * threads within a second give the burst, and the next line after a second
 * says how many were suppressed; another VM's lines and debug lines pass.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <glib.h>

#include "daemon.h"
#include "ratelimit.h"

#define SEC 1000000000ull

static void test_bucket(void **state)
{
	struct vt_ratelimit rl;
	uint64_t sup = 99, passed = 0;

	(void)state;
	vt_ratelimit_init(&rl, 10, 1, 5 * SEC);
	for (int i = 0; i < 2500; i++)
		passed += vt_ratelimit_take(&rl, 5 * SEC + (uint64_t)i * (SEC / 2500) * 9 / 10, &sup);
	assert_int_equal(passed, 10);
	assert_int_equal(sup, 0);
	/* a second on: one line, after the count of those held back */
	assert_true(vt_ratelimit_take(&rl, 6 * SEC + SEC / 2, &sup));
	assert_int_equal(sup, 2490);
	assert_false(vt_ratelimit_take(&rl, 6 * SEC + SEC / 2, &sup));
	/* a clock going back earns nothing */
	assert_false(vt_ratelimit_take(&rl, SEC, &sup));
	/* a long pause earns the burst, no more */
	passed = 0;
	for (int i = 0; i < 100; i++)
		passed += vt_ratelimit_take(&rl, 3600 * SEC, &sup);
	assert_int_equal(passed, 10);
	/* 3 a second */
	vt_ratelimit_init(&rl, 1, 3, 0);
	passed = 0;
	for (uint64_t t = 0; t < 2 * SEC; t += SEC / 100)
		passed += vt_ratelimit_take(&rl, t, &sup);
	assert_int_equal(passed, 6);
}

static const char site_a[] = "a", site_b[] = "b";

static void test_keys(void **state)
{
	struct vt_ratelimits *s = vt_ratelimits_new(2, 1, 4);
	uint64_t sup;

	(void)state;
	/* per site, per subject */
	assert_true(vt_ratelimits_take(s, site_a, "vm1", 0, &sup));
	assert_true(vt_ratelimits_take(s, site_a, "vm1", 0, &sup));
	assert_false(vt_ratelimits_take(s, site_a, "vm1", 0, &sup));
	assert_true(vt_ratelimits_take(s, site_a, "vm2", 0, &sup));
	assert_true(vt_ratelimits_take(s, site_b, "vm1", 0, &sup));
	assert_true(vt_ratelimits_take(s, site_a, NULL, 0, &sup));
	assert_true(vt_ratelimits_take(s, site_a, "", 0, &sup));	/* NULL and "" are one */
	assert_false(vt_ratelimits_take(s, site_a, NULL, 0, &sup));
	/* four keys, all busy: a fifth shares one bucket with any other new one */
	assert_true(vt_ratelimits_take(s, site_b, "x", 0, &sup));
	assert_true(vt_ratelimits_take(s, site_b, "y", 0, &sup));
	assert_false(vt_ratelimits_take(s, site_b, "z", 0, &sup));
	/* a minute later they are idle: forgotten, and a new key has its own bucket */
	for (int i = 0; i < 2; i++)
		assert_true(vt_ratelimits_take(s, site_b, "z", 60 * SEC, &sup));
	assert_false(vt_ratelimits_take(s, site_b, "z", 60 * SEC, &sup));
	assert_true(vt_ratelimits_take(s, site_b, "w", 60 * SEC, &sup));
	assert_int_equal(sup, 0);
	vt_ratelimits_free(s);
	vt_ratelimits_free(NULL);
}

/* What vtierd's log function received (vt_log_fn has no argument of its own). */
struct seen {
	GMutex lock;
	GPtrArray *lines;
};

static struct seen seen;

static void log_fn(GLogLevelFlags level, const char *vm, const char *message)
{
	(void)level;
	g_mutex_lock(&seen.lock);
	g_ptr_array_add(seen.lines, g_strdup_printf("%s: %s", vm ? vm : "-", message));
	g_mutex_unlock(&seen.lock);
}

static guint lines(void)
{
	guint n;

	g_mutex_lock(&seen.lock);
	n = seen.lines->len;
	g_mutex_unlock(&seen.lock);
	return n;
}

static const char *line(guint i)
{
	return g_ptr_array_index(seen.lines, i);
}

/* A hand-off peer's flood, as backend.c logs it. */
static gpointer flood(gpointer d)
{
	for (int i = 0; i < 625; i++)
		vt_daemon_log(d, G_LOG_LEVEL_WARNING, NULL, "migration event %u of '%s' (QEMU pid "
			      "%d): refused", 7u, "ram", 1234);
	return NULL;
}

static void test_daemon_log_flood(void **state)
{
	struct vt_tiers tiers = { 0 };
	struct vt_daemon *d;
	GThread *th[4];
	gint64 t0;

	(void)state;
	g_mutex_init(&seen.lock);
	seen.lines = g_ptr_array_new_with_free_func(g_free);
	d = vt_daemon_new(&tiers, log_fn);
	t0 = g_get_monotonic_time();
	for (int i = 0; i < 4; i++)
		th[i] = g_thread_new("flood", flood, d);
	for (int i = 0; i < 4; i++)
		g_thread_join(th[i]);
	/* 2,500 calls within the second: the burst */
	assert_true(g_get_monotonic_time() - t0 < G_USEC_PER_SEC);
	assert_int_equal(lines(), 10);
	for (guint i = 0; i < 10; i++)
		assert_string_equal(line(i), "-: migration event 7 of 'ram' (QEMU pid 1234): refused");
	/* another VM's line of the same call site is its own */
	vt_daemon_log(d, G_LOG_LEVEL_WARNING, "vm2", "migration event %u of '%s' (QEMU pid "
		      "%d): refused", 7u, "ram", 99);
	assert_int_equal(lines(), 11);
	/* debug lines are never held back */
	for (int i = 0; i < 50; i++)
		vt_daemon_log(d, G_LOG_LEVEL_DEBUG, NULL, "debug %d", i);
	assert_int_equal(lines(), 61);
	/* a second later: the count of what was held back, then the line */
	while (g_get_monotonic_time() - t0 < G_USEC_PER_SEC + G_USEC_PER_SEC / 10)
		g_usleep(10000);
	flood(d);
	assert_int_equal(lines(), 63);
	assert_string_equal(line(61), "-: (2490 similar messages suppressed: at most 10 at once, "
			    "then 1 a second)");
	assert_string_equal(line(62), "-: migration event 7 of 'ram' (QEMU pid 1234): refused");
	vt_daemon_free(d);
	g_ptr_array_free(seen.lines, TRUE);
	g_mutex_clear(&seen.lock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_daemon_log_flood),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
