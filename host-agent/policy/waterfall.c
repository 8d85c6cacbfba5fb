// SPDX-License-Identifier: GPL-2.0-or-later
/* The waterfall: cold chunks age down one tier at a time. */
#include "waterfall.h"

uint64_t vt_waterfall_decide(struct vt_mtm *m, const struct vt_waterfall_params *p, uint64_t *room,
			     GArray *orders)
{
	unsigned int n = m->chunks->len, visit = MIN(n, (unsigned int)VT_WATERFALL_VISIT);
	uint64_t used = 0;

	if (!p->age_windows || !n)
		return 0;
	vt_mtm_mark_ordered(m, orders);
	/* every chunk cold for age_windows is equally due: address order from where the last window stopped */
	for (unsigned int k = 0; k < visit; k++) {
		unsigned int i = (m->waterfall_next + k) % n;
		struct vt_mtm_chunk *c = &g_array_index(m->chunks, struct vt_mtm_chunk, i);
		uint64_t len = c->end - c->start;
		struct vt_mtm_order o;
		int to = -1;

		unsigned int age = p->age_windows;

		if (p->first_ctier && c->tier >= (int)p->first_ctier)
			age *= VT_WATERFALL_CTIER_AGE;
		if (c->tier < (int)p->first_tier || c->tier < 0 || vt_mtm_cold_windows(m, c) < age)
			continue;
		if (used + len > p->budget_bytes) {
			visit = k;	/* this one first next window */
			break;
		}
		for (unsigned int t = (unsigned int)c->tier + 1; t < m->nr_tiers; t++)
			if (room[t] >= len && !((c->refused >> t) & 1)) {
				to = (int)t;
				break;
			}
		if (to < 0 || vt_mtm_ordered(m, i))
			continue;
		o = (struct vt_mtm_order){ .chunk = i, .from_tier = c->tier, .to_tier = to,
					   .promote = false };
		g_array_append_val(orders, o);
		room[to] -= len;
		used += len;
	}
	m->waterfall_next = (m->waterfall_next + visit) % n;
	return used;
}
