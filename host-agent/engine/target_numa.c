// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The NUMA target: orders between the host's NUMA tiers, carried out with
 * move_pages(2) on the QEMU process (movers/numa.c), consecutive orders to
 * one tier in one page list.
 */
#include <errno.h>

#include "target.h"
#include "numa.h"

/*
 * How many orders from @i on go to the same NUMA tier, one after the other
 * (the order of the orders stays: demotions that make room come first).
 */
static unsigned int numa_run(struct vt_vm *vm, GArray *orders, unsigned int i)
{
	const struct vt_tiers *tiers = &vm->tiers;
	const struct vt_mtm_order *o = &g_array_index(orders, struct vt_mtm_order, i);
	unsigned int n = 1;

	while (i + n < orders->len && n < VT_NUMA_RANGES_MAX) {
		const struct vt_mtm_order *x = &g_array_index(orders, struct vt_mtm_order, i + n);

		if (x->to_tier != o->to_tier || x->from_tier >= (int)tiers->nr)
			break;
		n++;
	}
	return n;
}

/*
 * Move the @n chunks of orders[@i..] to their tier's node (of the nodes the
 * window allows, @node_mask: the one with the most free memory, as for a
 * single order) with one page list, then count and commit each order as if
 * alone. 0, or the -errno that stopped it.
 */
static int numa_orders(struct vt_vm *vm, GArray *orders, unsigned int i, unsigned int n,
		       const uint64_t *node_mask, const struct vt_mtm_params *mp,
		       struct vt_vm_stats *s)
{
	struct vt_numa_range r[VT_NUMA_RANGES_MAX] = { 0 };
	struct vt_move_result total = { 0 };
	const struct vt_mtm_order *o = &g_array_index(orders, struct vt_mtm_order, i);
	unsigned int tier = (unsigned int)o->to_tier;
	/* free memory as read once for the window (vt_tiers_refresh in placement.c) */
	int node = node_mask && node_mask[tier] ?
		   vt_tiers_roomiest_node_in(&vm->tiers, tier, node_mask[tier]) : -1, ret;

	if (node < 0)
		node = vt_tiers_roomiest_node(&vm->tiers, tier);

	for (unsigned int k = 0; k < n; k++) {
		const struct vt_mtm_order *x = &g_array_index(orders, struct vt_mtm_order, i + k);
		const struct vt_mtm_chunk *c =
			&g_array_index(vm->mtm->chunks, struct vt_mtm_chunk, x->chunk);

		r[k].hva = c->start;
		r[k].len = c->end - c->start;
	}
	ret = vt_numa_move_ranges(vm->pid, r, n, node, 4096, &total);
	if (ret < 0)
		return ret;
	for (unsigned int k = 0; k < n; k++) {
		const struct vt_mtm_order *x = &g_array_index(orders, struct vt_mtm_order, i + k);
		const struct vt_move_result *res = &r[k].res;

		s->bytes_moved += (res->moved - res->already) * 4096;
		s->tier[x->to_tier].bytes_in += (res->moved - res->already) * 4096;
		s->pages_already += res->already;
		s->move_busy += res->busy;
		s->move_absent += res->absent;
		s->move_nomem += res->nomem;
		s->move_other += res->other;
		/* an order counts when at least half of the chunk's present pages got there */
		if (res->moved * 2 < res->pages - res->absent || res->moved == 0) {
			s->orders_failed++;
			continue;
		}
		vt_target_commit(vm, x, mp);
		if (x->promote) {
			s->promotions++;
			s->tier[x->to_tier].promoted_in++;
		} else {
			s->demotions++;
			s->tier[x->to_tier].demoted_in++;
		}
	}
	return 0;
}

static bool numa_takes(const struct vt_vm *vm, const struct vt_mtm_order *o)
{
	return o->to_tier < (int)vm->tiers.nr && o->from_tier < (int)vm->tiers.nr;
}

static int numa_apply(struct vt_target_window *w, GArray *orders, unsigned int i, unsigned int *n)
{
	struct vt_vm *vm = w->vm;
	int ret;

	*n = numa_run(vm, orders, i);
	ret = numa_orders(vm, orders, i, *n, w->node_mask, w->mp, w->s);
	if (ret == -ESRCH) {
		g_snprintf(w->err, w->err_len,
			   "move_pages: QEMU pid %d is gone", (int)vm->pid);
		return ret;
	}
	if (ret < 0)
		g_snprintf(w->err, w->err_len, "move_pages: %s",
			   g_strerror(-ret));
	return ret;
}

const struct vt_target_ops vt_target_numa = {
	.name = "numa",
	.takes = numa_takes,
	.apply = numa_apply,
};
