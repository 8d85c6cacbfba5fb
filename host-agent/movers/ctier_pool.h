/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Pool allocators of the compressed tiers: where in a tier's medium a
 * compressed page lives. The allocator's state is memory only; the store's
 * index is the only truth and, on reopen, claims every live object back
 * before the first allocation (so free lists rebuild from the index).
 *
 * A handle names an object within its pool; together with the object's
 * length (kept in the index entry) it gives the byte offset in the medium.
 * Pool memory is counted in 4 KiB pool pages taken from a shared page
 * allocator (struct vt_pool_pages), which commits a page in the medium before
 * it is used and punches it out when the pool frees it.
 */
#ifndef VTIER_MOVERS_CTIER_POOL_H
#define VTIER_MOVERS_CTIER_POOL_H

#include <stdint.h>

#include "ctier.h"
#include "ctier_medium.h"

#define VT_POOL_PAGE 4096U

struct vt_pool;

struct vt_pool_ops {
	const char *name;
	/* At store open, once, after the medium is open: an empty allocator. 0 or -errno. */
	int (*init)(struct vt_pool *p);
	/* At store close, and when open fails: free the allocator's memory (the medium stays). */
	void (*fini)(struct vt_pool *p);
	/*
	 * At reopen, once per live index entry, before any alloc: mark object
	 * @handle of @len bytes in use. -EUCLEAN when it lies outside the pool,
	 * has a size its slot cannot hold, or overlaps an object claimed before.
	 */
	int (*claim)(struct vt_pool *p, uint64_t handle, uint32_t len);
	/* On put, before the compressed bytes are written: room for @len bytes. 0, -ENOSPC. */
	int (*alloc)(struct vt_pool *p, uint32_t len, uint64_t *handle);
	/* On drop, after the index entry is cleared; on a put that failed after alloc. */
	void (*free)(struct vt_pool *p, uint64_t handle, uint32_t len);
	/*
	 * On every put and get: the medium offset of live object @handle of @len
	 * bytes. -EUCLEAN when no such live object exists (an index changed
	 * behind the store's back), so a bad handle never reads out of bounds.
	 */
	int (*locate)(struct vt_pool *p, uint64_t handle, uint32_t len, uint64_t *off);
	/* For stats, any time: bytes of allocator memory (descriptors, lists, maps). */
	uint64_t (*metadata_bytes)(struct vt_pool *p);
};

/*
 * Pool pages of a medium: a bitmap of used pages, grown to the highest used.
 * Freed pages give their storage back in batches (a hole punch costs a
 * syscall, and a journal write on a disk filesystem: not on every drop).
 */
struct vt_pool_pages {
	uint64_t *used;
	uint64_t words;			/* bitmap words: covers words * 64 pages */
	uint64_t nr;			/* pages of the medium */
	uint64_t in_use;
	uint64_t hint;			/* no free page below this */
	uint64_t *freed;		/* freed, storage not yet given back */
	uint64_t nr_freed, freed_cap;
};

#define VT_POOL_RELEASE_BATCH 256	/* pages: give back 1 MiB at a time */

struct vt_pool {
	const struct vt_pool_ops *ops;
	struct vt_medium *medium;
	struct vt_pool_pages pages;
	void *priv;
};

extern const struct vt_pool_ops vt_pool_zsmalloc_ops;
extern const struct vt_pool_ops vt_pool_zbud_ops;

/* Set up @p with @kind's allocator over @medium (empty). 0 or -errno. */
int vt_pool_init(struct vt_pool *p, enum vt_pool_kind kind, struct vt_medium *medium);
void vt_pool_fini(struct vt_pool *p);
/* Allocator memory, page bitmap included. */
uint64_t vt_pool_metadata_bytes(struct vt_pool *p);

/* The page allocator, for the pools. */
int vt_pool_pages_alloc(struct vt_pool *p, unsigned int n, uint64_t *first);
int vt_pool_pages_claim(struct vt_pool *p, uint64_t first, unsigned int n);
void vt_pool_pages_free(struct vt_pool *p, uint64_t first, unsigned int n);
/* One past the highest pool page in use (0: none). */
uint64_t vt_pool_pages_end(const struct vt_pool *p);
/* Give back the storage of every free page (at reopen, after the claims; at close). */
void vt_pool_trim(struct vt_pool *p);
/* Grow array *@arr of *@cap elements of @elem bytes (zeroed) to hold index @need. */
int vt_pool_grow(void **arr, uint64_t *cap, uint64_t need, size_t elem);

#endif
