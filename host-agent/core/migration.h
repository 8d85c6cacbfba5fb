/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A VM's live migration as vtierd sees it (docs/vtierd.md, "Live migration").
 *
 * Source: QEMU's MIGRATION event 1 (started) on a backend's hand-off makes
 * the VM's worker write that backend's profile (core/migration_profile.h),
 * which the main loop sends as PROFILE; until event 2 (completed) or 3
 * (failed, cancelled) the VM is "outgoing" and its windows start no
 * promotion (the destination places from the profile written at the start,
 * so a promotion now would not be kept there: it only costs the source).
 *
 * Destination: a HELLO with INCOMING brings the source's profile; the store
 * job checks it, and the VM's engine seeds its fresh MTM state from it and
 * places from it from the first window. A garbled or foreign profile is
 * refused with its reason logged, counted, and the VM profiles from scratch.
 */
#ifndef VTIER_CORE_MIGRATION_H
#define VTIER_CORE_MIGRATION_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include <vtier/handoff.h>

#include "mtm.h"
#include "qmp_client.h"

enum vt_migration_state {
	VT_MIGRATION_NONE,	/* no migration in progress */
	VT_MIGRATION_OUTGOING,	/* started on this host, not ended yet */
};

/* Published with the window's stats (struct vt_vm_stats). */
struct vt_migration_stats {
	uint64_t started;		/* outgoing migrations (event 1 on any backend) */
	uint64_t completed;		/* ... ended by event 2 */
	uint64_t failed;		/* ... ended by event 3 (failed or cancelled) */
	uint64_t profiles_written;	/* profiles written for QEMU to carry */
	uint64_t profile_bytes;		/* size of the last one */
	uint64_t profile_errors;	/* a profile could not be written (no state yet) */
	uint64_t promotions_held;	/* chunk promotions not started while outgoing */
	uint64_t demotions_held;	/* ... and demotions that free no DRAM */
	uint64_t profiles_seeded;	/* incoming profiles the VM's state was seeded from */
	uint64_t profiles_refused;	/* incoming profiles refused: profiled from scratch */
	uint64_t seeded_chunks;		/* chunks whose EMA and age came from a profile */
	uint64_t plan_orders;		/* orders of the profile's placement */
	uint64_t handoff_orders;	/* ... queued when the hand-off was accepted */
	uint64_t precopy_windows;	/* windows while the migration still wrote guest RAM */
	uint64_t precopy_orders;	/* ... and the plan's orders they queued */
	uint64_t plan_chunks;		/* chunks the profile's placement still has to move */
	/* outgoing: pages the migration faulted back from the compressed tiers */
	uint64_t keep_chunks;		/* cold compressed chunks at the start, still cold */
	uint64_t reevict_orders;	/* orders that evicted them again */
	uint64_t extra_bytes;		/* stored at the start - stored now, + held (last window) */
	uint64_t extra_peak_bytes;	/* the most of it in the last migration */
	uint64_t reads_held_bytes;	/* the movers' fills for the migration's reads, not punched yet */
};

/* The VM's part: written by its worker under the VM's lock. */
struct vt_vm_migration {
	enum vt_migration_state state;
	char note[200];			/* the last profile written or taken, or why refused */
	GArray *plan;			/* struct vt_seed_order: the worker's alone */
	unsigned int plan_age;		/* windows since the plan was made */
	unsigned int plan_idle;		/* ... of those, windows in which it ordered nothing */
	GArray *keep;			/* outgoing: struct vt_seed_order, the worker's alone */
	uint64_t stored_at_start;	/* bytes in the compressed tiers when it started */
	bool holding_profiles;		/* backends keep their profile until a window used it */
	/*
	 * main loop: attached by QMP while its QEMU waited for an incoming
	 * migration, whose MIGRATION events are not an outgoing one's
	 */
	bool qmp_incoming;
};

/*
 * The profile's placement stops after this many windows in which it ordered
 * nothing (its chunks are placed, refused, or out of room), or after
 * VT_MIGRATION_PLAN_WINDOWS in all: the VM's own profile rules then.
 */
#define VT_MIGRATION_PLAN_IDLE_WINDOWS 8
#define VT_MIGRATION_PLAN_WINDOWS 64
/*
 * An early hand-off's precopy ends with MIGRATION ARRIVED, or after this many
 * windows without it (QEMU is a peer that may lie: its VM is profiled then).
 */
#define VT_MIGRATION_PRECOPY_WINDOWS_MAX 3600

struct vt_vm;
struct vt_backend;
struct vt_vm_stats;

/*
 * The VM's migration as operators see it (vtierctl status, QEMU's
 * query-memory-tiers), under the VM's lock: outgoing, placing (the
 * destination still moving chunks from the source's profile), or none.
 */
enum vtier_migration_state vt_migration_view(const struct vt_vm *vm);
const char *vt_migration_view_name(enum vtier_migration_state state);
/*
 * Main loop, for a STATS report: the VM's migration block. -EBUSY when the
 * VM's worker holds its lock (never waited for).
 */
int vt_migration_to_wire(struct vt_vm *vm, struct vtier_handoff_migration_stats *out);

/*
 * Main loop: QEMU says a migration of @b's VM started or ended. The VM's
 * worker takes it; on START it writes @b's profile, which the main loop
 * then sends on @b's hand-off (if it is still there).
 */
void vt_migration_post_event(struct vt_vm *vm, struct vt_backend *b,
			     enum vtier_migration_event event);

/*
 * Main loop: QEMU's QMP said MIGRATION with @status (a VM attached by QMP,
 * e.g. a libvirt domain): the same state as the hand-off's events, for the
 * VM alone (no profile, no reads to track: its memory is not served by
 * vtierd). Ignored while the VM's own incoming migration runs.
 */
void vt_migration_post_qmp(struct vt_vm *vm, enum vt_qmp_migration status);

/*
 * Store job (before the backend is visible): check the profile an incoming
 * HELLO brought (b->profile_buf, copied by the HELLO's callback; a
 * RECONNECT's is not, the VM has run here since) against @b's size. Kept
 * when good; else dropped with the reason in b->profile_why. Logs nothing.
 */
void vt_migration_check_profile(struct vt_backend *b);

/*
 * Worker, at engine start with a fresh MTM state, or none for mode=off
 * (under the VM's lock): seed it from the profiles the VM's backends
 * brought and make the plan; count the refused ones. Without a state the
 * profiles are let go unused.
 */
void vt_migration_seed(struct vt_vm *vm);
/*
 * Worker, at a window's start: while an early hand-off's guest RAM still
 * arrives (a backend's HELLO had VTIER_HELLO_F_PRECOPY, no MIGRATION ARRIVED
 * yet), the window is this alone and true comes back: no observation (the
 * guest does not run: the seeded EMAs stay), no residency, no MTM decision;
 * the plan's chunks that go to a compressed tier are queued again as bulk
 * evictions to each such backend whose mover is idle, so that what arrived
 * since is evicted too. False: an ordinary window.
 */
bool vt_migration_precopy_window(struct vt_vm *vm, GPtrArray *backends, struct vt_vm_stats *s);
/*
 * Worker, placement stage (s->model built for this window): an incoming
 * VM's plan, or while outgoing the chunks the migration faulted back,
 * evicted again within @budget (what is left of the window's; unlimited
 * past the policy's migration_extra). Room is taken. @backends: the VM's
 * (vt_vm_backends_ref), whose movers' held reads count as extra memory.
 */
void vt_migration_place(struct vt_vm *vm, GPtrArray *backends, uint64_t *room, uint64_t budget,
			GArray *orders, struct vt_mtm_window_stats *ws, struct vt_vm_stats *s);
/* Worker, after the policy: while outgoing, the window's promotions are dropped and counted. */
void vt_migration_hold(struct vt_vm *vm, GArray *orders, struct vt_vm_stats *s);
/* Worker, a window published (under the VM's lock): the backends' profiles are used up. */
void vt_migration_window_done(struct vt_vm *vm);
/* Free the VM's migration state (the VM goes). */
void vt_migration_clear(struct vt_vm *vm);

/* For the status and stats JSON (under the VM's lock). */
void vt_migration_status_to_json(const struct vt_vm *vm, JsonBuilder *b);
void vt_migration_stats_to_json(const struct vt_migration_stats *s, JsonBuilder *b);

#endif
