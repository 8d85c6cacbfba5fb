// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Two VMs' guest hint channels in one process (engine/hint_stage.c), on real
 * files in /dev/shm, this process playing both QEMUs (it maps each file)
 * and both guests (it writes records with pwrite). A thread shrinks VM A's
 * file over and over while the windows run: the process lives, A's channel
 * is refused with its reason and counted in A's hint stats, and every record
 * VM B's guest writes is read, checked and acknowledged, window after window.
 * The channel opens between windows (vt_vm_hints_channel), never in the
 * hint stage, nor for a precopy window.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include <vtier/guest.h>

#include "daemon.h"
#include "hint_region.h"
#include "vm.h"
#include "hint_stage.h"
#include "placement.h"

#define REGION (64u << 10)
#define GIB (1ull << 30)
#define WINDOWS 600
#define PER_WINDOW 8

/* One VM: its hint file (QEMU's, mapped here) and its guest's producer side. */
struct side {
	struct vt_vm vm;
	struct vt_vm_stats s;
	char path[128];
	int fd;
	void *qemu_map;		/* never touched: QEMU's mapping, for the agent's check */
	uint32_t prod;
	uint64_t pushed, pushed_bytes;
};

static void side_open(struct side *x, struct vt_daemon *d, const char *name)
{
	struct vt_gpa_map g = { .gpa = 0, .len = GIB, .hva = 0x7f0000000000ull };

	g_strlcpy(x->vm.name, name, sizeof(x->vm.name));
	x->vm.host = &d->host;
	x->vm.reg = &d->reg;
	x->vm.pid = getpid();
	vt_vm_policy_default(&x->vm.policy);
	x->vm.policy.hints = true;
	x->vm.policy.mode = VT_MODE_OBSERVE;	/* FREE hints counted, nothing discarded */
	x->vm.gpa_map = g_array_new(FALSE, FALSE, sizeof(struct vt_gpa_map));
	g_array_append_val(x->vm.gpa_map, g);
	g_snprintf(x->path, sizeof(x->path), VT_HINT_REGION_DIR "/" VT_HINT_REGION_PREFIX "%s",
		   name);
	x->fd = open(x->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(x->fd >= 0);
	assert_int_equal(ftruncate(x->fd, REGION), 0);
	x->qemu_map = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, x->fd, 0);
	assert_true(x->qemu_map != MAP_FAILED);
}

static void side_close(struct side *x)
{
	vt_vm_hints_close(&x->vm);
	munmap(x->qemu_map, REGION);
	close(x->fd);
	unlink(x->path);
	g_array_free(x->vm.gpa_map, TRUE);
}

/* The guest's page, written again (a shrunk file lost it). */
static void guest_hello(struct side *x)
{
	struct vtier_guest_guest g = {
		.magic = htole32(VTIER_GUEST_GUEST_MAGIC),
		.abi_version = htole16(VTIER_GUEST_ABI_VERSION),
		.header_size = htole16(sizeof(g)),
		.prod = htole32(x->prod),
	};

	(void)!pwrite(x->fd, &g, sizeof(g), VTIER_GUEST_GUEST_OFFSET);
}

/* A FREE record of (@i % 8 + 1) pages, then the producer index past it. */
static void guest_push(struct side *x, uint64_t i)
{
	struct vtier_guest_hint r = {
		.seq = htole32(x->prod), .kind = htole16(VTIER_GUEST_FREE),
		.gpa = htole64((i % 500) * 2 * 1024 * 1024),
		.size_bytes = htole64((i % 8 + 1) * 4096),
	};
	__le32 prod = htole32(x->prod + 1);
	off_t slot = VTIER_GUEST_RING_OFFSET + (off_t)(x->prod % 1024) * (off_t)sizeof(r);

	(void)!pwrite(x->fd, &r, sizeof(r), slot);
	(void)!pwrite(x->fd, &prod, sizeof(prod), VTIER_GUEST_GUEST_OFFSET +
		      offsetof(struct vtier_guest_guest, prod));
	x->prod++;
	x->pushed++;
	x->pushed_bytes += (i % 8 + 1) * 4096;
}

static uint32_t host_cons(struct side *x)
{
	__le32 v = 0;

	assert_int_equal(pread(x->fd, &v, sizeof(v), offsetof(struct vtier_guest_host, cons)),
			 sizeof(v));
	return le32toh(v);
}

/* One window of @x's engine: the channel between windows, then the hint stage. */
static void side_window(struct side *x)
{
	vt_vm_hints_channel(&x->vm, x->s.windows, false);
	vt_vm_hints_window(&x->vm, NULL, vt_placement_waterfall_age(&x->vm), &x->s);
}

struct shrinker {
	int fd;
	volatile int stop;
	uint64_t cuts;
};

/* QEMU's owner cuts its file and gives it its size back, as fast as it can. */
static void *shrink_thread(void *arg)
{
	struct shrinker *k = arg;

	while (!__atomic_load_n(&k->stop, __ATOMIC_RELAXED)) {
		(void)!ftruncate(k->fd, (k->cuts % 3) * 4096);
		(void)!ftruncate(k->fd, REGION);
		k->cuts++;
	}
	return NULL;
}

static void test_shrunk_region_refuses_one_vm(void **state)
{
	struct vt_tiers tiers = { 0 };
	struct vt_daemon *d = vt_daemon_new(&tiers, NULL);
	struct side *a = g_new0(struct side, 1), *b = g_new0(struct side, 1);
	char name[64];
	struct shrinker k = { 0 };
	pthread_t th;
	bool saw_refusal = false;

	(void)state;
	g_snprintf(name, sizeof(name), "vth%da", (int)getpid());
	side_open(a, d, name);
	g_snprintf(name, sizeof(name), "vth%db", (int)getpid());
	side_open(b, d, name);
	guest_hello(a);
	guest_hello(b);
	/* both attach and read */
	side_window(a);
	side_window(b);
	assert_true(a->s.hints.attached);
	assert_true(b->s.hints.attached);

	k.fd = a->fd;
	assert_int_equal(pthread_create(&th, NULL, shrink_thread, &k), 0);
	for (uint64_t w = 1; w <= WINDOWS; w++) {
		guest_hello(a);
		for (int i = 0; i < PER_WINDOW; i++) {
			guest_push(a, w * PER_WINDOW + i);
			guest_push(b, w * PER_WINDOW + i);
		}
		a->s.windows = b->s.windows = w;
		side_window(a);
		side_window(b);
		if (strstr(a->s.hints.error, "channel refused"))
			saw_refusal = true;
		/* B: every record read, accepted, its bytes counted, acknowledged */
		assert_true(b->s.hints.attached);
		assert_string_equal(b->s.hints.error, "");
		assert_int_equal(b->s.hints.refused, 0);
		assert_int_equal(b->s.hints.ch.records, b->pushed);
		assert_int_equal(b->s.hints.ch.accepted[VTIER_GUEST_FREE], b->pushed);
		assert_int_equal(b->s.hints.observe_discard_bytes, b->pushed_bytes);
		assert_int_equal(host_cons(b), b->prod);
		/* the guest's pace within the channel's record cap (4096/s) */
		g_usleep(2500);
	}
	__atomic_store_n(&k.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	/* A: refused, with its reason, counted; looked for again later */
	assert_true(k.cuts > 0);
	assert_true(saw_refusal);
	assert_true(a->s.hints.refused >= 1);
	if (!a->s.hints.attached)
		assert_true(a->s.hints.error[0] != '\0');
	/* the shrinking stopped: A attaches again within the retry and reads */
	guest_hello(a);
	for (uint64_t w = WINDOWS + 1; w <= WINDOWS + 12; w++) {
		a->s.windows = w;
		side_window(a);
	}
	assert_true(a->s.hints.attached);
	guest_push(a, 1);
	a->s.windows++;
	side_window(a);
	assert_int_equal(host_cons(a), a->prod);
	assert_true(a->s.hints.refused >= 1);
	print_message("# A refused %llu times in %llu cuts; B read %llu records\n",
		      (unsigned long long)a->s.hints.refused, (unsigned long long)k.cuts,
		      (unsigned long long)b->pushed);
	side_close(a);
	side_close(b);
	g_free(a);
	g_free(b);
	vt_daemon_free(d);
}

/*
 * The hint stage only reads: a window whose channel was not opened between
 * windows neither opens the region nor reads it; a precopy window to come
 * opens nothing (it ends before the hint stage); the next ordinary window
 * opens it and its stage reads every record and acknowledges it.
 */
static void test_stage_reads_channel_opens(void **state)
{
	struct vt_tiers tiers = { 0 };
	struct vt_daemon *d = vt_daemon_new(&tiers, NULL);
	struct side *a = g_new0(struct side, 1);
	char name[64];

	(void)state;
	g_snprintf(name, sizeof(name), "vth%dc", (int)getpid());
	side_open(a, d, name);
	guest_hello(a);
	/* the stage alone: the region stays closed */
	vt_vm_hints_window(&a->vm, NULL, vt_placement_waterfall_age(&a->vm), &a->s);
	assert_false(a->s.hints.attached);
	/* a precopy window to come: not opened either */
	vt_vm_hints_channel(&a->vm, a->s.windows, true);
	vt_vm_hints_window(&a->vm, NULL, vt_placement_waterfall_age(&a->vm), &a->s);
	assert_false(a->s.hints.attached);
	/* an ordinary window: opened between windows, its stage reads */
	side_window(a);
	assert_true(a->s.hints.attached);
	assert_string_equal(a->s.hints.error, "");
	/* the next window's stage reads every record and acknowledges it */
	for (int i = 0; i < PER_WINDOW; i++)
		guest_push(a, i);
	a->s.windows++;
	side_window(a);
	assert_true(a->s.hints.attached);
	assert_int_equal(a->s.hints.ch.records, a->pushed);
	assert_int_equal(a->s.hints.observe_discard_bytes, a->pushed_bytes);
	assert_int_equal(host_cons(a), a->prod);
	/* hints=off: the channel is left between windows, the stage reports nothing */
	a->vm.policy.hints = false;
	side_window(a);
	assert_null(a->vm.hints);
	assert_false(a->s.hints.attached);
	side_close(a);
	g_free(a);
	vt_daemon_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shrunk_region_refuses_one_vm),
		cmocka_unit_test(test_stage_reads_channel_opens),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
