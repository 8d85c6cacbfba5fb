// SPDX-License-Identifier: GPL-2.0-or-later
/* Phase changes of the hot set: how long the profile has been stable. */
#include "phase.h"

void vt_phase_init(struct vt_phase_tracker *p)
{
	*p = (struct vt_phase_tracker){ .hot = g_array_new(FALSE, TRUE, sizeof(guint8)) };
}

void vt_phase_clear(struct vt_phase_tracker *p)
{
	if (p->hot)
		g_array_free(p->hot, TRUE);
	p->hot = NULL;
}

void vt_phase_update(struct vt_phase_tracker *p, const struct vt_mtm *m, double threshold)
{
	unsigned int n = m->chunks->len, before = 0, now = 0, diff = 0;

	if (p->hot->len != n) {
		/* other chunks (a new chunk size, RAM changed): a new profile */
		g_array_set_size(p->hot, 0);
		g_array_set_size(p->hot, n);
		p->stable_windows = 0;
	}
	for (unsigned int i = 0; i < n; i++) {
		const struct vt_mtm_chunk *c = &g_array_index(m->chunks, struct vt_mtm_chunk, i);
		guint8 *was = &g_array_index(p->hot, guint8, i);
		guint8 is = c->ema > 0 && c->ema >= threshold;

		before += *was;
		now += is;
		diff += *was != is;
		*was = is;
	}
	p->last_diff = diff;
	if (diff >= VT_PHASE_CHANGE_MIN && diff * 100 > VT_PHASE_CHANGE_PCT * MAX(before, now)) {
		p->changes++;
		p->stable_windows = 0;
	} else {
		p->stable_windows++;
	}
}
