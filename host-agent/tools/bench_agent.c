// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-bench agent: vtierd's whole CPU cost per window (the profiler's
 * samples and window, residency, policy, the movers' bookkeeping: what
 * vtierd's worker runs, vt_profiler_sample() and vt_engine_window()) against
 * the size of guest RAM.
 *
 * The VM is this process: guest RAM is a sparse MAP_NORESERVE mapping of each
 * size, of which only the hot set and the first --present-mib are touched;
 * the engine is vtierd's, with this process as its QEMU (move_pages status
 * on its own pages) and the host's NUMA tiers, driven without a timer. The
 * profiler (Telescope) sees guest-physical memory through the simulated
 * access source, a workload whose footprint is the RAM and whose hot set is
 * what was touched; the simulator's own time (its clock and its answers) is
 * not counted, as in `vtier-bench telemetry`.
 *
 * Each size runs the engine twice over the same RAM, windows alternating:
 * residency "full" (every chunk read each window, one sample per 16 KiB:
 * vtierd before the round robin) and "round-robin" (the moved chunks and a
 * slice of VT_RESIDENCY_SAMPLES per window: vtierd now). One line per size
 * and refresh: RESULT-AGENT ram_gib=... us_per_window=... core_pct=...
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "daemon.h"
#include "numa.h"
#include "observe.h"
#include "residency.h"
#include "sim_source.h"
#include "engine.h"
#include "thread_ns.h"
#include "tlb_stage.h"
#include "vm.h"
#include "vtier_bench.h"

#define MIB ((uint64_t)1 << 20)
#define GIB ((uint64_t)1 << 30)
#define HOT_BYTES (256 * MIB)
#define FULL_STRIDE (16 * 1024)	/* the residency's stride before the round robin */

enum refresh { REFRESH_FULL, REFRESH_ROUND_ROBIN, NR_REFRESH };

static const char *const refresh_names[NR_REFRESH] = { "full", "round-robin" };

struct opts {
	int windows;
	int window_ms;
	int sample_ms;
	int present_mib;
	const char *profiler;
};

/* One engine over the RAM: a VM as vtierd builds it, with the simulated source. */
struct agent {
	enum refresh refresh;
	struct vt_vm *vm;
	struct vt_workload *w;
	GArray *cost_ns;	/* uint64_t, per measured window */
	uint64_t first_ns;	/* the first window: every chunk read */
	uint64_t stage_ns[5];	/* profiler (samples, window, EMAs), residency, policy, movers, rest */
	uint64_t checks;
	uint64_t clock_ns;	/* one read of the thread CPU clock (vt_source_clock_ns) */
};

static struct vt_workload *workload(uint64_t ram, GError **error)
{
	g_autofree char *json = g_strdup_printf(
		"{\"name\": \"agent\", \"footprint\": %" PRIu64 ", \"base\": 0, \"phases\": ["
		"{\"duration_s\": 1000000, \"access_rate\": 100000000, \"hot\": ["
		"{\"start\": %" PRIu64 ", \"size\": %" PRIu64 ", \"weight\": 1, "
		"\"pattern\": \"uniform\"}]}]}",
		ram, ram / 2, (uint64_t)MIN(HOT_BYTES, ram / 2));
	struct vt_workload *w = vt_workload_from_json(json, -1, error);

	if (w && !vt_workload_validate(w, error)) {
		vt_workload_free(w);
		return NULL;
	}
	return w;
}

static void agent_free(struct agent *a)
{
	if (!a->vm)
		return;
	vt_engine_stop(a->vm);	/* the profiler and the source */
	vt_mtm_free(a->vm->mtm);
	vt_refresh_free(a->vm->refresh);
	vt_phase_clear(&a->vm->phase);
	vt_tlb_release(&a->vm->tlb_marks);
	g_free(a->vm->heatmap);
	g_free(a->vm->heatmap_acc);
	g_array_free(a->vm->ram, TRUE);
	g_array_free(a->vm->gpa_map, TRUE);
	g_ptr_array_free(a->vm->backends, TRUE);
	g_mutex_clear(&a->vm->lock);
	g_free(a->vm);
	vt_workload_free(a->w);
	g_array_free(a->cost_ns, TRUE);
	a->vm = NULL;
}

/*
 * The VM vt_engine_start() would build for a VM of @ram bytes at @hva, with
 * the simulated source instead of tdp; @tiers: the host's.
 */
static bool agent_new(struct agent *a, enum refresh refresh, struct vt_daemon *d,
		      const struct vt_tiers *tiers, uint64_t hva, uint64_t ram,
		      const struct opts *o, GError **error)
{
	struct vt_vm *vm = g_new0(struct vt_vm, 1);
	struct vt_vm_ram r = { .size = ram, .hva = hva, .page_size = 4096 };
	struct vt_gpa_map g = { 0, ram, hva };
	struct vt_range r64 = { hva, hva + ram };
	struct vt_profiler_attrs attrs;
	uint64_t stride = refresh == REFRESH_FULL ? FULL_STRIDE : VT_RESIDENCY_STRIDE;

	*a = (struct agent){ .refresh = refresh, .vm = vm,
			     .cost_ns = g_array_new(FALSE, FALSE, sizeof(uint64_t)) };
	g_mutex_init(&vm->lock);
	g_strlcpy(vm->name, refresh_names[refresh], sizeof(vm->name));
	vm->host = &d->host;
	vm->tlb_host = &d->tlb_host;
	vm->reg = &d->reg;
	vm->pid = getpid();
	vm->ram = g_array_new(FALSE, FALSE, sizeof(struct vt_vm_ram));
	g_array_append_val(vm->ram, r);
	vm->gpa_map = g_array_new(FALSE, FALSE, sizeof(struct vt_gpa_map));
	g_array_append_val(vm->gpa_map, g);
	vm->ram_bytes = ram;
	vm->backends = g_ptr_array_new();
	vt_vm_policy_default(&vm->policy);
	vm->policy.mode = VT_MODE_AUTO;
	vm->policy.window_ms = (uint64_t)o->window_ms;
	vm->policy.sample_ms = (uint64_t)o->sample_ms;
	vm->tiers = *tiers;
	vm->ctier_kind = VT_CTIER_NONE;
	vm->nr_tiers = tiers->nr;
	vm->tiers_allowed = (1U << vm->nr_tiers) - 1;
	vt_vm_heatmap_layout(vm);
	a->w = workload(ram, error);
	if (!a->w)
		return false;
	vm->space = VT_SPACE_GPA;
	g_strlcpy(vm->profiler_name, o->profiler, sizeof(vm->profiler_name));
	vm->src = vt_sim_new(a->w, 1);
	vm->src->timed = true;
	a->clock_ns = vt_source_clock_ns();
	vt_observe_attrs(vm, &attrs);
	vm->prof = vt_profiler_new(o->profiler, vm->src, &attrs, error);
	if (!vm->prof)
		return false;
	if (vt_profiler_start(vm->prof) < 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s does not start", o->profiler);
		return false;
	}
	vt_snapshot_init(&vm->snap);
	vm->mtm = vt_mtm_new(&r64, 1, vm->policy.chunk_bytes, stride, vm->nr_tiers);
	vt_residency_start(vm);
	if (refresh == REFRESH_FULL) {
		/* every chunk, every window */
		vt_refresh_free(vm->refresh);
		vm->refresh = vt_refresh_new(vm->mtm->chunks->len, vm->mtm->chunks->len);
	}
	return true;
}

/* One window as vtierd's worker runs it: the samples, then the engine's window. */
static bool agent_window(struct agent *a, const struct opts *o, bool measured, GError **error)
{
	struct vt_vm *vm = a->vm;
	unsigned int samples = (unsigned int)MAX(o->window_ms / o->sample_ms, 1);
	uint64_t src0 = vm->src->cost_ns, src1, sim = 0, t0, t1, t2;
	uint64_t calls0 = vm->src->calls, calls1;
	uint64_t checks0 = vt_source_checks_total(vm->src);
	const struct vt_vm_stats *s = &vm->stats;

	t0 = vt_thread_ns();
	for (unsigned int k = 0; k < samples; k++) {
		uint64_t a0 = vt_thread_ns();

		vt_sim_advance(vm->src, (uint64_t)o->sample_ms * 1000000);
		sim += vt_thread_ns() - a0;
		if (vt_profiler_sample(vm->prof) < 0) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "profiler sample failed");
			return false;
		}
	}
	t1 = vt_thread_ns();
	src1 = vm->src->cost_ns;
	calls1 = vm->src->calls;
	if (!vt_engine_window(vm)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "window failed: %s",
			    vm->last_error);
		return false;
	}
	t2 = vt_thread_ns();
	{
		/*
		 * The simulator's time (its clock, its answers) is not vtierd's, nor
		 * the bench's clock reads around each source call and each advance:
		 * about one read inside the measured span, one outside it.
		 */
		uint64_t c = a->clock_ns;
		uint64_t src_samples = src1 - src0 + (calls1 - calls0 + samples) * c;
		uint64_t src_window = vm->src->cost_ns - src1 + (vm->src->calls - calls1) * c;
		uint64_t samples_ns = t1 - t0 - MIN(t1 - t0, sim + src_samples);
		uint64_t window_ns = t2 - t1 - MIN(t2 - t1, src_window);
		uint64_t stages = s->residency_cost_ns + s->policy_cost_ns + s->mover_cost_ns;
		uint64_t profiler_ns = samples_ns + s->profiler_cost_ns -
				       MIN(s->profiler_cost_ns, src_window);

		if (!measured) {
			a->first_ns = samples_ns + window_ns;
			return true;
		}
		g_array_append_val(a->cost_ns, (uint64_t){ samples_ns + window_ns });
		a->stage_ns[0] += profiler_ns;
		a->stage_ns[1] += s->residency_cost_ns;
		a->stage_ns[2] += s->policy_cost_ns;
		a->stage_ns[3] += s->mover_cost_ns;
		/* the rest of the window: the heatmap's column, publishing the stats */
		a->stage_ns[4] += samples_ns + window_ns -
				  MIN(samples_ns + window_ns, profiler_ns + stages);
		a->checks += vt_source_checks_total(vm->src) - checks0;
	}
	return true;
}

static int cmp_u64(gconstpointer x, gconstpointer y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static void report(struct agent *a, uint64_t ram, const struct opts *o)
{
	unsigned int n = a->cost_ns->len;
	double med, win_us = o->window_ms * 1000.0;

	g_array_sort(a->cost_ns, cmp_u64);
	med = n ? (double)g_array_index(a->cost_ns, uint64_t, n / 2) / 1e3 : 0;
	printf("RESULT-AGENT ram_gib=%" PRIu64 " us_per_window=%.1f core_pct=%.3f refresh=%s "
	       "profiler_us=%.1f residency_us=%.1f policy_us=%.1f mover_us=%.1f other_us=%.1f "
	       "first_window_us=%.0f chunks=%u checks_per_window=%" PRIu64 " windows=%u\n",
	       ram / GIB, med, med / win_us * 100, refresh_names[a->refresh],
	       n ? a->stage_ns[0] / 1e3 / n : 0, n ? a->stage_ns[1] / 1e3 / n : 0,
	       n ? a->stage_ns[2] / 1e3 / n : 0, n ? a->stage_ns[3] / 1e3 / n : 0,
	       n ? a->stage_ns[4] / 1e3 / n : 0,
	       a->first_ns / 1e3, a->vm->mtm->chunks->len, n ? a->checks / n : 0, n);
	fflush(stdout);
}

/* Touch every page of [@off, @off + @len) of the RAM: present, on a node. */
static void touch(char *ram, uint64_t off, uint64_t len)
{
	for (uint64_t p = off; p < off + len; p += 4096)
		ram[p] = 1;
}

static int run_size(uint64_t ram, bool *want, struct vt_daemon *d, const struct vt_tiers *tiers,
		    const struct opts *o)
{
	struct agent agents[NR_REFRESH] = { 0 };
	g_autoptr(GError) error = NULL;
	char *mem;
	int status = 0;

	mem = mmap(NULL, ram, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		   -1, 0);
	if (mem == MAP_FAILED) {
		fprintf(stderr, "vtier-bench agent: cannot map %" PRIu64 " GiB: %s\n", ram / GIB,
			strerror(errno));
		return 1;
	}
	touch(mem, 0, MIN((uint64_t)o->present_mib * MIB, ram));
	touch(mem, ram / 2, (uint64_t)MIN(HOT_BYTES, ram / 2));
	for (int r = 0; r < NR_REFRESH; r++)
		if (want[r] && !agent_new(&agents[r], (enum refresh)r, d, tiers, (uintptr_t)mem,
					  ram, o, &error)) {
			fprintf(stderr, "vtier-bench agent: %s\n", error->message);
			status = 1;
			goto out;
		}
	/* the first window reads every chunk (both ways): not measured, shown apart */
	for (int w = 0; w <= o->windows; w++)
		for (int r = 0; r < NR_REFRESH; r++)
			if (agents[r].vm && !agent_window(&agents[r], o, w > 0, &error)) {
				fprintf(stderr, "vtier-bench agent: %s: %s\n", refresh_names[r],
					error->message);
				status = 1;
				goto out;
			}
	for (int r = 0; r < NR_REFRESH; r++)
		if (agents[r].vm)
			report(&agents[r], ram, o);
out:
	for (int r = 0; r < NR_REFRESH; r++)
		agent_free(&agents[r]);
	munmap(mem, ram);
	return status;
}

int vt_bench_agent(int argc, char **argv)
{
	struct opts o = { .windows = 10, .window_ms = 200, .sample_ms = 5, .present_mib = 1024 };
	g_autofree char *sizes_arg = NULL, *profiler_arg = NULL, *refresh = NULL;
	GOptionEntry entries[] = {
		{ "sizes", 0, 0, G_OPTION_ARG_STRING, &sizes_arg,
		  "guest RAM sizes in GiB, comma-separated (default 1,4,16,64,256,1024)", "LIST" },
		{ "windows", 0, 0, G_OPTION_ARG_INT, &o.windows,
		  "measured windows per size, after the first (default 10)", "N" },
		{ "window-ms", 0, 0, G_OPTION_ARG_INT, &o.window_ms,
		  "window length; core_pct is per window of this length (default 200)", "MS" },
		{ "sample-ms", 0, 0, G_OPTION_ARG_INT, &o.sample_ms,
		  "profiler sample period (default 5)", "MS" },
		{ "present-mib", 0, 0, G_OPTION_ARG_INT, &o.present_mib,
		  "MiB of RAM touched from its start, besides the 256 MiB hot set (default 1024)",
		  "MIB" },
		{ "profiler", 0, 0, G_OPTION_ARG_STRING, &profiler_arg,
		  "profiler over the simulated source (default telescope-flex, vtierd's)", "NAME" },
		{ "refresh", 0, 0, G_OPTION_ARG_STRING, &refresh,
		  "residency refresh: full, round-robin or both (default both, side by side)",
		  "WHICH" },
		{ NULL },
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new(
		"- vtierd's CPU per window against guest RAM size");
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) sizes = NULL;
	struct vt_tiers tiers;
	struct vt_daemon *d;
	bool want[NR_REFRESH] = { true, true };
	int status = 0;

	if (!vt_bench_options(ctx, entries, &argc, &argv, "agent"))
		return 2;
	if (o.windows < 1 || o.window_ms < 1 || o.sample_ms < 1 || o.sample_ms > o.window_ms ||
	    o.present_mib < 0) {
		fprintf(stderr, "vtier-bench agent: --windows, --window-ms and --sample-ms must be "
			"positive, --sample-ms at most --window-ms, --present-mib not negative\n");
		return 2;
	}
	if (refresh && strcmp(refresh, "both") != 0) {
		want[REFRESH_FULL] = strcmp(refresh, "full") == 0;
		want[REFRESH_ROUND_ROBIN] = strcmp(refresh, "round-robin") == 0;
		if (!want[REFRESH_FULL] && !want[REFRESH_ROUND_ROBIN]) {
			fprintf(stderr, "vtier-bench agent: --refresh: full, round-robin or both\n");
			return 2;
		}
	}
	o.profiler = profiler_arg ? profiler_arg : "telescope-flex";
	if (!vt_profiler_lookup(o.profiler)) {
		fprintf(stderr, "vtier-bench agent: unknown profiler '%s'\n", o.profiler);
		return 2;
	}
	sizes = g_strsplit(sizes_arg ? sizes_arg : "1,4,16,64,256,1024", ",", -1);
	for (char **s = sizes; *s; s++) {
		char *end;
		guint64 gib = g_ascii_strtoull(*s, &end, 10);

		if (!**s || *end || gib < 1 || gib > 4096) {
			fprintf(stderr, "vtier-bench agent: --sizes: '%s' is not a size in GiB "
				"(1..4096)\n", *s);
			return 2;
		}
	}
	if (!vt_tiers_discover(&tiers, "/", NULL, &error)) {
		fprintf(stderr, "vtier-bench agent: host tiers: %s\n", error->message);
		return 1;
	}
	if (vt_numa_probe(getpid()) < 0) {
		fprintf(stderr, "vtier-bench agent: move_pages(2) is not usable here\n");
		return 1;
	}
	d = vt_daemon_new(&tiers, NULL);
	printf("# vtier-bench agent: %s over the simulated source, %d ms windows of %d ms "
	       "samples, %u NUMA tier(s), host %s, %ld CPUs\n", o.profiler, o.window_ms,
	       o.sample_ms, tiers.nr, g_get_host_name(), sysconf(_SC_NPROCESSORS_ONLN));
	for (char **s = sizes; *s && !status; s++)
		status = run_size(g_ascii_strtoull(*s, NULL, 10) * GIB, want, d, &tiers, &o);
	vt_daemon_free(d);
	return status;
}
