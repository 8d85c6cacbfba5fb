// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * engine/tlb_stage.c: a window's TLB flush deltas, totals and flushes per
 * GiB moved, from counters as the kernel prints them in a fake /proc and
 * debugfs tree built here, and what the log is told.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <glib.h>

#include "fake_tree.h"
#include "tlb_stage.h"
#include "vm.h"

#define GiB (1ull << 30)

static void assert_count(const struct vt_tlb_count *c, bool ok, uint64_t last, uint64_t total,
			 uint64_t moving, uint64_t moved_bytes)
{
	if (c->ok != ok || c->last != last || c->total != total || c->moving != moving ||
	    c->moved_bytes != moved_bytes)
		fail_msg("count ok %d last %llu total %llu moving %llu moved %llu, not %d %llu %llu "
			 "%llu %llu", c->ok, (unsigned long long)c->last,
			 (unsigned long long)c->total, (unsigned long long)c->moving,
			 (unsigned long long)c->moved_bytes, ok, (unsigned long long)last,
			 (unsigned long long)total, (unsigned long long)moving,
			 (unsigned long long)moved_bytes);
}

static struct vt_tlb_sample sample(enum vt_counter_state host, uint64_t shootdowns,
				   enum vt_counter_state kvm, uint64_t flushes, bool has_requests,
				   uint64_t requests)
{
	return (struct vt_tlb_sample){
		.host = host, .host_shootdowns = shootdowns, .kvm = kvm,
		.kvm_tlb = { .flushes = flushes, .requests = requests,
			     .has_requests = has_requests },
	};
}

/* Window by window: the first only marks, a counter missing or gone back counts nothing. */
static void test_account(void **state)
{
	struct vt_tlb_marks m = { 0 };
	struct vt_tlb_stats s = { 0 };
	struct vt_tlb_sample w;

	(void)state;
	/* 1: the first window's end only marks */
	w = sample(VT_COUNTER_OK, 100, VT_COUNTER_OK, 10, true, 20);
	vt_tlb_account(&m, &w, 4096, &s);
	assert_count(&s.host_shootdowns, true, 0, 0, 0, 0);
	assert_count(&s.kvm_remote_flushes, true, 0, 0, 0, 0);
	assert_count(&s.kvm_flush_requests, true, 0, 0, 0, 0);
	/* 2: 1 GiB moved */
	w = sample(VT_COUNTER_OK, 150, VT_COUNTER_OK, 14, true, 25);
	vt_tlb_account(&m, &w, GiB, &s);
	assert_count(&s.host_shootdowns, true, 50, 50, 50, GiB);
	assert_count(&s.kvm_remote_flushes, true, 4, 4, 4, GiB);
	assert_count(&s.kvm_flush_requests, true, 5, 5, 5, GiB);
	/* 3: profiling alone, nothing moved: in the totals, not in the per-GiB figures */
	w = sample(VT_COUNTER_OK, 170, VT_COUNTER_OK, 15, true, 27);
	vt_tlb_account(&m, &w, 0, &s);
	assert_count(&s.host_shootdowns, true, 20, 70, 50, GiB);
	assert_count(&s.kvm_remote_flushes, true, 1, 5, 4, GiB);
	assert_count(&s.kvm_flush_requests, true, 2, 7, 5, GiB);
	/* 4: KVM's counters missing: the host's still count, 512 MiB moved */
	w = sample(VT_COUNTER_OK, 370, VT_COUNTER_ABSENT, 0, false, 0);
	vt_tlb_account(&m, &w, GiB / 2, &s);
	assert_count(&s.host_shootdowns, true, 200, 270, 250, GiB + GiB / 2);
	assert_count(&s.kvm_remote_flushes, false, 0, 5, 4, GiB);
	assert_count(&s.kvm_flush_requests, false, 0, 7, 5, GiB);
	/* 5: back, on a kernel without flush requests: marked, nothing counted */
	w = sample(VT_COUNTER_OK, 380, VT_COUNTER_OK, 100, false, 0);
	vt_tlb_account(&m, &w, 2 * GiB, &s);
	assert_count(&s.host_shootdowns, true, 10, 280, 260, 3 * GiB + GiB / 2);
	assert_count(&s.kvm_remote_flushes, true, 0, 5, 4, GiB);
	assert_count(&s.kvm_flush_requests, false, 0, 7, 5, GiB);
	/* 6: the host's count went back (a CPU went offline): marked again, not counted */
	w = sample(VT_COUNTER_OK, 300, VT_COUNTER_OK, 110, false, 0);
	vt_tlb_account(&m, &w, GiB, &s);
	assert_count(&s.host_shootdowns, true, 0, 280, 260, 3 * GiB + GiB / 2);
	assert_count(&s.kvm_remote_flushes, true, 10, 15, 14, 2 * GiB);
	/* 7: after a restart of the windows: marked only */
	vt_tlb_marks_drop(&m);
	w = sample(VT_COUNTER_OK, 900, VT_COUNTER_OK, 500, false, 0);
	vt_tlb_account(&m, &w, GiB, &s);
	assert_count(&s.host_shootdowns, true, 0, 280, 260, 3 * GiB + GiB / 2);
	assert_count(&s.kvm_remote_flushes, true, 0, 15, 14, 2 * GiB);
	w = sample(VT_COUNTER_OK, 901, VT_COUNTER_OK, 503, false, 0);
	vt_tlb_account(&m, &w, 0, &s);
	assert_count(&s.host_shootdowns, true, 1, 281, 260, 3 * GiB + GiB / 2);
	assert_count(&s.kvm_remote_flushes, true, 3, 18, 14, 2 * GiB);
	/* per GiB moved: 260 flushes over 3.5 GiB, 14 over 2 GiB, none moved yet */
	assert_float_equal(vt_tlb_per_gib(&s.host_shootdowns), 260 / 3.5, 1e-9);
	assert_float_equal(vt_tlb_per_gib(&s.kvm_remote_flushes), 7, 1e-9);
	assert_float_equal(vt_tlb_per_gib(&(struct vt_tlb_count){ .moving = 5 }), 0, 0);
}

struct logged {
	GPtrArray *lines;
};

static void capture(void *opaque, GLogLevelFlags level, const char *vm, const char *fmt,
		    va_list ap) G_GNUC_PRINTF(4, 0);

static void capture(void *opaque, GLogLevelFlags level, const char *vm, const char *fmt,
		    va_list ap)
{
	struct logged *l = opaque;
	g_autofree char *text = g_strdup_vprintf(fmt, ap);

	g_ptr_array_add(l->lines, g_strdup_printf("%s %s: %s",
						  level == G_LOG_LEVEL_WARNING ? "W" : "M", vm, text));
}

static void interrupts(const char *proc, uint64_t cpu0, uint64_t cpu1)
{
	g_autofree char *text = g_strdup_printf(
		"           CPU0       CPU1       \n"
		"LOC:    3512345    3498765   Local timer interrupts\n"
		"TLB: %10llu %10llu   TLB shootdowns\n"
		"ERR:          0\n", (unsigned long long)cpu0, (unsigned long long)cpu1);

	fake_tree_put(proc, "interrupts", text);
}

static void expect_lines(struct logged *l, const char *const *want, unsigned int n)
{
	if (l->lines->len != n)
		fail_msg("%u lines logged, not %u (first: %s)", l->lines->len, n,
			 l->lines->len ? (char *)g_ptr_array_index(l->lines, 0) : "none");
	for (unsigned int i = 0; i < n; i++)
		if (!strstr(g_ptr_array_index(l->lines, i), want[i]))
			fail_msg("line %u '%s' does not say '%s'", i,
				 (char *)g_ptr_array_index(l->lines, i), want[i]);
	g_ptr_array_set_size(l->lines, 0);
}

/* The window's reads from a fake /proc and debugfs: counted, and the log told once. */
static void test_window(void **state)
{
	const char *root = *state;
	g_autofree char *proc = g_build_filename(root, "proc", NULL);
	g_autofree char *debugfs = g_build_filename(root, "debug", NULL);
	struct logged l = { .lines = g_ptr_array_new_with_free_func(g_free) };
	static const struct vt_registry_ops ops = { .logv = capture };
	struct vt_registry reg = { .ops = &ops, .opaque = &l };
	struct vt_host_config *host = g_new0(struct vt_host_config, 1);
	struct vt_vm *vm = g_new0(struct vt_vm, 1);
	struct vt_vm_stats s = { 0 };
	static const char *const absent[] = {
		"M vm7: host TLB shootdowns: not available: ", "/proc/interrupts",
		"M vm7: KVM remote TLB flushes: not available: ", "(debugfs not mounted",
	};

	g_strlcpy(host->proc_root, proc, sizeof(host->proc_root));
	g_strlcpy(host->debugfs_root, debugfs, sizeof(host->debugfs_root));
	g_strlcpy(vm->name, "vm7", sizeof(vm->name));
	vm->pid = 777;
	vm->host = host;
	vm->reg = &reg;
	fake_tree_mkdir(root, "proc");
	fake_tree_mkdir(root, "debug");

	/* nothing there: not available, said once */
	vt_tlb_window(vm, 0, &s);
	assert_int_equal(l.lines->len, 2);
	assert_non_null(strstr(g_ptr_array_index(l.lines, 0), absent[0]));
	assert_non_null(strstr(g_ptr_array_index(l.lines, 0), absent[1]));
	assert_non_null(strstr(g_ptr_array_index(l.lines, 1), absent[2]));
	assert_non_null(strstr(g_ptr_array_index(l.lines, 1), absent[3]));
	g_ptr_array_set_size(l.lines, 0);
	vt_tlb_window(vm, GiB, &s);
	expect_lines(&l, NULL, 0);
	assert_false(s.tlb.host_shootdowns.ok);
	assert_false(s.tlb.kvm_remote_flushes.ok);
	assert_count(&s.tlb.host_shootdowns, false, 0, 0, 0, 0);

	/* the counters appear: counted again, marked */
	interrupts(proc, 1000, 2000);
	fake_tree_put(debugfs, "kvm/777-12/remote_tlb_flush", "40\n");
	fake_tree_put(debugfs, "kvm/777-12/remote_tlb_flush_requests", "90\n");
	vt_tlb_window(vm, 0, &s);
	expect_lines(&l, (const char *const[]){ "host TLB shootdowns: counted again",
						"KVM remote TLB flushes: counted again" }, 2);
	assert_count(&s.tlb.host_shootdowns, true, 0, 0, 0, 0);
	/* a window that moved 2 GiB */
	interrupts(proc, 1100, 2300);
	fake_tree_put(debugfs, "kvm/777-12/remote_tlb_flush", "48\n");
	fake_tree_put(debugfs, "kvm/777-12/remote_tlb_flush_requests", "99\n");
	vt_tlb_window(vm, 2 * GiB, &s);
	expect_lines(&l, NULL, 0);
	assert_count(&s.tlb.host_shootdowns, true, 400, 400, 400, 2 * GiB);
	assert_count(&s.tlb.kvm_remote_flushes, true, 8, 8, 8, 2 * GiB);
	assert_count(&s.tlb.kvm_flush_requests, true, 9, 9, 9, 2 * GiB);
	assert_float_equal(vt_tlb_per_gib(&s.tlb.host_shootdowns), 200, 1e-9);
	assert_float_equal(vt_tlb_per_gib(&s.tlb.kvm_remote_flushes), 4, 1e-9);

	/* malformed: a warning naming the file, once; the counts stand */
	fake_tree_put(debugfs, "kvm/777-12/remote_tlb_flush", "4x\n");
	vt_tlb_window(vm, 0, &s);
	vt_tlb_window(vm, 0, &s);
	expect_lines(&l, (const char *const[]){ "W vm7: KVM remote TLB flushes: not available: "
						}, 1);
	assert_count(&s.tlb.kvm_remote_flushes, false, 0, 8, 8, 2 * GiB);
	assert_count(&s.tlb.host_shootdowns, true, 0, 400, 400, 2 * GiB);

	g_ptr_array_free(l.lines, TRUE);
	g_free(vm);
	g_free(host);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_account),
		cmocka_unit_test_setup_teardown(test_window, fake_tree_setup, fake_tree_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
