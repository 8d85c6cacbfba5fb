/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host's metric families (vtier_host_*, docs/reference/metrics.md): what
 * the host has (each tier's capacity and free memory), what its VMs take of
 * it and what that costs against all-DRAM: the view a capacity dashboard or
 * a descheduler reads. vtier_host_info{host} carries the host's name, to
 * join with node_exporter's or a scheduler's node.
 */
#ifndef VTIER_DAEMON_METRICS_HOST_H
#define VTIER_DAEMON_METRICS_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "ctier.h"
#include "metrics_text.h"
#include "tiers.h"

struct vt_metrics_host {
	const char *name;			/* the host's name */
	const struct vt_tiers *tiers;		/* its NUMA tiers, free bytes just read */
	const struct vt_ctier_spec *ctier;	/* its compressed tiers, as configured */
	unsigned int nr_ctier;
	/* the DRAM sharing between VMs ([host] dram_budget; share_on false: none) */
	bool share_on;
	uint64_t share_budget;			/* the budget */
	uint64_t share_granted;			/* granted in the last round */
	uint64_t share_waiting;			/* held by VMs not in it */
	uint64_t share_rounds;
	/* per-node budgets (share_nodes 0: one for the host): the same per node */
	unsigned int share_nodes;
	int share_node[VT_MAX_NODES];
	uint64_t share_node_budget[VT_MAX_NODES];
	uint64_t share_node_granted[VT_MAX_NODES];
	uint64_t share_node_waiting[VT_MAX_NODES];
};

/* The host's families into @out, the VMs' figures summed per tier. */
void vt_metrics_host_write(GString *out, const struct vt_metrics_host *h,
			   const struct vt_metrics_vm *vms, unsigned int n);

#endif
