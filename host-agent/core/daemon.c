// SPDX-License-Identifier: GPL-2.0-or-later
/* VM registry and control request dispatch. */
#include <errno.h>
#include <string.h>

#include <glib-unix.h>

#include "ctl_proto.h"
#include "daemon.h"
#include "numa.h"

static void logf_vm(struct vt_daemon *d, GLogLevelFlags level, const char *vm, const char *fmt,
		    ...) G_GNUC_PRINTF(4, 5);

static void logf_vm(struct vt_daemon *d, GLogLevelFlags level, const char *vm, const char *fmt,
		    ...)
{
	g_autofree char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	if (d->log)
		d->log(level, vm, msg);
	else
		g_debug("%s: %s", vm ? vm : "vtierd", msg);
}

static void vm_free(struct vt_vm *vm)
{
	if (!vm)
		return;
	vt_engine_stop(vm);
	if (vm->qmp_watch)
		g_source_remove(vm->qmp_watch);
	vt_qmp_free(vm->qmp);
	vt_mtm_free(vm->mtm);
	if (vm->ram)
		g_array_free(vm->ram, TRUE);
	if (vm->gpa_map)
		g_array_free(vm->gpa_map, TRUE);
	g_free(vm);
}

struct vt_daemon *vt_daemon_new(const struct vt_tiers *tiers, vt_log_fn log)
{
	struct vt_daemon *d = g_new0(struct vt_daemon, 1);

	d->vms = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)vm_free);
	d->tiers = *tiers;
	d->log = log;
	d->qmp_timeout_ms = 5000;
	vt_vm_policy_default(&d->defaults);
	return d;
}

void vt_daemon_free(struct vt_daemon *d)
{
	if (!d)
		return;
	g_hash_table_destroy(d->vms);
	g_free(d);
}

static gboolean qmp_event_cb(gint fd, GIOCondition cond, gpointer data)
{
	struct vt_vm *vm = data;
	g_autoptr(GError) e = NULL;

	(void)fd;
	if (!(cond & (G_IO_HUP | G_IO_ERR)) && vt_qmp_drain(vm->qmp, &e))
		return G_SOURCE_CONTINUE;
	g_snprintf(vm->last_error, sizeof(vm->last_error), "%s",
		   e ? e->message : "QMP connection lost");
	vm->qmp_watch = 0;
	vt_daemon_vm_failed(vm->d, vm);
	return G_SOURCE_REMOVE;
}

void vt_daemon_vm_failed(struct vt_daemon *d, struct vt_vm *vm)
{
	g_autofree char *name = g_strdup(vm->name);

	logf_vm(d, G_LOG_LEVEL_WARNING, name, "detached: %s (QEMU pid %d)",
		vm->last_error[0] ? vm->last_error : "VM gone", (int)vm->pid);
	/* the window timer or QMP watch that called us must not be removed twice */
	g_hash_table_remove(d->vms, name);
}

static bool name_taken(struct vt_daemon *d, const char *name)
{
	return g_hash_table_contains(d->vms, name);
}

struct vt_vm *vt_daemon_attach(struct vt_daemon *d, const char *qmp_path, const char *name,
			       char *const *set, unsigned int nr_set, GError **error)
{
	struct vt_vm *vm;
	GHashTableIter it;
	gpointer v;
	g_autoptr(JsonNode) qname = NULL;
	int ret;

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
	vm = g_new0(struct vt_vm, 1);
	vm->d = d;
	vm->policy = d->defaults;
	vm->ram = g_array_new(FALSE, TRUE, sizeof(struct vt_vm_ram));
	vm->gpa_map = g_array_new(FALSE, TRUE, sizeof(struct vt_gpa_map));
	g_strlcpy(vm->qmp_path, qmp_path, sizeof(vm->qmp_path));
	if (nr_set && !vt_vm_policy_apply(&vm->policy, set, nr_set, error))
		goto fail;
	vm->qmp = vt_qmp_connect(qmp_path, d->qmp_timeout_ms, error);
	if (!vm->qmp)
		goto fail;
	vm->pid = vt_qmp_peer_pid(vm->qmp);
	g_strlcpy(vm->qemu_version, vt_qmp_version(vm->qmp), sizeof(vm->qemu_version));
	g_hash_table_iter_init(&it, d->vms);
	while (g_hash_table_iter_next(&it, NULL, &v))
		if (((struct vt_vm *)v)->pid == vm->pid) {
			g_set_error(error, VT_CORE_ERROR, EEXIST,
				    "QEMU pid %d is already attached as '%s'", (int)vm->pid,
				    ((struct vt_vm *)v)->name);
			goto fail;
		}
	if (!name && vt_qmp_execute(vm->qmp, "query-name", NULL, &qname, NULL) &&
	    JSON_NODE_HOLDS_OBJECT(qname)) {
		JsonObject *o = json_node_get_object(qname);
		const char *n = json_object_has_member(o, "name") ?
				json_object_get_string_member_with_default(o, "name", NULL) : NULL;

		if (n && vt_ctl_name_valid(n) && !name_taken(d, n))
			name = n;
	}
	if (name)
		g_strlcpy(vm->name, name, sizeof(vm->name));
	else
		do
			g_snprintf(vm->name, sizeof(vm->name), "vm%u", d->next_id++);
		while (name_taken(d, vm->name));
	if (!vt_vm_discover(vm->qmp, vm->pid, vm->ram, vm->gpa_map, error)) {
		g_prefix_error(error, "%s: ", qmp_path);
		goto fail;
	}
	for (unsigned int i = 0; i < vm->ram->len; i++)
		vm->ram_bytes += g_array_index(vm->ram, struct vt_vm_ram, i).size;
	ret = vt_numa_probe(vm->pid);
	if (ret == -EPERM) {
		g_set_error(error, VT_CORE_ERROR, EPERM,
			    "move_pages on QEMU pid %d: permission denied (vtierd needs "
			    "CAP_SYS_NICE, or run it as root)", (int)vm->pid);
		goto fail;
	}
	if (ret == -ENOSYS) {
		g_set_error(error, VT_CORE_ERROR, ENOSYS,
			    "move_pages: not supported by this kernel (CONFIG_NUMA off?)");
		goto fail;
	}
	if (!vt_engine_start(vm, error))
		goto fail;
	vm->qmp_watch = g_unix_fd_add(vt_qmp_fd(vm->qmp), G_IO_IN | G_IO_HUP | G_IO_ERR,
				      qmp_event_cb, vm);
	g_hash_table_insert(d->vms, vm->name, vm);
	logf_vm(d, G_LOG_LEVEL_MESSAGE, vm->name,
		"attached: QEMU %s pid %d, %u memory backend(s), %" G_GUINT64_FORMAT " MiB, mode %s",
		vm->qemu_version, (int)vm->pid, vm->ram->len, (guint64)(vm->ram_bytes >> 20),
		vt_mode_name(vm->policy.mode));
	logf_vm(d, G_LOG_LEVEL_MESSAGE, vm->name, "profiler %s: %s", vm->profiler_name,
		vm->profiler_why);
	return vm;
fail:
	vm_free(vm);
	return NULL;
}

bool vt_daemon_detach(struct vt_daemon *d, const char *name, const char *why, GError **error)
{
	if (!g_hash_table_contains(d->vms, name)) {
		g_set_error(error, VT_CORE_ERROR, ENOENT, "no VM named '%s' is attached", name);
		return false;
	}
	g_hash_table_remove(d->vms, name);
	logf_vm(d, G_LOG_LEVEL_MESSAGE, name, "detached: %s", why);
	return true;
}

static char *finish(JsonBuilder *b)
{
	g_autoptr(JsonGenerator) gen = json_generator_new();
	g_autoptr(JsonNode) root = json_builder_get_root(b);
	g_autofree char *text = NULL;

	json_generator_set_root(gen, root);
	text = json_generator_to_data(gen, NULL);
	return g_strconcat(text, "\n", NULL);
}

static char *reply_error(const GError *e)
{
	g_autoptr(JsonBuilder) b = json_builder_new();

	json_builder_begin_object(b);
	json_builder_set_member_name(b, "ok");
	json_builder_add_boolean_value(b, FALSE);
	json_builder_set_member_name(b, "error");
	json_builder_add_string_value(b, e->message);
	json_builder_set_member_name(b, "errno");
	json_builder_add_int_value(b, e->code);
	json_builder_end_object(b);
	return finish(b);
}

static gint cmp_vm_name(gconstpointer a, gconstpointer b)
{
	return strcmp(((const struct vt_vm *)a)->name, ((const struct vt_vm *)b)->name);
}

char *vt_daemon_handle(struct vt_daemon *d, const char *data, size_t len)
{
	struct vt_ctl_request req;
	g_autoptr(GError) e = NULL;
	g_autoptr(JsonBuilder) b = json_builder_new();
	struct vt_vm *vm = NULL;
	char *reply;

	if (!vt_ctl_request_parse(data, len, &req, &e))
		return reply_error(e);
	if (req.vm && req.cmd != VT_CTL_ATTACH) {
		vm = g_hash_table_lookup(d->vms, req.vm);
		if (!vm) {
			g_set_error(&e, VT_CORE_ERROR, ENOENT, "no VM named '%s' is attached (see "
				    "vtierctl list)", req.vm);
			goto err;
		}
	}
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "ok");
	json_builder_add_boolean_value(b, TRUE);
	json_builder_set_member_name(b, "result");
	switch (req.cmd) {
	case VT_CTL_PING:
		json_builder_add_string_value(b, "pong");
		break;
	case VT_CTL_LIST: {
		g_autoptr(GList) vms = g_list_sort(g_hash_table_get_values(d->vms), cmp_vm_name);

		json_builder_begin_array(b);
		for (GList *l = vms; l; l = l->next)
			vt_vm_status_to_json(l->data, b);
		json_builder_end_array(b);
		break;
	}
	case VT_CTL_ATTACH:
		vm = vt_daemon_attach(d, req.qmp, req.vm, req.set, req.nr_set, &e);
		if (!vm)
			goto err;
		vt_vm_status_to_json(vm, b);
		break;
	case VT_CTL_DETACH:
		if (!vt_daemon_detach(d, req.vm, "on request", &e))
			goto err;
		json_builder_add_string_value(b, req.vm);
		break;
	case VT_CTL_STATUS:
		vt_vm_status_to_json(vm, b);
		break;
	case VT_CTL_STATS:
		vt_vm_stats_to_json(vm, &d->tiers, b);
		break;
	case VT_CTL_POLICY: {
		struct vt_vm_policy old = vm->policy;

		if (req.nr_set && !vt_vm_policy_apply(&vm->policy, req.set, req.nr_set, &e))
			goto err;
		if (req.nr_set && memcmp(&old, &vm->policy, sizeof(old)) != 0) {
			if (!vt_engine_start(vm, &e)) {
				vm->policy = old;
				vt_engine_start(vm, NULL);
				goto err;
			}
			logf_vm(d, G_LOG_LEVEL_MESSAGE, vm->name, "policy: mode %s, profiler %s",
				vt_mode_name(vm->policy.mode), vm->profiler_name);
		}
		vt_vm_policy_to_json(&vm->policy, b);
		break;
	}
	case VT_CTL_TIERS:
		vt_tiers_refresh(&d->tiers);
		vt_tiers_to_json(&d->tiers, b);
		break;
	}
	json_builder_end_object(b);
	vt_ctl_request_clear(&req);
	return finish(b);
err:
	vt_ctl_request_clear(&req);
	reply = reply_error(e);
	return reply;
}
