/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Rate limits for log lines a peer can trigger: a token bucket per key
 * (a call site, plus a subject such as a VM's name), @burst lines at once and
 * @per_sec a second after that, with the count of what was held back for the
 * line that goes out next ("N similar messages suppressed"). The set is
 * bounded: past @max_keys keys, idle ones are forgotten, and new keys share
 * one bucket while every one is busy. Thread-safe; no global state.
 */
#ifndef VTIER_UTIL_RATELIMIT_H
#define VTIER_UTIL_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

/* One bucket (not locked: the set's, or a caller's own). */
struct vt_ratelimit {
	uint64_t cost_ns;	/* time that earns one line: 1 s / per_sec */
	uint64_t credit_ns;	/* earned and not spent, at most burst x cost */
	uint64_t max_credit_ns;
	uint64_t last_ns;
	uint64_t suppressed;	/* held back since the last line that went out */
};

void vt_ratelimit_init(struct vt_ratelimit *rl, uint32_t burst, uint32_t per_sec,
		       uint64_t now_ns);
/*
 * May a line go out at @now_ns (any monotonic clock, the same in every call)?
 * True: yes, and *@suppressed is how many were held back before it (0 if
 * none; say so first). False: held back and counted.
 */
bool vt_ratelimit_take(struct vt_ratelimit *rl, uint64_t now_ns, uint64_t *suppressed);

struct vt_ratelimits;

/* 0 in a field: 10 lines at once, 1 a second, 1024 keys. */
struct vt_ratelimits *vt_ratelimits_new(uint32_t burst, uint32_t per_sec, unsigned int max_keys);
void vt_ratelimits_free(struct vt_ratelimits *s);
/*
 * vt_ratelimit_take() on the bucket of (@site, @subject): @site is compared
 * as a pointer (a format string's address), @subject (may be NULL) as text.
 */
bool vt_ratelimits_take(struct vt_ratelimits *s, const void *site, const char *subject,
			uint64_t now_ns, uint64_t *suppressed);

#endif /* VTIER_UTIL_RATELIMIT_H */
