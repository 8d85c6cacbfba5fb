// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A VM's heatmap kept from window to window (vm_heatmap.c: the chunks whose
 * tier changed and the active ones) gives every window the column a full
 * pass over all chunks gives, through re-reads, moves, accesses that come
 * and go, and a new layout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "heatmap.h"
#include "vm.h"

#define MIB (1ULL << 20)
#define CHUNK (2 * MIB)
#define NR_CHUNKS 300
#define HVA0 (1ULL << 40)

/* The column of a full pass over every chunk, as vm_heatmap.c did before. */
static void full_column(const struct vt_vm *vm, struct vt_heatmap *ref)
{
	g_autofree struct vt_heatmap_acc *a = g_new0(struct vt_heatmap_acc, 1);

	vt_heatmap_acc_reset(a, ref);
	for (unsigned int i = 0; i < vm->mtm->chunks->len; i++) {
		const struct vt_mtm_chunk *c = &g_array_index(vm->mtm->chunks, struct vt_mtm_chunk, i);

		vt_heatmap_acc_chunk(a, ref, c->start, c->end, c->ema, c->tier);
	}
	vt_heatmap_push(ref, a, 0, 0);
}

static void assert_same_newest(const struct vt_heatmap *h, const struct vt_heatmap *ref)
{
	const struct vt_heatmap_col *x = &h->col[vt_heatmap_col_index(h, 0)];
	const struct vt_heatmap_col *y = &ref->col[vt_heatmap_col_index(ref, 0)];

	assert_int_equal(h->nr_bins, ref->nr_bins);
	assert_memory_equal(x->mean, y->mean, sizeof(x->mean));
	assert_memory_equal(x->max, y->max, sizeof(x->max));
	assert_memory_equal(x->tier, y->tier, sizeof(x->tier));
}

static void test_kept_equals_full(void **state)
{
	struct vt_vm vm = { 0 };
	struct vt_gpa_map g = { 0, NR_CHUNKS * CHUNK, HVA0 };
	struct vt_range r = { HVA0, HVA0 + NR_CHUNKS * CHUNK };
	struct vt_mtm_params p = { .budget_bytes = 1ULL << 30, .thrash_windows = 4,
				   .thrash_step = 0.2 };
	g_autofree struct vt_heatmap *ref = g_new0(struct vt_heatmap, 1);
	GRand *rng = g_rand_new_with_seed(7);

	(void)state;
	g_mutex_init(&vm.lock);
	vm.gpa_map = g_array_new(FALSE, FALSE, sizeof(struct vt_gpa_map));
	g_array_append_val(vm.gpa_map, g);
	vm.tiers.nr = 3;
	for (unsigned int t = 0; t < 3; t++)
		g_snprintf(vm.tiers.tier[t].name, sizeof(vm.tiers.tier[t].name), "t%u", t);
	vm.mtm = vt_mtm_new(&r, 1, CHUNK, 16384, 3);
	vt_vm_heatmap_layout(&vm);
	assert_true(vm.heatmap->nr_bins > 1);
	for (unsigned int w = 0; w < 60; w++) {
		struct vt_mtm_region hot = { HVA0 + (w % 7) * 40 * CHUNK,
					     HVA0 + ((w % 7) * 40 + 9) * CHUNK, 0.9 };

		/* a few chunks re-read somewhere, a few moved, accesses moving along */
		for (unsigned int k = 0; k < 20; k++) {
			uint32_t samples[VT_MTM_MAX_TIERS] = { 0 };
			unsigned int i = (unsigned int)g_rand_int_range(rng, 0, NR_CHUNKS);

			samples[g_rand_int_range(rng, 0, 3)] = (uint32_t)g_rand_int_range(rng, 0, 128);
			samples[g_rand_int_range(rng, 0, 3)] += (uint32_t)g_rand_int_range(rng, 0, 128);
			vt_mtm_residency_set(vm.mtm, i, samples, 128);
		}
		for (unsigned int k = 0; k < 5; k++) {
			unsigned int i = (unsigned int)g_rand_int_range(rng, 0, NR_CHUNKS);
			int to = g_rand_int_range(rng, 0, 3);

			vt_mtm_commit(vm.mtm, &(struct vt_mtm_order){ i, 1, to, to == 0 }, &p);
		}
		vt_mtm_observe(vm.mtm, w % 10 < 8 ? &hot : NULL, w % 10 < 8);
		if (w == 30) {
			/* a new layout (another tier): everything counted again */
			vm.tiers.nr = 2;
			vt_vm_heatmap_layout(&vm);
		}
		memcpy(ref, vm.heatmap, sizeof(*ref));
		vt_vm_heatmap_window(&vm, w + 1);
		full_column(&vm, ref);
		assert_same_newest(vm.heatmap, ref);
	}
	g_rand_free(rng);
	vt_mtm_free(vm.mtm);
	g_free(vm.heatmap);
	g_free(vm.heatmap_acc);
	g_array_free(vm.gpa_map, TRUE);
	g_mutex_clear(&vm.lock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_equals_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
