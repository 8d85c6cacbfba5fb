// SPDX-License-Identifier: GPL-2.0-or-later
/* Prometheus text exposition of vtierd's figures. */
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "daemon.h"
#include "libvirt_domains.h"
#include "metrics.h"
#include "metrics_text.h"
#include "prom_text.h"
#include "vm_json.h"

struct family;
typedef void (*emit_fn)(GString *out, const struct family *f, const struct vt_metrics_vm *v);

/*
 * A metric family: its samples come from one member of the stats ("s:") or
 * report ("r:") object times @scale, or from @emit for the labelled ones.
 */
struct family {
	const char *name;
	const char *type;
	const char *help;
	const char *member;
	double scale;
	emit_fn emit;
};

static JsonNode *member_node(const struct vt_metrics_vm *v, const char *path)
{
	JsonObject *o = path[0] == 's' ? v->stats : v->report;
	g_auto(GStrv) parts = g_strsplit(path + 2, ".", -1);
	JsonNode *n = NULL;

	for (unsigned int i = 0; o && parts[i]; i++) {
		n = json_object_get_member(o, parts[i]);
		o = n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
	}
	return n && JSON_NODE_HOLDS_VALUE(n) ? n : NULL;
}

/* report.tiers[].bytes / .usd_per_hour by tier */
static void emit_report_tiers(GString *out, const struct family *f, const struct vt_metrics_vm *v)
{
	JsonArray *a = vt_prom_array(v->report, "tiers");

	for (unsigned int i = 0; a && i < json_array_get_length(a); i++) {
		JsonObject *t = json_array_get_object_element(a, i);

		vt_prom_sample(out, f->name, v, vt_prom_num(t, f->member), "tier", vt_prom_str(t, "tier"), NULL);
	}
}

static void emit_info(GString *out, const struct family *f, const struct vt_metrics_vm *v)
{
	vt_prom_sample(out, f->name, v, 1, "vm", v->vm, "mode", vt_prom_str(v->stats, "mode"), "profiler",
	       vt_prom_str(v->stats, "profiler"), NULL);
}

static void emit_ram(GString *out, const struct family *f, const struct vt_metrics_vm *v)
{
	vt_prom_sample(out, f->name, v, (double)v->ram_bytes, NULL);
}

static void emit_moves(GString *out, const struct family *f, const struct vt_metrics_vm *v)
{
	vt_prom_sample(out, f->name, v, vt_prom_num(v->stats, "promotions"), "direction", "promote", NULL);
	vt_prom_sample(out, f->name, v, vt_prom_num(v->stats, "demotions"), "direction", "demote", NULL);
}

static void emit_move_failures(GString *out, const struct family *f, const struct vt_metrics_vm *v)
{
	static const char *const reasons[] = { "busy", "absent", "nomem", "other" };

	for (unsigned int i = 0; i < G_N_ELEMENTS(reasons); i++) {
		g_autofree char *m = g_strdup_printf("move_fail_%s", reasons[i]);

		vt_prom_sample(out, f->name, v, vt_prom_num(v->stats, m), "reason", reasons[i], NULL);
	}
}

static void emit_cpu(GString *out, const struct family *f, const struct vt_metrics_vm *v)
{
	static const char *const stages[] = { "profiler", "residency", "policy", "mover", "hints" };

	for (unsigned int i = 0; i < G_N_ELEMENTS(stages); i++) {
		g_autofree char *m = g_strdup_printf("%s_cpu_ns", stages[i]);

		vt_prom_sample(out, f->name, v, vt_prom_num(v->stats, m) * 1e-9, "stage", stages[i], NULL);
	}
}

/* hints.accepted{kind} / hints.rejected{reason}: every member of the object */
static void emit_hints(GString *out, const struct family *f, const struct vt_metrics_vm *v)
{
	JsonObject *o = vt_prom_object(vt_prom_object(v->stats, "hints"), f->member);
	g_autoptr(GList) keys = o ? json_object_get_members(o) : NULL;

	for (GList *l = keys; l; l = l->next)
		vt_prom_sample(out, f->name, v, vt_prom_num(o, l->data),
		       strcmp(f->member, "accepted") == 0 ? "kind" : "reason", l->data, NULL);
}

/*
 * backends[]: faults by kind (member "faults"), a backend's own number times
 * @scale ("b:KEY"), or each compressed tier's member KEY
 */
static void emit_backends(GString *out, const struct family *f, const struct vt_metrics_vm *v)
{
	JsonArray *a = vt_prom_array(v->stats, "backends");

	for (unsigned int i = 0; a && i < json_array_get_length(a); i++) {
		JsonObject *b = json_array_get_object_element(a, i);
		const char *be = vt_prom_str(b, "backend");
		JsonArray *c = vt_prom_array(b, "ctiers");

		if (strcmp(f->member, "faults") == 0) {
			vt_prom_sample(out, f->name, v, vt_prom_num(b, "faults_stored"), "backend", be, "kind",
			       "stored", NULL);
			vt_prom_sample(out, f->name, v, vt_prom_num(b, "faults_zero"), "backend", be, "kind",
			       "zero", NULL);
			vt_prom_sample(out, f->name, v, vt_prom_num(b, "faults_wp"), "backend", be, "kind",
			       "write_protect", NULL);
		} else if (g_str_has_prefix(f->member, "b:")) {
			vt_prom_sample(out, f->name, v, vt_prom_num(b, f->member + 2) * f->scale, "backend", be,
				       NULL);
		} else {
			for (unsigned int k = 0; c && k < json_array_get_length(c); k++) {
				JsonObject *t = json_array_get_object_element(c, k);

				vt_prom_sample(out, f->name, v, vt_prom_num(t, f->member), "backend", be, "tier",
				       vt_prom_str(t, "name"), NULL);
			}
		}
	}
}

/*
 * backends[].ctiers[].remote: per server (member "up": state up as 1, else
 * 0; other members: the server's counter) or per tier (f->member "t:KEY").
 */
static void emit_remote(GString *out, const struct family *f, const struct vt_metrics_vm *v)
{
	JsonArray *a = vt_prom_array(v->stats, "backends");

	for (unsigned int i = 0; a && i < json_array_get_length(a); i++) {
		JsonObject *b = json_array_get_object_element(a, i);
		JsonArray *c = vt_prom_array(b, "ctiers");

		for (unsigned int k = 0; c && k < json_array_get_length(c); k++) {
			JsonObject *t = json_array_get_object_element(c, k);
			JsonObject *r = vt_prom_object(t, "remote");
			JsonArray *srv = vt_prom_array(r, "servers");

			if (!r)
				continue;
			if (g_str_has_prefix(f->member, "t:")) {
				vt_prom_sample(out, f->name, v, vt_prom_num(r, f->member + 2), "backend",
				       vt_prom_str(b, "backend"), "tier", vt_prom_str(t, "name"), NULL);
				continue;
			}
			for (unsigned int s = 0; srv && s < json_array_get_length(srv); s++) {
				JsonObject *o = json_array_get_object_element(srv, s);
				double val = strcmp(f->member, "up") == 0 ?
					     strcmp(vt_prom_str(o, "state"), "up") == 0 :
					     vt_prom_num(o, f->member);

				vt_prom_sample(out, f->name, v, val, "backend", vt_prom_str(b, "backend"), "tier",
				       vt_prom_str(t, "name"), "server", vt_prom_str(o, "server"), NULL);
			}
		}
	}
}

/* backends[].fault_hist / zero_fault_hist as a Prometheus histogram (base name @f->name) */
static void emit_fault_hist(GString *out, const struct family *f, const struct vt_metrics_vm *v)
{
	static const char *const kinds[][2] = { { "fault_hist", "stored" },
						{ "zero_fault_hist", "zero" } };
	g_autofree char *bucket = g_strconcat(f->name, "_bucket", NULL);
	g_autofree char *sum = g_strconcat(f->name, "_sum", NULL);
	g_autofree char *count = g_strconcat(f->name, "_count", NULL);
	JsonArray *a = vt_prom_array(v->stats, "backends");

	for (unsigned int i = 0; a && i < json_array_get_length(a); i++) {
		JsonObject *b = json_array_get_object_element(a, i);
		const char *be = vt_prom_str(b, "backend");

		for (unsigned int k = 0; k < G_N_ELEMENTS(kinds); k++) {
			JsonObject *h = vt_prom_object(b, kinds[k][0]);
			JsonArray *le = vt_prom_array(h, "le_ns"), *c = vt_prom_array(h, "count");
			char num[G_ASCII_DTOSTR_BUF_SIZE];

			if (!le || !c || json_array_get_length(le) != json_array_get_length(c))
				continue;
			for (unsigned int j = 0; j < json_array_get_length(le); j++) {
				g_ascii_dtostr(num, sizeof(num),
					       (double)json_array_get_int_element(le, j) * 1e-9);
				vt_prom_sample(out, bucket, v, (double)json_array_get_int_element(c, j),
				       "backend", be, "kind", kinds[k][1], "le", num, NULL);
			}
			vt_prom_sample(out, bucket, v, vt_prom_num(h, "total"), "backend", be, "kind",
			       kinds[k][1], "le", "+Inf", NULL);
			vt_prom_sample(out, sum, v, vt_prom_num(h, "sum_ns") * 1e-9, "backend", be, "kind",
			       kinds[k][1], NULL);
			vt_prom_sample(out, count, v, vt_prom_num(h, "total"), "backend", be, "kind", kinds[k][1],
			       NULL);
		}
	}
}

/*
 * stats.share (a host budget only): granted, wanted and protected bytes, by
 * why, and by node when the budgets are per node
 */
static void emit_share(GString *out, const struct family *f, const struct vt_metrics_vm *v)
{
	JsonObject *sh = vt_prom_object(v->stats, "share");
	const char *node_label;
	char node[16];

	if (!sh)
		return;
	/* per-node budgets: the node whose budget the VM's DRAM counts against (a NULL */
	/* ... label name ends the list: no node label for a host-wide budget) */
	node_label = json_object_has_member(sh, "node") ? "node" : NULL;
	g_snprintf(node, sizeof(node), "%.0f", vt_prom_num(sh, "node"));
	vt_prom_sample(out, f->name, v, vt_prom_num(sh, "granted"), "kind", "granted", "why",
		       vt_prom_str(sh, "why"), node_label, node, NULL);
	vt_prom_sample(out, f->name, v, vt_prom_num(sh, "wanted"), "kind", "wanted", "why",
		       vt_prom_str(sh, "why"), node_label, node, NULL);
	vt_prom_sample(out, f->name, v, vt_prom_num(sh, "protected"), "kind", "protected", "why",
		       vt_prom_str(sh, "why"), node_label, node, NULL);
}

/*
 * stats.tlb.<f->member>: the counter's total while it is read (a counter the
 * host does not have has no sample, rather than a made-up 0).
 */
/* @o's member @key is the boolean true */
static bool is_true(JsonObject *o, const char *key)
{
	JsonNode *n = o ? json_object_get_member(o, key) : NULL;

	return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_BOOLEAN &&
	       json_node_get_boolean(n);
}

static void emit_tlb_total(GString *out, const struct family *f, const struct vt_metrics_vm *v)
{
	JsonObject *c = vt_prom_object(vt_prom_object(v->stats, "tlb"), f->member);

	if (is_true(c, "available"))
		vt_prom_sample(out, f->name, v, vt_prom_num(c, "total"), NULL);
}

/* stats.tdp.<f->member> x scale, while the VM is profiled over the tdp source */
static void emit_tdp(GString *out, const struct family *f, const struct vt_metrics_vm *v)
{
	JsonObject *tdp = vt_prom_object(v->stats, "tdp");

	if (is_true(tdp, "source"))
		vt_prom_sample(out, f->name, v, vt_prom_num(tdp, f->member) * f->scale, NULL);
}

/* stats.tlb: each counter's flushes per GiB moved, once memory moved while it was read */
static void emit_tlb_per_gib(GString *out, const struct family *f, const struct vt_metrics_vm *v)
{
	JsonObject *tlb = vt_prom_object(v->stats, "tlb");
	g_autoptr(GList) keys = tlb ? json_object_get_members(tlb) : NULL;

	for (GList *l = keys; l; l = l->next) {
		JsonObject *c = vt_prom_object(tlb, l->data);

		if (c && vt_prom_num(c, "moved_bytes") > 0)
			vt_prom_sample(out, f->name, v, vt_prom_num(c, "per_gib_moved"), "counter",
				       l->data, NULL);
	}
}

static const struct family families[] = {
	{ "vtier_vm_info", "gauge", "An attached VM: its vtierd name, mode and profiler.",
	  NULL, 1, emit_info },
	{ "vtier_vm_memory_bytes", "gauge", "Guest memory on each tier, bytes (from the VM's first "
	  "profiled window on).", "bytes", 1,
	  emit_report_tiers },
	{ "vtier_vm_ram_bytes", "gauge", "Guest RAM, bytes.", NULL, 1, emit_ram },
	{ "vtier_vm_cost_usd_per_hour", "gauge", "What the VM's memory costs on each tier, USD "
	  "per hour (docs/tco.md).", "usd_per_hour", 1, emit_report_tiers },
	{ "vtier_vm_all_dram_cost_usd_per_hour", "gauge", "The same memory all in DRAM, USD per "
	  "hour.", "r:all_dram_usd_per_hour", 1, NULL },
	{ "vtier_vm_saving_ratio", "gauge", "Saving against all-DRAM, 0..1.", "r:saving_pct",
	  0.01, NULL },
	{ "vtier_vm_fault_time_ratio", "gauge", "Estimated time in compressed-tier faults, "
	  "fraction of one vCPU.", "r:slowdown.fault_time_pct", 0.01, NULL },
	{ "vtier_vm_hot_set_bytes", "gauge", "Hot set: chunks at or above the promotion threshold, "
	  "bytes.", "r:hot_set_bytes", 1, NULL },
	{ "vtier_vm_windows_total", "counter", "Profiling windows since attach.", "s:windows", 1,
	  NULL },
	{ "vtier_vm_moves_total", "counter", "Chunks moved, by direction.", NULL, 1, emit_moves },
	{ "vtier_vm_moved_bytes_total", "counter", "Bytes that changed node.", "s:bytes_moved", 1,
	  NULL },
	{ "vtier_vm_move_failures_total", "counter", "Pages move_pages did not move, by reason.",
	  NULL, 1, emit_move_failures },
	{ "vtier_vm_thrash_events_total", "counter", "Chunks promoted soon after a demotion.",
	  "s:thrash_events", 1, NULL },
	{ "vtier_vm_host_tlb_shootdowns_total", "counter", "TLB shootdowns of the whole host (every "
	  "VM and process: /proc/interrupts TLB:, x86), counted over the VM's windows.",
	  "host_tlb_shootdowns", 1, emit_tlb_total },
	{ "vtier_vm_kvm_remote_tlb_flushes_total", "counter", "KVM's remote TLB flushes of the VM "
	  "(debugfs remote_tlb_flush), counted over its windows.", "kvm_remote_tlb_flushes", 1,
	  emit_tlb_total },
	{ "vtier_vm_kvm_remote_tlb_flush_requests_total", "counter", "KVM's remote TLB flush "
	  "requests of the VM (debugfs remote_tlb_flush_requests), counted over its windows.",
	  "kvm_remote_tlb_flush_requests", 1, emit_tlb_total },
	{ "vtier_vm_tlb_flushes_per_moved_gib", "gauge", "TLB flushes in the VM's windows that "
	  "moved memory per GiB they moved, by counter (host_tlb_shootdowns is host-wide).",
	  NULL, 1, emit_tlb_per_gib },
	{ "vtier_vm_tdp_tlb_flushes_total", "counter", "TLB flushes host-kmod did for the VM's "
	  "tdp source (policy tdp_flush=window: one per window), over its windows.", "flushes", 1,
	  emit_tdp },
	{ "vtier_vm_tdp_tlb_flush_seconds_total", "counter", "Time of those flushes inside "
	  "host-kmod, seconds.", "flush_ns", 1e-9, emit_tdp },
	{ "vtier_vm_window_cpu_seconds", "gauge", "CPU time of the last window, by stage "
	  "(profiler CPU: stage=\"profiler\").", NULL, 1, emit_cpu },
	{ "vtier_vm_hints_accepted_total", "counter", "Guest hints accepted, by kind.",
	  "accepted", 1, emit_hints },
	{ "vtier_vm_hints_rejected_total", "counter", "Guest hints refused, by reason.",
	  "rejected", 1, emit_hints },
	{ "vtier_vm_hints_saved_bytes", "gauge", "Guest memory given back through hints, bytes.",
	  "s:hints.saved_bytes", 1, NULL },
	{ "vtier_vm_faults_total", "counter", "Page faults served from vtierd's page store, by "
	  "kind.", "faults", 1, emit_backends },
	{ "vtier_vm_fault_latency_seconds", "histogram", "Service time of a page fault from "
	  "vtierd's store, by kind (stored page, zero page); _sum from bucket midpoints.", NULL, 1,
	  emit_fault_hist },
	{ "vtier_vm_fault_latency_p50_seconds", "gauge", "Median service time of a stored-page "
	  "fault.", "b:fault_p50_ns", 1e-9, emit_backends },
	{ "vtier_vm_fault_latency_p99_seconds", "gauge", "99th percentile service time of a "
	  "stored-page fault.", "b:fault_p99_ns", 1e-9, emit_backends },
	{ "vtier_vm_idle_faults_total", "counter", "Stored-page faults served while the backend's "
	  "mover had no order, discard or slice under way.", "b:idle_faults", 1, emit_backends },
	{ "vtier_vm_idle_fault_latency_p50_seconds", "gauge", "Median service time of a stored-page "
	  "fault served while the mover was idle: the fault path apart from the mover's work.",
	  "b:idle_fault_p50_ns", 1e-9, emit_backends },
	{ "vtier_vm_idle_fault_latency_p99_seconds", "gauge", "99th percentile service time of a "
	  "stored-page fault served while the mover was idle.", "b:idle_fault_p99_ns", 1e-9,
	  emit_backends },
	{ "vtier_vm_ctier_stored_bytes", "gauge", "Guest data in each compressed tier, bytes.",
	  "stored_bytes", 1, emit_backends },
	{ "vtier_vm_ctier_pool_bytes", "gauge", "Memory each compressed tier's pool takes, bytes.",
	  "pool_bytes", 1, emit_backends },
	{ "vtier_vm_dram_share_bytes", "gauge", "The host's DRAM sharing (a host budget only): "
	  "what the VM was granted, wanted before the rate limit and has protected, with why "
	  "(earned, protected, capped, rate-limited, waiting).", NULL, 1, emit_share },
	{ "vtier_vm_remote_server_up", "gauge", "A remote tier's memory server answers (1) or not "
	  "(0).", "up", 1, emit_remote },
	{ "vtier_vm_remote_server_pages", "gauge", "Pages of the VM a memory server holds.",
	  "pages", 1, emit_remote },
	{ "vtier_vm_remote_server_lost_total", "counter", "Times a memory server stopped "
	  "answering.", "lost", 1, emit_remote },
	{ "vtier_vm_remote_under_copies", "gauge", "A remote tier's pages with fewer live copies "
	  "than configured (with copies = 2 the tier takes no new page meanwhile).",
	  "t:under_copies", 1, emit_remote },
};

char *vt_metrics_write(const struct vt_metrics_daemon *dm, const struct vt_metrics_vm *vms,
		       unsigned int n)
{
	GString *out = g_string_new(NULL);

	g_string_append(out, "# HELP vtier_vms VMs attached to vtierd.\n# TYPE vtier_vms gauge\n");
	vt_prom_sample(out, "vtier_vms", NULL, n, NULL);
	if (dm->libvirt) {
		g_string_append(out, "# HELP vtier_libvirt_connected Whether vtierd is connected to "
				"libvirt (1) or retrying (0).\n# TYPE vtier_libvirt_connected gauge\n");
		vt_prom_sample(out, "vtier_libvirt_connected", NULL, dm->libvirt_connected, NULL);
	}
	for (unsigned int i = 0; i < G_N_ELEMENTS(families); i++) {
		const struct family *f = &families[i];

		vt_prom_family(out, f->name, f->type, f->help);
		for (unsigned int k = 0; k < n; k++) {
			double value;

			if (f->emit)
				f->emit(out, f, &vms[k]);
			else if (vt_prom_number(member_node(&vms[k], f->member), &value))
				vt_prom_sample(out, f->name, &vms[k], value * f->scale, NULL);
		}
	}
	if (dm->host)
		vt_metrics_host_write(out, dm->host, vms, n);
	return g_string_free(out, FALSE);
}

static gint cmp_name(gconstpointer a, gconstpointer b)
{
	return strcmp(((const struct vt_vm *)a)->name, ((const struct vt_vm *)b)->name);
}

char *vt_metrics_collect(struct vt_daemon *d)
{
	g_autoptr(GList) list = g_list_sort(g_hash_table_get_values(d->vms), cmp_name);
	unsigned int n = g_list_length(list), i = 0;
	g_autofree struct vt_metrics_vm *vms = g_new0(struct vt_metrics_vm, n ? n : 1);
	g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func((GDestroyNotify)json_node_unref);
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	struct vt_tiers now = d->host.tiers;	/* the host config stays as at start */
	struct vt_metrics_host mh = {
		.name = g_get_host_name(), .tiers = &now, .ctier = d->host.ctier,
		.nr_ctier = d->host.nr_ctier, .share_on = d->host.share.on,
		.share_budget = d->host.share.budget, .share_granted = d->share.last.sum,
		.share_waiting = d->share.waiting, .share_rounds = d->share.rounds,
		.share_nodes = d->host.share.nr_nodes,
	};
	struct vt_metrics_daemon dm = {
		.libvirt = d->libvirt != NULL,
		.libvirt_connected = vt_libvirt_connected(d->libvirt),
		.host = &mh,
	};

	for (unsigned int k = 0; k < mh.share_nodes; k++) {
		mh.share_node[k] = d->host.share.node[k];
		mh.share_node_budget[k] = d->host.share.node_budget[k];
		mh.share_node_granted[k] = d->share.node_last[k].sum;
		mh.share_node_waiting[k] = d->share.node_waiting[k];
	}
	/* MemFree of each node, read as `vtierctl tiers` reads it */
	vt_tiers_refresh(&now);

	for (GList *l = list; l; l = l->next, i++) {
		struct vt_vm *vm = l->data;
		g_autoptr(JsonBuilder) sb = json_builder_new(), rb = json_builder_new();
		JsonNode *s, *r;
		uint64_t ram;

		/* the same objects as vtierctl stats and report, each read under the VM's lock */
		vt_vm_stats_to_json(vm, &d->host.tiers, sb);
		vt_vm_report_to_json(vm, rb);
		s = json_builder_get_root(sb);
		r = json_builder_get_root(rb);
		g_ptr_array_add(keep, s);
		g_ptr_array_add(keep, r);
		g_mutex_lock(&vm->lock);
		g_ptr_array_add(names, g_strdup(vm->domain_uuid[0] ? vm->domain_name : vm->name));
		g_ptr_array_add(names, g_strdup(vm->domain_uuid));
		ram = vm->ram_bytes;
		g_mutex_unlock(&vm->lock);
		vms[i] = (struct vt_metrics_vm){
			.ram_bytes = ram,
			.vm = vm->name,
			.domain = g_ptr_array_index(names, names->len - 2),
			.uuid = g_ptr_array_index(names, names->len - 1),
			.stats = JSON_NODE_HOLDS_OBJECT(s) ? json_node_get_object(s) : NULL,
			.report = JSON_NODE_HOLDS_OBJECT(r) ? json_node_get_object(r) : NULL,
		};
	}
	return vt_metrics_write(&dm, vms, n);
}
