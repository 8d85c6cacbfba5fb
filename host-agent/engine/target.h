/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engine's apply stage (engine/apply.c): a window's move orders, in the
 * policy's order, each run of them handed to the target that takes it, the way
 * DAMON's core hands regions to its operations. A target is a plain table of
 * functions; one per way a page can change tier:
 *   numa   move_pages(2) between the host's NUMA tiers (engine/target_numa.c)
 *   ctier  into or out of vtierd's compressed pools, queued to a hand-off's
 *          mover thread (engine/target_ctier.c)
 *   zswap  stock QEMU's compressed tier: MADV_PAGEOUT / MADV_WILLNEED
 *          (engine/target_zswap.c)
 */
#ifndef VTIER_CORE_MOVER_H
#define VTIER_CORE_MOVER_H

#include <stdbool.h>
#include <stddef.h>

#include <glib.h>

#include "mtm.h"
#include "vm.h"

/* One window's moves: what every target needs, and where it counts. */
struct vt_target_window {
	struct vt_vm *vm;
	GPtrArray *backends;		/* the VM's hand-offs (vt_vm_backends_ref) */
	const struct vt_mtm_params *mp;	/* the policy's, for vt_mtm_commit() */
	struct vt_vm_stats *s;		/* the window's stats, counted in place */
	bool movers_busy;		/* a hand-off's mover had a backlog when the window began */
	const uint64_t *node_mask;	/* per NUMA tier, the nodes moves may target (0: any) */
	char *err;			/* the VM's last_error when a target stops the window */
	size_t err_len;
};

struct vt_target_ops {
	const char *name;
	/*
	 * Does this target carry out @o? Asked for each order in turn, of the
	 * targets in vt_apply_orders()'s order; the first that takes it applies it.
	 */
	bool (*takes)(const struct vt_vm *vm, const struct vt_mtm_order *o);
	/*
	 * Carry out orders[@i] and as many of the ones right after it as it
	 * does in the same call; *@n: how many it consumed (at least 1). Each
	 * order's outcome is counted in w->s and, when done, committed to the
	 * VM's MTM state. Returns 0, or a -errno that ends the window's moves
	 * with w->err set (-ESRCH: QEMU is gone, the VM is detached). Called on
	 * the VM's worker until half a window has passed; the orders left then
	 * wait for the next window.
	 */
	int (*apply)(struct vt_target_window *w, GArray *orders, unsigned int i, unsigned int *n);
};

extern const struct vt_target_ops vt_target_numa;
extern const struct vt_target_ops vt_target_ctier;
extern const struct vt_target_ops vt_target_zswap;

/*
 * Record order @o as carried out in the VM's placement history (thrash
 * control, hold, moves per chunk); vtierd -v logs it with the chunk's EMA.
 */
void vt_target_commit(struct vt_vm *vm, const struct vt_mtm_order *o,
		      const struct vt_mtm_params *mp);

/*
 * For targets that queue one order at a time: count order @o on chunk @c with
 * the target's outcome @ret (0: done, -EAGAIN: deferred to the next window,
 * other -errno: failed) and commit it when done.
 */
void vt_target_order_done(struct vt_target_window *w, const struct vt_mtm_order *o,
			  const struct vt_mtm_chunk *c, int ret);

/*
 * The apply stage: @w's orders (mode auto) within half a window, with the
 * movers' backlog as the window read it before its residency. False when the
 * VM must be detached (QEMU is gone), with w->err set.
 */
struct vt_window;
bool vt_apply_orders(struct vt_window *w);

#endif
