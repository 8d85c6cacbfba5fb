// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The guest hint channel of a VM, on its worker (policy hints=on): its region
 * found by the VM's name and checked (hint_region.h) between windows
 * (vt_vm_hints_channel: opened, retried, closed), read each window before
 * the placement (hint_reader.h), the discards it asks for carried out by the
 * hand-off's mover thread (memfd guest RAM: punched, stored copies dropped)
 * or paged out (anonymous RAM: process_madvise(MADV_PAGEOUT), the only
 * reclaim the kernel lets another process ask for), the balloon target from
 * the policy (balloon=SIZE), and the figures for vtierctl stats.
 */
#include <errno.h>
#include <string.h>

#include "backend.h"
#include "hint_reader.h"
#include "hint_region.h"
#include "thread_ns.h"
#include "vm.h"
#include "hint_stage.h"
#include "zswap.h"

#define RETRY_WINDOWS 10	/* a VM without a usable region: look again after this */
#define CPU_PCT 1		/* the reader's CPU per window: 1 % of the window */
/*
 * A guest's free page report waits for its ack, and sends the next batch
 * only then: the worker waits this long (a twentieth of the window at most)
 * for the mover's discards, so that a batch costs one window, not two.
 */
#define ACK_WAIT_MS 50

struct vt_vm_hints {
	struct vt_hint_region region;
	struct vt_hint_reader *reader;
	struct vt_zswap pageout;	/* anonymous RAM: the QEMU process, by pidfd */
	GPtrArray *window_backends;	/* this window's, for discard() */
	GPtrArray *queued;		/* backends with discards not yet acknowledged (refs) */
	uint64_t pageout_bytes;
	uint64_t retry_window;
	uint64_t balloon_bytes;		/* last target set */
	bool balloon_set;
	uint64_t refused;		/* channels closed because the region failed (shrunk) */
	char error[160];
};

static int discard(void *opaque, uint64_t hva, uint64_t len)
{
	struct vt_vm_hints *h = opaque;
	struct vt_backend *b = vt_backend_of_hva(h->window_backends, hva);
	int64_t n;
	int ret;

	if (b) {
		if (len > b->size - (hva - b->hva))
			return -ERANGE;
		ret = vt_backend_discard(b, hva - b->hva, len);
		if (ret < 0)
			return ret;
		if (!g_ptr_array_find(h->queued, b, NULL))
			g_ptr_array_add(h->queued, vt_backend_ref(b));
		return 1;
	}
	if (h->pageout.pidfd < 0)
		return -ENOTSUP;
	/* the data stays (swap or zswap): safe whenever it runs */
	n = vt_zswap_pageout(&h->pageout, hva, len);
	if (n < 0)
		return (int)n;
	h->pageout_bytes += len;
	return 0;
}

static unsigned int pending(void *opaque)
{
	struct vt_vm_hints *h = opaque;
	unsigned int n = 0;

	for (unsigned int i = 0; i < h->queued->len; i++)
		n += vt_backend_discards_pending(g_ptr_array_index(h->queued, i));
	if (!n)
		g_ptr_array_set_size(h->queued, 0);	/* done: the reader acknowledges */
	return n;
}

static void cancel(void *opaque)
{
	struct vt_vm_hints *h = opaque;

	for (unsigned int i = 0; i < h->queued->len; i++)
		vt_backend_discard_cancel(g_ptr_array_index(h->queued, i));
	g_ptr_array_set_size(h->queued, 0);
}

static struct vt_hint_env env_of(struct vt_vm *vm, struct vt_vm_hints *h, unsigned int cold_age)
{
	G_STATIC_ASSERT(sizeof(struct vt_hint_map) == sizeof(struct vt_gpa_map));
	return (struct vt_hint_env){
		.map = (const struct vt_hint_map *)(const void *)vm->gpa_map->data,
		.n_map = vm->gpa_map->len,
		.mtm = vm->mtm,
		.hot_threshold = vm->policy.hot_threshold,
		.cold_age = cold_age,
		.act = vm->policy.mode == VT_MODE_AUTO,
		.cpu_budget_ns = vm->policy.window_ms * 1000000 * CPU_PCT / 100,
		.cpu_ns = vt_thread_ns,
		.now_ns = (uint64_t)g_get_monotonic_time() * 1000,
		.discard = discard,
		.pending = pending,
		.cancel = cancel,
		.opaque = h,
	};
}

/*
 * Leave the channel: queued discards cancelled first, then everything
 * acknowledged (a channel whose region failed writes nothing more).
 */
static void hints_detach(struct vt_vm *vm, struct vt_vm_hints *h)
{
	struct vt_hint_env env = env_of(vm, h, 0);	/* closing ages nothing */

	if (!h->reader)
		return;
	vt_hint_reader_close(h->reader, &env);
	h->reader = NULL;
	vt_hint_region_close(&h->region);
	vt_zswap_close(&h->pageout);
	h->balloon_set = false;
}

void vt_vm_hints_close(struct vt_vm *vm)
{
	struct vt_vm_hints *h = vm->hints;

	if (!h)
		return;
	hints_detach(vm, h);
	g_ptr_array_free(h->queued, TRUE);
	g_free(h);
	vm->hints = NULL;
}

static void set_error(struct vt_vm *vm, struct vt_vm_hints *h, const char *err)
{
	if (strcmp(h->error, err) != 0)
		vt_registry_log(vm->reg, G_LOG_LEVEL_WARNING, vm->name, "guest hints: %s", err);
	g_strlcpy(h->error, err, sizeof(h->error));
}

static bool hints_attach(struct vt_vm *vm, struct vt_vm_hints *h)
{
	char err[sizeof(h->error)] = "";
	uid_t uid;
	int ret;

	if (!vm->gpa_map->len) {
		set_error(vm, h, "no guest-physical map of the VM's RAM (QEMU did not answer "
			  "'info mtree -f'): hints need it");
		return false;
	}
	ret = vt_hint_region_pid_uid(vm->pid, &uid);
	if (ret == 0)
		ret = vt_hint_region_open(VT_HINT_REGION_DIR, vm->name, vm->pid, uid, &h->region,
					  err, sizeof(err));
	else
		g_snprintf(err, sizeof(err), "QEMU pid %d is gone", (int)vm->pid);
	if (ret == 0)
		ret = vt_hint_reader_open(&h->reader, h->region.fd, h->region.size,
					  (const struct vt_hint_map *)(const void *)vm->gpa_map->data,
					  vm->gpa_map->len, NULL,
					  (uint64_t)g_get_monotonic_time() * 1000, err, sizeof(err));
	if (ret) {
		vt_hint_region_close(&h->region);
		set_error(vm, h, err);
		return false;
	}
	/* anonymous RAM's discard is a page-out; without a pidfd those hints fail, counted */
	if (vt_zswap_open(&h->pageout, vm->pid) != 0)
		h->pageout.pidfd = -1;
	h->error[0] = '\0';
	vt_registry_log(vm->reg, G_LOG_LEVEL_MESSAGE, vm->name,
		      "guest hints: region of %zu KiB attached", h->region.size >> 10);
	return true;
}

/*
 * The region's file shrank (before the window or under its reads): this VM's
 * channel is closed and counted, looked for again later; nothing else is
 * touched.
 */
static void region_failed(struct vt_vm *vm, struct vt_vm_hints *h, struct vt_vm_stats *s,
			  const char *why)
{
	char err[sizeof(h->error)];

	g_snprintf(err, sizeof(err), "channel refused: %s", why);
	hints_detach(vm, h);
	h->refused++;
	set_error(vm, h, err);
	h->retry_window = s->windows + RETRY_WINDOWS;
	memset(&s->hints, 0, sizeof(s->hints));
	g_strlcpy(s->hints.error, h->error, sizeof(s->hints.error));
	s->hints.refused = h->refused;
}

/* Host memory the discards freed, as the hand-offs' movers counted it. */
static uint64_t saved_bytes(GPtrArray *backends)
{
	uint64_t n = 0;

	for (unsigned int i = 0; backends && i < backends->len; i++)
		n += vt_backend_discarded_bytes(g_ptr_array_index(backends, i));
	return n;
}

void vt_vm_hints_channel(struct vt_vm *vm, uint64_t windows, bool precopy)
{
	struct vt_vm_hints *h = vm->hints;

	if (!vm->policy.hints) {
		vt_vm_hints_close(vm);
		return;
	}
	/* the window to come ends before its hint stage: no channel opened for it */
	if (precopy)
		return;
	if (!h) {
		h = vm->hints = g_new0(struct vt_vm_hints, 1);
		h->region.fd = -1;
		h->pageout.pidfd = -1;
		h->queued = g_ptr_array_new_with_free_func((GDestroyNotify)vt_backend_unref);
	}
	/* the next try RETRY_WINDOWS after this one, not after every window */
	if (!h->reader && windows >= h->retry_window && !hints_attach(vm, h))
		h->retry_window = windows + RETRY_WINDOWS;
}

void vt_vm_hints_window(struct vt_vm *vm, GPtrArray *backends, unsigned int cold_age,
			struct vt_vm_stats *s)
{
	struct vt_vm_hints *h = vm->hints;
	struct vt_hint_env env;
	char err[sizeof(h->error)];

	if (!vm->policy.hints || !h) {
		memset(&s->hints, 0, sizeof(s->hints));
		return;
	}
	if (!h->reader) {
		/* not attached (vt_vm_hints_channel): why, and how often refused */
		memset(&s->hints, 0, sizeof(s->hints));
		g_strlcpy(s->hints.error, h->error, sizeof(s->hints.error));
		s->hints.refused = h->refused;
		return;
	}
	if (vt_hint_region_check(&h->region, err, sizeof(err)) < 0) {
		region_failed(vm, h, s, err);
		return;
	}
	if (!h->balloon_set || h->balloon_bytes != vm->policy.balloon_bytes) {
		/* reclaim_seq 0 (no request) until an operator sets one */
		if (h->balloon_set || vm->policy.balloon_bytes)
			vt_hint_reader_set_balloon(h->reader, vm->policy.balloon_bytes);
		h->balloon_bytes = vm->policy.balloon_bytes;
		h->balloon_set = true;
	}
	env = env_of(vm, h, cold_age);
	h->window_backends = backends;
	vt_hint_reader_window(h->reader, &env);
	h->window_backends = NULL;
	for (uint64_t waited = 0, most = MIN(ACK_WAIT_MS, vm->policy.window_ms / 20);
	     !vt_hint_reader_try_ack(h->reader, &env) && waited < most; waited++)
		g_usleep(1000);
	if (vt_hint_reader_error(h->reader, err, sizeof(err)) < 0) {
		region_failed(vm, h, s, err);
		return;
	}
	vt_hint_reader_stats(h->reader, &s->hints);
	s->hints.refused = h->refused;
	s->hints.pageout_bytes = h->pageout_bytes;
	s->hints.saved_bytes = saved_bytes(backends);
}
