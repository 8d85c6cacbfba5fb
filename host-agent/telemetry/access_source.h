/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The access-source contract: one address space (guest-physical for a real VM)
 * seen as an x86 radix page table of 4 or 5 levels whose entries carry an
 * ACCESSED bit at every level. Profilers know nothing else about where the
 * bits come from.
 *
 * Levels are numbered from the leaf: 0 = PTE (4 KiB), 1 = PMD (2 MiB),
 * 2 = PUD (1 GiB), 3 = P4D/PGD (512 GiB), 4 = PGD of a 5-level table (256 TiB).
 * A source backed by 2 MiB pages has its leaves at level 1 and nothing below.
 */
#ifndef VTIER_TELEMETRY_ACCESS_SOURCE_H
#define VTIER_TELEMETRY_ACCESS_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "range.h"

#define VT_PAGE_SHIFT 12
#define VT_LEVEL_BITS 9
#define VT_MAX_LEVELS 5

enum vt_level {
	VT_LEVEL_PTE = 0,
	VT_LEVEL_PMD = 1,
	VT_LEVEL_PUD = 2,
	VT_LEVEL_P4D = 3,
	VT_LEVEL_PGD5 = 4,
};

/* Result of one test-and-clear. */
enum vt_bit {
	VT_BIT_OLD = 0,		/* present, not accessed since last cleared */
	VT_BIT_YOUNG = 1,	/* present, accessed since last cleared (now cleared) */
	VT_BIT_ABSENT = 2,	/* nothing mapped at that level for that address */
};

/* One element of a batched test-and-clear. */
struct vt_probe {
	uint64_t addr;
	uint8_t level;
	uint8_t result;		/* enum vt_bit, filled in by the source */
};

/* Called by scan() for every young entry it finds (and clears), in address order. */
typedef void (*vt_young_fn)(uint64_t entry_start, unsigned int level, void *arg);

struct vt_access_source;

/**
 * struct vt_access_source_ops - what a source of accessed bits provides.
 * @name:        short name ("sim", "sim-exact", "tdp", "guest").
 * @mapped:      fill @out with up to @max mapped ranges, sorted, non-overlapping;
 *               return how many there are (may exceed @max) or -errno. Called
 *               when a profiler starts and when it refreshes its regions.
 * @test_clear:  return the enum vt_bit of the entry at @level covering @addr and
 *               clear it. Called for single probes; profilers prefer @batch.
 * @batch:       test-and-clear @n probes in one call, each result in its
 *               probe. Called once per sampling interval by region profilers, so
 *               a source that crosses a syscall boundary pays it once. Returns
 *               0 or -errno (then no result is meaningful).
 * @scan:        visit [@start, @end) at @level: for every entry at a level in
 *               (@level, @skip_from] that lies wholly inside the range, test and
 *               clear it and skip its subtree when it was old; at @level, test and
 *               clear every entry reached and call @fn for the young ones. With
 *               @skip_from == @level nothing is skipped. Returns the number of
 *               young entries reported or -errno. Called at window ends by
 *               profilers that split regions and by scan-based profilers.
 * @destroy:     free the source. Accepts NULL.
 *
 * Every test of a bit, in any of the three calls, counts as one check in
 * @checks[level] of struct vt_access_source: the source increments it, and
 * profilers read it for their cost accounting.
 */
struct vt_access_source_ops {
	const char *name;
	int (*mapped)(struct vt_access_source *src, struct vt_range *out, size_t max);
	int (*test_clear)(struct vt_access_source *src, uint64_t addr, unsigned int level);
	int (*batch)(struct vt_access_source *src, struct vt_probe *probes, size_t n);
	long (*scan)(struct vt_access_source *src, uint64_t start, uint64_t end,
		     unsigned int level, unsigned int skip_from, vt_young_fn fn, void *arg);
	void (*destroy)(struct vt_access_source *src);
};

struct vt_access_source {
	const struct vt_access_source_ops *ops;
	unsigned int levels;		/* 4 or 5 */
	unsigned int leaf_level;	/* 0 for 4 KiB pages, 1 for 2 MiB pages */
	uint64_t checks[VT_MAX_LEVELS];	/* accessed-bit tests done, per level */
	uint64_t calls;			/* test_clear, batch and scan calls */
	bool timed;			/* keep cost_ns (benches: two clock reads a call) */
	uint64_t cost_ns;		/* thread CPU time spent inside the source, when timed */
};

static inline unsigned int vt_level_shift(unsigned int level)
{
	return VT_PAGE_SHIFT + VT_LEVEL_BITS * level;
}

static inline uint64_t vt_level_size(unsigned int level)
{
	return 1ULL << vt_level_shift(level);
}

static inline uint64_t vt_entry_start(uint64_t addr, unsigned int level)
{
	return addr & ~(vt_level_size(level) - 1);
}

static inline unsigned int vt_top_level(const struct vt_access_source *src)
{
	return src->levels - 1;
}

const char *vt_level_name(unsigned int level);
/* Highest level to which @addr is aligned, capped at @top. */
unsigned int vt_addr_align_level(uint64_t addr, unsigned int top);
uint64_t vt_source_checks_total(const struct vt_access_source *src);

/* Thin wrappers that keep the cost accounting in one place. */
int vt_source_mapped(struct vt_access_source *src, struct vt_range *out, size_t max);
int vt_source_test_clear(struct vt_access_source *src, uint64_t addr, unsigned int level);
int vt_source_batch(struct vt_access_source *src, struct vt_probe *probes, size_t n);
long vt_source_scan(struct vt_access_source *src, uint64_t start, uint64_t end,
		    unsigned int level, unsigned int skip_from, vt_young_fn fn, void *arg);
void vt_source_destroy(struct vt_access_source *src);
/*
 * What one read of the thread CPU clock costs (ns; the cheapest of five
 * batches of 1000). A timed call's cost_ns holds about one read beyond the
 * source's own time and its caller's time about one more: benches subtract
 * this per call from each.
 */
uint64_t vt_source_clock_ns(void);

#endif
