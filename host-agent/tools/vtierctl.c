// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtierctl: the operator's CLI for vtierd. Human tables by default, --json
 * for machines (the daemon's reply as is). Exit status: 0 ok, 1 the daemon
 * refused (its reason on stderr), 2 usage or connection error, or a --get KEY
 * the reply lacks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "control_socket.h"
#include "ctl_proto.h"
#include "heatmap.h"
#include "json_guard.h"

static const char usage[] =
	"usage: vtierctl [--socket PATH] [--json | --get KEY...] COMMAND  (options anywhere)\n"
	"  list                          attached VMs\n"
	"  attach QMP_SOCKET [--name NAME] [KEY=VALUE...]\n"
	"  attach --domain NAME [KEY=VALUE...]  a libvirt domain (vtierd --libvirt-uri): its\n"
	"                                metadata's vtier policy, then KEY=VALUE over it\n"
	"  detach VM\n"
	"  status VM                     discovery, profiler and policy of a VM\n"
	"  stats VM                      per-VM and per-tier counters\n"
	"  policy VM [KEY=VALUE...]      show or change the policy (keys: mode, dram_limit,\n"
	"                                dram_max, dram_min, weight, dram_share, budget,\n"
	"                                window_ms, sample_ms, hot_threshold,\n"
	"                                thrash_windows, thrash_step, move_hold, chunk, profiler,\n"
	"                                tdp_flush, ctier_age_windows, placement, tco_alpha,\n"
	"                                tiers, hints, balloon, migration_extra)\n"
	"  tiers                         the host's memory tiers\n"
	"  demote VM tier=NAME [gpa=ADDR len=SIZE]\n"
	"                                move guest RAM (default: all of it) into compressed\n"
	"                                tier NAME now (VMs whose QEMU handed its RAM over)\n"
	"  report VM | --all             memory TCO: bytes and cost per tier, the saving\n"
	"                                against all-DRAM, estimated slowdown (docs/tco.md)\n"
	"  heatmap VM [--svg FILE] [--max]\n"
	"                                hotness by guest-physical address over the last\n"
	"                                windows, with the tiers; --svg draws it into FILE\n"
	"                                (--max: colour by the hottest chunk of each bin)\n";

static gint64 iget(JsonObject *o, const char *k)
{
	return json_object_get_int_member_with_default(o, k, 0);
}

static const char *sget(JsonObject *o, const char *k)
{
	return json_object_get_string_member_with_default(o, k, "");
}

static char *mib(gint64 bytes)
{
	return g_strdup_printf("%.1f", (double)bytes / (1 << 20));
}

static void print_list(JsonArray *a)
{
	printf("%-16s %-8s %-10s %8s  %-13s %s\n", "VM", "PID", "STATE", "RAM MiB", "PROFILER",
	       "QMP");
	for (unsigned int i = 0; i < json_array_get_length(a); i++) {
		JsonObject *o = json_array_get_object_element(a, i);
		g_autofree char *ram = mib(iget(o, "ram_bytes"));

		printf("%-16s %-8" G_GINT64_FORMAT " %-10s %8s  %-13s %s\n", sget(o, "name"),
		       iget(o, "pid"), sget(o, "state"), ram, sget(o, "profiler"), sget(o, "qmp"));
	}
}

static void print_policy(JsonObject *p)
{
	g_autoptr(GList) m = json_object_get_members(p);

	for (GList *l = m; l; l = l->next) {
		JsonNode *n = json_object_get_member(p, l->data);
		g_autofree char *v = json_to_string(n, FALSE);

		printf("  %-16s %s\n", (char *)l->data, v);
	}
}

static void print_status(JsonObject *o)
{
	JsonArray *ram = json_object_get_array_member(o, "ram");

	printf("VM %s: %s, QEMU %s pid %" G_GINT64_FORMAT ", QMP %s\n", sget(o, "name"),
	       sget(o, "state"), sget(o, "qemu"), iget(o, "pid"), sget(o, "qmp"));
	if (*sget(o, "domain"))
		printf("libvirt domain %s (%s)\n", sget(o, "domain"), sget(o, "domain_uuid"));
	printf("profiler: %s (%s), address space %s, %" G_GINT64_FORMAT " windows\n",
	       sget(o, "profiler"), sget(o, "profiler_reason"), sget(o, "address_space"),
	       iget(o, "windows"));
	if (*sget(o, "tdp_flush"))
		printf("tdp TLB flush: %s\n", sget(o, "tdp_flush"));
	if (*sget(o, "last_error"))
		printf("last error: %s\n", sget(o, "last_error"));
	if (*sget(o, "policy_refused"))
		printf("policy refused: %s\n", sget(o, "policy_refused"));
	if (json_object_has_member(o, "migration")) {
		JsonObject *m = json_object_get_object_member(o, "migration");

		printf("migration: %s%s%s\n", sget(m, "state"), *sget(m, "profile") ? "; " : "",
		       sget(m, "profile"));
	}
	if (json_object_has_member(o, "share")) {
		JsonObject *sh = json_object_get_object_member(o, "share");
		g_autofree char *granted = mib(iget(sh, "granted"));
		g_autofree char *wanted = mib(iget(sh, "wanted"));
		g_autofree char *prot = mib(iget(sh, "protected"));

		g_autofree char *node = json_object_has_member(sh, "node") ?
			g_strdup_printf(" of node %" G_GINT64_FORMAT,
					json_object_get_int_member(sh, "node")) : g_strdup("");

		printf("host DRAM share: %s MiB%s (%s; wanted %s MiB, protected %s MiB)\n", granted,
		       node, sget(sh, "why"), wanted, prot);
	}
	printf("%-12s %-22s %9s %18s %7s %-6s %s\n", "BACKEND", "TYPE", "MiB", "HVA", "PAGE",
	       "SHARE", "MAPPING");
	for (unsigned int i = 0; ram && i < json_array_get_length(ram); i++) {
		JsonObject *r = json_array_get_object_element(ram, i);
		g_autofree char *size = mib(iget(r, "size"));

		printf("%-12s %-22s %9s 0x%016" G_GINT64_MODIFIER "x %7" G_GINT64_FORMAT " %-6s %s\n",
		       sget(r, "backend"), sget(r, "type"), size, iget(r, "hva"),
		       iget(r, "page_size"), json_object_get_boolean_member_with_default(r, "share",
											 FALSE) ?
		       "yes" : "no", *sget(r, "mapping") ? sget(r, "mapping") : "(anonymous)");
	}
	printf("policy:\n");
	print_policy(json_object_get_object_member(o, "policy"));
}

/* The guest hint channel: one line per group, every member of each group. */
static void print_hints(JsonObject *h)
{
	static const char *const counters[] = {
		"records", "bad_header", "bad_index", "skipped", "deferred", "discard_bytes",
		"discard_failed", "observe_discard_bytes", "pageout_bytes", "saved_bytes",
		"cold_hint_bytes", "cold_chunks", "guest_balloon_bytes", "balloon_target_bytes",
		"ack_waits", "polls", "cpu_ns", "cpu_ns_last", "cpu_capped",
	};
	static const char *const groups[] = { "accepted", "accepted_bytes", "rejected" };

	if (!h)
		return;
	printf("guest hints: %s%s%s\n", sget(h, "channel"), *sget(h, "error") ? ": " : "",
	       sget(h, "error"));
	if (strcmp(sget(h, "channel"), "attached") != 0)
		return;
	for (unsigned int g = 0; g < G_N_ELEMENTS(groups); g++) {
		JsonObject *o = json_object_get_object_member(h, groups[g]);
		g_autoptr(GList) m = o ? json_object_get_members(o) : NULL;

		printf("  %-22s", groups[g]);
		for (GList *l = m; l; l = l->next)
			printf(" %s=%" G_GINT64_FORMAT, (const char *)l->data, iget(o, l->data));
		printf("\n");
	}
	for (unsigned int i = 0; i < G_N_ELEMENTS(counters); i++)
		printf("  %-22s %" G_GINT64_FORMAT "\n", counters[i], iget(h, counters[i]));
}

/* stats.tlb: each counter's total, last window and flushes per GiB moved, or why none */
static void print_tlb(JsonObject *tlb)
{
	static const char *const counters[] = {
		"host_tlb_shootdowns", "kvm_remote_tlb_flushes", "kvm_remote_tlb_flush_requests",
	};

	for (unsigned int i = 0; i < G_N_ELEMENTS(counters); i++) {
		JsonObject *c;

		if (!json_object_has_member(tlb, counters[i]))
			continue;	/* a daemon before these counters */
		c = json_object_get_object_member(tlb, counters[i]);
		printf("  %-30s total %" G_GINT64_FORMAT ", last window %" G_GINT64_FORMAT
		       ", %.1f per GiB moved%s\n", counters[i], iget(c, "total"),
		       iget(c, "last_window"),
		       json_object_get_double_member_with_default(c, "per_gib_moved", 0),
		       json_object_get_boolean_member_with_default(c, "available", FALSE) ? "" :
		       " (not available now)");
	}
}

static void print_stats(JsonObject *o)
{
	JsonArray *t = json_object_get_array_member(o, "tiers");
	static const char *const counters[] = {
		"windows", "promotions", "demotions", "bytes_moved", "last_window_bytes",
		"move_fail_busy", "move_fail_absent", "move_fail_nomem", "move_fail_other",
		"orders_failed", "orders_deferred",
		"observe_bytes", "thrash_events", "max_moves_per_chunk", "profiler_regions",
		"profiler_checks", "profiler_cpu_ns", "residency_cpu_ns", "policy_cpu_ns",
		"mover_cpu_ns", "hints_cpu_ns", "hot_chunks", "hot_chunks_on_tier0",
		"dram_allowance",
	};

	printf("VM %s: mode %s, profiler %s\n", sget(o, "name"), sget(o, "mode"),
	       sget(o, "profiler"));
	printf("%-10s %14s %12s %11s %12s\n", "TIER", "RESIDENT MiB", "PROMOTED IN",
	       "DEMOTED IN", "MiB IN");
	for (unsigned int i = 0; t && i < json_array_get_length(t); i++) {
		JsonObject *r = json_array_get_object_element(t, i);
		g_autofree char *res = mib(iget(r, "resident_bytes"));
		g_autofree char *in = mib(iget(r, "bytes_in"));

		printf("%-10s %14s %12" G_GINT64_FORMAT " %11" G_GINT64_FORMAT " %12s\n",
		       sget(r, "tier"), res, iget(r, "promoted_in"), iget(r, "demoted_in"), in);
	}
	for (unsigned int i = 0; i < G_N_ELEMENTS(counters); i++)
		printf("  %-22s %" G_GINT64_FORMAT "\n", counters[i], iget(o, counters[i]));
	printf("  %-22s %.3f\n", "hot_threshold_used",
	       json_object_get_double_member_with_default(o, "hot_threshold_used", 0));
	if (json_object_has_member(o, "tlb"))
		print_tlb(json_object_get_object_member(o, "tlb"));
	if (json_object_has_member(o, "tdp")) {
		JsonObject *tdp = json_object_get_object_member(o, "tdp");

		printf("  %-30s %s, ABI %" G_GINT64_FORMAT ", flush %s: %" G_GINT64_FORMAT
		       " flushes, %" G_GINT64_FORMAT " ns\n", "tdp",
		       json_object_get_boolean_member_with_default(tdp, "source", FALSE) ?
		       "source" : "no source", iget(tdp, "abi_version"), sget(tdp, "flush"),
		       iget(tdp, "flushes"), iget(tdp, "flush_ns"));
	}
	print_hints(json_object_get_object_member(o, "hints"));
}

static double dget(JsonObject *o, const char *k)
{
	return json_object_get_double_member_with_default(o, k, 0);
}

static void print_report(JsonObject *o)
{
	JsonArray *t = json_object_get_array_member(o, "tiers");
	JsonObject *sd = json_object_get_object_member(o, "slowdown");
	JsonObject *pr = json_object_get_object_member(o, "profile");

	printf("VM %s: placement %s (tco_alpha %.2f), %" G_GINT64_FORMAT " windows\n",
	       sget(o, "name"), sget(o, "placement"), dget(o, "tco_alpha"), iget(o, "windows"));
	printf("%-10s %-10s %10s %10s %7s %9s %10s %12s %12s\n", "TIER", "KIND", "MiB",
	       "MiB/h avg", "RATIO", "USD/GiB", "LAT ns", "USD/h", "USD/h h-avg");
	for (unsigned int i = 0; t && i < json_array_get_length(t); i++) {
		JsonObject *r = json_array_get_object_element(t, i);
		g_autofree char *now = mib(iget(r, "bytes"));

		g_autofree char *lc = json_object_has_member(r, "local_copy_usd_per_gib") ?
			g_strdup_printf(" (local copy: %.3f USD/GiB of it, ratio %.2f)",
					dget(r, "local_copy_usd_per_gib"),
					dget(r, "local_copy_ratio")) : NULL;

		printf("%-10s %-10s %10s %10.1f %7.2f %9.3f %10.0f %12.6f %12.6f%s%s%s\n",
		       sget(r, "tier"), sget(r, "kind"), now, dget(r, "bytes_hour_avg") / (1 << 20),
		       dget(r, "ratio"), dget(r, "usd_per_gib"), dget(r, "latency_ns"),
		       dget(r, "usd_per_hour"), dget(r, "usd_per_hour_hour_avg"),
		       strcmp(sget(r, "latency_from"), "prior") == 0 ? " (latency: prior)" : "",
		       strcmp(sget(r, "ratio_from"), "prior") == 0 ? " (ratio: prior)" : "",
		       lc ? lc : "");
	}
	printf("  total %.1f MiB: %.6f USD/h (hour average %.6f over %" G_GINT64_FORMAT
	       " samples); all in DRAM %.6f USD/h\n", (double)iget(o, "bytes") / (1 << 20),
	       dget(o, "usd_per_hour"), dget(o, "usd_per_hour_hour_avg"), iget(o, "hour_samples"),
	       dget(o, "all_dram_usd_per_hour"));
	printf("  saving %.1f %% = %.2f USD per month\n", dget(o, "saving_pct"),
	       dget(o, "saving_usd_per_month"));
	printf("  estimated slowdown: store faults %.3f %% of a vCPU, NUMA access latency +%.1f %%\n",
	       sd ? dget(sd, "fault_time_pct") : 0, sd ? dget(sd, "numa_extra_latency_pct") : 0);
	printf("  hot set %.1f MiB; profile stable for %" G_GINT64_FORMAT " windows (%"
	       G_GINT64_FORMAT " phase changes)\n", (double)iget(o, "hot_set_bytes") / (1 << 20),
	       pr ? iget(pr, "windows_since_phase_change") : 0, pr ? iget(pr, "phase_changes") : 0);
}

static void print_report_all(JsonArray *a)
{
	double total = 0, dram = 0;

	printf("%-16s %-9s %5s %10s %12s %12s %8s %12s %8s %8s\n", "VM", "PLACEMENT", "ALPHA",
	       "MiB", "USD/h", "ALL-DRAM/h", "SAVING%", "USD/month", "FAULT%", "NUMA+%");
	for (unsigned int i = 0; i < json_array_get_length(a); i++) {
		JsonObject *o = json_array_get_object_element(a, i);
		JsonObject *sd = json_object_get_object_member(o, "slowdown");
		g_autofree char *m = mib(iget(o, "bytes"));

		printf("%-16s %-9s %5.2f %10s %12.6f %12.6f %8.1f %12.2f %8.3f %8.1f\n",
		       sget(o, "name"), sget(o, "placement"), dget(o, "tco_alpha"), m,
		       dget(o, "usd_per_hour"), dget(o, "all_dram_usd_per_hour"), dget(o, "saving_pct"),
		       dget(o, "saving_usd_per_month"), sd ? dget(sd, "fault_time_pct") : 0,
		       sd ? dget(sd, "numa_extra_latency_pct") : 0);
		total += dget(o, "usd_per_hour");
		dram += dget(o, "all_dram_usd_per_hour");
	}
	printf("%-16s %-9s %5s %10s %12.6f %12.6f %8.1f %12.2f\n", "(host)", "", "", "", total, dram,
	       dram > 0 ? 100 * (1 - total / dram) : 0, (dram - total) * 730);
}

static void print_tiers(JsonArray *a)
{
	printf("%-4s %-10s %-8s %11s %11s %8s %9s %s\n", "#", "TIER", "NODES", "TOTAL MiB",
	       "FREE MiB", "LAT ns", "USD/GiB", "FROM");
	for (unsigned int i = 0; i < json_array_get_length(a); i++) {
		JsonObject *o = json_array_get_object_element(a, i);
		JsonArray *n = json_object_has_member(o, "nodes") ?
			       json_object_get_array_member(o, "nodes") : NULL;
		g_autoptr(GString) nodes = g_string_new(NULL);
		g_autofree char *tot = mib(iget(o, "capacity_bytes"));
		g_autofree char *fr = mib(iget(o, "free_bytes"));

		for (unsigned int j = 0; n && j < json_array_get_length(n); j++)
			g_string_append_printf(nodes, "%s%" G_GINT64_FORMAT, j ? "," : "",
					       json_array_get_int_element(n, j));
		if (strcmp(sget(o, "kind"), "compressed") == 0) {
			printf("%-4u %-10s %-8s %11s %11s %8s %9s %s\n", i, sget(o, "name"),
			       nodes->len ? nodes->str : "-", "-", "-", "-", "-", sget(o, "source"));
			continue;
		}
		printf("%-4u %-10s %-8s %11s %11s %8" G_GINT64_FORMAT " %9.2f %s\n", i,
		       sget(o, "name"), nodes->str, tot, fr, iget(o, "latency_ns"),
		       json_object_get_double_member_with_default(o, "price_usd_per_gib", 0),
		       sget(o, "source"));
	}
}

/*
 * --get: the values at dotted KEY paths of the reply's result. A step into an
 * object is a member name; into an array an index, the "name" or "tier" of an
 * element, or "*" (every element; the numbers the rest of the path reaches are
 * summed). Walks @n along @steps from @i, appending what it reaches to @hits;
 * false with @err set (the step, where, and what is accepted) when a step
 * does not exist.
 */
static bool get_walk(JsonNode *n, char **steps, unsigned int i, GString *where, GPtrArray *hits,
		     GString *err)
{
	const char *s = steps[i];
	gsize at = where->len;
	bool ok = true;

	if (!s) {
		g_ptr_array_add(hits, n);
		return true;
	}
	if (JSON_NODE_HOLDS_OBJECT(n)) {
		JsonObject *o = json_node_get_object(n);

		if (!json_object_has_member(o, s)) {
			g_autoptr(GList) m = json_object_get_members(o);

			g_string_printf(err, "no member '%s' in %s (members:", s,
					where->len ? where->str : "the result");
			for (GList *l = m; l; l = l->next)
				g_string_append_printf(err, " %s", (char *)l->data);
			g_string_append(err, ")");
			return false;
		}
		g_string_append_printf(where, "%s%s", where->len ? "." : "", s);
		ok = get_walk(json_object_get_member(o, s), steps, i + 1, where, hits, err);
	} else if (JSON_NODE_HOLDS_ARRAY(n)) {
		JsonArray *a = json_node_get_array(n);
		unsigned int len = json_array_get_length(a);
		guint64 idx;

		g_string_append_printf(where, "%s%s", where->len ? "." : "", s);
		if (strcmp(s, "*") == 0) {
			for (unsigned int k = 0; ok && k < len; k++)
				ok = get_walk(json_array_get_element(a, k), steps, i + 1, where, hits, err);
		} else if (g_ascii_string_to_unsigned(s, 10, 0, G_MAXUINT, &idx, NULL)) {
			if (idx < len) {
				ok = get_walk(json_array_get_element(a, (unsigned int)idx), steps, i + 1,
					      where, hits, err);
			} else {
				g_string_truncate(where, at);
				g_string_printf(err, "no element %s in %s (%u elements)", s,
						where->len ? where->str : "the result", len);
				ok = false;
			}
		} else {
			JsonNode *found = NULL;

			for (unsigned int k = 0; !found && k < len; k++) {
				JsonObject *o = json_array_get_object_element(a, k);

				if (o && (strcmp(sget(o, "name"), s) == 0 || strcmp(sget(o, "tier"), s) == 0))
					found = json_array_get_element(a, k);
			}
			if (found) {
				ok = get_walk(found, steps, i + 1, where, hits, err);
			} else {
				g_string_truncate(where, at);
				g_string_printf(err, "no element '%s' in %s (an index below %u, *, or a "
						"name:", s, where->len ? where->str : "the result", len);
				for (unsigned int k = 0; k < len; k++) {
					JsonObject *o = json_array_get_object_element(a, k);
					const char *nm = o ? sget(o, "name") : "";

					if (o && !*nm)
						nm = sget(o, "tier");
					if (*nm)
						g_string_append_printf(err, " %s", nm);
				}
				g_string_append(err, ")");
				ok = false;
			}
		}
	} else {
		g_string_printf(err, "%s is a value, not an object or an array: no step '%s' into it",
				where->len ? where->str : "the result", s);
		ok = false;
	}
	g_string_truncate(where, at);
	return ok;
}

/* Print the value at @key of @result (one line); 0, or 2 with the reason on stderr. */
static int get_print(JsonNode *result, const char *key)
{
	g_auto(GStrv) steps = g_strsplit(key, ".", -1);
	g_autoptr(GPtrArray) hits = g_ptr_array_new();
	g_autoptr(GString) where = g_string_new(NULL);
	g_autoptr(GString) err = g_string_new(NULL);
	bool sum = false, real = false;
	gint64 isum = 0;
	double dsum = 0;

	for (unsigned int i = 0; !i || steps[i]; i++) {
		/* g_strsplit("") is empty: that is one empty step too */
		if (!steps[i] || !*steps[i]) {
			fprintf(stderr, "vtierctl: --get '%s': empty step %u (KEY is NAME[.NAME...], "
				"e.g. backends.0.backlog)\n", key, i + 1);
			return 2;
		}
		sum |= strcmp(steps[i], "*") == 0;
	}
	if (!get_walk(result, steps, 0, where, hits, err)) {
		fprintf(stderr, "vtierctl: --get %s: %s\n", key, err->str);
		return 2;
	}
	if (!sum) {
		JsonNode *v = g_ptr_array_index(hits, 0);

		if (JSON_NODE_HOLDS_VALUE(v) && json_node_get_value_type(v) == G_TYPE_STRING) {
			printf("%s\n", json_node_get_string(v));
		} else if (JSON_NODE_HOLDS_VALUE(v) && json_node_get_value_type(v) == G_TYPE_DOUBLE) {
			printf("%.15g\n", json_node_get_double(v));	/* 0.05, not 0.05000000000000000277 */
		} else {
			g_autofree char *t = json_to_string(v, FALSE);

			printf("%s\n", t);
		}
		return 0;
	}
	for (unsigned int k = 0; k < hits->len; k++) {
		JsonNode *v = g_ptr_array_index(hits, k);
		GType t = JSON_NODE_HOLDS_VALUE(v) ? json_node_get_value_type(v) : G_TYPE_INVALID;

		if (t == G_TYPE_INT64) {
			isum += json_node_get_int(v);
			dsum += (double)json_node_get_int(v);
		} else if (t == G_TYPE_DOUBLE) {
			real = true;
			dsum += json_node_get_double(v);
		} else {
			fprintf(stderr, "vtierctl: --get %s: a path through * sums numbers, and element "
				"%u reaches %s\n", key, k, JSON_NODE_HOLDS_VALUE(v) ?
				g_type_name(t) : json_node_type_name(v));
			return 2;
		}
	}
	if (real)
		printf("%.15g\n", dsum);
	else
		printf("%" G_GINT64_FORMAT "\n", isum);
	return 0;
}

/* Draw the heatmap reply into @svg (when given), else print a summary. 0, 1 or 2. */
static int do_heatmap(JsonNode *r, const char *svg, bool use_max, bool quiet)
{
	g_autofree struct vt_heatmap *h = g_new0(struct vt_heatmap, 1);
	g_autoptr(GError) e = NULL;
	g_autoptr(GString) out = g_string_new(NULL);
	g_autofree char *title = NULL;
	struct vt_heatmap_svg_opts o = { .use_max = use_max };
	char name[VT_CTL_MAX_NAME];
	gint64 window_ms;
	int ret;

	if (!vt_heatmap_from_json(r, h, name, sizeof(name), &e)) {
		fprintf(stderr, "vtierctl: malformed reply from vtierd: %s\n", e->message);
		return 2;
	}
	window_ms = iget(json_node_get_object(r), "window_ms");
	if (!svg) {
		const struct vt_heatmap_col *c = h->len ? &h->col[vt_heatmap_col_index(h, 0)] : NULL;

		printf("VM %s: %u bins of %.1f MiB (%s), %u windows of %" G_GINT64_FORMAT " ms\n",
		       name, h->nr_bins, (double)h->bin_bytes / (1 << 20), h->space, h->len, window_ms);
		if (!c)
			return 0;
		printf("%-20s %-20s %8s %8s %s\n", "START", "END", "MEAN", "MAX", "TIER (newest window)");
		for (unsigned int i = 0; i < h->nr_bins; i++)
			if (c->max[i])
				printf("0x%-18" G_GINT64_MODIFIER "x 0x%-18" G_GINT64_MODIFIER "x %8.4f %8.4f %s\n",
				       h->bin[i].start, h->bin[i].end, c->mean[i] / (double)VT_HEATMAP_SCALE,
				       c->max[i] / (double)VT_HEATMAP_SCALE,
				       c->tier[i] >= 0 ? h->tier_name[c->tier[i]] : "-");
		return 0;
	}
	title = g_strdup_printf("%s: hotness by %s, last %u windows of %" G_GINT64_FORMAT " ms",
				name, strcmp(h->space, "gpa") == 0 ? "guest-physical address" :
				"offset in guest RAM", h->len, window_ms);
	o.title = title;
	o.now_us = 0;	/* the columns' times are ages */
	ret = vt_heatmap_svg(h, &o, out);
	if (ret == -ENODATA) {
		fprintf(stderr, "vtierctl: heatmap: %s has no profiled window yet (just attached, or "
			"mode=off): nothing to draw\n", name);
		return 1;
	}
	if (vt_heatmap_write_file(svg, out->str, out->len, &e) < 0) {
		fprintf(stderr, "vtierctl: heatmap: %s\n", e->message);
		return 2;
	}
	if (!quiet)
		printf("%s: %u bins x %u windows written to %s\n", name, h->nr_bins, h->len, svg);
	return 0;
}

int main(int argc, char **argv)
{
	const char *socket_path = VT_CONTROL_SOCKET_DEFAULT, *name = NULL, *svg = NULL;
	const char *domain = NULL;
	struct vt_ctl_request req = { 0 };
	g_autoptr(GPtrArray) set = g_ptr_array_new();
	g_autoptr(GPtrArray) pos = g_ptr_array_new();
	g_autoptr(GPtrArray) get = g_ptr_array_new();
	g_autoptr(GError) e = NULL;
	g_autoptr(JsonParser) parser = json_parser_new();
	g_autofree char *text = NULL, *reply = NULL;
	bool json = false, all = false, use_max = false, options = true;
	JsonObject *root;
	const char *cmd;
	int i;

	/* options anywhere on the line, "--opt VALUE" or "--opt=VALUE"; "--" ends them */
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq = strchr(arg, '='), *val = NULL;
		g_autofree char *opt = NULL;
		const char **dst = NULL;

		if (!options || !(arg[0] == '-' && (arg[1] == '-' || strcmp(arg, "-h") == 0))) {
			if (pos->len >= 1 && eq)
				g_ptr_array_add(set, argv[i]);
			else
				g_ptr_array_add(pos, argv[i]);
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			options = false;
			continue;
		}
		opt = eq ? g_strndup(arg, (gsize)(eq - arg)) : g_strdup(arg);
		if (strcmp(opt, "--socket") == 0)
			dst = &socket_path;
		else if (strcmp(opt, "--name") == 0)
			dst = &name;
		else if (strcmp(opt, "--domain") == 0)
			dst = &domain;
		else if (strcmp(opt, "--svg") == 0)
			dst = &svg;
		if (dst || strcmp(opt, "--get") == 0) {
			if (eq)
				val = eq + 1;
			else if (i + 1 < argc)
				val = argv[++i];
			if (!val || (dst && !*val)) {	/* --get '' is get_print()'s to judge */
				fprintf(stderr, "vtierctl: %s needs a value (%s VALUE or %s=VALUE)\n%s",
					opt, opt, opt, usage);
				return 2;
			}
			if (dst)
				*dst = val;
			else
				g_ptr_array_add(get, (char *)val);
		} else if (eq) {
			fprintf(stderr, "vtierctl: %s takes no value\n%s", opt, usage);
			return 2;
		} else if (strcmp(opt, "--json") == 0) {
			json = true;
		} else if (strcmp(opt, "--all") == 0) {
			all = true;
		} else if (strcmp(opt, "--max") == 0) {
			use_max = true;
		} else if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
			fputs(usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "vtierctl: unknown option %s\n%s", arg, usage);
			return 2;
		}
	}
	if (pos->len == 0) {
		fputs(usage, stderr);
		return 2;
	}
	cmd = pos->pdata[0];
	if (strcmp(cmd, "list") == 0 && pos->len == 1)
		req.cmd = VT_CTL_LIST;
	else if (strcmp(cmd, "tiers") == 0 && pos->len == 1)
		req.cmd = VT_CTL_TIERS;
	else if (strcmp(cmd, "report") == 0 && (pos->len == 2) != all) {
		req.cmd = VT_CTL_REPORT;
		req.vm = all ? NULL : pos->pdata[1];
	}
	else if (strcmp(cmd, "attach") == 0 && pos->len == 1 && domain && !name) {
		req.cmd = VT_CTL_ATTACH;
		req.domain = (char *)domain;
	} else if (strcmp(cmd, "attach") == 0 && pos->len == 2 && !domain) {
		req.cmd = VT_CTL_ATTACH;
		req.qmp = pos->pdata[1];
		req.vm = (char *)name;
	} else if (pos->len == 2 && (strcmp(cmd, "detach") == 0 || strcmp(cmd, "status") == 0 ||
				     strcmp(cmd, "stats") == 0 || strcmp(cmd, "policy") == 0 ||
				     strcmp(cmd, "demote") == 0 || strcmp(cmd, "heatmap") == 0)) {
		req.cmd = strcmp(cmd, "detach") == 0 ? VT_CTL_DETACH :
			  strcmp(cmd, "demote") == 0 ? VT_CTL_DEMOTE :
			  strcmp(cmd, "heatmap") == 0 ? VT_CTL_HEATMAP :
			  strcmp(cmd, "status") == 0 ? VT_CTL_STATUS :
			  strcmp(cmd, "stats") == 0 ? VT_CTL_STATS : VT_CTL_POLICY;
		req.vm = pos->pdata[1];
	} else {
		fprintf(stderr, "vtierctl: bad command line for '%s'\n%s", cmd, usage);
		return 2;
	}
	if ((svg || use_max) && req.cmd != VT_CTL_HEATMAP) {
		fprintf(stderr, "vtierctl: --svg and --max only go with heatmap\n");
		return 2;
	}
	if (get->len && (json || svg)) {
		fprintf(stderr, "vtierctl: --get goes without --json and --svg\n");
		return 2;
	}
	if (all && req.cmd != VT_CTL_REPORT) {
		fprintf(stderr, "vtierctl: --all only goes with report\n");
		return 2;
	}
	if (set->len && req.cmd != VT_CTL_ATTACH && req.cmd != VT_CTL_POLICY &&
	    req.cmd != VT_CTL_DEMOTE) {
		fprintf(stderr, "vtierctl: KEY=VALUE only goes with attach, policy and demote\n");
		return 2;
	}
	if (req.qmp && req.qmp[0] != '/') {
		g_autofree char *cwd = g_get_current_dir();

		req.qmp = g_build_filename(cwd, req.qmp, NULL);	/* leaked: process ends */
	}
	g_ptr_array_add(set, NULL);
	req.set = (char **)set->pdata;
	req.nr_set = set->len - 1;
	text = vt_ctl_request_to_json(&req);
	reply = vt_control_call(socket_path, text, req.cmd == VT_CTL_ATTACH ? 60000 : 15000, &e);
	if (!reply) {
		fprintf(stderr, "vtierctl: %s\n", e->message);
		return 2;
	}
	if (vt_json_check_depth(reply, strlen(reply), VT_JSON_MAX_DEPTH, NULL, 0) ||
	    !json_parser_load_from_data(parser, reply, -1, &e) ||
	    !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
		fprintf(stderr, "vtierctl: malformed reply from vtierd\n");
		return 2;
	}
	root = json_node_get_object(json_parser_get_root(parser));
	if (!json_object_get_boolean_member_with_default(root, "ok", FALSE)) {
		fprintf(stderr, "vtierctl: %s: %s\n", cmd, sget(root, "error"));
		if (json)
			printf("%s\n", reply);
		return 1;
	}
	if (get->len) {
		JsonNode *r = json_object_get_member(root, "result");

		if (!r) {
			fprintf(stderr, "vtierctl: malformed reply from vtierd: no result\n");
			return 2;
		}
		for (unsigned int k = 0; k < get->len; k++) {
			int ret = get_print(r, g_ptr_array_index(get, k));

			if (ret)
				return ret;
		}
		return 0;
	}
	if (json) {
		printf("%s\n", reply);
		/* --json --svg: the reply on stdout and the drawing in the file */
		if (req.cmd == VT_CTL_HEATMAP && svg)
			return do_heatmap(json_object_get_member(root, "result"), svg, use_max,
					  true);
		return 0;
	}
	{
		JsonNode *r = json_object_get_member(root, "result");

		switch (req.cmd) {
		case VT_CTL_LIST:
			print_list(json_node_get_array(r));
			break;
		case VT_CTL_TIERS:
			print_tiers(json_node_get_array(r));
			break;
		case VT_CTL_ATTACH:
		case VT_CTL_STATUS:
			print_status(json_node_get_object(r));
			break;
		case VT_CTL_STATS:
			print_stats(json_node_get_object(r));
			break;
		case VT_CTL_POLICY:
			printf("policy of %s:\n", req.vm);
			print_policy(json_node_get_object(r));
			break;
		case VT_CTL_DETACH:
			printf("detached %s\n", req.vm);
			break;
		case VT_CTL_DEMOTE:
			printf("%s: %" G_GINT64_FORMAT " bytes queued for tier %s\n", req.vm,
			       iget(json_node_get_object(r), "queued_bytes"),
			       sget(json_node_get_object(r), "tier"));
			break;
		case VT_CTL_REPORT:
			if (req.vm)
				print_report(json_node_get_object(r));
			else
				print_report_all(json_node_get_array(r));
			break;
		case VT_CTL_HEATMAP:
			return do_heatmap(r, svg, use_max, false);
		case VT_CTL_PING:
			break;
		}
	}
	return 0;
}
