// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The zero map: one bit per page of the backend, set where the memfd holds
 * a hole and the store no copy, so that the page reads as zeros, for a
 * reader outside vtierd: an outgoing migration sends such a page as a zero
 * page without reading it (a read would fault it in, and vtierd would fill
 * it and punch it again).
 *
 * What a reader may rely on: a bit read as set says the page was zeros at
 * that instant, and whatever the page held since came from a write of the
 * guest (which the reader's dirty log sees), never from a fill of vtierd.
 * So a bit is set only inside the mover thread's fence (the fault thread
 * fills nothing there) for a hole without a copy, and the fault thread
 * clears a page's bit before it fills the page. A copy is only ever made of
 * a page in the memfd, whose bit is clear. A clear bit promises nothing: the
 * reader reads the page as it would without a map.
 *
 * The bits are set while an outgoing migration reads: a scan of the
 * backend's holes when it starts, one span per turn of the mover thread,
 * and the zero pages a read range punches again. They are all cleared when
 * it ends (the map only serves a migration's reads).
 */
#include <unistd.h>

#include "ctier_mover_int.h"

/* the span one turn of the scan covers, under one fence */
#define ZERO_SCAN_BYTES (16ull << 20)

static uint64_t *zero_map(struct vt_ctier_mover *m)
{
	return __atomic_load_n(&m->zero_map, __ATOMIC_ACQUIRE);
}

/* Bits of pages [@first, @first + @n) set (@set) or cleared, word by word. */
static void zero_map_change(uint64_t *map, uint64_t first, uint64_t n, bool set)
{
	for (uint64_t i = first; i < first + n;) {
		uint64_t w = i / 64, lo = i % 64, k = MIN(64 - lo, first + n - i);
		uint64_t bits = (k == 64 ? ~0ull : ((1ull << k) - 1)) << lo;

		if (set)
			__atomic_fetch_or(&map[w], bits, __ATOMIC_SEQ_CST);
		else
			__atomic_fetch_and(&map[w], ~bits, __ATOMIC_SEQ_CST);
		i += k;
	}
}

void ctm_zero_map_clear(struct vt_ctier_mover *m, uint64_t offset, uint64_t len)
{
	uint64_t *map = zero_map(m), ps = m->pager.page_size;

	if (map && len)
		zero_map_change(map, offset / ps, (len + ps - 1) / ps, false);
}

void ctm_zero_map_set_mask(struct vt_ctier_mover *m, uint64_t offset, uint64_t n,
			   const uint64_t *mask)
{
	uint64_t *map = zero_map(m), ps = m->pager.page_size;

	if (!map)
		return;
	/* under the lock: the end of the migration clears the map after this, or stops it */
	g_mutex_lock(&m->lock);
	/* a run of the mask's pages at a time, a word of bits per atomic */
	for (uint64_t i = 0, j; m->track_reads && i < n; i = j) {
		if (!vt_pager_mask_has(mask, i)) {
			j = i + 1;
			continue;
		}
		for (j = i + 1; j < n && vt_pager_mask_has(mask, j); j++)
			;
		zero_map_change(map, offset / ps + i, j - i, true);
		m->stats.zero_map_set += j - i;
	}
	g_mutex_unlock(&m->lock);
}

/*
 * The holes of [@offset, @end) without a copy: their bits set. Inside the
 * fence. The memfd's holes from lseek(SEEK_DATA / SEEK_HOLE). 0 or -errno.
 */
static int scan_span(struct vt_ctier_mover *m, uint64_t *map, uint64_t offset, uint64_t end)
{
	uint64_t ps = m->pager.page_size, base = m->pager.fd_offset, at = offset, set = 0;

	while (at < end) {
		off_t data = lseek(m->pager.memfd, (off_t)(base + at), SEEK_DATA);
		uint64_t hole_end, next;

		if (data < 0 && errno != ENXIO)
			return -errno;
		/* ENXIO: nothing but a hole from @at to the file's end */
		hole_end = data < 0 ? end : MIN(end, (uint64_t)data - base);
		/* as fault_around(): runs of pages not stored, between the stored ones */
		for (uint64_t p = at; p < hole_end;) {
			uint64_t stored = vt_store_next(m->store, p / ps);
			uint64_t stop = stored == UINT64_MAX ? hole_end : MIN(hole_end, stored * ps);

			if (stop > p) {
				zero_map_change(map, p / ps, (stop - p) / ps, true);
				set += (stop - p) / ps;
			}
			for (p = stop; p < hole_end && vt_store_tier_of(m->store, p / ps) >= 0;)
				p += ps;
			if (p == stop && stop < hole_end)
				p += ps;	/* stored a moment ago, not now: left unmarked */
		}
		if (data < 0 || hole_end >= end)
			break;
		next = (uint64_t)lseek(m->pager.memfd, data, SEEK_HOLE);
		if ((off_t)next < 0)
			return -errno;
		/* data to @next (rounded to a page: a hole starts on one) */
		at = MIN(end, next - base);
	}
	STAT_ADD(m, zero_map_set, set);
	return 0;
}

bool ctm_zero_map_scan_slice(struct vt_ctier_mover *m, int *err)
{
	uint64_t *map = zero_map(m), at, end;
	bool on;

	g_mutex_lock(&m->lock);
	on = m->track_reads;
	at = m->zero_scan_next;
	g_mutex_unlock(&m->lock);
	if (!map || !on || at >= m->pager.size)
		return false;
	end = MIN(at + ZERO_SCAN_BYTES, m->pager.size);
	ctm_fence(m, at, end - at);
	*err = scan_span(m, map, at, end);
	ctm_unfence(m);
	g_mutex_lock(&m->lock);
	/* the migration may have ended (and the map been cleared) meanwhile */
	if (m->track_reads && m->zero_scan_next == at)
		m->zero_scan_next = end;
	on = m->track_reads;
	g_mutex_unlock(&m->lock);
	if (!on)
		ctm_zero_map_clear(m, 0, m->pager.size);
	return on && end < m->pager.size;
}

void ctm_zero_map_tracking(struct vt_ctier_mover *m, bool on)
{
	/* under m->lock: the scan starts over at each migration */
	m->zero_scan_next = on ? 0 : UINT64_MAX;
}

void vt_ctier_mover_set_zero_map(struct vt_ctier_mover *m, uint64_t *map)
{
	__atomic_store_n(&m->zero_map, map, __ATOMIC_RELEASE);
	ctm_kick(m);
}
