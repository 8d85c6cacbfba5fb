// SPDX-License-Identifier: GPL-2.0-or-later
/* MTM-style N-tier placement over chunks: EMA, histogram, promote fast, demote slowly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mtm.h"

#define EMA_ALPHA 0.5
#define PENALTY_DECAY 0.01	/* per window */

struct vt_mtm *vt_mtm_new(const struct vt_range64 *ranges, unsigned int n, uint64_t chunk_bytes,
			  uint64_t sample_stride, unsigned int nr_tiers)
{
	struct vt_mtm *m = g_new0(struct vt_mtm, 1);

	m->chunks = g_array_new(FALSE, TRUE, sizeof(struct vt_mtm_chunk));
	m->chunk_bytes = chunk_bytes;
	m->sample_stride = sample_stride;
	m->nr_tiers = MIN(nr_tiers, VT_MTM_MAX_TIERS);
	for (unsigned int r = 0; r < n; r++)
		for (uint64_t s = ranges[r].start; s < ranges[r].end; s += chunk_bytes) {
			struct vt_mtm_chunk c = {
				.start = s,
				.end = MIN(s + chunk_bytes, ranges[r].end),
				.tier = -1,
				.last_demoted = VT_MTM_NEVER,
				.last_promoted = VT_MTM_NEVER,
			};

			g_array_append_val(m->chunks, c);
		}
	return m;
}

void vt_mtm_free(struct vt_mtm *m)
{
	if (!m)
		return;
	g_array_free(m->chunks, TRUE);
	g_free(m);
}

static struct vt_mtm_chunk *chunk(struct vt_mtm *m, unsigned int i)
{
	return &g_array_index(m->chunks, struct vt_mtm_chunk, i);
}

void vt_mtm_observe(struct vt_mtm *m, const struct vt_mtm_region *regions, unsigned int n)
{
	unsigned int r = 0;

	for (unsigned int i = 0; i < m->chunks->len; i++) {
		struct vt_mtm_chunk *c = chunk(m, i);
		double weighted = 0;
		uint64_t covered = 0;

		while (r < n && regions[r].end <= c->start)
			r++;
		for (unsigned int k = r; k < n && regions[k].start < c->end; k++) {
			uint64_t s = MAX(regions[k].start, c->start), e = MIN(regions[k].end, c->end);
			double a = regions[k].accesses;

			if (e <= s)
				continue;
			if (!(a >= 0))
				a = 0;
			weighted += MIN(a, 1.0) * (double)(e - s);
			covered += e - s;
		}
		/* a chunk no region covers saw no access */
		c->ema = EMA_ALPHA * (covered ? weighted / (double)(c->end - c->start) : 0) +
			 (1 - EMA_ALPHA) * c->ema;
		c->cold_windows = c->ema < VT_MTM_COLD ? c->cold_windows + 1 : 0;
	}
}

uint64_t vt_mtm_chunk_tier_bytes(const struct vt_mtm *m, const struct vt_mtm_chunk *c, int t)
{
	/* a chunk shorter than the stride has one sample: it speaks for the chunk alone */
	return MIN((uint64_t)c->samples[t] * m->sample_stride, c->end - c->start);
}

/* Take chunk @c's bytes out of (@sign -1) or into (+1) the tier totals. */
static void count_chunk(struct vt_mtm *m, const struct vt_mtm_chunk *c, int sign)
{
	for (unsigned int t = 0; t < m->nr_tiers; t++) {
		uint64_t b = vt_mtm_chunk_tier_bytes(m, c, (int)t);

		m->tier_bytes[t] = sign > 0 ? m->tier_bytes[t] + b : m->tier_bytes[t] - MIN(b, m->tier_bytes[t]);
	}
}

/* The tier with most present samples, -1 when none is present. */
static int main_tier(const struct vt_mtm *m, const struct vt_mtm_chunk *c)
{
	uint32_t best = 0;
	int tier = -1;

	for (unsigned int t = 0; t < m->nr_tiers; t++)
		if (c->samples[t] > best) {
			best = c->samples[t];
			tier = (int)t;
		}
	return tier;
}

void vt_mtm_residency_set(struct vt_mtm *m, unsigned int i, const uint32_t *samples,
			  uint32_t nr_samples)
{
	struct vt_mtm_chunk *c;

	if (i >= m->chunks->len)
		return;
	c = chunk(m, i);
	count_chunk(m, c, -1);
	memcpy(c->samples, samples, m->nr_tiers * sizeof(*samples));
	c->nr_samples = nr_samples;
	c->tier = main_tier(m, c);
	count_chunk(m, c, +1);
}

static uint64_t chunk_present_bytes(const struct vt_mtm *m, const struct vt_mtm_chunk *c)
{
	uint64_t b = 0;

	for (unsigned int t = 0; t < m->nr_tiers; t++)
		b += vt_mtm_chunk_tier_bytes(m, c, (int)t);
	return b;
}

static bool recent(const struct vt_mtm *m, uint64_t when, const struct vt_mtm_params *p)
{
	return when != VT_MTM_NEVER && p->thrash_windows && m->window - when <= p->thrash_windows;
}

static GArray *sort_by_ema;	/* only during qsort, single-threaded */

static int cmp_hot_first(const void *a, const void *b)
{
	const struct vt_mtm_chunk *x = &g_array_index(sort_by_ema, struct vt_mtm_chunk,
						      *(const unsigned int *)a);
	const struct vt_mtm_chunk *y = &g_array_index(sort_by_ema, struct vt_mtm_chunk,
						      *(const unsigned int *)b);

	if (x->ema != y->ema)
		return x->ema > y->ema ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_cold_first(const void *a, const void *b)
{
	return -cmp_hot_first(a, b);
}

static unsigned int bin_of(double ema)
{
	int b = (int)(ema * VT_MTM_BINS);

	return (unsigned int)CLAMP(b, 0, VT_MTM_BINS - 1);
}

void vt_mtm_commit(struct vt_mtm *m, const struct vt_mtm_order *o, const struct vt_mtm_params *p)
{
	struct vt_mtm_chunk *c;
	bool promote = o->promote;
	uint64_t other, now = m->window ? m->window - 1 : 0;	/* decide() advanced it */

	if (o->chunk >= m->chunks->len)
		return;
	c = chunk(m, o->chunk);
	other = promote ? c->last_demoted : c->last_promoted;
	if (p->thrash_windows && other != VT_MTM_NEVER && now - other <= p->thrash_windows) {
		c->penalty = MIN(c->penalty + p->thrash_step, 1.0);
		m->thrash_total++;
	}
	/* until the chunk is read again, it is where it was sent */
	{
		uint32_t present = 0;

		count_chunk(m, c, -1);
		for (unsigned int t = 0; t < m->nr_tiers; t++)
			present += c->samples[t];
		memset(c->samples, 0, sizeof(c->samples));
		if (o->to_tier >= 0 && (unsigned int)o->to_tier < m->nr_tiers)
			c->samples[o->to_tier] = present;
		count_chunk(m, c, +1);
	}
	c->tier = o->to_tier;
	c->cold_windows = 0;	/* cold again for a while before the next step down */
	if (promote) {
		c->last_promoted = now;
		c->promotions++;
	} else {
		c->last_demoted = now;
		c->demotions++;
	}
	m->max_moves = MAX(m->max_moves, c->promotions + c->demotions);
}

/* The slowest-needed tier below @from with room for @bytes, or -1. */
static int demotion_target(const struct vt_mtm *m, int from, uint64_t bytes, uint64_t *room)
{
	for (unsigned int t = (unsigned int)from + 1; t < m->nr_tiers; t++)
		if (room[t] >= bytes)
			return (int)t;
	return -1;
}

void vt_mtm_decide(struct vt_mtm *m, const struct vt_mtm_params *p, const uint64_t *tier_room,
		   GArray *orders, struct vt_mtm_window_stats *st)
{
	unsigned int n = m->chunks->len, nh = 0, nc = 0;
	g_autofree unsigned int *hot = g_new(unsigned int, n + 1);
	g_autofree unsigned int *cold = g_new(unsigned int, n + 1);
	uint64_t room[VT_MTM_MAX_TIERS] = { 0 };
	uint64_t used0 = 0, budget = p->budget_bytes, cum = 0;
	double threshold = 1.0;
	unsigned int ci = 0;

	memset(st, 0, sizeof(*st));
	g_array_set_size(orders, 0);
	for (unsigned int t = 0; t < m->nr_tiers; t++)
		room[t] = tier_room[t];
	for (unsigned int i = 0; i < n; i++) {
		struct vt_mtm_chunk *c = chunk(m, i);

		c->penalty = MAX(0.0, c->penalty - PENALTY_DECAY);
		st->hist_bytes[bin_of(c->ema)] += c->end - c->start;
	}
	memcpy(st->tier_bytes, m->tier_bytes, sizeof(st->tier_bytes));
	used0 = st->tier_bytes[0];
	/* histogram: lowest bin edge above which the hottest bytes fit the allowance */
	for (int b = VT_MTM_BINS - 1; b >= 0; b--) {
		if (cum + st->hist_bytes[b] > p->allowance_bytes)
			break;
		cum += st->hist_bytes[b];
		threshold = (double)b / VT_MTM_BINS;
	}
	threshold = MAX(threshold, p->hot_threshold);
	st->threshold = threshold;

	for (unsigned int i = 0; i < n; i++) {
		struct vt_mtm_chunk *c = chunk(m, i);

		if (c->ema >= threshold && c->ema > 0) {
			st->hot_chunks++;
			st->hot_on_tier0 += c->tier == 0;
		}
		/* thrash control: a chunk demoted within K windows must be hotter to come back */
		if (c->tier > 0 && c->ema > 0 &&
		    c->ema >= threshold + c->penalty +
			      (recent(m, c->last_demoted, p) ? p->thrash_step : 0))
			hot[nh++] = i;
		if (c->samples[0])
			cold[nc++] = i;
	}
	sort_by_ema = m->chunks;
	qsort(hot, nh, sizeof(*hot), cmp_hot_first);
	qsort(cold, nc, sizeof(*cold), cmp_cold_first);
	sort_by_ema = NULL;

	/* 1. over the allowance: demote the coldest until under it (slow, budgeted) */
	while (used0 > p->allowance_bytes && ci < nc) {
		struct vt_mtm_chunk *c = chunk(m, cold[ci]);
		uint64_t b0 = vt_mtm_chunk_tier_bytes(m, c, 0), len = c->end - c->start;
		int to;

		if (len > budget)
			break;
		to = demotion_target(m, 0, len, room);
		if (to < 0)
			break;
		g_array_append_val(orders, ((struct vt_mtm_order){ cold[ci], 0, to, false }));
		budget -= len;
		room[to] -= MIN(room[to], chunk_present_bytes(m, c));
		used0 -= b0;
		st->demote_bytes += len;
		ci++;
	}
	/* 2. promote the hottest; make room by demoting colder chunks when needed */
	for (unsigned int h = 0; h < nh; h++) {
		struct vt_mtm_chunk *c = chunk(m, hot[h]);
		uint64_t len = c->end - c->start;
		uint64_t need = chunk_present_bytes(m, c) - vt_mtm_chunk_tier_bytes(m, c, 0);
		bool fits;

		if (need == 0)
			need = len;	/* nothing present yet: count it whole */
		for (;;) {
			fits = used0 + need <= p->allowance_bytes && room[0] >= need;
			if (fits || ci >= nc)
				break;
			{
				struct vt_mtm_chunk *v = chunk(m, cold[ci]);
				uint64_t vlen = v->end - v->start;
				int to;

				/* only a colder chunk makes room, and both moves must fit the budget */
				if (v->ema >= c->ema || vlen + len > budget)
					break;
				to = demotion_target(m, 0, vlen, room);
				if (to < 0)
					break;
				g_array_append_val(orders,
						   ((struct vt_mtm_order){ cold[ci], 0, to, false }));
				budget -= vlen;
				room[to] -= MIN(room[to], chunk_present_bytes(m, v));
				used0 -= MIN(used0, vt_mtm_chunk_tier_bytes(m, v, 0));
				room[0] += vt_mtm_chunk_tier_bytes(m, v, 0);
				st->demote_bytes += vlen;
				ci++;
			}
		}
		if (!fits || len > budget)
			break;
		g_array_append_val(orders, ((struct vt_mtm_order){ hot[h], c->tier, 0, true }));
		budget -= len;
		used0 += need;
		room[0] -= need;
		st->promote_bytes += len;
	}
	m->window++;
}

uint32_t vt_mtm_max_moves(const struct vt_mtm *m)
{
	return m->max_moves;
}
