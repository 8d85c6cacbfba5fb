// SPDX-License-Identifier: GPL-2.0-or-later
/* Precision and recall of a snapshot, in bytes, against the phase's hot ranges. */
#include "eval.h"

void vt_score_snapshot(const struct vt_workload *w, unsigned int phase,
		       const struct vt_snapshot *snap, struct vt_score *out)
{
	const struct vt_phase *p = &w->phases[phase];

	*out = (struct vt_score){ .true_bytes = vt_phase_hot_total(p) };
	for (unsigned int i = 0; i < snap->regions->len; i++) {
		const struct vt_snapshot_region *r =
			&g_array_index(snap->regions, struct vt_snapshot_region, i);

		if (r->accesses < VT_HOT_ACCESSES)
			continue;
		out->hot_bytes += r->end - r->start;
		out->hit_bytes += vt_phase_hot_bytes(p, r->start, r->end);
	}
	out->precision = out->hot_bytes ? (double)out->hit_bytes / (double)out->hot_bytes : 0;
	out->recall = out->true_bytes ? (double)out->hit_bytes / (double)out->true_bytes : 1;
}
