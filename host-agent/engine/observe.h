/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engine's profiler stage (engine/observe.c): the VM's profiler, chosen and
 * started with the engine, and what its window's snapshot says as the MTM
 * policy's region map.
 */
#ifndef VTIER_CORE_PROFILE_H
#define VTIER_CORE_PROFILE_H

#include <stdbool.h>

#include <glib.h>

#include "vm.h"

/*
 * Choose the VM's profiler (vm->profiler_name, _why, space, src) and start it
 * over guest RAM @ranges (vm->ram->len of them, sorted by address). False
 * with @error when there is none or it does not start.
 */
bool vt_observe_start(struct vt_vm *vm, const struct vt_range *ranges, GError **error);
/*
 * The policy's tdp_flush on the VM's source (vm->src, just opened; called by
 * vt_observe_start): a tdp source is told to flush once per window or never,
 * and vm->stats.tdp says what is in effect. False with @error naming the key
 * and why when the policy asks for a flush this source cannot do: a module
 * without VTIER_TDP_F_FLUSH_TLB (version 1), or a profiler not over tdp.
 */
bool vt_observe_tdp_flush(struct vt_vm *vm, GError **error);
/*
 * The profiler's window ended (on the VM's worker): the tdp source's flushes
 * since the last window end counted into @s->tdp, and, with tdp_flush=window,
 * the next window's first call set to flush. Nothing for other sources.
 */
struct vt_vm_stats;
void vt_observe_window_end(struct vt_vm *vm, struct vt_vm_stats *s);
/* The profiler's attributes for the VM's policy (windows, samples) and size (regions). */
struct vt_profiler_attrs;
void vt_observe_attrs(const struct vt_vm *vm, struct vt_profiler_attrs *attrs);
/* Stop and free the VM's profiler and source; the snapshot is cleared. */
void vt_observe_stop(struct vt_vm *vm);
/*
 * The last window's snapshot (vm->snap) as MTM regions in QEMU's
 * host-virtual addresses, sorted by address (struct vt_mtm_region).
 */
GArray *vt_observe_regions(const struct vt_vm *vm);

#endif
