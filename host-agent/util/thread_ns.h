/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Clocks: the CPU time of the calling thread (the per-stage and per-guest
 * CPU figures), and monotonic time, ns.
 */
#ifndef VTIER_UTIL_THREAD_NS_H
#define VTIER_UTIL_THREAD_NS_H

#include <stdint.h>
#include <time.h>

static inline uint64_t vt_thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC, ns. */
static inline uint64_t vt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif
