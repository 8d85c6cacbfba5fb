/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The compressed-tier mover of one handed-off memory backend: two threads
 * that own the backend's pager (memfd + userfaultfd) and use its page store.
 * The fault thread serves faults and nothing else (a stored page is
 * decompressed, checked and put back with UFFDIO_COPY; a page never evicted
 * is zeros; a page whose checksum fails is poisoned, never handed out), so
 * a fault never waits for compression. The mover thread carries out queued
 * orders a few pages at a time: evict a range into a compressed tier, fetch
 * a range back into the memfd, discard, punch an outgoing migration's fills
 * again, keep the remote tiers' copies.
 *
 * An eviction must see the writes that race with it (handoff_pager.h): the
 * mover thread fences the range it works on, the fault thread leaves that
 * range's faults queued until the commit has read them, and a range is
 * fenced only where no fault's service may still fill (ctier_mover_int.h).
 * Nothing here runs on the daemon's main loop; orders are queued without
 * waiting and their outcome shows in the stats and in the store.
 */
#ifndef VTIER_MOVERS_CTIER_MOVER_H
#define VTIER_MOVERS_CTIER_MOVER_H

#include <stdint.h>

#include "ctier.h"
#include "handoff_pager.h"
#include "latency_hist.h"

/*
 * Streams store-ahead follows at once (stored_ahead): a guest's vCPUs (or
 * threads) each reading a range back, their faults in turn; a fault that
 * follows none of them takes the one used longest ago. A fault tries each (a
 * compare or two for a stream it is far from): 16 cost nothing next to a
 * decompression.
 */
#define VT_CTIER_AHEAD_STREAMS 16

struct vt_ctier_mover_stats {
	uint64_t faults_stored;		/* MISSING faults served from the store */
	uint64_t faults_zero;		/* MISSING faults on pages never evicted: zeros */
	uint64_t zero_filled_around;	/* pages zero-filled with them (fault-around) */
	uint64_t faults_wp;		/* write-protect faults resolved */
	uint64_t faults_already;	/* a fault raised twice: the page was there */
	uint64_t stored_ahead;		/* stored pages served after a stored fault in order */
	uint64_t poisoned;		/* checksum failed: the page was poisoned */
	uint64_t poison_unsupported;	/* ... and the uffd could not poison: left waiting */
	uint64_t faults_waited;		/* faults on a remote page no server answered for yet:
					   the vCPU waits, asked again every turn */
	uint64_t waiting_now;		/* ... of them, waiting now */
	uint64_t remote_repaired;	/* remote copies re-created by the upkeep */
	uint64_t evicted;		/* pages moved into the store */
	uint64_t evict_e2big;		/* did not compress enough: stayed resident */
	uint64_t evict_busy;		/* a write raced: stayed resident */
	uint64_t evict_absent;		/* not in the memfd (evicted already, never touched) */
	uint64_t evict_nospc;		/* the tier's pool was full */
	uint64_t evict_failed;		/* any other error */
	uint64_t fetched;		/* pages brought back on order (promotion) */
	/* an outgoing migration's reads (vt_ctier_mover_track_reads) */
	uint64_t zero_repunched;	/* zero fills punched again */
	uint64_t read_through;		/* stored pages served with their copy kept */
	uint64_t read_repunched;	/* ... punched again, unchanged: the copy serves */
	uint64_t read_dirtied;		/* ... written since: page kept, copy dropped */
	uint64_t repunch_runs;		/* ranges punched again (one protection each) */
	uint64_t reads_early;		/* ... before their second: over the bound */
	uint64_t reads_waits;		/* times new faults waited for a punch: over the bound */
	uint64_t reads_untracked;	/* fills past the tracked ranges: not punched */
	uint64_t read_around;		/* of read_through: filled ahead of their fault */
	uint64_t evict_read_held;	/* pages an eviction left to their range's punch */
	uint64_t zero_map_set;		/* zero-map bits set (vt_ctier_mover_set_zero_map) */
	uint64_t discard_runs;		/* discard slices done (guest FREE/INFLATE hints) */
	uint64_t discarded_resident_bytes;	/* ... memfd bytes they punched that held data */
	uint64_t discarded_stored_pages;	/* ... stored copies they dropped */
	uint64_t evict_runs;		/* runs with a page present (one protection + one punch each) */
	uint64_t evict_ns;		/* time spent evicting, compression included: */
	uint64_t evict_protect_ns;	/* ... protecting and copying runs */
	uint64_t evict_store_ns;	/* ... storing the copies (compression) */
	uint64_t evict_punch_ns;	/* ... punching and unprotecting */
	uint64_t span_faults;		/* faults served while the mover worked elsewhere */
	uint64_t span_faults_ns;	/* ... the time they took (beside the mover's) */
	uint64_t fence_waits;		/* times the mover waited for a fault's service to
					   leave the range it was to work on */
	uint64_t fence_wait_ns;		/* ... the time it waited */
	/* a destination's copies made during precopy (vt_ctier_mover_set_prepared) */
	uint64_t prepared_pages;	/* copies made */
	uint64_t prepared_bytes;	/* ... their compressed bytes */
	uint64_t prepared_ns;		/* ... the time it took, before the hand-off */
	uint64_t prepared_used;		/* pages stored from their copy, not compressed again */
	uint64_t prepared_stale;	/* copies that did not match their page: compressed again */
	uint64_t fetch_ns;		/* time spent fetching on order */
	uint64_t orders_queued;
	uint64_t orders_dropped;	/* the queue was full */
	uint64_t errors;		/* uffd errors other than a gone QEMU */
	struct vt_latency_hist fault_ns;	/* store faults: read to UFFDIO_COPY done */
	struct vt_latency_hist idle_fault_ns;	/* ... those served with the mover idle: no
						   fence when taken, and no order, discard
						   or slice under way when done */
	struct vt_latency_hist zero_ns;		/* zero faults */
	/* by store tier: pages evicted into it, served back from it, and how fast */
	uint64_t evicted_by_tier[VT_CTIER_MAX];
	uint64_t faults_by_tier[VT_CTIER_MAX];
	struct vt_latency_hist tier_ns[VT_CTIER_MAX];
};

struct vt_ctier_mover;

/*
 * Called once, from either of the mover's threads, when the backend can no
 * longer be served (QEMU gone: -ESRCH, or a uffd error); that thread then
 * stops and waits for vt_ctier_mover_stop(). Must not call back into the
 * mover.
 */
typedef void (*vt_ctier_mover_failed_fn)(struct vt_ctier_mover *m, int err, void *opaque);

/*
 * Start the threads. @pager is open (the mover owns it from here, even on
 * failure, and closes it on stop); @store stays the caller's and must
 * outlive the mover. @fill_node >= 0: pages put back are allocated there
 * (MPOL_PREFERRED of the fault thread). Returns 0 or -errno.
 */
int vt_ctier_mover_start(struct vt_pager *pager, struct vt_store *store, int fill_node,
			 vt_ctier_mover_failed_fn failed, void *opaque, struct vt_ctier_mover **out);
/* Stop and join the threads; close the pager (QEMU keeps its fds). NULL is fine. */
void vt_ctier_mover_stop(struct vt_ctier_mover *m);

/*
 * Queue: evict [@offset, @offset + @len) of the backend into store tier @tier
 * (tiers are numbered fastest first). Pages already in @tier or a colder one
 * stay there; pages in a faster one move down.
 */
int vt_ctier_mover_evict(struct vt_ctier_mover *m, uint64_t offset, uint64_t len,
			 unsigned int tier);
/*
 * The same, for a placement known ahead (a migration profile's cold chunks):
 * taken with the bulk orders queued right after it that go on where it ends
 * (into any tier), in spans of up to 16 MiB, each with one write-protection
 * and one punch (handoff_pager.h). While a span is stored, faults elsewhere
 * are served as they come; a write into the span waits for its commit.
 */
int vt_ctier_mover_evict_bulk(struct vt_ctier_mover *m, uint64_t offset, uint64_t len,
			      unsigned int tier);
/*
 * Threads that store a bulk span's copies, the mover's own included (1-8;
 * by default a quarter of the CPUs, at most 8): placement after a migration
 * is a burst of compression that idle CPUs shorten. Returns the count set.
 */
/*
 * Give the mover a destination's copies made during precopy (taken; stopped
 * here if still copying): bulk evictions store a page from its copy when it
 * matches (vt_store_put_copy()). Freed once the queue drains after a bulk
 * eviction, or @expire_ms from now if none comes.
 */
struct vt_prepared;
void vt_ctier_mover_set_prepared(struct vt_ctier_mover *m, struct vt_prepared *p,
				 unsigned int expire_ms);
unsigned int vt_ctier_mover_set_store_threads(struct vt_ctier_mover *m, unsigned int n);
/*
 * Background placement (@on), for a destination while the incoming migration
 * still writes guest RAM: from its next turn the mover thread (and the span
 * helpers it starts after) runs at nice 10, below the migration it shares
 * the host's CPUs with (not SCHED_IDLE: a busy host would starve the
 * placement). The fault thread stays at nice 0. Off: nice 0 again (needs
 * CAP_SYS_NICE or RLIMIT_NICE; a refusal is logged, debug).
 */
void vt_ctier_mover_set_background(struct vt_ctier_mover *m, bool on);
/*
 * An outgoing migration reads every page of guest RAM: each never-touched
 * one it reads is zero-filled into the memfd, each evicted one filled from
 * the store (MISSING faults). With @on, a stored page is served with its
 * copy kept (read through), and the thread keeps the ranges it fills (up to
 * 2048, consecutive fills merged up to 4 MiB; a stored page past them is
 * taken back for good, its copy dropped) and punches each again a
 * second after its last fill: the pages still all zeros, or still equal to
 * their stored copy byte for byte; a page written since keeps its page and loses
 * its copy. Write-protected meanwhile: a racing write keeps its page. While
 * the ranges held exceed @bound bytes (0: no bound), the oldest goes as soon
 * as it is 50 ms old, and new faults wait until the ranges held are under
 * the bound again (the migration thread reads at the rate of the punches).
 * Off: what is still tracked is punched again at once (as above: zeros and
 * unchanged pages only), and fills are no longer kept.
 */
void vt_ctier_mover_track_reads(struct vt_ctier_mover *m, bool on, uint64_t bound);
/* Bytes of the ranges tracked and not punched again yet (the source's extra). */
uint64_t vt_ctier_mover_reads_held(struct vt_ctier_mover *m);
/*
 * The zero map (@map: a bit per page of the backend, zeroed, the caller's,
 * to outlive the mover; set once): while reads are tracked, a bit set says
 * the page was a hole without a copy, all zeros, when it was read, and that
 * what it held since the guest wrote; a clear bit says nothing. Set by a
 * scan of the backend's holes when tracking starts and by the zero pages
 * punched again; the fault thread clears a page's bit before it fills it;
 * all cleared when tracking ends. For an outgoing migration's reader, which
 * then sends the page as zeros without reading it (ctier_mover_zero_map.c).
 */
void vt_ctier_mover_set_zero_map(struct vt_ctier_mover *m, uint64_t *map);
/* Queue: bring the stored pages of [@offset, @offset + @len) back into the memfd. */
int vt_ctier_mover_fetch(struct vt_ctier_mover *m, uint64_t offset, uint64_t len);
/*
 * Queue: discard [@offset, @offset + @len) (guest memory the guest reported
 * free): its stored copies are dropped and it is punched out of the memfd, so
 * that the next touch reads zeros. Done before any eviction or fetch. Only
 * for ranges whose hint the caller has not acknowledged yet: the caller waits
 * until vt_ctier_mover_discards_pending() is 0, or cancels, before it
 * acknowledges (docs/abi-guest.md). 0, -EINVAL, -ENOSPC (queue full).
 */
int vt_ctier_mover_discard(struct vt_ctier_mover *m, uint64_t offset, uint64_t len);
/* Discards queued or in progress. */
unsigned int vt_ctier_mover_discards_pending(struct vt_ctier_mover *m);
/* Drop the queued discards and wait for the one in progress (one slice, 2 MiB). */
void vt_ctier_mover_discard_cancel(struct vt_ctier_mover *m);
/* Orders not yet carried out, the one in progress included: 0 when idle. */
unsigned int vt_ctier_mover_backlog(struct vt_ctier_mover *m);
void vt_ctier_mover_get_stats(struct vt_ctier_mover *m, struct vt_ctier_mover_stats *out);

#endif
