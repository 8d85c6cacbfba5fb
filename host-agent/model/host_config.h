/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host's configuration as the layers below the daemon see it: the host's
 * tiers, the compressed tiers and their prices, the page stores' root and the
 * hand-off switches. The daemon fills it once at start (vtierd's options and
 * config file) and hands out const pointers: the engine, placement, the
 * hand-off and migration read it and never write it.
 */
#ifndef VTIER_MODEL_HOST_CONFIG_H
#define VTIER_MODEL_HOST_CONFIG_H

#include <stdbool.h>

#include "ctier.h"
#include "ctier_remote_spec.h"
#include "host_share_config.h"
#include "tiers.h"

struct vt_host_config {
	struct vt_tiers tiers;			/* the host's NUMA tiers (free bytes as at start) */
	struct vt_host_share_config share;	/* [host]: DRAM shared between VMs (off: each alone) */
	/* compressed tiers and the QEMU hand-off (tier-agent=) */
	struct vt_ctier_spec ctier[VT_CTIER_MAX];
	double ctier_price[VT_CTIER_MAX];	/* USD per GiB of the medium; < 0: the medium's */
	struct vt_remote_spec remote[VT_CTIER_MAX];	/* ctier[i].medium == VT_MEDIUM_REMOTE:
							   its servers ([remote.NAME]) */
	unsigned int nr_ctier;
	char store_root[256];			/* page stores, one directory per backend */
	unsigned int store_open_delay_ms;	/* tests: the store's opening waits this long first */
	bool ignore_profiles;			/* --ignore-migration-profiles: incoming VMs start cold */
	bool precopy_copy_only;			/* --precopy-placement=copy: no early hand-off */
	unsigned int placement_threads;		/* --placement-threads: a bulk span's (0: the mover's default) */
	bool zswap_ok;				/* swap + zswap: the compressed tier of stock QEMU */
	/* where the TLB flush counters are read (engine/tlb_stage.c); "": the host's, */
	/* ... /proc and /sys/kernel/debug (tests: a fake tree) */
	char proc_root[128];
	char debugfs_root[128];
	char zswap_why[160];
};

#endif
