// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The compressed-tier mover while an outgoing migration reads guest RAM:
 * the ranges its faults fill, stored pages read through with their copy
 * kept, and each range punched again once read, within a bound.
 */
#include "ctier_csum.h"

#include "ctier_mover_int.h"

/*
 * While tracking: [@offset, @offset + @len) was filled for the migration. It
 * extends the newest range when it goes on where that one ends, up to a
 * span. False when it is not tracked (not tracking, or the ring is full).
 * Caller holds m->lock.
 */
bool ctm_track_read(struct vt_ctier_mover *m, uint64_t offset, uint64_t len)
{
	struct read_range *last;

	if (!m->track_reads)
		return false;
	last = m->rr_n ? &m->rr[(m->rr_head + m->rr_n - 1) % READ_RANGES_MAX] : NULL;
	if (last && last->offset + last->len == offset &&
	    last->len + len <= READ_RANGE_PAGES * m->pager.page_size) {
		last->len += len;
		last->filled_ns = vt_now_ns();
	} else if (m->rr_n < READ_RANGES_MAX) {
		m->rr[(m->rr_head + m->rr_n++) % READ_RANGES_MAX] =
			(struct read_range){ offset, len, vt_now_ns() };
	} else {
		m->stats.reads_untracked++;
		return false;
	}
	m->rr_bytes += len;
	return true;
}

/*
 * While tracking: is the page at @offset in a range filled for the migration?
 * Newest first (a fault races the range just filled). Caller holds m->lock.
 */
bool ctm_read_tracked(const struct vt_ctier_mover *m, uint64_t offset)
{
	for (unsigned int i = m->rr_n; i-- > 0;) {
		const struct read_range *r = &m->rr[(m->rr_head + i) % READ_RANGES_MAX];

		if (offset >= r->offset && offset < r->offset + r->len)
			return true;
	}
	return false;
}

/*
 * The pages of [@offset, @offset + @n pages) in ranges filled for the
 * migration, set in @mask; how many. Caller holds m->lock.
 */
uint64_t ctm_read_tracked_span(const struct vt_ctier_mover *m, uint64_t offset, uint64_t n,
			       uint64_t *mask)
{
	uint64_t ps = m->pager.page_size, end = offset + n * ps, held = 0;

	for (unsigned int i = 0; i < m->rr_n; i++) {
		const struct read_range *r = &m->rr[(m->rr_head + i) % READ_RANGES_MAX];
		uint64_t lo = MAX(r->offset, offset), hi = MIN(r->offset + r->len, end);

		for (uint64_t at = lo; at < hi; at += ps) {
			if (!vt_pager_mask_has(mask, (at - offset) / ps)) {
				vt_pager_mask_set(mask, (at - offset) / ps);
				held++;
			}
		}
	}
	return held;
}

/*
 * Stored pages of [@at, @stop) read through for the migration, but @served
 * (filled already): each served from its copy, which stays; one already
 * there (read through before) is left as it is; a damaged copy ends the run
 * (its own fault poisons it). Sets the pages filled in @mask (bit i: page i
 * from @base). Returns pages filled, or -errno.
 */
int64_t ctm_read_around(struct vt_ctier_mover *m, uint64_t at, uint64_t stop, uint64_t served,
			void *buf, uint64_t base, uint64_t *mask)
{
	uint64_t ps = m->pager.page_size;
	int64_t filled = 0;

	for (; at < stop; at += ps) {
		int ret;

		if (at == served || vt_store_tier_of(m->store, at / ps) < 0)
			continue;
		if (vt_store_get(m->store, at / ps, buf) < 0)
			break;
		ret = vt_pager_fill(&m->pager, at, buf);
		if (ret < 0)
			return ret;
		if (ret == 1)
			vt_pager_mask_set(mask, (at - base) / ps);
		filled += ret;
	}
	return filled;
}

static bool all_zero(const uint8_t *p, uint64_t len)
{
	return !p[0] && !memcmp(p, p + 1, len - 1);
}

/*
 * Punch again what the migration's fills put into [@offset, @offset + @len):
 * a page without a stored copy that is still all zeros, a page byte for byte
 * equal to its stored copy (decompressed and compared: a checksum that
 * matched by chance would serve a stale page on the next fault); one written
 * since, or whose copy does not read back, keeps its page and loses its copy
 * (the memfd's page wins). Protected, read and punched as a span, so a write
 * racing it keeps its page. 0 or -errno (the backend is lost).
 */
static int repunch_reads(struct vt_ctier_mover *m, uint64_t offset, uint64_t len)
{
	uint64_t ps = m->pager.page_size, n = len / ps, zeros = 0, copies = 0, dirtied = 0;
	uint64_t present[VT_PAGER_SPAN_WORDS(VT_PAGER_SPAN_MAX)];
	uint64_t keep[VT_PAGER_SPAN_WORDS(VT_PAGER_SPAN_MAX)] = { 0 };
	uint64_t punched[VT_PAGER_SPAN_WORDS(VT_PAGER_SPAN_MAX)];
	uint64_t zeroed[VT_PAGER_SPAN_WORDS(VT_PAGER_SPAN_MAX)] = { 0 };
	g_autofree uint8_t *copy = g_malloc(ps);
	int ret;

	ctm_fence(m, offset, len);
	ret = vt_pager_evict_begin_span(&m->pager, offset, len, ctm_span_buf(m, len), present);
	if (ret < 0) {
		ctm_unfence(m);
		return ret;
	}
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *p = m->span_buf + i * ps;
		uint32_t crc;

		if (!vt_pager_mask_has(present, i))
			continue;
		if (vt_store_crc_of(m->store, offset / ps + i, &crc) < 0) {
			if (all_zero(p, ps))
				vt_pager_mask_set(keep, i);
		} else if (vt_crc32c(p, ps) == crc &&
			   vt_store_get(m->store, offset / ps + i, copy) == 0 &&
			   memcmp(copy, p, ps) == 0) {
			vt_pager_mask_set(keep, i);
		} else {
			vt_store_drop(m->store, offset / ps + i);
			dirtied++;
		}
	}
	ret = vt_pager_evict_commit_span(&m->pager, offset, len, present, keep, punched);
	for (uint64_t i = 0; i < n; i++) {
		if (!vt_pager_mask_has(punched, i))
			continue;
		if (vt_store_tier_of(m->store, offset / ps + i) < 0) {
			vt_pager_mask_set(zeroed, i);
			zeros++;
		} else {
			copies++;
		}
	}
	/* holes without a copy now: in the zero map while the fence holds faults off */
	if (ret == 0)
		ctm_zero_map_set_mask(m, offset, n, zeroed);
	ctm_unfence(m);	/* wakes the fault thread: it may be held over the bound */
	g_mutex_lock(&m->lock);
	m->stats.zero_repunched += zeros;
	m->stats.read_repunched += copies;
	m->stats.read_dirtied += dirtied;
	m->stats.repunch_runs++;
	g_mutex_unlock(&m->lock);
	return ret;
}

/*
 * The oldest tracked range, once it is due (early over the bound, at once
 * when the migration ended): punched again. Returns the ms until the next one is due (0: now), or -1
 * when none is tracked.
 */
int ctm_repunch_slice(struct vt_ctier_mover *m, int *err)
{
	struct read_range r;
	uint64_t now = vt_now_ns(), wait;

	g_mutex_lock(&m->lock);
	if (!m->rr_n) {
		g_mutex_unlock(&m->lock);
		return -1;
	}
	r = m->rr[m->rr_head];
	/* the migration ended: what is left goes at once (the copies serve it) */
	wait = !m->track_reads ? 0 :
	       m->read_bound && m->rr_bytes > m->read_bound ? READS_EARLY_NS :
	       READ_REPUNCH_AFTER_NS;
	if (now < r.filled_ns + wait) {
		g_mutex_unlock(&m->lock);
		return (int)((r.filled_ns + wait - now) / 1000000 + 1);
	}
	m->stats.reads_early += m->track_reads && now < r.filled_ns + READ_REPUNCH_AFTER_NS;
	m->rr_head = (m->rr_head + 1) % READ_RANGES_MAX;
	m->rr_n--;
	m->rr_bytes -= r.len;
	g_mutex_unlock(&m->lock);
	*err = repunch_reads(m, r.offset, r.len);
	return 0;
}

bool ctm_reads_over(struct vt_ctier_mover *m)
{
	bool over;

	g_mutex_lock(&m->lock);
	over = m->track_reads && m->read_bound && m->rr_bytes > m->read_bound;
	g_mutex_unlock(&m->lock);
	return over;
}

void vt_ctier_mover_track_reads(struct vt_ctier_mover *m, bool on, uint64_t bound)
{
	bool was;

	g_mutex_lock(&m->lock);
	was = m->track_reads;
	m->track_reads = on;
	m->read_bound = bound;
	if (on != was)
		ctm_zero_map_tracking(m, on);
	g_mutex_unlock(&m->lock);
	if (was && !on)
		ctm_zero_map_clear(m, 0, m->pager.size);
	ctm_kick(m);
	ctm_fault_kick(m);
}

uint64_t vt_ctier_mover_reads_held(struct vt_ctier_mover *m)
{
	uint64_t n;

	g_mutex_lock(&m->lock);
	n = m->rr_bytes;
	g_mutex_unlock(&m->lock);
	return n;
}
