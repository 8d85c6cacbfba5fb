// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-bench telemetry: run profilers over simulated workloads and score every
 * window against the ground truth. Each profiler gets its own simulated table
 * (same workload, same seed), so runs are independent and repeatable.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-glib/json-glib.h>

#include "eval.h"
#include "json_member.h"
#include "plot_svg.h"
#include "profiler.h"
#include "sim_source.h"
#include "thread_ns.h"
#include "vtier_bench.h"

#define CONVERGED 0.95

struct window_row {
	double t_s;		/* simulated time at the window's end */
	unsigned int phase;
	struct vt_score score;
	uint64_t checks;
	uint64_t checks_level[VT_MAX_LEVELS];
	unsigned int regions;
	double profiler_us;	/* thread CPU in the profiler, source excluded */
	double source_us;	/* thread CPU inside the (simulated) source */
	uint64_t calls;		/* into the source */
};

struct phase_summary {
	bool ran;		/* the run had windows in this phase */
	int converge;		/* windows after the phase change until P and R >= 0.95 for good; -1 never */
	int first;		/* first window reaching both, -1 never */
	double mean_p, mean_r;	/* over the windows after convergence (or all) */
	double min_p, min_r;
};

struct run {
	char *profiler;
	char *scenario;
	GArray *rows;		/* struct window_row */
	struct phase_summary *phases;
	unsigned int nr_phases;
	double mean_checks, mean_profiler_us, max_profiler_us, mean_source_us;
	double mean_checks_level[VT_MAX_LEVELS];
	bool skipped;
	char *skip_reason;
};

struct options {
	char **scenarios;
	char *spec;
	char **profilers;
	int windows;
	int seed;
	gint64 budget;
	int sample_us;
	int window_us;
	char **flex;
	int min_regions;
	int max_regions;
	char *json;
	char *svg;
	gboolean force;
	gboolean per_window;
	gboolean scaling;
	gboolean exact;
	int expect_converge;
	gint64 expect_checks;
	double expect_pr;
	char *dump_spec;
};

static void run_free(struct run *r)
{
	g_free(r->profiler);
	g_free(r->scenario);
	if (r->rows)
		g_array_free(r->rows, TRUE);
	g_free(r->phases);
	g_free(r->skip_reason);
	g_free(r);
}

/*
 * Refuse walks of every leaf above 100 GiB: linear always makes them, scan in
 * its first window when every bit starts young.
 */
static char *too_big(const char *profiler, const struct vt_workload *w, bool force)
{
	uint64_t leaves = w->footprint >> w->page_shift;

	if (force || leaves <= (100ULL << 30) >> 12)
		return NULL;
	if (strcmp(profiler, "linear") == 0)
		return g_strdup_printf("linear tests all %.2g leaves every window; skipped above "
				       "100 GiB, use --force", (double)leaves);
	if (strcmp(profiler, "scan") == 0 && w->initially_young)
		return g_strdup_printf("scan walks all %.2g leaves in its first window (every bit "
				       "starts young); skipped above 100 GiB, use --force",
				       (double)leaves);
	return NULL;
}

static void summarise(struct run *run, const struct vt_workload *w)
{
	unsigned int n = run->rows->len;
	double sum_checks = 0, sum_prof = 0, sum_src = 0;

	run->nr_phases = w->nr_phases;
	run->phases = g_new0(struct phase_summary, w->nr_phases);
	for (unsigned int ph = 0; ph < w->nr_phases; ph++) {
		struct phase_summary *s = &run->phases[ph];
		int a = -1, b = -1, settle = -1;
		double sp = 0, sr = 0;
		unsigned int cnt = 0;

		for (unsigned int i = 0; i < n; i++) {
			const struct window_row *row = &g_array_index(run->rows, struct window_row, i);

			if (row->phase != ph)
				continue;
			if (a < 0)
				a = (int)i;
			b = (int)i + 1;
		}
		s->converge = s->first = -1;
		s->min_p = s->min_r = 1;
		if (a < 0)
			continue;
		s->ran = true;
		for (int i = b - 1; i >= a; i--) {
			const struct window_row *row = &g_array_index(run->rows, struct window_row, i);

			if (row->score.precision >= CONVERGED && row->score.recall >= CONVERGED)
				settle = i;
			else
				break;
		}
		for (int i = a; i < b; i++) {
			const struct window_row *row = &g_array_index(run->rows, struct window_row, i);

			if (s->first < 0 && row->score.precision >= CONVERGED &&
			    row->score.recall >= CONVERGED)
				s->first = i - a + 1;
			if (settle < 0 || i >= settle) {
				sp += row->score.precision;
				sr += row->score.recall;
				s->min_p = fmin(s->min_p, row->score.precision);
				s->min_r = fmin(s->min_r, row->score.recall);
				cnt++;
			}
		}
		s->converge = settle < 0 ? -1 : settle - a + 1;
		s->mean_p = cnt ? sp / cnt : 0;
		s->mean_r = cnt ? sr / cnt : 0;
	}
	for (unsigned int i = 0; i < n; i++) {
		const struct window_row *row = &g_array_index(run->rows, struct window_row, i);

		sum_checks += (double)row->checks;
		sum_prof += row->profiler_us;
		sum_src += row->source_us;
		run->max_profiler_us = fmax(run->max_profiler_us, row->profiler_us);
		for (unsigned int l = 0; l < VT_MAX_LEVELS; l++)
			run->mean_checks_level[l] += (double)row->checks_level[l] / n;
	}
	run->mean_checks = n ? sum_checks / n : 0;
	run->mean_profiler_us = n ? sum_prof / n : 0;
	run->mean_source_us = n ? sum_src / n : 0;
}

/* "pud=0.15": the flex error allowed at a level, in [0, 1). */
static bool parse_flex(const char *text, double *errors, GError **error)
{
	const char *eq = strchr(text, '=');
	char *end = NULL;
	double value;

	for (unsigned int l = 0; eq && l < VT_MAX_LEVELS; l++) {
		if (strncmp(text, vt_level_name(l), (size_t)(eq - text)) ||
		    strlen(vt_level_name(l)) != (size_t)(eq - text))
			continue;
		value = g_ascii_strtod(eq + 1, &end);
		if (end == eq + 1 || *end || !(value >= 0 && value < 1))
			break;
		errors[l] = value;
		return true;
	}
	g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
		    "--flex %s: expected LEVEL=ERROR with LEVEL one of pte, pmd, pud, p4d, pgd "
		    "and ERROR in [0, 1)", text);
	return false;
}

static struct run *run_one(const struct vt_workload *w, const char *name,
			   const struct options *o, GError **error)
{
	struct vt_profiler_attrs attrs;
	struct vt_access_source *src;
	struct vt_profiler *p;
	struct vt_snapshot snap;
	struct run *run = g_new0(struct run, 1);
	unsigned int samples, windows;
	uint64_t window_ns, clock_ns;
	int ret;

	run->profiler = g_strdup(name);
	run->scenario = g_strdup(w->name);
	run->rows = g_array_new(FALSE, TRUE, sizeof(struct window_row));
	run->skip_reason = too_big(name, w, o->force);
	if (run->skip_reason) {
		run->skipped = true;
		return run;
	}
	vt_profiler_attrs_default(&attrs);
	attrs.seed = (guint32)o->seed;
	attrs.budget_checks = (uint64_t)o->budget;
	if (o->sample_us > 0)
		attrs.sample_us = (uint64_t)o->sample_us;
	if (o->window_us > 0)
		attrs.window_us = (uint64_t)o->window_us;
	for (char **f = o->flex; f && *f; f++)
		parse_flex(*f, attrs.flex_error, NULL);	/* checked in vt_bench_telemetry() */
	if (o->min_regions > 0)
		attrs.min_regions = (unsigned int)o->min_regions;
	if (o->max_regions > 0)
		attrs.max_regions = (unsigned int)o->max_regions;
	if (o->exact) {
		src = vt_sim_exact_new(w, (guint32)o->seed, error);
		if (!src) {
			run_free(run);
			return NULL;
		}
	} else {
		src = vt_sim_new(w, (guint32)o->seed);
	}
	p = vt_profiler_new(name, src, &attrs, error);
	if (!p) {
		vt_source_destroy(src);
		run_free(run);
		return NULL;
	}
	samples = (unsigned int)(attrs.window_us / attrs.sample_us);
	window_ns = attrs.window_us * 1000;
	windows = (unsigned int)ceil(w->total_s * 1e9 / (double)window_ns - 1e-9);
	if (o->windows > 0)
		windows = MIN(windows, (unsigned int)o->windows);
	src->timed = true;
	clock_ns = vt_source_clock_ns();
	ret = vt_profiler_start(p);
	if (ret < 0)
		goto fail;
	vt_snapshot_init(&snap);
	for (unsigned int win = 0; win < windows; win++) {
		struct window_row row = { 0 };
		uint64_t src_before = src->cost_ns, calls_before = src->calls, t0, t1, adv = 0;
		uint64_t checks_before[VT_MAX_LEVELS];

		memcpy(checks_before, src->checks, sizeof(checks_before));
		t0 = vt_thread_ns();
		for (unsigned int s = 0; s < samples; s++) {
			uint64_t a0 = vt_thread_ns();

			vt_sim_advance(src, attrs.sample_us * 1000);
			adv += vt_thread_ns() - a0;
			ret = vt_profiler_sample(p);
			if (ret < 0)
				break;
		}
		if (ret >= 0)
			ret = vt_profiler_window(p, &snap);
		t1 = vt_thread_ns();
		if (ret < 0) {
			vt_snapshot_clear(&snap);
			goto fail;
		}
		row.t_s = (double)vt_sim_now_ns(src) / 1e9;
		row.phase = vt_workload_phase_at(w, row.t_s - 1e-9);
		vt_score_snapshot(w, row.phase, &snap, &row.score);
		for (unsigned int l = 0; l < VT_MAX_LEVELS; l++) {
			row.checks_level[l] = src->checks[l] - checks_before[l];
			row.checks += row.checks_level[l];
		}
		row.regions = snap.regions->len;
		row.calls = src->calls - calls_before;
		{
			/*
			 * Each timed source call and each timed advance puts about one
			 * clock read in its own time and one in the profiler's: both
			 * are the bench's, not the profiler's or the source's.
			 */
			uint64_t reads = (row.calls + samples) * clock_ns;
			uint64_t in_src = src->cost_ns - src_before + adv;
			uint64_t total = t1 - t0;

			in_src -= MIN(in_src, reads);
			total -= MIN(total, in_src + reads);
			row.source_us = (double)in_src / 1e3;
			row.profiler_us = (double)total / 1e3;
		}
		g_array_append_val(run->rows, row);
		if (o->per_window)
			printf("%-18s w%-5u t=%7.1fs phase %u  P %.3f R %.3f  regions %5u  checks %8"
			       G_GUINT64_FORMAT "  calls %6" G_GUINT64_FORMAT "  prof %7.1f us  src %9.1f us\n",
			       name, win, row.t_s, row.phase + 1, row.score.precision, row.score.recall,
			       row.regions, row.checks, row.calls, row.profiler_us, row.source_us);
	}
	vt_snapshot_clear(&snap);
	vt_profiler_free(p);
	vt_source_destroy(src);
	summarise(run, w);
	return run;
fail:
	g_set_error(error, G_IO_ERROR, g_io_error_from_errno(-ret), "%s: %s", name,
		    g_strerror(-ret));
	vt_profiler_free(p);
	vt_source_destroy(src);
	run_free(run);
	return NULL;
}

static void print_table(const struct vt_workload *w, GPtrArray *runs, const struct options *o)
{
	double window_ms = (o->window_us > 0 ? o->window_us : 200000) / 1000.0;

	printf("\nscenario %s: %.4g GiB footprint, %u-level table, %s pages, %u phase(s), "
	       "window %.0f ms\n", w->name, (double)w->footprint / (1 << 30), w->levels,
	       w->page_shift == 12 ? "4 KiB" : "2 MiB", w->nr_phases, window_ms);
	printf("%-18s %-5s %8s %8s %7s %7s %7s %7s %10s %10s %8s %10s\n", "profiler", "phase",
	       "converge", "first", "P mean", "R mean", "P min", "R min", "checks/win",
	       "prof us/win", "% core", "sim us/win");
	for (unsigned int i = 0; i < runs->len; i++) {
		const struct run *r = runs->pdata[i];

		if (r->skipped) {
			printf("%-18s skipped: %s\n", r->profiler, r->skip_reason);
			continue;
		}
		for (unsigned int ph = 0; ph < r->nr_phases; ph++) {
			const struct phase_summary *s = &r->phases[ph];
			char conv[16], first[16];

			if (!s->ran) {
				printf("%-18s %-5u (not reached: fewer windows than the workload)\n",
				       ph ? "" : r->profiler, ph + 1);
				continue;
			}
			if (s->converge < 0)
				g_strlcpy(conv, "never", sizeof(conv));
			else
				g_snprintf(conv, sizeof(conv), "%d", s->converge);
			if (s->first < 0)
				g_strlcpy(first, "never", sizeof(first));
			else
				g_snprintf(first, sizeof(first), "%d", s->first);
			printf("%-18s %-5u %8s %8s %7.3f %7.3f %7.3f %7.3f", ph ? "" : r->profiler,
			       ph + 1, conv, first, s->mean_p, s->mean_r, s->min_p, s->min_r);
			if (ph == 0)
				printf(" %10.0f %10.1f %8.3f %10.1f", r->mean_checks, r->mean_profiler_us,
				       100.0 * r->mean_profiler_us / (window_ms * 1000.0),
				       r->mean_source_us);
			printf("\n");
		}
		printf("%-18s checks/window by level:", "");
		for (unsigned int l = w->levels; l-- > 0;)
			printf(" %s %.0f", vt_level_name(l), r->mean_checks_level[l]);
		printf("\n");
	}
}

static void json_runs(JsonBuilder *b, const struct vt_workload *w, GPtrArray *runs)
{
	json_builder_begin_object(b);
	vt_json_add_str(b, "scenario", w->name);
	vt_json_add_u64(b, "footprint_bytes", w->footprint);
	vt_json_add_int(b, "levels", w->levels);
	vt_json_begin_arr(b, "runs");
	for (unsigned int i = 0; i < runs->len; i++) {
		const struct run *r = runs->pdata[i];

		json_builder_begin_object(b);
		vt_json_add_str(b, "profiler", r->profiler);
		if (r->skipped) {
			vt_json_add_str(b, "skipped", r->skip_reason);
			json_builder_end_object(b);
			continue;
		}
		vt_json_add_dbl(b, "mean_checks_per_window", r->mean_checks);
		vt_json_add_dbl(b, "mean_profiler_us_per_window", r->mean_profiler_us);
		vt_json_add_dbl(b, "mean_source_us_per_window", r->mean_source_us);
		vt_json_begin_arr(b, "phases");
		for (unsigned int ph = 0; ph < r->nr_phases; ph++) {
			const struct phase_summary *s = &r->phases[ph];

			if (!s->ran)
				continue;
			json_builder_begin_object(b);
			vt_json_add_int(b, "phase", ph + 1);
			vt_json_add_int(b, "windows_to_converge", s->converge);
			vt_json_add_int(b, "first_window_converged", s->first);
			vt_json_add_dbl(b, "mean_precision", s->mean_p);
			vt_json_add_dbl(b, "mean_recall", s->mean_r);
			json_builder_end_object(b);
		}
		json_builder_end_array(b);
		vt_json_begin_arr(b, "windows");
		for (unsigned int k = 0; k < r->rows->len; k++) {
			const struct window_row *row = &g_array_index(r->rows, struct window_row, k);

			json_builder_begin_object(b);
			vt_json_add_dbl(b, "t_s", row->t_s);
			vt_json_add_int(b, "phase", row->phase + 1);
			vt_json_add_dbl(b, "precision", row->score.precision);
			vt_json_add_dbl(b, "recall", row->score.recall);
			vt_json_add_int(b, "regions", row->regions);
			vt_json_add_u64(b, "checks", row->checks);
			vt_json_begin_arr(b, "checks_per_level");
			for (unsigned int l = 0; l < w->levels; l++)
				json_builder_add_int_value(b, (gint64)row->checks_level[l]);
			json_builder_end_array(b);
			vt_json_add_dbl(b, "profiler_us", row->profiler_us);
			vt_json_add_dbl(b, "source_us", row->source_us);
			vt_json_add_u64(b, "source_calls", row->calls);
			json_builder_end_object(b);
		}
		json_builder_end_array(b);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	json_builder_end_object(b);
}

static bool write_svg(const char *path, const struct vt_workload *w, GPtrArray *runs)
{
	g_autofree struct vt_plot_series *ps = g_new0(struct vt_plot_series, runs->len);
	g_autofree struct vt_plot_series *rs = g_new0(struct vt_plot_series, runs->len);
	g_autofree double *marks = g_new0(double, w->nr_phases);
	g_autoptr(GPtrArray) bufs = g_ptr_array_new_with_free_func(g_free);
	g_autofree char *title = g_strdup_printf("%s: precision and recall per 200 ms window",
						 w->name);
	size_t n = 0;

	for (unsigned int i = 0; i < runs->len; i++) {
		const struct run *r = runs->pdata[i];
		double *x, *yp, *yr;

		if (r->skipped)
			continue;
		x = g_new(double, r->rows->len);
		yp = g_new(double, r->rows->len);
		yr = g_new(double, r->rows->len);
		g_ptr_array_add(bufs, x);
		g_ptr_array_add(bufs, yp);
		g_ptr_array_add(bufs, yr);
		for (unsigned int k = 0; k < r->rows->len; k++) {
			const struct window_row *row = &g_array_index(r->rows, struct window_row, k);

			x[k] = row->t_s;
			yp[k] = row->score.precision;
			yr[k] = row->score.recall;
		}
		ps[n] = (struct vt_plot_series){ r->profiler, x, yp, r->rows->len };
		rs[n] = (struct vt_plot_series){ r->profiler, x, yr, r->rows->len };
		n++;
	}
	for (unsigned int ph = 1; ph < w->nr_phases; ph++)
		marks[ph - 1] = vt_workload_phase_start(w, ph);
	struct vt_plot_panel panels[2] = {
		{ "precision", 0, 1, ps, n },
		{ "recall", 0, 1, rs, n },
	};
	return vt_plot_svg(path, title, "simulated time (s)", panels, 2, marks,
			   w->nr_phases ? w->nr_phases - 1 : 0);
}

/*
 * The bars of --expect-*: did every Telescope run settle within
 * expect_converge windows of every phase change, hold P and R (means after
 * settling) at expect_pr or more, and spend at most expect_checks checks per
 * window on average? Each miss is one FAIL line.
 */
static bool check_expectation(GPtrArray *runs, const struct options *o)
{
	bool ok = true;

	for (unsigned int i = 0; i < runs->len; i++) {
		const struct run *r = runs->pdata[i];

		if (r->skipped || !g_str_has_prefix(r->profiler, "telescope"))
			continue;
		if (o->expect_checks > 0 && r->mean_checks > (double)o->expect_checks) {
			fprintf(stderr, "FAIL: %s on %s: %.0f checks per window, expected at most %"
				G_GINT64_FORMAT "\n", r->profiler, r->scenario, r->mean_checks,
				o->expect_checks);
			ok = false;
		}
		for (unsigned int ph = 0; ph < r->nr_phases; ph++) {
			const struct phase_summary *s = &r->phases[ph];

			if (!s->ran)
				continue;
			if (o->expect_converge > 0 &&
			    (s->converge < 0 || s->converge > o->expect_converge)) {
				fprintf(stderr, "FAIL: %s on %s phase %u: converged after %d windows, "
					"expected at most %d\n", r->profiler, r->scenario, ph + 1,
					s->converge, o->expect_converge);
				ok = false;
			}
			if (o->expect_pr > 0 && (s->mean_p < o->expect_pr || s->mean_r < o->expect_pr)) {
				fprintf(stderr, "FAIL: %s on %s phase %u: P %.3f R %.3f, expected both "
					">= %.3f\n", r->profiler, r->scenario, ph + 1, s->mean_p, s->mean_r,
					o->expect_pr);
				ok = false;
			}
		}
	}
	return ok;
}

static int run_scenario(struct vt_workload *w, const struct options *o, JsonBuilder *jb,
			const char *svg_path, bool *expect_ok)
{
	g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func((GDestroyNotify)run_free);

	for (char **name = o->profilers; *name; name++) {
		g_autoptr(GError) error = NULL;
		struct run *r = run_one(w, *name, o, &error);

		if (!r) {
			fprintf(stderr, "vtier-bench: %s\n", error->message);
			return 1;
		}
		g_ptr_array_add(runs, r);
	}
	print_table(w, runs, o);
	if (jb)
		json_runs(jb, w, runs);
	if (svg_path && !write_svg(svg_path, w, runs)) {
		fprintf(stderr, "vtier-bench: cannot write %s: %s\n", svg_path, g_strerror(errno));
		return 1;
	}
	if (!check_expectation(runs, o))
		*expect_ok = false;
	return 0;
}

/*
 * Profiler CPU against footprint: one hot range (10% of the heap, at most
 * 10 GiB) in heaps from 1 GiB to 64 TiB; steady-state windows only.
 */
static int run_scaling(const struct options *o)
{
	static const struct {
		const char *footprint;
		const char *hot_start;
		const char *hot_size;
		int levels;
	} sizes[] = {
		{ "1GiB", "379MiB+12KiB", "102400KiB", 4 },
		{ "10GiB", "3GiB+700MiB+12KiB", "1GiB", 4 },
		{ "100GiB", "37GiB+3MiB+12KiB", "10GiB", 4 },
		{ "1TiB", "377GiB+3MiB+12KiB", "10GiB", 4 },
		{ "5TiB", "1TiB+3MiB+12KiB", "10GiB", 4 },
		{ "64TiB", "10TiB+3MiB+12KiB", "10GiB", 5 },
	};
	char **profilers = o->profilers;

	printf("profiler CPU per %d ms window against footprint (windows 20..%d, after convergence)\n",
	       (o->window_us > 0 ? o->window_us : 200000) / 1000, o->windows > 0 ? o->windows : 100);
	printf("%-18s %10s %6s %12s %12s %9s %10s %7s %7s\n", "profiler", "footprint", "levels",
	       "prof us/win", "max us/win", "% core", "checks/win", "P", "R");
	for (char **name = profilers; *name; name++) {
		for (unsigned int i = 0; i < G_N_ELEMENTS(sizes); i++) {
			g_autoptr(GError) error = NULL;
			g_autofree char *json = g_strdup_printf(
				"{\"name\":\"scale-%s\",\"footprint\":\"%s\",\"levels\":%d,\"phases\":"
				"[{\"duration_s\":%g,\"access_rate\":5e7,\"hot\":[{\"start\":\"%s\","
				"\"size\":\"%s\"}]}]}", sizes[i].footprint, sizes[i].footprint,
				sizes[i].levels, (o->windows > 0 ? o->windows : 100) * 0.2,
				sizes[i].hot_start, sizes[i].hot_size);
			g_autoptr(vt_workload) w = vt_workload_from_json(json, -1, &error);
			struct run *r;
			double sum = 0, mx = 0, checks = 0, p = 0, rc = 0;
			unsigned int cnt = 0;

			if (!w) {
				fprintf(stderr, "vtier-bench: %s\n", error->message);
				return 1;
			}
			r = run_one(w, *name, o, &error);
			if (!r) {
				fprintf(stderr, "vtier-bench: %s\n", error->message);
				return 1;
			}
			if (r->skipped) {
				printf("%-18s %10s skipped: %s\n", *name, sizes[i].footprint, r->skip_reason);
				run_free(r);
				continue;
			}
			for (unsigned int k = 20; k < r->rows->len; k++) {
				const struct window_row *row = &g_array_index(r->rows, struct window_row, k);

				sum += row->profiler_us;
				mx = fmax(mx, row->profiler_us);
				checks += (double)row->checks;
				p += row->score.precision;
				rc += row->score.recall;
				cnt++;
			}
			if (cnt)
				printf("%-18s %10s %6d %12.1f %12.1f %9.3f %10.0f %7.3f %7.3f\n", *name,
				       sizes[i].footprint, sizes[i].levels, sum / cnt, mx,
				       100.0 * sum / cnt / ((o->window_us > 0 ? o->window_us : 200000)),
				       checks / cnt, p / cnt, rc / cnt);
			run_free(r);
		}
	}
	return 0;
}

static void options_clear(struct options *o)
{
	g_strfreev(o->scenarios);
	g_strfreev(o->profilers);
	g_strfreev(o->flex);
	g_free(o->spec);
	g_free(o->json);
	g_free(o->svg);
	g_free(o->dump_spec);
}

static int telemetry_main(struct options *o, int argc, char **argv);

int vt_bench_telemetry(int argc, char **argv)
{
	struct options o = {
		.seed = 1, .windows = 0,
	};
	int status = telemetry_main(&o, argc, argv);

	options_clear(&o);
	return status;
}

/* The options live in the caller, which frees them on every exit path. */
static int telemetry_main(struct options *o, int argc, char **argv)
{
	static const char *default_profilers[] = { "telescope-bounded", "telescope-flex",
						   "damon-like", NULL };
	GOptionEntry entries[] = {
		{ "scenario", 's', 0, G_OPTION_ARG_STRING_ARRAY, &o->scenarios,
		  "built-in scenario (repeatable; 'subtb' = subtb-1g, -10g, -100g)", "NAME" },
		{ "spec", 0, 0, G_OPTION_ARG_FILENAME, &o->spec, "workload spec file (JSON)", "FILE" },
		{ "profiler", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &o->profilers,
		  "profiler (repeatable; default telescope-bounded, telescope-flex, damon-like)", "P" },
		{ "windows", 'w', 0, G_OPTION_ARG_INT, &o->windows, "stop after N windows", "N" },
		{ "seed", 0, 0, G_OPTION_ARG_INT, &o->seed, "random seed (default 1)", "N" },
		{ "budget", 0, 0, G_OPTION_ARG_INT64, &o->budget,
		  "MTM budget: accessed-bit checks per window (default: none)", "N" },
		{ "sample-us", 0, 0, G_OPTION_ARG_INT, &o->sample_us, "sampling interval (5000)", "US" },
		{ "window-us", 0, 0, G_OPTION_ARG_INT, &o->window_us, "window (200000)", "US" },
		{ "min-regions", 0, 0, G_OPTION_ARG_INT, &o->min_regions, "regions at least (10)", "N" },
		{ "max-regions", 0, 0, G_OPTION_ARG_INT, &o->max_regions, "regions at most (1000)", "N" },
		{ "flex", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->flex,
		  "telescope-flex error at a level, e.g. pud=0.15 (repeatable; defaults pud=0.15 "
		  "pmd=0.25, 0 elsewhere)", "LEVEL=F" },
		{ "exact", 0, 0, G_OPTION_ARG_NONE, &o->exact,
		  "use the exact bit-array model (footprints up to 64 GiB)", NULL },
		{ "json", 0, 0, G_OPTION_ARG_FILENAME, &o->json, "write results as JSON ('-' = stdout)",
		  "FILE" },
		{ "svg", 0, 0, G_OPTION_ARG_FILENAME, &o->svg,
		  "plot precision/recall over time (one file per scenario: NAME is substituted "
		  "for %s)", "FILE" },
		{ "force", 0, 0, G_OPTION_ARG_NONE, &o->force, "run scan/linear at any size", NULL },
		{ "per-window", 0, 0, G_OPTION_ARG_NONE, &o->per_window, "print every window", NULL },
		{ "scaling", 0, 0, G_OPTION_ARG_NONE, &o->scaling,
		  "profiler CPU from 1 GiB to 64 TiB instead of scenarios", NULL },
		{ "dump-spec", 0, 0, G_OPTION_ARG_STRING, &o->dump_spec,
		  "print a built-in scenario as a spec file to start from, and exit", "NAME" },
		{ "expect-converge", 0, 0, G_OPTION_ARG_INT, &o->expect_converge,
		  "exit 1 unless telescope-* settle at P,R >= 0.95 within N windows of every phase",
		  "N" },
		{ "expect-checks", 0, 0, G_OPTION_ARG_INT64, &o->expect_checks,
		  "exit 1 unless telescope-* spend at most N checks per window on average", "N" },
		{ "expect-pr", 0, 0, G_OPTION_ARG_DOUBLE, &o->expect_pr,
		  "exit 1 unless telescope-* hold P and R (means after settling) >= X in every phase",
		  "X" },
		{ NULL },
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("- score profilers on simulated workloads");
	g_autoptr(GError) error = NULL;
	g_autoptr(JsonBuilder) jb = NULL;
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	bool expect_ok = true;
	int status = 0;

	if (!vt_bench_options(ctx, entries, &argc, &argv, "telemetry"))
		return 2;
	if (o->dump_spec) {
		const char *json = vt_workload_builtin_json(o->dump_spec);
		g_autoptr(JsonParser) parser = json_parser_new();
		g_autoptr(JsonGenerator) gen = json_generator_new();
		g_autofree char *text = NULL;

		if (!json) {
			g_autofree char *list = g_strjoinv(", ", (char **)vt_workload_builtin_names());

			fprintf(stderr, "vtier-bench telemetry: unknown scenario '%s' (built-in: %s)\n",
				o->dump_spec, list);
			return 2;
		}
		json_parser_load_from_data(parser, json, -1, NULL);
		json_generator_set_root(gen, json_parser_get_root(parser));
		json_generator_set_pretty(gen, TRUE);
		text = json_generator_to_data(gen, NULL);
		puts(text);
		return 0;
	}
	if (!o->profilers)
		o->profilers = g_strdupv((char **)default_profilers);
	for (char **name = o->profilers; *name; name++) {
		if (!vt_profiler_lookup(*name)) {
			g_autofree char *list = g_strjoinv(", ", (char **)vt_profiler_names());

			fprintf(stderr, "vtier-bench telemetry: unknown profiler '%s' (known: %s)\n",
				*name, list);
			return 2;
		}
	}
	for (char **f = o->flex; f && *f; f++) {
		double scratch[VT_MAX_LEVELS];

		if (!parse_flex(*f, scratch, &error)) {
			fprintf(stderr, "vtier-bench telemetry: %s\n", error->message);
			return 2;
		}
	}
	if (o->budget < 0 || o->windows < 0 || o->min_regions < 0 || o->max_regions < 0) {
		fprintf(stderr, "vtier-bench telemetry: --budget, --windows and --min/max-regions "
			"must not be negative\n");
		return 2;
	}
	if (o->scaling)
		return run_scaling(o);
	if (!o->scenarios && !o->spec) {
		fprintf(stderr, "vtier-bench telemetry: give --scenario NAME or --spec FILE\n");
		return 2;
	}
	for (char **s = o->scenarios; s && *s; s++) {
		if (strcmp(*s, "subtb") == 0) {
			g_ptr_array_add(names, g_strdup("subtb-1g"));
			g_ptr_array_add(names, g_strdup("subtb-10g"));
			g_ptr_array_add(names, g_strdup("subtb-100g"));
		} else {
			g_ptr_array_add(names, g_strdup(*s));
		}
	}
	if (o->json) {
		jb = json_builder_new();
		json_builder_begin_array(jb);
	}
	for (unsigned int i = 0; i <= names->len && status == 0; i++) {
		g_autoptr(vt_workload) w = NULL;
		g_autofree char *svg = NULL;

		if (i == names->len) {
			if (!o->spec)
				break;
			w = vt_workload_load(o->spec, &error);
		} else {
			w = vt_workload_builtin(names->pdata[i], &error);
		}
		if (!w) {
			fprintf(stderr, "vtier-bench telemetry: %s\n", error->message);
			return 1;
		}
		if (o->svg) {
			g_auto(GStrv) parts = g_strsplit(o->svg, "%s", -1);

			svg = g_strjoinv(w->name, parts);
		}
		status = run_scenario(w, o, jb, svg, &expect_ok);
	}
	if (jb && status == 0) {
		g_autoptr(JsonGenerator) gen = json_generator_new();
		g_autoptr(JsonNode) root = NULL;

		json_builder_end_array(jb);
		root = json_builder_get_root(jb);
		json_generator_set_root(gen, root);
		json_generator_set_pretty(gen, TRUE);
		if (strcmp(o->json, "-") == 0) {
			g_autofree char *text = json_generator_to_data(gen, NULL);

			puts(text);
		} else if (!json_generator_to_file(gen, o->json, &error)) {
			fprintf(stderr, "vtier-bench telemetry: %s\n", error->message);
			status = 1;
		}
	}
	if (status == 0 && !expect_ok)
		status = 1;
	return status;
}
