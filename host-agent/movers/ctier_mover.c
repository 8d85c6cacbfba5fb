// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The compressed-tier mover: one thread per handed-off backend, faults
 * first, queued evictions and fetches in slices between them.
 */
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ctier_csum.h"
#include "ctier_prepared.h"
#include "ctier_mover.h"

#define ORDERS_MAX 8192
#define SLICE_PAGES 8		/* pages of an order between two fault checks */
/*
 * Evictions go a run at a time (one write-protection and one punch per run,
 * each a flush of the guest's nested TLB): 32 pages between two fault checks.
 */
#define EVICT_SLICE_PAGES 32
G_STATIC_ASSERT(EVICT_SLICE_PAGES <= VT_PAGER_SPAN_MAX);
/*
 * Bulk evictions (placement known ahead: a migration profile's cold chunks)
 * go a span at a time: adjacent bulk orders are taken together, whatever
 * their tiers, up to 4096 pages (16 MiB), with one protection and one punch
 * for all; each page goes to its own order's tier. Faults elsewhere are
 * served every SPAN_FAULT_PAGES pages while the span's copies are stored,
 * so the span's length bounds only the wait of a write into the span itself.
 * In L1 under TCG a protection costs ~25 ms (a TLB shootdown) and storing a
 * page ~0.12 ms: spans of one tier (2 MiB chunks, tiers alternating) spent
 * a quarter of a destination's placement protecting.
 */
#define BULK_SPAN_PAGES 4096
/*
 * In the background (vt_ctier_mover_set_background()) the mover thread runs
 * at this nice. (Spans stay as large: with 2 MiB ones a destination in L1
 * evicted 16440 pages by the switch-over instead of 29033 and was placed at
 * window 2, docs/vtierd.md.)
 */
#define BACKGROUND_NICE 10
#define SPAN_ORDERS_MAX 64	/* orders one span takes at most */
#define SPAN_FAULT_PAGES 32	/* pages stored between two looks at other faults */
/*
 * A span's copies are compressed by the mover thread and up to
 * STORE_THREADS_MAX - 1 helpers started for the span (the store takes puts
 * from several threads): a destination places a whole VM's cold memory at
 * once, a burst that a host's idle CPUs shorten. By default a quarter of the
 * CPUs: the guests' vCPUs keep the rest (in L1, two vCPUs, one running the
 * guest, a second thread made placement slower). The mover alone serves faults.
 */
#define STORE_THREADS_MAX 8
G_STATIC_ASSERT(BULK_SPAN_PAGES <= VT_PAGER_SPAN_MAX);
/* an outgoing migration's fills are punched again in ranges of up to 4 MiB */
#define READ_RANGE_PAGES 1024
#define DISCARDS_MAX 1024	/* ranges queued for discard (guest hints) */
#define DISCARD_SLICE (2u << 20)	/* bytes discarded between two fault checks */
/*
 * While a migration reads guest RAM (vt_ctier_mover_track_reads()), what it
 * faults in is punched out again once it has been read: never-touched memory
 * it zero-fills, and stored pages, which it gets while the store keeps their
 * copy ("read through"). A range goes a second after its last fill (the
 * migration thread reads each page once; a re-read only costs another fill),
 * or sooner, once READS_EARLY_NS old, while the ranges held exceed the
 * bound; at once when the migration ends (a stored copy must not outlive
 * its page's tracking). Consecutive fills extend one range, up to a span.
 */
#define READ_RANGES_MAX 2048
#define READ_REPUNCH_AFTER_NS (1000ull * 1000 * 1000)
#define READS_EARLY_NS (50ull * 1000 * 1000)
#define ZERO_WIN_MIN (64u << 10)	/* first-touch fault-around, grows while sequential */
#define ZERO_WIN_MAX (2u << 20)

struct mover_order {
	uint64_t offset;
	uint64_t len;
	int tier;		/* store tier, or -1: fetch, or TIER_DISCARD */
	bool bulk;		/* an eviction taken in spans (vt_ctier_mover_evict_bulk) */
};

#define TIER_DISCARD (-2)

struct vt_ctier_mover {
	struct vt_pager pager;
	struct vt_store *store;
	int fill_node;
	vt_ctier_mover_failed_fn failed;
	void *opaque;
	GThread *thread;
	int wake_fd;		/* eventfd: an order was queued, or stop */
	bool background;	/* atomic: vt_ctier_mover_set_background() */

	GMutex lock;		/* orders, discards, stats, stop */
	struct mover_order *orders;
	unsigned int head, n;
	bool working;			/* a slice taken off the queue is being done */
	struct mover_order discards[DISCARDS_MAX];	/* tier TIER_DISCARD */
	unsigned int d_head, d_n;
	bool discarding;		/* a discard slice is being done */
	GCond discard_done;		/* signalled when a discard slice ends */
	bool stop;
	uint64_t zero_next, zero_win;	/* fault-around: thread-only */
	uint8_t *span_buf;		/* copies of a span: thread-only, while bulk work lasts */
	uint64_t span_cap;		/* its bytes */
	uint64_t fence_lo, fence_hi;	/* a span being stored: fills stay out (thread-only) */
	unsigned int store_threads;	/* lock: threads storing a bulk span, the mover's included */
	bool track_reads;		/* lock: an outgoing migration's fills, to punch again */
	uint64_t read_bound;		/* lock: bytes held past which ranges go early, 0: none */
	struct read_range {
		uint64_t offset, len, filled_ns;
	} rr[READ_RANGES_MAX];		/* lock: fills while tracking, oldest first */
	unsigned int rr_head, rr_n;
	uint64_t rr_bytes;		/* lock: their length */
	/*
	 * A destination's copies made during precopy (ctier_prepared.h): read by
	 * the span's storing threads; released by the mover thread as spans are
	 * done, freed when the queue drains after a bulk order, or at
	 * prepared_expire_ns if none comes.
	 */
	struct vt_prepared *prepared;	/* lock to set; then the mover thread's */
	bool prepared_bulk;		/* thread-only: a bulk span ran since it was set */
	uint64_t prepared_expire_ns;
	struct vt_ctier_mover_stats stats;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#define STAT_ADD(m, field, v) do {		\
	g_mutex_lock(&(m)->lock);		\
	(m)->stats.field += (v);		\
	g_mutex_unlock(&(m)->lock);		\
} while (0)

/*
 * While tracking: [@offset, @offset + @len) was filled for the migration. It
 * extends the newest range when it goes on where that one ends, up to a
 * span. False when it is not tracked (not tracking, or the ring is full).
 * Caller holds m->lock.
 */
static bool track_read(struct vt_ctier_mover *m, uint64_t offset, uint64_t len)
{
	struct read_range *last;

	if (!m->track_reads)
		return false;
	last = m->rr_n ? &m->rr[(m->rr_head + m->rr_n - 1) % READ_RANGES_MAX] : NULL;
	if (last && last->offset + last->len == offset &&
	    last->len + len <= READ_RANGE_PAGES * m->pager.page_size) {
		last->len += len;
		last->filled_ns = now_ns();
	} else if (m->rr_n < READ_RANGES_MAX) {
		m->rr[(m->rr_head + m->rr_n++) % READ_RANGES_MAX] =
			(struct read_range){ offset, len, now_ns() };
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
static bool read_tracked(const struct vt_ctier_mover *m, uint64_t offset)
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
static uint64_t read_tracked_span(const struct vt_ctier_mover *m, uint64_t offset, uint64_t n,
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
static int64_t read_around(struct vt_ctier_mover *m, uint64_t at, uint64_t stop, uint64_t served,
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
	uint64_t ps = m->pager.page_size, win, start, end, at;
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
	/* a span being stored (its faults wait for its commit): its holes stay holes */
	if (m->fence_hi > m->fence_lo && start < m->fence_hi && end > m->fence_lo) {
		if (offset < m->fence_lo)
			end = m->fence_lo;
		else
			start = m->fence_hi;
	}
	for (at = start; at < end;) {
		uint64_t next = vt_store_next(m->store, at / ps), stop;

		stop = next == UINT64_MAX ? end : MIN(end, next * ps);
		if (stop > at) {
			n = vt_pager_zero_range(&m->pager, at, stop - at, false);
			if (n < 0)
				return (int)n;
			zeros += n;
		}
		/* then the stored pages from there, up to the next page not stored */
		for (at = stop; stop < end && vt_store_tier_of(m->store, stop / ps) >= 0;)
			stop += ps;
		if (reads && stop > at) {
			n = read_around(m, at, stop, served, buf, start, through_mask);
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
		*tracked = track_read(m, start, end - start);
	if (*tracked) {
		m->stats.read_through += (uint64_t)through;
		m->stats.read_around += (uint64_t)through;
	}
	g_mutex_unlock(&m->lock);
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
 * negative errno when the backend is lost.
 */
static int serve_missing(struct vt_ctier_mover *m, uint64_t offset, void *buf)
{
	uint64_t page = offset / m->pager.page_size, n;
	int ret = vt_store_get(m->store, page, buf);
	bool through, reads;

	if (ret == -EBADMSG) {
		/* the copy is damaged: the guest sees a memory error, as with bad DRAM */
		ret = vt_pager_poison(&m->pager, offset);
		if (ret == 1) {
			/* the page is in the memfd again: it wins, the copy goes */
			vt_store_drop(m->store, page);
			STAT_ADD(m, faults_already, 1);
			return 0;
		}
		/* the damaged copy goes before the count shows: stats never run ahead */
		if (ret == 0)
			vt_store_drop(m->store, page);
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
	through = ret == 0 && reads && read_tracked(m, offset);
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
		if (through)
			STAT_ADD(m, read_through, 1);
	}
	if (through)
		return ret;
	vt_store_drop(m->store, page);	/* the memfd's page wins */
	if (ret == 0)
		STAT_ADD(m, faults_already, 1);
	return ret;
}

/*
 * Serve every queued fault, or until the migration's fills are over their
 * bound; while a span is stored (m->fence_lo..m->fence_hi), its own stay queued
 * (a span being stored: they wait for its commit). 0, or -errno when the
 * backend is lost.
 */
static int serve_faults(struct vt_ctier_mover *m, void *buf)
{
	struct vt_pager_fault f;
	bool over, in_span = m->fence_hi > m->fence_lo;
	int ret;

	for (;;) {
		uint64_t t0 = now_ns();
		int tier;

		ret = in_span ? vt_pager_next_fault_outside(&m->pager, m->fence_lo,
							    m->fence_hi - m->fence_lo, &f) :
				  vt_pager_next_fault(&m->pager, &f);
		if (ret == -EAGAIN)
			return 0;
		if (ret == -ERANGE)
			continue;	/* outside the backend: not ours to answer */
		if (ret < 0)
			return ret;
		if (f.wp) {
			ret = vt_pager_unprotect(&m->pager, f.offset, m->pager.page_size);
			if (ret < 0)
				return ret;
			g_mutex_lock(&m->lock);
			m->stats.faults_wp++;
			m->stats.span_faults += in_span;
			g_mutex_unlock(&m->lock);
			continue;
		}
		tier = vt_store_tier_of(m->store, f.offset / m->pager.page_size);
		ret = serve_missing(m, f.offset, buf);
		if (ret < 0)
			return ret;
		g_mutex_lock(&m->lock);
		if (ret == 1 && tier >= 0) {
			uint64_t ns = now_ns() - t0;

			m->stats.faults_stored++;
			vt_latency_add(&m->stats.fault_ns, ns);
			if (tier < VT_CTIER_MAX) {
				m->stats.faults_by_tier[tier]++;
				vt_latency_add(&m->stats.tier_ns[tier], ns);
			}
		} else if (ret == 1) {
			m->stats.faults_zero++;
			vt_latency_add(&m->stats.zero_ns, now_ns() - t0);
		}
		m->stats.span_faults += in_span;
		/* over the bound: the next fault waits for punches (reads_admit) */
		over = m->track_reads && m->read_bound && m->rr_bytes > m->read_bound;
		g_mutex_unlock(&m->lock);
		if (over)
			return 0;
	}
}

static int fetch_page(struct vt_ctier_mover *m, uint64_t offset, void *buf);

static uint64_t pages_of(const uint64_t *mask, uint64_t n)
{
	uint64_t sum = 0;

	for (uint64_t w = 0; w < VT_PAGER_SPAN_WORDS(n); w++)
		sum += (uint64_t)__builtin_popcountll(mask[w]);
	return sum;
}

/* The prepared copies, if any (set once by another thread). */
static struct vt_prepared *prepared(struct vt_ctier_mover *m)
{
	return __atomic_load_n(&m->prepared, __ATOMIC_ACQUIRE);
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
	unsigned int helpers;		/* atomic: helpers still storing */
};

static void store_page(struct span_store *ss, uint64_t i)
{
	struct vt_ctier_mover *m = ss->m;
	uint64_t page = ss->first_page + i;
	const void *copy;
	uint32_t copy_len = 0;
	bool used = false;
	int r;

	if (!vt_pager_mask_has(ss->present, i) || vt_pager_mask_has(ss->reads, i))
		return;
	if (vt_store_tier_of(m->store, page) >= 0)
		return;	/* a copy is there already (a fault put it back): leave it */
	copy = vt_prepared_copy(prepared(m), page, ss->tiers[i], &copy_len);
	r = vt_store_put_copy(m->store, page, ss->tiers[i], ss->buf + i * m->pager.page_size,
			      copy, copy_len, &used);
	if (copy) {
		g_mutex_lock(&m->lock);
		if (used)
			m->stats.prepared_used++;
		else
			m->stats.prepared_stale++;
		g_mutex_unlock(&m->lock);
	}
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

/* Store the next slice of the span; false when none is left. */
static bool store_slice(struct span_store *ss)
{
	uint64_t i = (uint64_t)__atomic_fetch_add(&ss->next, 1, __ATOMIC_RELAXED) *
		     SPAN_FAULT_PAGES;

	if (i >= ss->n)
		return false;
	for (uint64_t end = MIN(i + SPAN_FAULT_PAGES, ss->n); i < end; i++)
		store_page(ss, i);
	return true;
}

static gpointer store_helper(gpointer data)
{
	struct span_store *ss = data;

	while (store_slice(ss))
		;
	__atomic_fetch_sub(&ss->helpers, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Store the span's copies, on up to m->store_threads threads; with
 * @fault_buf, the faults outside the span are served meanwhile, between two
 * slices and while the helpers finish. 0, or -errno (the backend is lost:
 * what is stored by then is kept).
 */
static int store_span(struct vt_ctier_mover *m, struct span_store *ss, void *fault_buf,
		      uint64_t *fault_ns)
{
	GThread *helpers[STORE_THREADS_MAX];
	unsigned int nh = 0, want = 1;
	int ret = 0;

	if (fault_buf) {
		g_mutex_lock(&m->lock);
		want = m->store_threads;
		g_mutex_unlock(&m->lock);
	}
	/* a helper per two slices at least: a short span is not worth a thread */
	for (; nh + 1 < want && (nh + 1) * 2 * SPAN_FAULT_PAGES < ss->n; nh++) {
		__atomic_fetch_add(&ss->helpers, 1, __ATOMIC_RELAXED);
		helpers[nh] = g_thread_try_new("vtier-store", store_helper, ss, NULL);
		if (!helpers[nh]) {
			__atomic_fetch_sub(&ss->helpers, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	for (bool more = true; more || __atomic_load_n(&ss->helpers, __ATOMIC_ACQUIRE);) {
		if (fault_buf) {
			uint64_t f0 = now_ns();

			ret = serve_faults(m, fault_buf);
			*fault_ns += now_ns() - f0;
			if (ret < 0) {
				__atomic_store_n(&ss->next, UINT_MAX / 2, __ATOMIC_RELAXED);
				break;
			}
		}
		if (more)
			more = store_slice(ss);
		else if (fault_buf)	/* the helpers' last slices: faults meanwhile */
			poll(&(struct pollfd){ .fd = m->pager.uffd, .events = POLLIN }, 1, 1);
		else
			g_usleep(100);
	}
	for (unsigned int h = 0; h < nh; h++)
		g_thread_join(helpers[h]);
	return ret;
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
 * already, never touched) are skipped. With @fault_buf, faults outside the
 * span are served while the copies are stored (theirs wait for the commit).
 * 0 or -errno when the backend is lost.
 */
static int evict_run(struct vt_ctier_mover *m, uint64_t offset, uint64_t len,
		     const uint8_t *tiers, uint8_t *buf, void *fault_buf)
{
	uint64_t ps = m->pager.page_size, n = len / ps, t0, t1, t2, busy = 0, out, absent;
	uint64_t fault_ns = 0, by_tier[VT_CTIER_MAX] = { 0 };
	uint64_t present[VT_PAGER_SPAN_WORDS(VT_PAGER_SPAN_MAX)];
	uint64_t keep[VT_PAGER_SPAN_WORDS(VT_PAGER_SPAN_MAX)] = { 0 };
	uint64_t punched[VT_PAGER_SPAN_WORDS(VT_PAGER_SPAN_MAX)];
	uint64_t reads[VT_PAGER_SPAN_WORDS(VT_PAGER_SPAN_MAX)] = { 0 };
	int ret, r2;

	/* the migration's fills are punched again by their ranges: not stored twice */
	g_mutex_lock(&m->lock);
	m->stats.evict_read_held += read_tracked_span(m, offset, n, reads);
	g_mutex_unlock(&m->lock);
	for (uint64_t i = 0; i < n; i++) {
		int cur = vt_store_tier_of(m->store, offset / ps + i);

		/* down to a colder tier; a page in a colder one already stays there */
		if (cur >= 0 && cur < (int)tiers[i] && !vt_pager_mask_has(reads, i)) {
			ret = fetch_page(m, offset + i * ps, buf);
			if (ret < 0)
				return ret;
		}
	}
	t0 = now_ns();
	ret = vt_pager_evict_begin_span(&m->pager, offset, len, buf, present);
	t1 = now_ns();
	if (ret < 0)
		return ret;
	if (fault_buf) {
		m->fence_lo = offset;
		m->fence_hi = offset + len;
	}
	ret = store_span(m, &(struct span_store){ .m = m, .first_page = offset / ps, .n = n,
						  .tiers = tiers, .buf = buf, .present = present,
						  .reads = reads, .keep = keep },
			 fault_buf, &fault_ns);
	m->fence_lo = m->fence_hi = 0;
	t2 = now_ns();
	r2 = vt_pager_evict_commit_span(&m->pager, offset, len, present, keep, punched);
	ret = ret < 0 ? ret : r2;
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
	m->stats.evict_store_ns += t2 - t1 - fault_ns;
	m->stats.evict_punch_ns += now_ns() - t2;
	m->stats.span_faults_ns += fault_ns;
	g_mutex_unlock(&m->lock);
	return ret;
}

/* Put one stored page back into the memfd. */
static int fetch_page(struct vt_ctier_mover *m, uint64_t offset, void *buf)
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

/*
 * Take up to @most bytes off the first order of the ring @q (@size slots,
 * @n queued from @head) into @o; the order leaves the ring once it is all
 * taken. Returns the bytes taken. Caller holds m->lock and checked *@n.
 */
static uint64_t take_slice(struct mover_order *q, unsigned int size, unsigned int *head,
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
 * served with zeros. On this thread, so that no eviction of the range is
 * half done meanwhile. 0 or -errno (the backend is lost).
 */
static int discard_run(struct vt_ctier_mover *m, uint64_t offset, uint64_t len)
{
	uint64_t ps = m->pager.page_size, dropped = 0, resident;
	uint64_t first = offset / ps, end = (offset + len) / ps;

	for (uint64_t p = vt_store_next(m->store, first); p < end; p = vt_store_next(m->store, p + 1))
		dropped += vt_store_drop(m->store, p) == 0;
	resident = data_bytes(m->pager.memfd, m->pager.fd_offset + offset, len);
	if (fallocate(m->pager.memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)(m->pager.fd_offset + offset), (off_t)len) < 0)
		return -errno;
	g_mutex_lock(&m->lock);
	m->stats.discard_runs++;
	m->stats.discarded_resident_bytes += resident;
	m->stats.discarded_stored_pages += dropped;
	g_mutex_unlock(&m->lock);
	return 0;
}

/* Discard up to DISCARD_SLICE bytes of the first queued range. 1 if more are queued. */
static int discard_slice(struct vt_ctier_mover *m, int *err)
{
	struct mover_order o;
	uint64_t len;
	bool more;

	g_mutex_lock(&m->lock);
	if (!m->d_n) {
		g_mutex_unlock(&m->lock);
		return 0;
	}
	len = take_slice(m->discards, DISCARDS_MAX, &m->d_head, &m->d_n, DISCARD_SLICE, &o);
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

	len = take_slice(m->orders, ORDERS_MAX, &m->head, &m->n, most, o);
	memset(tiers, o->tier, len / ps);
	while (m->n && len < most && orders < SPAN_ORDERS_MAX) {
		const struct mover_order *next = &m->orders[m->head];
		struct mover_order taken;
		uint64_t more;

		if (!next->bulk || next->tier < 0 || next->offset != o->offset + len)
			break;
		more = take_slice(m->orders, ORDERS_MAX, &m->head, &m->n, most - len, &taken);
		memset(tiers + len / ps, taken.tier, more / ps);
		len += more;
		orders++;
	}
	return len;
}

/*
 * Mover thread, its queue empty: the prepared copies go once a bulk span
 * ran (the placement they were made for is done) or at their expiry.
 */
static void prepared_drop_idle(struct vt_ctier_mover *m)
{
	struct vt_prepared *p = prepared(m);

	if (!p || (!m->prepared_bulk && now_ns() < m->prepared_expire_ns))
		return;
	__atomic_store_n(&m->prepared, NULL, __ATOMIC_RELEASE);
	vt_prepared_free(p);
}

/* The span buffer, at least @bytes (kept while bulk work or reads last). */
static uint8_t *span_buf(struct vt_ctier_mover *m, uint64_t bytes)
{
	if (m->span_cap < bytes) {
		g_free(m->span_buf);
		m->span_buf = g_malloc(bytes);
		m->span_cap = bytes;
	}
	return m->span_buf;
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
		len = take_slice(m->orders, ORDERS_MAX, &m->head, &m->n,
				 (m->orders[m->head].tier >= 0 ? EVICT_SLICE_PAGES : SLICE_PAGES) *
				 step, &o);
		if (o.tier >= 0)
			memset(tiers, o.tier, len / step);
	}
	more = m->n > 0;
	m->working = true;
	g_mutex_unlock(&m->lock);
	t0 = now_ns();
	if (bulk) {
		*err = evict_run(m, o.offset, len, tiers, span_buf(m, len), buf);
		if (prepared(m)) {
			/* a chunk's copies serve one eviction: stale afterwards */
			vt_prepared_release(prepared(m), o.offset, len);
			m->prepared_bulk = true;
		}
	} else if (o.tier >= 0)
		*err = evict_run(m, o.offset, len, tiers, buf, NULL);
	else {
		for (uint64_t off = o.offset; off < o.offset + len; off += step) {
			*err = fetch_page(m, off, buf);
			if (*err)
				break;
		}
	}
	g_mutex_lock(&m->lock);
	if (o.tier >= 0)
		m->stats.evict_ns += now_ns() - t0;
	else
		m->stats.fetch_ns += now_ns() - t0;
	m->working = false;
	g_mutex_unlock(&m->lock);
	return *err ? 0 : more;
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
	g_autofree uint8_t *copy = g_malloc(ps);
	int ret;

	ret = vt_pager_evict_begin_span(&m->pager, offset, len, span_buf(m, len), present);
	if (ret < 0)
		return ret;
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
		if (vt_store_tier_of(m->store, offset / ps + i) < 0)
			zeros++;
		else
			copies++;
	}
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
static int repunch_slice(struct vt_ctier_mover *m, int *err)
{
	struct read_range r;
	uint64_t now = now_ns(), wait;

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

/*
 * Over the bound, the migration's fills are punched again before any new
 * fault is served: the thread that faults (the migration's, reading guest
 * RAM far faster than ranges are punched: 270 MiB of never-touched memory
 * in 2 s) waits for the punches, so what the source holds for it stays near
 * the bound. True when faults may be served; else *@wait_ms until the oldest
 * range may go, or *@err.
 */
static bool reads_admit(struct vt_ctier_mover *m, int *wait_ms, int *err)
{
	for (;;) {
		bool over;

		g_mutex_lock(&m->lock);
		over = m->track_reads && m->read_bound && m->rr_bytes > m->read_bound;
		g_mutex_unlock(&m->lock);
		if (!over)
			return true;
		*wait_ms = repunch_slice(m, err);
		if (*err)
			return false;
		if (*wait_ms < 0)
			return true;	/* nothing tracked: cannot be over */
		if (*wait_ms > 0) {
			STAT_ADD(m, reads_waits, 1);
			return false;
		}
	}
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
	int err = 0, due_ms = -1, wait_ms, nice_now = 0;

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
		int nice_want;

		/*
		 * Evicting reads the uffd to see racing writes: the faults it read
		 * wait in the pager, not in the fd, so poll() would not report
		 * them. Never sleep with faults in hand.
		 */
		if (poll(pfd, 2, more || m->pager.n_pending ? 0 : due_ms) < 0 && errno != EINTR) {
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
		nice_want = __atomic_load_n(&m->background, __ATOMIC_RELAXED) ? BACKGROUND_NICE : 0;
		if (nice_want != nice_now) {
			/* this thread alone: the span helpers it starts inherit it */
			if (setpriority(PRIO_PROCESS, (id_t)gettid(), nice_want))
				g_debug("ctier mover: nice %d: %s", nice_want, g_strerror(errno));
			nice_now = nice_want;	/* asked once: not again every loop */
		}
		if (!reads_admit(m, &wait_ms, &err)) {
			struct pollfd w = { .fd = m->wake_fd, .events = POLLIN };

			if (err)
				break;
			/* faults wait: only a stop or the oldest range's due time wakes us */
			if (poll(&w, 1, wait_ms) > 0 && read(m->wake_fd, &v, sizeof(v)) < 0)
				g_debug("ctier mover: eventfd read: %s", g_strerror(errno));
			continue;
		}
		err = serve_faults(m, buf);
		if (err)
			break;
		/* discards first: a guest waits for them */
		more = discard_slice(m, &err);
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
		due_ms = repunch_slice(m, &err);
		if (err)
			break;
		more |= due_ms == 0;
		if (!more && due_ms < 0) {
			g_clear_pointer(&m->span_buf, g_free);	/* 16 MiB: only while needed */
			m->span_cap = 0;
			prepared_drop_idle(m);
			if (prepared(m))	/* wake for its expiry */
				due_ms = (int)((m->prepared_expire_ns - now_ns()) / 1000000 + 1);
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
	m->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->wake_fd < 0) {
		int ret = -errno;

		vt_pager_close(&m->pager);
		g_free(m->orders);
		g_free(m);
		return ret;
	}
	m->thread = g_thread_try_new("vtier-ctier", mover_thread, m, &e);
	if (!m->thread) {
		close(m->wake_fd);
		vt_pager_close(&m->pager);
		g_free(m->orders);
		g_free(m);
		return -EAGAIN;
	}
	*out = m;
	return 0;
}

static void kick(struct vt_ctier_mover *m)
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
	kick(m);
	g_thread_join(m->thread);
	close(m->wake_fd);
	vt_pager_close(&m->pager);
	g_cond_clear(&m->discard_done);
	g_mutex_clear(&m->lock);
	g_free(m->orders);
	g_free(m->span_buf);
	vt_prepared_free(m->prepared);
	g_free(m);
}

void vt_ctier_mover_set_prepared(struct vt_ctier_mover *m, struct vt_prepared *p,
				 unsigned int expire_ms)
{
	struct vt_prepared_stats st;

	if (!m || !p || prepared(m)) {
		vt_prepared_free(p);
		return;
	}
	vt_prepared_stop(p);
	vt_prepared_get_stats(p, &st);
	g_mutex_lock(&m->lock);
	m->stats.prepared_pages = st.pages;
	m->stats.prepared_bytes = st.bytes;
	m->stats.prepared_ns = st.ns;
	m->prepared_expire_ns = now_ns() + expire_ms * 1000000ull;
	__atomic_store_n(&m->prepared, p, __ATOMIC_RELEASE);
	g_mutex_unlock(&m->lock);
	kick(m);
}

/* An order (@tier: store tier, -1 fetch) or a discard (TIER_DISCARD: its own ring). */
static int queue(struct vt_ctier_mover *m, uint64_t offset, uint64_t len, int tier, bool bulk)
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
	kick(m);
	return 0;
}

int vt_ctier_mover_evict(struct vt_ctier_mover *m, uint64_t offset, uint64_t len,
			 unsigned int tier)
{
	return queue(m, offset, len, (int)tier, false);
}

int vt_ctier_mover_evict_bulk(struct vt_ctier_mover *m, uint64_t offset, uint64_t len,
			      unsigned int tier)
{
	return queue(m, offset, len, (int)tier, true);
}

void vt_ctier_mover_set_background(struct vt_ctier_mover *m, bool on)
{
	__atomic_store_n(&m->background, on, __ATOMIC_RELAXED);
	kick(m);
}

unsigned int vt_ctier_mover_set_store_threads(struct vt_ctier_mover *m, unsigned int n)
{
	g_mutex_lock(&m->lock);
	m->store_threads = CLAMP(n, 1, STORE_THREADS_MAX);
	n = m->store_threads;
	g_mutex_unlock(&m->lock);
	return n;
}

void vt_ctier_mover_track_reads(struct vt_ctier_mover *m, bool on, uint64_t bound)
{
	g_mutex_lock(&m->lock);
	m->track_reads = on;
	m->read_bound = bound;
	g_mutex_unlock(&m->lock);
	kick(m);
}

uint64_t vt_ctier_mover_reads_held(struct vt_ctier_mover *m)
{
	uint64_t n;

	g_mutex_lock(&m->lock);
	n = m->rr_bytes;
	g_mutex_unlock(&m->lock);
	return n;
}

int vt_ctier_mover_fetch(struct vt_ctier_mover *m, uint64_t offset, uint64_t len)
{
	return queue(m, offset, len, -1, false);
}

int vt_ctier_mover_discard(struct vt_ctier_mover *m, uint64_t offset, uint64_t len)
{
	return queue(m, offset, len, TIER_DISCARD, false);
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
