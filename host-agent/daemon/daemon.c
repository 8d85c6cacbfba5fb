// SPDX-License-Identifier: GPL-2.0-or-later
/* VM registry: VMs, backends, names, pids, attach and detach, the loop's sources. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <glib-unix.h>

#include "json_member.h"
#include "backend.h"
#include "ctl_proto.h"
#include "daemon.h"
#include "job.h"
#include "json_guard.h"
#include "migration.h"
#include "numa.h"
#include "ratelimit.h"
#include "tlb_stage.h"
#include "vm_json.h"
#include "vm_worker.h"

#define logf_vm vt_daemon_log

static void G_GNUC_PRINTF(5, 0) log_limited(struct vt_daemon *d, GLogLevelFlags level,
					    const char *vm, const char *subject,
					    const char *fmt, va_list ap)
{
	g_autofree char *msg = NULL;
	g_autofree char *key = NULL;
	uint64_t suppressed = 0;

	if (!(level & G_LOG_LEVEL_DEBUG) && d->log_limits) {
		if (subject)
			key = g_strconcat(vm ? vm : "", "\n", subject, NULL);
		if (!vt_ratelimits_take(d->log_limits, fmt, key ? key : vm,
					(uint64_t)g_get_monotonic_time() * 1000, &suppressed))
			return;
	}
	msg = g_strdup_vprintf(fmt, ap);
	if (suppressed) {
		g_autofree char *note = g_strdup_printf("(%" G_GUINT64_FORMAT " similar messages "
							"suppressed: at most 10 at once, then 1 a "
							"second)", suppressed);

		if (d->log)
			d->log(level, vm, note);
		else
			g_debug("%s: %s", vm ? vm : "vtierd", note);
	}
	if (d->log)
		d->log(level, vm, msg);
	else
		g_debug("%s: %s", vm ? vm : "vtierd", msg);
}

void vt_daemon_log(struct vt_daemon *d, GLogLevelFlags level, const char *vm, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_limited(d, level, vm, NULL, fmt, ap);
	va_end(ap);
}

void vt_daemon_log_about(struct vt_daemon *d, GLogLevelFlags level, const char *vm,
			 const char *subject, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_limited(d, level, vm, subject, fmt, ap);
	va_end(ap);
}

/* A fresh VM record with its (not yet running) worker context. */
static struct vt_vm *vm_new(struct vt_daemon *d)
{
	struct vt_vm *vm = g_new0(struct vt_vm, 1);

	vm->host = &d->host;
	vm->tlb_host = &d->tlb_host;
	vm->reg = &d->reg;
	vm->policy = d->defaults;
	vm->tiers = d->host.tiers;
	vm->serial = ++d->next_serial;
	vm->ram = g_array_new(FALSE, TRUE, sizeof(struct vt_vm_ram));
	vm->gpa_map = g_array_new(FALSE, TRUE, sizeof(struct vt_gpa_map));
	vm->backends = g_ptr_array_new();
	vm->ctx = g_main_context_new();
	vm->zswap.pidfd = -1;
	g_mutex_init(&vm->lock);
	return vm;
}

/* The main loop's part of a VM goes now; the engine stops on its own thread. */
static void vm_free(struct vt_vm *vm)
{
	if (!vm)
		return;
	/* hand-offs outlive the VM's engine: their faults are still served */
	g_mutex_lock(&vm->lock);
	for (unsigned int i = 0; i < vm->backends->len; i++)
		((struct vt_backend *)g_ptr_array_index(vm->backends, i))->vm = NULL;
	g_ptr_array_set_size(vm->backends, 0);
	g_mutex_unlock(&vm->lock);
	if (vm->qmp_watch)
		g_source_remove(vm->qmp_watch);
	vm->qmp_watch = 0;
	vt_qmp_free(vm->qmp);
	vm->qmp = NULL;
	const struct vt_daemon *d = vm->reg ? vm->reg->opaque : NULL;

	vt_vm_retire(vm, d && d->exiting);
}

/* struct vt_registry_ops: what the hand-offs, migration and the VMs' workers report. */
static void reg_logv(void *opaque, GLogLevelFlags level, const char *vm, const char *fmt,
		     va_list ap)
{
	log_limited(opaque, level, vm, NULL, fmt, ap);
}

static bool reg_adopt_backend(void *opaque, struct vt_backend *b, GError **error)
{
	return vt_daemon_adopt_backend(opaque, b, error);
}

static void reg_backend_gone(void *opaque, struct vt_vm *vm, struct vt_backend *b)
{
	vt_daemon_backend_gone(opaque, vm, b);
}

static void reg_ranges_changed(void *opaque, struct vt_vm *vm)
{
	vt_daemon_backend_ranges_changed(opaque, vm);
}

static bool reg_set_policy(void *opaque, struct vt_vm *vm, char *const *set, unsigned int n,
			   GError **error)
{
	return vt_daemon_set_policy(opaque, vm, set, n, NULL, error);
}

static void reg_migration_event(void *opaque, struct vt_vm *vm, struct vt_backend *b,
				enum vtier_migration_event event)
{
	(void)opaque;
	vt_migration_post_event(vm, b, event);
}

static struct vt_vm *reg_vm_find(void *opaque, const char *name, uint64_t serial)
{
	struct vt_daemon *d = opaque;
	struct vt_vm *vm = g_hash_table_lookup(d->vms, name);

	return vm && vm->serial == serial ? vm : NULL;
}

static void reg_vm_failed(void *opaque, struct vt_vm *vm)
{
	vt_daemon_vm_failed(opaque, vm);
}

static const struct vt_registry_ops daemon_registry_ops = {
	.logv = reg_logv,
	.adopt_backend = reg_adopt_backend,
	.backend_gone = reg_backend_gone,
	.ranges_changed = reg_ranges_changed,
	.set_policy = reg_set_policy,
	.migration_event = reg_migration_event,
	.vm_find = reg_vm_find,
	.vm_failed = reg_vm_failed,
};

struct vt_daemon *vt_daemon_new(const struct vt_tiers *tiers, vt_log_fn log)
{
	struct vt_daemon *d = g_new0(struct vt_daemon, 1);

	d->vms = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)vm_free);
	d->host.tiers = *tiers;
	d->log = log;
	d->log_limits = vt_ratelimits_new(10, 1, 1024);
	vt_tlb_host_init(&d->tlb_host);
	d->qmp_timeout_ms = 5000;
	d->reg = (struct vt_registry){ .ops = &daemon_registry_ops, .opaque = d };
	d->ho.host = &d->host;
	d->ho.reg = &d->reg;
	d->share = (struct vt_host_share_stage){ .vms = d->vms, .cfg = &d->host.share,
						 .reg = &d->reg };
	d->ho.backends = g_hash_table_new(g_str_hash, g_str_equal);
	d->ho.opening = g_hash_table_new(g_str_hash, g_str_equal);
	d->ho.orphans = g_ptr_array_new_with_free_func(g_free);
	d->ho.preparing = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	vt_daemon_set_budget(d, NULL);
	d->attaching = g_ptr_array_new();
	g_strlcpy(d->host.store_root, "/run/vtier/store", sizeof(d->host.store_root));
	d->host.zswap_ok = vt_zswap_probe(tiers->root[0] ? tiers->root : "/", d->host.zswap_why,
				     sizeof(d->host.zswap_why)) == 0;
	vt_vm_policy_default(&d->defaults);
	return d;
}

bool vt_daemon_load_ctiers(struct vt_daemon *d, GKeyFile *config, GError **error)
{
	g_auto(GStrv) groups = config ? g_key_file_get_groups(config, NULL) : NULL;

	d->host.nr_ctier = 0;
	/* [policy]: the defaults of every VM (KEY = VALUE as vtierctl policy takes them);
	 * an empty [policy] (the shipped file's, uncommented alone) keeps the defaults */
	if (config && g_key_file_has_group(config, "policy")) {
		g_auto(GStrv) keys = g_key_file_get_keys(config, "policy", NULL, NULL);
		g_autoptr(GPtrArray) set = g_ptr_array_new_with_free_func(g_free);

		for (unsigned int i = 0; keys && keys[i]; i++) {
			g_autofree char *v = g_key_file_get_value(config, "policy", keys[i], NULL);

			g_ptr_array_add(set, g_strdup_printf("%s=%s", keys[i], v ? v : ""));
		}
		if (set->len &&
		    !vt_vm_policy_apply(&d->defaults, (char *const *)set->pdata, set->len, error)) {
			g_prefix_error(error, "[policy]: ");
			return false;
		}
	}
	for (unsigned int i = 0; groups && groups[i]; i++) {
		bool remote = g_str_has_prefix(groups[i], "remote.");

		if (!g_str_has_prefix(groups[i], "ctier.") && !remote)
			continue;
		if (d->host.nr_ctier == VT_CTIER_MAX ||
		    d->host.tiers.nr + d->host.nr_ctier >= VT_MAX_TIERS) {
			g_set_error(error, VT_CORE_ERROR, E2BIG, "[%s]: too many tiers (at most %d "
				    "NUMA and compressed tiers together)", groups[i], VT_MAX_TIERS);
			return false;
		}
		if (remote ? !vt_remote_spec_parse(config, groups[i], &d->host.ctier[d->host.nr_ctier],
						   &d->host.remote[d->host.nr_ctier], error) :
			     !vt_ctier_spec_parse(config, groups[i], &d->host.ctier[d->host.nr_ctier], error))
			return false;
		d->host.ctier_price[d->host.nr_ctier] = -1;
		if (g_key_file_has_key(config, groups[i], "price_usd_per_gib", NULL)) {
			g_autofree char *v = g_key_file_get_value(config, groups[i],
								  "price_usd_per_gib", NULL);
			char *end = NULL;
			double price = v && *v ? g_ascii_strtod(v, &end) : -1;

			/* the tier model's price of this medium (model/tier_model.c) */
			if (!end || *end || !(price >= 0 && price <= 1e6)) {
				char shown[64];

				vt_text_printable(shown, sizeof(shown), v ? v : "", v ? strlen(v) : 0);
				g_set_error(error, VT_CORE_ERROR, EINVAL, "[%s] price_usd_per_gib: '%s' "
					    "is not a number in 0..1e6", groups[i], shown);
				return false;
			}
			d->host.ctier_price[d->host.nr_ctier] = price;
		}
		d->host.nr_ctier++;
	}
	/* a remote tier's local copy names a compressed tier of this file */
	for (unsigned int i = 0; i < d->host.nr_ctier; i++) {
		g_autofree char *group = g_strconcat("remote.", d->host.ctier[i].name, NULL);

		if (d->host.ctier[i].medium == VT_MEDIUM_REMOTE &&
		    !vt_remote_spec_resolve(&d->host.remote[i], group, d->host.ctier,
					    d->host.nr_ctier, error))
			return false;
	}
	return true;
}

/* The fds the reconnects of existing stores need, kept from new hand-offs at the socket too. */
static void fd_reserve_update(struct vt_daemon *d)
{
	struct vt_charge held, reserve;
	uint64_t refused[VT_BOUND_NR];

	vt_budget_totals(d->ho.budget, &held, &reserve, refused);
	vt_handoff_server_set_fd_reserve(d->ho.handoff,
					 (unsigned int)MIN(reserve.v[VT_BOUND_FDS], G_MAXUINT));
}

static gboolean stats_tick(gpointer data)
{
	struct vt_daemon *d = data;
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, d->ho.backends);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		vt_backend_send_stats(v);
		vt_backend_remote_watch(v);
	}
	fd_reserve_update(d);
	return G_SOURCE_CONTINUE;
}

void vt_daemon_set_budget(struct vt_daemon *d, const struct vt_budget_limits *l)
{
	struct vt_budget_limits def;

	if (!l) {
		vt_budget_limits_default(&def);
		l = &def;
	}
	vt_budget_free(d->ho.budget);
	d->ho.budget = vt_budget_new(l);
}

bool vt_daemon_listen_handoff(struct vt_daemon *d, const char *path, GError **error)
{
	unsigned int kept = vt_budget_reserve_store_root(d->ho.budget, d->host.store_root, d->host.ctier,
							 d->host.remote, d->host.nr_ctier);
	uint64_t backends = vt_budget_limits(d->ho.budget)->peer[VT_BOUND_BACKENDS];
	struct vt_handoff_limits hl;
	int ret;

	if (kept)
		vt_daemon_log(d, G_LOG_LEVEL_MESSAGE, NULL, "%u stores in %s kept for their "
			      "reconnects for %u s", kept, d->host.store_root,
			      vt_budget_limits(d->ho.budget)->reconnect_grace_s);
	ret = vt_handoff_server_new(path, NULL, &vt_backend_handoff_ops, &d->ho, &d->ho.handoff);
	if (!ret && !d->ho.removals)
		vt_store_removals_start(&d->ho);

	if (ret) {
		g_set_error(error, VT_CORE_ERROR, -ret, "hand-off socket %s: %s", path,
			    g_strerror(-ret));
		return false;
	}
	/*
	 * A process's connections: its backends (--max-peer-backends, refused
	 * at the HELLO with a reply that names the bound) and its pending ones;
	 * the socket's own cap must not cut in first with a silent close.
	 */
	vt_handoff_limits_default(&hl);
	if (backends)
		hl.max_peer_conns = (unsigned int)MIN(MAX(hl.max_peer_conns,
							  backends + hl.max_peer_pending),
						      G_MAXUINT);
	vt_handoff_server_set_limits(d->ho.handoff, &hl);
	fd_reserve_update(d);
	/* QEMU shows the last report in query-memory-tiers */
	d->stats_timer = g_timeout_add_seconds(1, stats_tick, d);
	return true;
}

static void attach_cancel_all(struct vt_daemon *d);

void vt_daemon_free(struct vt_daemon *d)
{
	if (!d)
		return;
	if (d->libvirt)
		d->libvirt_ops->free(d->libvirt);
	attach_cancel_all(d);
	d->exiting = true;
	g_ptr_array_free(d->attaching, TRUE);
	g_hash_table_destroy(d->vms);
	if (d->stats_timer)
		g_source_remove(d->stats_timer);
	vt_host_share_stop(&d->share);
	/* closes every hand-off: their movers stop, the stores stay for the next agent */
	vt_handoff_server_free(d->ho.handoff);
	vt_backend_cancel_openings(&d->ho);
	g_hash_table_destroy(d->ho.opening);
	g_hash_table_destroy(d->ho.backends);
	if (d->ho.orphan_timer)
		g_source_remove(d->ho.orphan_timer);
	g_ptr_array_free(d->ho.orphans, TRUE);
	vt_store_removals_finish(&d->ho);
	g_hash_table_destroy(d->ho.preparing);
	vt_budget_free(d->ho.budget);
	vt_ratelimits_free(d->log_limits);
	vt_tlb_host_clear(&d->tlb_host);
	g_free(d);
}

/* A QMP event of an attached VM: its migration is followed, the rest dropped. */
static void qmp_event(const struct vt_qmp_event *ev, void *user)
{
	struct vt_vm *vm = user;

	if (ev->migration != VT_QMP_MIGRATION_NONE)
		vt_migration_post_qmp(vm, ev->migration);
}

static gboolean qmp_event_cb(gint fd, GIOCondition cond, gpointer data)
{
	struct vt_vm *vm = data;
	g_autoptr(GError) e = NULL;

	(void)fd;
	/* what QEMU sent before it hung up is read too (a MIGRATION completed) */
	if (vt_qmp_read_events(vm->qmp, qmp_event, vm, &e) && !(cond & (G_IO_HUP | G_IO_ERR)))
		return G_SOURCE_CONTINUE;
	g_mutex_lock(&vm->lock);
	g_snprintf(vm->last_error, sizeof(vm->last_error), "%s",
		   e ? e->message : "QMP connection lost");
	g_mutex_unlock(&vm->lock);
	vm->qmp_watch = 0;
	vt_daemon_vm_failed(vm->reg->opaque, vm);
	return G_SOURCE_REMOVE;
}

void vt_daemon_vm_failed(struct vt_daemon *d, struct vt_vm *vm)
{
	g_autofree char *name = g_strdup(vm->name);
	char why[sizeof(vm->last_error)];

	g_mutex_lock(&vm->lock);
	g_strlcpy(why, vm->last_error[0] ? vm->last_error : "VM gone", sizeof(why));
	g_mutex_unlock(&vm->lock);
	logf_vm(d, G_LOG_LEVEL_WARNING, name, "detached: %s (QEMU pid %d)", why, (int)vm->pid);
	/* the window timer or QMP watch that called us must not be removed twice */
	g_hash_table_remove(d->vms, name);
}

static bool name_taken(struct vt_daemon *d, const char *name)
{
	return g_hash_table_contains(d->vms, name);
}

static bool name_reserved(struct vt_daemon *d, const char *name);

static struct vt_vm *vm_of_pid(struct vt_daemon *d, pid_t pid)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, d->vms);
	while (g_hash_table_iter_next(&it, NULL, &v))
		if (((struct vt_vm *)v)->pid == pid)
			return v;
	return NULL;
}

/* A VM attached by QMP takes the hand-offs its QEMU made before the attach. */
static void adopt_live_backends(struct vt_daemon *d, struct vt_vm *vm)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, d->ho.backends);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct vt_backend *b = v;

		if (b->pid == vm->pid && !b->vm) {
			b->vm = vm;
			g_mutex_lock(&vm->lock);
			g_ptr_array_add(vm->backends, b);
			g_mutex_unlock(&vm->lock);
		}
	}
}

/* RAM and gpa -> hva of a VM attached by hand-offs only: from its backends. */
static void ram_from_backends(struct vt_vm *vm, GArray **ram_out, GArray **gpa_out)
{
	GArray *ram = g_array_new(FALSE, TRUE, sizeof(struct vt_vm_ram));
	GArray *gpa = g_array_new(FALSE, TRUE, sizeof(struct vt_gpa_map));

	for (unsigned int i = 0; i < vm->backends->len; i++) {
		struct vt_backend *b = g_ptr_array_index(vm->backends, i);
		struct vt_vm_ram r = { .size = b->size, .hva = b->hva, .page_size = b->page_size,
				       .share = true };

		g_strlcpy(r.backend, b->id, sizeof(r.backend));
		g_strlcpy(r.type, "memory-backend-memfd", sizeof(r.type));
		g_strlcpy(r.policy, "default", sizeof(r.policy));
		g_array_append_val(ram, r);
		for (unsigned int k = 0; k < b->ranges->len; k++) {
			const struct vtier_handoff_range *hr =
				&g_array_index(b->ranges, struct vtier_handoff_range, k);
			struct vt_gpa_map g = { hr->gpa, hr->size, b->hva + hr->offset };

			g_array_append_val(gpa, g);
		}
	}
	for (unsigned int i = 1; i < gpa->len; i++)
		for (unsigned int j = i; j > 0; j--) {
			struct vt_gpa_map *a = &g_array_index(gpa, struct vt_gpa_map, j - 1);
			struct vt_gpa_map *c = &g_array_index(gpa, struct vt_gpa_map, j);
			struct vt_gpa_map t;

			if (a->gpa <= c->gpa)
				break;
			t = *a;
			*a = *c;
			*c = t;
		}
	*ram_out = ram;
	*gpa_out = gpa;
}

bool vt_daemon_adopt_backend(struct vt_daemon *d, struct vt_backend *b, GError **error)
{
	struct vt_vm *vm = vm_of_pid(d, b->pid);
	GArray *ram, *gpa;

	if (vm) {
		b->vm = vm;
		g_mutex_lock(&vm->lock);
		g_ptr_array_add(vm->backends, b);
		g_mutex_unlock(&vm->lock);
		vt_daemon_backend_ranges_changed(d, vm);
		return true;
	}
	vm = vm_new(d);
	vm->pid = b->pid;
	vm->by_handoff = true;
	g_strlcpy(vm->qmp_path, "(hand-off)", sizeof(vm->qmp_path));
	g_strlcpy(vm->qemu_version, "?", sizeof(vm->qemu_version));
	if (vt_ctl_name_valid(b->vm_name) && !name_reserved(d, b->vm_name))
		g_strlcpy(vm->name, b->vm_name, sizeof(vm->name));
	else
		do
			g_snprintf(vm->name, sizeof(vm->name), "vm%u", d->next_id++);
		while (name_reserved(d, vm->name));
	b->vm = vm;
	g_ptr_array_add(vm->backends, b);
	ram_from_backends(vm, &ram, &gpa);
	g_array_free(vm->ram, TRUE);
	g_array_free(vm->gpa_map, TRUE);
	vm->ram = ram;
	vm->gpa_map = gpa;
	vm->ram_bytes = b->size;
	if (vt_vm_worker_start(vm)) {
		g_set_error(error, VT_CORE_ERROR, EAGAIN, "no thread for the VM's worker");
		g_ptr_array_set_size(vm->backends, 0);
		b->vm = NULL;
		vt_vm_retire(vm, false);
		return false;
	}
	g_hash_table_insert(d->vms, vm->name, vm);
	logf_vm(d, G_LOG_LEVEL_MESSAGE, vm->name, "attached by hand-off: QEMU pid %d, %"
		G_GUINT64_FORMAT " MiB", (int)vm->pid, b->size >> 20);
	/* the engine starts on the worker, like every later change */
	ram_from_backends(vm, &ram, &gpa);
	vt_vm_worker_post_ram(vm, ram, gpa);
	return true;
}

void vt_daemon_backend_ranges_changed(struct vt_daemon *d, struct vt_vm *vm)
{
	GArray *ram, *gpa;

	(void)d;
	if (vm->by_handoff) {
		ram_from_backends(vm, &ram, &gpa);
	} else {
		/* a VM attached by QMP knows its RAM: restart on it, with or without pools */
		g_mutex_lock(&vm->lock);
		ram = g_array_copy(vm->ram);
		gpa = g_array_copy(vm->gpa_map);
		g_mutex_unlock(&vm->lock);
	}
	vt_vm_worker_post_ram(vm, ram, gpa);
}

void vt_daemon_backend_gone(struct vt_daemon *d, struct vt_vm *vm, struct vt_backend *b)
{
	g_mutex_lock(&vm->lock);
	g_ptr_array_remove(vm->backends, b);
	g_mutex_unlock(&vm->lock);
	b->vm = NULL;
	if (vm->by_handoff && !vm->backends->len)
		vt_daemon_detach(d, vm->name, "its last hand-off ended", NULL);
	else
		vt_daemon_backend_ranges_changed(d, vm);
}

/*
 * An attach in progress: the QMP connect runs on the main loop without
 * blocking it (vt_qmp_connect_async), the QMP queries of discovery, the
 * move_pages probe and the engine's start on a job thread (job.h); the VM
 * joins d->vms, under its final name, only when all of it worked. Until
 * then the op reserves its QMP path, requested name and (once connected)
 * QEMU pid, so that a second attach of the same VM gets EEXIST.
 */
struct attach_op {
	struct vt_daemon *d;
	struct vt_vm *vm;		/* the job's alone while it runs */
	char *qmp_path;
	char *want_name;		/* requested name, or NULL: QEMU's -name, else vmN */
	pid_t pid;			/* 0 until connected */
	struct vt_qmp_connecting *connecting;
	struct vt_job *job;
	bool abandoned;			/* nobody waits any more: drop the result */
	vt_daemon_attach_cb cb;
	void *cb_arg;
	/* the job's results */
	char *qemu_name;
	bool incoming;			/* QEMU waits for an incoming migration */
	bool outgoing;			/* ... or has an outgoing one under way */
	GError *error;
};

static void attach_op_free(struct attach_op *op)
{
	vm_free(op->vm);
	g_free(op->qmp_path);
	g_free(op->want_name);
	g_free(op->qemu_name);
	if (op->error)
		g_error_free(op->error);
	g_free(op);
}

/* The outcome, once: @vm attached, or NULL and @error; the op is freed. */
static void attach_finish(struct attach_op *op, struct vt_vm *vm, GError *error)
{
	struct vt_daemon *d = op->d;

	g_ptr_array_remove(d->attaching, op);
	if (vm)
		op->vm = NULL;	/* the daemon's now */
	if (error)
		logf_vm(d, G_LOG_LEVEL_DEBUG, NULL, "attach %s failed: %s", op->qmp_path,
			error->message);
	if (op->cb)
		op->cb(vm, error, op->cb_arg);
	if (error)
		g_error_free(error);
	attach_op_free(op);
}

static struct attach_op *attach_op_of(struct vt_daemon *d, const char *qmp_path,
				      const char *name, pid_t pid, const struct attach_op *self)
{
	for (unsigned int i = 0; i < d->attaching->len; i++) {
		struct attach_op *op = g_ptr_array_index(d->attaching, i);

		if (op == self)
			continue;
		if ((qmp_path && strcmp(op->qmp_path, qmp_path) == 0) ||
		    (name && op->want_name && strcmp(op->want_name, name) == 0) ||
		    (pid && op->pid == pid))
			return op;
	}
	return NULL;
}

/* Taken by an attached VM, or promised to an attach in progress. */
static bool name_reserved(struct vt_daemon *d, const char *name)
{
	return name_taken(d, name) || attach_op_of(d, NULL, name, 0, NULL);
}

/*
 * On the job's thread: is a migration under way as the VM is attached? Its
 * QMP events say so from now on; these two queries say what they missed
 * (a QEMU that does not answer them is taken as not migrating).
 */
static const char *status_of(JsonNode *ret)
{
	JsonNode *n = ret && JSON_NODE_HOLDS_OBJECT(ret) ?
		      json_object_get_member(json_node_get_object(ret), "status") : NULL;

	if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
		return "";
	return json_node_get_string(n);
}

static void migration_at_attach(struct attach_op *op)
{
	g_autoptr(JsonNode) st = NULL, mig = NULL;

	if (vt_qmp_execute(op->vm->qmp, "query-status", NULL, &st, NULL))
		op->incoming = !strcmp(status_of(st), "inmigrate");
	if (op->incoming || !vt_qmp_execute(op->vm->qmp, "query-migrate", NULL, &mig, NULL))
		return;
	op->outgoing = vt_qmp_migration_of(status_of(mig)) == VT_QMP_MIGRATION_ACTIVE;
}

/* On the job's thread: everything of discovery that waits on QEMU or the kernel. */
static void attach_discover(void *arg)
{
	struct attach_op *op = arg;
	struct vt_vm *vm = op->vm;
	g_autoptr(JsonNode) qname = NULL;
	GError **error = &op->error;
	int ret;

	if (!op->want_name && vt_qmp_execute(vm->qmp, "query-name", NULL, &qname, NULL) &&
	    JSON_NODE_HOLDS_OBJECT(qname)) {
		JsonObject *o = json_node_get_object(qname);
		const char *n = json_object_has_member(o, "name") ?
				json_object_get_string_member_with_default(o, "name", NULL) : NULL;

		if (n && vt_ctl_name_valid(n))
			op->qemu_name = g_strdup(n);
	}
	if (!vt_vm_discover(vm->qmp, vm->pid, vm->ram, vm->gpa_map, error)) {
		g_prefix_error(error, "%s: ", op->qmp_path);
		return;
	}
	migration_at_attach(op);
	for (unsigned int i = 0; i < vm->ram->len; i++)
		vm->ram_bytes += g_array_index(vm->ram, struct vt_vm_ram, i).size;
	ret = vt_numa_probe(vm->pid);
	if (ret == -EPERM) {
		g_set_error(error, VT_CORE_ERROR, EPERM,
			    "move_pages on QEMU pid %d: permission denied (vtierd needs "
			    "CAP_SYS_NICE, or run it as root)", (int)vm->pid);
		return;
	}
	if (ret == -ENOSYS) {
		g_set_error(error, VT_CORE_ERROR, ENOSYS,
			    "move_pages: not supported by this kernel (CONFIG_NUMA off?)");
		return;
	}
	/* the worker is not running yet: its context is ours to fill */
	vt_vm_worker_engine_start(vm, error);
}

/* Back on the main loop: name the VM and let it in, unless someone was faster. */
static void attach_discovered(void *arg)
{
	struct attach_op *op = arg;
	struct vt_daemon *d = op->d;
	struct vt_vm *vm = op->vm, *other;
	GError *e = NULL;

	op->job = NULL;
	if (op->abandoned) {
		e = g_error_new(VT_CORE_ERROR, ECANCELED, "%s: attach abandoned", op->qmp_path);
		goto fail;
	}
	if (op->error) {
		e = g_steal_pointer(&op->error);
		goto fail;
	}
	/* a hand-off of the same QEMU may have attached it meanwhile */
	other = vm_of_pid(d, vm->pid);
	if (other) {
		e = g_error_new(VT_CORE_ERROR, EEXIST, "QEMU pid %d is already attached as '%s'",
				(int)vm->pid, other->name);
		goto fail;
	}
	if (op->want_name && name_taken(d, op->want_name)) {
		e = g_error_new(VT_CORE_ERROR, EEXIST, "a VM named '%s' is already attached",
				op->want_name);
		goto fail;
	}
	if (op->want_name)
		g_strlcpy(vm->name, op->want_name, sizeof(vm->name));
	else if (op->qemu_name && !name_reserved(d, op->qemu_name))
		g_strlcpy(vm->name, op->qemu_name, sizeof(vm->name));
	else
		do
			g_snprintf(vm->name, sizeof(vm->name), "vm%u", d->next_id++);
		while (name_reserved(d, vm->name));
	if (vt_vm_worker_start(vm)) {
		e = g_error_new(VT_CORE_ERROR, EAGAIN, "no thread for the VM's worker");
		goto fail;
	}
	vm->migration.qmp_incoming = op->incoming;
	if (op->incoming)
		logf_vm(d, G_LOG_LEVEL_MESSAGE, vm->name,
			"attached while its QEMU waits for an incoming migration: profiled "
			"from scratch once it runs");
	if (op->outgoing)
		vt_migration_post_qmp(vm, VT_QMP_MIGRATION_ACTIVE);
	vm->qmp_watch = g_unix_fd_add(vt_qmp_fd(vm->qmp), G_IO_IN | G_IO_HUP | G_IO_ERR,
				      qmp_event_cb, vm);
	g_hash_table_insert(d->vms, vm->name, vm);
	adopt_live_backends(d, vm);
	logf_vm(d, G_LOG_LEVEL_MESSAGE, vm->name,
		"attached: QEMU %s pid %d, %u memory backend(s), %" G_GUINT64_FORMAT " MiB, mode %s",
		vm->qemu_version, (int)vm->pid, vm->ram->len, (guint64)(vm->ram_bytes >> 20),
		vt_mode_name(vm->policy.mode));
	logf_vm(d, G_LOG_LEVEL_MESSAGE, vm->name, "profiler %s: %s", vm->profiler_name,
		vm->profiler_why);
	attach_finish(op, vm, NULL);
	return;
fail:
	attach_finish(op, NULL, e);
}

static void attach_connected(struct vt_qmp *q, GError *error, void *arg)
{
	struct attach_op *op = arg;
	struct vt_daemon *d = op->d;
	struct vt_vm *vm = op->vm, *other;
	struct attach_op *racing;
	GError *e = NULL;

	op->connecting = NULL;
	if (!q) {
		attach_finish(op, NULL, error);
		return;
	}
	vm->qmp = q;
	vm->pid = vt_qmp_peer_pid(q);
	g_strlcpy(vm->qemu_version, vt_qmp_version(q), sizeof(vm->qemu_version));
	other = vm_of_pid(d, vm->pid);
	racing = other ? NULL : attach_op_of(d, NULL, NULL, vm->pid, op);
	if (other || racing) {
		e = g_error_new(VT_CORE_ERROR, EEXIST, "QEMU pid %d is already %s '%s'",
				(int)vm->pid, other ? "attached as" : "being attached by",
				other ? other->name : racing->qmp_path);
		attach_finish(op, NULL, e);
		return;
	}
	op->pid = vm->pid;
	op->job = vt_job_start("vtier-attach", attach_discover, attach_discovered, op, &e);
	if (!op->job)
		attach_finish(op, NULL, e);
}

struct attach_op *vt_daemon_attach_start(struct vt_daemon *d, const char *qmp_path,
					 const char *name, char *const *set, unsigned int nr_set,
					 vt_daemon_attach_cb cb, void *arg, GError **error)
{
	struct attach_op *op, *racing;
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, d->vms);
	while (g_hash_table_iter_next(&it, NULL, &v))
		if (strcmp(((struct vt_vm *)v)->qmp_path, qmp_path) == 0) {
			g_set_error(error, VT_CORE_ERROR, EEXIST, "%s is already attached as '%s'",
				    qmp_path, ((struct vt_vm *)v)->name);
			return NULL;
		}
	if (name && name_taken(d, name)) {
		g_set_error(error, VT_CORE_ERROR, EEXIST, "a VM named '%s' is already attached", name);
		return NULL;
	}
	racing = attach_op_of(d, qmp_path, name, 0, NULL);
	if (racing) {
		g_set_error(error, VT_CORE_ERROR, EEXIST, "%s is being attached already%s%s%s",
			    racing->qmp_path, racing->want_name ? " as '" : "",
			    racing->want_name ? racing->want_name : "", racing->want_name ? "'" : "");
		return NULL;
	}
	op = g_new0(struct attach_op, 1);
	op->d = d;
	op->vm = vm_new(d);
	op->qmp_path = g_strdup(qmp_path);
	op->want_name = g_strdup(name);
	op->cb = cb;
	op->cb_arg = arg;
	g_strlcpy(op->vm->qmp_path, qmp_path, sizeof(op->vm->qmp_path));
	if (nr_set && !vt_vm_policy_apply(&op->vm->policy, set, nr_set, error))
		goto fail;
	/* its dram_min with the attached VMs' must fit the host's budget */
	if (!vt_host_share_check_policy(&d->share, op->vm, &op->vm->policy, error))
		goto fail;
	op->connecting = vt_qmp_connect_async(qmp_path, d->qmp_timeout_ms, NULL, attach_connected,
					      op, error);
	if (!op->connecting)
		goto fail;
	g_ptr_array_add(d->attaching, op);
	return op;
fail:
	attach_op_free(op);
	return NULL;
}

bool vt_daemon_qmp_taken(struct vt_daemon *d, const char *qmp_path)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, d->vms);
	while (g_hash_table_iter_next(&it, NULL, &v))
		if (strcmp(((struct vt_vm *)v)->qmp_path, qmp_path) == 0)
			return true;
	return attach_op_of(d, qmp_path, NULL, 0, NULL) != NULL;
}

bool vt_daemon_attach(struct vt_daemon *d, const char *qmp_path, const char *name,
		      char *const *set, unsigned int nr_set, vt_daemon_attach_cb cb, void *arg,
		      GError **error)
{
	return vt_daemon_attach_start(d, qmp_path, name, set, nr_set, cb, arg, error) != NULL;
}

/* Stop an attach in progress; @cb runs with ECANCELED (at once, or when its job returns). */
void vt_daemon_attach_abandon(struct attach_op *op)
{
	if (op->connecting) {
		vt_qmp_connect_cancel(op->connecting);
		op->connecting = NULL;
		attach_finish(op, NULL, g_error_new(VT_CORE_ERROR, ECANCELED, "%s: attach abandoned",
						    op->qmp_path));
		return;
	}
	op->abandoned = true;	/* the job is on QMP: attach_discovered drops the result */
}

/* The daemon goes: every attach in progress ends now, the jobs' threads joined. */
static void attach_cancel_all(struct vt_daemon *d)
{
	while (d->attaching->len) {
		struct attach_op *op = g_ptr_array_index(d->attaching, 0);

		if (op->job) {
			/* its QMP round trips fail at once */
			shutdown(vt_qmp_fd(op->vm->qmp), SHUT_RDWR);
			vt_job_cancel(op->job);
			op->job = NULL;
		}
		if (op->connecting)
			vt_qmp_connect_cancel(op->connecting);
		op->connecting = NULL;
		attach_finish(op, NULL, g_error_new(VT_CORE_ERROR, ESHUTDOWN,
						    "%s: vtierd is shutting down", op->qmp_path));
	}
}

bool vt_daemon_detach(struct vt_daemon *d, const char *name, const char *why, GError **error)
{
	/* @name may be the VM's own (vm->name): the VM goes with the remove */
	g_autofree char *n = g_strdup(name);

	if (!g_hash_table_contains(d->vms, n)) {
		g_set_error(error, VT_CORE_ERROR, ENOENT, "no VM named '%s' is attached", n);
		return false;
	}
	g_hash_table_remove(d->vms, n);
	logf_vm(d, G_LOG_LEVEL_MESSAGE, n, "detached: %s", why);
	return true;
}
