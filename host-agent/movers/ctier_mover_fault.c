// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The compressed-tier mover's fault service, on its fault thread: a MISSING
 * fault served from the store (checked; a damaged copy poisons the page),
 * with the stored pages after it when the faults come in order
 * (store-ahead), else with zeros and its neighbours (fault-around);
 * write-protect faults resolved. Never inside the mover thread's fence
 * (ctier_mover_fence.c).
 */
#include "ctier_mover_int.h"

/*
 * Around a fault at @offset (a first touch; while a migration reads, any
 * fault): its neighbours in one go, which saves a fault per page where
 * memory is read in order (boot, a fresh allocation, QEMU's migration
 * thread). The window doubles while faults follow one another, from 64 KiB
 * up to 2 MiB, like the kernel's readahead, and never takes the migration's
 * reads past their bound. Pages never evicted (or discarded) are zeros; a
 * stored page is read through from its copy while a migration reads (but
 * @served, the faulting one when it was filled already), and otherwise left
 * to its own fault. What it fills for a migration is tracked as one range;
 * *@tracked says so (when not, every copy it read through is dropped: the
 * memfd's pages win). 1 filled, 0 nothing to fill, or -errno.
 */
static int fault_around(struct vt_ctier_mover *m, uint64_t offset, uint64_t served, void *buf,
			bool *tracked)
{
	uint64_t ps = m->pager.page_size, win, start, end, at, fence_lo, fence_hi;
	uint64_t through_mask[VT_PAGER_SPAN_WORDS(ZERO_WIN_MAX / 4096)] = { 0 };
	int64_t n, zeros = 0, through = 0;
	bool reads;

	*tracked = false;
	if (offset >= m->zero_next && offset < m->zero_next + m->zero_win)
		m->zero_win = MIN(m->zero_win * 2, ZERO_WIN_MAX);
	else
		m->zero_win = ZERO_WIN_MIN;
	win = m->zero_win;
	g_mutex_lock(&m->lock);
	/* only what can be tracked is read through (this thread alone adds ranges) */
	reads = m->track_reads && m->rr_n < READ_RANGES_MAX && ps == 4096;
	if (reads && m->read_bound)	/* within the bound, but the faulting page */
		win = MAX(MIN(win, (m->read_bound - MIN(m->rr_bytes, m->read_bound)) & ~(ps - 1)), ps);
	g_mutex_unlock(&m->lock);
	win = MAX(win, ps);	/* a huge page is one window of its own */
	/* a migration reads forwards: what is behind it was read (and punched) */
	start = reads ? offset : offset & ~(win - 1);
	end = MIN(start + win, m->pager.size);
	/* the mover thread's range (its faults wait for it): its holes stay holes */
	ctm_fence_get(m, &fence_lo, &fence_hi);
	if (fence_hi > fence_lo && start < fence_hi && end > fence_lo) {
		if (offset < fence_lo)
			end = fence_lo;
		else
			start = fence_hi;
	}
	for (at = start; at < end;) {
		uint64_t next = vt_store_next(m->store, at / ps), stop;

		stop = next == UINT64_MAX ? end : MIN(end, next * ps);
		if (stop > at) {
			/* out of the zero map before anything can read the page */
			ctm_zero_map_clear(m, at, stop - at);
			n = vt_pager_zero_range(&m->pager, at, stop - at, false);
			if (n < 0)
				return (int)n;
			zeros += n;
		}
		/* then the stored pages from there, up to the next page not stored */
		for (at = stop; stop < end && vt_store_tier_of(m->store, stop / ps) >= 0;)
			stop += ps;
		if (reads && stop > at) {
			n = ctm_read_around(m, at, stop, served, buf, start, through_mask);
			if (n < 0)
				return (int)n;
			through += n;
		}
		at = stop > at ? stop : at + ps;
	}
	m->zero_next = end;
	/* one wake-up once the whole window is there: the faulting thread resumes on it */
	n = vt_pager_wake(&m->pager, start, end - start);
	if (n < 0)
		return (int)n;
	g_mutex_lock(&m->lock);
	m->stats.zero_filled_around += (uint64_t)zeros;
	if (zeros + through > 0 || served != UINT64_MAX)
		*tracked = ctm_track_read(m, start, end - start);
	if (*tracked) {
		m->stats.read_through += (uint64_t)through;
		m->stats.read_around += (uint64_t)through;
	}
	g_mutex_unlock(&m->lock);
	if (*tracked)
		ctm_kick(m);	/* the mover thread punches the range again when due */
	if (through && !*tracked) {
		/* the migration ended meanwhile: these are ordinary pages now */
		for (uint64_t i = 0; i < (end - start) / ps; i++)
			if (vt_pager_mask_has(through_mask, i))
				vt_store_drop(m->store, start / ps + i);
	}
	return zeros + through > 0 ? 1 : 0;
}

/*
 * One line per damaged page, the first 16 of a backend and then every 1024th
 * (a failing medium must not flood the log): the operator's evidence.
 */
static void log_poisoned(struct vt_ctier_mover *m, uint64_t offset, int ret, uint64_t n)
{
	struct vt_store_owner o = { 0 };

	if (n > 16 && n % 1024)
		return;
	vt_store_get_owner(m->store, &o);
	g_warning("ctier: QEMU pid %u: guest page at backend offset 0x%" G_GINT64_MODIFIER "x: "
		  "its stored copy fails its checksum; %s (%" G_GUINT64_FORMAT " so far%s)",
		  o.qemu_pid, offset,
		  ret == 0 ? "poisoned: the guest sees a memory error" :
		  ret == -ESRCH ? "not poisoned: the backend is gone" :
		  "not poisoned (no UFFDIO_POISON): the vCPU waits",
		  n, n == 16 ? "; from now on every 1024th is logged" : "");
}

/*
 * A MISSING fault at @offset: from the store, else zeros; never garbage.
 * 1 filled, 0 nothing to do (already there, or poisoned / left waiting),
 * negative errno when the backend is lost. *@read_through: the page was read
 * through (its copy kept); the caller counts it with the fault itself, so that
 * a reader of the stats never sees one without the other.
 */
static int serve_missing(struct vt_ctier_mover *m, uint64_t offset, void *buf,
			 bool *read_through)
{
	uint64_t page = offset / m->pager.page_size, n;
	int ret = vt_store_get(m->store, page, buf);
	bool through, reads;

	*read_through = false;
	if (ret == -EAGAIN) {
		/* a remote page whose holders are silent: the vCPU waits, never zeros */
		bool known = false;

		for (unsigned int i = 0; i < m->waiting->len && !known; i++)
			known = g_array_index(m->waiting, uint64_t, i) == offset;
		if (!known) {
			g_array_append_val(m->waiting, offset);
			g_mutex_lock(&m->lock);
			m->stats.faults_waited++;
			m->stats.waiting_now = m->waiting->len;
			g_mutex_unlock(&m->lock);
		}
		return 0;
	}
	if (ret == -EBADMSG) {
		/* the copy is damaged: the guest sees a memory error, as with bad DRAM */
		ret = vt_pager_poison(&m->pager, offset);
		if (ret == 1) {
			/* the page is in the memfd again: it wins, the copy goes */
			vt_store_drop(m->store, page);
			STAT_ADD(m, faults_already, 1);
			return 0;
		}
		/*
		 * The damaged copy stays, poisoned or not: a page the store holds is
		 * never zero-filled. UFFDIO_ZEROPAGE and UFFDIO_COPY replace a poison
		 * marker as they replace none, so a dropped copy let the next
		 * fault-around nearby put zeros where the data was lost; the copy
		 * also outlives a restart, and should the poison go, the page's own
		 * fault poisons it again. A discard of the page drops it.
		 */
		g_mutex_lock(&m->lock);
		m->stats.poisoned++;
		if (ret == -ENOTSUP || ret == -EINVAL)
			m->stats.poison_unsupported++;
		n = m->stats.poisoned;
		g_mutex_unlock(&m->lock);
		log_poisoned(m, offset, ret, n);
		/* without UFFDIO_POISON the vCPU waits: never zeros, never garbage */
		return ret == -ESRCH ? ret : 0;
	}
	if (ret < 0 && ret != -ENOENT)
		return ret;
	if (ret == -ENOENT)
		return fault_around(m, offset, UINT64_MAX, buf, &through);
	ret = vt_pager_fill(&m->pager, offset, buf);
	if (ret < 0)
		return ret;
	g_mutex_lock(&m->lock);
	reads = m->track_reads;
	/* already there: read through ahead of its fault (the copy stays), or not */
	through = ret == 0 && reads && ctm_read_tracked(m, offset);
	g_mutex_unlock(&m->lock);
	if (ret == 1 && reads) {
		/*
		 * read through, with the pages after it: the copies stay, the
		 * pages go again once read; a page that cannot be tracked is
		 * taken back for good (a copy beside a page nobody punches would
		 * keep it from ever being evicted again)
		 */
		int around = fault_around(m, offset, offset, buf, &through);

		if (around < 0)
			return around;
		*read_through = through;
	}
	if (through)
		return ret;
	vt_store_drop(m->store, page);	/* the memfd's page wins */
	if (ret == 0)
		STAT_ADD(m, faults_already, 1);
	return ret;
}

/*
 * Is the stored fault at @offset in order with stream @s: at or after the
 * page following its last one, and no stored page between the end of the
 * window served ahead of that one and it (a guest reading a range back
 * faults only on its stored pages; the others are there, or zeros on their
 * own fault), less than a largest window past that end.
 */
static bool ahead_in_order(struct vt_ctier_mover *m, const struct ahead_stream *s,
			   uint64_t offset)
{
	uint64_t ps = m->pager.page_size;

	if (!s->next || offset < s->next ||
	    (offset > s->end && offset - s->end >= AHEAD_WIN_MAX))
		return false;
	/* a look per page between them (16 at most), not a walk of the index */
	for (uint64_t at = s->end; at < offset; at += ps)
		if (vt_store_tier_of(m->store, at / ps) >= 0)
			return false;
	return true;
}

/*
 * The stream the stored fault at @offset follows, *@in_order set; else the
 * one used longest ago, taken over by it.
 */
static struct ahead_stream *ahead_stream(struct vt_ctier_mover *m, uint64_t offset,
					 bool *in_order)
{
	struct ahead_stream *oldest = &m->ahead[0];

	*in_order = false;
	for (unsigned int i = 0; i < VT_CTIER_AHEAD_STREAMS; i++) {
		if (ahead_in_order(m, &m->ahead[i], offset)) {
			*in_order = true;
			oldest = &m->ahead[i];
			break;
		}
		if (m->ahead[i].used < oldest->used)
			oldest = &m->ahead[i];
	}
	oldest->used = ++m->ahead_tick;
	return oldest;
}

/*
 * After the stored fault at @offset was served (and timed; its vCPU runs
 * again): when it is in order with one of the last streams' faults (up to
 * AHEAD_STREAMS read in turn, a stream each), the stored pages after it
 * go back into the memfd with it ("store-ahead"), a window of 16 KiB that
 * doubles up to 64 KiB while the faults stay in order and starts again at
 * 16 KiB when one is not: a guest reading a stored range back pays a fault
 * a window, not a page (in L1 under TCG, milliseconds each). Pages not
 * stored are skipped (never copied over). It stops at a page on a remote
 * tier (each a round trip to the servers), at a copy that fails its
 * checksum (it stays stored: its own fault poisons it, as ever), at the
 * mover thread's fence (a span being stored: its pages are still in the
 * memfd until its commit punches them) and at the end of the backend; the
 * fault's service window holds it (the fence is not raised there
 * meanwhile). Off while a migration's reads are tracked (fault_around reads
 * their copies through) or their ranges wait for their punch. A copy goes
 * only once UFFDIO_COPY took its page (or found one there: the memfd's page
 * wins), as for a fault; a fill that fails ends the window and leaves the
 * copy. 0, or -ESRCH when the backend is lost.
 */
static int store_ahead(struct vt_ctier_mover *m, uint64_t offset, void *buf)
{
	uint64_t ps = m->pager.page_size, at = offset + ps, end, served = 0, fence_lo, fence_hi;
	bool in_order, reads;
	struct ahead_stream *s = ahead_stream(m, offset, &in_order);
	int ret = 0;

	s->next = s->end = at;
	if (!in_order || ps != 4096) {
		s->win = AHEAD_WIN_MIN;
		return 0;
	}
	g_mutex_lock(&m->lock);
	reads = m->track_reads || m->rr_n;
	g_mutex_unlock(&m->lock);
	if (reads)
		return 0;
	s->win = CLAMP(s->win, AHEAD_WIN_MIN, AHEAD_WIN_MAX);
	end = MIN(at + s->win, m->pager.size);
	s->win = MIN(s->win * 2, AHEAD_WIN_MAX);
	ctm_fence_get(m, &fence_lo, &fence_hi);
	if (fence_hi > fence_lo && at < fence_hi && end > fence_lo)
		end = MAX(at, fence_lo);
	/* a damaged copy met before, still stored: left to its own fault, read once */
	if (m->ahead_bad && vt_store_tier_of(m->store, (m->ahead_bad - 1) / ps) < 0)
		m->ahead_bad = 0;
	if (m->ahead_bad && m->ahead_bad - 1 >= at && m->ahead_bad - 1 < end)
		end = m->ahead_bad - 1;
	for (; at + ps <= end; at += ps) {
		uint64_t page = at / ps;
		int tier = vt_store_tier_of(m->store, page);

		if (tier < 0)
			continue;
		if (vt_store_tier_remote(m->store, tier))
			break;
		/* a damaged copy is counted by its own fault, not here */
		ret = vt_store_get_ahead(m->store, page, buf);
		if (ret < 0) {
			if (ret == -EBADMSG)
				m->ahead_bad = at + 1;
			ret = 0;
			break;
		}
		ret = vt_pager_fill(&m->pager, at, buf);
		if (ret < 0) {
			/*
			 * the page stays stored, its copy kept: its own fault
			 * tries again. Only a lost backend ends the service; a
			 * fill nobody asked for must not (-ENOMEM at a limit).
			 */
			ret = ret == -ESRCH ? ret : 0;
			break;
		}
		vt_store_drop(m->store, page);
		served += (uint64_t)ret;
	}
	s->end = at;
	if (served)
		STAT_ADD(m, stored_ahead, served);
	return ret < 0 ? ret : 0;
}

/*
 * Serve every queued fault outside the fence (those inside stay queued: they
 * wait for the mover thread's commit), or until the migration's fills are
 * over their bound. 0, or -errno when the backend is lost.
 */
int ctm_serve_faults(struct vt_ctier_mover *m, void *buf)
{
	struct vt_pager_fault f;
	bool over, fenced, through;
	int ret;

	for (;;) {
		uint64_t t0 = vt_now_ns();
		int tier;

		ret = ctm_take_fault(m, &f, &fenced);
		if (ret == -EAGAIN)
			return 0;
		if (ret == -ERANGE)
			continue;	/* outside the backend: not ours to answer */
		if (ret < 0)
			return ret;
		if (f.wp) {
			ret = vt_pager_unprotect(&m->pager, f.offset, m->pager.page_size);
			ctm_serve_end(m);
			if (ret < 0)
				return ret;
			g_mutex_lock(&m->lock);
			m->stats.faults_wp++;
			m->stats.span_faults += fenced;
			g_mutex_unlock(&m->lock);
			continue;
		}
		tier = vt_store_tier_of(m->store, f.offset / m->pager.page_size);
		ret = serve_missing(m, f.offset, buf, &through);
		if (ret < 0) {
			ctm_serve_end(m);
			return ret;
		}
		g_mutex_lock(&m->lock);
		m->stats.read_through += through;
		if (ret == 1 && tier >= 0) {
			uint64_t ns = vt_now_ns() - t0;

			m->stats.faults_stored++;
			vt_latency_add(&m->stats.fault_ns, ns);
			if (!fenced && !m->n && !m->working && !m->d_n && !m->discarding)
				vt_latency_add(&m->stats.idle_fault_ns, ns);
			if (tier < VT_CTIER_MAX) {
				m->stats.faults_by_tier[tier]++;
				vt_latency_add(&m->stats.tier_ns[tier], ns);
			}
		} else if (ret == 1) {
			m->stats.faults_zero++;
			vt_latency_add(&m->stats.zero_ns, vt_now_ns() - t0);
		}
		m->stats.span_faults += fenced;
		m->stats.span_faults_ns += fenced ? vt_now_ns() - t0 : 0;
		/* over the bound: the next fault waits for punches */
		over = m->track_reads && m->read_bound && m->rr_bytes > m->read_bound;
		g_mutex_unlock(&m->lock);
		/* after its time was taken, in its service window still */
		if (ret == 1 && tier >= 0)
			ret = store_ahead(m, f.offset, buf);
		ctm_serve_end(m);
		if (ret < 0)
			return ret;
		if (over)
			return 0;
	}
}

int ctm_remote_upkeep(struct vt_ctier_mover *m)
{
	uint64_t now = vt_now_ns();

	if (m->remote_next_ns != UINT64_MAX && now >= m->remote_next_ns) {
		int r = vt_store_remote_tick(m->store, REMOTE_REPAIR_BUDGET);

		/* no remote tier in this store: nothing to keep up */
		m->remote_next_ns = r == -ENOENT ? UINT64_MAX : now + REMOTE_TICK_NS;
		if (r > 0)
			STAT_ADD(m, remote_repaired, (uint64_t)r);
	}
	return m->remote_next_ns == UINT64_MAX ? -1 :
	       (int)((m->remote_next_ns - MIN(vt_now_ns(), m->remote_next_ns)) / 1000000 + 1);
}

int ctm_remote_waiting(struct vt_ctier_mover *m, void *buf, int *due_ms)
{
	g_autoptr(GArray) again = NULL;

	if (m->waiting->len) {
		again = m->waiting;
		m->waiting = g_array_new(FALSE, FALSE, sizeof(uint64_t));
		for (unsigned int i = 0; i < again->len; i++) {
			uint64_t offset = g_array_index(again, uint64_t, i);
			bool through;
			int r;

			if (!ctm_serve_begin(m, offset)) {
				/* the mover thread works there: asked again later */
				g_array_append_val(m->waiting, offset);
				continue;
			}
			r = serve_missing(m, offset, buf, &through);
			ctm_serve_end(m);
			if (r < 0)
				return r;
			if (through)
				STAT_ADD(m, read_through, 1);
		}
		g_mutex_lock(&m->lock);
		m->stats.waiting_now = m->waiting->len;
		g_mutex_unlock(&m->lock);
	}
	*due_ms = m->waiting->len ? WAITING_RETRY_MS : -1;
	return 0;
}
