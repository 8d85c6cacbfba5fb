// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One worker thread per VM: its engine's timers run on the VM's own main
 * context, so a slow window (DAMON's sysfs, move_pages, a mover backlog)
 * delays that VM only, never the daemon's main loop or another VM. The main
 * loop talks to a worker by posting messages to its context.
 */
#include <errno.h>

#include "backend.h"
#include "migration.h"
#include "engine.h"
#include "vm.h"
#include "vm_worker.h"
#include "hint_stage.h"
#include "tlb_stage.h"

static gpointer worker_main(gpointer data)
{
	struct vt_vm *vm = data;

	g_main_context_push_thread_default(vm->ctx);
	g_main_loop_run(vm->loop);
	g_main_context_pop_thread_default(vm->ctx);
	return NULL;
}

int vt_vm_worker_start(struct vt_vm *vm)
{
	g_autoptr(GError) e = NULL;
	g_autofree char *name = g_strdup_printf("vtier-%s", vm->name);

	vm->loop = g_main_loop_new(vm->ctx, FALSE);
	vm->worker = g_thread_try_new(name, worker_main, vm, &e);
	if (!vm->worker) {
		g_main_loop_unref(vm->loop);
		vm->loop = NULL;
		return -EAGAIN;
	}
	return 0;
}

struct policy_msg {
	struct vt_vm *vm;
	struct vt_vm_policy policy;
	vt_vm_policy_done_fn done;	/* on the main loop, with the outcome */
	void *done_arg;
	char error[256];		/* "" when applied */
};

static gboolean policy_done(gpointer data)
{
	struct policy_msg *m = data;

	m->done(m->done_arg, m->error[0] ? m->error : NULL);
	return G_SOURCE_REMOVE;
}

static gboolean apply_policy(gpointer data)
{
	struct policy_msg *m = data;
	struct vt_vm *vm = m->vm;
	struct vt_vm_policy old;
	g_autoptr(GError) e = NULL;

	g_mutex_lock(&vm->lock);
	old = vm->policy;
	vm->policy = m->policy;
	if (vt_vm_policy_live(&old, &m->policy)) {
		/* read afresh at the next window: the profiler keeps its regions */
		vm->policy_refused[0] = '\0';
		g_mutex_unlock(&vm->lock);
		vt_registry_log(vm->reg, G_LOG_LEVEL_MESSAGE, vm->name,
				"policy: applied at the next window (engine not restarted)");
	} else if (!vt_vm_worker_engine_start(vm, &e)) {
		/* the old policy stays; the reason is where the operator looks */
		vm->policy = old;
		vt_vm_worker_engine_start(vm, NULL);
		g_snprintf(vm->policy_refused, sizeof(vm->policy_refused),
			   "the old one stays: %s", e->message);
		g_strlcpy(m->error, e->message, sizeof(m->error));
		g_mutex_unlock(&vm->lock);
		vt_registry_log(vm->reg, G_LOG_LEVEL_WARNING, vm->name, "policy refused, old one kept: %s",
			      e->message);
	} else {
		vm->policy_refused[0] = '\0';
		g_mutex_unlock(&vm->lock);
		vt_registry_log(vm->reg, G_LOG_LEVEL_MESSAGE, vm->name, "policy: mode %s, profiler %s",
			      vt_mode_name(m->policy.mode), vm->profiler_name);
	}
	if (m->done) {
		/* the message goes on to the main loop, which frees it */
		g_main_context_invoke_full(NULL, G_PRIORITY_DEFAULT, policy_done, m, g_free);
		return G_SOURCE_REMOVE;
	}
	g_free(m);
	return G_SOURCE_REMOVE;
}

void vt_vm_worker_post_policy(struct vt_vm *vm, const struct vt_vm_policy *policy,
			      vt_vm_policy_done_fn done, void *done_arg)
{
	struct policy_msg *m = g_new0(struct policy_msg, 1);

	m->vm = vm;
	m->policy = *policy;
	m->done = done;
	m->done_arg = done_arg;
	g_main_context_invoke_full(vm->ctx, G_PRIORITY_HIGH, apply_policy, m, NULL);
}

struct ram_msg {
	struct vt_vm *vm;
	GArray *ram;
	GArray *gpa_map;
};

static void ram_msg_free(gpointer data)
{
	struct ram_msg *m = data;

	if (m->ram)
		g_array_free(m->ram, TRUE);
	if (m->gpa_map)
		g_array_free(m->gpa_map, TRUE);
	g_free(m);
}

static gboolean apply_ram(gpointer data)
{
	struct ram_msg *m = data;
	struct vt_vm *vm = m->vm;
	g_autoptr(GError) e = NULL;
	GArray *t;

	/* the hint channel checks ranges against the RAM it attached with: again */
	vt_vm_hints_close(vm);
	g_mutex_lock(&vm->lock);
	t = vm->ram;
	vm->ram = m->ram;
	m->ram = t;
	t = vm->gpa_map;
	vm->gpa_map = m->gpa_map;
	m->gpa_map = t;
	vm->ram_bytes = 0;
	for (unsigned int i = 0; i < vm->ram->len; i++)
		vm->ram_bytes += g_array_index(vm->ram, struct vt_vm_ram, i).size;
	/* the chunks follow the RAM: rebuild the placement state */
	vt_mtm_free(vm->mtm);
	vm->mtm = NULL;
	if (!vt_vm_worker_engine_start(vm, &e)) {
		g_snprintf(vm->state, sizeof(vm->state), "error");
		g_snprintf(vm->last_error, sizeof(vm->last_error), "%s", e->message);
	}
	g_mutex_unlock(&vm->lock);
	if (e)
		vt_registry_log(vm->reg, G_LOG_LEVEL_WARNING, vm->name, "engine: %s", e->message);
	return G_SOURCE_REMOVE;
}

void vt_vm_worker_post_ram(struct vt_vm *vm, GArray *ram, GArray *gpa_map)
{
	struct ram_msg *m = g_new0(struct ram_msg, 1);

	m->vm = vm;
	m->ram = ram;
	m->gpa_map = gpa_map;
	g_main_context_invoke_full(vm->ctx, G_PRIORITY_HIGH, apply_ram, m, ram_msg_free);
}

/* A message from the worker to the main loop about the VM, which may be gone by then. */
struct vm_msg {
	const struct vt_registry *reg;
	char name[64];
	uint64_t serial;
};

/* On the main loop: @m's VM, unless it was detached (maybe another took its name) meanwhile. */
static struct vt_vm *vm_msg_vm(const struct vm_msg *m)
{
	return m->reg->ops->vm_find(m->reg->opaque, m->name, m->serial);
}

static void post_to_loop(struct vt_vm *vm, GSourceFunc fn)
{
	struct vm_msg *m = g_new0(struct vm_msg, 1);

	m->reg = vm->reg;
	m->serial = vm->serial;
	g_strlcpy(m->name, vm->name, sizeof(m->name));
	g_main_context_invoke_full(NULL, G_PRIORITY_DEFAULT, fn, m, g_free);
}

static gboolean report_failed(gpointer data)
{
	struct vt_vm *vm = vm_msg_vm(data);

	if (vm)
		vm->reg->ops->vm_failed(vm->reg->opaque, vm);
	return G_SOURCE_REMOVE;
}

/* From the worker: the VM is gone or broken; the main loop detaches it. */
static void worker_failed(struct vt_vm *vm, void *opaque)
{
	(void)opaque;
	post_to_loop(vm, report_failed);
}

static gboolean send_stats(gpointer data)
{
	struct vt_vm *vm = vm_msg_vm(data);

	/* QEMU's query-memory-tiers shows the window's report (docs/tco.md) */
	for (unsigned int i = 0; vm && vm->backends && i < vm->backends->len; i++)
		vt_backend_send_stats(g_ptr_array_index(vm->backends, i));
	return G_SOURCE_REMOVE;
}

/* From the worker: a window ended; the main loop sends STATS on the VM's hand-offs. */
static void worker_window(struct vt_vm *vm)
{
	bool handed;

	g_mutex_lock(&vm->lock);
	handed = vm->backends && vm->backends->len;
	g_mutex_unlock(&vm->lock);
	if (handed)
		post_to_loop(vm, send_stats);
}

bool vt_vm_worker_engine_start(struct vt_vm *vm, GError **error)
{
	vm->engine_window = worker_window;
	return vt_engine_start(vm, worker_failed, NULL, error);
}

static void vm_release(struct vt_vm *vm)
{
	vt_engine_stop(vm);
	vt_vm_hints_close(vm);
	vt_zswap_close(&vm->zswap);
	vt_mtm_free(vm->mtm);
	vt_refresh_free(vm->refresh);
	vt_phase_clear(&vm->phase);
	vt_tlb_release(&vm->tlb_marks);
	vt_migration_clear(vm);
	g_free(vm->heatmap);
	g_free(vm->heatmap_acc);
	if (vm->ram)
		g_array_free(vm->ram, TRUE);
	if (vm->gpa_map)
		g_array_free(vm->gpa_map, TRUE);
	if (vm->backends)
		g_ptr_array_free(vm->backends, TRUE);
	if (vm->loop)
		g_main_loop_unref(vm->loop);
	if (vm->ctx)
		g_main_context_unref(vm->ctx);
	g_mutex_clear(&vm->lock);
	g_free(vm);
}

static gpointer reaper(gpointer data)
{
	struct vt_vm *vm = data;

	g_thread_join(vm->worker);
	vm->worker = NULL;
	/* the worker's loop is over: its context is ours to drive */
	g_main_context_push_thread_default(vm->ctx);
	vt_engine_stop(vm);
	g_main_context_pop_thread_default(vm->ctx);
	vm_release(vm);
	return NULL;
}

static gboolean quit_loop(gpointer data)
{
	g_main_loop_quit(data);
	return G_SOURCE_REMOVE;
}

void vt_vm_retire(struct vt_vm *vm, bool wait)
{
	GSource *quit;
	GThread *t;

	if (!vm->worker) {
		vm_release(vm);
		return;
	}
	/*
	 * The quit is a source on the worker's context, not g_main_loop_quit()
	 * from here: a worker not yet in g_main_loop_run() would start its loop
	 * after the quit and never leave it (the join below would wait forever).
	 */
	quit = g_idle_source_new();
	g_source_set_priority(quit, G_PRIORITY_HIGH);
	g_source_set_callback(quit, quit_loop, vm->loop, NULL);
	g_source_attach(quit, vm->ctx);
	/*
	 * The context holds the source from here. Our reference goes now, not at
	 * return: the reaper below may free the context (and the source with it)
	 * before this function returns, and an unref then would lock a freed
	 * context's mutex.
	 */
	g_source_unref(quit);
	if (!wait) {
		t = g_thread_try_new("vtier-reap", reaper, vm, NULL);
		if (t) {
			g_thread_unref(t);
			return;
		}
	}
	/* at exit, or no thread to spare: wait here, once */
	reaper(vm);
}
