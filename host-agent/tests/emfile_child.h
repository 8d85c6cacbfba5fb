/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * For the tests of servers out of fds: in a forked child, lower
 * RLIMIT_NOFILE to the fds in use (so every accept() fails with EMFILE)
 * and measure the CPU time a main context costs in blocking iterations: a
 * loop that spins on a readable listening socket burns it all.
 */
#ifndef VTIER_TESTS_EMFILE_CHILD_H
#define VTIER_TESTS_EMFILE_CHILD_H

#include <stdbool.h>
#include <sys/resource.h>
#include <unistd.h>

#include <glib.h>

/* The lowest free fd becomes the limit. False if setrlimit() failed. */
static inline bool emfile_limit_at_use(void)
{
	struct rlimit rl;
	int lowest = dup(0);

	close(lowest);
	rl.rlim_cur = (rlim_t)lowest;
	rl.rlim_max = 4096;
	return setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

static inline gboolean emfile_stop_cb(gpointer data)
{
	(void)data;
	return G_SOURCE_REMOVE;
}

static inline long rusage_us(const struct rusage *r)
{
	return (r->ru_utime.tv_sec + r->ru_stime.tv_sec) * 1000000L + r->ru_utime.tv_usec +
	       r->ru_stime.tv_usec;
}

/*
 * Run @ctx (NULL: default) for @ms with blocking iterations; returns the CPU
 * microseconds used. Attach sources before lowering the limit: a timer added
 * here needs no fd.
 */
static inline long emfile_run_cpu_us(GMainContext *ctx, int ms)
{
	gint64 end = g_get_monotonic_time() + ms * 1000LL;
	GSource *stop = g_timeout_source_new((guint)ms);
	struct rusage ru0, ru1;

	g_source_set_callback(stop, emfile_stop_cb, NULL, NULL);
	g_source_attach(stop, ctx);
	getrusage(RUSAGE_SELF, &ru0);
	while (g_get_monotonic_time() < end)
		g_main_context_iteration(ctx, TRUE);
	getrusage(RUSAGE_SELF, &ru1);
	g_source_unref(stop);
	return rusage_us(&ru1) - rusage_us(&ru0);
}

#endif /* VTIER_TESTS_EMFILE_CHILD_H */
