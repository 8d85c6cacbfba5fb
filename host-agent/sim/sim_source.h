/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Simulated access sources over a workload model, with a clock the caller
 * advances. Two models of the same page table:
 *
 * - "sim" (Poisson): an entry's accessed bit is derived when it is tested, from
 *   the expected number of accesses into the memory it covers since it was last
 *   cleared: young with probability 1 - exp(-N). Exact for random loads (each
 *   entry sees a Poisson process). State is kept only for entries ever cleared
 *   that some phase accesses, so a 64 TiB footprint costs what its profiler
 *   touches. Levels are drawn
 *   independently except in scan(), which draws the children of an entry it
 *   just found young conditioned on at least one of them being young when they
 *   were all last cleared together with it (as a scan that owns the subtree
 *   does), so that a young parent never hides only old children.
 * - "sim-exact": real bit arrays for every level; advance() draws every access
 *   and sets the bits on the whole path, as the hardware walker does. For
 *   footprints up to a few tens of GiB (tests compare the two models).
 *
 * Bits start clear, or set when the spec says "initial_bits": "young" (a
 * freshly populated heap); see struct vt_workload.
 */
#ifndef VTIER_TELEMETRY_SIM_SOURCE_H
#define VTIER_TELEMETRY_SIM_SOURCE_H

#include "access_source.h"
#include "workload.h"

struct vt_access_source *vt_sim_new(const struct vt_workload *w, guint32 seed);
/* Returns NULL and sets @error when the footprint is too large for bit arrays. */
struct vt_access_source *vt_sim_exact_new(const struct vt_workload *w, guint32 seed, GError **error);

/* Both models: move the clock forward by @dt_ns. */
void vt_sim_advance(struct vt_access_source *src, uint64_t dt_ns);
uint64_t vt_sim_now_ns(const struct vt_access_source *src);
bool vt_is_sim(const struct vt_access_source *src);

/* Largest footprint the exact model accepts. */
#define VT_SIM_EXACT_MAX_BYTES (64ULL << 30)

#endif
