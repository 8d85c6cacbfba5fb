// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The compressed-tier mover's guest discards (FREE/INFLATE hints): their own
 * queue, done before any eviction or fetch, a slice at a time.
 */
#include <fcntl.h>
#include <unistd.h>

#include "ctier_mover_int.h"

/* Bytes of [@start, @start + @len) of the memfd that hold data (not holes). */
static uint64_t data_bytes(int fd, uint64_t start, uint64_t len)
{
	uint64_t sum = 0;
	off_t at = (off_t)start, end = (off_t)(start + len);

	while (at < end) {
		off_t data = lseek(fd, at, SEEK_DATA), hole;

		if (data < 0 || data >= end)
			break;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || hole > end)
			hole = end;
		sum += (uint64_t)(hole - data);
		at = hole;
	}
	return sum;
}

/*
 * Discard [@offset, @offset + @len): the guest said it is free and waits for
 * the hint's acknowledgement before it uses it again, which the agent gives
 * only once this is done (docs/abi-guest.md). Stored copies are dropped and
 * the range is punched out of the memfd: the next touch is a MISSING fault,
 * served with zeros. On the mover thread, so that no eviction of the range
 * is half done meanwhile, and fenced, so that no fault's service fills a
 * copy read before the drop. 0 or -errno (the backend is lost).
 */
static int discard_run(struct vt_ctier_mover *m, uint64_t offset, uint64_t len)
{
	uint64_t ps = m->pager.page_size, dropped = 0, resident;
	uint64_t first = offset / ps, end = (offset + len) / ps;
	int ret = 0;

	ctm_fence(m, offset, len);
	for (uint64_t p = vt_store_next(m->store, first); p < end; p = vt_store_next(m->store, p + 1))
		dropped += vt_store_drop(m->store, p) == 0;
	resident = data_bytes(m->pager.memfd, m->pager.fd_offset + offset, len);
	if (fallocate(m->pager.memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)(m->pager.fd_offset + offset), (off_t)len) < 0)
		ret = -errno;
	ctm_unfence(m);
	if (ret)
		return ret;
	g_mutex_lock(&m->lock);
	m->stats.discard_runs++;
	m->stats.discarded_resident_bytes += resident;
	m->stats.discarded_stored_pages += dropped;
	g_mutex_unlock(&m->lock);
	return 0;
}

/* Discard up to DISCARD_SLICE bytes of the first queued range. 1 if more are queued. */
int ctm_discard_slice(struct vt_ctier_mover *m, int *err)
{
	struct mover_order o;
	uint64_t len;
	bool more;

	g_mutex_lock(&m->lock);
	if (!m->d_n) {
		g_mutex_unlock(&m->lock);
		return 0;
	}
	len = ctm_take_slice(m->discards, DISCARDS_MAX, &m->d_head, &m->d_n, DISCARD_SLICE, &o);
	m->discarding = true;
	g_mutex_unlock(&m->lock);
	*err = discard_run(m, o.offset, len);
	g_mutex_lock(&m->lock);
	m->discarding = false;
	more = m->d_n > 0;
	g_cond_broadcast(&m->discard_done);
	g_mutex_unlock(&m->lock);
	return *err ? 0 : more;
}

int vt_ctier_mover_discard(struct vt_ctier_mover *m, uint64_t offset, uint64_t len)
{
	return ctm_queue(m, offset, len, TIER_DISCARD, false);
}

unsigned int vt_ctier_mover_discards_pending(struct vt_ctier_mover *m)
{
	unsigned int n;

	g_mutex_lock(&m->lock);
	n = m->d_n + m->discarding;
	g_mutex_unlock(&m->lock);
	return n;
}

void vt_ctier_mover_discard_cancel(struct vt_ctier_mover *m)
{
	g_mutex_lock(&m->lock);
	m->d_n = 0;
	while (m->discarding)
		g_cond_wait(&m->discard_done, &m->lock);
	g_mutex_unlock(&m->lock);
}
