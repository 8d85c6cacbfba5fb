// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The residency stage: where the chunks of a VM's guest RAM are, sampled once
 * per MTM's sample_stride (VT_RESIDENCY_STRIDE): move_pages status for the NUMA tiers, pagemap for
 * zswap, the hand-off's store for vtierd's compressed tiers. Only the chunks
 * of the window's refresh plan are read (policy/refresh.h): a window costs
 * VT_RESIDENCY_SAMPLES (or a quarter of the chunks, if fewer) plus the chunks
 * moved, whatever the VM's size.
 */
#include "backend.h"
#include "numa.h"
#include "refresh.h"
#include "residency.h"

#define VT_NODE_ZSWAP (-1000)		/* residency: the page is in swap */

static unsigned int samples_per_chunk(const struct vt_mtm *m)
{
	return (unsigned int)MAX(m->chunk_bytes / m->sample_stride, 1);
}

void vt_residency_start(struct vt_vm *vm)
{
	unsigned int n = vm->mtm->chunks->len;

	vt_refresh_free(vm->refresh);
	vm->refresh = vt_refresh_new(n, MIN(VT_RESIDENCY_SAMPLES / samples_per_chunk(vm->mtm),
					    (n + VT_RESIDENCY_MIN_WINDOWS - 1) / VT_RESIDENCY_MIN_WINDOWS));
}

static unsigned int samples_of(const struct vt_mtm *m, const struct vt_mtm_chunk *c)
{
	return (unsigned int)MIN(samples_per_chunk(m), MAX((c->end - c->start) / m->sample_stride, 1));
}

/* Chunk @i's residency from where its sampled pages are (@nodes, room for @swapped). */
static void count_chunk(struct vt_vm *vm, GPtrArray *backends, unsigned int i, int *nodes,
			bool *swapped)
{
	struct vt_mtm *m = vm->mtm;
	const struct vt_mtm_chunk *c = &g_array_index(m->chunks, struct vt_mtm_chunk, i);
	uint64_t stride = m->sample_stride;
	unsigned int n = samples_of(m, c);
	struct vt_backend *b = vt_backend_of_hva(backends, c->start);
	uint32_t samples[VT_MTM_MAX_TIERS] = { 0 };

	/* not in memory: swapped out (zswap), or never touched */
	if (vm->ctier_kind == VT_CTIER_ZSWAP &&
	    vt_zswap_query(&vm->zswap, c->start, stride, n, swapped) == 0)
		for (unsigned int k = 0; k < n; k++)
			if (nodes[k] < 0 && swapped[k])
				nodes[k] = VT_NODE_ZSWAP;
	for (unsigned int k = 0; k < n; k++) {
		int tier = nodes[k] >= 0 ? vt_tiers_of_node(&vm->tiers, nodes[k]) : -1;

		if (nodes[k] == VT_NODE_ZSWAP)
			tier = (int)vm->tiers.nr;
		/* not in memory: maybe in a compressed tier of the hand-off */
		if (nodes[k] < 0 && b) {
			int ct = vt_backend_tier_of(b, c->start + (uint64_t)k * stride);

			tier = ct >= 0 ? (int)vm->tiers.nr + ct : -1;
		}
		if (tier >= 0 && tier < VT_MTM_MAX_TIERS)
			samples[tier]++;
	}
	vt_mtm_residency_set(m, i, samples, n);
}

struct stage {
	struct vt_vm *vm;
	GPtrArray *backends;
};

/* A chunk queued to a hand-off's mover is read once that mover has nothing queued. */
static bool mover_done(unsigned int i, void *opaque)
{
	struct stage *st = opaque;
	const struct vt_mtm_chunk *c = &g_array_index(st->vm->mtm->chunks, struct vt_mtm_chunk, i);
	struct vt_backend *b = vt_backend_of_hva(st->backends, c->start);

	return !b || vt_backend_backlog(b) == 0;
}

/*
 * Sampled pages per move_pages status list: chunks are read together, a call
 * costs ~2 us here on top of its pages (16 samples a chunk alone: +30 %).
 */
#define LIST_PAGES 4096

int vt_residency_query(struct vt_vm *vm, GPtrArray *backends)
{
	struct vt_mtm *m = vm->mtm;
	struct stage st = { vm, backends };
	unsigned int cap = MAX(samples_per_chunk(m), (unsigned int)LIST_PAGES);
	g_autofree uint64_t *addrs = g_new(uint64_t, cap);
	g_autofree int *nodes = g_new(int, cap);
	g_autofree bool *swapped = g_new(bool, samples_per_chunk(m));
	g_autoptr(GArray) plan = g_array_new(FALSE, FALSE, sizeof(unsigned int));
	unsigned int first = 0, n = 0;

	vt_refresh_plan(vm->refresh, mover_done, &st, plan);
	for (unsigned int k = 0; k <= plan->len; k++) {
		const struct vt_mtm_chunk *c = k < plan->len ?
			&g_array_index(m->chunks, struct vt_mtm_chunk, g_array_index(plan, unsigned int, k)) :
			NULL;
		unsigned int nc = c ? samples_of(m, c) : 0;

		/* the list is full (or the plan done): where are its pages, then each chunk's count */
		if (n && (!c || n + nc > cap)) {
			int ret = vt_numa_query_list(vm->pid, addrs, n, nodes);

			if (ret < 0)
				return ret;
			for (unsigned int j = first, at = 0; j < k; j++) {
				unsigned int i = g_array_index(plan, unsigned int, j);

				count_chunk(vm, backends, i, nodes + at, swapped);
				at += samples_of(m, &g_array_index(m->chunks, struct vt_mtm_chunk, i));
			}
			first = k;
			n = 0;
		}
		for (unsigned int s = 0; s < nc; s++)
			addrs[n++] = c->start + (uint64_t)s * m->sample_stride;
	}
	return 0;
}

void vt_residency_moved(struct vt_vm *vm, const GArray *orders)
{
	for (unsigned int k = 0; k < orders->len; k++) {
		const struct vt_mtm_order *o = &g_array_index(orders, struct vt_mtm_order, k);
		bool queued = vm->ctier_kind == VT_CTIER_HANDOFF &&
			      (o->to_tier >= (int)vm->tiers.nr || o->from_tier >= (int)vm->tiers.nr);

		if (queued)
			vt_refresh_wait(vm->refresh, o->chunk);
		else
			vt_refresh_moved(vm->refresh, o->chunk);
	}
}

/*
 * vtierd's pools count every page: a compressed tier holds what its store
 * holds, and what the samples put there beyond it (faults and fetches since
 * the chunk was read, evictions still queued) is in RAM, on the fastest tier
 * where faults bring pages back; what the store holds beyond the samples is
 * not in RAM.
 */
void vt_residency_tier_bytes(const struct vt_vm *vm, const uint64_t *sampled,
			     struct vt_vm_stats *s)
{
	unsigned int nr = MIN(vt_vm_nr_tiers(vm), (unsigned int)VT_MAX_TIERS);
	uint64_t in_ram = sampled[0], more = 0;

	for (unsigned int t = 0; t < nr; t++)
		s->tier[t].resident_bytes = sampled[t];
	if (vm->ctier_kind != VT_CTIER_HANDOFF)
		return;
	for (unsigned int t = vm->tiers.nr; t < nr && t < s->model.nr; t++) {
		uint64_t stored = s->model.t[t].stored_bytes;

		if (sampled[t] > stored)
			in_ram += sampled[t] - stored;
		else
			more += stored - sampled[t];
		s->tier[t].resident_bytes = stored;
	}
	s->tier[0].resident_bytes = in_ram - MIN(in_ram, more);
}
