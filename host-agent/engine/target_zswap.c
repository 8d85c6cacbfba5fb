// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The zswap target: the compressed tier of a VM whose QEMU did not hand its
 * RAM over (stock QEMU). A chunk going down is paged out into the host's
 * zswap (movers/zswap.c); one coming back is asked back with MADV_WILLNEED.
 */
#include "target.h"
#include "zswap.h"

/* An order into or out of zswap, carried out at once. 0 or -errno. */
static int zswap_order(struct vt_vm *vm, const struct vt_mtm_order *o,
		       const struct vt_mtm_chunk *c)
{
	unsigned int nr_numa = vm->tiers.nr;
	int64_t n;

	/* stock QEMU: the kernel compresses into zswap, and reads back on demand */
	n = o->to_tier >= (int)nr_numa ?
	    vt_zswap_pageout(&vm->zswap, c->start, c->end - c->start) :
	    vt_zswap_willneed(&vm->zswap, c->start, c->end - c->start);
	return n < 0 ? (int)n : 0;
}

static bool zswap_takes(const struct vt_vm *vm, const struct vt_mtm_order *o)
{
	return vm->ctier_kind == VT_CTIER_ZSWAP &&
	       (o->to_tier >= (int)vm->tiers.nr || o->from_tier >= (int)vm->tiers.nr);
}

static int zswap_apply(struct vt_target_window *w, GArray *orders, unsigned int i, unsigned int *n)
{
	const struct vt_mtm_order *o = &g_array_index(orders, struct vt_mtm_order, i);
	const struct vt_mtm_chunk *c =
		&g_array_index(w->vm->mtm->chunks, struct vt_mtm_chunk, o->chunk);

	*n = 1;
	vt_target_order_done(w, o, c, zswap_order(w->vm, o, c));
	return 0;
}

const struct vt_target_ops vt_target_zswap = {
	.name = "zswap",
	.takes = zswap_takes,
	.apply = zswap_apply,
};
