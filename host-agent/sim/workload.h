/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A MASIM-like workload model: a heap of a given footprint and page size, and
 * a sequence of phases. In each phase the program issues accesses at a fixed
 * rate into a set of hot ranges, each with a weight (its share of the accesses)
 * and a pattern (how accesses spread inside the range). Memory outside the hot
 * ranges is not accessed: the hot ranges are the ground truth.
 *
 * "Accesses" are the ones that walk the page table and so set accessed bits
 * (TLB misses). For random loads over a set much larger than the TLB reach,
 * that is every load.
 */
#ifndef VTIER_TELEMETRY_WORKLOAD_H
#define VTIER_TELEMETRY_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "access_source.h"
#include "size.h"

enum vt_pattern {
	VT_PATTERN_UNIFORM,
	VT_PATTERN_GAUSSIAN,	/* mean at the centre, sigma = param * size */
	VT_PATTERN_ZIPF,	/* page of rank k (from the range start) gets k^-param */
};

struct vt_hot_range {
	uint64_t start;		/* absolute address */
	uint64_t size;
	double weight;
	enum vt_pattern pattern;
	double param;
	bool unscored;		/* accessed, but not in the hot set the score counts */
};

struct vt_phase {
	char *name;
	double duration_s;
	double access_rate;	/* accesses per second, all hot ranges together */
	unsigned int nr_ranges;
	struct vt_hot_range *ranges;
	double weight_sum;
};

struct vt_workload {
	char *name;
	uint64_t base;
	uint64_t footprint;
	unsigned int page_shift;	/* 12 or 21 */
	unsigned int levels;		/* 4 or 5 */
	unsigned int nr_phases;
	struct vt_phase *phases;
	double total_s;
	/*
	 * Accessed bits at time 0: set everywhere (the heap was just populated,
	 * as in a freshly booted VM) or clear everywhere (default: the table was
	 * aged before the run). With "young", a profiler pays for stale bits and
	 * the Poisson model keeps state for every entry ever cleared.
	 */
	bool initially_young;
};

#define VT_WORKLOAD_ERROR (vt_workload_error_quark())
GQuark vt_workload_error_quark(void);

enum vt_workload_error {
	VT_WORKLOAD_ERROR_PARSE,
	VT_WORKLOAD_ERROR_INVALID,
	VT_WORKLOAD_ERROR_UNKNOWN,
};

/* Spec files (JSON, see docs/telemetry.md) and built-in scenarios. */
struct vt_workload *vt_workload_from_json(const char *data, gssize len, GError **error);
struct vt_workload *vt_workload_load(const char *path, GError **error);
struct vt_workload *vt_workload_builtin(const char *name, GError **error);
const char *const *vt_workload_builtin_names(void);
/* The JSON text of a built-in scenario, or NULL. */
const char *vt_workload_builtin_json(const char *name);
/* Check ranges, sizes, rates; fills derived fields (weight_sum, total_s). */
bool vt_workload_validate(struct vt_workload *w, GError **error);
void vt_workload_free(struct vt_workload *w);
typedef struct vt_workload vt_workload;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vt_workload, vt_workload_free)


static inline unsigned int vt_workload_leaf_level(const struct vt_workload *w)
{
	return w->page_shift == 21 ? VT_LEVEL_PMD : VT_LEVEL_PTE;
}

/* Phase in force at time @t_s (the last phase continues after the end). */
unsigned int vt_workload_phase_at(const struct vt_workload *w, double t_s);
double vt_workload_phase_start(const struct vt_workload *w, unsigned int phase);

/* Share of range @r's accesses that land in [@a, @b). */
double vt_range_mass(const struct vt_hot_range *r, unsigned int page_shift, uint64_t a, uint64_t b);
/* Accesses per second into [@a, @b) during @phase. */
double vt_phase_rate(const struct vt_workload *w, const struct vt_phase *p, uint64_t a, uint64_t b);
/* Expected number of accesses into [@a, @b) between times @t0 and @t1 (seconds). */
double vt_workload_accesses(const struct vt_workload *w, uint64_t a, uint64_t b, double t0, double t1);
/* Draw one access address of @phase (exact simulation). */
uint64_t vt_phase_draw(const struct vt_workload *w, const struct vt_phase *p, GRand *rng);
/* A standard normal draw (Box-Muller). */
double vt_rand_gaussian(GRand *rng);
/* Does any phase access [@a, @b)? */
bool vt_workload_ever_accessed(const struct vt_workload *w, uint64_t a, uint64_t b);
/* Bytes of [@a, @b) inside the hot ranges of @phase that are scored (the ground truth). */
uint64_t vt_phase_hot_bytes(const struct vt_phase *p, uint64_t a, uint64_t b);
uint64_t vt_phase_hot_total(const struct vt_phase *p);

#endif
