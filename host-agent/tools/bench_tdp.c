// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-bench tdp: attach to a running QEMU/KVM VM through vtier_tdp.ko, run
 * profilers over its real EPT/NPT for N windows each, print every window's
 * snapshot summary, checks per level and cost, and, given the workload's hot
 * set (guest-physical extents, as `vtier-workload ctl hotset` prints them),
 * precision and recall in bytes. Profilers run one after another (they would
 * clear each other's bits if run at once), each on a fresh attach.
 *
 * A phase change: --switch-after K --switch-cmd CMD runs CMD (sh -c) after
 * window K of the first profiler; from then on the second --hotset is the truth.
 *
 * --flush-tlb: the module flushes the VM's TLBs once per window, after the
 * window's first clearing call (VTIER_TDP_FLUSH_TLB); its cost is reported.
 * --result-tag TAG: one line per profiler for comparisons over time,
 *   RESULT-TDP tag= profiler= flush=on|off windows= reached= p_mean= r_mean=
 *   checks= walk_us= src_cpu_us= prof_us= ioctls= flushes= flush_us= root_swaps= marked=
 * (per window means; reached: first scored window with P and R at the bar, -1 never).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profiler.h"
#include "tdp_source.h"
#include "thread_ns.h"
#include "vtier_bench.h"

struct hotset {
	GArray *ext;		/* struct vt_range, sorted, merged */
	uint64_t bytes;
};

struct opts {
	char *qmp;
	int pid;
	char **profilers;
	int windows;
	int sample_us;
	int window_us;
	char **hotsets;
	int switch_after;
	char *switch_cmd;
	int warmup;
	char *start_cmd;
	double expect_p, expect_r;
	int expect_within;
	gboolean per_window_snap;
	gboolean no_age;
	gboolean age;
	gboolean flush_tlb;
	char *result_tag;
};

struct phase_res {
	int first;		/* first window (1-based in the phase) with P and R >= expected */
	int hold;		/* first window from which they hold to the phase's end; -1 never */
	unsigned int windows;
	double sum_p, sum_r;
	double after_p, after_r;	/* sums over the windows from @first on */
	unsigned int after, after_ok;	/* those windows, and how many of them meet both */
	GArray *after_pv, *after_rv;	/* their P and R, for the medians of the pass rule */
};

static int range_cmp(const void *a, const void *b)
{
	const struct vt_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static bool hotset_load(const char *path, struct hotset *h, GError **error)
{
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;
	GArray *raw;

	if (!g_file_get_contents(path, &text, NULL, error))
		return false;
	raw = g_array_new(FALSE, FALSE, sizeof(struct vt_range));
	lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		unsigned long long gpa, bytes;
		const char *p = strstr(*l, "gpa=");

		if (!p)
			continue;
		if (sscanf(p, "gpa=%llx bytes=%llx", &gpa, &bytes) != 2 || !bytes) {
			g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
				    "%s: bad line '%s' (want gpa=0x... bytes=0x...)", path, *l);
			g_array_free(raw, TRUE);
			return false;
		}
		g_array_append_val(raw, ((struct vt_range){ gpa, gpa + bytes }));
	}
	if (!raw->len) {
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: empty hot set", path);
		g_array_free(raw, TRUE);
		return false;
	}
	qsort(raw->data, raw->len, sizeof(struct vt_range), range_cmp);
	h->ext = g_array_new(FALSE, FALSE, sizeof(struct vt_range));
	h->bytes = 0;
	for (unsigned int i = 0; i < raw->len; i++) {
		struct vt_range r = g_array_index(raw, struct vt_range, i);
		struct vt_range *last = h->ext->len ?
			&g_array_index(h->ext, struct vt_range, h->ext->len - 1) : NULL;

		if (last && r.start <= last->end) {
			last->end = MAX(last->end, r.end);
			continue;
		}
		g_array_append_val(h->ext, r);
	}
	for (unsigned int i = 0; i < h->ext->len; i++)
		h->bytes += g_array_index(h->ext, struct vt_range, i).end -
			    g_array_index(h->ext, struct vt_range, i).start;
	g_array_free(raw, TRUE);
	return true;
}

/* Bytes of [s, e) inside the hot set. */
static uint64_t hotset_overlap(const struct hotset *h, uint64_t s, uint64_t e)
{
	uint64_t sum = 0;

	for (unsigned int i = 0; i < h->ext->len; i++) {
		const struct vt_range *r = &g_array_index(h->ext, struct vt_range, i);

		if (r->start >= e)
			break;
		if (r->end > s)
			sum += MIN(e, r->end) - MAX(s, r->start);
	}
	return sum;
}

static void score(const struct hotset *h, const struct vt_snapshot *snap, double *p, double *r,
		  uint64_t *hot_bytes)
{
	uint64_t hot = 0, hit = 0;

	for (unsigned int i = 0; i < snap->regions->len; i++) {
		const struct vt_snapshot_region *reg =
			&g_array_index(snap->regions, struct vt_snapshot_region, i);

		if (reg->accesses < 0.5)
			continue;
		hot += reg->end - reg->start;
		hit += hotset_overlap(h, reg->start, reg->end);
	}
	*p = hot ? (double)hit / (double)hot : 0;
	*r = (double)hit / (double)h->bytes;
	*hot_bytes = hot;
}

static uint64_t hot_bytes_of(const struct vt_snapshot *snap)
{
	uint64_t hot = 0;

	for (unsigned int i = 0; i < snap->regions->len; i++) {
		const struct vt_snapshot_region *r =
			&g_array_index(snap->regions, struct vt_snapshot_region, i);

		if (r->accesses >= 0.5)
			hot += r->end - r->start;
	}
	return hot;
}

static int run_cmd(const char *what, const char *cmd)
{
	int s;

	fflush(stdout);
	s = system(cmd);
	if (s != 0) {
		fprintf(stderr, "vtier-bench tdp: %s failed (status %d): %s\n", what, s, cmd);
		return -1;
	}
	return 0;
}

static void sleep_until(uint64_t t_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(t_ns / 1000000000ULL),
			       .tv_nsec = (long)(t_ns % 1000000000ULL) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

struct prof_total {
	unsigned int windows;
	uint64_t checks[VT_MAX_LEVELS];
	uint64_t src_wall_ns, src_cpu_ns, prof_cpu_ns, ioctls;
	uint64_t flushes, flush_ns, root_swaps, marked;
	int reached;		/* first scored window with P and R at the bar; -1 never */
	unsigned int scored;
	double sum_p, sum_r;
};

/* Run @name for o->windows windows. Returns 0, 1 (expectation failed) or 2 (error). */
static int run_profiler(const struct opts *o, pid_t pid, const char *name, bool first,
			struct hotset *hs, unsigned int nr_hs, unsigned int *cur, struct prof_total *tot,
			struct phase_res *ph)
{
	g_autoptr(GError) error = NULL;
	struct vt_profiler_attrs attrs;
	struct vt_access_source *src;
	struct vt_profiler *p;
	struct vt_snapshot snap;
	struct vt_tdp_stats st;
	unsigned int samples, phase_win = 0;
	uint64_t next, clock_ns;
	int rc = 0;

	src = vt_tdp_new_pid(pid, &error);
	if (!src) {
		fprintf(stderr, "vtier-bench tdp: %s\n", error->message);
		return 2;
	}
	src->timed = true;
	clock_ns = vt_source_clock_ns();
	if (o->flush_tlb && vt_tdp_set_flush(src, VT_TDP_FLUSH_WINDOW) < 0) {
		fprintf(stderr, "vtier-bench tdp: --flush-tlb: the loaded vtier_tdp.ko cannot flush (no VTIER_TDP_F_FLUSH_TLB: a version 1 module; rebuild and reload it)\n");
		vt_source_destroy(src);
		return 2;
	}
	vt_profiler_attrs_default(&attrs);
	attrs.sample_us = (uint64_t)o->sample_us;
	attrs.window_us = (uint64_t)o->window_us;
	p = vt_profiler_new(name, src, &attrs, &error);
	if (!p) {
		fprintf(stderr, "vtier-bench tdp: %s\n", error->message);
		vt_source_destroy(src);
		return 2;
	}
	vt_tdp_get_stats(src, &st);
	printf("# %s: %u levels, leaf level %u, leaves at attach pte/pmd/pud: %llu/%llu/%llu, format %s\n",
	       name, src->levels, src->leaf_level, (unsigned long long)st.leaves[0],
	       (unsigned long long)st.leaves[1], (unsigned long long)st.leaves[2],
	       st.format == 1 ? "NPT" : "EPT");
	printf("# %s: module ABI %u, TLB flush %s, root cookie %llu\n", name, st.abi_version,
	       o->flush_tlb ? "once per window" : "off", (unsigned long long)st.root_cookie);
	if (o->age) {
		/*
		 * Age the table first, as the simulated runs start from an aged one:
		 * a VM's bits are all set where it ever ran, which would read as one
		 * window of "everything hot".
		 */
		struct vt_range ranges[VT_MAX_RANGES];
		int n = vt_source_mapped(src, ranges, VT_MAX_RANGES);
		uint64_t t0 = vt_now_ns(), checks0 = vt_source_checks_total(src);
		long young = 0;

		for (int i = 0; i < n && i < VT_MAX_RANGES && young >= 0; i++)
			young = vt_source_scan(src, ranges[i].start, ranges[i].end, src->leaf_level,
					       vt_top_level(src), NULL, NULL);
		if (n < 0 || young < 0) {
			fprintf(stderr, "vtier-bench tdp: %s: ageing the table failed\n", name);
			rc = 2;
			goto out;
		}
		printf("# aged the table: %llu checks in %.1f ms (not counted in the windows)\n",
		       (unsigned long long)(vt_source_checks_total(src) - checks0),
		       (double)(vt_now_ns() - t0) / 1e6);
		memset(src->checks, 0, sizeof(src->checks));
		src->cost_ns = 0;
	}
	if (vt_profiler_start(p) < 0) {
		fprintf(stderr, "vtier-bench tdp: %s: start failed\n", name);
		rc = 2;
		goto out;
	}
	printf("# %-17s %3s %5s %6s %6s %8s %7s %9s %9s %9s %9s %9s %9s %9s %9s\n", "profiler", "win",
	       "phase", "P", "R", "hot_MiB", "regions", "checks", "pte", "pmd", "pud", "p4d",
	       "walk_us", "src_cpu_us", "prof_us");
	vt_snapshot_init(&snap);
	samples = (unsigned int)(attrs.window_us / attrs.sample_us);
	next = vt_now_ns();
	for (int w = first ? -o->warmup : 0; w < o->windows; w++) {
		uint64_t checks0[VT_MAX_LEVELS], cpu0 = vt_thread_ns();
		uint64_t cost0 = src->cost_ns, calls0 = src->calls, hot = 0, sum = 0;
		uint64_t src_ns, prof_ns;
		struct vt_tdp_stats st0, st1;
		double P = 0, R = 0;
		int ret = 0;

		memcpy(checks0, src->checks, sizeof(checks0));
		vt_tdp_get_stats(src, &st0);
		vt_tdp_window_begin(src);
		for (unsigned int s = 0; s < samples && ret >= 0; s++) {
			next += (uint64_t)attrs.sample_us * 1000;
			sleep_until(next);
			ret = vt_profiler_sample(p);
		}
		if (ret >= 0)
			ret = vt_profiler_window(p, &snap);
		if (ret < 0) {
			fprintf(stderr, "vtier-bench tdp: %s: window %d: %s\n", name, w, g_strerror(-ret));
			rc = 2;
			break;
		}
		vt_tdp_get_stats(src, &st1);
		if (st1.root_swaps != st0.root_swaps)
			printf("# %s: window %d: KVM replaced the NPT/EPT root (%llu time(s); cookie now %llu): "
			       "everything mapped reads young once\n", name, w + 1,
			       (unsigned long long)(st1.root_swaps - st0.root_swaps),
			       (unsigned long long)st1.root_cookie);
		if (w < 0) {
			/* warm-up: the guest idles, nothing to score, not counted */
			printf("%-19s %3d %5s %6s %6s %8.1f %7u\n", name, w + 1, "warm", "-", "-",
			       (double)hot_bytes_of(&snap) / (1 << 20), snap.regions->len);
			if (w == -1 && o->start_cmd && run_cmd("--start-cmd", o->start_cmd) < 0) {
				rc = 2;
				break;
			}
			if (w == -1)
				next = vt_now_ns();
			continue;
		}
		phase_win++;
		if (nr_hs) {
			score(&hs[*cur], &snap, &P, &R, &hot);
			if (first) {
				struct phase_res *r = &ph[*cur];
				bool ok = P >= o->expect_p && R >= o->expect_r;

				r->windows = phase_win;
				r->sum_p += P;
				r->sum_r += R;
				if (ok && r->first < 0)
					r->first = (int)phase_win;
				if (r->first >= 0) {
					r->after++;
					r->after_ok += ok;
					r->after_p += P;
					r->after_r += R;
					if (!r->after_pv) {
						r->after_pv = g_array_new(FALSE, FALSE, sizeof(double));
						r->after_rv = g_array_new(FALSE, FALSE, sizeof(double));
					}
					g_array_append_val(r->after_pv, P);
					g_array_append_val(r->after_rv, R);
				}
				if (ok && r->hold < 0)
					r->hold = (int)phase_win;
				if (!ok)
					r->hold = -1;
			}
		}
		for (unsigned int l = 0; l < VT_MAX_LEVELS; l++) {
			tot->checks[l] += src->checks[l] - checks0[l];
			sum += src->checks[l] - checks0[l];
		}
		tot->windows++;
		tot->src_wall_ns += st1.wall_ns - st0.wall_ns;
		{
			/* about one clock read of each timed call inside cost_ns, one outside */
			uint64_t reads = (src->calls - calls0) * clock_ns, all = vt_thread_ns() - cpu0;

			src_ns = src->cost_ns - cost0;
			src_ns -= MIN(src_ns, reads);
			prof_ns = all - MIN(all, src_ns + 2 * reads);
		}
		tot->src_cpu_ns += src_ns;
		tot->prof_cpu_ns += prof_ns;
		tot->ioctls += st1.ioctls - st0.ioctls;
		tot->flushes += st1.flushes - st0.flushes;
		tot->flush_ns += st1.flush_ns - st0.flush_ns;
		tot->root_swaps += st1.root_swaps - st0.root_swaps;
		tot->marked += st1.marked - st0.marked;
		if (nr_hs) {
			tot->scored++;
			tot->sum_p += P;
			tot->sum_r += R;
			if (tot->reached < 0 && P >= o->expect_p && R >= o->expect_r)
				tot->reached = (int)tot->scored;
		}
		printf("%-19s %3d %5u %6.3f %6.3f %8.1f %7u %9llu %9llu %9llu %9llu %9llu %9.0f %9.0f %9.0f\n",
		       name, w + 1, *cur, P, R, (double)hot / (1 << 20), snap.regions->len,
		       (unsigned long long)sum,
		       (unsigned long long)(src->checks[0] - checks0[0]),
		       (unsigned long long)(src->checks[1] - checks0[1]),
		       (unsigned long long)(src->checks[2] - checks0[2]),
		       (unsigned long long)(src->checks[3] - checks0[3]),
		       (double)(st1.wall_ns - st0.wall_ns) / 1e3, (double)src_ns / 1e3,
		       (double)prof_ns / 1e3);
		if (o->per_window_snap) {
			for (unsigned int i = 0; i < snap.regions->len; i++) {
				const struct vt_snapshot_region *r =
					&g_array_index(snap.regions, struct vt_snapshot_region, i);

				if (r->accesses > 0)
					printf("  region 0x%llx-0x%llx %.2f age %u level %s\n",
					       (unsigned long long)r->start, (unsigned long long)r->end,
					       r->accesses, r->age, vt_level_name(r->level));
			}
		}
		fflush(stdout);
		if (first && o->switch_cmd && w + 1 == o->switch_after) {
			printf("# phase change after window %d: %s\n", w + 1, o->switch_cmd);
			if (run_cmd("--switch-cmd", o->switch_cmd) < 0) {
				rc = 2;
				break;
			}
			if (*cur + 1 < nr_hs)
				(*cur)++;
			phase_win = 0;
			next = vt_now_ns();
		}
	}
	vt_snapshot_clear(&snap);
out:
	vt_profiler_free(p);
	vt_source_destroy(src);
	return rc;
}

int vt_bench_tdp(int argc, char **argv)
{
	struct opts o = { .windows = 10, .sample_us = 5000, .window_us = 200000,
			  .expect_p = 0.9, .expect_r = 0.9, .expect_within = 0 };
	GOptionEntry entries[] = {
		{ "qmp", 0, 0, G_OPTION_ARG_FILENAME, &o.qmp, "QMP socket of the QEMU to profile", "PATH" },
		{ "pid", 0, 0, G_OPTION_ARG_INT, &o.pid, "or the QEMU process id", "PID" },
		{ "profiler", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &o.profilers,
		  "profiler to run (repeat; default telescope-bounded and linear)", "NAME" },
		{ "windows", 'n', 0, G_OPTION_ARG_INT, &o.windows, "windows per profiler (10)", "N" },
		{ "sample-us", 0, 0, G_OPTION_ARG_INT, &o.sample_us, "sampling interval (5000)", "US" },
		{ "window-us", 0, 0, G_OPTION_ARG_INT, &o.window_us, "window (200000)", "US" },
		{ "hotset", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.hotsets,
		  "hot set of phase 1, 2 (gpa=0x.. bytes=0x.. lines)", "FILE" },
		{ "switch-after", 0, 0, G_OPTION_ARG_INT, &o.switch_after,
		  "run --switch-cmd after this window of the first profiler", "K" },
		{ "switch-cmd", 0, 0, G_OPTION_ARG_STRING, &o.switch_cmd, "shell command that moves the hot set", "CMD" },
		{ "warmup", 0, 0, G_OPTION_ARG_INT, &o.warmup,
		  "first profiler: run N windows (not scored) before --start-cmd starts the workload", "N" },
		{ "start-cmd", 0, 0, G_OPTION_ARG_STRING, &o.start_cmd,
		  "shell command that starts the first hot set, after the warm-up", "CMD" },
		{ "expect-within", 0, 0, G_OPTION_ARG_INT, &o.expect_within,
		  "exit 1 unless the first profiler reaches the expected P and R within W windows of each phase "
		  "and keeps them (median, and 3 in 4 windows)", "W" },
		{ "expect-precision", 0, 0, G_OPTION_ARG_DOUBLE, &o.expect_p, "(0.9)", "P" },
		{ "expect-recall", 0, 0, G_OPTION_ARG_DOUBLE, &o.expect_r, "(0.9)", "R" },
		{ "regions", 0, 0, G_OPTION_ARG_NONE, &o.per_window_snap, "print the accessed regions of every window", NULL },
		{ "no-age", 0, 0, G_OPTION_ARG_NONE, &o.no_age,
		  "do not clear every accessed bit before a profiler starts", NULL },
		{ "flush-tlb", 0, 0, G_OPTION_ARG_NONE, &o.flush_tlb,
		  "flush the VM's TLBs once per window after clearing (VTIER_TDP_FLUSH_TLB)", NULL },
		{ "result-tag", 0, 0, G_OPTION_ARG_STRING, &o.result_tag,
		  "print a RESULT-TDP line per profiler, tagged TAG", "TAG" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("- profile a live QEMU/KVM VM through vtier_tdp.ko");
	g_autoptr(GError) error = NULL;
	static const char *const def_profilers[] = { "telescope-bounded", "linear", NULL };
	const char *const *profs;
	struct hotset hs[2] = { 0 };
	struct phase_res ph[2] = { { .first = -1, .hold = -1 }, { .first = -1, .hold = -1 } };
	struct prof_total tot[16] = { 0 };
	unsigned int nr_hs = 0, nr_prof, cur = 0;
	pid_t pid = o.pid;
	int rc = 0;

	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
		fprintf(stderr, "vtier-bench tdp: %s\n", error->message);
		rc = 2;
		goto out;
	}
	o.age = !o.no_age;
	if (!o.qmp == !o.pid) {
		fprintf(stderr, "vtier-bench tdp: give one of --qmp SOCKET or --pid PID\n");
		rc = 2;
		goto out;
	}
	if (o.windows <= 0 || o.sample_us <= 0 || o.window_us < o.sample_us) {
		fprintf(stderr, "vtier-bench tdp: need --windows > 0 and --window-us >= --sample-us > 0\n");
		rc = 2;
		goto out;
	}
	if (o.qmp && vt_tdp_pid_of_socket(o.qmp, &pid, &error) < 0) {
		fprintf(stderr, "vtier-bench tdp: QMP socket %s\n", error->message);
		rc = 2;
		goto out;
	}
	if (!o.qmp)
		pid = o.pid;
	for (char **h = o.hotsets; h && *h; h++) {
		if (nr_hs == 2) {
			fprintf(stderr, "vtier-bench tdp: at most two --hotset\n");
			rc = 2;
		goto out;
		}
		if (!hotset_load(*h, &hs[nr_hs], &error)) {
			fprintf(stderr, "vtier-bench tdp: %s\n", error->message);
			rc = 2;
		goto out;
		}
		printf("# hot set %u: %s, %u extents, %.1f MiB\n", nr_hs + 1, *h, hs[nr_hs].ext->len,
		       (double)hs[nr_hs].bytes / (1 << 20));
		nr_hs++;
	}
	if (o.warmup < 0 || (o.start_cmd && !o.warmup)) {
		fprintf(stderr, "vtier-bench tdp: --start-cmd needs --warmup N > 0\n");
		rc = 2;
		goto out;
	}
	if (o.switch_cmd && nr_hs < 2) {
		fprintf(stderr, "vtier-bench tdp: --switch-cmd needs two --hotset\n");
		rc = 2;
		goto out;
	}
	profs = o.profilers ? (const char *const *)o.profilers : def_profilers;
	for (nr_prof = 0; profs[nr_prof]; nr_prof++) {
		if (nr_prof == G_N_ELEMENTS(tot)) {
			fprintf(stderr, "vtier-bench tdp: too many profilers\n");
			rc = 2;
		goto out;
		}
		if (!vt_profiler_lookup(profs[nr_prof])) {
			fprintf(stderr, "vtier-bench tdp: unknown profiler %s\n", profs[nr_prof]);
			rc = 2;
		goto out;
		}
	}
	printf("# QEMU pid %d, %u windows of %d us, sampling every %d us\n", (int)pid, o.windows,
	       o.window_us, o.sample_us);
	for (unsigned int i = 0; i < G_N_ELEMENTS(tot); i++)
		tot[i].reached = -1;
	for (unsigned int i = 0; i < nr_prof && rc != 2; i++) {
		int r = run_profiler(&o, pid, profs[i], i == 0, hs, nr_hs, &cur, &tot[i], ph);

		rc = MAX(rc, r);
	}
	if (rc == 2)
		goto out;
	printf("\n# cost per window (mean over windows)\n");
	printf("# %-17s %8s %9s %9s %9s %9s %9s %10s %10s %10s %7s %8s %9s\n", "profiler", "windows",
	       "checks", "pte", "pmd", "pud", "p4d", "walk_us", "src_cpu_us", "prof_us", "ioctls",
	       "flushes", "flush_us");
	for (unsigned int i = 0; i < nr_prof; i++) {
		double n = tot[i].windows ? tot[i].windows : 1;
		uint64_t sum = 0;

		for (unsigned int l = 0; l < VT_MAX_LEVELS; l++)
			sum += tot[i].checks[l];
		printf("%-19s %8u %9.0f %9.0f %9.0f %9.0f %9.0f %10.0f %10.0f %10.0f %7.1f %8.2f %9.1f\n",
		       profs[i], tot[i].windows, sum / n, tot[i].checks[0] / n, tot[i].checks[1] / n,
		       tot[i].checks[2] / n, tot[i].checks[3] / n, tot[i].src_wall_ns / n / 1e3,
		       tot[i].src_cpu_ns / n / 1e3, tot[i].prof_cpu_ns / n / 1e3, tot[i].ioctls / n,
		       tot[i].flushes / n, tot[i].flush_ns / n / 1e3);
	}
	/* walk_us includes flush_us: the flush runs inside the SAMPLE/SCAN call that asks for it */
	for (unsigned int i = 0; o.result_tag && i < nr_prof; i++) {
		double n = tot[i].windows ? tot[i].windows : 1, sc = tot[i].scored ? tot[i].scored : 1;
		uint64_t sum = 0;

		for (unsigned int l = 0; l < VT_MAX_LEVELS; l++)
			sum += tot[i].checks[l];
		printf("RESULT-TDP tag=%s profiler=%s flush=%s windows=%u reached=%d p_mean=%.3f r_mean=%.3f "
		       "checks=%.0f walk_us=%.0f src_cpu_us=%.0f prof_us=%.0f ioctls=%.1f flushes=%.2f "
		       "flush_us=%.1f root_swaps=%llu marked=%.0f\n",
		       o.result_tag, profs[i], o.flush_tlb ? "on" : "off", tot[i].windows, tot[i].reached,
		       tot[i].sum_p / sc, tot[i].sum_r / sc, sum / n, tot[i].src_wall_ns / n / 1e3,
		       tot[i].src_cpu_ns / n / 1e3, tot[i].prof_cpu_ns / n / 1e3, tot[i].ioctls / n,
		       tot[i].flushes / n, tot[i].flush_ns / n / 1e3,
		       (unsigned long long)tot[i].root_swaps, tot[i].marked / n);
	}
	if (nr_hs) {
		printf("\n# %s per phase: P >= %.2f and R >= %.2f", profs[0], o.expect_p, o.expect_r);
		if (o.expect_within)
			printf("; pass: reached within %d windows, and from then on the median P and R "
			       "meet them and at least 3 in 4 windows meet both", o.expect_within);
		printf("\n");
		for (unsigned int k = 0; k <= cur; k++) {
			double n = ph[k].windows ? ph[k].windows : 1, a = ph[k].after ? ph[k].after : 1;
			double ap = ph[k].after_p / a, ar = ph[k].after_r / a;
			double mp = vt_bench_median(ph[k].after_pv, NULL, NULL);
			double mr = vt_bench_median(ph[k].after_rv, NULL, NULL);

			printf("phase %u: reached at window %d, holds from window %d, of %u; "
			       "from window %d on: mean P %.3f R %.3f, median P %.3f R %.3f, "
			       "%u of %u windows meet both; whole phase: mean P %.3f R %.3f\n",
			       k + 1, ph[k].first, ph[k].hold, ph[k].windows, ph[k].first, ap, ar, mp, mr,
			       ph[k].after_ok, ph[k].after, ph[k].sum_p / n, ph[k].sum_r / n);
			if (o.expect_within && rc != 2 &&
			    (ph[k].first < 0 || ph[k].first > o.expect_within)) {
				printf("FAIL: phase %u: P and R >= %.2f not reached within %d windows\n",
				       k + 1, o.expect_p, o.expect_within);
				rc = 1;
			} else if (o.expect_within && rc != 2 &&
				   (mp < o.expect_p || mr < o.expect_r || 4 * ph[k].after_ok < 3 * ph[k].after)) {
				printf("FAIL: phase %u: reached at window %d but not kept: median P %.3f R %.3f, "
				       "%u of %u windows meet both\n",
				       k + 1, ph[k].first, mp, mr, ph[k].after_ok, ph[k].after);
				rc = 1;
			}
		}
		if (o.switch_cmd && cur == 0 && rc != 2) {
			printf("FAIL: the phase change never happened (--switch-after beyond --windows?)\n");
			rc = 1;
		}
	}
out:
	for (unsigned int k = 0; k < nr_hs; k++)
		g_array_free(hs[k].ext, TRUE);
	for (unsigned int k = 0; k < G_N_ELEMENTS(ph); k++) {
		if (ph[k].after_pv) {
			g_array_free(ph[k].after_pv, TRUE);
			g_array_free(ph[k].after_rv, TRUE);
		}
	}
	g_strfreev(o.profilers);
	g_strfreev(o.hotsets);
	g_free(o.qmp);
	g_free(o.switch_cmd);
	g_free(o.start_cmd);
	g_free(o.result_tag);
	return rc;
}
