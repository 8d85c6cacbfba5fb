// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The apply stage (contract: target.h): a window's orders, in the policy's
 * order (demotions that make room come first), each run of them handed to
 * the first target that takes it, until half a window has passed.
 */
#include <errno.h>

#include "backend.h"
#include "target.h"
#include "window.h"

static const struct vt_target_ops *const targets[] = {
	&vt_target_numa,
	&vt_target_ctier,
	&vt_target_zswap,
};

static const struct vt_target_ops *target_of(const struct vt_vm *vm, const struct vt_mtm_order *o)
{
	for (unsigned int k = 0; k < G_N_ELEMENTS(targets); k++)
		if (targets[k]->takes(vm, o))
			return targets[k];
	return NULL;
}

void vt_target_commit(struct vt_vm *vm, const struct vt_mtm_order *o,
		      const struct vt_mtm_params *mp)
{
	const struct vt_mtm_chunk *c = &g_array_index(vm->mtm->chunks, struct vt_mtm_chunk, o->chunk);

	g_debug("%s: window %" G_GUINT64_FORMAT ": %s chunk %u (0x%" G_GINT64_MODIFIER "x) tier %d -> %d, "
		"ema %.3f penalty %.2f", vm->name, vm->mtm->window ? vm->mtm->window - 1 : 0,
		o->promote ? "promoted" : "demoted", o->chunk, c->start, o->from_tier, o->to_tier,
		c->ema, c->penalty);
	vt_mtm_commit(vm->mtm, o, mp);
}

void vt_target_order_done(struct vt_target_window *w, const struct vt_mtm_order *o,
			  const struct vt_mtm_chunk *c, int ret)
{
	struct vt_vm_stats *s = w->s;

	if (ret == -EAGAIN) {
		s->orders_deferred++;	/* the mover is busy: next window */
		return;
	}
	if (ret < 0) {
		s->orders_failed++;
		return;
	}
	vt_target_commit(w->vm, o, w->mp);
	s->tier[MIN(o->to_tier, VT_MAX_TIERS - 1)].bytes_in += c->end - c->start;
	if (o->promote)
		s->promotions++;
	else
		s->demotions++;
}

bool vt_apply_orders(struct vt_window *win)
{
	struct vt_vm *vm = win->vm;
	GArray *orders = win->orders;
	struct vt_vm_stats *s = win->s;
	/* moving is the slow part: stop at half a window, the rest waits a window */
	gint64 stop_at = g_get_monotonic_time() + (gint64)vm->policy.window_ms * 500;
	struct vt_target_window w = {
		.vm = vm,
		.backends = win->backends,
		.mp = &win->mp,
		.s = s,
		.movers_busy = win->movers_busy,
		.node_mask = win->node_mask,
		.err = win->err,
		.err_len = win->err_len,
	};

	for (unsigned int i = 0; i < orders->len;) {
		const struct vt_mtm_order *o = &g_array_index(orders, struct vt_mtm_order, i);
		const struct vt_target_ops *mv = target_of(vm, o);
		unsigned int n = 1;
		int ret;

		if (g_get_monotonic_time() > stop_at) {
			s->orders_deferred += orders->len - i;
			break;
		}
		if (!mv) {
			s->orders_failed++;	/* no target for it (none can occur) */
			i++;
			continue;
		}
		ret = mv->apply(&w, orders, i, &n);
		if (ret == -ESRCH)
			return false;
		if (ret < 0)
			break;
		i += n;
	}
	return true;
}
