/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A VM's state as a migration profile and back (format: iface/profile_format.h).
 * The source writes, per handed-off backend, what its MTM state says of each
 * chunk; the destination seeds a fresh MTM state from it (EMA, age, tiers
 * that refuse a chunk) and keeps a placement plan, each chunk to the tier the
 * profile names, mapped onto its own tiers, that the placement stage carries
 * out from the first window on within the destination's own room and tiers.
 * The profile is a hint: nothing in it is trusted beyond that.
 */
#ifndef VTIER_CORE_MIGRATION_PROFILE_H
#define VTIER_CORE_MIGRATION_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include "mtm.h"
#include "profile_format.h"

/* What a profile is written from: one backend's part of a VM's MTM state. */
struct vt_profile_source {
	const struct vt_mtm *mtm;
	uint64_t hva;			/* the backend in the MTM's address space */
	uint64_t size;
	const struct vt_profile_tier *tiers;	/* the VM's tiers, fastest first */
	unsigned int n_tiers;
	const double *ratio;		/* per tier: measured compression ratio, 0: unknown */
	uint64_t windows;
};

/*
 * Write the v2 profile of @src into a new buffer (@out, @len; g_free it):
 * profile chunks of the MTM's chunk size (a power of two at most, larger
 * when the backend would not fit VTIER_HANDOFF_PROFILE_MAX). 0 or -EINVAL.
 */
int vt_migration_profile_write(const struct vt_profile_source *src, uint8_t **out, size_t *len);

/*
 * The destination's tier for each of the profile's tiers (@map[t], -1: none):
 * the tier of the same name and kind, else the one of the same kind and rank
 * (the second compressed tier of the source is the destination's second, or
 * its last), else for a compressed tier the slowest memory tier.
 */
void vt_migration_profile_map_tiers(const struct vt_profile *p, const struct vt_profile_tier *ours,
				    unsigned int n_ours, int *map);

/* A chunk and the tier the profile puts it on (the destination's). */
struct vt_seed_order {
	unsigned int chunk;
	int tier;
};

/*
 * Seed @m's chunks inside [@hva, +p->size_bytes) from @p: EMA (size-weighted
 * over the profile chunks it covers), age (the youngest), compressed tiers
 * (@first_ctier on) refused when a profile chunk was incompressible; and
 * append to @plan the chunks whose profile tier maps (@map) to a tier below
 * the fastest (filling tier 0 is MTM's, from the seeded EMAs, within the
 * destination's allowance).
 * Returns the chunks seeded.
 */
unsigned int vt_migration_profile_seed(struct vt_mtm *m, uint64_t hva, const struct vt_profile *p,
				       const int *map, unsigned int first_ctier, GArray *plan);

/*
 * The placement from the profile, one window's worth: for each chunk of
 * @plan not ordered already this window (mark @orders first) and not where
 * the plan puts it, an order to that tier when @allowed and @room let it
 * (room is taken). Entries whose chunk is there, has no page present, or
 * was refused by the tier, leave the plan. Returns the orders added.
 */
unsigned int vt_migration_profile_place(struct vt_mtm *m, GArray *plan, uint32_t allowed,
					uint64_t *room, GArray *orders,
					struct vt_mtm_window_stats *ws);

/*
 * The entries of @plan from @from on that go to a compressed tier
 * (@first_ctier on) the policy allows (@allowed) and lie inside [@start,
 * @end): what the destination evicts as soon as it accepts the hand-off,
 * before its first window, within @room (guest bytes per tier, taken: a
 * tier's pool cap, so that a pool never fills with what the hand-off queued;
 * what does not fit the windows place). Appended to @out as orders (bulk,
 * from tier -1: not read yet). Returns how many.
 */
unsigned int vt_migration_profile_at_handoff(const struct vt_mtm *m, const GArray *plan,
					     unsigned int from, unsigned int first_ctier,
					     uint32_t allowed, uint64_t start, uint64_t end,
					     uint64_t *room, GArray *out);

/*
 * Source, at the start of an outgoing migration: the chunks of @m that are
 * cold (EMA below VT_MTM_COLD) and on a compressed tier (@first_ctier on),
 * into @keep with that tier. Reading guest RAM for the migration faults
 * their pages back; these are the chunks to evict again.
 */
unsigned int vt_migration_keep_plan(const struct vt_mtm *m, unsigned int first_ctier,
				    GArray *keep);

/*
 * Source, each window while outgoing: an order back to its tier for each
 * chunk of @keep with pages on tier 0 again (its last residency), not
 * ordered already this window, within @budget bytes (the rate limit) and
 * the tier's @room. A chunk that got warm (the guest, not the migration,
 * reads it) leaves @keep. Returns the orders added; @ws counts their bytes.
 */
unsigned int vt_migration_reevict(struct vt_mtm *m, GArray *keep, uint64_t budget,
				  uint64_t *room, GArray *orders, struct vt_mtm_window_stats *ws);

#endif
