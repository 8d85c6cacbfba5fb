// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The compressed-tier mover: two threads per handed-off backend, one serving
 * faults, one doing queued discards, evictions and fetches in slices, an
 * outgoing migration's fills punched again and the remote tiers' upkeep
 * (ctier_mover_int.h: the files).
 */
#include <numaif.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ctier_mover_int.h"

/*
 * Take up to @most bytes off the first order of the ring @q (@size slots,
 * @n queued from @head) into @o; the order leaves the ring once it is all
 * taken. Returns the bytes taken. Caller holds m->lock and checked *@n.
 */
uint64_t ctm_take_slice(struct mover_order *q, unsigned int size, unsigned int *head,
			unsigned int *n, uint64_t most, struct mover_order *o)
{
	uint64_t len;

	*o = q[*head];
	len = MIN(o->len, most);
	q[*head].offset += len;
	q[*head].len -= len;
	if (!q[*head].len) {
		*head = (*head + 1) % size;
		(*n)--;
	}
	return len;
}

/*
 * A bulk span off the ring: up to @most bytes of the first order (a bulk
 * eviction) and of the bulk evictions right behind it that go on where it
 * ends, into any tier (at most SPAN_ORDERS_MAX orders); page i of the span
 * goes to @tiers[i]. Returns the bytes taken. Caller holds m->lock and
 * checked m->n.
 */
static uint64_t take_span(struct vt_ctier_mover *m, uint64_t most, struct mover_order *o,
			  uint8_t *tiers)
{
	uint64_t ps = m->pager.page_size, len;
	unsigned int orders = 1;

	len = ctm_take_slice(m->orders, ORDERS_MAX, &m->head, &m->n, most, o);
	memset(tiers, o->tier, len / ps);
	while (m->n && len < most && orders < SPAN_ORDERS_MAX) {
		const struct mover_order *next = &m->orders[m->head];
		struct mover_order taken;
		uint64_t more;

		if (!next->bulk || next->tier < 0 || next->offset != o->offset + len)
			break;
		more = ctm_take_slice(m->orders, ORDERS_MAX, &m->head, &m->n, most - len, &taken);
		memset(tiers + len / ps, taken.tier, more / ps);
		len += more;
		orders++;
	}
	return len;
}

/*
 * Carry out up to SLICE_PAGES pages of the first order (EVICT_SLICE_PAGES of
 * an eviction, a span of a bulk one). 1 if more work is queued.
 */
static int work_slice(struct vt_ctier_mover *m, void *buf, int *err)
{
	struct mover_order o;
	uint64_t step = m->pager.page_size, len, t0;
	uint8_t tiers[BULK_SPAN_PAGES];
	bool more, bulk;

	g_mutex_lock(&m->lock);
	if (!m->n) {
		g_mutex_unlock(&m->lock);
		return 0;
	}
	bulk = m->orders[m->head].bulk && m->orders[m->head].tier >= 0;
	if (bulk) {
		len = take_span(m, BULK_SPAN_PAGES * step, &o, tiers);
	} else {
		len = ctm_take_slice(m->orders, ORDERS_MAX, &m->head, &m->n,
				 (m->orders[m->head].tier >= 0 ? EVICT_SLICE_PAGES : SLICE_PAGES) *
				 step, &o);
		if (o.tier >= 0)
			memset(tiers, o.tier, len / step);
	}
	more = m->n > 0;
	m->working = true;
	g_mutex_unlock(&m->lock);
	t0 = vt_now_ns();
	if (bulk) {
		*err = ctm_evict_run(m, o.offset, len, tiers, ctm_span_buf(m, len), true);
		if (ctm_prepared(m)) {
			/* a chunk's copies serve one eviction: stale afterwards */
			vt_prepared_release(ctm_prepared(m), o.offset, len);
			m->prepared_bulk = true;
		}
	} else if (o.tier >= 0)
		*err = ctm_evict_run(m, o.offset, len, tiers, buf, false);
	else {
		ctm_fence(m, o.offset, len);
		for (uint64_t off = o.offset; off < o.offset + len; off += step) {
			*err = ctm_fetch_page(m, off, buf);
			if (*err)
				break;
		}
		ctm_unfence(m);
	}
	g_mutex_lock(&m->lock);
	if (o.tier >= 0)
		m->stats.evict_ns += vt_now_ns() - t0;
	else
		m->stats.fetch_ns += vt_now_ns() - t0;
	m->working = false;
	g_mutex_unlock(&m->lock);
	return *err ? 0 : more;
}

/* Pages put back are the guest's hot pages: on the fast node (each thread fills). */
static void fill_policy(struct vt_ctier_mover *m)
{
	unsigned long mask;

	if (m->fill_node < 0 || m->fill_node >= 64)
		return;
	mask = 1UL << m->fill_node;
	if (syscall(SYS_set_mempolicy, MPOL_PREFERRED, &mask, 65UL))
		g_debug("ctier mover: set_mempolicy(node %d): %s", m->fill_node, g_strerror(errno));
}

static bool stopping(struct vt_ctier_mover *m)
{
	bool stop;

	g_mutex_lock(&m->lock);
	stop = m->stop;
	g_mutex_unlock(&m->lock);
	return stop;
}

static void drain_efd(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		g_debug("ctier mover: eventfd read: %s", g_strerror(errno));
}

/*
 * A thread lost the backend (@err): counted, the owner told once (either
 * thread may be first), then the thread waits on @efd for the stop.
 */
static void fail_and_wait(struct vt_ctier_mover *m, int err, int efd)
{
	if (err != -ESRCH)
		STAT_ADD(m, errors, 1);
	if (!__atomic_exchange_n(&m->failed_once, true, __ATOMIC_ACQ_REL) && m->failed)
		m->failed(m, err, m->opaque);
	while (!stopping(m)) {
		struct pollfd w = { .fd = efd, .events = POLLIN };

		if (poll(&w, 1, -1) > 0)
			drain_efd(efd);
	}
}

/*
 * The fault thread: every fault the pager has outside the fence, as soon as
 * it comes; the faults a silent memory server left waiting, asked again;
 * nothing else. It sleeps in poll() on the uffd and on its eventfd, which the
 * pager writes when the mover thread read faults ahead, and the mover thread
 * when it lowers a fence or punches the migration's fills.
 */
static gpointer fault_thread(gpointer data)
{
	struct vt_ctier_mover *m = data;
	g_autofree void *buf = g_malloc(m->pager.page_size);
	struct pollfd pfd[2] = {
		{ .fd = m->pager.uffd, .events = POLLIN },
		{ .fd = m->fault_wake_fd, .events = POLLIN },
	};
	int err = 0, due_ms = -1;
	bool held = false;

	fill_policy(m);
	for (;;) {
		int timeout = due_ms;

		/*
		 * Held (over the bound of the migration's fills, or the pager's
		 * ring full of faults of the fence): sleep on the eventfd alone, the
		 * uffd stays readable; the mover thread wakes us when it punched
		 * fills or lowered the fence (and a timeout, should a wake-up be lost).
		 */
		pfd[0].events = held ? 0 : POLLIN;
		if (held)
			timeout = timeout < 0 || timeout > 100 ? 100 : timeout;
		if (poll(pfd, 2, timeout) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		if (pfd[1].revents & POLLIN)
			drain_efd(m->fault_wake_fd);
		if (stopping(m))
			break;
		err = ctm_remote_waiting(m, buf, &due_ms);
		if (err)
			break;
		if (ctm_reads_over(m)) {
			STAT_ADD(m, reads_waits, !held);
			held = true;
			continue;
		}
		err = ctm_serve_faults(m, buf);
		if (err)
			break;
		held = vt_pager_queued(&m->pager) >= VT_PAGER_PENDING_MAX;
	}
	if (err)
		fail_and_wait(m, err, m->fault_wake_fd);
	return NULL;
}

static gpointer mover_thread(gpointer data)
{
	struct vt_ctier_mover *m = data;
	g_autofree void *buf = g_malloc(m->pager.page_size * EVICT_SLICE_PAGES);
	struct pollfd pfd = { .fd = m->wake_fd, .events = POLLIN };
	bool more = false;
	/* remote_ms 0: the first turn finds out at once whether there is a remote tier */
	int err = 0, due_ms = -1, remote_ms = 0, nice_now = 0;

	fill_policy(m);
	for (;;) {
		if (poll(&pfd, 1, more ? 0 : due_ms < 0 ? remote_ms :
			 remote_ms < 0 ? due_ms : MIN(due_ms, remote_ms)) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		if (pfd.revents & POLLIN)
			drain_efd(m->wake_fd);
		if (stopping(m))
			break;
		ctm_background_apply(m, &nice_now);
		/* the remote tiers' copies re-created, a few at a time */
		remote_ms = ctm_remote_upkeep(m);
		/*
		 * Over the bound of an outgoing migration's fills the fault thread
		 * takes no fault: punches come before any other work (the migration
		 * thread waits for them, and an eviction's flushes would delay them),
		 * as soon as the oldest range is due.
		 */
		if (ctm_reads_over(m)) {
			due_ms = ctm_repunch_slice(m, &err);
			if (err)
				break;
			if (due_ms >= 0) {
				more = due_ms == 0;
				continue;
			}
		}
		/* a migration's reader is told where the holes are before it reads there */
		more = ctm_zero_map_scan_slice(m, &err);
		if (err)
			break;
		/* discards first: a guest waits for them */
		more |= ctm_discard_slice(m, &err);
		if (err)
			break;
		more |= work_slice(m, buf, &err);
		if (err)
			break;
		/*
		 * an outgoing migration's fills, once read: one span between two
		 * slices of orders, so that orders never starve them (the source's
		 * memory during a migration is bounded by them)
		 */
		due_ms = ctm_repunch_slice(m, &err);
		if (err)
			break;
		more |= due_ms == 0;
		if (!more && due_ms < 0) {
			g_clear_pointer(&m->span_buf, g_free);	/* 16 MiB: only while needed */
			m->span_cap = 0;
			ctm_prepared_drop_idle(m);
			if (ctm_prepared(m))	/* wake for its expiry */
				due_ms = (int)((m->prepared_expire_ns - vt_now_ns()) / 1000000 + 1);
		}
	}
	if (err)
		fail_and_wait(m, err, m->wake_fd);
	return NULL;
}

static void mover_free(struct vt_ctier_mover *m)
{
	if (m->wake_fd >= 0)
		close(m->wake_fd);
	if (m->fault_wake_fd >= 0)
		close(m->fault_wake_fd);
	vt_pager_close(&m->pager);
	g_cond_clear(&m->discard_done);
	g_cond_clear(&m->range_cv);
	g_mutex_clear(&m->range_lock);
	g_mutex_clear(&m->lock);
	g_array_free(m->waiting, TRUE);
	g_free(m->orders);
	g_free(m->span_buf);
	vt_prepared_free(m->prepared);
	g_free(m);
}

int vt_ctier_mover_start(struct vt_pager *pager, struct vt_store *store, int fill_node,
			 vt_ctier_mover_failed_fn failed, void *opaque, struct vt_ctier_mover **out)
{
	struct vt_ctier_mover *m = g_new0(struct vt_ctier_mover, 1);
	int ret;

	vt_pager_move(&m->pager, pager);
	m->store = store;
	m->fill_node = fill_node;
	m->store_threads = CLAMP(g_get_num_processors() / 4, 1, STORE_THREADS_MAX);
	m->failed = failed;
	m->opaque = opaque;
	g_mutex_init(&m->lock);
	g_cond_init(&m->discard_done);
	g_mutex_init(&m->range_lock);
	g_cond_init(&m->range_cv);
	m->orders = g_new0(struct mover_order, ORDERS_MAX);
	m->waiting = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	m->remote_next_ns = 0;	/* the first turn finds out whether there is a remote tier */
	m->zero_scan_next = UINT64_MAX;
	m->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	m->fault_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->wake_fd < 0 || m->fault_wake_fd < 0) {
		ret = -errno;
		mover_free(m);
		return ret;
	}
	vt_pager_set_ring_efd(&m->pager, m->fault_wake_fd);
	m->fault_thread = g_thread_try_new("vtier-fault", fault_thread, m, NULL);
	if (!m->fault_thread) {
		mover_free(m);
		return -EAGAIN;
	}
	m->thread = g_thread_try_new("vtier-ctier", mover_thread, m, NULL);
	if (!m->thread) {
		g_mutex_lock(&m->lock);
		m->stop = true;
		g_mutex_unlock(&m->lock);
		ctm_fault_kick(m);
		g_thread_join(m->fault_thread);
		mover_free(m);
		return -EAGAIN;
	}
	*out = m;
	return 0;
}

static void efd_kick(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0)
		g_debug("ctier mover: eventfd write: %s", g_strerror(errno));
}

void ctm_kick(struct vt_ctier_mover *m)
{
	efd_kick(m->wake_fd);
}

void ctm_fault_kick(struct vt_ctier_mover *m)
{
	efd_kick(m->fault_wake_fd);
}

void vt_ctier_mover_stop(struct vt_ctier_mover *m)
{
	if (!m)
		return;
	g_mutex_lock(&m->lock);
	m->stop = true;
	g_mutex_unlock(&m->lock);
	ctm_kick(m);
	ctm_fault_kick(m);
	g_thread_join(m->thread);
	g_thread_join(m->fault_thread);
	mover_free(m);
}

/* An order (@tier: store tier, -1 fetch) or a discard (TIER_DISCARD: its own ring). */
int ctm_queue(struct vt_ctier_mover *m, uint64_t offset, uint64_t len, int tier, bool bulk)
{
	uint64_t ps = m->pager.page_size;
	bool discard = tier == TIER_DISCARD;
	struct mover_order *q = discard ? m->discards : m->orders;
	unsigned int size = discard ? DISCARDS_MAX : ORDERS_MAX;
	unsigned int *head = discard ? &m->d_head : &m->head, *n = discard ? &m->d_n : &m->n;

	if (offset % ps || len % ps || offset > m->pager.size || len > m->pager.size - offset)
		return -EINVAL;
	if (!len)
		return 0;
	g_mutex_lock(&m->lock);
	if (*n == size) {
		m->stats.orders_dropped += !discard;
		g_mutex_unlock(&m->lock);
		return -ENOSPC;
	}
	q[(*head + *n) % size] = (struct mover_order){ offset, len, tier, bulk && tier >= 0 };
	(*n)++;
	m->stats.orders_queued += !discard;
	g_mutex_unlock(&m->lock);
	ctm_kick(m);
	return 0;
}

int vt_ctier_mover_evict(struct vt_ctier_mover *m, uint64_t offset, uint64_t len,
			 unsigned int tier)
{
	return ctm_queue(m, offset, len, (int)tier, false);
}

int vt_ctier_mover_evict_bulk(struct vt_ctier_mover *m, uint64_t offset, uint64_t len,
			      unsigned int tier)
{
	return ctm_queue(m, offset, len, (int)tier, true);
}

int vt_ctier_mover_fetch(struct vt_ctier_mover *m, uint64_t offset, uint64_t len)
{
	return ctm_queue(m, offset, len, -1, false);
}

unsigned int vt_ctier_mover_backlog(struct vt_ctier_mover *m)
{
	unsigned int n;

	g_mutex_lock(&m->lock);
	n = m->n + (m->working && !m->n);	/* the last order, until its last slice is done */
	g_mutex_unlock(&m->lock);
	return n;
}

void vt_ctier_mover_get_stats(struct vt_ctier_mover *m, struct vt_ctier_mover_stats *out)
{
	g_mutex_lock(&m->lock);
	*out = m->stats;
	g_mutex_unlock(&m->lock);
}
