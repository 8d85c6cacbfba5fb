// SPDX-License-Identifier: GPL-2.0-or-later
/* TierScape's analytical model: least slowdown within a TCO bound, by a greedy over slopes. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tco.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define PAGE 4096.0

double vt_tco_usd_per_hour(uint64_t bytes, double usd_per_gib)
{
	return (double)bytes / GIB * usd_per_gib / VT_TCO_AMORTIZE_HOURS;
}

static double cost(const struct vt_tco_tier *t, uint64_t bytes)
{
	return vt_tco_usd_per_hour(bytes, t->usd_per_gib);
}

/* An upgrade of one item: from a slower, cheaper tier to a faster, dearer one. */
struct step {
	unsigned int item;
	int from, to;
	double dcost;		/* USD per hour added (may be <= 0: a faster tier that is not dearer) */
	double dslow;		/* slowdown saved, > 0, or 0 for an item nobody accesses */
	double slope;		/* dslow / dcost; HUGE_VAL when dcost <= 0 */
};

/* A max-heap of candidate steps by slope; ties: the larger saving, then the lower item. */
static bool before(const struct step *a, const struct step *b)
{
	if (a->slope != b->slope)
		return a->slope > b->slope;
	if (a->dslow != b->dslow)
		return a->dslow > b->dslow;
	return a->item < b->item;
}

static void heap_push(GArray *h, const struct step *s)
{
	unsigned int i = h->len;

	g_array_append_val(h, *s);
	while (i > 0) {
		unsigned int parent = (i - 1) / 2;
		struct step *x = &g_array_index(h, struct step, i);
		struct step *p = &g_array_index(h, struct step, parent);
		struct step t;

		if (!before(x, p))
			break;
		t = *x, *x = *p, *p = t;
		i = parent;
	}
}

static struct step heap_pop(GArray *h)
{
	struct step top = g_array_index(h, struct step, 0);
	unsigned int i = 0, n = h->len - 1;

	g_array_index(h, struct step, 0) = g_array_index(h, struct step, n);
	g_array_set_size(h, n);
	for (;;) {
		unsigned int l = 2 * i + 1, r = l + 1, best = i;
		struct step t;

		if (l < n && before(&g_array_index(h, struct step, l), &g_array_index(h, struct step, best)))
			best = l;
		if (r < n && before(&g_array_index(h, struct step, r), &g_array_index(h, struct step, best)))
			best = r;
		if (best == i)
			break;
		t = g_array_index(h, struct step, i);
		g_array_index(h, struct step, i) = g_array_index(h, struct step, best);
		g_array_index(h, struct step, best) = t;
		i = best;
	}
	return top;
}

struct solver {
	const struct vt_tco_tier *tiers;
	unsigned int nt;
	const struct vt_tco_item *items;
	uint64_t held[VT_MTM_MAX_TIERS];
};

static bool fits(const struct solver *s, int t, uint64_t bytes)
{
	uint64_t cap = s->tiers[t].capacity_bytes;

	return s->held[t] <= cap && bytes <= cap - s->held[t];
}

/*
 * The item's next step from tier @at: the steepest one (the next vertex of
 * the lower convex hull of its (cost, latency) options, among tiers with
 * room). False when no faster tier has room, or the only faster tiers that
 * are not dearer save nothing.
 */
static bool next_step(const struct solver *s, unsigned int i, int at, struct step *out)
{
	const struct vt_tco_item *it = &s->items[i];
	bool found = false;

	for (unsigned int b = 0; b < s->nt; b++) {
		struct step c = { .item = i, .from = at, .to = (int)b };

		if (s->tiers[b].latency_ns >= s->tiers[at].latency_ns || !fits(s, (int)b, it->bytes) ||
		    (it->refused >> b) & 1)
			continue;
		c.dcost = cost(&s->tiers[b], it->bytes) - cost(&s->tiers[at], it->bytes);
		c.dslow = it->rate * (s->tiers[at].latency_ns - s->tiers[b].latency_ns);
		if (c.dcost <= 0 && c.dslow <= 0)
			continue;
		c.slope = c.dcost <= 0 ? HUGE_VAL : c.dslow / c.dcost;
		if ((int)b == it->tier && it->stay > 1)
			c.slope *= it->stay;
		if (!found || before(&c, out))
			*out = c, found = true;
	}
	return found;
}

static int cmp_coldest(const void *a, const void *b, void *data)
{
	const struct vt_tco_item *items = data;
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	if (items[x].rate != items[y].rate)
		return items[x].rate < items[y].rate ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int cmp_cheapest(const void *a, const void *b, void *data)
{
	const struct vt_tco_tier *tiers = data;
	const struct vt_tco_tier *x = &tiers[*(const unsigned int *)a];
	const struct vt_tco_tier *y = &tiers[*(const unsigned int *)b];

	if (x->usd_per_gib != y->usd_per_gib)
		return x->usd_per_gib < y->usd_per_gib ? -1 : 1;
	if (x->latency_ns != y->latency_ns)
		return x->latency_ns < y->latency_ns ? -1 : 1;
	return *(const unsigned int *)a < *(const unsigned int *)b ? -1 : 1;
}

int vt_tco_solve(const struct vt_tco_tier *tiers, unsigned int nt, const struct vt_tco_item *items,
		 unsigned int n, double alpha, int *target, struct vt_tco_solution *sol)
{
	struct solver s = { .tiers = tiers, .nt = nt, .items = items };
	g_autofree unsigned int *order = NULL;
	g_autofree int *base = NULL;
	g_autoptr(GArray) heap = NULL;
	g_autoptr(GArray) path = NULL;
	unsigned int by_cost[VT_MTM_MAX_TIERS];
	double cum = 0, peak = 0;

	memset(sol, 0, sizeof(*sol));
	if (!nt || nt > VT_MTM_MAX_TIERS || !(alpha >= 0 && alpha <= 1))
		return -EINVAL;
	for (unsigned int t = 0; t < nt; t++)
		if (!(tiers[t].usd_per_gib >= 0 && isfinite(tiers[t].usd_per_gib)) ||
		    !(tiers[t].latency_ns > 0 && isfinite(tiers[t].latency_ns)))
			return -EINVAL;
	for (unsigned int i = 0; i < n; i++)
		if (!(items[i].rate >= 0 && isfinite(items[i].rate)))
			return -EINVAL;

	/* 1. the cheapest placement: coldest items first onto the cheapest tiers with room */
	order = g_new(unsigned int, n + 1);
	base = g_new(int, n + 1);
	for (unsigned int i = 0; i < n; i++)
		order[i] = i;
	g_qsort_with_data(order, (gint)n, sizeof(*order), cmp_coldest, (void *)items);
	for (unsigned int t = 0; t < nt; t++)
		by_cost[t] = t;
	g_qsort_with_data(by_cost, (gint)nt, sizeof(*by_cost), cmp_cheapest, (void *)tiers);
	for (unsigned int k = 0; k < n; k++) {
		unsigned int i = order[k];

		base[i] = -1;
		for (unsigned int j = 0; j < nt; j++)
			if (fits(&s, (int)by_cost[j], items[i].bytes) &&
			    !((items[i].refused >> by_cost[j]) & 1)) {
				base[i] = (int)by_cost[j];
				s.held[base[i]] += items[i].bytes;
				sol->tco_min += cost(&tiers[base[i]], items[i].bytes);
				break;
			}
	}

	/*
	 * 2. upgrades, steepest first, until nothing is left: the path from the
	 * cheapest placement to the fastest. Every item's steps follow its hull,
	 * so its slopes fall; the heap holds one step per item at a time.
	 */
	heap = g_array_new(FALSE, FALSE, sizeof(struct step));
	path = g_array_new(FALSE, FALSE, sizeof(struct step));
	memcpy(target, base, n * sizeof(*target));
	for (unsigned int i = 0; i < n; i++) {
		struct step st;

		if (base[i] >= 0 && next_step(&s, i, base[i], &st))
			heap_push(heap, &st);
	}
	while (heap->len) {
		struct step st = heap_pop(heap);
		struct step again;

		if (!fits(&s, st.to, items[st.item].bytes)) {
			/* the tier filled since: the item's hull without it */
			if (next_step(&s, st.item, st.from, &again))
				heap_push(heap, &again);
			continue;
		}
		s.held[st.from] -= items[st.item].bytes;
		s.held[st.to] += items[st.item].bytes;
		target[st.item] = st.to;
		g_array_append_val(path, st);
		cum += st.dcost;
		peak = MAX(peak, cum);
		if (next_step(&s, st.item, st.to, &again))
			heap_push(heap, &again);
	}
	sol->tco_max = sol->tco_min + peak;
	sol->tco_bound = sol->tco_min + alpha * peak;

	/*
	 * 3. the longest prefix of the path within the bound. The first step
	 * that does not fit would be taken in part by the fractional optimum:
	 * that part is what keeping chunks whole costs (at most one step).
	 */
	memcpy(target, base, n * sizeof(*target));
	cum = sol->tco_min;
	sol->slowdown_lp = NAN;
	for (unsigned int k = 0; k < path->len; k++) {
		const struct step *st = &g_array_index(path, struct step, k);
		double slack = sol->tco_bound - cum;

		if (st->dcost > slack + 1e-12 * MAX(1.0, fabs(sol->tco_bound))) {
			double part = st->dcost > 0 ? MAX(slack, 0.0) / st->dcost : 0;

			sol->slowdown_lp = -part * st->dslow;	/* plus the integral slowdown, below */
			break;
		}
		target[st->item] = st->to;
		cum += st->dcost;
		sol->steps++;
	}
	sol->tco = 0;
	sol->slowdown = 0;
	for (unsigned int i = 0; i < n; i++) {
		if (target[i] < 0)
			continue;
		sol->tco += cost(&tiers[target[i]], items[i].bytes);
		sol->slowdown += items[i].rate * tiers[target[i]].latency_ns;
	}
	sol->slowdown_lp = isnan(sol->slowdown_lp) ? sol->slowdown : sol->slowdown + sol->slowdown_lp;
	return 0;
}

/* Decide ----------------------------------------------------------------- */

struct move {
	unsigned int chunk;
	int from, to;
	uint64_t bytes;
	double rate;
	bool done;
};

static int cmp_hottest(const void *a, const void *b)
{
	const struct move *x = a, *y = b;

	if (x->rate != y->rate)
		return x->rate > y->rate ? -1 : 1;
	return x->chunk < y->chunk ? -1 : x->chunk > y->chunk;
}

struct emitter {
	GArray *orders;
	int64_t avail[VT_MTM_MAX_TIERS];	/* bytes tier t may still take (tier 0: allowance too) */
	uint64_t *room;
	uint64_t budget;
	struct vt_tco_window_stats *st;
	const struct vt_tco_params *p;
};

static bool can_emit(const struct emitter *e, const struct move *mv, uint64_t extra_budget)
{
	return !mv->done && mv->bytes + extra_budget <= e->budget &&
	       e->avail[mv->to] >= (int64_t)mv->bytes;
}

static void emit(struct emitter *e, struct move *mv)
{
	bool promote = e->p->tier[mv->to].latency_ns < e->p->tier[mv->from].latency_ns;
	struct vt_mtm_order o = { mv->chunk, mv->from, mv->to, promote };

	g_array_append_val(e->orders, o);
	mv->done = true;
	e->budget -= mv->bytes;
	e->avail[mv->to] -= (int64_t)mv->bytes;
	e->avail[mv->from] += (int64_t)mv->bytes;
	e->room[mv->to] -= MIN(e->room[mv->to], mv->bytes);
	if (promote)
		e->st->promote_bytes += mv->bytes;
	else
		e->st->demote_bytes += mv->bytes;
}

int vt_tco_decide(struct vt_mtm *m, const struct vt_tco_params *p, uint64_t *room, GArray *orders,
		  struct vt_tco_window_stats *st)
{
	unsigned int n = m->chunks->len, nt = MIN(p->nr_tiers, m->nr_tiers), np = 0, nd = 0;
	g_autofree struct vt_tco_item *items = g_new0(struct vt_tco_item, n + 1);
	g_autofree int *target = g_new(int, n + 1);
	g_autofree struct move *up = g_new0(struct move, n + 1);
	g_autofree struct move *down = g_new0(struct move, n + 1);
	struct vt_tco_tier tiers[VT_MTM_MAX_TIERS];
	uint64_t held[VT_MTM_MAX_TIERS] = { 0 };
	struct emitter e = { .orders = orders, .room = room, .budget = p->budget_bytes, .st = st,
			     .p = p };
	int ret;

	memset(st, 0, sizeof(*st));
	g_array_set_size(orders, 0);
	if (!nt)
		return -EINVAL;
	for (unsigned int i = 0; i < n; i++) {
		const struct vt_mtm_chunk *c = &g_array_index(m->chunks, struct vt_mtm_chunk, i);

		items[i].bytes = c->end - c->start;
		/* its long-run rate: the EMA of a lukewarm chunk is noise (mtm.h) */
		items[i].rate = vt_mtm_rate(m, c) * (double)items[i].bytes / PAGE;
		items[i].tier = c->tier < (int)nt ? c->tier : -1;
		items[i].stay = VT_TCO_STAY;
		/* never its own tier: it is there */
		items[i].refused = items[i].tier >= 0 ? c->refused & ~(1U << items[i].tier) : c->refused;
		if (items[i].tier >= 0)
			held[items[i].tier] += items[i].bytes;
	}
	/* what the VM holds on a tier plus what the tier can still take; tier 0 within the allowance */
	for (unsigned int t = 0; t < nt; t++) {
		tiers[t] = p->tier[t];
		tiers[t].capacity_bytes = room[t] > UINT64_MAX - held[t] ? UINT64_MAX : held[t] + room[t];
	}
	tiers[0].capacity_bytes = MIN(tiers[0].capacity_bytes, p->allowance_bytes);
	/* chunks with nothing present (never touched) are nobody's cost: left out */
	{
		g_autofree unsigned int *idx = g_new(unsigned int, n + 1);
		g_autofree struct vt_tco_item *present = g_new(struct vt_tco_item, n + 1);
		g_autofree int *ptarget = g_new(int, n + 1);
		unsigned int k = 0;

		for (unsigned int i = 0; i < n; i++) {
			target[i] = items[i].tier;
			if (items[i].tier >= 0) {
				idx[k] = i;
				present[k++] = items[i];
			}
		}
		ret = vt_tco_solve(tiers, nt, present, k, p->alpha, ptarget, &st->sol);
		if (ret < 0)
			return ret;
		for (unsigned int j = 0; j < k; j++)
			target[idx[j]] = ptarget[j] >= 0 ? ptarget[j] : items[idx[j]].tier;
	}
	for (unsigned int t = 0; t < nt; t++)
		e.avail[t] = (int64_t)MIN(tiers[t].capacity_bytes, (uint64_t)INT64_MAX / 2) -
			     (int64_t)held[t];
	for (unsigned int i = 0; i < n; i++) {
		struct move mv = { i, items[i].tier, target[i], items[i].bytes, items[i].rate, false };

		if (items[i].tier >= 0 && target[i] == items[i].tier) {
			/*
			 * Where it should be by its majority, but some of its pages
			 * are elsewhere (faulted back, moved in part): those follow,
			 * the largest minority first, one a window.
			 */
			const struct vt_mtm_chunk *c = &g_array_index(m->chunks, struct vt_mtm_chunk, i);
			int other = -1;

			for (unsigned int t = 0; t < nt; t++)
				if ((int)t != target[i] && c->samples[t] &&
				    (other < 0 || c->samples[t] > c->samples[other]))
					other = (int)t;
			if (other < 0)
				continue;
			mv.from = other;
			mv.bytes = MIN((uint64_t)c->samples[other] * m->sample_stride, items[i].bytes);
		}
		if (items[i].tier < 0 || mv.from == mv.to)
			continue;
		if (tiers[mv.to].latency_ns < tiers[mv.from].latency_ns)
			up[np++] = mv;
		else
			down[nd++] = mv;
	}
	qsort(up, np, sizeof(*up), cmp_hottest);
	qsort(down, nd, sizeof(*down), cmp_hottest);
	/* coldest demotions first */
	for (unsigned int i = 0; i < nd / 2; i++) {
		struct move t = down[i];

		down[i] = down[nd - 1 - i];
		down[nd - 1 - i] = t;
	}
	/* promotions, hottest first; room on their tier comes from its demotions */
	for (unsigned int u = 0; u < np; u++) {
		struct move *mv = &up[u];

		for (unsigned int d = 0; d < nd && e.avail[mv->to] < (int64_t)mv->bytes; d++)
			if (down[d].from == mv->to && can_emit(&e, &down[d], mv->bytes))
				emit(&e, &down[d]);
		if (can_emit(&e, mv, 0))
			emit(&e, mv);
	}
	/* then the other demotions, twice: one may make room for another */
	for (unsigned int pass = 0; pass < 2; pass++)
		for (unsigned int d = 0; d < nd; d++)
			if (can_emit(&e, &down[d], 0))
				emit(&e, &down[d]);
	for (unsigned int u = 0; u < np; u++)
		st->misplaced_bytes += up[u].done ? 0 : up[u].bytes;
	for (unsigned int d = 0; d < nd; d++)
		st->misplaced_bytes += down[d].done ? 0 : down[d].bytes;
	return 0;
}
