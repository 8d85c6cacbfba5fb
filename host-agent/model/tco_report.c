// SPDX-License-Identifier: GPL-2.0-or-later
/* A VM's memory TCO report: arithmetic and JSON. */
#include <math.h>
#include <string.h>

#include "json_member.h"
#include "tco.h"
#include "tco_report.h"

void vt_tco_history_add(struct vt_tco_history *h, gint64 now_us, const uint64_t *bytes)
{
	unsigned int last = (h->next + VT_TCO_HISTORY - 1) % VT_TCO_HISTORY;
	struct vt_tco_sample *s;

	if (h->len && now_us - h->s[last].at_us < VT_TCO_SAMPLE_US)
		return;
	s = &h->s[h->next];
	s->at_us = now_us;
	memcpy(s->bytes, bytes, sizeof(s->bytes));
	h->next = (h->next + 1) % VT_TCO_HISTORY;
	h->len = MIN(h->len + 1, (unsigned int)VT_TCO_HISTORY);
}

void vt_tco_report_compute(const struct vt_tco_report_input *in, struct vt_tco_report *out)
{
	const struct vt_tier_model *m = &in->model;
	double dram = m->nr ? m->t[0].usd_per_gib : 0, weight = 0, extra = 0;
	unsigned int nr = MIN(m->nr, (unsigned int)VT_MAX_TIERS);

	memset(out, 0, sizeof(*out));
	out->hour_samples = in->history.len;
	for (unsigned int t = 0; t < nr; t++) {
		struct vt_tco_report_tier *r = &out->tier[t];
		double sum = 0;

		r->bytes = in->bytes[t];
		r->usd_per_hour = vt_tco_usd_per_hour(r->bytes, m->t[t].usd_per_gib);
		for (unsigned int k = 0; k < in->history.len; k++) {
			sum += (double)in->history.s[k].bytes[t];
			r->bytes_hour_max = MAX(r->bytes_hour_max, in->history.s[k].bytes[t]);
		}
		r->bytes_hour_avg = in->history.len ? sum / in->history.len : (double)r->bytes;
		r->usd_per_hour_hour_avg = vt_tco_usd_per_hour(1ULL << 30, m->t[t].usd_per_gib) *
					   r->bytes_hour_avg / (double)(1ULL << 30);
		out->bytes += r->bytes;
		out->usd_per_hour += r->usd_per_hour;
		out->usd_per_hour_hour_avg += r->usd_per_hour_hour_avg;
		if (m->t[t].compressed) {
			out->fault_time_pct += in->fault_ns_per_s[t] / 1e9 * 100;
		} else {
			weight += in->access_weight[t];
			extra += in->access_weight[t] * (m->t[t].latency_ns - m->t[0].latency_ns);
		}
	}
	out->all_dram_usd_per_hour = vt_tco_usd_per_hour(out->bytes, dram);
	if (out->all_dram_usd_per_hour > 0) {
		out->saving_pct = 100 * (1 - out->usd_per_hour / out->all_dram_usd_per_hour);
		out->saving_usd_per_month = (out->all_dram_usd_per_hour - out->usd_per_hour) *
					    VT_TCO_HOURS_PER_MONTH;
	}
	if (weight > 0 && nr)
		out->numa_extra_latency_pct = 100 * extra / weight / m->t[0].latency_ns;
}

void vt_tco_report_to_json(const struct vt_tco_report_input *in, const struct vt_tco_report *r,
			   JsonBuilder *b)
{
	const struct vt_tier_model *m = &in->model;

	json_builder_begin_object(b);
	vt_json_add_str(b, "name", in->name);
	vt_json_add_str(b, "placement", in->placement);
	vt_json_add_dbl(b, "tco_alpha", in->tco_alpha);
	vt_json_add_u64(b, "windows", in->windows);
	vt_json_begin_arr(b, "tiers");
	for (unsigned int t = 0; t < m->nr && t < VT_MAX_TIERS; t++) {
		const struct vt_tier_model_entry *e = &m->t[t];

		json_builder_begin_object(b);
		vt_json_add_str(b, "tier", e->name);
		vt_json_add_str(b, "kind", e->compressed ? "compressed" : "numa");
		vt_json_add_u64(b, "bytes", r->tier[t].bytes);
		vt_json_add_dbl(b, "bytes_hour_avg", r->tier[t].bytes_hour_avg);
		vt_json_add_u64(b, "bytes_hour_max", r->tier[t].bytes_hour_max);
		vt_json_add_dbl(b, "medium_usd_per_gib", e->medium_usd_per_gib);
		vt_json_add_dbl(b, "ratio", e->ratio);
		vt_json_add_str(b, "ratio_from", e->ratio_from);
		vt_json_add_dbl(b, "usd_per_gib", e->usd_per_gib);
		if (e->local_copy_usd_per_gib > 0) {
			/* a remote tier's local copy (copies = 1): its share of usd_per_gib */
			vt_json_add_dbl(b, "local_copy_usd_per_gib", e->local_copy_usd_per_gib);
			vt_json_add_dbl(b, "local_copy_ratio", e->local_copy_ratio);
		}
		vt_json_add_dbl(b, "latency_ns", e->latency_ns);
		vt_json_add_str(b, "latency_from", e->latency_from);
		vt_json_add_dbl(b, "usd_per_hour", r->tier[t].usd_per_hour);
		vt_json_add_dbl(b, "usd_per_hour_hour_avg", r->tier[t].usd_per_hour_hour_avg);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	vt_json_add_u64(b, "bytes", r->bytes);
	vt_json_add_dbl(b, "usd_per_hour", r->usd_per_hour);
	vt_json_add_dbl(b, "usd_per_hour_hour_avg", r->usd_per_hour_hour_avg);
	vt_json_add_u64(b, "hour_samples", r->hour_samples);
	vt_json_add_dbl(b, "all_dram_usd_per_hour", r->all_dram_usd_per_hour);
	vt_json_add_dbl(b, "saving_pct", r->saving_pct);
	vt_json_add_dbl(b, "saving_usd_per_month", r->saving_usd_per_month);
	vt_json_begin_obj(b, "slowdown");
	vt_json_add_dbl(b, "fault_time_pct", r->fault_time_pct);
	vt_json_add_dbl(b, "numa_extra_latency_pct", r->numa_extra_latency_pct);
	json_builder_end_object(b);
	vt_json_add_u64(b, "hot_set_bytes", in->hot_bytes);
	vt_json_begin_obj(b, "profile");
	vt_json_add_u64(b, "windows_since_phase_change", in->stable_windows);
	vt_json_add_u64(b, "phase_changes", in->phase_changes);
	json_builder_end_object(b);
	json_builder_end_object(b);
}

/* Fixed point of the hand-off: @v x @scale rounded, within [@lo, @hi]. */
static int64_t fixed(double v, double scale, int64_t lo, int64_t hi)
{
	double x = round(v * scale);

	if (!(x >= (double)lo))		/* NaN too */
		return lo;
	return x >= (double)hi ? hi : (int64_t)x;
}

#define NUSD 1e9
#define MILLI 1e3

void vt_tco_report_to_wire(const struct vt_tco_report_input *in, const struct vt_tco_report *r,
			   struct vtier_handoff_tco *tco, struct vtier_handoff_tco_tier *tiers)
{
	const struct vt_tier_model *m = &in->model;
	unsigned int nr = MIN(MIN(m->nr, (unsigned int)VT_MAX_TIERS), VTIER_HANDOFF_TIERS_MAX);

	memset(tco, 0, sizeof(*tco));
	tco->windows = in->windows;
	tco->cost_nusd_per_hour = (uint64_t)fixed(r->usd_per_hour, NUSD, 0, INT64_MAX);
	tco->cost_hour_avg_nusd_per_hour = (uint64_t)fixed(r->usd_per_hour_hour_avg, NUSD, 0,
							   INT64_MAX);
	tco->all_dram_nusd_per_hour = (uint64_t)fixed(r->all_dram_usd_per_hour, NUSD, 0, INT64_MAX);
	tco->saving_nusd_per_month = fixed(r->saving_usd_per_month, NUSD, -INT64_MAX, INT64_MAX);
	tco->hot_set_bytes = in->hot_bytes;
	tco->windows_since_phase_change = MIN(in->stable_windows, in->windows);
	tco->phase_changes = MIN(in->phase_changes, in->windows);
	tco->saving_pct_milli = (int32_t)fixed(r->saving_pct, MILLI, INT32_MIN, 100000);
	tco->fault_time_pct_milli = (uint32_t)fixed(r->fault_time_pct, MILLI, 0, UINT32_MAX);
	tco->numa_extra_latency_pct_milli = (uint32_t)fixed(r->numa_extra_latency_pct, MILLI, 0,
							    UINT32_MAX);
	tco->tco_alpha_milli = (uint32_t)fixed(in->tco_alpha, MILLI, 0, 1000);
	tco->hour_samples = MIN(r->hour_samples, VTIER_TCO_HOUR_SAMPLES_MAX);
	tco->n_tiers = nr;
	g_strlcpy(tco->placement, in->placement ? in->placement : "", sizeof(tco->placement));
	for (unsigned int t = 0; t < nr; t++) {
		const struct vt_tier_model_entry *e = &m->t[t];
		const struct vt_tco_report_tier *rt = &r->tier[t];
		struct vtier_handoff_tco_tier *w = &tiers[t];

		memset(w, 0, sizeof(*w));
		g_strlcpy(w->name, e->name[0] ? e->name : "?", sizeof(w->name));
		w->kind = e->compressed ? VTIER_TCO_TIER_COMPRESSED : VTIER_TCO_TIER_NUMA;
		w->ratio_milli = (uint32_t)fixed(e->ratio, MILLI, 1, UINT32_MAX);
		w->bytes = rt->bytes;
		w->bytes_hour_max = rt->bytes_hour_max;
		w->bytes_hour_avg = MIN((uint64_t)fixed(rt->bytes_hour_avg, 1, 0, INT64_MAX),
					r->hour_samples ? rt->bytes_hour_max : UINT64_MAX);
		w->latency_ns = (uint64_t)fixed(e->latency_ns, 1, 0, INT64_MAX);
		w->price_nusd_per_gib = (uint64_t)fixed(e->usd_per_gib, NUSD, 0, INT64_MAX);
		w->cost_nusd_per_hour = (uint64_t)fixed(rt->usd_per_hour, NUSD, 0, INT64_MAX);
		w->cost_hour_avg_nusd_per_hour = (uint64_t)fixed(rt->usd_per_hour_hour_avg, NUSD, 0,
								 INT64_MAX);
		tco->bytes += w->bytes;
	}
}
