/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engine's residency stage (engine/residency.c): after the profiler's
 * window and before the policy, where the chunks of the VM's MTM state are.
 * Each window re-reads only the chunks vm->refresh names (policy/refresh.h):
 * the ones the last window's orders moved and a round-robin slice of
 * VT_RESIDENCY_SAMPLES sampled pages; the others keep what they had.
 */
#ifndef VTIER_CORE_RESIDENCY_H
#define VTIER_CORE_RESIDENCY_H

#include <glib.h>

#include "vm.h"

#define VT_RESIDENCY_STRIDE (128 * 1024)	/* one status sample per 128 KiB */
/*
 * Sampled pages per window in the round robin: 256 chunks of 2 MiB, 512 MiB
 * of guest RAM per window, ~0.2 ms of move_pages status here
 * (docs/bench-agent.md).
 */
#define VT_RESIDENCY_SAMPLES 4096
/*
 * ... but a chunk nobody moved is not re-read more often than once in this
 * many windows: below 2 GiB of guest RAM the slice is a quarter of the
 * chunks (1 GiB: 128 chunks, 2048 samples a window, not all 512 chunks every
 * second window), so that a small VM does not pay more per window than a
 * large one (docs/bench-agent.md).
 */
#define VT_RESIDENCY_MIN_WINDOWS 4

/* A new plan for the VM's new MTM state (vm->mtm): its first window reads every chunk. */
void vt_residency_start(struct vt_vm *vm);
/*
 * Re-read the residency (vt_mtm_residency_set) of this window's chunks from
 * the pages' places; @backends: the VM's hand-offs (vt_vm_backends_ref).
 * 0 or -errno of move_pages (-ESRCH: QEMU is gone). On the worker.
 */
int vt_residency_query(struct vt_vm *vm, GPtrArray *backends);
/*
 * The movers stage was given @orders (struct vt_mtm_order): their chunks are
 * read again next window, those queued to a hand-off's mover once it is idle.
 */
void vt_residency_moved(struct vt_vm *vm, const GArray *orders);
/*
 * The window's bytes per tier into @s->tier[].resident_bytes from MTM's
 * sampled totals @sampled (a chunk nobody moved is as old as its last turn
 * in the round robin), vtierd's pools from their stores' page counts in
 * @s->model (built for this window).
 */
void vt_residency_tier_bytes(const struct vt_vm *vm, const uint64_t *sampled,
			     struct vt_vm_stats *s);

#endif
