// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A VM's worker retires without waiting (vt_vm_retire(vm, false)): the main
 * loop goes on at once while a reaper thread joins the worker and frees the
 * VM and its context. Nothing of the VM may be touched by the caller after
 * the reaper starts: once it did (the quit source's last reference dropped
 * at return, locking the freed context's mutex), and a detach hung vtierd's
 * main loop forever under MALLOC_PERTURB_. The race is made certain here:
 * g_thread_unref() of the reaper is wrapped (-Wl,--wrap) into a join, so
 * the reaper has freed everything before vt_vm_retire() returns. The freed
 * context is touched inside glib, which the sanitizer does not instrument:
 * the plain build catches it, where meson's MALLOC_PERTURB_ fills freed
 * memory and the freed mutex never unlocks (the old code hung here within
 * the first rounds; an alarm turns a hang into a failure). Then many VMs
 * retire back to back, some with work on their context, and every reaper
 * must end (the thread count comes back) within a bound.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "vm.h"
#include "vm_worker.h"

#define ROUNDS 300

void __real_g_thread_unref(GThread *thread);
void __wrap_g_thread_unref(GThread *thread);

static bool reaper_first;	/* test_reaper_ahead only: the main thread's own */

/* The reaper's reference, dropped by vt_vm_retire(): a join first while @reaper_first. */
void __wrap_g_thread_unref(GThread *thread)
{
	if (reaper_first) {
		g_thread_join(thread);
		return;
	}
	__real_g_thread_unref(thread);
}

static unsigned int threads_now(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	unsigned int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The thread count once an earlier test's joined threads have left /proc. */
static unsigned int threads_settled(void)
{
	gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
	unsigned int n = threads_now(), before;

	do {
		before = n;
		g_usleep(20000);
		n = threads_now();
	} while (n != before && g_get_monotonic_time() < deadline);
	return n;
}

/* What a VM needs to have a worker: its context, lock and nothing attached. */
static struct vt_vm *vm_bare(unsigned int i)
{
	struct vt_vm *vm = g_new0(struct vt_vm, 1);

	g_snprintf(vm->name, sizeof(vm->name), "vm%u", i);
	vm->ctx = g_main_context_new();
	vm->zswap.pidfd = -1;
	g_mutex_init(&vm->lock);
	return vm;
}

static gboolean count(gpointer data)
{
	g_atomic_int_inc((gint *)data);
	return G_SOURCE_REMOVE;
}

/*
 * Every reaper ends: back to @base threads within 30 s (a hang fails, not a
 * slow host). Also after a join: the kernel wakes the joiner when the thread
 * drops its tid, and lists the task in /proc/self/task until its exit is done
 * (a CI run under load counted it there right after the join, three times).
 */
static void wait_reaped(unsigned int base)
{
	gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

	while (threads_now() > base && g_get_monotonic_time() < deadline)
		g_usleep(1000);
	assert_int_equal(threads_now(), base);
}

/* The reaper frees the VM and its context before vt_vm_retire() returns. */
static void test_reaper_ahead(void **state)
{
	unsigned int base = threads_settled();

	(void)state;
	for (unsigned int i = 0; i < 20; i++) {
		struct vt_vm *vm = vm_bare(i);

		assert_int_equal(vt_vm_worker_start(vm), 0);
		reaper_first = true;
		vt_vm_retire(vm, false);
		reaper_first = false;
		wait_reaped(base);
	}
}

static void test_retire_without_waiting(void **state)
{
	unsigned int base = threads_settled();
	gint ran = 0;

	(void)state;
	for (unsigned int i = 0; i < ROUNDS; i++) {
		struct vt_vm *vm = vm_bare(i);

		assert_int_equal(vt_vm_worker_start(vm), 0);
		/* every other VM has work queued on its context when it retires */
		if (i & 1)
			g_main_context_invoke(vm->ctx, count, &ran);
		/* every third one: the reaper gets ahead of us at once */
		if (i % 3 == 0)
			g_thread_yield();
		vt_vm_retire(vm, false);
	}
	wait_reaped(base);
	/* the queued work ran or went with its context; never twice */
	assert_true(g_atomic_int_get(&ran) <= ROUNDS / 2);
}

static void test_retire_waiting(void **state)
{
	unsigned int base = threads_settled();

	(void)state;
	for (unsigned int i = 0; i < ROUNDS / 10; i++) {
		struct vt_vm *vm = vm_bare(i);

		assert_int_equal(vt_vm_worker_start(vm), 0);
		vt_vm_retire(vm, true);
		/* the wait is the join: the worker has ended */
		wait_reaped(base);
	}
}

/* A VM whose worker never started (no thread to spare) is freed at once. */
static void test_retire_never_started(void **state)
{
	(void)state;
	vt_vm_retire(vm_bare(0), false);
}

/* What the VM's TLB window holds (its KVM directory, open) is closed when the VM goes. */
static void test_retire_releases_kvm_dir(void **state)
{
	struct vt_vm *vm = vm_bare(0);
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	vm->tlb_marks.kvm_dir = (struct vt_kvm_dir){ .held = true, .fd = fd, .pid = 1 };
	assert_int_equal(vt_vm_worker_start(vm), 0);
	vt_vm_retire(vm, true);
	/* single-threaded again: nothing else took the number meanwhile */
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reaper_ahead),
		cmocka_unit_test(test_retire_without_waiting),
		cmocka_unit_test(test_retire_waiting),
		cmocka_unit_test(test_retire_never_started),
		cmocka_unit_test(test_retire_releases_kvm_dir),
	};

	alarm(120);	/* a hang (a freed mutex locked) fails, by SIGALRM */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
