// SPDX-License-Identifier: GPL-2.0-or-later
/* Phase changes of the hot set: how long the profile has been stable. */
#include "phase.h"

void vt_phase_init(struct vt_phase_tracker *p)
{
	*p = (struct vt_phase_tracker){
		.hot = g_array_new(FALSE, TRUE, sizeof(guint8)),
		.hot_list = g_array_new(FALSE, FALSE, sizeof(unsigned int)),
	};
}

void vt_phase_clear(struct vt_phase_tracker *p)
{
	if (p->hot)
		g_array_free(p->hot, TRUE);
	if (p->hot_list)
		g_array_free(p->hot_list, TRUE);
	p->hot = NULL;
	p->hot_list = NULL;
}

static bool is_hot(const struct vt_mtm *m, unsigned int i, double threshold)
{
	const struct vt_mtm_chunk *c = &g_array_index(m->chunks, struct vt_mtm_chunk, i);

	return c->ema > 0 && c->ema >= threshold;
}

void vt_phase_update(struct vt_phase_tracker *p, const struct vt_mtm *m, double threshold)
{
	unsigned int n = m->chunks->len, before, now = 0, diff = 0;
	g_autoptr(GArray) hot = g_array_new(FALSE, FALSE, sizeof(unsigned int));

	if (p->hot->len != n) {
		/* other chunks (a new chunk size, RAM changed): a new profile */
		g_array_set_size(p->hot, 0);
		g_array_set_size(p->hot, n);
		g_array_set_size(p->hot_list, 0);
		p->stable_windows = 0;
	}
	/* only an active chunk can be hot (EMA above 0) */
	for (unsigned int k = 0; k < m->active->len; k++) {
		unsigned int i = g_array_index(m->active, unsigned int, k);

		if (is_hot(m, i, threshold)) {
			g_array_append_val(hot, i);
			diff += !g_array_index(p->hot, guint8, i);	/* entered */
		}
	}
	before = p->hot_list->len;
	for (unsigned int k = 0; k < before; k++) {
		unsigned int i = g_array_index(p->hot_list, unsigned int, k);

		diff += !is_hot(m, i, threshold);	/* left */
		g_array_index(p->hot, guint8, i) = 0;
	}
	now = hot->len;
	for (unsigned int k = 0; k < now; k++)
		g_array_index(p->hot, guint8, g_array_index(hot, unsigned int, k)) = 1;
	g_array_set_size(p->hot_list, 0);
	g_array_append_vals(p->hot_list, hot->data, now);
	p->last_diff = diff;
	if (diff >= VT_PHASE_CHANGE_MIN && diff * 100 > VT_PHASE_CHANGE_PCT * MAX(before, now)) {
		p->changes++;
		p->stable_windows = 0;
	} else {
		p->stable_windows++;
	}
}
