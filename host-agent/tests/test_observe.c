// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The profiler attributes vtierd gives a VM (engine/observe.c): DAMON-style
 * profilers get a region per 8 MiB (10..500); Telescope keeps the default
 * minimum, whatever the VM's size.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "observe.h"
#include "profiler.h"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_min_regions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
