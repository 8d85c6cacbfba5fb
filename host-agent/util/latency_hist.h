/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Latency histograms, ns, in log-linear buckets (8 per power of two, exact
 * below 8 ns): a fixed 4 KiB struct, added to without allocating, read as
 * percentiles or as Prometheus cumulative buckets. Not locked: the owner
 * serialises adds and reads.
 */
#ifndef VTIER_UTIL_LATENCY_HIST_H
#define VTIER_UTIL_LATENCY_HIST_H

#include <stdint.h>

#define VT_LAT_BUCKETS 512

struct vt_latency_hist {
	uint64_t count;
	uint64_t bucket[VT_LAT_BUCKETS];
};

void vt_latency_add(struct vt_latency_hist *h, uint64_t ns);
/* The @pct-th percentile (0..100) in ns, 0 when empty. */
uint64_t vt_latency_percentile(const struct vt_latency_hist *h, double pct);
/*
 * Samples known to be at most @ns (whole buckets below it: a Prometheus
 * bucket le=@ns never counts a sample above @ns), and the sum of all
 * samples estimated from bucket midpoints.
 */
uint64_t vt_latency_count_le(const struct vt_latency_hist *h, uint64_t ns);
uint64_t vt_latency_sum_estimate(const struct vt_latency_hist *h);

#endif
