/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A destination's copies made during precopy. While an incoming migration
 * brings guest RAM in, QEMU hands the memfd over early (a PREPARE HELLO,
 * docs/abi-handoff.md) with the source's profile; the chunks the profile
 * puts on a compressed tier are compressed from the memfd as their pages
 * arrive, with the codec of the tier they will go to, on a thread of their
 * own that runs only on otherwise idle CPU (SCHED_IDLE). The memfd is only read (pread: a hole reads as zeros and stays a
 * hole). Once the guest runs and the hand-off proper is accepted, the mover
 * stores a page from its copy without compressing it again when the copy
 * decompresses to the page byte for byte (vt_store_put_copy()): a page the
 * migration sent again since, or a torn read, just costs a compression.
 *
 * Copies are kept per 2 MiB of the backend; a page's copy is read only
 * after vt_prepared_stop() (no lock on the read side). What the copier holds
 * follows the data the memfd holds, not the backend's declared size: the plan
 * is kept as runs of chunks, a chunk's record made once data is found there
 * (SEEK_DATA), and the copies' memory is charged to quotas shared by several
 * copiers (a peer's, the host's) before it is allocated.
 */
#ifndef VTIER_MOVERS_CTIER_PREPARED_H
#define VTIER_MOVERS_CTIER_PREPARED_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "ctier.h"

struct vt_prepared;

struct vt_prepared_stats {
	uint64_t chunks;	/* planned chunks (VT_PREPARED_CHUNK_BYTES) */
	uint64_t pages;		/* copies made */
	uint64_t bytes;		/* their compressed bytes */
	uint64_t zero;		/* pages read as zeros or one repeated word: no copy needed */
	uint64_t refused;	/* pages that did not compress below their tier's threshold */
	uint64_t full;		/* pages not copied: their tier's capacity was reached */
	uint64_t capped;	/* pages not copied: a quota (vt_prepared_add_quota) was reached */
	uint64_t records;	/* chunk records held: planned chunks where data was found */
	uint64_t rounds;	/* passes over the planned chunks */
	uint64_t ns;		/* time spent reading and compressing */
};

#define VT_PREPARED_CHUNK_BYTES (2ull << 20)

/*
 * Copies of the backend of @size bytes at @fd_offset in @memfd (taken: closed
 * by vt_prepared_free(), also on failure) for tiers @specs (the store's, in
 * the same order; a tier's capacity_bytes bounds its copies). Page size 4 KiB.
 * NULL when @size or the specs are unusable.
 */
struct vt_prepared *vt_prepared_new(int memfd, uint64_t fd_offset, uint64_t size,
				    const struct vt_ctier_spec *specs, unsigned int nr_specs);
/*
 * Plan [@offset, @offset + @len) of the backend for tier @tier (rounded out
 * to whole chunks; a later plan of a chunk replaces an earlier one): before
 * vt_prepared_start(), or from its @plan callback. -EINVAL for a range
 * outside the backend or a tier out of range.
 */
int vt_prepared_plan(struct vt_prepared *p, uint64_t offset, uint64_t len, unsigned int tier);
typedef void (*vt_prepared_plan_fn)(struct vt_prepared *p, void *arg);
/*
 * Copy on a thread of its own until stopped: first @plan(@p, @arg) if not
 * NULL (a profile's chunks, planned off the caller's thread; @arg is then
 * freed with @free_arg), then passes over the planned chunks in address
 * order, each copying the pages present in the memfd that have no copy yet
 * (a pass that found none waits @idle_ms first). 0 or -errno (@arg freed).
 */
int vt_prepared_start(struct vt_prepared *p, unsigned int idle_ms, vt_prepared_plan_fn plan,
		      void *arg, GDestroyNotify free_arg);
/* Ask the thread to stop, without waiting for it. */
void vt_prepared_request_stop(struct vt_prepared *p);
/* Stop copying and wait for the thread (at most one page's compression). */
void vt_prepared_stop(struct vt_prepared *p);
/*
 * After vt_prepared_stop(): the copy of page @page for tier @tier (*@len
 * bytes, valid until its chunk is released), or NULL. Any thread.
 */
const void *vt_prepared_copy(const struct vt_prepared *p, uint64_t page, unsigned int tier,
			     uint32_t *len);
/* After vt_prepared_stop(): forget the copies of the chunks inside [@offset, +@len). */
void vt_prepared_release(struct vt_prepared *p, uint64_t offset, uint64_t len);
/*
 * A bound on the memory of copies, shared by the copiers it is added to
 * (refcounted, any thread): @cap bytes of their arenas (0: no bound).
 */
struct vt_prepared_quota;
struct vt_prepared_quota *vt_prepared_quota_new(uint64_t cap);
struct vt_prepared_quota *vt_prepared_quota_ref(struct vt_prepared_quota *q);
void vt_prepared_quota_unref(struct vt_prepared_quota *q);
/* Bytes charged to @q now. */
uint64_t vt_prepared_quota_used(const struct vt_prepared_quota *q);
/*
 * Before vt_prepared_start(): charge @p's copies to @q as well (at most two
 * quotas; @q referenced until vt_prepared_free()). A copy whose arena would
 * take a quota past its cap is not made (stats: capped). 0 or -EINVAL.
 */
int vt_prepared_add_quota(struct vt_prepared *p, struct vt_prepared_quota *q);
/* The copier's own bookkeeping now (plan runs, chunk records), copies not included. */
uint64_t vt_prepared_state_bytes(const struct vt_prepared *p);
/* Compressed bytes held now. */
uint64_t vt_prepared_bytes(const struct vt_prepared *p);
void vt_prepared_get_stats(struct vt_prepared *p, struct vt_prepared_stats *out);
/* Stop, close the memfd and free every copy. NULL is fine. */
void vt_prepared_free(struct vt_prepared *p);

#endif
