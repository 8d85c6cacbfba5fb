/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A VM's live migration as the VM model holds it (migration.h acts on it):
 * its state, its stats, and the views of it that operators and QEMU see.
 */
#ifndef VTIER_MODEL_VM_MIGRATION_H
#define VTIER_MODEL_VM_MIGRATION_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include <vtier/handoff.h>

struct vt_vm;

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
	uint64_t arrival_orders;	/* ... queued again when the guest ran (ARRIVED) */
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

#endif
