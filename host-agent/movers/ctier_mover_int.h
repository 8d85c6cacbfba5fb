/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inside the compressed-tier mover (ctier_mover.h is its contract): the
 * state of one backend's mover and the calls between its files, one job a
 * file. Two threads: the fault thread serves the guest's faults and nothing
 * else (ctier_mover_fault.c); the mover thread does the orders, discards and
 * upkeep, keeping the fault thread off the range it works on with the fence
 * (ctier_mover_fence.c). Everything runs on the mover thread unless said
 * otherwise:
 *   ctier_mover_thread.c      the two threads, their loops and the order queue
 *   ctier_mover_fence.c       the fence between them
 *   ctier_mover_fault.c       fault service, store-ahead and fault-around (the fault thread)
 *   ctier_mover_evict.c       eviction runs, bulk spans and their store helpers, fetches
 *   ctier_mover_discard.c     the guest discards' queue
 *   ctier_mover_reads.c       an outgoing migration's read-through and re-punch
 *   ctier_mover_precopy.c     a destination's copies made during precopy
 *   ctier_mover_background.c  the background nice
 * Not for any caller outside movers/ctier_mover*.c.
 */
#ifndef VTIER_MOVERS_CTIER_MOVER_INT_H
#define VTIER_MOVERS_CTIER_MOVER_INT_H

#include <errno.h>
#include <string.h>

#include <glib.h>

#include "ctier_mover.h"
#include "ctier_prepared.h"
#include "thread_ns.h"

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
#define SPAN_FAULT_PAGES 32	/* pages a storing thread takes at a time */
/*
 * A span's copies are compressed by the mover thread and up to
 * STORE_THREADS_MAX - 1 helpers started for the span (the store takes puts
 * from several threads): a destination places a whole VM's cold memory at
 * once, a burst that a host's idle CPUs shorten. By default a quarter of the
 * CPUs: the guests' vCPUs keep the rest (in L1, two vCPUs, one running the
 * guest, a second thread made placement slower). The fault thread alone serves faults.
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
/*
 * Store-ahead: a stored fault that follows the last one serves the stored
 * pages after it too, a window that grows while the faults stay in order.
 * Smaller than fault-around's: each page is a checked decompression on the
 * fault thread, and the other faults wait meanwhile. Inside the fault's
 * service window (ctier_mover_fence.c), which reaches ZERO_WIN_MAX past it.
 */
#define AHEAD_WIN_MIN (16u << 10)
#define AHEAD_WIN_MAX (64u << 10)
G_STATIC_ASSERT(2 * AHEAD_WIN_MAX <= ZERO_WIN_MAX);

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
	GThread *fault_thread;
	int fault_wake_fd;	/* eventfd: faults read ahead, a fence lowered, fills
				   punched, or stop */
	bool failed_once;	/* atomic: the failed callback was called */
	/* the fence (ctier_mover_fence.c): under range_lock */
	GMutex range_lock;
	GCond range_cv;		/* signalled when the fault thread ends a service */
	uint64_t fence_lo, fence_hi;	/* the mover thread's range (empty: none) */
	uint64_t serve_lo, serve_hi;	/* what the fault thread's service may fill */

	GMutex lock;		/* orders, discards, stats, stop */
	struct mover_order *orders;
	unsigned int head, n;
	bool working;			/* a slice taken off the queue is being done */
	struct mover_order discards[DISCARDS_MAX];	/* tier TIER_DISCARD */
	unsigned int d_head, d_n;
	bool discarding;		/* a discard slice is being done */
	GCond discard_done;		/* signalled when a discard slice ends */
	bool stop;
	uint64_t zero_next, zero_win;	/* fault-around: the fault thread's */
	/*
	 * store-ahead (the fault thread's), per stream: the page after its last
	 * stored fault, the end of that one's window, the next window, and when
	 * it was last used (ahead_tick counts the stored faults)
	 */
	struct ahead_stream {
		uint64_t next, end, win, used;
	} ahead[VT_CTIER_AHEAD_STREAMS];
	uint64_t ahead_tick;
	/* a damaged copy store-ahead met, + 1 (0: none): no window reads it again */
	uint64_t ahead_bad;
	uint8_t *span_buf;		/* copies of a span: thread-only, while bulk work lasts */
	uint64_t span_cap;		/* its bytes */
	unsigned int store_threads;	/* lock: threads storing a bulk span, the mover's included */
	bool track_reads;		/* lock: an outgoing migration's fills, to punch again */
	uint64_t read_bound;		/* lock: bytes held past which ranges go early, 0: none */
	struct read_range {
		uint64_t offset, len, filled_ns;
	} rr[READ_RANGES_MAX];		/* lock: fills while tracking, oldest first */
	unsigned int rr_head, rr_n;
	uint64_t rr_bytes;		/* lock: their length */
	/* the zero map (ctier_mover_zero_map.c): set once, atomic; NULL: none */
	uint64_t *zero_map;
	uint64_t zero_scan_next;	/* lock: where its scan goes on; UINT64_MAX: done */
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
	/* remote tiers: faults whose copy no server gave yet (the fault thread's) */
	GArray *waiting;		/* u64 offsets */
	uint64_t remote_next_ns;	/* next vt_store_remote_tick(); UINT64_MAX: none */
};

#define REMOTE_TICK_NS (100ull * 1000 * 1000)
/*
 * Copies re-created per upkeep: each is a fetch and a put, and faults wait
 * meanwhile (16: a few ms on a host, about 160 ms in the emulated testbed)
 */
#define REMOTE_REPAIR_BUDGET 16
#define WAITING_RETRY_MS 10

#define STAT_ADD(m, field, v) do {		\
	g_mutex_lock(&(m)->lock);		\
	(m)->stats.field += (v);		\
	g_mutex_unlock(&(m)->lock);		\
} while (0)

/* The prepared copies, if any (set once by another thread). */
static inline struct vt_prepared *ctm_prepared(struct vt_ctier_mover *m)
{
	return __atomic_load_n(&m->prepared, __ATOMIC_ACQUIRE);
}

/* ctier_mover_thread.c: the queue, the wake-ups, a failure */
void ctm_kick(struct vt_ctier_mover *m);
void ctm_fault_kick(struct vt_ctier_mover *m);
/* An order (@tier: store tier, -1 fetch) or a discard (TIER_DISCARD: its own ring). */
int ctm_queue(struct vt_ctier_mover *m, uint64_t offset, uint64_t len, int tier, bool bulk);
uint64_t ctm_take_slice(struct mover_order *q, unsigned int size, unsigned int *head,
			unsigned int *n, uint64_t most, struct mover_order *o);

/*
 * ctier_mover_fence.c. The mover thread: ctm_fence() raises the fence over
 * [@offset, @offset + @len), waiting until the fault thread's service is
 * out of it; ctm_unfence() lowers it and wakes the fault thread. The fault
 * thread: ctm_take_fault() takes the next fault outside the fence (the
 * pager's next_fault; *@fenced: a fence was up) and holds its window until
 * ctm_serve_end(); ctm_serve_begin() holds the window of a fault taken
 * before (false: @offset is inside the fence, try later); ctm_fence_get()
 * reads the fence (one raised later never meets a held window).
 */
void ctm_fence(struct vt_ctier_mover *m, uint64_t offset, uint64_t len);
void ctm_unfence(struct vt_ctier_mover *m);
void ctm_fence_get(struct vt_ctier_mover *m, uint64_t *lo, uint64_t *hi);
int ctm_take_fault(struct vt_ctier_mover *m, struct vt_pager_fault *f, bool *fenced);
bool ctm_serve_begin(struct vt_ctier_mover *m, uint64_t offset);
void ctm_serve_end(struct vt_ctier_mover *m);

/* ctier_mover_fault.c: the fault thread */
int ctm_serve_faults(struct vt_ctier_mover *m, void *buf);
/*
 * The faults waiting for a remote copy asked again. 0 or -errno (the
 * backend is lost). The poll timeout the fault thread may sleep at most,
 * in *@due_ms (-1: no limit).
 */
int ctm_remote_waiting(struct vt_ctier_mover *m, void *buf, int *due_ms);
/* The mover thread: the remote tiers' upkeep when due; the ms until the next, -1: none. */
int ctm_remote_upkeep(struct vt_ctier_mover *m);

/* ctier_mover_evict.c */
int ctm_evict_run(struct vt_ctier_mover *m, uint64_t offset, uint64_t len,
		  const uint8_t *tiers, uint8_t *buf, bool bulk);
int ctm_fetch_page(struct vt_ctier_mover *m, uint64_t offset, void *buf);
uint8_t *ctm_span_buf(struct vt_ctier_mover *m, uint64_t bytes);

/* ctier_mover_discard.c */
int ctm_discard_slice(struct vt_ctier_mover *m, int *err);

/* ctier_mover_reads.c */
bool ctm_track_read(struct vt_ctier_mover *m, uint64_t offset, uint64_t len);
bool ctm_read_tracked(const struct vt_ctier_mover *m, uint64_t offset);
uint64_t ctm_read_tracked_span(const struct vt_ctier_mover *m, uint64_t offset, uint64_t n,
			       uint64_t *mask);
int64_t ctm_read_around(struct vt_ctier_mover *m, uint64_t at, uint64_t stop, uint64_t served,
			void *buf, uint64_t base, uint64_t *mask);
int ctm_repunch_slice(struct vt_ctier_mover *m, int *err);
/* Over the bound of an outgoing migration's fills: no fault is taken, punches come first. */
bool ctm_reads_over(struct vt_ctier_mover *m);
/* ctier_mover_zero_map.c */
void ctm_zero_map_clear(struct vt_ctier_mover *m, uint64_t offset, uint64_t len);
void ctm_zero_map_set_mask(struct vt_ctier_mover *m, uint64_t offset, uint64_t n,
			   const uint64_t *mask);
bool ctm_zero_map_scan_slice(struct vt_ctier_mover *m, int *err);
void ctm_zero_map_tracking(struct vt_ctier_mover *m, bool on);

/* ctier_mover_precopy.c */
void ctm_prepared_drop_idle(struct vt_ctier_mover *m);

/* ctier_mover_background.c */
void ctm_background_apply(struct vt_ctier_mover *m, int *nice_now);

#endif
