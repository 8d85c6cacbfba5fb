// SPDX-License-Identifier: GPL-2.0-or-later
/* The host's metric families (metrics_host.h). */
#include <stdio.h>
#include <string.h>

#include "metrics_host.h"
#include "prom_text.h"

static void nodes_of(const struct vt_tier *t, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (unsigned int i = 0; i < t->nr_nodes && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? "," : "", t->nodes[i]);
}

/* The VMs' figures summed: report.tiers[].@member, or their backends' ctiers[].@member. */
static double vms_sum(const struct vt_metrics_vm *vms, unsigned int n, const char *tier,
		      const char *member, bool backends)
{
	double sum = 0;

	for (unsigned int k = 0; k < n; k++) {
		JsonArray *a = vt_prom_array(backends ? vms[k].stats : vms[k].report,
					     backends ? "backends" : "tiers");

		for (unsigned int i = 0; a && i < json_array_get_length(a); i++) {
			JsonObject *o = json_array_get_object_element(a, i);
			JsonArray *c = backends ? vt_prom_array(o, "ctiers") : NULL;

			if (!backends) {
				if (!strcmp(vt_prom_str(o, "tier"), tier))
					sum += vt_prom_num(o, member);
				continue;
			}
			for (unsigned int j = 0; c && j < json_array_get_length(c); j++) {
				JsonObject *t = json_array_get_object_element(c, j);

				if (!strcmp(vt_prom_str(t, "name"), tier))
					sum += vt_prom_num(t, member);
			}
		}
	}
	return sum;
}

static const char *ctier_kind(const struct vt_ctier_spec *c)
{
	return c->medium == VT_MEDIUM_REMOTE ? "remote" : "compressed";
}

void vt_metrics_host_write(GString *out, const struct vt_metrics_host *h,
			   const struct vt_metrics_vm *vms, unsigned int n)
{
	const struct vt_tiers *t = h->tiers;
	double cost = 0, all = 0;
	char nodes[64];

	vt_prom_family(out, "vtier_host_info", "gauge", "The host vtierd runs on, by name (join with "
		       "node_exporter's node_uname_info{nodename} or a scheduler's node name).");
	vt_prom_sample(out, "vtier_host_info", NULL, 1, "host", h->name, NULL);

	vt_prom_family(out, "vtier_host_tier_capacity_bytes", "gauge", "Each tier's capacity, bytes: a "
		       "NUMA tier's MemTotal, a compressed or remote tier's configured capacity (none "
		       "configured: no sample).");
	for (unsigned int i = 0; i < t->nr; i++) {
		nodes_of(&t->tier[i], nodes, sizeof(nodes));
		vt_prom_sample(out, "vtier_host_tier_capacity_bytes", NULL,
			       (double)t->tier[i].capacity_bytes, "tier", t->tier[i].name, "kind",
			       "numa", "nodes", nodes, NULL);
	}
	for (unsigned int i = 0; i < h->nr_ctier; i++) {
		const struct vt_ctier_spec *c = &h->ctier[i];

		if (!c->capacity_bytes)
			continue;
		if (c->medium == VT_MEDIUM_NODE)
			snprintf(nodes, sizeof(nodes), "%d", c->node);
		else
			nodes[0] = 0;
		vt_prom_sample(out, "vtier_host_tier_capacity_bytes", NULL, (double)c->capacity_bytes,
			       "tier", c->name, "kind", ctier_kind(c), "nodes", nodes, NULL);
	}

	vt_prom_family(out, "vtier_host_tier_free_bytes", "gauge", "Free memory (MemFree) of each NUMA "
		       "tier's nodes, bytes, read for this scrape.");
	for (unsigned int i = 0; i < t->nr; i++) {
		nodes_of(&t->tier[i], nodes, sizeof(nodes));
		vt_prom_sample(out, "vtier_host_tier_free_bytes", NULL, (double)t->tier[i].free_bytes,
			       "tier", t->tier[i].name, "kind", "numa", "nodes", nodes, NULL);
	}

	vt_prom_family(out, "vtier_host_tier_vm_bytes", "gauge", "Guest memory of all attached VMs on each "
		       "tier, bytes (the sum of vtier_vm_memory_bytes).");
	for (unsigned int i = 0; i < t->nr; i++)
		vt_prom_sample(out, "vtier_host_tier_vm_bytes", NULL,
			       vms_sum(vms, n, t->tier[i].name, "bytes", false), "tier",
			       t->tier[i].name, "kind", "numa", NULL);
	for (unsigned int i = 0; i < h->nr_ctier; i++)
		vt_prom_sample(out, "vtier_host_tier_vm_bytes", NULL,
			       vms_sum(vms, n, h->ctier[i].name, "bytes", false), "tier",
			       h->ctier[i].name, "kind", ctier_kind(&h->ctier[i]), NULL);

	vt_prom_family(out, "vtier_host_ctier_pool_bytes", "gauge", "Memory each compressed or remote "
		       "tier's pools take for all attached VMs, bytes (the sum of "
		       "vtier_vm_ctier_pool_bytes).");
	for (unsigned int i = 0; i < h->nr_ctier; i++)
		vt_prom_sample(out, "vtier_host_ctier_pool_bytes", NULL,
			       vms_sum(vms, n, h->ctier[i].name, "pool_bytes", true), "tier",
			       h->ctier[i].name, "kind", ctier_kind(&h->ctier[i]), NULL);

	for (unsigned int k = 0; k < n; k++) {
		double c, a;

		if (vt_prom_number(vms[k].report ? json_object_get_member(vms[k].report,
									  "usd_per_hour") : NULL, &c) &&
		    vt_prom_number(vms[k].report ? json_object_get_member(vms[k].report,
									  "all_dram_usd_per_hour") :
						    NULL, &a)) {
			cost += c;
			all += a;
		}
	}
	vt_prom_family(out, "vtier_host_cost_usd_per_hour", "gauge", "What the attached VMs' memory costs "
		       "as placed, USD per hour (the sum of the VMs' reports; docs/tco.md).");
	vt_prom_sample(out, "vtier_host_cost_usd_per_hour", NULL, cost, NULL);
	vt_prom_family(out, "vtier_host_all_dram_cost_usd_per_hour", "gauge", "The same memory all in "
		       "DRAM, USD per hour.");
	vt_prom_sample(out, "vtier_host_all_dram_cost_usd_per_hour", NULL, all, NULL);
	if (h->share_on) {
		vt_prom_family(out, "vtier_host_dram_share_bytes", "gauge", "The DRAM the host shares between "
			       "its VMs ([host] dram_budget): the budget, what the last round granted, what "
			       "VMs not in it hold; per DRAM node (label node) with a budget per node.");
		if (!h->share_nodes) {
			vt_prom_sample(out, "vtier_host_dram_share_bytes", NULL,
				       (double)h->share_budget, "kind", "budget", NULL);
			vt_prom_sample(out, "vtier_host_dram_share_bytes", NULL,
				       (double)h->share_granted, "kind", "granted", NULL);
			vt_prom_sample(out, "vtier_host_dram_share_bytes", NULL,
				       (double)h->share_waiting, "kind", "waiting", NULL);
		}
		for (unsigned int i = 0; i < h->share_nodes; i++) {
			char node[16];

			g_snprintf(node, sizeof(node), "%d", h->share_node[i]);
			vt_prom_sample(out, "vtier_host_dram_share_bytes", NULL,
				       (double)h->share_node_budget[i], "kind", "budget", "node", node,
				       NULL);
			vt_prom_sample(out, "vtier_host_dram_share_bytes", NULL,
				       (double)h->share_node_granted[i], "kind", "granted", "node",
				       node, NULL);
			vt_prom_sample(out, "vtier_host_dram_share_bytes", NULL,
				       (double)h->share_node_waiting[i], "kind", "waiting", "node",
				       node, NULL);
		}
		vt_prom_family(out, "vtier_host_dram_share_rounds_total", "counter", "Rounds of the DRAM "
			       "sharing between VMs.");
		vt_prom_sample(out, "vtier_host_dram_share_rounds_total", NULL,
			       (double)h->share_rounds, NULL);
	}
	vt_prom_family(out, "vtier_host_saving_ratio", "gauge", "The host's saving against all-DRAM, 0..1 "
		       "(no sample before a VM has a report).");
	if (all > 0)
		vt_prom_sample(out, "vtier_host_saving_ratio", NULL, 1 - cost / all, NULL);
}
