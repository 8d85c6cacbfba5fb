/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The [host] group of vtierd's config file: the DRAM vtier may give to VMs
 * and the rate limit of its division (policy/host_share.h,
 * docs/host-share.md). Absent: no arbitration, each VM's policy alone.
 *
 *   [host]
 *   dram_budget = 16GiB          (one budget for the host)
 *   dram_budget = 0:12G,1:4G     (or one per DRAM node: NODE:SIZE,...)
 *   share_step = 256MiB          (default: 1/16 of the budget, at most 256 MiB)
 *   share_deadband = 4MiB        (default: two 2 MiB chunks, at most the step)
 *   share_hold = 10              (a VM's windows: a change is not reversed sooner;
 *                                 0..3600, 0: no hold)
 */
#ifndef VTIER_MODEL_HOST_SHARE_CONFIG_H
#define VTIER_MODEL_HOST_SHARE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "tiers.h"

#define VT_SHARE_STEP_MAX_DEFAULT (256ULL << 20)
#define VT_SHARE_DEADBAND_DEFAULT (4ULL << 20)
#define VT_SHARE_HOLD_DEFAULT 10
#define VT_SHARE_HOLD_MAX 3600

struct vt_host_share_config {
	bool on;			/* [host] dram_budget set: arbitrate */
	uint64_t budget;		/* the host's (the sum of the nodes' when per node) */
	unsigned int nr_nodes;		/* 0: one budget for the host */
	int node[VT_MAX_NODES];		/* per node: the node and its budget */
	uint64_t node_budget[VT_MAX_NODES];
	uint64_t step;			/* share_step */
	uint64_t deadband;		/* share_deadband */
	uint32_t hold;			/* share_hold, the VM's windows */
};

/*
 * [host] of @config (NULL, or no [host]: off, @out zeroed). The syntax only:
 * sizes in the one grammar (util/size.h), nodes 0..VT_MAX_NODES-1 named once,
 * share_deadband <= share_step, unknown keys refused; each refusal names the
 * key, the value and what is accepted. Which nodes are DRAM is
 * vt_host_share_config_check_nodes()'s.
 */
bool vt_host_share_config_parse(GKeyFile *config, struct vt_host_share_config *out,
				GError **error);
/*
 * Per-node budgets against the host's tiers: every node named must be a node
 * of the fastest tier (DRAM). True when off or one budget for the host.
 */
bool vt_host_share_config_check_nodes(const struct vt_host_share_config *c,
				      const struct vt_tiers *tiers, GError **error);

#endif
