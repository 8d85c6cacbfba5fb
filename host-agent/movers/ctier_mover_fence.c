// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The fence between the compressed-tier mover's two threads. The mover
 * thread raises it over the range it works on (a run or span being evicted,
 * pages fetched, a discard, an outgoing migration's fills punched again) and
 * lowers it when done; the fault thread takes no fault inside it (they wait
 * in the pager's ring for the commit, which sees the span's racing writes
 * there) and fills nothing inside it. A fault the fault thread took holds
 * the window its service may fill (the page's fault-around window), and the
 * fence is raised only where no such window is held: a copy read before the
 * mover touched a range is never filled after it (a page fetched, written
 * and evicted again meanwhile would get its old contents back).
 */
#include "ctier_mover_int.h"

/* The window a fault at @offset may fill: fault-around's, either way it goes. */
static void serve_window(const struct vt_ctier_mover *m, uint64_t offset, uint64_t *lo,
			 uint64_t *hi)
{
	*lo = offset & ~((uint64_t)ZERO_WIN_MAX - 1);
	*hi = MIN(*lo + 2ull * ZERO_WIN_MAX, m->pager.size);
}

void ctm_fence(struct vt_ctier_mover *m, uint64_t offset, uint64_t len)
{
	uint64_t t0 = 0;

	g_mutex_lock(&m->range_lock);
	while (m->serve_hi > m->serve_lo && offset < m->serve_hi && offset + len > m->serve_lo) {
		t0 = t0 ? t0 : vt_now_ns();
		g_cond_wait(&m->range_cv, &m->range_lock);
	}
	m->fence_lo = offset;
	m->fence_hi = offset + len;
	g_mutex_unlock(&m->range_lock);
	if (t0) {
		g_mutex_lock(&m->lock);
		m->stats.fence_waits++;
		m->stats.fence_wait_ns += vt_now_ns() - t0;
		g_mutex_unlock(&m->lock);
	}
}

void ctm_unfence(struct vt_ctier_mover *m)
{
	g_mutex_lock(&m->range_lock);
	m->fence_lo = m->fence_hi = 0;
	g_mutex_unlock(&m->range_lock);
	/* the span's faults wait in the ring: the fault thread takes them now */
	ctm_fault_kick(m);
}

void ctm_fence_get(struct vt_ctier_mover *m, uint64_t *lo, uint64_t *hi)
{
	g_mutex_lock(&m->range_lock);
	*lo = m->fence_lo;
	*hi = m->fence_hi;
	g_mutex_unlock(&m->range_lock);
}

int ctm_take_fault(struct vt_ctier_mover *m, struct vt_pager_fault *f, bool *fenced)
{
	int ret;

	g_mutex_lock(&m->range_lock);
	*fenced = m->fence_hi > m->fence_lo;
	ret = *fenced ? vt_pager_next_fault_outside(&m->pager, m->fence_lo,
						    m->fence_hi - m->fence_lo, f) :
			vt_pager_next_fault(&m->pager, f);
	if (ret == 0)
		serve_window(m, f->offset, &m->serve_lo, &m->serve_hi);
	g_mutex_unlock(&m->range_lock);
	return ret;
}

bool ctm_serve_begin(struct vt_ctier_mover *m, uint64_t offset)
{
	bool ok;

	g_mutex_lock(&m->range_lock);
	ok = !(m->fence_hi > m->fence_lo && offset >= m->fence_lo && offset < m->fence_hi);
	if (ok)
		serve_window(m, offset, &m->serve_lo, &m->serve_hi);
	g_mutex_unlock(&m->range_lock);
	return ok;
}

void ctm_serve_end(struct vt_ctier_mover *m)
{
	g_mutex_lock(&m->range_lock);
	m->serve_lo = m->serve_hi = 0;
	g_cond_broadcast(&m->range_cv);
	g_mutex_unlock(&m->range_lock);
}
