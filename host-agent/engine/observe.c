// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The profiler stage: which profiler watches a VM (Telescope over the tdp
 * source when host-kmod is loaded, else the host kernel's DAMON on the QEMU
 * process), its start with the policy's tdp_flush on the source, and each
 * window's region map in QEMU's host-virtual addresses, the space of the
 * policy and the movers.
 */
#include <errno.h>
#include <string.h>

#include "damon_kernel.h"
#if __has_include("tdp_source.h")
#include "tdp_source.h"
#define VTIER_HAVE_TDP 1
#endif
#include "observe.h"

static const char *tdp_device(void)
{
	const char *env = g_getenv("VTIER_TDP_DEVICE");

	return env && *env ? env : "/dev/vtier-tdp";
}

/*
 * Which profiler and why; the log line is the caller's. With host-kmod
 * (/dev/vtier-tdp) and a gpa -> hva map, Telescope over tdp; otherwise the
 * host kernel's DAMON on the QEMU process. @src is set for tdp.
 */
static int choose_profiler(struct vt_vm *vm, GError **error)
{
	bool tdp_dev = g_file_test(tdp_device(), G_FILE_TEST_EXISTS);
	bool want_tdp = strcmp(vm->policy.profiler, "damon-kernel") != 0;
	g_autofree char *tdp_why = NULL;
	g_autofree char *why = NULL;
	int ret;

	if (want_tdp && tdp_dev && vm->gpa_map->len) {
#ifdef VTIER_HAVE_TDP
		g_autoptr(GError) e = NULL;
		const char *name = strcmp(vm->policy.profiler, "auto") == 0 ? "telescope-flex" :
				   vm->policy.profiler;

		vm->src = vt_tdp_new_pid(vm->pid, &e);
		if (vm->src) {
			g_strlcpy(vm->profiler_name, name, sizeof(vm->profiler_name));
			g_snprintf(vm->profiler_why, sizeof(vm->profiler_why),
				   "host-kmod loaded (%s): %s over the tdp source (EPT/NPT accessed "
				   "bits, guest-physical)", tdp_device(), name);
			vm->space = VT_SPACE_GPA;
			return 0;
		}
		tdp_why = g_strdup_printf("host-kmod is loaded but tdp attach failed (%s)", e->message);
#else
		tdp_why = g_strdup("host-kmod is loaded but this vtierd was built without the tdp "
				   "source");
#endif
	} else if (want_tdp && tdp_dev) {
		tdp_why = g_strdup("host-kmod is loaded but QEMU's flat memory view (info mtree -f) "
				   "gave no gpa -> hva map");
	} else if (want_tdp) {
		tdp_why = g_strdup_printf("host-kmod not loaded (%s missing)", tdp_device());
	}
	if (strcmp(vm->policy.profiler, "auto") != 0 &&
	    strcmp(vm->policy.profiler, "damon-kernel") != 0) {
		g_set_error(error, VT_CORE_ERROR, EOPNOTSUPP, "profiler '%s' needs the tdp source: %s",
			    vm->policy.profiler, tdp_why);
		return -EOPNOTSUPP;
	}
	ret = vt_damon_kernel_probe(&why);
	if (ret) {
		g_set_error(error, VT_CORE_ERROR, -ret, "damon-kernel: %s%s%s", why,
			    tdp_why ? "; and " : "", tdp_why ? tdp_why : "");
		return ret;
	}
	g_strlcpy(vm->profiler_name, "damon-kernel", sizeof(vm->profiler_name));
	g_snprintf(vm->profiler_why, sizeof(vm->profiler_why), "%s%susing the host kernel's "
		   "DAMON on the QEMU process", tdp_why ? tdp_why : "profiler=damon-kernel",
		   "; ");
	vm->space = VT_SPACE_HVA;
	return 0;
}

bool vt_observe_tdp_flush(struct vt_vm *vm, GError **error)
{
	struct vt_vm_tdp_stats *t = &vm->stats.tdp;
	bool window = vm->policy.tdp_flush == VT_POLICY_TDP_FLUSH_WINDOW;

	*t = (struct vt_vm_tdp_stats){ .flushes = t->flushes, .flush_ns = t->flush_ns };
	vm->tdp_flushes_mark = 0;
	vm->tdp_flush_ns_mark = 0;
#ifdef VTIER_HAVE_TDP
	if (vt_is_tdp(vm->src)) {
		struct vt_tdp_stats st;

		vt_tdp_get_stats(vm->src, &st);
		t->source = true;
		t->abi_version = st.abi_version;
		vm->tdp_flushes_mark = st.flushes;
		vm->tdp_flush_ns_mark = st.flush_ns;
		if (vt_tdp_set_flush(vm->src, window ? VT_TDP_FLUSH_WINDOW :
				     VT_TDP_FLUSH_NEVER) < 0) {
			g_set_error(error, VT_CORE_ERROR, EOPNOTSUPP,
				    "tdp_flush: 'window': the loaded vtier_tdp.ko (ABI version %u) "
				    "cannot flush the VM's TLBs (no VTIER_TDP_F_FLUSH_TLB): rebuild "
				    "and reload it, or set tdp_flush=never", st.abi_version);
			return false;
		}
		t->flush_window = window;
		if (window) {
			g_strlcat(vm->profiler_why, "; the module flushes the VM's TLBs once per "
				  "window (tdp_flush=window)", sizeof(vm->profiler_why));
			/* the first window flushes too */
			vt_tdp_window_begin(vm->src);
		}
		return true;
	}
#endif
	if (window) {
		g_set_error(error, VT_CORE_ERROR, EOPNOTSUPP,
			    "tdp_flush: 'window' needs the tdp source (host-kmod's vtier_tdp.ko), and "
			    "this VM's profiler is %s (%s): set tdp_flush=never", vm->profiler_name,
			    vm->profiler_why);
		return false;
	}
	return true;
}

void vt_observe_window_end(struct vt_vm *vm, struct vt_vm_stats *s)
{
#ifdef VTIER_HAVE_TDP
	struct vt_tdp_stats st;

	if (!vt_is_tdp(vm->src))
		return;
	vt_tdp_get_stats(vm->src, &st);
	s->tdp.flushes += st.flushes - MIN(vm->tdp_flushes_mark, st.flushes);
	s->tdp.flush_ns += st.flush_ns - MIN(vm->tdp_flush_ns_mark, st.flush_ns);
	vm->tdp_flushes_mark = st.flushes;
	vm->tdp_flush_ns_mark = st.flush_ns;
	/* the next window's first SAMPLE or SCAN flushes (tdp_flush=window) */
	vt_tdp_window_begin(vm->src);
#else
	(void)vm;
	(void)s;
#endif
}

void vt_observe_attrs(const struct vt_vm *vm, struct vt_profiler_attrs *attrs)
{
	vt_profiler_attrs_default(attrs);
	attrs->sample_us = vm->policy.sample_ms * 1000;
	attrs->window_us = vm->policy.window_ms * 1000;
	attrs->max_regions = 2000;
	/*
	 * Telescope keeps the default minimum (10): its cold regions are watched
	 * whole by the window-end sweep of their cover, and hot edges are found
	 * by splits, so more regions only cost checks (500 regions were 42k
	 * checks and most of vtierd's window from 4 GiB up: docs/bench-agent.md).
	 */
	if (g_str_has_prefix(vm->profiler_name, "telescope"))
		return;
	/* at least one region per 8 MiB: DAMON's adaptive regions otherwise merge a
	 * 64 MiB hot set with its cold neighbours (seen in the testbed: 15 regions
	 * for 1 GiB, part of the hot set demoted under a tight DRAM limit) */
	attrs->min_regions = (unsigned int)CLAMP(vm->ram_bytes / (8ULL << 20), 10, 500);
}

bool vt_observe_start(struct vt_vm *vm, const struct vt_range *ranges, GError **error)
{
	struct vt_profiler_attrs attrs;
	int ret;

	if (choose_profiler(vm, error) < 0)
		return false;
	vt_observe_attrs(vm, &attrs);
	if (vm->space == VT_SPACE_GPA) {
		vm->prof = vt_profiler_new(vm->profiler_name, vm->src, &attrs, error);
		if (!vm->prof)
			goto fail;
	} else {
		vm->src = vt_damon_kernel_source_new(vm->pid, ranges, vm->ram->len);
		if (!vm->src) {
			g_set_error(error, VT_CORE_ERROR, E2BIG, "too many RAM ranges (%u)",
				    vm->ram->len);
			return false;
		}
		/* one DAMON region per chunk (up to 4096 regions, then whole chunks
		 * per region): a region's one sampled address speaks for a whole THP
		 * frame, so coarser regions read cold chunks as hot (docs/vtierd.md) */
		uint64_t chunks = (vm->ram_bytes + vm->policy.chunk_bytes - 1) / vm->policy.chunk_bytes;
		uint64_t region_bytes = vm->policy.chunk_bytes * ((chunks + 4095) / 4096);

		vm->prof = vt_damon_kernel_profiler_new(vm->src, &attrs, region_bytes, &ret);
		if (!vm->prof) {
			g_set_error(error, VT_CORE_ERROR, -ret, "damon-kernel: %s", g_strerror(-ret));
			goto fail;
		}
	}
	if (!vt_observe_tdp_flush(vm, error))
		goto fail;
	ret = vt_profiler_start(vm->prof);
	if (ret < 0) {
		g_set_error(error, VT_CORE_ERROR, -ret, "%s: cannot start on pid %d: %s",
			    vm->profiler_name, (int)vm->pid, g_strerror(-ret));
		goto fail;
	}
	vt_snapshot_init(&vm->snap);
	vm->checks_mark = 0;
	return true;
fail:
	vt_observe_stop(vm);
	return false;
}

void vt_observe_stop(struct vt_vm *vm)
{
	vm->stats.tdp.source = false;
	vm->stats.tdp.abi_version = 0;
	vm->stats.tdp.flush_window = false;
	vt_profiler_free(vm->prof);
	vm->prof = NULL;
	vt_source_destroy(vm->src);
	vm->src = NULL;
	vt_snapshot_clear(&vm->snap);
}

static gint cmp_mtm_region(gconstpointer a, gconstpointer b)
{
	const struct vt_mtm_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

GArray *vt_observe_regions(const struct vt_vm *vm)
{
	GArray *regions;

	regions = g_array_sized_new(FALSE, FALSE, sizeof(struct vt_mtm_region),
				    vm->snap.regions->len);
	for (unsigned int i = 0; i < vm->snap.regions->len; i++) {
		const struct vt_snapshot_region *r =
			&g_array_index(vm->snap.regions, struct vt_snapshot_region, i);
		struct vt_mtm_region mr = { r->start, r->end, r->accesses };

		if (vm->space == VT_SPACE_HVA) {
			g_array_append_val(regions, mr);
			continue;
		}
		/* guest-physical region map: the policy and the mover work on QEMU's hva */
		for (unsigned int k = 0; k < vm->gpa_map->len; k++) {
			const struct vt_gpa_map *g = &g_array_index(vm->gpa_map, struct vt_gpa_map, k);
			uint64_t s0 = MAX(r->start, g->gpa), e0 = MIN(r->end, g->gpa + g->len);

			if (e0 <= s0)
				continue;
			mr = (struct vt_mtm_region){ g->hva + (s0 - g->gpa), g->hva + (e0 - g->gpa),
						     r->accesses };
			g_array_append_val(regions, mr);
		}
	}
	if (vm->space == VT_SPACE_GPA)
		g_array_sort(regions, cmp_mtm_region);
	return regions;
}
