// SPDX-License-Identifier: GPL-2.0-or-later
/* MTM-style N-tier placement over chunks: EMA, histogram, promote fast, demote slowly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mtm.h"

#define EMA_ALPHA 0.5
#define PENALTY_DECAY 0.01	/* per window */

struct vt_mtm *vt_mtm_new(const struct vt_range *ranges, unsigned int n, uint64_t chunk_bytes,
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
				.taken_tier = -1,
				.last_demoted = VT_MTM_NEVER,
				.last_promoted = VT_MTM_NEVER,
				.sent_to = -1,
			};

			g_array_append_val(m->chunks, c);
			m->total_bytes += c.end - c.start;
		}
	m->active = g_array_new(FALSE, FALSE, sizeof(unsigned int));
	m->touched = g_array_new(FALSE, FALSE, sizeof(unsigned int));
	m->retiered = g_array_new(FALSE, FALSE, sizeof(unsigned int));
	m->arriving = g_array_new(FALSE, FALSE, sizeof(unsigned int));
	m->acc = g_new0(double, MAX(m->chunks->len, 1u));
	m->ordered = g_new0(uint64_t, m->chunks->len / 64 + 1);
	return m;
}

void vt_mtm_free(struct vt_mtm *m)
{
	if (!m)
		return;
	g_array_free(m->chunks, TRUE);
	g_array_free(m->active, TRUE);
	g_array_free(m->touched, TRUE);
	g_array_free(m->retiered, TRUE);
	g_array_free(m->arriving, TRUE);
	g_free(m->acc);
	g_free(m->ordered);
	g_free(m);
}

void vt_mtm_mark_ordered(struct vt_mtm *m, const GArray *orders)
{
	memset(m->ordered, 0, (m->chunks->len / 64 + 1) * sizeof(*m->ordered));
	for (unsigned int i = 0; i < orders->len; i++) {
		unsigned int c = g_array_index(orders, struct vt_mtm_order, i).chunk;

		if (c < m->chunks->len)
			m->ordered[c / 64] |= 1ull << (c % 64);
	}
}

static struct vt_mtm_chunk *chunk(struct vt_mtm *m, unsigned int i)
{
	return &g_array_index(m->chunks, struct vt_mtm_chunk, i);
}

/* Chunk @i may now be idle with a page on tier 0: a demotion candidate for the scan. */
static void maybe_cold(struct vt_mtm *m, unsigned int i)
{
	m->idle_hint = MAX(m->idle_hint, i + 1);
}

/* Chunk @i's tier is now @tier. */
static void set_tier(struct vt_mtm *m, unsigned int i, int tier)
{
	struct vt_mtm_chunk *c = chunk(m, i);

	c->tier = tier;
	if (c->retiered || tier == c->taken_tier)
		return;
	c->retiered = true;
	g_array_append_val(m->retiered, i);
}

void vt_mtm_take_retiered(struct vt_mtm *m, GArray *out)
{
	g_array_set_size(out, 0);
	for (unsigned int k = 0; k < m->retiered->len; k++) {
		unsigned int i = g_array_index(m->retiered, unsigned int, k);
		struct vt_mtm_chunk *c = chunk(m, i);

		c->retiered = false;
		if (c->tier != c->taken_tier)
			g_array_append_val(out, ((struct vt_mtm_retier){ i, c->taken_tier, c->tier }));
		c->taken_tier = c->tier;
	}
	g_array_set_size(m->retiered, 0);
}

uint32_t vt_mtm_cold_windows(const struct vt_mtm *m, const struct vt_mtm_chunk *c)
{
	/* an idle chunk's EMA is 0: every observe since it went idle was a cold window */
	return c->active ? c->cold_windows :
	       c->cold_windows + (uint32_t)(m->observed - c->idle_since);
}

/* @c's long-run rate as of window @at: decayed over the windows since its update */
static double rate_as_of(const struct vt_mtm_chunk *c, uint64_t at)
{
	double r = c->rate;

	if (r <= 0 || at <= c->rate_at)
		return MAX(r, 0.0);
	r *= pow(1 - VT_MTM_RATE_ALPHA, (double)(at - c->rate_at));
	return r < VT_MTM_EMA_MIN ? 0 : r;
}

double vt_mtm_rate(const struct vt_mtm *m, const struct vt_mtm_chunk *c)
{
	return rate_as_of(c, m->observed);
}

static void activate(struct vt_mtm *m, unsigned int i)
{
	struct vt_mtm_chunk *c = chunk(m, i);

	if (c->active)
		return;
	c->cold_windows = vt_mtm_cold_windows(m, c);
	c->active = true;
	g_array_append_val(m->active, i);
}

void vt_mtm_set_ema(struct vt_mtm *m, unsigned int i, double ema)
{
	if (i >= m->chunks->len)
		return;
	chunk(m, i)->ema = ema;
	chunk(m, i)->rate = ema;
	chunk(m, i)->rate_at = m->observed;
	if (ema > 0)
		activate(m, i);
}

static void arriving(struct vt_mtm *m, unsigned int i);

void vt_mtm_seed(struct vt_mtm *m, unsigned int i, double ema, uint32_t cold_windows,
		 uint32_t refused)
{
	struct vt_mtm_chunk *c;

	if (i >= m->chunks->len)
		return;
	c = chunk(m, i);
	vt_mtm_set_ema(m, i, ema > 1 ? 1 : ema < VT_MTM_EMA_MIN ? 0 : ema);
	c->cold_windows = cold_windows;
	if (!c->active)
		c->idle_since = m->observed;	/* idle: its age grows from here */
	refused &= m->nr_tiers >= 32 ? UINT32_MAX : (1U << m->nr_tiers) - 1;
	if (refused) {
		c->refused |= refused;
		c->refused_window = m->window;
		arriving(m, i);	/* so that the refusal expires */
	}
}

int vt_mtm_chunk_at(const struct vt_mtm *m, uint64_t addr)
{
	unsigned int lo = 0, hi = m->chunks->len;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		const struct vt_mtm_chunk *c = &g_array_index(m->chunks, struct vt_mtm_chunk, mid);

		if (addr < c->start)
			hi = mid;
		else if (addr >= c->end)
			lo = mid + 1;
		else
			return (int)mid;
	}
	return -1;
}

/* The first chunk from @i on whose end is above @addr (chunks sorted, not overlapping). */
static unsigned int first_chunk_after(struct vt_mtm *m, unsigned int i, uint64_t addr)
{
	unsigned int lo = i, hi = m->chunks->len;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (chunk(m, mid)->end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int cmp_index(gconstpointer a, gconstpointer b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return x < y ? -1 : x > y;
}

void vt_mtm_observe(struct vt_mtm *m, const struct vt_mtm_region *regions, unsigned int n)
{
	g_autoptr(GArray) next = g_array_sized_new(FALSE, FALSE, sizeof(unsigned int),
						   m->active->len + 64);
	unsigned int i = 0, ti = 0, ai = 0;

	m->observed++;
	/* the chunks that saw accesses, in address order, and their weighted accesses */
	g_array_set_size(m->touched, 0);
	for (unsigned int k = 0; k < n; k++) {
		double a = regions[k].accesses;

		if (!(a > 0))
			continue;	/* NaN too: no access */
		a = MIN(a, 1.0);
		i = first_chunk_after(m, i, regions[k].start);
		for (unsigned int j = i; j < m->chunks->len && chunk(m, j)->start < regions[k].end; j++) {
			const struct vt_mtm_chunk *c = chunk(m, j);
			uint64_t s = MAX(regions[k].start, c->start), e = MIN(regions[k].end, c->end);

			if (e <= s)
				continue;
			if (m->acc[j] == 0)
				g_array_append_val(m->touched, j);
			m->acc[j] += a * (double)(e - s);
		}
	}
	/* every other chunk saw no access: the active ones decay, the idle ones stay 0 */
	g_array_sort(m->active, cmp_index);
	while (ti < m->touched->len || ai < m->active->len) {
		unsigned int t = ti < m->touched->len ? g_array_index(m->touched, unsigned int, ti) :
			G_MAXUINT;
		unsigned int v = ai < m->active->len ? g_array_index(m->active, unsigned int, ai) :
			G_MAXUINT;
		unsigned int j = MIN(t, v);
		struct vt_mtm_chunk *c = chunk(m, j);

		ti += t == j;
		ai += v == j;
		if (!c->active)
			c->cold_windows += (uint32_t)(m->observed - 1 - c->idle_since);
		{
			double x = m->acc[j] / (double)(c->end - c->start);

			c->ema = EMA_ALPHA * x + (1 - EMA_ALPHA) * c->ema;
			/* the windows it was idle decay it first, up to the last one */
			c->rate = VT_MTM_RATE_ALPHA * x +
				  (1 - VT_MTM_RATE_ALPHA) * rate_as_of(c, m->observed - 1);
			c->rate_at = m->observed;
		}
		m->acc[j] = 0;
		if (c->ema < VT_MTM_EMA_MIN)
			c->ema = 0;
		c->cold_windows = c->ema < VT_MTM_COLD ? c->cold_windows + 1 : 0;
		c->active = c->ema > 0 || c->penalty > 0;
		if (c->active) {
			g_array_append_val(next, j);
		} else {
			c->idle_since = m->observed;
			if (c->samples[0])
				maybe_cold(m, j);
		}
	}
	g_array_set_size(m->active, 0);
	g_array_append_vals(m->active, next->data, next->len);
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
	set_tier(m, i, main_tier(m, c));
	count_chunk(m, c, +1);
	c->read_window = m->window;
	if (!c->active && c->samples[0])
		maybe_cold(m, i);
}

/* Chunk @i has a move to see arrive or a refusal to expire. */
static void arriving(struct vt_mtm *m, unsigned int i)
{
	struct vt_mtm_chunk *c = chunk(m, i);

	if (c->arriving)
		return;
	c->arriving = true;
	g_array_append_val(m->arriving, i);
}

unsigned int vt_mtm_arrivals(struct vt_mtm *m, bool movers_idle)
{
	unsigned int refused = 0, kept = 0;

	/* only the chunks sent somewhere or refused: the others have nothing to check */
	for (unsigned int k = 0; k < m->arriving->len; k++) {
		unsigned int i = g_array_index(m->arriving, unsigned int, k);
		struct vt_mtm_chunk *c = chunk(m, i);

		if (c->refused && m->window - c->refused_window >= VT_MTM_REFUSED_WINDOWS)
			c->refused = 0;
		/* until it is read again a chunk is where it was sent: no verdict before */
		if (c->sent_to >= 0 && c->read_window > c->sent_window) {
			if (c->tier == c->sent_to || c->tier < 0) {
				c->sent_to = -1;	/* there, or nothing of it is anywhere */
			} else if (movers_idle && m->window > c->sent_window) {
				c->refused |= 1U << c->sent_to;
				c->refused_window = m->window;
				c->sent_to = -1;
			}
		}
		refused += c->refused != 0;
		c->arriving = c->sent_to >= 0 || c->refused;
		if (c->arriving)
			g_array_index(m->arriving, unsigned int, kept++) = i;
	}
	g_array_set_size(m->arriving, kept);
	return refused;
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

/* moved within p->move_hold windows: where it went it stays (mtm.h) */
static bool held(const struct vt_mtm *m, uint64_t when, const struct vt_mtm_params *p)
{
	return when != VT_MTM_NEVER && p->move_hold && m->window - when <= p->move_hold;
}

/* qsort_r comparators over chunk indexes; the chunks come as the argument
 * (each VM's worker sorts its own at the same time as the others) */
static int cmp_hot_first(const void *a, const void *b, void *chunks)
{
	const struct vt_mtm_chunk *x = &g_array_index((GArray *)chunks, struct vt_mtm_chunk,
						      *(const unsigned int *)a);
	const struct vt_mtm_chunk *y = &g_array_index((GArray *)chunks, struct vt_mtm_chunk,
						      *(const unsigned int *)b);

	if (x->ema != y->ema)
		return x->ema > y->ema ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_cold_first(const void *a, const void *b, void *chunks)
{
	return -cmp_hot_first(a, b, chunks);
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
		if (c->penalty > 0)
			activate(m, o->chunk);	/* its penalty decays per window */
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
	set_tier(m, o->chunk, o->to_tier);
	c->sent_to = o->to_tier;
	c->sent_window = now;
	arriving(m, o->chunk);
	c->cold_windows = 0;	/* cold again for a while before the next step down */
	c->idle_since = m->observed;
	if (!c->active && c->samples[0])
		maybe_cold(m, o->chunk);
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

/*
 * The demotion candidates, coldest first: chunks with a page on tier 0 by
 * EMA, then address from the top (cmp_cold_first). Those at EMA 0 come from a
 * scan down the idle chunks (from m->idle_hint, only as far as the window
 * takes them) merged with the active ones at 0; then the active ones above 0.
 */
struct cold_iter {
	struct vt_mtm *m;
	unsigned int scan;		/* the idle scan's next candidate is below it */
	bool scanned;			/* the scan found its first candidate (the new hint) */
	const unsigned int *zero;	/* active at EMA 0, descending */
	unsigned int nz, zi;
	const unsigned int *warm;	/* active above 0, coldest first */
	unsigned int nw, wi;
	const unsigned int *held;	/* ... promoted within the hold, coldest first */
	unsigned int nh, hi;
	bool with_held;			/* held ones after all the others (the allowance) */
};

static bool idle_cold(struct vt_mtm *m, unsigned int i)
{
	const struct vt_mtm_chunk *c = chunk(m, i);

	return !c->active && c->samples[0];
}

/* The next candidate without taking it; false when there is none. */
static bool cold_peek(struct cold_iter *it, unsigned int *i)
{
	struct vt_mtm *m = it->m;

	while (it->scan > 0 && !idle_cold(m, it->scan - 1))
		it->scan--;
	if (!it->scanned) {
		/* nothing idle above the first candidate: the next window starts there */
		m->idle_hint = it->scan;
		it->scanned = true;
	}
	if (it->scan > 0 || it->zi < it->nz) {
		unsigned int z = it->zi < it->nz ? it->zero[it->zi] + 1 : 0;

		*i = MAX(it->scan, z) - 1;
		return true;
	}
	if (it->wi < it->nw) {
		*i = it->warm[it->wi];
		return true;
	}
	if (it->with_held && it->hi < it->nh) {
		*i = it->held[it->hi];
		return true;
	}
	return false;
}

static void cold_take(struct cold_iter *it, unsigned int i)
{
	if (it->scan > 0 && it->scan - 1 == i)
		it->scan--;
	else if (it->zi < it->nz && it->zero[it->zi] == i)
		it->zi++;
	else if (it->wi < it->nw)
		it->wi++;
	else
		it->hi++;
}

void vt_mtm_decide(struct vt_mtm *m, const struct vt_mtm_params *p, const uint64_t *tier_room,
		   GArray *orders, struct vt_mtm_window_stats *st)
{
	unsigned int na = m->active->len, nh = 0, nz = 0, nw = 0, nf = 0, nho = 0, v_i;
	g_autofree unsigned int *hot = g_new(unsigned int, na + 1);
	g_autofree unsigned int *zero = g_new(unsigned int, na + 1);
	g_autofree unsigned int *warm = g_new(unsigned int, na + 1);
	g_autofree unsigned int *fill = g_new(unsigned int, na + 1);
	g_autofree unsigned int *held_on = g_new(unsigned int, na + 1);
	struct cold_iter it = { .m = m, .scan = m->idle_hint };
	uint64_t room[VT_MTM_MAX_TIERS] = { 0 };
	uint64_t used0 = 0, budget = p->budget_bytes, cum = 0, active_bytes = 0;
	double threshold = 1.0, fill_from;
	bool over;

	memset(st, 0, sizeof(*st));
	g_array_set_size(orders, 0);
	for (unsigned int t = 0; t < m->nr_tiers; t++)
		room[t] = tier_room[t];
	/* the idle chunks have EMA 0 and no penalty: bin 0 */
	for (unsigned int k = 0; k < na; k++) {
		struct vt_mtm_chunk *c = chunk(m, g_array_index(m->active, unsigned int, k));

		c->penalty = MAX(0.0, c->penalty - PENALTY_DECAY);
		st->hist_bytes[bin_of(c->ema)] += c->end - c->start;
		active_bytes += c->end - c->start;
	}
	st->hist_bytes[0] += m->total_bytes - MIN(m->total_bytes, active_bytes);
	memcpy(st->tier_bytes, m->tier_bytes, sizeof(st->tier_bytes));
	used0 = st->tier_bytes[0];
	/*
	 * histogram: lowest bin edge above which the hottest bytes fit the
	 * allowance; fill_from: the edge of the bin the allowance splits
	 */
	fill_from = threshold;
	for (int b = VT_MTM_BINS - 1; b >= 0; b--) {
		if (cum + st->hist_bytes[b] > p->allowance_bytes) {
			fill_from = (double)b / VT_MTM_BINS;
			break;
		}
		cum += st->hist_bytes[b];
		threshold = (double)b / VT_MTM_BINS;
	}
	threshold = MAX(threshold, p->hot_threshold);
	fill_from = MAX(fill_from, p->hot_threshold);
	st->threshold = threshold;

	for (unsigned int k = na; k-- > 0;) {	/* from the top: zero[] descending */
		unsigned int i = g_array_index(m->active, unsigned int, k);
		struct vt_mtm_chunk *c = chunk(m, i);

		if (c->ema >= threshold && c->ema > 0) {
			st->hot_chunks++;
			st->hot_on_tier0 += c->tier == 0;
		}
		/*
		 * thrash control: a chunk demoted within K windows must be hotter to
		 * come back; within the hold it does not come back
		 */
		if (c->tier > 0 && c->ema > 0 && !held(m, c->last_demoted, p)) {
			double bar = c->penalty + (recent(m, c->last_demoted, p) ? p->thrash_step : 0);

			if (c->ema >= threshold + bar)
				hot[nh++] = i;
			else if (p->fill_split_bin && c->ema >= fill_from + bar)
				fill[nf++] = i;
		}
		if (c->samples[0] && c->ema > 0 && held(m, c->last_promoted, p))
			held_on[nho++] = i;
		else if (c->samples[0] && c->ema > 0)
			warm[nw++] = i;
		else if (c->samples[0])
			zero[nz++] = i;
	}
	qsort_r(hot, nh, sizeof(*hot), cmp_hot_first, m->chunks);
	qsort_r(fill, nf, sizeof(*fill), cmp_hot_first, m->chunks);
	qsort_r(warm, nw, sizeof(*warm), cmp_cold_first, m->chunks);
	qsort_r(held_on, nho, sizeof(*held_on), cmp_cold_first, m->chunks);
	it.zero = zero;
	it.nz = nz;
	it.warm = warm;
	it.nw = nw;
	it.held = held_on;
	it.nh = nho;

	/*
	 * 1. over the allowance: demote the coldest until under it (slow,
	 * budgeted); those promoted within the hold only when no other can go
	 */
	over = used0 > p->allowance_bytes;
	it.with_held = true;
	while (used0 > p->allowance_bytes && cold_peek(&it, &v_i)) {
		struct vt_mtm_chunk *c = chunk(m, v_i);
		uint64_t b0 = vt_mtm_chunk_tier_bytes(m, c, 0), len = c->end - c->start;
		int to;

		if (len > budget)
			break;
		to = demotion_target(m, 0, len, room);
		if (to < 0)
			break;
		g_array_append_val(orders, ((struct vt_mtm_order){ v_i, 0, to, false }));
		budget -= len;
		room[to] -= MIN(room[to], chunk_present_bytes(m, c));
		used0 -= b0;
		st->demote_bytes += len;
		cold_take(&it, v_i);
	}
	it.with_held = false;
	/*
	 * 2. promote the hottest; make room by demoting colder chunks when needed.
	 * Then the bin the allowance splits (a host share grants part of a bin):
	 * its hottest chunks into what is left, making room only with chunks
	 * below that bin (never swapping two of the bin: no ping-pong).
	 */
	for (unsigned int h = 0; h < nh + nf; h++) {
		unsigned int i = h < nh ? hot[h] : fill[h - nh];
		struct vt_mtm_chunk *c = chunk(m, i);
		double colder = h < nh ? c->ema : fill_from;
		uint64_t len = c->end - c->start;
		uint64_t need = chunk_present_bytes(m, c) - vt_mtm_chunk_tier_bytes(m, c, 0);
		bool fits;

		if (need == 0)
			need = len;	/* nothing present yet: count it whole */
		for (;;) {
			fits = used0 + need <= p->allowance_bytes && room[0] >= need;
			if (fits || (over && p->no_swap_while_over) || !cold_peek(&it, &v_i))
				break;
			{
				struct vt_mtm_chunk *v = chunk(m, v_i);
				uint64_t vlen = v->end - v->start;
				int to;

				/* only a colder chunk makes room, and both moves must fit the budget */
				if (v->ema + p->swap_margin >= colder || vlen + len > budget)
					break;
				to = demotion_target(m, 0, vlen, room);
				if (to < 0)
					break;
				g_array_append_val(orders,
						   ((struct vt_mtm_order){ v_i, 0, to, false }));
				budget -= vlen;
				room[to] -= MIN(room[to], chunk_present_bytes(m, v));
				used0 -= MIN(used0, vt_mtm_chunk_tier_bytes(m, v, 0));
				room[0] += vt_mtm_chunk_tier_bytes(m, v, 0);
				st->demote_bytes += vlen;
				cold_take(&it, v_i);
			}
		}
		if (!fits || len > budget)
			break;
		g_array_append_val(orders, ((struct vt_mtm_order){ i, c->tier, 0, true }));
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
