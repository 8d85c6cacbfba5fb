// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The compressed-tier mover: one thread per handed-off backend, faults
 * first, queued discards, evictions and fetches in slices between them,
 * an outgoing migration's fills punched again (ctier_mover_int.h: the files).
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
		*err = ctm_evict_run(m, o.offset, len, tiers, ctm_span_buf(m, len), buf);
		if (ctm_prepared(m)) {
			/* a chunk's copies serve one eviction: stale afterwards */
			vt_prepared_release(ctm_prepared(m), o.offset, len);
			m->prepared_bulk = true;
		}
	} else if (o.tier >= 0)
		*err = ctm_evict_run(m, o.offset, len, tiers, buf, NULL);
	else {
		for (uint64_t off = o.offset; off < o.offset + len; off += step) {
			*err = ctm_fetch_page(m, off, buf);
			if (*err)
				break;
		}
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

static gpointer mover_thread(gpointer data)
{
	struct vt_ctier_mover *m = data;
	g_autofree void *buf = g_malloc(m->pager.page_size * EVICT_SLICE_PAGES);
	struct pollfd pfd[2] = {
		{ .fd = m->pager.uffd, .events = POLLIN },
		{ .fd = m->wake_fd, .events = POLLIN },
	};
	bool more = false;
	int err = 0, due_ms = -1, remote_ms = -1, wait_ms, nice_now = 0;

	if (m->fill_node >= 0 && m->fill_node < 64) {
		unsigned long mask = 1UL << m->fill_node;

		/* pages put back are the guest's hot pages: on the fast node */
		if (syscall(SYS_set_mempolicy, MPOL_PREFERRED, &mask, 65UL))
			g_debug("ctier mover: set_mempolicy(node %d): %s", m->fill_node,
				g_strerror(errno));
	}
	for (;;) {
		uint64_t v;
		bool stop;

		/*
		 * Evicting reads the uffd to see racing writes: the faults it read
		 * wait in the pager, not in the fd, so poll() would not report
		 * them. Never sleep with faults in hand.
		 */
		if (poll(pfd, 2, more || m->pager.n_pending ? 0 :
			 due_ms < 0 ? remote_ms : remote_ms < 0 ? due_ms : MIN(due_ms, remote_ms)) < 0 &&
		    errno != EINTR) {
			err = -errno;
			break;
		}
		if (pfd[1].revents & POLLIN && read(m->wake_fd, &v, sizeof(v)) < 0)
			g_debug("ctier mover: eventfd read: %s", g_strerror(errno));
		g_mutex_lock(&m->lock);
		stop = m->stop;
		g_mutex_unlock(&m->lock);
		if (stop)
			break;
		ctm_background_apply(m, &nice_now);
		if (!ctm_reads_admit(m, &wait_ms, &err)) {
			struct pollfd w = { .fd = m->wake_fd, .events = POLLIN };

			if (err)
				break;
			/* faults wait: only a stop or the oldest range's due time wakes us */
			if (poll(&w, 1, wait_ms) > 0 && read(m->wake_fd, &v, sizeof(v)) < 0)
				g_debug("ctier mover: eventfd read: %s", g_strerror(errno));
			continue;
		}
		/* remote tiers: their upkeep, and faults waiting for a silent server */
		err = ctm_remote_turn(m, buf, &remote_ms);
		if (err)
			break;
		err = ctm_serve_faults(m, buf);
		if (err)
			break;
		/* discards first: a guest waits for them */
		more = ctm_discard_slice(m, &err);
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
	if (err) {
		if (err != -ESRCH)
			STAT_ADD(m, errors, 1);
		if (m->failed)
			m->failed(m, err, m->opaque);
		/* wait for stop: the owner frees us */
		for (;;) {
			bool stop;
			uint64_t v;
			struct pollfd w = { .fd = m->wake_fd, .events = POLLIN };

			g_mutex_lock(&m->lock);
			stop = m->stop;
			g_mutex_unlock(&m->lock);
			if (stop)
				break;
			if (poll(&w, 1, -1) > 0 && read(m->wake_fd, &v, sizeof(v)) < 0)
				break;
		}
	}
	return NULL;
}

int vt_ctier_mover_start(struct vt_pager *pager, struct vt_store *store, int fill_node,
			 vt_ctier_mover_failed_fn failed, void *opaque, struct vt_ctier_mover **out)
{
	struct vt_ctier_mover *m = g_new0(struct vt_ctier_mover, 1);
	g_autoptr(GError) e = NULL;

	m->pager = *pager;
	m->store = store;
	m->fill_node = fill_node;
	m->store_threads = CLAMP(g_get_num_processors() / 4, 1, STORE_THREADS_MAX);
	m->failed = failed;
	m->opaque = opaque;
	g_mutex_init(&m->lock);
	g_cond_init(&m->discard_done);
	m->orders = g_new0(struct mover_order, ORDERS_MAX);
	m->waiting = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	m->remote_next_ns = 0;	/* the first turn finds out whether there is a remote tier */
	m->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->wake_fd < 0) {
		int ret = -errno;

		vt_pager_close(&m->pager);
		g_array_free(m->waiting, TRUE);
		g_free(m->orders);
		g_free(m);
		return ret;
	}
	m->thread = g_thread_try_new("vtier-ctier", mover_thread, m, &e);
	if (!m->thread) {
		close(m->wake_fd);
		vt_pager_close(&m->pager);
		g_array_free(m->waiting, TRUE);
		g_free(m->orders);
		g_free(m);
		return -EAGAIN;
	}
	*out = m;
	return 0;
}

void ctm_kick(struct vt_ctier_mover *m)
{
	uint64_t one = 1;

	if (write(m->wake_fd, &one, sizeof(one)) < 0)
		g_debug("ctier mover: eventfd write: %s", g_strerror(errno));
}

void vt_ctier_mover_stop(struct vt_ctier_mover *m)
{
	if (!m)
		return;
	g_mutex_lock(&m->lock);
	m->stop = true;
	g_mutex_unlock(&m->lock);
	ctm_kick(m);
	g_thread_join(m->thread);
	close(m->wake_fd);
	vt_pager_close(&m->pager);
	g_cond_clear(&m->discard_done);
	g_mutex_clear(&m->lock);
	g_free(m->orders);
	g_free(m->span_buf);
	g_array_free(m->waiting, TRUE);
	vt_prepared_free(m->prepared);
	g_free(m);
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
