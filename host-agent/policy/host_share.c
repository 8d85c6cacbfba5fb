// SPDX-License-Identifier: GPL-2.0-or-later
/* Host-wide DRAM arbitration between VMs: min first, hottest bytes next, rate limit. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "errbuf.h"
#include "host_share.h"

typedef unsigned __int128 u128;

/* Per VM, for one round. */
struct work {
	uint64_t cap;		/* min(dram_max, RAM) */
	uint64_t total;		/* every byte of the histogram */
	uint64_t min;		/* protected this round */
	uint64_t covered;	/* protected bytes not yet matched to a bin */
	uint64_t got;		/* before the rate limit */
	uint64_t t;		/* after it */
	uint64_t demand;	/* of the division at hand */
	uint64_t fill;		/* its result */
	uint32_t weight;
};

/* A VM in a division, sorted by demand / weight, then id. */
struct key {
	uint64_t demand;
	uint64_t id;
	uint32_t weight;
	size_t i;
};

static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	u128 l = (u128)x->demand * y->weight, r = (u128)y->demand * x->weight;

	if (l != r)
		return l < r ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->i < y->i ? -1 : (x->i > y->i);
}

static uint32_t weight_of(const struct vt_share_vm *v)
{
	if (v->weight == 0)
		return VT_SHARE_WEIGHT_DEFAULT;
	return v->weight > VT_SHARE_WEIGHT_MAX ? VT_SHARE_WEIGHT_MAX : v->weight;
}

/*
 * Divide @avail between the VMs with w[i].demand > 0: all of it when it
 * fits, else water-filling in proportion to weight (@by_weight) or equally:
 * a VM whose demand is below its part takes its demand and leaves the
 * excess to the others. Sets w[i].fill of each VM (0 for the others) and
 * returns the bytes given: min(avail, sum of demands).
 */
static uint64_t divide(struct work *w, struct key *k, const struct vt_share_vm *vms, size_t n,
		       uint64_t avail, bool by_weight)
{
	uint64_t total = 0, given = 0, wsum = 0, left;
	size_t m = 0, j;

	for (size_t i = 0; i < n; i++) {
		w[i].fill = 0;
		if (!w[i].demand)
			continue;
		total += w[i].demand;
		k[m++] = (struct key){ w[i].demand, vms[i].id, by_weight ? w[i].weight : 1, i };
	}
	if (total <= avail) {
		for (j = 0; j < m; j++)
			w[k[j].i].fill = k[j].demand;
		return total;
	}
	qsort(k, m, sizeof(*k), key_cmp);
	for (j = 0; j < m; j++)
		wsum += k[j].weight;
	left = avail;
	for (j = 0; j < m; j++) {
		u128 fair = (u128)left * k[j].weight / wsum;

		if (k[j].demand > fair)
			break;	/* and every one after it: their demand / weight is larger */
		w[k[j].i].fill = k[j].demand;
		left -= k[j].demand;
		wsum -= k[j].weight;
	}
	for (size_t r = j; r < m; r++) {
		uint64_t part = (uint64_t)((u128)left * k[r].weight / wsum);

		w[k[r].i].fill = part;
		given += part;
	}
	/* the remainder of the integer division (< the VMs left), a byte each, in order */
	for (size_t r = j; r < m && given < left; r++)
		if (w[k[r].i].fill < k[r].demand) {
			w[k[r].i].fill++;
			given++;
		}
	return avail;
}

static uint64_t apply_fill(struct work *w, size_t n, bool to_t, bool subtract)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t *dst = to_t ? &w[i].t : &w[i].got;

		*dst = subtract ? *dst - w[i].fill : *dst + w[i].fill;
		sum += w[i].fill;
	}
	return sum;
}

/* min(dram_min, used, cap); used = bytes outside bin 0 (bin 0 holds the idle ones). */
static void prepare(const struct vt_share_vm *v, struct work *w)
{
	uint64_t used = 0;

	for (unsigned int b = 0; b < VT_MTM_BINS; b++) {
		w->total += v->hist_bytes[b];
		if (b)
			used += v->hist_bytes[b];
	}
	w->cap = v->ram_bytes ? v->ram_bytes : w->total;
	if (v->dram_max && v->dram_max < w->cap)
		w->cap = v->dram_max;
	w->min = MIN(v->dram_min, MIN(used, w->cap));
	w->weight = weight_of(v);
}

/* Steps 1 and 2: what each VM wants, within the budget. */
static void want(const struct vt_share_params *p, const struct vt_share_vm *vms, size_t n,
		 struct work *w, struct key *k, struct vt_share_round *info)
{
	uint64_t mins = 0, left;

	for (size_t i = 0; i < n; i++) {
		prepare(&vms[i], &w[i]);
		mins += w[i].min;
	}
	info->mins_sum = mins;
	if (mins > p->budget) {
		/* refused at policy time (vt_host_share_check_mins()); safe here: scaled */
		info->mins_scaled = 1;
		for (size_t i = 0; i < n; i++)
			w[i].min = (uint64_t)((u128)w[i].min * p->budget / mins);
		mins = 0;
		for (size_t i = 0; i < n; i++)
			mins += w[i].min;
	}
	left = p->budget - mins;
	for (size_t i = 0; i < n; i++)
		w[i].got = w[i].covered = w[i].min;
	/* the protected bytes are each VM's hottest: a bin's demand is what they do not cover */
	for (int b = VT_MTM_BINS - 1; b >= 0 && left; b--) {
		for (size_t i = 0; i < n; i++) {
			uint64_t d = vms[i].hist_bytes[b], c = MIN(w[i].covered, d);

			w[i].covered -= c;
			w[i].demand = MIN(d - c, w[i].cap - w[i].got);
		}
		left -= divide(w, k, vms, n, left, true);
		apply_fill(w, n, false, false);
	}
}

/*
 * Within @hold rounds (with new demand) of a change, a change the other way
 * is noise in the VMs' demand (the CPU each guest got), not a need: made, it
 * moves the same chunks back (the host-share scenario's protected VM went
 * 106, 91, 98, 87, 82, 90, 69, 86 MiB and its hot chunks changed node 5
 * times; a reversal let through when a step or more left a lukewarm VM at
 * 123, 91, 123, 91, 62 MiB). Growth toward the min is never held; the budget
 * still takes bytes (fit_budget()).
 */
static bool reversal_held(const struct vt_share_params *p, const struct vt_share_vm *v,
			  const struct work *w, uint64_t t)
{
	uint64_t prev = v->prev;

	if (!p->hold || v->since_change >= p->hold || !v->last_change)
		return false;
	if (t > prev)
		return v->last_change < 0 && prev >= w->min;
	return v->last_change > 0;
}

/* Step 3: from the previous allotment: at most a step, not within the dead band, no quick reversal. */
static uint64_t limit_one(const struct vt_share_params *p, const struct vt_share_vm *v,
			  struct work *w)
{
	uint64_t prev = v->prev, t = w->got;

	if (prev >= w->min && prev <= w->cap &&
	    ((t > prev ? t - prev : prev - t) < p->deadband || reversal_held(p, v, w, t)))
		t = prev;
	else if (t > prev && t - prev > p->step)
		t = prev + p->step;
	else if (t < prev && prev - t > p->step)
		t = prev - p->step;
	return MIN(t, w->cap);	/* a lowered dram_max applies at once */
}

/*
 * The sum above the budget: the VMs that grow wait for bytes others still
 * hold. Growth goes first to the VMs below their min, then by weight; if the
 * VMs that do not grow hold more than the budget on their own (the budget was
 * lowered, a VM's step held it above what it wants), they give up what they
 * hold above what they want, equally, faster than the step: the budget wins.
 */
static void fit_budget(const struct vt_share_params *p, const struct vt_share_vm *vms, size_t n,
		       struct work *w, struct key *k)
{
	uint64_t base = 0, free_bytes;

	for (size_t i = 0; i < n; i++)
		base += w[i].t > vms[i].prev ? vms[i].prev : w[i].t;
	if (base > p->budget) {
		for (size_t i = 0; i < n; i++) {
			if (w[i].t > vms[i].prev)
				w[i].t = vms[i].prev;
			w[i].demand = w[i].t > w[i].got ? w[i].t - w[i].got : 0;
		}
		divide(w, k, vms, n, base - p->budget, false);
		apply_fill(w, n, true, true);
		return;
	}
	free_bytes = p->budget - base;
	/* growth toward the min first */
	for (size_t i = 0; i < n; i++) {
		uint64_t prev = vms[i].prev, to = MIN(w[i].t, w[i].min);

		w[i].demand = w[i].t > prev && to > prev ? to - prev : 0;
	}
	free_bytes -= divide(w, k, vms, n, free_bytes, true);
	for (size_t i = 0; i < n; i++) {
		uint64_t prev = vms[i].prev, grown = w[i].fill;

		if (w[i].t <= prev)
			continue;
		w[i].fill = 0;
		w[i].demand = w[i].t - prev - grown;
		w[i].t = prev + grown;	/* the rest waits for the second division */
	}
	divide(w, k, vms, n, free_bytes, true);
	apply_fill(w, n, true, false);
}

int vt_host_share_round(const struct vt_share_params *p, const struct vt_share_vm *vms,
			size_t n, struct vt_share_out *out, struct vt_share_round *info)
{
	struct vt_share_round local;
	struct work *w;
	struct key *k;
	uint64_t sum = 0;

	if (!p || (n && (!vms || !out)))
		return -EINVAL;
	if (!info)
		info = &local;
	*info = (struct vt_share_round){ 0 };
	if (!n)
		return 0;
	/* the one allocation: the work array, then the keys */
	w = g_malloc0(n * (sizeof(*w) + sizeof(*k)));
	k = (struct key *)(void *)(w + n);
	want(p, vms, n, w, k, info);
	for (size_t i = 0; i < n; i++) {
		w[i].t = limit_one(p, &vms[i], &w[i]);
		sum += w[i].t;
	}
	if (sum > p->budget)
		fit_budget(p, vms, n, w, k);
	sum = 0;
	for (size_t i = 0; i < n; i++) {
		struct vt_share_out *o = &out[i];

		o->allot = w[i].t;
		o->wanted = w[i].got;
		o->protected_bytes = w[i].min;
		if (o->allot != o->wanted)
			o->why = VT_SHARE_RATE_LIMITED;
		else if (o->wanted == w[i].cap && w[i].total > w[i].cap)
			o->why = VT_SHARE_CAPPED;
		else if (w[i].min && o->wanted == w[i].min)
			o->why = VT_SHARE_PROTECTED;
		else
			o->why = VT_SHARE_EARNED;
		sum += o->allot;
	}
	info->sum = sum;
	g_free(w);
	return 0;
}

int vt_host_share_check_mins(uint64_t budget, int node, const struct vt_share_vm *vms, size_t n,
			     char *err, size_t err_len)
{
	uint64_t sum = 0;
	GString *names;
	unsigned int shown = 0, with = 0;
	int ret;

	for (size_t i = 0; i < n; i++)
		if (vms[i].dram_min) {
			/* saturating: a sum that wraps would pass */
			sum = sum + vms[i].dram_min < sum ? UINT64_MAX : sum + vms[i].dram_min;
			with++;
		}
	if (sum <= budget)
		return 0;
	names = g_string_new(NULL);
	for (size_t i = 0; i < n && shown < 8; i++) {
		if (!vms[i].dram_min)
			continue;
		if (vms[i].name)
			g_string_append_printf(names, "%s%s %" G_GUINT64_FORMAT, shown ? ", " : "",
					       vms[i].name, (guint64)vms[i].dram_min);
		else
			g_string_append_printf(names, "%sid %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT,
					       shown ? ", " : "", (guint64)vms[i].id,
					       (guint64)vms[i].dram_min);
		shown++;
	}
	if (with > shown)
		g_string_append_printf(names, " and %u more", with - shown);
	if (node >= 0)
		ret = vt_err_set(-ERANGE, err, err_len,
				 "dram_min: the mins of the VMs on node %d sum to %" G_GUINT64_FORMAT
				 " bytes, above its dram_budget of %" G_GUINT64_FORMAT " bytes (%s): "
				 "lower a dram_min or raise [host] dram_budget", node, (guint64)sum,
				 (guint64)budget, names->str);
	else
		ret = vt_err_set(-ERANGE, err, err_len,
				 "dram_min: the VMs' mins sum to %" G_GUINT64_FORMAT " bytes, above the "
				 "host's dram_budget of %" G_GUINT64_FORMAT " bytes (%s): lower a "
				 "dram_min or raise [host] dram_budget", (guint64)sum, (guint64)budget,
				 names->str);
	g_string_free(names, TRUE);
	return ret;
}

const char *vt_share_why_name(enum vt_share_why why)
{
	switch (why) {
	case VT_SHARE_EARNED:
		return "earned";
	case VT_SHARE_PROTECTED:
		return "protected";
	case VT_SHARE_CAPPED:
		return "capped";
	case VT_SHARE_RATE_LIMITED:
		return "rate-limited";
	}
	return "?";
}
