// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * VM discovery against a real QEMU (TCG, stopped with -S): three NUMA nodes
 * backed by memory-backend-ram, -memfd and -file; their RAM blocks' HVAs are
 * checked against /proc/PID/maps independently, and a VM that exits while
 * attached is detached while the daemon keeps serving. Skips without QEMU.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"
#include "procmaps.h"

/* every QEMU started, killed by the group teardown even when a test fails */
static GPid started[8];
static unsigned int nr_started;

struct qemu {
	GPid pid;
	char *dir;
	char *qmp;
};

static bool qemu_start(struct qemu *q)
{
	g_autofree char *exe = g_find_program_in_path("qemu-system-x86_64");
	g_autofree char *file = NULL, *fileobj = NULL, *qmparg = NULL;
	g_autofree char *hints = NULL, *hintsobj = NULL;
	g_autoptr(GError) e = NULL;

	if (!exe)
		return false;
	q->dir = g_dir_make_tmp("vtier-disc-XXXXXX", NULL);
	q->qmp = g_build_filename(q->dir, "qmp.sock", NULL);
	file = g_build_filename(q->dir, "m2.ram", NULL);
	fileobj = g_strdup_printf("memory-backend-file,id=m2,size=64M,mem-path=%s", file);
	/* a guest hint region: device memory (ivshmem's BAR 2), not guest RAM */
	hints = g_build_filename(q->dir, "vtier-hints-disc", NULL);
	hintsobj = g_strdup_printf("memory-backend-file,id=vtier-hints,size=1M,share=on,mem-path=%s",
				   hints);
	qmparg = g_strdup_printf("unix:%s,server=on,wait=off", q->qmp);
	{
		const char *argv[] = {
			exe, "-name", "disc-test", "-accel", "tcg", "-machine", "q35", "-m", "320M",
			"-smp", "3", "-nodefaults", "-display", "none", "-S",
			"-object", "memory-backend-ram,id=m0,size=128M",
			"-object", "memory-backend-memfd,id=m1,size=128M,share=on",
			"-object", fileobj,
			"-object", hintsobj, "-device", "ivshmem-plain,memdev=vtier-hints",
			"-numa", "node,nodeid=0,memdev=m0,cpus=0",
			"-numa", "node,nodeid=1,memdev=m1,cpus=1",
			"-numa", "node,nodeid=2,memdev=m2,cpus=2",
			"-qmp", qmparg, NULL,
		};

		assert_true(g_spawn_async(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD |
					  G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
					  NULL, NULL, &q->pid, &e));
		started[nr_started++] = q->pid;
	}
	for (int i = 0; i < 200 && !g_file_test(q->qmp, G_FILE_TEST_EXISTS); i++)
		g_usleep(50000);
	assert_true(g_file_test(q->qmp, G_FILE_TEST_EXISTS));
	return true;
}

static void qemu_stop(struct qemu *q)
{
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", q->dir);

	if (q->pid > 0) {
		kill(q->pid, SIGKILL);
		waitpid(q->pid, NULL, 0);
		q->pid = 0;
	}
	assert_int_equal(system(cmd), 0);
	g_free(q->dir);
	g_free(q->qmp);
}

static GArray *maps_now(pid_t pid)
{
	static GArray *m;

	if (m)
		g_array_free(m, TRUE);
	m = g_array_new(FALSE, TRUE, sizeof(struct vt_mapping));
	assert_true(vt_procmaps_read(pid, m, NULL));
	return m;
}

static void test_discover(void **state)
{
	struct qemu q = { 0 };
	g_autoptr(GError) e = NULL;
	g_autoptr(GArray) ram = g_array_new(FALSE, TRUE, sizeof(struct vt_vm_ram));
	g_autoptr(GArray) maps = g_array_new(FALSE, TRUE, sizeof(struct vt_mapping));
	g_autoptr(GArray) gmap = g_array_new(FALSE, TRUE, sizeof(struct vt_gpa_map));
	struct vt_qmp *qmp;

	(void)state;
	if (!qemu_start(&q))
		skip();
	qmp = vt_qmp_connect(q.qmp, 10000, &e);
	assert_non_null(qmp);
	assert_int_equal(vt_qmp_peer_pid(qmp), q.pid);
	assert_string_equal(vt_qmp_version(qmp), "10.0.2");
	if (!vt_vm_discover(qmp, q.pid, ram, gmap, &e))
		fail_msg("discover: %s", e->message);
	assert_int_equal(ram->len, 3);
	/* gpa -> hva: the three nodes' RAM, 320 MiB in all, each inside its block */
	{
		uint64_t total = 0;

		assert_true(gmap->len >= 3);
		for (unsigned int i = 0; i < gmap->len; i++) {
			const struct vt_gpa_map *g = &g_array_index(gmap, struct vt_gpa_map, i);

			total += g->len;
			assert_non_null(vt_procmaps_find(maps_now(q.pid), g->hva, g->hva + g->len));
		}
		assert_true(total > 300ULL << 20 && total <= 320ULL << 20);
	}
	assert_true(vt_procmaps_read(q.pid, maps, NULL));
	for (unsigned int i = 0; i < 3; i++) {
		g_autofree char *id = g_strdup_printf("m%u", i);
		const struct vt_vm_ram *r = NULL;
		const struct vt_mapping *m;

		for (unsigned int j = 0; j < ram->len; j++)
			if (strcmp(g_array_index(ram, struct vt_vm_ram, j).backend, id) == 0)
				r = &g_array_index(ram, struct vt_vm_ram, j);
		assert_non_null(r);
		m = vt_procmaps_find(maps, r->hva, r->hva + r->size);
		assert_non_null(m);
		assert_int_equal(r->size, i == 2 ? 64 << 20 : 128 << 20);
		switch (i) {
		case 0:
			assert_string_equal(r->type, "memory-backend-ram");
			assert_string_equal(m->path, "");
			assert_true(r->thp);
			break;
		case 1:
			assert_string_equal(r->type, "memory-backend-memfd");
			assert_non_null(strstr(m->path, "memfd:"));
			assert_true(r->share);
			break;
		case 2:
			assert_string_equal(r->type, "memory-backend-file");
			assert_non_null(strstr(m->path, "m2.ram"));
			break;
		}
	}
	vt_qmp_free(qmp);
	qemu_stop(&q);
}

struct attached {
	bool done;
	struct vt_vm *vm;
	GError *error;
};

static void attached_cb(struct vt_vm *vm, const GError *error, void *arg)
{
	struct attached *a = arg;

	a->done = true;
	a->vm = vm;
	a->error = error ? g_error_copy(error) : NULL;
}

/* vt_daemon_attach, waited for on the main loop: the VM, or NULL and @error. */
static struct vt_vm *attach_wait(struct vt_daemon *d, const char *qmp, const char *name,
				 char **set, unsigned int nr_set, GError **error)
{
	struct attached a = { 0 };
	gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;

	if (!vt_daemon_attach(d, qmp, name, set, nr_set, attached_cb, &a, error))
		return NULL;
	while (!a.done && g_get_monotonic_time() < deadline)
		g_main_context_iteration(NULL, TRUE);
	assert_true(a.done);
	if (a.error)
		g_propagate_error(error, a.error);
	return a.vm;
}

static void test_vm_exits(void **state)
{
	struct qemu q = { 0 }, q2 = { 0 };
	struct vt_tiers tiers;
	struct vt_daemon *d;
	char *set[] = { "mode=off" };
	g_autoptr(GError) e = NULL;
	struct vt_vm *vm;
	gint64 deadline;

	(void)state;
	if (!qemu_start(&q))
		skip();
	assert_true(qemu_start(&q2));
	assert_true(vt_tiers_discover(&tiers, "/", NULL, NULL));
	d = vt_daemon_new(&tiers, NULL);
	vm = attach_wait(d, q.qmp, NULL, set, 1, &e);
	if (!vm)
		fail_msg("attach: %s", e->message);
	assert_string_equal(vm->name, "disc-test");	/* from query-name */
	assert_non_null(attach_wait(d, q2.qmp, "other", set, 1, NULL));
	/* attaching the same QEMU twice is refused */
	g_clear_error(&e);
	assert_null(attach_wait(d, q.qmp, "again", set, 1, &e));
	assert_int_equal(e->code, EEXIST);
	assert_int_equal(g_hash_table_size(d->vms), 2);
	kill(q.pid, SIGKILL);
	waitpid(q.pid, NULL, 0);
	q.pid = 0;
	deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
	while (g_hash_table_contains(d->vms, "disc-test") && g_get_monotonic_time() < deadline)
		g_main_context_iteration(NULL, FALSE), g_usleep(1000);
	assert_false(g_hash_table_contains(d->vms, "disc-test"));
	assert_true(g_hash_table_contains(d->vms, "other"));	/* still served */
	{
		const char *req = "{\"v\":1,\"cmd\":\"status\",\"vm\":\"other\"}";
		g_autofree char *r = vt_daemon_handle(d, req, strlen(req));

		assert_non_null(strstr(r, "\"ok\":true"));
		assert_non_null(strstr(r, "memory-backend-memfd"));
	}
	vt_daemon_free(d);
	qemu_stop(&q);
	qemu_stop(&q2);
}

static int kill_all(void **state)
{
	(void)state;
	for (unsigned int i = 0; i < nr_started; i++)
		if (kill(started[i], SIGKILL) == 0)
			waitpid(started[i], NULL, 0);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_discover),
		cmocka_unit_test(test_vm_exits),
	};

	return cmocka_run_group_tests(tests, NULL, kill_all);
}
