// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A VM's heatmap (model/heatmap.h): laid out over its RAM when its engine
 * starts, a column per window from the MTM chunks, and a copy for the
 * control socket. The worker writes; the main loop copies under the lock.
 */
#include <errno.h>
#include <string.h>

#include "heatmap.h"
#include "vm.h"

/*
 * Guest-physical ranges from QEMU's flat view; without one (QEMU did not
 * answer "info mtree -f"), the RAM blocks laid end to end.
 */
void vt_vm_heatmap_layout(struct vt_vm *vm)
{
	g_autofree struct vt_heatmap_range *r = NULL;
	const char *names[VT_MAX_TIERS];
	unsigned int nr_tiers = MIN(vt_vm_nr_tiers(vm), (unsigned int)VT_MAX_TIERS), n = 0;
	uint64_t off = 0;
	int ret = -EINVAL;

	if (!vm->heatmap)
		vm->heatmap = g_new0(struct vt_heatmap, 1);
	if (!vm->heatmap_acc)
		vm->heatmap_acc = g_new0(struct vt_heatmap_acc, 1);
	vm->heatmap_acc->primed = false;	/* other bins, maybe other chunks */
	for (unsigned int t = 0; t < nr_tiers; t++)
		names[t] = t < vm->tiers.nr ? vm->tiers.tier[t].name :
			   vm->ctier_kind == VT_CTIER_ZSWAP ? "zswap" :
			   vm->host->ctier[t - vm->tiers.nr].name;
	if (vm->gpa_map && vm->gpa_map->len) {
		r = g_new0(struct vt_heatmap_range, vm->gpa_map->len);
		for (unsigned int i = 0; i < vm->gpa_map->len; i++) {
			const struct vt_gpa_map *g = &g_array_index(vm->gpa_map, struct vt_gpa_map, i);

			r[n++] = (struct vt_heatmap_range){ g->gpa, g->len, g->hva };
		}
		ret = vt_heatmap_layout(vm->heatmap, "gpa", r, n, names, nr_tiers);
	}
	if (ret < 0 && vm->ram && vm->ram->len) {
		g_free(r);
		r = g_new0(struct vt_heatmap_range, vm->ram->len);
		n = 0;
		for (unsigned int i = 0; i < vm->ram->len; i++) {
			const struct vt_vm_ram *m = &g_array_index(vm->ram, struct vt_vm_ram, i);

			if (!m->size)
				continue;
			r[n++] = (struct vt_heatmap_range){ off, m->size, m->hva };
			off += m->size;
		}
		ret = n ? vt_heatmap_layout(vm->heatmap, "ram-offset", r, n, names, nr_tiers) : ret;
	}
	if (ret < 0) {
		/* no RAM the heatmap can lay bins over: an empty map */
		memset(vm->heatmap, 0, sizeof(*vm->heatmap));
	}
}

void vt_vm_heatmap_window(struct vt_vm *vm, uint64_t window)
{
	struct vt_heatmap_acc *a = vm->heatmap_acc;
	struct vt_heatmap *h = vm->heatmap;

	struct vt_mtm *m = vm->mtm;
	g_autoptr(GArray) retiered = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_retier));

	/* the layout is the worker's to change: no lock needed to read it here */
	if (!h || !a || !h->nr_bins || !m)
		return;
	/*
	 * Every chunk's bytes and tier once (new bins or chunks), then only the
	 * chunks whose tier changed, and the hotness of the active ones (the
	 * others' EMA is 0): a window costs what changed, not the VM's size.
	 */
	vt_mtm_take_retiered(m, retiered);
	if (!a->primed) {
		vt_heatmap_acc_reset(a, h);
		for (unsigned int i = 0; i < m->chunks->len; i++) {
			const struct vt_mtm_chunk *c = &g_array_index(m->chunks, struct vt_mtm_chunk, i);

			vt_heatmap_acc_chunk(a, h, c->start, c->end, 0, c->tier);
		}
		a->primed = true;
	} else {
		for (unsigned int k = 0; k < retiered->len; k++) {
			const struct vt_mtm_retier *r = &g_array_index(retiered, struct vt_mtm_retier, k);
			const struct vt_mtm_chunk *c = &g_array_index(m->chunks, struct vt_mtm_chunk,
								      r->chunk);

			vt_heatmap_acc_retier(a, h, c->start, c->end, r->from, r->to);
		}
	}
	vt_heatmap_acc_hot_clear(a);
	for (unsigned int k = 0; k < m->active->len; k++) {
		const struct vt_mtm_chunk *c = &g_array_index(m->chunks, struct vt_mtm_chunk,
			g_array_index(m->active, unsigned int, k));

		vt_heatmap_acc_hot(a, h, c->start, c->end, c->ema);
	}
	g_mutex_lock(&vm->lock);
	vt_heatmap_push(h, a, g_get_monotonic_time(), window);
	g_mutex_unlock(&vm->lock);
}

void vt_vm_heatmap_to_json(struct vt_vm *vm, JsonBuilder *b)
{
	g_autofree struct vt_heatmap *copy = g_new0(struct vt_heatmap, 1);
	char name[sizeof(vm->name)];
	uint64_t window_ms;

	/* a copy under the lock (some 300 KiB); the JSON is built without it */
	g_mutex_lock(&vm->lock);
	if (vm->heatmap)
		memcpy(copy, vm->heatmap, sizeof(*copy));
	g_strlcpy(name, vm->name, sizeof(name));
	window_ms = vm->policy.window_ms;
	g_mutex_unlock(&vm->lock);
	if (!copy->space[0])
		g_strlcpy(copy->space, "gpa", sizeof(copy->space));
	vt_heatmap_to_json(copy, name, window_ms, g_get_monotonic_time(), b);
}
