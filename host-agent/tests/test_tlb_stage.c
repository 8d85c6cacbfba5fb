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

/* A fake /proc and debugfs under the test's root, and VMs whose windows read them. */
struct fixture {
	char *proc, *debugfs;
	struct logged l;
	struct vt_registry reg;
	struct vt_host_config host;
};

static struct fixture *fixture_new(const char *root)
{
	static const struct vt_registry_ops ops = { .logv = capture };
	struct fixture *f = g_new0(struct fixture, 1);

	f->proc = g_build_filename(root, "proc", NULL);
	f->debugfs = g_build_filename(root, "debug", NULL);
	f->l.lines = g_ptr_array_new_with_free_func(g_free);
	f->reg = (struct vt_registry){ .ops = &ops, .opaque = &f->l };
	g_strlcpy(f->host.proc_root, f->proc, sizeof(f->host.proc_root));
	g_strlcpy(f->host.debugfs_root, f->debugfs, sizeof(f->host.debugfs_root));
	fake_tree_mkdir(root, "proc");
	fake_tree_mkdir(root, "debug");
	return f;
}

static void fixture_free(struct fixture *f)
{
	g_ptr_array_free(f->l.lines, TRUE);
	g_free(f->proc);
	g_free(f->debugfs);
	g_free(f);
}

/* A VM as the daemon makes it, without the daemon: its windows read the fake tree alone. */
static struct vt_vm *vm_new(struct fixture *f, const char *name, pid_t pid)
{
	struct vt_vm *vm = g_new0(struct vt_vm, 1);

	g_strlcpy(vm->name, name, sizeof(vm->name));
	vm->pid = pid;
	vm->host = &f->host;
	vm->reg = &f->reg;
	return vm;
}

static void vm_free(struct vt_vm *vm)
{
	vt_tlb_release(&vm->tlb_marks);
	assert_false(vm->tlb_marks.kvm_dir.held);
	g_free(vm);
}

/* A VM's KVM counters at @dir ("kvm/<pid>-<fd>") of the fake debugfs. */
static void kvm_counts(struct fixture *f, const char *dir, uint64_t flushes, uint64_t requests)
{
	g_autofree char *rel = g_build_filename("kvm", dir, "remote_tlb_flush", NULL);
	g_autofree char *text = g_strdup_printf("%llu\n", (unsigned long long)flushes);
	g_autofree char *req_rel = g_strconcat(rel, "_requests", NULL);
	g_autofree char *req = g_strdup_printf("%llu\n", (unsigned long long)requests);

	fake_tree_put(f->debugfs, rel, text);
	fake_tree_put(f->debugfs, req_rel, req);
}

static void kvm_gone(struct fixture *f, const char *dir)
{
	g_autofree char *path = g_build_filename(f->debugfs, "kvm", dir, NULL);

	fake_tree_rm(path);
}

/* A window whose KVM counters were read from @dir, remote_tlb_flush there being @flushes. */
static void window_reads(struct vt_vm *vm, struct vt_vm_stats *s, const char *dir,
			 uint64_t flushes)
{
	vt_tlb_window(vm, 0, s);
	assert_true(s->tlb.kvm_remote_flushes.ok);
	assert_int_equal(vm->tlb_marks.kvm_remote_flushes.value, flushes);
	assert_true(vm->tlb_marks.kvm_dir.held);
	assert_string_equal(vm->tlb_marks.kvm_dir.name, dir);
}

/* The window's reads from a fake /proc and debugfs: counted, and the log told once. */
static void test_window(void **state)
{
	struct fixture *f = fixture_new(*state);
	struct vt_vm *vm = vm_new(f, "vm7", 777);
	struct vt_vm_stats s = { 0 };
	struct logged *l = &f->l;
	static const char *const absent[] = {
		"M vm7: host TLB shootdowns: not available: ", "/proc/interrupts",
		"M vm7: KVM remote TLB flushes: not available: ", "(debugfs not mounted",
	};

	/* nothing there: not available, said once */
	vt_tlb_window(vm, 0, &s);
	assert_int_equal(l->lines->len, 2);
	assert_non_null(strstr(g_ptr_array_index(l->lines, 0), absent[0]));
	assert_non_null(strstr(g_ptr_array_index(l->lines, 0), absent[1]));
	assert_non_null(strstr(g_ptr_array_index(l->lines, 1), absent[2]));
	assert_non_null(strstr(g_ptr_array_index(l->lines, 1), absent[3]));
	g_ptr_array_set_size(l->lines, 0);
	vt_tlb_window(vm, GiB, &s);
	expect_lines(l, NULL, 0);
	assert_false(s.tlb.host_shootdowns.ok);
	assert_false(s.tlb.kvm_remote_flushes.ok);
	assert_count(&s.tlb.host_shootdowns, false, 0, 0, 0, 0);

	/* the counters appear: counted again, marked */
	interrupts(f->proc, 1000, 2000);
	kvm_counts(f, "777-12", 40, 90);
	vt_tlb_window(vm, 0, &s);
	expect_lines(l, (const char *const[]){ "host TLB shootdowns: counted again",
					       "KVM remote TLB flushes: counted again" }, 2);
	assert_count(&s.tlb.host_shootdowns, true, 0, 0, 0, 0);
	/* a window that moved 2 GiB */
	interrupts(f->proc, 1100, 2300);
	kvm_counts(f, "777-12", 48, 99);
	vt_tlb_window(vm, 2 * GiB, &s);
	expect_lines(l, NULL, 0);
	assert_count(&s.tlb.host_shootdowns, true, 400, 400, 400, 2 * GiB);
	assert_count(&s.tlb.kvm_remote_flushes, true, 8, 8, 8, 2 * GiB);
	assert_count(&s.tlb.kvm_flush_requests, true, 9, 9, 9, 2 * GiB);
	assert_float_equal(vt_tlb_per_gib(&s.tlb.host_shootdowns), 200, 1e-9);
	assert_float_equal(vt_tlb_per_gib(&s.tlb.kvm_remote_flushes), 4, 1e-9);

	/* malformed: a warning naming the file, once; the counts stand */
	fake_tree_put(f->debugfs, "kvm/777-12/remote_tlb_flush", "4x\n");
	vt_tlb_window(vm, 0, &s);
	vt_tlb_window(vm, 0, &s);
	expect_lines(l, (const char *const[]){ "W vm7: KVM remote TLB flushes: not available: "
					       }, 1);
	assert_count(&s.tlb.kvm_remote_flushes, false, 0, 8, 8, 2 * GiB);
	assert_count(&s.tlb.host_shootdowns, true, 0, 400, 400, 2 * GiB);

	vm_free(vm);
	fixture_free(f);
}

/*
 * The VM's KVM directory is found once: a second "<pid>-<fd>" directory that
 * appears later is not seen (a listing would find two and read neither) until
 * the one held is gone; gone with none in its place, and back under another
 * fd, it is found again.
 */
static void test_kvm_dir_held(void **state)
{
	struct fixture *f = fixture_new(*state);
	struct vt_vm *vm = vm_new(f, "vm7", 777);
	struct vt_vm_stats s = { 0 };

	kvm_counts(f, "777-12", 40, 90);
	window_reads(vm, &s, "777-12", 40);
	expect_lines(&f->l, (const char *const[]){ "host TLB shootdowns: not available" }, 1);
	kvm_counts(f, "777-13", 1, 2);
	for (unsigned int i = 1; i <= 5; i++) {
		kvm_counts(f, "777-12", 40 + i, 90 + 2 * i);
		vt_tlb_window(vm, 0, &s);
		assert_count(&s.tlb.kvm_remote_flushes, true, 1, i, 0, 0);
		assert_count(&s.tlb.kvm_flush_requests, true, 2, 2 * i, 0, 0);
	}
	/* the VM's KVM fd closed, another opened: the held read fails, the new one is read */
	kvm_gone(f, "777-12");
	window_reads(vm, &s, "777-13", 1);
	kvm_counts(f, "777-13", 4, 2);
	vt_tlb_window(vm, 0, &s);
	assert_count(&s.tlb.kvm_remote_flushes, true, 3, 8, 0, 0);

	/* gone, none in its place: not available, and nothing held */
	kvm_gone(f, "777-13");
	vt_tlb_window(vm, 0, &s);
	assert_false(s.tlb.kvm_remote_flushes.ok);
	assert_false(vm->tlb_marks.kvm_dir.held);
	expect_lines(&f->l, (const char *const[]){ "KVM remote TLB flushes: not available" }, 1);
	/* back under another fd: found, counted again */
	kvm_counts(f, "777-20", 7, 9);
	window_reads(vm, &s, "777-20", 7);
	expect_lines(&f->l, (const char *const[]){ "KVM remote TLB flushes: counted again" }, 1);

	vm_free(vm);
	fixture_free(f);
}

/* A new pid (QEMU restarted) never reads the old pid's directory, still there or not. */
static void test_kvm_dir_pid(void **state)
{
	struct fixture *f = fixture_new(*state);
	struct vt_vm *vm = vm_new(f, "vm7", 777);
	struct vt_vm_stats s = { 0 };

	kvm_counts(f, "777-12", 40, 90);
	window_reads(vm, &s, "777-12", 40);
	vm->pid = 778;
	kvm_counts(f, "777-12", 50, 95);
	vt_tlb_window(vm, 0, &s);
	assert_false(s.tlb.kvm_remote_flushes.ok);
	assert_false(vm->tlb_marks.kvm_dir.held);
	kvm_counts(f, "778-3", 60, 97);
	window_reads(vm, &s, "778-3", 60);
	assert_int_equal(vm->tlb_marks.kvm_dir.pid, 778);

	vm_free(vm);
	fixture_free(f);
}

/*
 * Two VMs sharing the host's sample: within the interval the second takes
 * what the first read (the file changed between them); after it, a window
 * reads the file again and the other takes that. Each VM's deltas are its
 * own; a VM without the shared sample reads the file itself.
 */
static void test_host_shared(void **state)
{
	struct fixture *f = fixture_new(*state);
	struct vt_vm *a = vm_new(f, "vm1", 101), *b = vm_new(f, "vm2", 102);
	struct vt_vm *alone = vm_new(f, "vm3", 103);
	struct vt_vm_stats sa = { 0 }, sb = { 0 }, salone = { 0 };
	const gint64 t0 = 1000000, age = VT_TLB_HOST_MAX_AGE_US;
	g_autofree char *path = g_build_filename(f->proc, "interrupts", NULL);
	unsigned int told = 0;
	struct vt_tlb_host h;

	vt_tlb_host_init(&h);
	a->tlb_host = b->tlb_host = &h;
	interrupts(f->proc, 1000, 2000);
	vt_tlb_window_at(a, 0, &sa, t0);
	interrupts(f->proc, 1100, 2300);
	vt_tlb_window_at(b, 0, &sb, t0 + age - 1);
	assert_int_equal(a->tlb_marks.host_shootdowns.value, 3000);
	assert_int_equal(b->tlb_marks.host_shootdowns.value, 3000);
	vt_tlb_window_at(alone, 0, &salone, t0 + age - 1);
	assert_int_equal(alone->tlb_marks.host_shootdowns.value, 3400);

	/* the interval is over: read again by the first window, taken by the other */
	vt_tlb_window_at(b, GiB, &sb, t0 + age);
	interrupts(f->proc, 5000, 0);
	vt_tlb_window_at(a, 0, &sa, t0 + age + 1);
	assert_count(&sb.tlb.host_shootdowns, true, 400, 400, 400, GiB);
	assert_count(&sa.tlb.host_shootdowns, true, 400, 400, 0, 0);

	/* gone: both told why, from the one read */
	g_ptr_array_set_size(f->l.lines, 0);
	g_unlink(path);
	vt_tlb_window_at(a, 0, &sa, t0 + 2 * age);
	vt_tlb_window_at(b, 0, &sb, t0 + 2 * age);
	assert_false(sa.tlb.host_shootdowns.ok);
	assert_false(sb.tlb.host_shootdowns.ok);
	assert_true(h.state == VT_COUNTER_ABSENT);
	for (unsigned int i = 0; i < f->l.lines->len; i++) {
		const char *line = g_ptr_array_index(f->l.lines, i);

		if (!strstr(line, "host TLB shootdowns: not available: "))
			continue;
		if (!strstr(line, path))
			fail_msg("'%s' does not name %s", line, path);
		told++;
	}
	assert_int_equal(told, 2);
	interrupts(f->proc, 6000, 0);
	vt_tlb_window_at(b, 0, &sb, t0 + 3 * age);
	vt_tlb_window_at(a, 0, &sa, t0 + 3 * age);
	assert_true(sa.tlb.host_shootdowns.ok);
	assert_true(sb.tlb.host_shootdowns.ok);

	vm_free(a);
	vm_free(b);
	vm_free(alone);
	vt_tlb_host_clear(&h);
	fixture_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_account),
		cmocka_unit_test_setup_teardown(test_window, fake_tree_setup, fake_tree_teardown),
		cmocka_unit_test_setup_teardown(test_kvm_dir_held, fake_tree_setup,
						fake_tree_teardown),
		cmocka_unit_test_setup_teardown(test_kvm_dir_pid, fake_tree_setup,
						fake_tree_teardown),
		cmocka_unit_test_setup_teardown(test_host_shared, fake_tree_setup,
						fake_tree_teardown),
	};

	/* glib's own complaints (a NULL error propagated, ...) fail the test */
	g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
