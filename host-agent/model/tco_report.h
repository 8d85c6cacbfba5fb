/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A VM's memory TCO report (vtierctl report, docs/tco.md): bytes and cost
 * per tier now and over the last hour, the all-DRAM cost and the saving,
 * the estimated slowdown, the hot set and how stable the profile is. The
 * figures come from what the VM's worker published at its last window and
 * a ring of one sample per minute; nothing here reads sysfs or asks QEMU.
 */
#ifndef VTIER_CORE_TCO_REPORT_H
#define VTIER_CORE_TCO_REPORT_H

#include <stdint.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "tier_model.h"
#include <vtier/handoff.h>

#define VT_TCO_HISTORY 60		/* one sample per minute: the last hour */
#define VT_TCO_SAMPLE_US (60 * G_USEC_PER_SEC)

struct vt_tco_sample {
	gint64 at_us;			/* monotonic */
	uint64_t bytes[VT_MAX_TIERS];
};

/* The last hour, per minute; written by the VM's worker, read under the VM's lock. */
struct vt_tco_history {
	struct vt_tco_sample s[VT_TCO_HISTORY];
	unsigned int next, len;
};

/* Keep @bytes as the sample of this minute when the last one is a minute old (or none). */
void vt_tco_history_add(struct vt_tco_history *h, gint64 now_us, const uint64_t *bytes);

/* What the report is computed from (a copy taken under the VM's lock). */
struct vt_tco_report_input {
	char name[64];
	const char *placement;
	double tco_alpha;
	uint64_t windows;
	struct vt_tier_model model;
	uint64_t bytes[VT_MAX_TIERS];		/* of this VM on each tier now */
	double access_weight[VT_MAX_TIERS];	/* sum of EMA x bytes of its chunks there */
	double fault_ns_per_s[VT_MAX_TIERS];	/* store fault time per second, last window */
	uint64_t hot_bytes;
	uint64_t stable_windows;
	uint64_t phase_changes;
	struct vt_tco_history history;
};

struct vt_tco_report_tier {
	uint64_t bytes;
	double bytes_hour_avg;
	uint64_t bytes_hour_max;
	double usd_per_hour;
	double usd_per_hour_hour_avg;
};

struct vt_tco_report {
	struct vt_tco_report_tier tier[VT_MAX_TIERS];
	uint64_t bytes;				/* all tiers */
	double usd_per_hour;
	double usd_per_hour_hour_avg;		/* over the samples of the last hour */
	unsigned int hour_samples;
	double all_dram_usd_per_hour;		/* the same bytes all on tier 0 */
	double saving_pct;
	double saving_usd_per_month;
	double fault_time_pct;			/* store faults: % of one vCPU's time */
	double numa_extra_latency_pct;		/* access-weighted extra latency vs tier 0 */
};

void vt_tco_report_compute(const struct vt_tco_report_input *in, struct vt_tco_report *out);
/* The report's JSON object (docs/abi-control.md, `report`). */
void vt_tco_report_to_json(const struct vt_tco_report_input *in, const struct vt_tco_report *r,
			   JsonBuilder *b);

/*
 * The report as STATS carries it to QEMU (VTIER_STATS_F_TCO, query-memory-tiers):
 * money in nano-USD, percentages and ratios in thousandths, each rounded to the
 * nearest; tier names longer than the hand-off's 15 bytes are cut. @tiers has
 * room for VTIER_HANDOFF_TIERS_MAX; tco->n_tiers says how many are filled.
 */
void vt_tco_report_to_wire(const struct vt_tco_report_input *in, const struct vt_tco_report *r,
			   struct vtier_handoff_tco *tco, struct vtier_handoff_tco_tier *tiers);

#endif
