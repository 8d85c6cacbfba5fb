/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A VM's live migration as vtierd sees it (docs/vtierd.md, "Live migration").
 *
 * Source: QEMU's MIGRATION event 1 (started) on a backend's hand-off makes
 * the VM's worker write that backend's profile (handoff/migration_profile.h),
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
#include "vm_migration.h"

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
 * since is evicted too. False: an ordinary window; the first one after a
 * backend's ARRIVED queues those chunks once more, whatever its mover's
 * backlog (what the migration wrote after their last sweep).
 */
bool vt_migration_precopy_window(struct vt_vm *vm, GPtrArray *backends, struct vt_vm_stats *s);
/*
 * Worker, before a window (no change made): whether vt_migration_precopy_window
 * would take the window to come, as the backends say now.
 */
bool vt_migration_precopy_due(GPtrArray *backends, const struct vt_vm_stats *s);
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
