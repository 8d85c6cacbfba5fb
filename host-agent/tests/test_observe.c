// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The profiler attributes vtierd gives a VM (engine/observe.c): DAMON-style
 * profilers get a region per 8 MiB (10..500); Telescope keeps the default
 * minimum, whatever the VM's size. And the policy's tdp_flush on the VM's
 * source: a tdp source attached to the fake vtier_tdp.ko (fake_tdp.c) flushes
 * with each window's first call, its flushes are counted over engine starts,
 * and a flush the source cannot do is refused naming the key and why.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <vtier/tdp.h>

#include "damon_kernel.h"
#include "fake_tdp.h"
#include "observe.h"
#include "profiler.h"
#include "tdp_source.h"
#include "vm_json.h"
#include "vm_policy.h"

static unsigned int min_regions(const char *profiler, uint64_t ram_bytes)
{
	static struct vt_vm vm;
	struct vt_profiler_attrs attrs;

	vt_vm_policy_default(&vm.policy);
	vm.ram_bytes = ram_bytes;
	g_strlcpy(vm.profiler_name, profiler, sizeof(vm.profiler_name));
	vt_observe_attrs(&vm, &attrs);
	assert_int_equal(attrs.window_us, vm.policy.window_ms * 1000);
	assert_int_equal(attrs.max_regions, 2000);
	return attrs.min_regions;
}

static void test_min_regions(void **state)
{
	(void)state;
	assert_int_equal(min_regions("damon-like", 1ULL << 30), 128);
	assert_int_equal(min_regions("damon-kernel", 1ULL << 40), 500);
	assert_int_equal(min_regions("damon-like", 32ULL << 20), 10);
	/* Telescope: the default, 10, at 1 GiB and 1 TiB */
	assert_int_equal(min_regions("telescope-flex", 1ULL << 30), 10);
	assert_int_equal(min_regions("telescope-bounded", 1ULL << 40), 10);
}

/* One SAMPLE on @vm's source; whether it carried VTIER_TDP_FLUSH_TLB. */
static bool sample_flushed(struct vt_vm *vm)
{
	struct vt_probe p = { .addr = 0x401000, .level = 0 };

	assert_int_equal(vt_source_batch(vm->src, &p, 1), 0);
	return last_flags & VTIER_TDP_FLUSH_TLB;
}

/* @vm as vt_observe_start leaves it with a tdp source on the fake module of @features. */
static void tdp_vm(struct vt_vm *vm, uint64_t features, enum vt_policy_tdp_flush flush)
{
	vt_observe_stop(vm);
	vm->policy.tdp_flush = flush;
	vm->src = fake_source(features);
	assert_non_null(vm->src);
	g_strlcpy(vm->profiler_name, "telescope-flex", sizeof(vm->profiler_name));
	g_strlcpy(vm->profiler_why, "host-kmod loaded", sizeof(vm->profiler_why));
}

static void test_tdp_flush_window(void **state)
{
	static struct vt_vm vm;

	(void)state;
	vt_vm_policy_default(&vm.policy);
	assert_int_equal(vm.policy.tdp_flush, VT_POLICY_TDP_FLUSH_NEVER);
	/* the default: the source never flushes, even at a window's end */
	tdp_vm(&vm, V2_FEATURES, VT_POLICY_TDP_FLUSH_NEVER);
	assert_true(vt_observe_tdp_flush(&vm, NULL));
	assert_true(vm.stats.tdp.source);
	assert_int_equal(vm.stats.tdp.abi_version, 2);
	assert_false(vm.stats.tdp.flush_window);
	assert_false(sample_flushed(&vm));
	vt_observe_window_end(&vm, &vm.stats);
	assert_false(sample_flushed(&vm));
	assert_int_equal(vm.stats.tdp.flushes, 0);
	/* window: the first window's first call flushes, then each window's first */
	tdp_vm(&vm, V2_FEATURES, VT_POLICY_TDP_FLUSH_WINDOW);
	assert_true(vt_observe_tdp_flush(&vm, NULL));
	assert_true(vm.stats.tdp.flush_window);
	assert_non_null(strstr(vm.profiler_why, "tdp_flush=window"));
	for (int w = 0; w < 3; w++) {
		assert_true(sample_flushed(&vm));
		assert_false(sample_flushed(&vm));
		vt_observe_window_end(&vm, &vm.stats);
		assert_int_equal(vm.stats.tdp.flushes, w + 1);
		assert_int_equal(vm.stats.tdp.flush_ns, (w + 1) * 1000);
	}
	/* a policy change opens the source again: the count goes on from its total */
	tdp_vm(&vm, V2_FEATURES, VT_POLICY_TDP_FLUSH_WINDOW);
	assert_true(vt_observe_tdp_flush(&vm, NULL));
	assert_true(sample_flushed(&vm));
	vt_observe_window_end(&vm, &vm.stats);
	assert_int_equal(vm.stats.tdp.flushes, 4);
	assert_int_equal(vm.stats.tdp.flush_ns, 4000);
	vt_observe_stop(&vm);
	assert_false(vm.stats.tdp.source);
	assert_false(vm.stats.tdp.flush_window);
	assert_int_equal(vm.stats.tdp.flushes, 4);
	fake_active = false;
}

static void test_tdp_flush_refused(void **state)
{
	static struct vt_vm vm;
	struct vt_range r = { 0x7f0000000000ULL, 0x7f0040000000ULL };
	g_autoptr(GError) e = NULL;

	(void)state;
	vt_vm_policy_default(&vm.policy);
	/* a version 1 module cannot flush: window is refused, never is fine */
	fake_v1 = true;
	tdp_vm(&vm, VTIER_TDP_F_UPPER_ACCESSED | VTIER_TDP_F_SAMPLE | VTIER_TDP_F_SCAN,
	       VT_POLICY_TDP_FLUSH_WINDOW);
	assert_false(vt_observe_tdp_flush(&vm, &e));
	assert_int_equal(e->code, EOPNOTSUPP);
	assert_string_equal(e->message, "tdp_flush: 'window': the loaded vtier_tdp.ko (ABI "
			    "version 1) cannot flush the VM's TLBs (no VTIER_TDP_F_FLUSH_TLB): "
			    "rebuild and reload it, or set tdp_flush=never");
	assert_false(vm.stats.tdp.flush_window);
	g_clear_error(&e);
	vm.policy.tdp_flush = VT_POLICY_TDP_FLUSH_NEVER;
	assert_true(vt_observe_tdp_flush(&vm, NULL));
	assert_int_equal(vm.stats.tdp.abi_version, 1);
	assert_false(sample_flushed(&vm));
	fake_v1 = false;
	fake_active = false;
	/* a version 2 module without the feature: the same */
	tdp_vm(&vm, V2_FEATURES & ~(uint64_t)VTIER_TDP_F_FLUSH_TLB, VT_POLICY_TDP_FLUSH_WINDOW);
	assert_false(vt_observe_tdp_flush(&vm, &e));
	assert_non_null(strstr(e->message, "ABI version 2"));
	g_clear_error(&e);
	fake_active = false;
	/* not over tdp (damon-kernel): window is refused naming the profiler and why */
	vt_observe_stop(&vm);
	vm.src = vt_damon_kernel_source_new(getpid(), &r, 1);
	g_strlcpy(vm.profiler_name, "damon-kernel", sizeof(vm.profiler_name));
	g_strlcpy(vm.profiler_why, "host-kmod not loaded (/dev/vtier-tdp missing)",
		  sizeof(vm.profiler_why));
	vm.policy.tdp_flush = VT_POLICY_TDP_FLUSH_WINDOW;
	assert_false(vt_observe_tdp_flush(&vm, &e));
	assert_int_equal(e->code, EOPNOTSUPP);
	assert_string_equal(e->message, "tdp_flush: 'window' needs the tdp source (host-kmod's "
			    "vtier_tdp.ko), and this VM's profiler is damon-kernel (host-kmod not "
			    "loaded (/dev/vtier-tdp missing)): set tdp_flush=never");
	vm.policy.tdp_flush = VT_POLICY_TDP_FLUSH_NEVER;
	assert_true(vt_observe_tdp_flush(&vm, NULL));
	assert_false(vm.stats.tdp.source);
	assert_int_equal(vm.stats.tdp.abi_version, 0);
	vt_observe_window_end(&vm, &vm.stats);	/* nothing to count: no tdp source */
	assert_int_equal(vm.stats.tdp.flushes, 0);
	vt_observe_stop(&vm);
}

/* @vm's status (@stats false) or stats view, as the control socket sends it. */
static JsonObject *view(struct vt_vm *vm, bool stats)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	struct vt_tiers tiers = { 0 };
	JsonNode *root;
	JsonObject *o;

	if (stats)
		vt_vm_stats_to_json(vm, &tiers, b);
	else
		vt_vm_status_to_json(vm, b);
	root = json_builder_get_root(b);
	o = json_object_ref(json_node_get_object(root));
	json_node_unref(root);
	return o;
}

/* What an operator sees: status.tdp_flush and stats.tdp, from the source to the views. */
static void test_tdp_flush_views(void **state)
{
	static struct vt_host_config host;
	static struct vt_vm vm;
	JsonObject *status, *stats, *tdp;

	(void)state;
	vm.host = &host;
	vm.ram = g_array_new(FALSE, TRUE, sizeof(struct vt_vm_ram));
	vm.gpa_map = g_array_new(FALSE, TRUE, sizeof(struct vt_gpa_map));
	vt_vm_policy_default(&vm.policy);
	status = view(&vm, false);
	assert_string_equal(json_object_get_string_member(status, "tdp_flush"), "no tdp source");
	json_object_unref(status);
	tdp_vm(&vm, V2_FEATURES, VT_POLICY_TDP_FLUSH_WINDOW);
	assert_true(vt_observe_tdp_flush(&vm, NULL));
	for (int w = 0; w < 2; w++) {
		assert_true(sample_flushed(&vm));
		vt_observe_window_end(&vm, &vm.stats);
	}
	status = view(&vm, false);
	stats = view(&vm, true);
	assert_string_equal(json_object_get_string_member(status, "tdp_flush"), "window");
	assert_string_equal(json_object_get_string_member(json_object_get_object_member(
		status, "policy"), "tdp_flush"), "window");
	tdp = json_object_get_object_member(stats, "tdp");
	assert_true(json_object_get_boolean_member(tdp, "source"));
	assert_int_equal(json_object_get_int_member(tdp, "abi_version"), 2);
	assert_string_equal(json_object_get_string_member(tdp, "flush"), "window");
	assert_int_equal(json_object_get_int_member(tdp, "flushes"), 2);
	assert_int_equal(json_object_get_int_member(tdp, "flush_ns"), 2000);
	json_object_unref(status);
	json_object_unref(stats);
	/* never over tdp: said so, the count kept */
	tdp_vm(&vm, V2_FEATURES, VT_POLICY_TDP_FLUSH_NEVER);
	assert_true(vt_observe_tdp_flush(&vm, NULL));
	status = view(&vm, false);
	stats = view(&vm, true);
	assert_string_equal(json_object_get_string_member(status, "tdp_flush"), "never");
	tdp = json_object_get_object_member(stats, "tdp");
	assert_string_equal(json_object_get_string_member(tdp, "flush"), "never");
	assert_int_equal(json_object_get_int_member(tdp, "flushes"), 2);
	json_object_unref(status);
	json_object_unref(stats);
	vt_observe_stop(&vm);
	fake_active = false;
	g_array_unref(vm.ram);
	g_array_unref(vm.gpa_map);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_min_regions),
		cmocka_unit_test(test_tdp_flush_window),
		cmocka_unit_test(test_tdp_flush_refused),
		cmocka_unit_test(test_tdp_flush_views),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
