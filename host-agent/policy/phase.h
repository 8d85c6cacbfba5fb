/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How sure the profile is: the windows since the hot set last changed
 * phase. A phase change is a window whose hot set (chunks at or above the
 * promotion threshold) differs from the last window's by more than
 * VT_PHASE_CHANGE_PCT percent of the larger of the two (and by at least
 * VT_PHASE_CHANGE_MIN chunks): a workload that moved to other data, not
 * one chunk warming up.
 */
#ifndef VTIER_POLICY_PHASE_H
#define VTIER_POLICY_PHASE_H

#include <stdint.h>

#include <glib.h>

#include "mtm.h"

#define VT_PHASE_CHANGE_PCT 25
#define VT_PHASE_CHANGE_MIN 2

struct vt_phase_tracker {
	GArray *hot;			/* guint8 per chunk: hot in the last window */
	GArray *hot_list;		/* unsigned int: those chunks */
	uint64_t stable_windows;	/* windows since the last phase change (or the start) */
	uint64_t changes;
	unsigned int last_diff;		/* chunks that entered or left the hot set last window */
};

void vt_phase_init(struct vt_phase_tracker *p);
void vt_phase_clear(struct vt_phase_tracker *p);
/*
 * After the window's vt_mtm_observe(): compare the hot set at @threshold with
 * the last one. Visits the active chunks and the last hot set only.
 */
void vt_phase_update(struct vt_phase_tracker *p, const struct vt_mtm *m, double threshold);

#endif
