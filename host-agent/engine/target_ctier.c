// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The compressed-tier target: orders into or out of vtierd's compressed pools
 * of a VM whose QEMU handed its RAM over, queued to the backend's mover
 * thread (movers/ctier_mover_thread.c).
 */
#include <errno.h>

#include "backend.h"
#include "target.h"

/*
 * An order into or out of a compressed tier: queued to the backend's mover
 * thread (it never runs here); its outcome shows in the next residency.
 */
static int ctier_order(struct vt_vm *vm, GPtrArray *backends, const struct vt_mtm_order *o,
		       const struct vt_mtm_chunk *c, bool movers_busy)
{
	struct vt_backend *b = vt_backend_of_hva(backends, c->start);
	unsigned int nr_numa = vm->tiers.nr;

	if (!b || c->end - b->hva > b->size)
		return -ENOENT;
	/*
	 * From one compressed tier to a deeper one saves less than compressing
	 * memory that is still in RAM, and costs a decompression and a
	 * compression: only in a window that began with the movers idle.
	 */
	if (o->from_tier >= (int)nr_numa && o->to_tier > o->from_tier && movers_busy)
		return -EAGAIN;
	if (o->bulk && o->to_tier >= (int)nr_numa && !o->promote)
		return vt_backend_queue_bulk(b, c->start - b->hva, c->end - c->start,
					     (unsigned int)(o->to_tier - (int)nr_numa));
	/* back from a compressed tier: into the memfd (on the fast node); the NUMA
	 * mover places it next window if it is not where the order wants it. The
	 * mover only evicts deeper, so a promotion to a faster compressed tier
	 * (placement=tco) fetches too, and the model places it again */
	return vt_backend_queue(b, c->start - b->hva, c->end - c->start,
				o->to_tier >= (int)nr_numa && !o->promote ?
				o->to_tier - (int)nr_numa : -1);
}

static bool ctier_takes(const struct vt_vm *vm, const struct vt_mtm_order *o)
{
	return vm->ctier_kind != VT_CTIER_ZSWAP &&
	       (o->to_tier >= (int)vm->tiers.nr || o->from_tier >= (int)vm->tiers.nr);
}

static int ctier_apply(struct vt_target_window *w, GArray *orders, unsigned int i, unsigned int *n)
{
	const struct vt_mtm_order *o = &g_array_index(orders, struct vt_mtm_order, i);
	const struct vt_mtm_chunk *c =
		&g_array_index(w->vm->mtm->chunks, struct vt_mtm_chunk, o->chunk);

	*n = 1;
	vt_target_order_done(w, o, c, ctier_order(w->vm, w->backends, o, c, w->movers_busy));
	return 0;
}

const struct vt_target_ops vt_target_ctier = {
	.name = "ctier",
	.takes = ctier_takes,
	.apply = ctier_apply,
};
