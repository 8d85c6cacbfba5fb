// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The residency stage: where each chunk of a VM's guest RAM is, sampled once
 * per VT_RESIDENCY_STRIDE: move_pages status for the NUMA tiers, pagemap for
 * zswap, the hand-off's store for vtierd's compressed tiers.
 */
#include "backend.h"
#include "numa.h"
#include "residency.h"

#define VT_NODE_ZSWAP (-1000)		/* residency: the page is in swap */

/* Where each chunk lives: one move_pages status per VT_RESIDENCY_STRIDE. */
int vt_residency_query(struct vt_vm *vm, GPtrArray *backends)
{
	struct vt_mtm *m = vm->mtm;
	int nodes[VT_NUMA_BATCH];
	unsigned int per_chunk = (unsigned int)(m->chunk_bytes / VT_RESIDENCY_STRIDE);

	vt_mtm_residency_reset(m);
	for (unsigned int i = 0; i < m->chunks->len; i++) {
		const struct vt_mtm_chunk *c = &g_array_index(m->chunks, struct vt_mtm_chunk, i);
		unsigned int n = (unsigned int)MIN(per_chunk, (c->end - c->start) / VT_RESIDENCY_STRIDE);
		struct vt_backend *b = vt_backend_of_hva(backends, c->start);
		int ret;

		n = MIN(MAX(n, 1u), (unsigned int)VT_NUMA_BATCH);
		ret = vt_numa_query(vm->pid, c->start, VT_RESIDENCY_STRIDE, n, nodes);
		if (ret < 0)
			return ret;
		if (vm->ctier_kind == VT_CTIER_ZSWAP) {
			bool swapped[VT_NUMA_BATCH];

			/* not in memory: swapped out (zswap), or never touched */
			if (vt_zswap_query(&vm->zswap, c->start, VT_RESIDENCY_STRIDE, n, swapped) == 0)
				for (unsigned int k = 0; k < n; k++)
					if (nodes[k] < 0 && swapped[k])
						nodes[k] = VT_NODE_ZSWAP;
		}
		for (unsigned int k = 0; k < n; k++) {
			int tier = nodes[k] >= 0 ? vt_tiers_of_node(&vm->tiers, nodes[k]) : -1;

			if (nodes[k] == VT_NODE_ZSWAP)
				tier = (int)vm->tiers.nr;

			/* not in memory: maybe in a compressed tier of the hand-off */
			if (nodes[k] < 0 && b) {
				int ct = vt_backend_tier_of(b, c->start + (uint64_t)k * VT_RESIDENCY_STRIDE);

				tier = ct >= 0 ? (int)vm->tiers.nr + ct : -1;
			}
			vt_mtm_residency_add(m, i, tier);
		}
	}
	vt_mtm_residency_done(m);
	return 0;
}
