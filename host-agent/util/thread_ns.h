/* SPDX-License-Identifier: GPL-2.0-or-later */
/* CPU time of the calling thread, for the per-stage and per-guest CPU figures. */
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

#endif
