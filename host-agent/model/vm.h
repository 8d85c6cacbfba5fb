/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One attached VM: what discovery learnt (QEMU pid, memory backends and the
 * host-virtual mappings of guest RAM) and its engine (profile window ->
 * region map -> policy -> movers -> stats), driven by glib timers.
 */
#ifndef VTIER_CORE_VM_H
#define VTIER_CORE_VM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "mtm.h"
#include "phase.h"
#include "refresh.h"
#include "tco.h"
#include "tco_report.h"
#include "tier_model.h"
#include "zswap.h"
#include "profiler.h"
#include "qmp_client.h"
#include "tiers.h"
#include "host_config.h"
#include "registry.h"
#include "vm_policy.h"
#include "hint_stats.h"
#include "tlb_stats.h"
#include "vm_migration.h"
#include "vm_share.h"

/* The address space of a VM's region map. */
enum vt_addr_space {
	VT_SPACE_HVA,	/* QEMU host-virtual (damon-kernel) */
	VT_SPACE_GPA,	/* guest-physical (tdp) */
};

struct vt_vm_ram {
	char backend[64];	/* memory backend id (= RAM block name) */
	char type[48];		/* memory-backend-ram / -memfd / -file */
	uint64_t size;
	uint64_t hva;
	uint64_t page_size;
	bool share;
	bool thp;		/* anonymous private memory that THP may back */
	char policy[16];
	char mapping[256];	/* the /proc/PID/maps path ("" = anonymous) */
};

/* A guest-physical range of RAM and where it is in QEMU. */
struct vt_gpa_map {
	uint64_t gpa;
	uint64_t len;
	uint64_t hva;
};

/*
 * Learn @pid's guest RAM through @qmp: backends, RAM blocks, and maps; and when
 * @gpa_map is non-NULL, gpa -> hva from the flat memory view ("info mtree -f";
 * left empty, without error, when QEMU does not answer it).
 */
bool vt_vm_discover(struct vt_qmp *qmp, pid_t pid, GArray *ram, GArray *gpa_map, GError **error);

struct vt_tier_stats {
	uint64_t resident_bytes;	/* estimated from status samples (engine/residency.h) */
	uint64_t promoted_in;		/* chunks promoted into this tier */
	uint64_t demoted_in;		/* chunks demoted into this tier */
	uint64_t bytes_in;		/* bytes moved into this tier */
};

/*
 * The tdp source's TLB flushes (policy tdp_flush, engine/observe.c): what is
 * in effect since the engine last started, and the module's flushes counted
 * over every engine start (a policy change opens the source again).
 */
struct vt_vm_tdp_stats {
	bool source;			/* the profiler runs over the tdp source */
	unsigned int abi_version;	/* the loaded vtier_tdp.ko's ABI (0: no tdp source) */
	bool flush_window;		/* the module flushes the VM's TLBs once per window */
	uint64_t flushes;		/* flushes the module did for the VM's windows */
	uint64_t flush_ns;		/* their time, inside the module */
};

struct vt_vm_stats {
	uint64_t windows;
	uint64_t promotions;		/* chunks */
	uint64_t demotions;
	uint64_t bytes_moved;		/* pages that changed node x 4 KiB */
	uint64_t pages_already;		/* asked to move but already there */
	uint64_t move_busy;
	uint64_t move_absent;
	uint64_t move_nomem;
	uint64_t move_other;
	uint64_t orders_failed;		/* chunks of which less than half moved */
	uint64_t orders_deferred;	/* not tried: the window's move time was up */
	uint64_t observe_bytes;		/* bytes the policy would have moved (observe) */
	uint64_t thrash_events;
	uint32_t max_moves_per_chunk;
	uint64_t profiler_regions;	/* regions in the last snapshot */
	uint64_t profiler_checks;	/* accessed-bit checks in the last window (tdp) */
	uint64_t profiler_cost_ns;	/* last window: profiler, policy, mover CPU time */
	uint64_t policy_cost_ns;
	uint64_t mover_cost_ns;
	uint64_t residency_cost_ns;
	uint64_t hints_cost_ns;		/* the guest hint reader (hints=on) */
	double threshold;
	unsigned int hot_chunks;
	unsigned int hot_on_tier0;
	uint64_t last_window_bytes;	/* moved in the last window */
	struct vt_tier_stats tier[VT_MAX_TIERS];
	/* the TCO report's figures (docs/tco.md), as of the last window */
	struct vt_tier_model model;
	double access_weight[VT_MAX_TIERS];	/* sum of EMA x bytes of the chunks on each tier */
	double fault_ns_per_s[VT_MAX_TIERS];	/* compressed: fault service time per second */
	uint64_t stable_windows;		/* since the hot set last changed phase */
	uint64_t phase_changes;
	struct vt_tco_solution tco;		/* placement=tco: the model's last solution */
	uint64_t tco_misplaced_bytes;		/* ... bytes not yet where it wants them */
	uint32_t refused_chunks;		/* chunks a tier did not take (vt_mtm_arrivals), for a while */
	struct vt_hint_stats hints;		/* the guest hint channel (policy hints=on) */
	struct vt_migration_stats migration;	/* live migration (migration/migration.h) */
	struct vt_tlb_stats tlb;		/* TLB flushes (engine/tlb_stage.c) */
	struct vt_vm_tdp_stats tdp;		/* the tdp source's own flushes (tdp_flush) */
	/* the hotness histogram of the last placed window (MTM's), bytes per bin: */
	/* ... the demand the host's DRAM sharing reads; hist_window: 0 before one */
	uint64_t hist_bytes[VT_MTM_BINS];
	uint64_t hist_window;
	/* the nodes QEMU may allocate on (its cpuset's mems, bit n: node n), read */
	/* ... each placed window; 0: not read (every node) */
	uint64_t mems_allowed;
};

struct vt_vm;
struct vt_vm_hints;

/* The engine's report of a window after which the VM must be detached. */
typedef void (*vt_engine_failed_fn)(struct vt_vm *vm, void *opaque);
/* The engine's report of a window that ended and was published (on the worker). */
typedef void (*vt_engine_window_fn)(struct vt_vm *vm);

/* Where a VM's compressed tiers are, chosen when its engine starts. */
enum vt_ctier_kind {
	VT_CTIER_NONE,		/* none configured, or neither path available */
	VT_CTIER_HANDOFF,	/* the patched QEMU handed its RAM over: vtierd's pools */
	VT_CTIER_ZSWAP,		/* stock QEMU: MADV_PAGEOUT into the host's zswap */
};

struct vt_vm {
	char name[64];
	char qmp_path[128];
	pid_t pid;
	char qemu_version[32];
	struct vt_qmp *qmp;
	guint qmp_watch;
	GArray *ram;			/* struct vt_vm_ram */
	GArray *gpa_map;		/* struct vt_gpa_map, sorted by gpa */
	uint64_t ram_bytes;
	struct vt_vm_policy policy;
	enum vt_addr_space space;
	char profiler_name[32];
	char profiler_why[256];
	struct vt_access_source *src;
	struct vt_profiler *prof;
	struct vt_snapshot snap;
	uint64_t checks_mark;		/* source checks at the last window end */
	uint64_t tdp_flushes_mark;	/* the tdp source's flushes and flush_ns ... */
	uint64_t tdp_flush_ns_mark;	/* ... at the last window end (0 at its open) */
	struct vt_mtm *mtm;
	struct vt_refresh *refresh;	/* which of mtm's chunks the residency re-reads */
	GSource *window_src;		/* on ctx: the worker's timers */
	GSource *sample_src;
	char state[32];			/* "profiling", "observing", "off", "error: ..." */
	char last_error[256];		/* the last window's error; "" after a good one */
	/* the last policy refused and why, "" once a policy is taken: a refusal
	 * stays where the operator looks (vtierctl status), windows do not clear it */
	char policy_refused[320];
	struct vt_vm_stats stats;
	const struct vt_host_config *host;	/* the daemon's, read-only */
	const struct vt_registry *reg;		/* where the VM's layers report */
	GPtrArray *backends;		/* struct vt_backend *: hand-offs of this QEMU */
	bool by_handoff;		/* attached by a hand-off, not by QMP */
	/* attached as a libvirt domain (daemon/libvirt_domains.c); "" otherwise. Under lock. */
	char domain_uuid[37];
	char domain_name[256];

	/*
	 * The VM's worker thread runs its engine on ctx: windows, policy and
	 * moves never run on the daemon's main loop. Fields the engine changes
	 * (policy, state, profiler_*, space, stats, last_error, policy_refused, ram, gpa_map,
	 * ram_bytes) are written by the worker only, under lock; the main loop
	 * reads them under lock and asks for changes with vt_vm_worker_post_*().
	 * One exception: a libvirt policy the daemon refuses before the worker
	 * sees it is written to policy_refused by the main loop, under lock.
	 * backends is changed by the main loop under lock.
	 */
	GMutex lock;
	GMainContext *ctx;
	GMainLoop *loop;
	GThread *worker;
	struct vt_tiers tiers;		/* the worker's copy (free bytes refreshed per window) */
	enum vt_ctier_kind ctier_kind;	/* set by vt_engine_start */
	unsigned int nr_tiers;		/* NUMA tiers + compressed ones of ctier_kind */
	uint32_t tiers_allowed;		/* bit t: policy.tiers lets the VM on tier t */
	struct vt_zswap zswap;		/* VT_CTIER_ZSWAP: the QEMU process */
	uint64_t serial;		/* unique per attach: a stale failure report is ignored */
	/* the worker's, for the TCO report: phases, per-minute bytes, fault counts */
	struct vt_phase_tracker phase;
	struct vt_tco_history tco_history;	/* published under lock */
	uint64_t ctier_faults_mark[VT_MAX_TIERS];
	gint64 window_end_us;
	/* vtierctl heatmap (model/heatmap.h): the worker writes under lock, the loop copies */
	struct vt_heatmap *heatmap;
	struct vt_heatmap_acc *heatmap_acc;	/* the worker's alone */
	/* the guest hint channel (engine/hint_stage.c): the worker's alone */
	struct vt_vm_hints *hints;
	/* the TLB flush counters at the last window's end (engine/tlb_stage.c): the worker's */
	struct vt_tlb_marks tlb_marks;
	/* the host's shootdowns as last read, the daemon's (NULL: each window reads its own) */
	struct vt_tlb_host *tlb_host;
	/* the engine's owner, told of a failed window (set by vt_engine_start) */
	vt_engine_failed_fn engine_failed;
	void *engine_failed_opaque;
	/* on ctx: a start whose profiler failed, tried again (engine.c) */
	GSource *engine_retry_src;
	unsigned int engine_retries;	/* tries since the last start that worked */
	uint64_t engine_starts;		/* starts that worked: attach, new RAM, a policy
					 * key that is not live (vt_vm_policy_live()) */
	vt_engine_window_fn engine_window;	/* optional, set by the owner */
	/* live migration (migration/migration.h): the worker writes under lock */
	struct vt_vm_migration migration;
	/* the host's DRAM sharing (model/vm_share.h): the main loop writes under lock */
	struct vt_vm_share share;
};

/* Tiers of the VM's placement: the host's NUMA tiers, then the compressed tiers. */
unsigned int vt_vm_nr_tiers(const struct vt_vm *vm);
/* Tier t's name: the NUMA tier's, then the compressed tier's ("zswap" for zswap). */
const char *vt_vm_tier_name(const struct vt_vm *vm, unsigned int t);
/*
 * The tiers a policy's tiers= list allows, as bits of tier numbers (all of
 * them for ""); false when a name is not one of the VM's tiers or the fastest
 * tier is missing (faults bring pages back to it). Under the VM's lock.
 */
bool vt_vm_tiers_mask(const struct vt_vm *vm, const char *list, uint32_t *mask, GError **error);
/* Bytes of the VM on each tier: the store's count for vtierd's pools, else the residency. */
void vt_vm_tier_bytes(const struct vt_vm *vm, const struct vt_vm_stats *s, uint64_t *bytes);
/* The memory TCO report (model/tco_report.h) from the last window's figures, under the lock. */
void vt_vm_report_to_json(struct vt_vm *vm, JsonBuilder *b);
/*
 * The same report as STATS carries it to QEMU (vt_tco_report_to_wire): 0;
 * -ENODATA before the VM's first window, when there is no report; -EBUSY when
 * the worker holds the VM's lock (the main loop does not wait for it).
 */
int vt_vm_report_to_wire(struct vt_vm *vm, struct vtier_handoff_tco *tco,
			 struct vtier_handoff_tco_tier *tiers);
/* The heatmap (model/vm_heatmap.c): laid out at engine start, a column per window (worker). */
void vt_vm_heatmap_layout(struct vt_vm *vm);
void vt_vm_heatmap_window(struct vt_vm *vm, uint64_t window);
/* For the main loop: a copy under the VM's lock, then the JSON (docs/abi-control.md). */
void vt_vm_heatmap_to_json(struct vt_vm *vm, JsonBuilder *b);

#endif
