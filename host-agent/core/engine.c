// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The per-VM engine: every window, the profiler's snapshot feeds the chunk
 * EMAs, move_pages status samples say where each chunk lives, the policy
 * decides, and (mode auto) the NUMA mover carries the orders out.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "damon_kernel.h"
#if __has_include("tdp_source.h")
#include "tdp_source.h"
#define VTIER_HAVE_TDP 1
#endif
#include "backend.h"
#include "daemon.h"
#include "mover.h"
#include "numa.h"
#include "residency.h"
#include "vm.h"
#include "waterfall.h"

#define TIER_RESERVE (32ULL << 20)	/* never fill a tier's last 32 MiB */

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static const char *tdp_device(void)
{
	const char *env = g_getenv("VTIER_TDP_DEVICE");

	return env && *env ? env : "/dev/vtier-tdp";
}

/*
 * Which profiler and why; the log line is the caller's. With host-kmod
 * (/dev/vtier-tdp) and a gpa -> hva map, Telescope over tdp; otherwise the
 * host kernel's DAMON on the QEMU process. @src is set for tdp.
 */
static int choose_profiler(struct vt_vm *vm, GError **error)
{
	bool tdp_dev = g_file_test(tdp_device(), G_FILE_TEST_EXISTS);
	bool want_tdp = strcmp(vm->policy.profiler, "damon-kernel") != 0;
	g_autofree char *tdp_why = NULL;
	g_autofree char *why = NULL;
	int ret;

	if (want_tdp && tdp_dev && vm->gpa_map->len) {
#ifdef VTIER_HAVE_TDP
		g_autoptr(GError) e = NULL;
		const char *name = strcmp(vm->policy.profiler, "auto") == 0 ? "telescope-flex" :
				   vm->policy.profiler;

		vm->src = vt_tdp_new_pid(vm->pid, &e);
		if (vm->src) {
			g_strlcpy(vm->profiler_name, name, sizeof(vm->profiler_name));
			g_snprintf(vm->profiler_why, sizeof(vm->profiler_why),
				   "host-kmod loaded (%s): %s over the tdp source (EPT/NPT accessed "
				   "bits, guest-physical)", tdp_device(), name);
			vm->space = VT_SPACE_GPA;
			return 0;
		}
		tdp_why = g_strdup_printf("host-kmod is loaded but tdp attach failed (%s)", e->message);
#else
		tdp_why = g_strdup("host-kmod is loaded but this vtierd was built without the tdp "
				   "source");
#endif
	} else if (want_tdp && tdp_dev) {
		tdp_why = g_strdup("host-kmod is loaded but QEMU's flat memory view (info mtree -f) "
				   "gave no gpa -> hva map");
	} else if (want_tdp) {
		tdp_why = g_strdup_printf("host-kmod not loaded (%s missing)", tdp_device());
	}
	if (strcmp(vm->policy.profiler, "auto") != 0 &&
	    strcmp(vm->policy.profiler, "damon-kernel") != 0) {
		g_set_error(error, VT_CORE_ERROR, EOPNOTSUPP, "profiler '%s' needs the tdp source: %s",
			    vm->policy.profiler, tdp_why);
		return -EOPNOTSUPP;
	}
	ret = vt_damon_kernel_probe(&why);
	if (ret) {
		g_set_error(error, VT_CORE_ERROR, -ret, "damon-kernel: %s%s%s", why,
			    tdp_why ? "; and " : "", tdp_why ? tdp_why : "");
		return ret;
	}
	g_strlcpy(vm->profiler_name, "damon-kernel", sizeof(vm->profiler_name));
	g_snprintf(vm->profiler_why, sizeof(vm->profiler_why), "%s%susing the host kernel's "
		   "DAMON on the QEMU process", tdp_why ? tdp_why : "profiler=damon-kernel",
		   "; ");
	vm->space = VT_SPACE_HVA;
	return 0;
}

unsigned int vt_vm_nr_tiers(const struct vt_vm *vm)
{
	return vm->nr_tiers ? vm->nr_tiers : vm->tiers.nr;
}

/*
 * NUMA tiers first, then the compressed ones: vtierd's pools when QEMU handed
 * its RAM over, else the host's zswap (one tier) when there is one and the
 * operator configured compressed tiers. Called with the VM's lock held (or
 * before its worker runs).
 */
static void choose_ctier(struct vt_vm *vm)
{
	struct vt_daemon *d = vm->d;

	vt_zswap_close(&vm->zswap);
	vm->ctier_kind = VT_CTIER_NONE;
	if (vm->backends->len && d->nr_ctier)
		vm->ctier_kind = VT_CTIER_HANDOFF;
	else if (d->nr_ctier && d->zswap_ok && vt_zswap_open(&vm->zswap, vm->pid) == 0)
		vm->ctier_kind = VT_CTIER_ZSWAP;
	vm->nr_tiers = vm->tiers.nr + (vm->ctier_kind == VT_CTIER_HANDOFF ? d->nr_ctier :
				       vm->ctier_kind == VT_CTIER_ZSWAP ? 1 : 0);
	vm->nr_tiers = MIN(vm->nr_tiers, (unsigned int)VT_MTM_MAX_TIERS);
}

static gboolean window_cb(gpointer data)
{
	struct vt_vm *vm = data;

	if (vt_engine_window(vm))
		return G_SOURCE_CONTINUE;
	vm->engine_failed(vm, vm->engine_failed_opaque);
	return G_SOURCE_CONTINUE;	/* the main loop detaches and stops us */
}

/* Profilers that sample (tdp): one timer; every window_ms / sample_ms-th tick ends a window. */
static gboolean sample_cb(gpointer data)
{
	struct vt_vm *vm = data;
	unsigned int per_window = (unsigned int)MAX(vm->policy.window_ms / vm->policy.sample_ms, 1);

	if (!vm->prof)
		return G_SOURCE_CONTINUE;
	vt_profiler_sample(vm->prof);
	if (vm->prof->samples < per_window)
		return G_SOURCE_CONTINUE;
	if (vt_engine_window(vm))
		return G_SOURCE_CONTINUE;
	vm->engine_failed(vm, vm->engine_failed_opaque);
	return G_SOURCE_CONTINUE;
}

void vt_engine_stop(struct vt_vm *vm)
{
	for (GSource **src = &vm->window_src; src <= &vm->sample_src; src++) {
		if (*src) {
			g_source_destroy(*src);
			g_source_unref(*src);
			*src = NULL;
		}
	}
	vt_profiler_free(vm->prof);
	vm->prof = NULL;
	vt_source_destroy(vm->src);
	vm->src = NULL;
	vt_snapshot_clear(&vm->snap);
}

bool vt_engine_start(struct vt_vm *vm, vt_engine_failed_fn failed, void *opaque,
		     GError **error)
{
	g_autofree struct vt_range *ranges = NULL;
	g_autofree struct vt_range64 *r64 = NULL;
	struct vt_profiler_attrs attrs;
	int ret;

	vt_engine_stop(vm);
	vm->engine_failed = failed;
	vm->engine_failed_opaque = opaque;
	choose_ctier(vm);
	vt_vm_heatmap_layout(vm);
	if (vm->mtm && vm->mtm->nr_tiers != vt_vm_nr_tiers(vm)) {
		vt_mtm_free(vm->mtm);	/* the tiers changed: placement starts afresh */
		vm->mtm = NULL;
	}
	if (vm->policy.mode == VT_MODE_OFF) {
		g_strlcpy(vm->state, "off", sizeof(vm->state));
		g_strlcpy(vm->profiler_name, "none", sizeof(vm->profiler_name));
		g_strlcpy(vm->profiler_why, "mode=off: profiling detached",
			  sizeof(vm->profiler_why));
		return true;
	}
	if (choose_profiler(vm, error) < 0)
		return false;
	ranges = g_new0(struct vt_range, vm->ram->len);
	r64 = g_new0(struct vt_range64, vm->ram->len);
	for (unsigned int i = 0; i < vm->ram->len; i++) {
		const struct vt_vm_ram *r = &g_array_index(vm->ram, struct vt_vm_ram, i);

		ranges[i] = (struct vt_range){ r->hva, r->hva + r->size };
		r64[i] = (struct vt_range64){ r->hva, r->hva + r->size };
	}
	/* ranges sorted by address for the profiler */
	for (unsigned int i = 1; i < vm->ram->len; i++)
		for (unsigned int j = i; j > 0 && ranges[j].start < ranges[j - 1].start; j--) {
			struct vt_range t = ranges[j];
			struct vt_range64 t64 = r64[j];

			ranges[j] = ranges[j - 1];
			ranges[j - 1] = t;
			r64[j] = r64[j - 1];
			r64[j - 1] = t64;
		}
	vt_profiler_attrs_default(&attrs);
	attrs.sample_us = vm->policy.sample_ms * 1000;
	attrs.window_us = vm->policy.window_ms * 1000;
	/* at least one region per 8 MiB: DAMON's adaptive regions otherwise merge a
	 * 64 MiB hot set with its cold neighbours (seen in the testbed: 15 regions
	 * for 1 GiB, part of the hot set demoted under a tight DRAM limit) */
	attrs.min_regions = (unsigned int)CLAMP(vm->ram_bytes / (8ULL << 20), 10, 500);
	attrs.max_regions = 2000;
	if (vm->space == VT_SPACE_GPA) {
		vm->prof = vt_profiler_new(vm->profiler_name, vm->src, &attrs, error);
		if (!vm->prof)
			goto fail;
	} else {
		vm->src = vt_damon_kernel_source_new(vm->pid, ranges, vm->ram->len);
		if (!vm->src) {
			g_set_error(error, VT_CORE_ERROR, E2BIG, "too many RAM ranges (%u)",
				    vm->ram->len);
			return false;
		}
		/* one DAMON region per chunk (up to 4096 regions, then whole chunks
		 * per region): a region's one sampled address speaks for a whole THP
		 * frame, so coarser regions read cold chunks as hot (docs/vtierd.md) */
		uint64_t chunks = (vm->ram_bytes + vm->policy.chunk_bytes - 1) / vm->policy.chunk_bytes;
		uint64_t region_bytes = vm->policy.chunk_bytes * ((chunks + 4095) / 4096);

		vm->prof = vt_damon_kernel_profiler_new(vm->src, &attrs, region_bytes, &ret);
		if (!vm->prof) {
			g_set_error(error, VT_CORE_ERROR, -ret, "damon-kernel: %s", g_strerror(-ret));
			goto fail;
		}
	}
	ret = vt_profiler_start(vm->prof);
	if (ret < 0) {
		g_set_error(error, VT_CORE_ERROR, -ret, "%s: cannot start on pid %d: %s",
			    vm->profiler_name, (int)vm->pid, g_strerror(-ret));
		goto fail;
	}
	vt_snapshot_init(&vm->snap);
	vm->checks_mark = 0;
	if (!vm->mtm || vm->mtm->chunk_bytes != vm->policy.chunk_bytes) {
		vt_mtm_free(vm->mtm);
		vm->mtm = vt_mtm_new(r64, vm->ram->len, vm->policy.chunk_bytes, VT_RESIDENCY_STRIDE,
				     vt_vm_nr_tiers(vm));
	}
	g_strlcpy(vm->state, vm->policy.mode == VT_MODE_AUTO ? "tiering" : "observing",
		  sizeof(vm->state));
	/* on the VM's own context: its worker thread runs them */
	if (vm->prof->ops->sample) {
		vm->sample_src = g_timeout_source_new((guint)vm->policy.sample_ms);
		g_source_set_callback(vm->sample_src, sample_cb, vm, NULL);
		g_source_attach(vm->sample_src, vm->ctx);
	} else {
		vm->window_src = g_timeout_source_new((guint)vm->policy.window_ms);
		g_source_set_callback(vm->window_src, window_cb, vm, NULL);
		g_source_attach(vm->window_src, vm->ctx);
	}
	return true;
fail:
	vt_engine_stop(vm);
	return false;
}

static gint cmp_mtm_region(gconstpointer a, gconstpointer b)
{
	const struct vt_mtm_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The VM's tier model from what its backends measured (store stats, fault
 * latencies per compressed tier), and the fault time per second since the
 * last window. Runs on the worker; each backend's figures under its lock.
 */
static void build_model(struct vt_vm *vm, struct vt_vm_stats *s, GPtrArray *backends)
{
	struct vt_daemon *d = vm->d;
	struct vt_ctier_measured meas[VT_CTIER_MAX] = { { 0 } };
	g_autofree struct vt_latency_hist *hist = g_new0(struct vt_latency_hist, VT_CTIER_MAX);
	gint64 now = g_get_monotonic_time();
	double secs = vm->window_end_us ? (double)(now - vm->window_end_us) / 1e6 : 0;

	if (vm->ctier_kind == VT_CTIER_HANDOFF) {
		for (unsigned int i = 0; backends && i < backends->len; i++)
			vt_backend_ctier_measure(g_ptr_array_index(backends, i), meas, hist,
						 d->nr_ctier);
		for (unsigned int i = 0; i < d->nr_ctier; i++)
			meas[i].fault_p50_ns = vt_latency_percentile(&hist[i], 50);
	}
	vt_tier_model_build(&s->model, &vm->tiers, d->ctier, d->ctier_price,
			    vm->ctier_kind == VT_CTIER_HANDOFF ? d->nr_ctier : 0, meas,
			    vm->ctier_kind == VT_CTIER_ZSWAP);
	s->model.nr = MIN(s->model.nr, vt_vm_nr_tiers(vm));
	for (unsigned int t = 0; t < s->model.nr; t++) {
		const struct vt_tier_model_entry *e = &s->model.t[t];
		uint64_t delta = e->faults - MIN(vm->ctier_faults_mark[t], e->faults);

		s->fault_ns_per_s[t] = e->compressed && secs > 0 ?
				       (double)delta * e->latency_ns / secs : 0;
		vm->ctier_faults_mark[t] = e->faults;
	}
	vm->window_end_us = now;
}

/* Bytes of the VM on each tier: the store's count for vtierd's pools, else the residency. */
void vt_vm_tier_bytes(const struct vt_vm *vm, const struct vt_vm_stats *s, uint64_t *bytes)
{
	for (unsigned int t = 0; t < VT_MAX_TIERS; t++)
		bytes[t] = t < s->model.nr && s->model.t[t].compressed &&
			   vm->ctier_kind == VT_CTIER_HANDOFF ? s->model.t[t].stored_bytes :
			   s->tier[t].resident_bytes;
}

static void profile_figures(struct vt_vm *vm, struct vt_vm_stats *s, double threshold)
{
	if (!vm->phase.hot)
		vt_phase_init(&vm->phase);
	vt_phase_update(&vm->phase, vm->mtm, threshold);
	s->stable_windows = vm->phase.stable_windows;
	s->phase_changes = vm->phase.changes;
	memset(s->access_weight, 0, sizeof(s->access_weight));
	for (unsigned int i = 0; i < vm->mtm->chunks->len; i++) {
		const struct vt_mtm_chunk *c = &g_array_index(vm->mtm->chunks, struct vt_mtm_chunk, i);

		if (c->tier >= 0 && c->tier < VT_MAX_TIERS)
			s->access_weight[c->tier] += c->ema * (double)(c->end - c->start);
	}
}

static bool window_body(struct vt_vm *vm, struct vt_vm_stats *s, GPtrArray *backends,
			char *err, size_t err_len)
{
	struct vt_tiers *tiers = &vm->tiers;
	g_autoptr(GArray) orders = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_order));
	g_autoptr(GArray) regions = NULL;
	struct vt_mtm_window_stats ws;
	struct vt_mtm_params mp;
	uint64_t room[VT_MTM_MAX_TIERS] = { 0 };
	uint64_t t0 = thread_ns(), t1, t2, t3, moved_before = s->bytes_moved;
	uint64_t checks_now;
	int ret;

	ret = vt_profiler_window(vm->prof, &vm->snap);
	t1 = thread_ns();
	if (ret < 0) {
		g_snprintf(err, err_len, "%s window: %s",
			   vm->profiler_name, g_strerror(-ret));
		return ret != -ESRCH;	/* kdamond gone: the process exited */
	}
	s->profiler_cost_ns = t1 - t0;
	/* all checks since the last window end: the samples' and the window's */
	checks_now = vt_source_checks_total(vm->src);
	s->profiler_checks = checks_now - MIN(vm->checks_mark, checks_now);
	vm->checks_mark = checks_now;
	s->profiler_regions = vm->snap.regions->len;
	regions = g_array_sized_new(FALSE, FALSE, sizeof(struct vt_mtm_region),
				    vm->snap.regions->len);
	for (unsigned int i = 0; i < vm->snap.regions->len; i++) {
		const struct vt_snapshot_region *r =
			&g_array_index(vm->snap.regions, struct vt_snapshot_region, i);
		struct vt_mtm_region mr = { r->start, r->end, r->accesses };

		if (vm->space == VT_SPACE_HVA) {
			g_array_append_val(regions, mr);
			continue;
		}
		/* guest-physical region map: the policy and the mover work on QEMU's hva */
		for (unsigned int k = 0; k < vm->gpa_map->len; k++) {
			const struct vt_gpa_map *g = &g_array_index(vm->gpa_map, struct vt_gpa_map, k);
			uint64_t s0 = MAX(r->start, g->gpa), e0 = MIN(r->end, g->gpa + g->len);

			if (e0 <= s0)
				continue;
			mr = (struct vt_mtm_region){ g->hva + (s0 - g->gpa), g->hva + (e0 - g->gpa),
						     r->accesses };
			g_array_append_val(regions, mr);
		}
	}
	if (vm->space == VT_SPACE_GPA)
		g_array_sort(regions, cmp_mtm_region);
	vt_mtm_observe(vm->mtm, (struct vt_mtm_region *)(void *)regions->data, regions->len);
	ret = vt_residency_query(vm, backends);
	t2 = thread_ns();
	s->residency_cost_ns = t2 - t1;
	if (ret < 0) {
		g_snprintf(err, err_len, "move_pages status: %s",
			   g_strerror(-ret));
		return ret != -ESRCH;
	}
	vt_tiers_refresh(tiers);
	for (unsigned int t = 0; t < tiers->nr && t < VT_MTM_MAX_TIERS; t++)
		room[t] = tiers->tier[t].free_bytes > TIER_RESERVE ?
			  tiers->tier[t].free_bytes - TIER_RESERVE : 0;
	mp = (struct vt_mtm_params){
		.allowance_bytes = vt_vm_policy_dram_allowance(&vm->policy, vm->ram_bytes),
		.budget_bytes = vm->policy.budget_bytes,
		.hot_threshold = vm->policy.hot_threshold,
		.thrash_windows = vm->policy.thrash_windows,
		.thrash_step = vm->policy.thrash_step,
	};
	if (vm->ctier_kind == VT_CTIER_ZSWAP)
		room[tiers->nr] = UINT64_MAX / 4;	/* the kernel's swap limits apply */
	if (vm->ctier_kind == VT_CTIER_HANDOFF && backends->len)
		for (unsigned int t = tiers->nr; t < vt_vm_nr_tiers(vm); t++) {
			const struct vt_ctier_spec *cs = &vm->d->ctier[t - tiers->nr];

			/* a pool's cap is its capacity; without one, the compressed tier takes any */
			room[t] = cs->capacity_bytes ? cs->capacity_bytes : UINT64_MAX / 4;
		}
	vt_mtm_decide(vm->mtm, &mp, room, orders, &ws);
	build_model(vm, s, backends);
	profile_figures(vm, s, ws.threshold);
	if (vm->policy.placement == VT_PLACEMENT_TCO) {
		/* the analytical model instead of MTM's moves (MTM still keeps the EMAs) */
		struct vt_tco_params tp = {
			.alpha = vm->policy.tco_alpha,
			.allowance_bytes = mp.allowance_bytes,
			.budget_bytes = mp.budget_bytes,
			.nr_tiers = MIN(s->model.nr, vt_vm_nr_tiers(vm)),
		};
		struct vt_tco_window_stats ts;

		for (unsigned int t = 0; t < tp.nr_tiers; t++)
			tp.tier[t] = (struct vt_tco_tier){ s->model.t[t].usd_per_gib,
							   s->model.t[t].latency_ns, 0 };
		ret = vt_tco_decide(vm->mtm, &tp, room, orders, &ts);
		if (ret < 0) {
			g_snprintf(err, err_len, "placement=tco: %s", g_strerror(-ret));
			g_array_set_size(orders, 0);
		}
		s->tco = ts.sol;
		s->tco_misplaced_bytes = ts.misplaced_bytes;
		ws.promote_bytes = ts.promote_bytes;
		ws.demote_bytes = ts.demote_bytes;
	} else if (vm->policy.ctier_age_windows && vm->ctier_kind != VT_CTIER_NONE) {
		struct vt_waterfall_params wp = {
			.age_windows = vm->policy.ctier_age_windows,
			.first_ctier = tiers->nr,
			.budget_bytes = mp.budget_bytes - MIN(mp.budget_bytes,
							      ws.promote_bytes + ws.demote_bytes),
		};

		ws.demote_bytes += vt_waterfall_decide(vm->mtm, &wp, room, orders);
	}
	t3 = thread_ns();
	s->policy_cost_ns = t3 - t2;
	s->threshold = ws.threshold;
	s->hot_chunks = ws.hot_chunks;
	s->hot_on_tier0 = ws.hot_on_tier0;
	s->thrash_events = vm->mtm->thrash_total;
	for (unsigned int t = 0; t < vt_vm_nr_tiers(vm) && t < VT_MAX_TIERS; t++)
		s->tier[t].resident_bytes = ws.tier_bytes[t];
	if (vm->policy.mode == VT_MODE_OBSERVE) {
		s->observe_bytes += ws.promote_bytes + ws.demote_bytes;
	} else if (!vt_apply_orders(vm, backends, orders, &mp, s, err, err_len)) {
		return false;
	}
	s->mover_cost_ns = thread_ns() - t3;
	s->last_window_bytes = s->bytes_moved - moved_before;
	s->max_moves_per_chunk = vt_mtm_max_moves(vm->mtm);
	s->windows++;
	return true;
}

bool vt_engine_window(struct vt_vm *vm)
{
	struct vt_vm_stats st = vm->stats;	/* only this thread writes it */
	g_autoptr(GPtrArray) backends = vt_vm_backends_ref(vm);
	char err[sizeof(vm->last_error)] = "";
	bool ok = window_body(vm, &st, backends, err, sizeof(err));

	if (ok && st.windows > vm->stats.windows)
		vt_vm_heatmap_window(vm, st.windows);

	uint64_t bytes[VT_MAX_TIERS];

	vt_vm_tier_bytes(vm, &st, bytes);
	/* published at once, so that the main loop never sees a window half done */
	g_mutex_lock(&vm->lock);
	vm->stats = st;
	if (ok && st.windows)
		vt_tco_history_add(&vm->tco_history, g_get_monotonic_time(), bytes);
	g_strlcpy(vm->last_error, err, sizeof(vm->last_error));
	g_mutex_unlock(&vm->lock);
	return ok;
}
