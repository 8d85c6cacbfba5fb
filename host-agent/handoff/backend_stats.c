// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A backend's numbers: its stats as JSON (vtierctl stats, metrics), its
 * compressed tiers' measures for the tier model, the STATS message to QEMU.
 */
#include <errno.h>

#include "json_member.h"
#include "remote_client.h"
#include "backend.h"
#include "vm.h"

/*
 * A latency histogram for Prometheus (daemon/metrics.c): {le_ns[], count[]
 * (cumulative, samples known to be <= le_ns), total, sum_ns (estimated from
 * bucket midpoints)}.
 */
static void fault_histogram(JsonBuilder *j, const char *name, const struct vt_latency_hist *h)
{
	static const uint64_t le_ns[] = {
		1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000,
		1000000, 2000000, 5000000, 10000000, 50000000, 100000000, 1000000000,
	};

	vt_json_begin_obj(j, name);
	vt_json_begin_arr(j, "le_ns");
	for (unsigned int i = 0; i < G_N_ELEMENTS(le_ns); i++)
		json_builder_add_int_value(j, (gint64)le_ns[i]);
	json_builder_end_array(j);
	vt_json_begin_arr(j, "count");
	for (unsigned int i = 0; i < G_N_ELEMENTS(le_ns); i++)
		json_builder_add_int_value(j, (gint64)vt_latency_count_le(h, le_ns[i]));
	json_builder_end_array(j);
	vt_json_add_u64(j, "total", h->count);
	vt_json_add_u64(j, "sum_ns", vt_latency_sum_estimate(h));
	json_builder_end_object(j);
}

/*
 * vtierd's own end of a remote tier, as its transport says: what runs
 * (afxdp-copy, afxdp-zerocopy, udp), why not AF_XDP in auto mode, its knobs
 * in effect and its counters.
 */
static void end_to_json(const struct vt_rt_stats *rt, JsonBuilder *j)
{
	vt_json_begin_obj(j, "end");
	vt_json_add_str(j, "mode", rt->mode ? rt->mode : "");
	vt_json_add_str(j, "fallback", rt->fallback);
	vt_json_add_bool(j, "busy_poll", rt->busy_poll);
	vt_json_add_bool(j, "need_wakeup", rt->need_wakeup);
	vt_json_add_bool(j, "xdp_native", rt->xdp_native);
	vt_json_add_u64(j, "queues", rt->queues);
	vt_json_add_u64(j, "rx", rt->rx);
	vt_json_add_u64(j, "tx", rt->tx);
	vt_json_add_u64(j, "rx_dropped", rt->rx_dropped);
	vt_json_add_u64(j, "tx_busy", rt->tx_busy);
	vt_json_add_u64(j, "tx_unresolved", rt->tx_unresolved);
	json_builder_end_object(j);
}

/* A remote tier's client: its servers and copies (the last upkeep's figures). */
static void remote_to_json(struct vt_backend *b, unsigned int tier,
			   const struct vt_store_tier_stats *ts, JsonBuilder *j)
{
	const struct vt_host_config *h = b->d->host;
	struct vt_rc_server_stats srv[VT_RC_MAX_SERVERS];
	struct vt_rc_stats st;
	struct vt_rt_stats rt;
	int n;

	if (tier >= h->nr_ctier || h->ctier[tier].medium != VT_MEDIUM_REMOTE || !b->store)
		return;
	n = vt_store_remote_stats(b->store, tier, &st, srv, VT_RC_MAX_SERVERS);
	vt_json_begin_obj(j, "remote");
	vt_json_add_u64(j, "copies", h->remote[tier].rc.copies);
	vt_json_add_str(j, "transport", h->remote[tier].rc.transport.mode == VT_RT_UDP ? "udp" :
			 h->remote[tier].rc.transport.mode == VT_RT_AFXDP ? "afxdp" : "auto");
	if (vt_store_remote_transport(b->store, tier, &rt) == 0)
		end_to_json(&rt, j);
	if (h->remote[tier].local_copy[0]) {
		/* copies = 1: the second copy in a local compressed tier, its memory */
		vt_json_add_str(j, "local_copy", h->remote[tier].local_copy);
		vt_json_add_u64(j, "local_copy_pages", ts->local_copy_pages);
		vt_json_add_u64(j, "local_copy_bytes", ts->local_copy_bytes);
		vt_json_add_u64(j, "local_copy_reads", ts->local_copy_reads);
	}
	if (n >= 0) {
		vt_json_add_u64(j, "pages", st.pages);
		vt_json_add_u64(j, "under_copies", st.under_copies);
		vt_json_add_u64(j, "get_fallbacks", st.get_fallbacks);
		vt_json_add_u64(j, "damaged", st.damaged);
		vt_json_add_u64(j, "repaired", st.repaired);
		vt_json_add_u64(j, "lost_pages", st.lost_pages);
		vt_json_add_u64(j, "servers_up", st.servers_up);
		vt_json_add_u64(j, "fetch_p50_ns", vt_latency_percentile(&st.get_ns, 50));
		vt_json_add_u64(j, "fetch_p99_ns", vt_latency_percentile(&st.get_ns, 99));
	}
	vt_json_begin_arr(j, "servers");
	for (int i = 0; i < (int)h->remote[tier].rc.nr_servers; i++) {
		char name[VT_RC_SERVER_NAME_LEN];

		vt_rc_server_name(&h->remote[tier].rc.server[i], name, sizeof(name));
		json_builder_begin_object(j);
		vt_json_add_str(j, "server", name);
		if (i < n) {
			vt_json_add_str(j, "state", vt_rc_state_name(srv[i].state));
			vt_json_add_u64(j, "pages", srv[i].pages);
			vt_json_add_u64(j, "requests", srv[i].requests);
			vt_json_add_u64(j, "retries", srv[i].retries);
			vt_json_add_u64(j, "timeouts", srv[i].timeouts);
			vt_json_add_u64(j, "bad_replies", srv[i].bad_replies);
			vt_json_add_u64(j, "refused_pages", srv[i].refused_pages);
			vt_json_add_u64(j, "lost", srv[i].lost);
			vt_json_add_u64(j, "regained", srv[i].regained);
			vt_json_add_u64(j, "emptied", srv[i].emptied);
			vt_json_add_u64(j, "rtt_p50_ns", vt_latency_percentile(&srv[i].rtt, 50));
		} else {
			vt_json_add_str(j, "state", "unknown");	/* no upkeep yet */
		}
		json_builder_end_object(j);
	}
	json_builder_end_array(j);
	json_builder_end_object(j);
}

void vt_backend_remote_watch(struct vt_backend *b)
{
	const struct vt_host_config *h = b->d->host;

	for (unsigned int t = 0; t < h->nr_ctier && b->store; t++) {
		struct vt_rc_server_stats srv[VT_RC_MAX_SERVERS];
		struct vt_rc_stats st;
		int n;

		if (h->ctier[t].medium != VT_MEDIUM_REMOTE)
			continue;
		n = vt_store_remote_stats(b->store, t, &st, srv, VT_RC_MAX_SERVERS);
		for (int i = 0; i < n && i < VT_RC_MAX_SERVERS; i++) {
			char name[VT_RC_SERVER_NAME_LEN];

			vt_rc_server_name(&h->remote[t].rc.server[i], name, sizeof(name));
			if (srv[i].lost > b->remote_seen[t][i].lost)
				g_warning("remote tier %s: server %s lost (%u requests in a row "
					  "unanswered): %s", h->ctier[t].name, name, VT_RC_DOWN_AFTER,
					  h->remote[t].local_copy[0] ?
					  "its pages are read from their local copies" :
					  "its copies are read from the others and re-created on them");
			if (srv[i].regained > b->remote_seen[t][i].regained)
				g_message("remote tier %s: server %s regained%s", h->ctier[t].name,
					  name, srv[i].emptied > b->remote_seen[t][i].emptied ?
					  " empty (restarted): its old copies forgotten" : "");
			b->remote_seen[t][i].lost = srv[i].lost;
			b->remote_seen[t][i].regained = srv[i].regained;
			b->remote_seen[t][i].emptied = srv[i].emptied;
		}
	}
}

void vt_backend_stats_to_json(struct vt_backend *b, JsonBuilder *j)
{
	struct vt_store_tier_stats ts[VT_CTIER_MAX];
	struct vt_ctier_mover_stats ms = { 0 };
	unsigned int n = b->store ? vt_store_stats(b->store, ts, VT_CTIER_MAX) : 0;

	if (b->mover)
		vt_ctier_mover_get_stats(b->mover, &ms);
	json_builder_begin_object(j);
	vt_json_add_str(j, "backend", b->id);
	vt_json_add_u64(j, "qemu_pid", (uint64_t)b->pid);
	vt_json_add_u64(j, "size", b->size);
	vt_json_add_u64(j, "generation", b->generation);
	vt_json_add_str(j, "store", b->store_dir);
	vt_json_add_u64(j, "faults_stored", ms.faults_stored);
	vt_json_add_u64(j, "faults_zero", ms.faults_zero);
	vt_json_add_u64(j, "zero_filled_around", ms.zero_filled_around);
	vt_json_add_u64(j, "stored_ahead", ms.stored_ahead);
	vt_json_add_u64(j, "faults_wp", ms.faults_wp);
	vt_json_add_u64(j, "fault_p50_ns", vt_latency_percentile(&ms.fault_ns, 50));
	vt_json_add_u64(j, "fault_p99_ns", vt_latency_percentile(&ms.fault_ns, 99));
	vt_json_add_u64(j, "zero_fault_p50_ns", vt_latency_percentile(&ms.zero_ns, 50));
	vt_json_add_u64(j, "idle_faults", ms.idle_fault_ns.count);
	vt_json_add_u64(j, "idle_fault_p50_ns", vt_latency_percentile(&ms.idle_fault_ns, 50));
	vt_json_add_u64(j, "idle_fault_p99_ns", vt_latency_percentile(&ms.idle_fault_ns, 99));
	fault_histogram(j, "fault_hist", &ms.fault_ns);
	fault_histogram(j, "zero_fault_hist", &ms.zero_ns);
	vt_json_add_u64(j, "poisoned", ms.poisoned);
	vt_json_add_u64(j, "faults_waited", ms.faults_waited);
	vt_json_add_u64(j, "faults_waiting", ms.waiting_now);
	vt_json_add_u64(j, "remote_repaired", ms.remote_repaired);
	vt_json_add_u64(j, "evicted", ms.evicted);
	vt_json_add_u64(j, "evict_e2big", ms.evict_e2big);
	vt_json_add_u64(j, "evict_busy", ms.evict_busy);
	vt_json_add_u64(j, "evict_absent", ms.evict_absent);
	vt_json_add_u64(j, "evict_nospc", ms.evict_nospc);
	vt_json_add_u64(j, "evict_failed", ms.evict_failed);
	vt_json_add_u64(j, "fetched", ms.fetched);
	vt_json_add_u64(j, "zero_repunched", ms.zero_repunched);
	vt_json_add_u64(j, "read_through", ms.read_through);
	vt_json_add_u64(j, "read_repunched", ms.read_repunched);
	vt_json_add_u64(j, "read_dirtied", ms.read_dirtied);
	vt_json_add_u64(j, "repunch_runs", ms.repunch_runs);
	vt_json_add_u64(j, "reads_early", ms.reads_early);
	vt_json_add_u64(j, "reads_waits", ms.reads_waits);
	vt_json_add_u64(j, "reads_untracked", ms.reads_untracked);
	vt_json_add_u64(j, "read_around", ms.read_around);
	vt_json_add_u64(j, "evict_read_held", ms.evict_read_held);
	vt_json_add_bool(j, "zero_map", b->zero_map != NULL);
	vt_json_add_u64(j, "zero_map_set", ms.zero_map_set);
	vt_json_add_bool(j, "send_map", b->send_map != NULL);
	vt_json_add_u64(j, "evict_runs", ms.evict_runs);
	vt_json_add_u64(j, "discard_runs", ms.discard_runs);
	vt_json_add_u64(j, "discarded_resident_bytes", ms.discarded_resident_bytes);
	vt_json_add_u64(j, "discarded_stored_pages", ms.discarded_stored_pages);
	vt_json_add_u64(j, "evict_ns", ms.evict_ns);
	vt_json_add_u64(j, "evict_protect_ns", ms.evict_protect_ns);
	vt_json_add_u64(j, "evict_store_ns", ms.evict_store_ns);
	vt_json_add_u64(j, "evict_punch_ns", ms.evict_punch_ns);
	vt_json_add_u64(j, "span_faults", ms.span_faults);
	vt_json_add_u64(j, "span_faults_ns", ms.span_faults_ns);
	vt_json_add_u64(j, "fence_waits", ms.fence_waits);
	vt_json_add_u64(j, "fence_wait_ns", ms.fence_wait_ns);
	vt_json_add_u64(j, "prepared_pages", ms.prepared_pages);
	vt_json_add_u64(j, "prepared_bytes", ms.prepared_bytes);
	vt_json_add_u64(j, "prepared_ns", ms.prepared_ns);
	vt_json_add_u64(j, "prepared_used", ms.prepared_used);
	vt_json_add_u64(j, "prepared_stale", ms.prepared_stale);
	vt_json_add_u64(j, "fetch_ns", ms.fetch_ns);
	vt_json_add_u64(j, "backlog", b->mover ? vt_ctier_mover_backlog(b->mover) : 0);
	vt_json_add_u64(j, "reconciled", b->reconciled);
	vt_json_add_u64(j, "index_bytes", b->store ? vt_store_index_bytes(b->store) : 0);
	/* what it is charged, and the hand-off budget as the host has it (refusals per bound) */
	vt_json_begin_obj(j, "charged");
	for (unsigned int i = 0; i < VT_BOUND_NR; i++)
		vt_json_add_u64(j, vt_bound_key(i), b->ticket.c.v[i]);
	json_builder_end_object(j);
	vt_json_key(j, "handoff_budget");
	vt_budget_to_json(b->d->budget, j);
	vt_json_begin_arr(j, "ctiers");
	for (unsigned int i = 0; i < n; i++) {
		json_builder_begin_object(j);
		vt_json_add_str(j, "name", ts[i].name);
		vt_json_add_u64(j, "pages", ts[i].pages);
		vt_json_add_u64(j, "stored_bytes", ts[i].pages * b->page_size);
		vt_json_add_u64(j, "zero_pages", ts[i].zero_pages);
		vt_json_add_u64(j, "same_pages", ts[i].same_pages);
		vt_json_add_u64(j, "compressed_bytes", ts[i].compressed_bytes);
		vt_json_add_u64(j, "pool_bytes", ts[i].pool_bytes);
		vt_json_add_u64(j, "metadata_bytes", ts[i].metadata_bytes);
		vt_json_add_u64(j, "rejected_e2big", ts[i].rejected_e2big);
		vt_json_add_u64(j, "rejected_memo", ts[i].rejected_memo);
		vt_json_add_u64(j, "bad_checksum", ts[i].bad_checksum);
		vt_json_add_u64(j, "puts", ts[i].puts);
		vt_json_add_u64(j, "gets", ts[i].gets);
		vt_json_add_u64(j, "compress_ns", ts[i].compress_ns);
		vt_json_add_u64(j, "decompress_ns", ts[i].decompress_ns);
		remote_to_json(b, i, &ts[i], j);
		json_builder_end_object(j);
	}
	json_builder_end_array(j);
	json_builder_end_object(j);
}

void vt_backend_ctier_measure(struct vt_backend *b, struct vt_ctier_measured *meas,
			      struct vt_latency_hist *hist, unsigned int nr)
{
	struct vt_store_tier_stats ts[VT_CTIER_MAX];
	g_autofree struct vt_ctier_mover_stats *ms = g_new0(struct vt_ctier_mover_stats, 1);
	unsigned int n;

	g_mutex_lock(&b->lock);
	n = b->store ? vt_store_stats(b->store, ts, VT_CTIER_MAX) : 0;
	if (b->mover)
		vt_ctier_mover_get_stats(b->mover, ms);
	g_mutex_unlock(&b->lock);
	for (unsigned int i = 0; i < MIN(n, nr); i++) {
		meas[i].stored_bytes += ts[i].pages * b->page_size;
		meas[i].compressed_bytes += ts[i].pool_bytes + ts[i].metadata_bytes;
		meas[i].local_copy_bytes += ts[i].local_copy_bytes;
		meas[i].faults += ms->faults_by_tier[i];
		hist[i].count += ms->tier_ns[i].count;
		for (unsigned int k = 0; k < VT_LAT_BUCKETS; k++)
			hist[i].bucket[k] += ms->tier_ns[i].bucket[k];
	}
}

int vt_backend_send_stats(struct vt_backend *b)
{
	struct vt_store_tier_stats ts[VT_CTIER_MAX];
	struct vtier_handoff_tier_v2 tiers[VTIER_HANDOFF_TIERS_MAX] = { 0 };
	g_autofree struct vt_ctier_mover_stats *ms = g_new0(struct vt_ctier_mover_stats, 1);
	struct vtier_handoff_stats st = { 0 };
	unsigned int n;
	uint64_t stored = 0, pool = 0;
	int ret;

	if (!b->conn || !b->store || !b->mover)
		return -ENOTCONN;
	/* the VM's report as `vtierctl report` shows it (the whole VM, as of its last window) */
	ret = b->vm ? vt_vm_report_to_wire(b->vm, &b->tco, b->tco_tiers) : -ENODATA;
	if (ret != -EBUSY)
		b->have_tco = !ret;
	n = MIN(vt_store_stats(b->store, ts, VT_CTIER_MAX), VTIER_HANDOFF_TIERS_MAX - 1);
	vt_ctier_mover_get_stats(b->mover, ms);
	for (unsigned int i = 0; i < n; i++) {
		struct vtier_handoff_tier_v2 *t = &tiers[i + 1];

		g_strlcpy(t->name, ts[i].name, sizeof(t->name));
		t->resident_bytes = t->stored_bytes = ts[i].pages * b->page_size;
		t->compressed_bytes = ts[i].pool_bytes;
		t->pages_evicted = i < VT_CTIER_MAX ? ms->evicted_by_tier[i] : 0;
		t->pages_faulted_back = i < VT_CTIER_MAX ? ms->faults_by_tier[i] : 0;
		t->fault_latency_p50_ns = vt_latency_percentile(&ms->tier_ns[i], 50);
		t->fault_latency_p99_ns = vt_latency_percentile(&ms->tier_ns[i], 99);
		stored += t->stored_bytes;
		pool += t->compressed_bytes;
	}
	/* the rest of the backend is in memory (on whichever NUMA nodes) */
	g_strlcpy(tiers[0].name, "memory", sizeof(tiers[0].name));
	tiers[0].resident_bytes = b->size - MIN(stored, b->size);
	st.agent_time_ns = (uint64_t)g_get_monotonic_time() * 1000;
	st.faults_served = ms->faults_stored + ms->faults_zero + ms->faults_wp;
	st.promotions = ms->fetched + ms->faults_stored;
	st.demotions = ms->evicted;
	st.compressed_bytes = pool;
	st.n_tiers = n + 1;
	/* the VM's migration as its last window left it */
	ret = b->vm ? vt_migration_to_wire(b->vm, &b->migration) : -ENODATA;
	if (ret != -EBUSY)
		b->have_migration = !ret;
	return vt_handoff_conn_send_stats_tco(b->conn, &st, tiers, b->have_tco ? &b->tco : NULL,
					      b->tco_tiers,
					      b->have_migration ? &b->migration : NULL);
}
