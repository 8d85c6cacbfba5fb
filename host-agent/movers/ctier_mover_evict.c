// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The compressed-tier mover's evictions: a run protected, copied, stored and
 * punched at once, under the fence; a bulk span's copies stored by the mover
 * thread and its helper threads; fetches on order.
 */
#include "ctier_mover_int.h"

static uint64_t pages_of(const uint64_t *mask, uint64_t n)
{
	uint64_t sum = 0;

	for (uint64_t w = 0; w < VT_PAGER_SPAN_WORDS(n); w++)
		sum += (uint64_t)__builtin_popcountll(mask[w]);
	return sum;
}

/*
 * The copies of a span being stored, in slices of SPAN_FAULT_PAGES pages that
 * the mover thread and its helpers take in turn.
 */
struct span_store {
	struct vt_ctier_mover *m;
	uint64_t first_page, n;
	const uint8_t *tiers, *buf;
	const uint64_t *present, *reads;
	uint64_t *keep;			/* set atomically: slices share its words */
	unsigned int next;		/* atomic: the next slice */
};

_Static_assert(SPAN_FAULT_PAGES <= VT_STORE_BATCH_MAX, "a slice is one batch at most");

/* Page @i's put ended with @r: kept (its memfd page goes), or counted. */
static void stored(struct span_store *ss, uint64_t i, int r)
{
	struct vt_ctier_mover *m = ss->m;

	if (r == 0) {
		__atomic_fetch_or(&ss->keep[i / 64], 1ull << (i % 64), __ATOMIC_RELAXED);
		return;
	}
	g_mutex_lock(&m->lock);
	if (r == -E2BIG)
		m->stats.evict_e2big++;
	else if (r == -ENOSPC)
		m->stats.evict_nospc++;
	else if (r != -EEXIST)
		m->stats.evict_failed++;
	g_mutex_unlock(&m->lock);
}

/*
 * Page @i of the span stored now (true), or left for a batch (false: no
 * prepared copy to use, nothing that rules it out).
 */
static bool store_page(struct span_store *ss, uint64_t i)
{
	struct vt_ctier_mover *m = ss->m;
	uint64_t page = ss->first_page + i;
	const void *copy;
	uint32_t copy_len = 0;
	bool used = false;
	int r;

	if (!vt_pager_mask_has(ss->present, i) || vt_pager_mask_has(ss->reads, i))
		return true;
	if (vt_store_tier_of(m->store, page) >= 0)
		return true;	/* a copy is there already (a fault put it back): leave it */
	copy = vt_prepared_copy(ctm_prepared(m), page, ss->tiers[i], &copy_len);
	if (!copy)
		return false;
	r = vt_store_put_copy(m->store, page, ss->tiers[i], ss->buf + i * m->pager.page_size,
			      copy, copy_len, &used);
	g_mutex_lock(&m->lock);
	if (used)
		m->stats.prepared_used++;
	else
		m->stats.prepared_stale++;
	g_mutex_unlock(&m->lock);
	stored(ss, i, r);
	return true;
}

/*
 * Store the next slice of the span; false when none is left. The pages
 * without a prepared copy go in batches of one tier (a remote tier's in one
 * request per server).
 */
static bool store_slice(struct span_store *ss)
{
	struct vt_ctier_mover *m = ss->m;
	uint64_t i = (uint64_t)__atomic_fetch_add(&ss->next, 1, __ATOMIC_RELAXED) *
		     SPAN_FAULT_PAGES;
	uint64_t pages[SPAN_FAULT_PAGES], idx[SPAN_FAULT_PAGES];
	const void *data[SPAN_FAULT_PAGES];
	int status[SPAN_FAULT_PAGES];
	unsigned int nb = 0, tier = 0;

	if (i >= ss->n)
		return false;
	for (uint64_t end = MIN(i + SPAN_FAULT_PAGES, ss->n); i <= end; i++) {
		bool flush = i == end || (nb && ss->tiers[i] != tier);

		if (flush && nb) {
			vt_store_put_batch(m->store, pages, tier, data, nb, status);
			for (unsigned int k = 0; k < nb; k++)
				stored(ss, idx[k], status[k]);
			nb = 0;
		}
		if (i == end || store_page(ss, i))
			continue;
		tier = ss->tiers[i];
		idx[nb] = i;
		pages[nb] = ss->first_page + i;
		data[nb++] = ss->buf + i * m->pager.page_size;
	}
	return true;
}

static gpointer store_helper(gpointer data)
{
	struct span_store *ss = data;

	while (store_slice(ss))
		;
	return NULL;
}

/*
 * Store the span's copies, on up to m->store_threads threads for a @bulk one.
 * The fault thread serves faults outside the span meanwhile.
 */
static void store_span(struct vt_ctier_mover *m, struct span_store *ss, bool bulk)
{
	GThread *helpers[STORE_THREADS_MAX];
	unsigned int nh = 0, want = 1;

	if (bulk) {
		g_mutex_lock(&m->lock);
		want = m->store_threads;
		g_mutex_unlock(&m->lock);
	}
	/* a helper per two slices at least: a short span is not worth a thread */
	for (; nh + 1 < want && (nh + 1) * 2 * SPAN_FAULT_PAGES < ss->n; nh++) {
		helpers[nh] = g_thread_try_new("vtier-store", store_helper, ss, NULL);
		if (!helpers[nh])
			break;
	}
	while (store_slice(ss))
		;
	for (unsigned int h = 0; h < nh; h++)
		g_thread_join(helpers[h]);
}

/*
 * Evict [@offset, @offset + @len) (at most VT_PAGER_SPAN_MAX pages), page i
 * into tier @tiers[i].
 * Pages in a faster compressed tier come back into the memfd first (the copy
 * leaves the store only once the kernel has the page) and go out with the
 * rest; pages in their tier or a colder one stay where they are (an eviction
 * never moves a page up: a chunk whose pages are spread over several tiers
 * is ordered from the tier most of it is in). Then the span is protected and
 * copied at once, each copy is stored durably, and the pages whose copy is in
 * the store and that no write raced with are punched together; holes (evicted
 * already, never touched) are skipped. The whole run is fenced: the span's
 * faults wait for the commit, faults elsewhere are served meanwhile by the
 * fault thread; a @bulk span is stored by several threads. 0 or -errno when
 * the backend is lost.
 */
static int evict_fenced(struct vt_ctier_mover *m, uint64_t offset, uint64_t len,
			const uint8_t *tiers, uint8_t *buf, bool bulk)
{
	uint64_t ps = m->pager.page_size, n = len / ps, t0, t1, t2, busy = 0, out, absent;
	uint64_t by_tier[VT_CTIER_MAX] = { 0 };
	uint64_t present[VT_PAGER_SPAN_WORDS(VT_PAGER_SPAN_MAX)];
	uint64_t keep[VT_PAGER_SPAN_WORDS(VT_PAGER_SPAN_MAX)] = { 0 };
	uint64_t punched[VT_PAGER_SPAN_WORDS(VT_PAGER_SPAN_MAX)];
	uint64_t reads[VT_PAGER_SPAN_WORDS(VT_PAGER_SPAN_MAX)] = { 0 };
	int ret;

	/* the migration's fills are punched again by their ranges: not stored twice */
	g_mutex_lock(&m->lock);
	m->stats.evict_read_held += ctm_read_tracked_span(m, offset, n, reads);
	g_mutex_unlock(&m->lock);
	for (uint64_t i = 0; i < n; i++) {
		int cur = vt_store_tier_of(m->store, offset / ps + i);

		/* down to a colder tier; a page in a colder one already stays there */
		if (cur >= 0 && cur < (int)tiers[i] && !vt_pager_mask_has(reads, i)) {
			ret = ctm_fetch_page(m, offset + i * ps, buf);
			if (ret < 0)
				return ret;
		}
	}
	t0 = vt_now_ns();
	ret = vt_pager_evict_begin_span(&m->pager, offset, len, buf, present);
	t1 = vt_now_ns();
	if (ret < 0)
		return ret;
	store_span(m, &(struct span_store){ .m = m, .first_page = offset / ps, .n = n,
					    .tiers = tiers, .buf = buf, .present = present,
					    .reads = reads, .keep = keep },
		   bulk);
	t2 = vt_now_ns();
	ret = vt_pager_evict_commit_span(&m->pager, offset, len, present, keep, punched);
	/* a copy whose page stayed (a write raced in) is stale */
	for (uint64_t i = 0; i < n; i++) {
		if (vt_pager_mask_has(keep, i) && !vt_pager_mask_has(punched, i)) {
			vt_store_drop(m->store, offset / ps + i);
			busy++;
		}
		if (vt_pager_mask_has(punched, i) && tiers[i] < VT_CTIER_MAX)
			by_tier[tiers[i]]++;
	}
	out = pages_of(punched, n);
	absent = n - pages_of(present, n);
	g_mutex_lock(&m->lock);
	m->stats.evict_absent += absent;
	m->stats.evict_busy += busy;
	m->stats.evicted += out;
	for (unsigned int t = 0; t < VT_CTIER_MAX; t++)
		m->stats.evicted_by_tier[t] += by_tier[t];
	m->stats.evict_runs += absent < n;	/* a run with a page present: one protection */
	m->stats.evict_protect_ns += t1 - t0;
	m->stats.evict_store_ns += t2 - t1;
	m->stats.evict_punch_ns += vt_now_ns() - t2;
	g_mutex_unlock(&m->lock);
	return ret;
}

/* evict_fenced() with the fence up over the run from start to end */
int ctm_evict_run(struct vt_ctier_mover *m, uint64_t offset, uint64_t len,
		  const uint8_t *tiers, uint8_t *buf, bool bulk)
{
	int ret;

	ctm_fence(m, offset, len);
	ret = evict_fenced(m, offset, len, tiers, buf, bulk);
	ctm_unfence(m);
	return ret;
}

/* Put one stored page back into the memfd. */
int ctm_fetch_page(struct vt_ctier_mover *m, uint64_t offset, void *buf)
{
	uint64_t page = offset / m->pager.page_size;
	int ret;

	if (vt_store_tier_of(m->store, page) < 0)
		return 0;
	ret = vt_store_get(m->store, page, buf);
	if (ret < 0)
		return 0;	/* a damaged page is poisoned when the guest asks for it */
	ret = vt_pager_fill(&m->pager, offset, buf);
	if (ret < 0)
		return ret;
	vt_store_drop(m->store, page);
	if (ret == 1)
		STAT_ADD(m, fetched, 1);
	return 0;
}

/* The span buffer, at least @bytes (kept while bulk work or reads last). */
uint8_t *ctm_span_buf(struct vt_ctier_mover *m, uint64_t bytes)
{
	if (m->span_cap < bytes) {
		g_free(m->span_buf);
		m->span_buf = g_malloc(bytes);
		m->span_cap = bytes;
	}
	return m->span_buf;
}

unsigned int vt_ctier_mover_set_store_threads(struct vt_ctier_mover *m, unsigned int n)
{
	g_mutex_lock(&m->lock);
	m->store_threads = CLAMP(n, 1, STORE_THREADS_MAX);
	n = m->store_threads;
	g_mutex_unlock(&m->lock);
	return n;
}
