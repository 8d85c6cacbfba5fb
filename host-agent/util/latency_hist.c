// SPDX-License-Identifier: GPL-2.0-or-later
/* Latency histograms: log-linear buckets, 8 per power of two (latency_hist.h). */
#include <glib.h>

#include "latency_hist.h"

void vt_latency_add(struct vt_latency_hist *h, uint64_t ns)
{
	unsigned int idx;

	if (ns < 8) {
		idx = (unsigned int)ns;
	} else {
		unsigned int msb = 63u - (unsigned int)__builtin_clzll(ns);

		idx = (msb - 2) * 8 + (unsigned int)((ns >> (msb - 3)) & 7);
	}
	h->bucket[MIN(idx, VT_LAT_BUCKETS - 1)]++;
	h->count++;
}

/* Lower bound and width of bucket @idx. */
static void bucket_range(unsigned int idx, uint64_t *lo, uint64_t *width)
{
	unsigned int msb;

	if (idx < 8) {
		*lo = idx;
		*width = 1;
		return;
	}
	msb = idx / 8 + 2;
	*width = 1ULL << (msb - 3);
	*lo = (1ULL << msb) + (idx % 8) * *width;
}

uint64_t vt_latency_percentile(const struct vt_latency_hist *h, double pct)
{
	uint64_t want, seen = 0, lo, width;

	if (!h->count)
		return 0;
	want = (uint64_t)((double)h->count * pct / 100.0 + 0.5);
	want = CLAMP(want, 1, h->count);
	for (unsigned int i = 0; i < VT_LAT_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= want) {
			bucket_range(i, &lo, &width);
			return lo + width / 2;
		}
	}
	return 0;
}

/* Buckets a 64-bit ns value can reach (the last: [2^63 + 7 x 2^60, 2^64 - 1]). */
#define LAT_BUCKETS_USED ((63 - 2) * 8 + 8)

uint64_t vt_latency_count_le(const struct vt_latency_hist *h, uint64_t ns)
{
	uint64_t n = 0, lo, width;

	for (unsigned int i = 0; i < LAT_BUCKETS_USED; i++) {
		bucket_range(i, &lo, &width);
		if (lo + width - 1 > ns)
			break;
		n += h->bucket[i];
	}
	return n;
}

uint64_t vt_latency_sum_estimate(const struct vt_latency_hist *h)
{
	uint64_t lo, width;
	double sum = 0;

	for (unsigned int i = 0; i < LAT_BUCKETS_USED; i++) {
		bucket_range(i, &lo, &width);
		sum += (double)h->bucket[i] * (double)(lo + width / 2);
	}
	return sum < 1.8e19 ? (uint64_t)sum : UINT64_MAX;
}
