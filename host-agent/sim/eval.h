/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Scoring a snapshot against a workload's ground truth. One rule for every
 * profiler: a region is hot when it was found accessed in at least half of the
 * window's checks (accesses >= VT_HOT_ACCESSES). Precision and recall are in
 * bytes: precision = hot bytes inside the phase's hot ranges / hot bytes,
 * recall = the same / bytes of the phase's hot ranges.
 */
#ifndef VTIER_TELEMETRY_EVAL_H
#define VTIER_TELEMETRY_EVAL_H

#include "profiler.h"
#include "workload.h"

#define VT_HOT_ACCESSES 0.5

struct vt_score {
	double precision;	/* 0 when nothing is classified hot */
	double recall;
	uint64_t hot_bytes;	/* classified hot */
	uint64_t true_bytes;	/* in the phase's hot ranges */
	uint64_t hit_bytes;	/* both */
};

void vt_score_snapshot(const struct vt_workload *w, unsigned int phase,
		       const struct vt_snapshot *snap, struct vt_score *out);

#endif
