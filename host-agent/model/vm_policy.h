/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-VM policy: what vtierd may do with one VM's memory. Set at attach and
 * changed live with `vtierctl policy VM KEY=VALUE...`; every key is parsed
 * here, with the reason for a refusal in the GError.
 */
#ifndef VTIER_CORE_VM_POLICY_H
#define VTIER_CORE_VM_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "error_domain.h"

enum vt_mode {
	VT_MODE_OFF = 0,	/* attached, no profiling, no moves */
	VT_MODE_OBSERVE,	/* profile and decide, move nothing */
	VT_MODE_AUTO,		/* profile, decide and move */
};

/* How chunks are placed across the tiers (docs/tco.md). */
enum vt_placement {
	VT_PLACEMENT_WATERFALL = 0,	/* MTM's hot set on tier 0 + the waterfall (the default) */
	VT_PLACEMENT_TCO,		/* the analytical model: least slowdown within tco_alpha */
};

/*
 * When the tdp source asks host-kmod to flush the VM's TLBs after clearing
 * accessed bits (VTIER_TDP_FLUSH_TLB, docs/abi-tdp.md), so that a translation
 * the TLB still caches sets its accessed bit again at its next use.
 */
enum vt_policy_tdp_flush {
	VT_POLICY_TDP_FLUSH_NEVER = 0,	/* never (the default) */
	VT_POLICY_TDP_FLUSH_WINDOW,	/* once per window, with its first SAMPLE or SCAN */
};

/* The shortest window a policy takes (window_ms=). */
#define VT_WINDOW_MS_MIN 100

struct vt_vm_policy {
	enum vt_mode mode;
	uint64_t dram_limit_bytes;	/* dram_limit = dram_max (one key, two names); 0: no limit
					   beyond dram_share */
	/* host-wide DRAM arbitration (docs/host-share.md), when the host sets a budget */
	uint64_t dram_min_bytes;	/* protected while used (0: none); <= dram_max */
	unsigned int weight;		/* 1..10000: its share of contested DRAM */
	double dram_share;		/* 0..1 of the VM's RAM allowed on the fastest tier; 1 = all */
	uint64_t budget_bytes;		/* bytes moved per window, promotions + demotions */
	uint64_t window_ms;		/* profiling window (VT_WINDOW_MS_MIN at least) */
	uint64_t sample_ms;		/* sampling interval inside a window */
	double hot_threshold;		/* minimum EMA hotness (0..1) to promote */
	unsigned int thrash_windows;	/* K: demoted then promoted within K windows = thrash */
	double thrash_step;		/* promotion threshold raise per thrash event */
	unsigned int move_hold;		/* windows a chunk moved on or off the fastest tier stays (0: off) */
	uint64_t chunk_bytes;		/* policy granularity (multiple of 2 MiB) */
	char profiler[32];		/* "auto", "damon-kernel", "telescope-flex", ... */
	enum vt_policy_tdp_flush tdp_flush;	/* needs the tdp source (engine/observe.c) */
	unsigned int ctier_age_windows;	/* waterfall: cold windows on a tier before the next (0: off) */
	enum vt_placement placement;
	double tco_alpha;		/* placement=tco: 0 the cheapest .. 1 the fastest placement */
	char tiers[128];		/* tiers the VM may be placed on, "a,b,c"; "" = all */
	bool hints;			/* read the guest's hint channel (docs/vtierd.md) */
	uint64_t balloon_bytes;		/* hints: what the guest's balloon should hold (0: none) */
	/*
	 * Outgoing migration: pages the migration thread faulted back from the
	 * compressed tiers are evicted again at the budget per window; past this
	 * many bytes faulted back, without the budget (0: always at the budget).
	 */
	uint64_t migration_extra_bytes;
};

void vt_vm_policy_default(struct vt_vm_policy *p);
/* Set one key (and check the result as a whole); on error @p is unchanged. */
bool vt_vm_policy_set(struct vt_vm_policy *p, const char *key, const char *value, GError **error);
/*
 * "KEY=VALUE": all-or-nothing over @n assignments; constraints between keys
 * (sample_ms <= window_ms) are checked once all are applied, so order does
 * not matter.
 */
bool vt_vm_policy_apply(struct vt_vm_policy *p, char *const *assignments, unsigned int n,
			GError **error);
/*
 * Do @a and @b differ only in keys the engine reads afresh each window: the
 * placement's (budget, hot_threshold, thrash_windows, thrash_step, move_hold,
 * ctier_age_windows, placement, tco_alpha), the DRAM limits (dram_limit,
 * dram_share, dram_min, weight), balloon and migration_extra? Such a change
 * takes effect at the next window without restarting the engine: the profiler
 * keeps what it learnt. Any other key, and any key added later, restarts it.
 */
bool vt_vm_policy_live(const struct vt_vm_policy *a, const struct vt_vm_policy *b);
/* The constraints between keys; false with @error naming them. */
bool vt_vm_policy_check(const struct vt_vm_policy *p, GError **error);
const char *vt_mode_name(enum vt_mode mode);
const char *vt_placement_name(enum vt_placement placement);
const char *vt_policy_tdp_flush_name(enum vt_policy_tdp_flush flush);
/* NULL-terminated list of keys, for help text and errors. */
const char *const *vt_vm_policy_keys(void);
void vt_vm_policy_to_json(const struct vt_vm_policy *p, JsonBuilder *b);
/* DRAM bytes this VM may use given its RAM size: min(limit, share * ram). */
uint64_t vt_vm_policy_dram_allowance(const struct vt_vm_policy *p, uint64_t ram_bytes);

/* VM names (the control protocol's, hand-offs', heatmaps') are at most this long, NUL included. */
#define VT_CTL_MAX_NAME 64
/* A VM name: 1..63 characters of [A-Za-z0-9._-], not starting with '-' or '.'. */
bool vt_ctl_name_valid(const char *name);


#endif
