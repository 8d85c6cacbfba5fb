// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The per-VM engine: the window pipeline. Each window passes one record
 * (struct vt_window, window.h) through a fixed list of stages, in order,
 * each on what the ones before it wrote, and times them:
 *   observe    (observe.c)    the profiler's window; then the migration's
 *                             stage (migration_stage.h: its state into the
 *                             record, an early hand-off's precopy window
 *                             ends there); then the snapshot -> regions in
 *                             QEMU's hva, which feed the chunk EMAs
 *   residency  (residency.c)  where the chunks' pages are: the ones moved
 *                             and a round-robin slice (policy/refresh.h);
 *                             the movers' backlog read once, before it
 *   hints      (hint_stage.c) the guest channel's discards and COLD ages
 *                             (the channel opened, retried, closed before
 *                             the stages: vt_vm_hints_channel)
 *   placement  (placement.c)  the window's move orders (the migration's
 *                             and its holds through migration_stage.h)
 *   apply      (apply.c)      (mode auto) each order to the target that
 *                             takes it (target.h: numa, ctier, zswap)
 * then publishes the window's stats at once. A window after which the VM
 * must go is reported to the engine's owner (vm_worker.c) by its callback.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "error_domain.h"
#include "migration.h"
#include "migration_stage.h"
#include "target.h"
#include "placement.h"
#include "observe.h"
#include "residency.h"
#include "thread_ns.h"
#include "hint_stage.h"
#include "tlb_stage.h"
#include "engine.h"
#include "window.h"
#include "vm.h"

/*
 * NUMA tiers first, then the compressed ones: vtierd's pools when QEMU handed
 * its RAM over, else the host's zswap (one tier) when there is one and the
 * operator configured compressed tiers. Called with the VM's lock held (or
 * before its worker runs).
 */
static void choose_ctier(struct vt_vm *vm)
{
	const struct vt_host_config *h = vm->host;

	vt_zswap_close(&vm->zswap);
	vm->ctier_kind = VT_CTIER_NONE;
	if (vm->backends->len && h->nr_ctier)
		vm->ctier_kind = VT_CTIER_HANDOFF;
	else if (h->nr_ctier && h->zswap_ok && vt_zswap_open(&vm->zswap, vm->pid) == 0)
		vm->ctier_kind = VT_CTIER_ZSWAP;
	vm->nr_tiers = vm->tiers.nr + (vm->ctier_kind == VT_CTIER_HANDOFF ? h->nr_ctier :
				       vm->ctier_kind == VT_CTIER_ZSWAP ? 1 : 0);
	vm->nr_tiers = MIN(vm->nr_tiers, (unsigned int)VT_MTM_MAX_TIERS);
}

/* One window from a timer; its owner hears of a good one. */
static bool window_end(struct vt_vm *vm)
{
	if (!vt_engine_window(vm))
		return false;
	if (vm->engine_window)
		vm->engine_window(vm);
	return true;
}

static gboolean window_cb(gpointer data)
{
	struct vt_vm *vm = data;

	if (window_end(vm))
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
	if (window_end(vm))
		return G_SOURCE_CONTINUE;
	vm->engine_failed(vm, vm->engine_failed_opaque);
	return G_SOURCE_CONTINUE;
}

static void drop_source(GSource **src)
{
	if (*src) {
		g_source_destroy(*src);
		g_source_unref(*src);
		*src = NULL;
	}
}

void vt_engine_stop(struct vt_vm *vm)
{
	drop_source(&vm->window_src);
	drop_source(&vm->sample_src);
	drop_source(&vm->engine_retry_src);
	vt_observe_stop(vm);
}

/*
 * A start whose profiler failed tries again every VT_ENGINE_RETRY_MS on the
 * VM's worker, until a start works or another start or stop takes over.
 * The failures pass: a VM handed over as its migration ends has no
 * second-level page table for the tdp source until a vCPU runs, and DAMON
 * may be held for a while by a killed predecessor's kdamond. Without it the
 * VM stayed in "error" for good: migrate-tiered's destination without a
 * profile (vtierd C) never ran a window in 480 polls.
 */
static gboolean retry_cb(gpointer data)
{
	struct vt_vm *vm = data;
	g_autoptr(GError) e = NULL;
	unsigned int tries;
	bool ok;

	g_mutex_lock(&vm->lock);
	tries = vm->engine_retries;
	/* stops this source first, and arms another if it fails again */
	ok = vt_engine_start(vm, vm->engine_failed, vm->engine_failed_opaque, &e);
	if (!ok && !e)
		g_set_error(&e, VT_CORE_ERROR, EIO, "the profiler did not start (no reason given)");
	if (!ok) {
		g_strlcpy(vm->state, "error", sizeof(vm->state));
		g_strlcpy(vm->last_error, e->message, sizeof(vm->last_error));
	}
	g_mutex_unlock(&vm->lock);
	if (ok)
		vt_registry_log(vm->reg, G_LOG_LEVEL_MESSAGE, vm->name,
				"engine: started on try %u: profiler %s", tries + 1, vm->profiler_name);
	else if (tries % VT_ENGINE_RETRY_LOG == 0)
		vt_registry_log(vm->reg, G_LOG_LEVEL_WARNING, vm->name,
				"engine: not started after %u tries, trying on: %s", tries + 1,
				e->message);
	return G_SOURCE_REMOVE;
}

static void arm_retry(struct vt_vm *vm)
{
	if (!vm->ctx)
		return;
	vm->engine_retries++;
	vm->engine_retry_src = g_timeout_source_new(VT_ENGINE_RETRY_MS);
	g_source_set_callback(vm->engine_retry_src, retry_cb, vm, NULL);
	g_source_attach(vm->engine_retry_src, vm->ctx);
}

bool vt_engine_start(struct vt_vm *vm, vt_engine_failed_fn failed, void *opaque,
		     GError **error)
{
	g_autofree struct vt_range *ranges = NULL;

	vt_engine_stop(vm);
	vm->engine_failed = failed;
	vm->engine_failed_opaque = opaque;
	vt_tlb_marks_drop(&vm->tlb_marks);	/* no window between: no delta across the stop */
	choose_ctier(vm);
	if (!vt_vm_tiers_mask(vm, vm->policy.tiers, &vm->tiers_allowed, error))
		return false;
	vt_vm_heatmap_layout(vm);
	if (vm->mtm && vm->mtm->nr_tiers != vt_vm_nr_tiers(vm)) {
		vt_mtm_free(vm->mtm);	/* the tiers changed: placement starts afresh */
		vm->mtm = NULL;
	}
	if (vm->policy.mode == VT_MODE_OFF) {
		vm->engine_retries = 0;	/* no profiler to start */
		/* no windows: a guest waiting for an ack gets it now */
		vt_vm_hints_close(vm);
		vt_migration_seed(vm);	/* no state to seed: an incoming profile is let go */
		g_strlcpy(vm->state, "off", sizeof(vm->state));
		g_strlcpy(vm->profiler_name, "none", sizeof(vm->profiler_name));
		g_strlcpy(vm->profiler_why, "mode=off: profiling detached",
			  sizeof(vm->profiler_why));
		vm->engine_starts++;
		return true;
	}
	ranges = g_new0(struct vt_range, vm->ram->len);
	for (unsigned int i = 0; i < vm->ram->len; i++) {
		const struct vt_vm_ram *r = &g_array_index(vm->ram, struct vt_vm_ram, i);

		ranges[i] = (struct vt_range){ r->hva, r->hva + r->size };
	}
	/* ranges sorted by address for the profiler */
	for (unsigned int i = 1; i < vm->ram->len; i++)
		for (unsigned int j = i; j > 0 && ranges[j].start < ranges[j - 1].start; j--) {
			struct vt_range t = ranges[j];

			ranges[j] = ranges[j - 1];
			ranges[j - 1] = t;
		}
	if (!vt_observe_start(vm, ranges, error)) {
		arm_retry(vm);
		return false;
	}
	vm->engine_retries = 0;
	if (!vm->mtm || vm->mtm->chunk_bytes != vm->policy.chunk_bytes) {
		vt_mtm_free(vm->mtm);
		vm->mtm = vt_mtm_new(ranges, vm->ram->len, vm->policy.chunk_bytes, VT_RESIDENCY_STRIDE,
				     vt_vm_nr_tiers(vm));
		vt_residency_start(vm);
		/* an incoming migration's profile: warm EMAs and the source's placement */
		vt_migration_seed(vm);
	} else {
		/* the compressed tiers' kind may have changed: where is everything? */
		vt_refresh_all(vm->refresh);
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
	vm->engine_starts++;
	return true;
}

/* An error @ret of a stage: the window ends; a process gone (ESRCH) takes the VM with it. */
static enum vt_stage_result stage_error(int ret)
{
	return ret == -ESRCH ? VT_STAGE_FAIL : VT_STAGE_END;
}

/*
 * The profiler's window, then the migration's stage (which ends an early
 * hand-off's precopy window), then the snapshot's regions and the chunk
 * EMAs they feed.
 */
static enum vt_stage_result stage_observe(struct vt_window *w)
{
	struct vt_vm *vm = w->vm;
	enum vt_stage_result r;
	uint64_t checks_now;
	int ret;

	ret = vt_profiler_window(vm->prof, &vm->snap);
	vt_observe_window_end(vm, w->s);	/* the tdp source's flushes; the next window's */
	if (ret < 0) {
		g_snprintf(w->err, w->err_len, "%s window: %s",
			   vm->profiler_name, g_strerror(-ret));
		return stage_error(ret);	/* kdamond gone: the process exited */
	}
	/* all checks since the last window end: the samples' and the window's */
	checks_now = vt_source_checks_total(vm->src);
	r = vt_migration_stage(w);	/* migration_stage.h */
	if (r != VT_STAGE_NEXT)
		return r;	/* a precopy window: its checks count in the next window */
	w->s->profiler_checks = checks_now - MIN(vm->checks_mark, checks_now);
	vm->checks_mark = checks_now;
	w->s->profiler_regions = vm->snap.regions->len;
	w->regions = vt_observe_regions(vm);
	vt_mtm_observe(vm->mtm, (struct vt_mtm_region *)(void *)w->regions->data,
		       w->regions->len);
	return VT_STAGE_NEXT;
}

/* Where the chunks' pages are; the movers' backlog is read once, before it. */
static enum vt_stage_result stage_residency(struct vt_window *w)
{
	int ret;

	/* before the residency: idle now means the residency shows every move queued */
	for (unsigned int i = 0; w->backends && i < w->backends->len; i++)
		w->movers_busy |= vt_backend_backlog(g_ptr_array_index(w->backends, i)) > 0;
	ret = vt_residency_query(w->vm, w->backends);
	if (ret < 0) {
		g_snprintf(w->err, w->err_len, "move_pages status: %s", g_strerror(-ret));
		return stage_error(ret);
	}
	w->s->refused_chunks = vt_mtm_arrivals(w->vm->mtm, !w->movers_busy);
	return VT_STAGE_NEXT;
}

/* The guest's hints: discards, and COLD chunks aged before the placement sees them. */
static enum vt_stage_result stage_hints(struct vt_window *w)
{
	vt_vm_hints_window(w->vm, w->backends, w->cold_age, w->s);
	return VT_STAGE_NEXT;
}

/* The window's orders; an outgoing migration holds what the destination would not keep. */
static enum vt_stage_result stage_placement(struct vt_window *w)
{
	struct vt_vm_stats *s = w->s;

	vt_placement_decide(w);
	s->threshold = w->ws.threshold;
	s->hot_chunks = w->ws.hot_chunks;
	s->hot_on_tier0 = w->ws.hot_on_tier0;
	s->thrash_events = w->vm->mtm->thrash_total;
	vt_residency_tier_bytes(w->vm, w->ws.tier_bytes, s);
	/* the VM's demand, as the host's DRAM sharing reads it */
	memcpy(s->hist_bytes, w->ws.hist_bytes, sizeof(s->hist_bytes));
	s->hist_window = s->windows + 1;
	return VT_STAGE_NEXT;
}

/* Mode auto: each order to the target that takes it; observe: only counted. */
static enum vt_stage_result stage_apply(struct vt_window *w)
{
	if (w->vm->policy.mode == VT_MODE_OBSERVE) {
		w->s->observe_bytes += w->ws.promote_bytes + w->ws.demote_bytes;
	} else {
		bool ok = vt_apply_orders(w);

		/* the moved chunks' outcome: read next window */
		vt_residency_moved(w->vm, w->orders);
		if (!ok)
			return VT_STAGE_FAIL;
	}
	return VT_STAGE_NEXT;
}

/* The window's stages in order, each timed into its cost figure (thread CPU time). */
static const struct stage {
	enum vt_stage_result (*run)(struct vt_window *w);
	size_t cost;			/* offsetof the stage's cost in struct vt_vm_stats */
} stages[] = {
	{ stage_observe, offsetof(struct vt_vm_stats, profiler_cost_ns) },
	{ stage_residency, offsetof(struct vt_vm_stats, residency_cost_ns) },
	{ stage_hints, offsetof(struct vt_vm_stats, hints_cost_ns) },
	{ stage_placement, offsetof(struct vt_vm_stats, policy_cost_ns) },
	{ stage_apply, offsetof(struct vt_vm_stats, mover_cost_ns) },
};

/*
 * Before the window's stages, on the worker: the guest channel opened,
 * retried or closed for the window to come, as its hint stage would have
 * found it (not for a precopy window, which ends before the hint stage).
 */
static void hints_channel(const struct vt_window *w)
{
	bool precopy;

	if (!w->vm->policy.hints && !w->vm->hints)
		return;		/* off and closed: nothing to do */
	precopy = w->vm->policy.hints && vt_migration_stage_precopy_due(w);
	vt_vm_hints_channel(w->vm, w->s->windows, precopy);
}

static bool window_body(struct vt_vm *vm, struct vt_vm_stats *s, GPtrArray *backends,
			char *err, size_t err_len)
{
	g_autoptr(GArray) orders = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_order));
	struct vt_window w = {
		.vm = vm, .backends = backends, .s = s, .orders = orders,
		.err = err, .err_len = err_len,
	};
	uint64_t moved_before = s->bytes_moved;
	uint64_t t0;
	bool ok = true;

	hints_channel(&w);
	/* the placement's rule the hint stage ages COLD chunks by: the stage's input */
	w.cold_age = vt_placement_waterfall_age(vm);
	/* what the host's DRAM sharing gave the VM: the placement's input */
	g_mutex_lock(&vm->lock);
	w.share = vm->share;
	/* the grants the VM's DRAM may be moving toward (the host stage's held bytes) */
	vm->share.applied_before = vm->share.applied;
	vm->share.applied = vm->share.state == VT_VM_SHARE_GRANTED ? vm->share.granted : 0;
	g_mutex_unlock(&vm->lock);
	t0 = vt_thread_ns();

	for (size_t i = 0; i < G_N_ELEMENTS(stages); i++) {
		enum vt_stage_result r = stages[i].run(&w);
		uint64_t t1;

		if (r != VT_STAGE_NEXT) {
			ok = r == VT_STAGE_END;
			goto out;
		}
		t1 = vt_thread_ns();
		*(uint64_t *)(void *)((char *)s + stages[i].cost) = t1 - t0;
		t0 = t1;
	}
	s->last_window_bytes = s->bytes_moved - moved_before;
	s->max_moves_per_chunk = vt_mtm_max_moves(vm->mtm);
	s->windows++;
out:
	/* the flushes since the last window's end: profiling, and this window's moves */
	vt_tlb_window(vm, s->bytes_moved - moved_before, s);
	if (w.regions)
		g_array_unref(w.regions);
	return ok;
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
	if (ok && st.windows)
		vt_migration_stage_published(vm);
	g_mutex_unlock(&vm->lock);
	return ok;
}
