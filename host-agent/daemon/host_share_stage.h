/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host-level stage of DRAM sharing (docs/host-share.md): above the
 * per-VM engines, on the daemon's main loop, once a second while the host
 * has a budget ([host] dram_budget), the budget is divided between the
 * attached VMs (policy/host_share.h) and each VM's grant written into it
 * (model/vm_share.h) for its next window. With a budget per DRAM node,
 * each VM is homed on one budgeted node of its DRAM tier (its cpuset's
 * mems allowing) and each node's round divides that node's budget between
 * the VMs homed there.
 */
#ifndef VTIER_DAEMON_HOST_SHARE_STAGE_H
#define VTIER_DAEMON_HOST_SHARE_STAGE_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "host_config.h"
#include "host_share.h"
#include "registry.h"
#include "vm.h"

#define VT_HOST_SHARE_PERIOD_MS 1000

struct vt_host_share_stage {
	GHashTable *vms;			/* the daemon's: name -> struct vt_vm * */
	const struct vt_host_share_config *cfg;	/* the host's [host] */
	const struct vt_registry *reg;		/* where it logs */
	guint timer;
	uint64_t rounds;
	struct vt_share_round last;		/* the last round's sums (over the nodes) */
	uint64_t waiting;			/* DRAM of the VMs not in the last round */
	/* per-node budgets: the same per entry of cfg->node[] */
	struct vt_share_round node_last[VT_MAX_NODES];
	uint64_t node_waiting[VT_MAX_NODES];
};

/* Starts the rounds when the host has a budget (logged once); nothing otherwise. */
void vt_host_share_start(struct vt_host_share_stage *st);
void vt_host_share_stop(struct vt_host_share_stage *st);
/* One round now (the timer's; tests call it). */
void vt_host_share_round_now(struct vt_host_share_stage *st);
/*
 * @policy about to become @vm's: false with @error when the host has a
 * budget and the VMs' dram_min would then add up to more than it (naming the
 * VMs, the sum and the budget): per node, the VMs homed there (a VM not homed
 * yet is checked on the node it would be homed on).
 */
bool vt_host_share_check_policy(struct vt_host_share_stage *st, struct vt_vm *vm,
				const struct vt_vm_policy *policy, GError **error);

#endif
