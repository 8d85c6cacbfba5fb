/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What an agent does with the two fds of a hand-off: move a guest page out
 * of the memfd and put it back when the guest (or QEMU) touches it.
 *
 * Eviction write-protects the page first, copies it out with pread() (never
 * through a mapping: touching a hole through a shared mapping would fill it
 * with zeros), gives up if a write to the page raced with the copy, and
 * only then punches the page out of the memfd. The next access to it raises
 * a MISSING fault on the userfaultfd, which the agent serves with
 * vt_pager_fill() from wherever it keeps the copy. A page the guest never
 * touched also faults as MISSING the first time: the agent fills zeros.
 *
 * Works on tmpfs memfds (memory-backend-memfd, -shm, files in /dev/shm).
 * Two threads may drive one pager: one serving faults, one evicting (the
 * faults read ahead are kept under the pager's own lock, the counters are
 * atomic); the callers keep them off each other's pages (ctier_mover_int.h:
 * the fence). Anything else about the pager is one thread's.
 */
#ifndef VTIER_IFACE_HANDOFF_PAGER_H
#define VTIER_IFACE_HANDOFF_PAGER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <linux/userfaultfd.h>

#include <vtier/handoff.h>

#define VT_PAGER_PENDING_MAX 256

struct vt_pager {
	int memfd;
	int uffd;
	uint64_t hva;		/* QEMU's address of the backend: uffd speaks it */
	uint64_t size;
	uint64_t page_size;
	uint64_t fd_offset;	/* memfd offset of the backend's first byte */
	uint64_t ioctls;	/* what UFFDIO_REGISTER allowed */
	/*
	 * faults read while evicting, handed out first by vt_pager_next_fault(),
	 * under @ring; @ring_efd (-1: none) is written when a read queued some,
	 * so that the thread serving them wakes (a poll() on the uffd no longer
	 * reports them)
	 */
	pthread_mutex_t ring;
	int ring_efd;
	struct uffd_msg pending[VT_PAGER_PENDING_MAX];
	unsigned int pending_head;
	unsigned int n_pending;
	/* what happened so far (atomic) */
	uint64_t nr_evicted;
	uint64_t nr_evict_aborted;	/* the guest wrote the page meanwhile */
	uint64_t nr_filled;		/* MISSING faults served with data */
	uint64_t nr_zero_filled;	/* MISSING faults on never-touched pages */
	uint64_t nr_already_present;	/* a fault raised twice: nothing to do */
	uint64_t nr_unprotected;	/* write-protect faults resolved */
};

/* One fault, as the offset of its page in the backend. */
struct vt_pager_fault {
	uint64_t offset;
	bool write;		/* the access was a write */
	bool wp;		/* a write-protect fault (else MISSING) */
};

/*
 * Take the fds of an accepted HELLO (the pager owns them from here, even on
 * failure). Returns 0, -ENOTSUP (not tmpfs, or the uffd lacks COPY/WP
 * ioctls), or another negative errno.
 */
int vt_pager_open(struct vt_pager *p, const struct vtier_handoff_hello *hello, int memfd, int uffd);
/* Close both fds. QEMU keeps its own and hands them to the next agent. */
void vt_pager_close(struct vt_pager *p);
/*
 * Move an open pager from @src to @dst (its lock made anew: a mutex is not
 * copied); @src is left closed without closing the fds.
 */
void vt_pager_move(struct vt_pager *dst, struct vt_pager *src);
/*
 * Have the pager write 1 to the eventfd @efd (-1: none; not owned) whenever
 * it reads faults ahead into its ring: the thread that serves faults polls it.
 */
void vt_pager_set_ring_efd(struct vt_pager *p, int efd);
/* Faults read ahead and not handed out yet (a snapshot). */
unsigned int vt_pager_queued(struct vt_pager *p);

/*
 * Is the page at @offset in the memfd? 1 yes, 0 no (a hole: evicted or never
 * touched), negative errno on error.
 */
int vt_pager_present(struct vt_pager *p, uint64_t offset);

/*
 * Evict the page at @offset in two steps, so that the caller can store the
 * copy safely before the page leaves the memfd:
 *
 * vt_pager_evict_begin() write-protects the page and copies it into @out
 * (page_size bytes). Returns 0, -ENOENT if the page is not in the memfd
 * (evicted already, or never touched), -EBUSY if a write to it is pending,
 * or another negative errno; on any error the page is left as it was.
 *
 * vt_pager_evict_commit() punches the page out of the memfd, unless a write
 * raced in the meantime (-EBUSY: the page stays, the copy is stale and must
 * be dropped), and drops the protection. Returns 0 once the page is gone:
 * the next access faults. Both are the run form below with a run of one.
 *
 * vt_pager_evict_abort() drops the protection and wakes any writer.
 *
 * Both steps read the faults the kernel has queued (to see racing writes)
 * and keep them in the pager: a poll() on the uffd no longer reports them.
 * Call vt_pager_next_fault() until -EAGAIN after evicting.
 */
int vt_pager_evict_begin(struct vt_pager *p, uint64_t offset, void *out);
int vt_pager_evict_commit(struct vt_pager *p, uint64_t offset);
void vt_pager_evict_abort(struct vt_pager *p, uint64_t offset);

/*
 * The same for a span of up to VT_PAGER_SPAN_MAX pages (16 MiB of 4 KiB
 * pages), holes allowed, so that a batch costs one write-protection, one
 * read, usually one punch and one unprotection instead of one of each per
 * page: each of those makes KVM zap the guest's nested mappings and flush
 * them on every vCPU, an exit of every running vCPU. The masks are arrays of
 * VT_PAGER_SPAN_WORDS(pages) words, bit i of word i / 64 for page i
 * (vt_pager_mask_has(), vt_pager_mask_set()). Faults of the span's pages wait
 * until its commit (the caller keeps the time between begin and commit
 * short); faults elsewhere may be served meanwhile with
 * vt_pager_next_fault_outside(), by fills that stay out of the span. Movers
 * take 32 pages at a time, bulk placement (a migration profile's cold
 * chunks) spans of up to 16 MiB, serving other faults while they store.
 *
 * vt_pager_present_span() sets bit i of @present if the i-th page of
 * [@offset, @offset + @len) is in the memfd. 0 or a negative errno.
 *
 * vt_pager_evict_begin_span() finds the pages of the span that are in the
 * memfd (@present), write-protects from the first to the last of them, and
 * copies each into @out at its place in the span (@len bytes). 0 (with
 * @present empty: nothing to do, nothing protected), or a negative errno with
 * the span left as it was.
 *
 * vt_pager_evict_commit_span() punches the pages of @keep (a subset of
 * @present) that no write waits for, then drops the protection of the span
 * and wakes any writer waiting on it. @punched gets the pages that left the
 * memfd (set on error too: those are gone). 0 or a negative errno.
 */
#define VT_PAGER_SPAN_MAX 4096
#define VT_PAGER_SPAN_WORDS(pages) (((pages) + 63) / 64)
int vt_pager_present_span(struct vt_pager *p, uint64_t offset, uint64_t len, uint64_t *present);
int vt_pager_evict_begin_span(struct vt_pager *p, uint64_t offset, uint64_t len, void *out,
			      uint64_t *present);
int vt_pager_evict_commit_span(struct vt_pager *p, uint64_t offset, uint64_t len,
			       const uint64_t *present, const uint64_t *keep, uint64_t *punched);

static inline bool vt_pager_mask_has(const uint64_t *mask, uint64_t i)
{
	return (mask[i / 64] >> (i % 64)) & 1;
}

static inline void vt_pager_mask_set(uint64_t *mask, uint64_t i)
{
	mask[i / 64] |= 1ull << (i % 64);
}

/* The next fault to serve: 0 and @f filled, -EAGAIN if none, -errno. */
int vt_pager_next_fault(struct vt_pager *p, struct vt_pager_fault *f);
/*
 * The same, but the faults of [@offset, @offset + @len) stay queued, in
 * their order: between vt_pager_evict_begin_span() and its commit, faults
 * elsewhere are served while the span's wait for the commit (which sees
 * the span's writes among them). -ERANGE (one taken) outside the backend.
 */
int vt_pager_next_fault_outside(struct vt_pager *p, uint64_t offset, uint64_t len,
				struct vt_pager_fault *f);

/*
 * Serve a MISSING fault: put @data (NULL: zeros) at @offset and wake every
 * thread waiting on it. Returns 1 if the kernel took the page, 0 if a page
 * was already there (the fault was raised twice; its waiters are woken),
 * negative errno otherwise (-ESRCH: QEMU is gone).
 */
int vt_pager_fill(struct vt_pager *p, uint64_t offset, const void *data);

/*
 * The saved copy of the page at @offset is damaged: install a poison marker
 * (UFFDIO_POISON, Linux 6.6) so the guest's access raises a memory error,
 * as with a failed DRAM page, and wake the waiters. The write-protection an
 * eviction left on the page is dropped first (the marker it leaves would
 * make the poison fail). Returns 0 when poisoned, 1 when a page is there
 * after all (nothing poisoned; the waiters are woken), -ENOTSUP when the
 * uffd cannot poison (the caller then leaves the fault waiting: never
 * zeros), or another negative errno.
 */
int vt_pager_poison(struct vt_pager *p, uint64_t offset);

/*
 * Fill every hole of [@offset, @offset + @len) with zeros (UFFDIO_ZEROPAGE),
 * skipping pages that are there; with @wake, wake every thread waiting in the
 * range (else the caller does, with vt_pager_wake()). For pages the caller
 * knows were never evicted. Returns the pages filled, or a negative errno
 * (-ENOTSUP without ZEROPAGE, -ESRCH: QEMU is gone).
 */
int64_t vt_pager_zero_range(struct vt_pager *p, uint64_t offset, uint64_t len, bool wake);
/* Wake every thread waiting on a fault in [@offset, @offset + @len). */
int vt_pager_wake(struct vt_pager *p, uint64_t offset, uint64_t len);

/* Serve a write-protect fault: drop the protection and wake the writers. */
int vt_pager_unprotect(struct vt_pager *p, uint64_t offset, uint64_t len);

/* Wake every thread sleeping on a fault of this backend. */
int vt_pager_wake_all(struct vt_pager *p);

#endif /* VTIER_IFACE_HANDOFF_PAGER_H */
