// SPDX-License-Identifier: GPL-2.0-or-later
/* vtier-memd's Prometheus series (memd_metrics.h), in util/prom_text.h's format. */
#include <stdio.h>
#include <arpa/inet.h>

#include <glib.h>

#include "memd_metrics.h"
#include "prom_text.h"

/* Names of a namespace's drops (struct vt_rs_ns_stats.drops), as vt_rp_stat has them. */
static const char *const ns_drop_name[VT_RP_DROP_COUNT] = {
	[VT_RP_DROP_REPLAYED] = "replayed", [VT_RP_DROP_EXPIRED] = "expired",
	[VT_RP_DROP_MALFORMED] = "malformed", [VT_RP_DROP_OVER_CAP] = "over_cap",
};

/* The per-namespace and per-client families: one sample each, in the order given. */
enum ns_family { NS_PAGES, NS_BYTES, NS_PUTS, NS_GETS, NS_FREES, NS_DROPS, NS_NR };
enum cl_family { CL_NAMESPACES, CL_PAGES, CL_BYTES, CL_OVER_CAP, CL_NR };

static const struct family {
	const char *name, *type, *help;
} ns_families[NS_NR] = {
	[NS_PAGES] = { "vtier_memd_namespace_pages", "gauge",
		       "Pages a namespace (one VM's, label its id in hex) holds." },
	[NS_BYTES] = { "vtier_memd_namespace_bytes", "gauge", "Bytes a namespace holds, as "
		       "charged against the caps (sealed pages and 64 bytes each)." },
	[NS_PUTS] = { "vtier_memd_namespace_stored_pages_total", "counter",
		      "Pages stored into a namespace." },
	[NS_GETS] = { "vtier_memd_namespace_served_pages_total", "counter",
		      "Pages of a namespace served to its client." },
	[NS_FREES] = { "vtier_memd_namespace_freed_pages_total", "counter",
		       "Pages of a namespace freed (FREE, RESET, BYE)." },
	[NS_DROPS] = { "vtier_memd_namespace_refused_total", "counter", "A namespace's refusals "
		       "by reason: requests replayed, expired or malformed, pages over a cap "
		       "(ENOSPC)." },
}, cl_families[CL_NR] = {
	[CL_NAMESPACES] = { "vtier_memd_client_namespaces", "gauge",
			    "Namespaces a client address created and still has." },
	[CL_PAGES] = { "vtier_memd_client_pages", "gauge",
		       "Pages all namespaces of a client address hold." },
	[CL_BYTES] = { "vtier_memd_client_bytes", "gauge", "Bytes all namespaces of a client "
		       "address hold, as charged against the client cap." },
	[CL_OVER_CAP] = { "vtier_memd_client_over_cap_pages_total", "counter", "Pages of a "
			  "client address refused (ENOSPC) by the client cap; gone with its last "
			  "namespace." },
};

static void ns_sample(GString *out, int family, const struct vt_rs_ns_stats *s)
{
	const char *name = ns_families[family].name;
	char hex[2 * VT_RP_NS_BYTES + 1];
	const uint64_t v[NS_DROPS] = { s->pages, s->bytes, s->puts, s->gets, s->frees };

	for (unsigned int i = 0; i < VT_RP_NS_BYTES; i++)
		g_snprintf(hex + 2 * i, 3, "%02x", s->ns[i]);
	if (family != NS_DROPS) {
		vt_prom_line(out, name, (double)v[family], "namespace", hex, NULL);
		return;
	}
	for (unsigned int r = 0; r < VT_RP_DROP_COUNT; r++)
		vt_prom_line(out, name, (double)s->drops[r], "namespace", hex, "reason",
			     ns_drop_name[r], NULL);
}

static void client_sample(GString *out, int family, const struct vt_rs_client_stats *s)
{
	const uint64_t v[CL_NR] = { s->namespaces, s->pages, s->bytes, s->over_cap };
	char addr[INET_ADDRSTRLEN];
	uint32_t a = htonl(s->addr);	/* the transport's peer address: host order */

	inet_ntop(AF_INET, &a, addr, sizeof(addr));
	vt_prom_line(out, cl_families[family].name, (double)v[family], "client", addr, NULL);
}

/* A family of one sample without labels. */
static void single(GString *out, const char *name, const char *type, const char *help,
		   double value)
{
	vt_prom_family(out, name, type, help);
	vt_prom_line(out, name, value, NULL);
}

static void transport(GString *out, const struct vt_rt_stats *t, uint64_t tx_lost)
{
	const struct {
		const char *name, *help;
		uint64_t v;
	} c[] = {
		{ "vtier_memd_transport_rx_datagrams_total", "Datagrams received.", t->rx },
		{ "vtier_memd_transport_tx_datagrams_total", "Datagrams sent.", t->tx },
		{ "vtier_memd_transport_rx_dropped_datagrams_total", "Datagrams lost on receive "
		  "(every reason summed: refused headers, too big, dropped by the kernel).",
		  t->rx_dropped },
		{ "vtier_memd_transport_rx_too_big_datagrams_total", "Datagrams dropped on receive: "
		  "larger than a request can be.", t->rx_too_big },
		{ "vtier_memd_transport_rx_kernel_dropped_datagrams_total", "AF_XDP: datagrams the "
		  "kernel dropped (XDP_STATISTICS rx_dropped, rx ring full, fill ring empty).",
		  t->rx_kernel_dropped },
		{ "vtier_memd_transport_tx_busy_datagrams_total", "Datagrams not sent: tx ring full, "
		  "no frame free, EAGAIN.", t->tx_busy },
		{ "vtier_memd_transport_tx_refused_datagrams_total", "Datagrams the transport "
		  "refused to send (too large, bad peer).", t->tx_refused },
		{ "vtier_memd_transport_tx_unresolved_datagrams_total", "AF_XDP: datagrams lost while "
		  "the kernel resolved the peer's MAC.", t->tx_unresolved },
		{ "vtier_memd_transport_tx_lost_replies_total", "Replies the transport did not take "
		  "(the client asks again).", tx_lost },
	};

	vt_prom_family(out, "vtier_memd_transport_info", "gauge", "The transport serving, by mode "
		       "(afxdp-copy, afxdp-zerocopy, udp) and knobs; fallback: AF_XDP was asked "
		       "for (auto) and could not be set up.");
	vt_prom_line(out, "vtier_memd_transport_info", 1, "mode", t->mode, "need_wakeup",
		     t->need_wakeup ? "1" : "0", "busy_poll", t->busy_poll ? "1" : "0",
		     "xdp_native", t->xdp_native ? "1" : "0", "fallback", t->fallback[0] ? "1" : "0",
		     NULL);
	vt_prom_family(out, "vtier_memd_transport_queues", "gauge",
		       "AF_XDP sockets (one per rx queue); 1 on UDP.");
	vt_prom_line(out, "vtier_memd_transport_queues", t->queues, "mode", t->mode, NULL);
	for (unsigned int i = 0; i < G_N_ELEMENTS(c); i++) {
		vt_prom_family(out, c[i].name, "counter", c[i].help);
		vt_prom_line(out, c[i].name, (double)c[i].v, "mode", t->mode, NULL);
	}
	vt_prom_family(out, "vtier_memd_transport_rx_refused_datagrams_total", "counter",
		       "Datagrams whose frame headers the transport refused, by reason.");
	for (unsigned int r = 0; r < VT_RF_NR; r++)
		if (r != VT_RF_OK)
			vt_prom_line(out, "vtier_memd_transport_rx_refused_datagrams_total",
				     (double)t->rx_refused[r], "mode", t->mode, "reason",
				     vt_rf_verdict_name(r), NULL);
}

static void server(GString *out, const struct vt_rs_stats *s)
{
	const struct {
		const char *name, *type, *help;
		uint64_t v;
	} c[] = {
		{ "vtier_memd_rx_datagrams_total", "counter", "Datagrams given to the server's "
		  "protocol (after the transport).", s->rx },
		{ "vtier_memd_tx_datagrams_total", "counter", "Reply datagrams the server made.",
		  s->tx },
		{ "vtier_memd_namespaces", "gauge", "Namespaces (VMs) held.", s->namespaces },
		{ "vtier_memd_clients", "gauge", "Client addresses holding a namespace.", s->clients },
		{ "vtier_memd_pages", "gauge", "Pages held, all namespaces.", s->pages },
		{ "vtier_memd_bytes", "gauge", "Bytes held, all namespaces, as charged against the "
		  "caps (sealed pages and 64 bytes each).", s->bytes },
		{ "vtier_memd_reassembly_bytes", "gauge", "Bytes in partial (fragmented) requests.",
		  s->reasm_bytes },
		{ "vtier_memd_over_cap_pages_total", "counter", "Pages refused ENOSPC by any cap "
		  "(namespace, client or server); never an eviction.", s->over_cap },
		{ "vtier_memd_over_client_cap_pages_total", "counter", "Of those, pages the client "
		  "cap refused (the namespace and the server had room), all addresses.",
		  s->client_over_cap },
		{ "vtier_memd_resets_total", "counter", "HELLOs with RESET: a namespace emptied.",
		  s->resets },
		{ "vtier_memd_byes_total", "counter", "HELLOs with BYE: a namespace forgotten.",
		  s->byes },
		{ "vtier_memd_byes_unknown_total", "counter", "HELLOs with BYE for a namespace not "
		  "held (nothing done).", s->byes_unknown },
		{ "vtier_memd_expired_requests_total", "counter", "Partial requests expired before "
		  "their last fragment.", s->expired },
	};

	for (unsigned int i = 0; i < G_N_ELEMENTS(c); i++)
		single(out, c[i].name, c[i].type, c[i].help, (double)c[i].v);
	vt_prom_family(out, "vtier_memd_cap_bytes", "gauge", "The caps, bytes: per namespace, "
		       "per client address (all its namespaces), for the server.");
	vt_prom_line(out, "vtier_memd_cap_bytes", (double)s->ns_cap, "cap", "namespace", NULL);
	vt_prom_line(out, "vtier_memd_cap_bytes", (double)s->client_cap, "cap", "client", NULL);
	vt_prom_line(out, "vtier_memd_cap_bytes", (double)s->server_cap, "cap", "server", NULL);
	vt_prom_family(out, "vtier_memd_hellos_total", "counter", "HELLOs answered, by outcome: "
		       "ok, refused (a known namespace, another key), ns_full (the server's "
		       "namespaces), ns_addr_full (the address's share of them).");
	vt_prom_line(out, "vtier_memd_hellos_total", (double)s->hello_ok, "outcome", "ok", NULL);
	vt_prom_line(out, "vtier_memd_hellos_total", (double)s->hello_refused, "outcome",
		     "refused", NULL);
	vt_prom_line(out, "vtier_memd_hellos_total", (double)s->ns_full, "outcome", "ns_full",
		     NULL);
	vt_prom_line(out, "vtier_memd_hellos_total", (double)s->ns_addr_full, "outcome",
		     "ns_addr_full", NULL);
	vt_prom_family(out, "vtier_memd_dropped_datagrams_total", "counter", "Datagrams the "
		       "server dropped, by reason (forged, replayed, unknown_ns, malformed "
		       "fields: docs/reference/remote-protocol.md).");
	for (unsigned int r = 1; r < VT_RP_R_COUNT; r++)
		vt_prom_line(out, "vtier_memd_dropped_datagrams_total", (double)s->drops[r],
			     "reason", vt_rp_reason_name(r), NULL);
}

char *vt_memd_metrics_text(const struct vt_memd_snapshot *snap, const char *version)
{
	GString *out = g_string_new(NULL);

	vt_prom_family(out, "vtier_memd_build_info", "gauge", "vtier-memd's version.");
	vt_prom_line(out, "vtier_memd_build_info", 1, "version", version, NULL);
	single(out, "vtier_memd_start_time_seconds", "gauge", "When vtier-memd started, Unix "
	       "seconds.", snap->start_time);
	single(out, "vtier_memd_uptime_seconds", "gauge", "Seconds since vtier-memd started.",
	       snap->uptime);
	single(out, "vtier_memd_stats_snapshot_seconds", "gauge", "Time the serving thread spent "
	       "copying the counters for the files' last write: requests waited that long.",
	       (double)snap->take_ns / 1e9);
	single(out, "vtier_memd_stats_snapshot_max_seconds", "gauge", "The longest such copy "
	       "since vtier-memd started.", (double)snap->take_max_ns / 1e9);
	single(out, "vtier_memd_stats_write_seconds", "gauge", "Time the writer thread took for "
	       "the files' last write (render, write, rename); requests do not wait for it.",
	       (double)snap->write_ns / 1e9);
	single(out, "vtier_memd_stats_write_max_seconds", "gauge", "The longest such write since "
	       "vtier-memd started.", (double)snap->write_max_ns / 1e9);
	transport(out, &snap->t, snap->tx_lost);
	server(out, &snap->s);
	for (int f = 0; f < NS_NR; f++) {
		vt_prom_family(out, ns_families[f].name, ns_families[f].type, ns_families[f].help);
		for (guint i = 0; i < snap->ns->len; i++)
			ns_sample(out, f, &g_array_index(snap->ns, struct vt_rs_ns_stats, i));
	}
	for (int f = 0; f < CL_NR; f++) {
		vt_prom_family(out, cl_families[f].name, cl_families[f].type, cl_families[f].help);
		for (guint i = 0; i < snap->clients->len; i++)
			client_sample(out, f,
				      &g_array_index(snap->clients, struct vt_rs_client_stats, i));
	}
	return g_string_free(out, FALSE);
}
