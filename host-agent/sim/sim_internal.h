/* SPDX-License-Identifier: GPL-2.0-or-later */
/* State shared by the two simulated sources (sim_poisson.c, sim_exact.c). */
#ifndef VTIER_TELEMETRY_SIM_INTERNAL_H
#define VTIER_TELEMETRY_SIM_INTERNAL_H

#include "sim_source.h"

struct vt_sim {
	struct vt_access_source src;
	const struct vt_workload *w;
	uint64_t now_ns;
	GRand *rng;
	/* Poisson model: last clear time (ns + 1) of every entry ever cleared. */
	GHashTable *cleared[VT_MAX_LEVELS];
	/* Exact model: one bit per entry, index relative to first[level]. */
	uint64_t *bits[VT_MAX_LEVELS];
	uint64_t first[VT_MAX_LEVELS];
	uint64_t count[VT_MAX_LEVELS];
};

static inline struct vt_sim *to_sim(struct vt_access_source *src)
{
	return (struct vt_sim *)src;
}

static inline uint64_t sim_end(const struct vt_sim *s)
{
	return s->w->base + s->w->footprint;
}

/* Is there an entry at @level covering @addr? */
static inline bool sim_present(const struct vt_sim *s, uint64_t addr, unsigned int level)
{
	return addr >= s->w->base && addr < sim_end(s) &&
	       level >= s->src.leaf_level && level < s->src.levels;
}

int vt_sim_mapped(struct vt_access_source *src, struct vt_range *out, size_t max);
void vt_sim_init(struct vt_sim *s, const struct vt_access_source_ops *ops,
		 const struct vt_workload *w, guint32 seed);
void vt_sim_fini(struct vt_sim *s);

/*
 * Generic scan built on test_clear(), for sources whose bits are consistent
 * across levels by construction (sim-exact); see access_source.h for the rules.
 */
long vt_scan_by_tests(struct vt_access_source *src, uint64_t start, uint64_t end,
		      unsigned int level, unsigned int skip_from, vt_young_fn fn, void *arg);

#endif
