// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A VM as JSON for the control socket (docs/abi-control.md): its status, its
 * engine's stats and its memory TCO report. The main loop calls these; each
 * reads the VM under its lock.
 */
#include <errno.h>
#include <string.h>

#include "json_member.h"
#include "backend.h"
#include "migration.h"
#include "vm.h"
#include "host_share.h"
#include "tlb_stage.h"
#include "vm_json.h"

/*
 * The host's DRAM sharing as the VM's last round left it (present only with
 * a host budget): granted, wanted before the rate limit, its protected min,
 * and why (earned, protected, capped, rate-limited; waiting: not in a round);
 * with per-node budgets, the node whose budget it is.
 */
static void share_to_json(const struct vt_vm_share *sh, JsonBuilder *b)
{
	vt_json_begin_obj(b, "share");
	vt_json_add_str(b, "state", sh->state == VT_VM_SHARE_GRANTED ? "granted" : "waiting");
	if (sh->homed)
		vt_json_add_int(b, "node", sh->node);
	vt_json_add_u64(b, "granted", sh->granted);
	vt_json_add_u64(b, "wanted", sh->wanted);
	vt_json_add_u64(b, "protected", sh->protected_bytes);
	vt_json_add_str(b, "why", sh->state == VT_VM_SHARE_GRANTED ?
			vt_share_why_name((enum vt_share_why)sh->why) : "waiting");
	vt_json_add_u64(b, "rounds", sh->rounds);
	json_builder_end_object(b);
}

/*
 * What the policy's tdp_flush does now: "window" or "never" over a tdp
 * source, "no tdp source" without one (mode=off, damon-kernel).
 */
static const char *tdp_flush_in_effect(const struct vt_vm_tdp_stats *t)
{
	return !t->source ? "no tdp source" : t->flush_window ? "window" : "never";
}

void vt_vm_status_to_json(struct vt_vm *vm, JsonBuilder *b)
{
	g_mutex_lock(&vm->lock);
	json_builder_begin_object(b);
	vt_json_add_str(b, "name", vm->name);
	vt_json_add_str(b, "qmp", vm->qmp_path);
	vt_json_add_u64(b, "pid", (uint64_t)vm->pid);
	vt_json_add_str(b, "qemu", vm->qemu_version);
	vt_json_add_str(b, "state", vm->state);
	vt_json_add_str(b, "profiler", vm->profiler_name);
	vt_json_add_str(b, "profiler_reason", vm->profiler_why);
	vt_json_add_str(b, "tdp_flush", tdp_flush_in_effect(&vm->stats.tdp));
	vt_json_add_str(b, "address_space", vm->space == VT_SPACE_HVA ? "hva" : "gpa");
	/* which path a compressed tier takes for this VM */
	vt_json_add_str(b, "ctier_path", vm->ctier_kind == VT_CTIER_HANDOFF ? "hand-off (userfaultfd + "
		"vtierd's compressed pools)" : vm->ctier_kind == VT_CTIER_ZSWAP ? "zswap (stock QEMU: "
		"process_madvise MADV_PAGEOUT into the host's zswap)" : !vm->host->nr_ctier ?
		"none: no compressed tiers configured" : vm->host->zswap_ok ? "none" :
		vm->host->zswap_why);
	vt_json_add_str(b, "attached_by", vm->by_handoff ? "hand-off" :
			vm->domain_uuid[0] ? "libvirt" : "qmp");
	if (vm->domain_uuid[0]) {
		vt_json_add_str(b, "domain", vm->domain_name);
		vt_json_add_str(b, "domain_uuid", vm->domain_uuid);
	}
	vt_json_add_u64(b, "ram_bytes", vm->ram_bytes);
	vt_json_add_u64(b, "windows", vm->stats.windows);
	vt_json_add_u64(b, "engine_starts", vm->engine_starts);
	vt_json_add_str(b, "last_error", vm->last_error);
	vt_json_add_str(b, "policy_refused", vm->policy_refused);
	vt_json_key(b, "migration");
	vt_migration_status_to_json(vm, b);
	if (vm->share.state != VT_VM_SHARE_OFF)
		share_to_json(&vm->share, b);
	vt_json_key(b, "policy");
	vt_vm_policy_to_json(&vm->policy, b);
	vt_json_begin_arr(b, "gpa_map");
	for (unsigned int i = 0; i < vm->gpa_map->len; i++) {
		const struct vt_gpa_map *g = &g_array_index(vm->gpa_map, struct vt_gpa_map, i);

		json_builder_begin_object(b);
		vt_json_add_u64(b, "gpa", g->gpa);
		vt_json_add_u64(b, "len", g->len);
		vt_json_add_u64(b, "hva", g->hva);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	vt_json_begin_arr(b, "ram");
	for (unsigned int i = 0; i < vm->ram->len; i++) {
		const struct vt_vm_ram *r = &g_array_index(vm->ram, struct vt_vm_ram, i);

		json_builder_begin_object(b);
		vt_json_add_str(b, "backend", r->backend);
		vt_json_add_str(b, "type", r->type);
		vt_json_add_u64(b, "size", r->size);
		vt_json_add_u64(b, "hva", r->hva);
		vt_json_add_u64(b, "page_size", r->page_size);
		vt_json_add_str(b, "policy", r->policy);
		vt_json_add_bool(b, "share", r->share);
		vt_json_add_bool(b, "thp", r->thp);
		vt_json_add_str(b, "mapping", r->mapping);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	json_builder_end_object(b);
	g_mutex_unlock(&vm->lock);
}

static const char *const hint_kinds[VTIER_GUEST_KIND_MAX + 1] = {
	[VTIER_GUEST_FREE] = "free", [VTIER_GUEST_COLD] = "cold", [VTIER_GUEST_HOT] = "hot",
	[VTIER_GUEST_INFLATE] = "inflate", [VTIER_GUEST_DEFLATE] = "deflate",
};

/* The guest hint channel's figures (docs/abi-control.md, "stats"). */
static void hints_to_json(const struct vt_vm *vm, const struct vt_hint_stats *h, JsonBuilder *b)
{
	vt_json_begin_obj(b, "hints");
	vt_json_add_str(b, "channel", !vm->policy.hints ? "off" : h->attached ? "attached" :
		       "not attached");
	vt_json_add_str(b, "error", h->error);
	vt_json_add_u64(b, "refused", h->refused);
	vt_json_add_u64(b, "region_bytes", h->region_bytes);
	vt_json_add_u64(b, "records", h->ch.records);
	for (int pass = 0; pass < 2; pass++) {
		vt_json_begin_obj(b, pass ? "accepted_bytes" : "accepted");
		for (int k = 1; k <= VTIER_GUEST_KIND_MAX; k++)
			vt_json_add_u64(b, hint_kinds[k], pass ? h->ch.accepted_bytes[k] :
				       h->ch.accepted[k]);
		json_builder_end_object(b);
	}
	vt_json_begin_obj(b, "rejected");
	for (int r = 0; r < VT_GHINT_R_COUNT; r++)
		vt_json_add_u64(b, vt_ghint_reject_name(r), h->ch.rejected[r]);
	json_builder_end_object(b);
	vt_json_add_u64(b, "bad_header", h->ch.bad_header);
	vt_json_add_u64(b, "bad_index", h->ch.bad_index);
	vt_json_add_u64(b, "skipped", h->ch.skipped);
	vt_json_add_u64(b, "deferred", h->ch.deferred);
	vt_json_add_u64(b, "guest_balloon_bytes", h->ch.balloon_bytes);
	vt_json_add_u64(b, "balloon_target_bytes", h->balloon_target_bytes);
	vt_json_add_u64(b, "discard_bytes", h->discard_bytes);
	vt_json_add_u64(b, "discard_failed", h->discard_failed);
	vt_json_add_u64(b, "observe_discard_bytes", h->observe_discard_bytes);
	vt_json_add_u64(b, "pageout_bytes", h->pageout_bytes);
	vt_json_add_u64(b, "saved_bytes", h->saved_bytes);
	vt_json_add_u64(b, "cold_hint_bytes", h->cold_hint_bytes);
	vt_json_add_u64(b, "cold_chunks", h->cold_chunks);
	vt_json_add_u64(b, "ack_waits", h->ack_waits);
	vt_json_add_u64(b, "polls", h->polls);
	vt_json_add_u64(b, "cpu_ns", h->cpu_ns);
	vt_json_add_u64(b, "cpu_ns_last", h->cpu_ns_last);
	vt_json_add_u64(b, "cpu_capped", h->cpu_capped);
	json_builder_end_object(b);
}

/* One TLB flush counter: available now, its total, last window, and per GiB moved. */
static void tlb_count_to_json(const char *name, const struct vt_tlb_count *c, JsonBuilder *b)
{
	vt_json_begin_obj(b, name);
	vt_json_add_bool(b, "available", c->ok);
	vt_json_add_u64(b, "total", c->total);
	vt_json_add_u64(b, "last_window", c->last);
	vt_json_add_u64(b, "in_moving_windows", c->moving);
	vt_json_add_u64(b, "moved_bytes", c->moved_bytes);
	vt_json_add_dbl(b, "per_gib_moved", vt_tlb_per_gib(c));
	json_builder_end_object(b);
}

/* stats.tlb: host_tlb_shootdowns is host-wide (every VM and process), the others the VM's. */
static void tlb_to_json(const struct vt_tlb_stats *t, JsonBuilder *b)
{
	vt_json_begin_obj(b, "tlb");
	tlb_count_to_json("host_tlb_shootdowns", &t->host_shootdowns, b);
	tlb_count_to_json("kvm_remote_tlb_flushes", &t->kvm_remote_flushes, b);
	tlb_count_to_json("kvm_remote_tlb_flush_requests", &t->kvm_flush_requests, b);
	json_builder_end_object(b);
}

/* stats.tdp: the tdp source's module and its TLB flushes (policy tdp_flush). */
static void tdp_to_json(const struct vt_vm_tdp_stats *t, JsonBuilder *b)
{
	vt_json_begin_obj(b, "tdp");
	vt_json_add_bool(b, "source", t->source);
	vt_json_add_u64(b, "abi_version", t->abi_version);
	vt_json_add_str(b, "flush", tdp_flush_in_effect(t));
	vt_json_add_u64(b, "flushes", t->flushes);
	vt_json_add_u64(b, "flush_ns", t->flush_ns);
	json_builder_end_object(b);
}

void vt_vm_stats_to_json(struct vt_vm *vm, const struct vt_tiers *tiers, JsonBuilder *b)
{
	const struct vt_vm_stats *s = &vm->stats;

	g_mutex_lock(&vm->lock);
	json_builder_begin_object(b);
	vt_json_add_str(b, "name", vm->name);
	vt_json_add_str(b, "mode", vt_mode_name(vm->policy.mode));
	vt_json_add_str(b, "profiler", vm->profiler_name);
	vt_json_add_u64(b, "windows", s->windows);
	vt_json_add_u64(b, "promotions", s->promotions);
	vt_json_add_u64(b, "demotions", s->demotions);
	vt_json_add_u64(b, "bytes_moved", s->bytes_moved);
	vt_json_add_u64(b, "last_window_bytes", s->last_window_bytes);
	vt_json_add_u64(b, "tco_misplaced_bytes", s->tco_misplaced_bytes);
	vt_json_add_u64(b, "refused_chunks", s->refused_chunks);
	vt_json_add_u64(b, "pages_already_placed", s->pages_already);
	vt_json_add_u64(b, "move_fail_busy", s->move_busy);
	vt_json_add_u64(b, "move_fail_absent", s->move_absent);
	vt_json_add_u64(b, "move_fail_nomem", s->move_nomem);
	vt_json_add_u64(b, "move_fail_other", s->move_other);
	vt_json_add_u64(b, "orders_failed", s->orders_failed);
	vt_json_add_u64(b, "orders_deferred", s->orders_deferred);
	vt_json_add_u64(b, "observe_bytes", s->observe_bytes);
	vt_json_add_u64(b, "thrash_events", s->thrash_events);
	vt_json_add_u64(b, "max_moves_per_chunk", s->max_moves_per_chunk);
	vt_json_add_u64(b, "profiler_regions", s->profiler_regions);
	vt_json_add_u64(b, "profiler_checks", s->profiler_checks);
	vt_json_add_u64(b, "profiler_cpu_ns", s->profiler_cost_ns);
	vt_json_add_u64(b, "residency_cpu_ns", s->residency_cost_ns);
	vt_json_add_u64(b, "policy_cpu_ns", s->policy_cost_ns);
	vt_json_add_u64(b, "mover_cpu_ns", s->mover_cost_ns);
	vt_json_add_u64(b, "hints_cpu_ns", s->hints_cost_ns);
	vt_json_add_dbl(b, "hot_threshold_used", s->threshold);
	vt_json_add_u64(b, "hot_chunks", s->hot_chunks);
	vt_json_add_u64(b, "hot_chunks_on_tier0", s->hot_on_tier0);
	tlb_to_json(&s->tlb, b);
	tdp_to_json(&s->tdp, b);
	vt_json_add_u64(b, "dram_allowance", vt_vm_policy_dram_allowance(&vm->policy, vm->ram_bytes));
	if (vm->share.state != VT_VM_SHARE_OFF)
		share_to_json(&vm->share, b);
	vt_json_begin_arr(b, "tiers");
	for (unsigned int t = 0; t < tiers->nr; t++) {
		json_builder_begin_object(b);
		vt_json_add_str(b, "tier", tiers->tier[t].name);
		vt_json_add_u64(b, "resident_bytes", s->tier[t].resident_bytes);
		vt_json_add_u64(b, "promoted_in", s->tier[t].promoted_in);
		vt_json_add_u64(b, "demoted_in", s->tier[t].demoted_in);
		vt_json_add_u64(b, "bytes_in", s->tier[t].bytes_in);
		json_builder_end_object(b);
	}
	for (unsigned int t = tiers->nr; t < vt_vm_nr_tiers(vm); t++) {
		json_builder_begin_object(b);
		vt_json_add_str(b, "tier", vt_vm_tier_name(vm, t));
		vt_json_add_u64(b, "resident_bytes", s->tier[t].resident_bytes);
		vt_json_add_u64(b, "promoted_in", s->tier[t].promoted_in);
		vt_json_add_u64(b, "demoted_in", s->tier[t].demoted_in);
		vt_json_add_u64(b, "bytes_in", s->tier[t].bytes_in);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	vt_json_begin_arr(b, "backends");
	for (unsigned int i = 0; vm->backends && i < vm->backends->len; i++)
		vt_backend_stats_to_json(g_ptr_array_index(vm->backends, i), b);
	json_builder_end_array(b);
	hints_to_json(vm, &s->hints, b);
	vt_json_key(b, "migration");
	vt_migration_stats_to_json(&s->migration, b);
	vt_json_add_str(b, "migration_state", vt_migration_view_name(vt_migration_view(vm)));
	json_builder_end_object(b);
	g_mutex_unlock(&vm->lock);
}
