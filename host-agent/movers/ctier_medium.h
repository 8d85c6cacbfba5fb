/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Media of the compressed tiers' pools: a file that holds the pool's bytes.
 *  - node: a file in the store directory (tmpfs), mapped MAP_SHARED and bound
 *    to a NUMA node with mbind(MPOL_BIND), MPOL_PREFERRED if binding fails;
 *    reads point straight into the mapping.
 *  - file: a file on disk for the coldest data, pread/pwrite.
 * Either way the bytes are in the page cache when a write returns, so they
 * survive kill -9 of the agent. Pool pages are committed (fallocate) before
 * they are written: a full filesystem is -ENOSPC, never SIGBUS.
 *
 * A node medium is mapped in segments, on demand, never as a whole: the
 * address space a pool takes follows what it holds, not its size (a pool
 * sized for a sparse 16 TiB backend holding 4 MiB maps 16 MiB). Segment 0
 * covers [0, VT_SEG0), segment k >= 1 [VT_SEG0 << (k - 1), VT_SEG0 << k):
 * mapped in order, so [0, mapped) is addressable and the mapping is at most
 * twice the highest byte in use (or VT_SEG0), in at most 64 mappings.
 */
#ifndef VTIER_MOVERS_CTIER_MEDIUM_H
#define VTIER_MOVERS_CTIER_MEDIUM_H

#include <stdbool.h>
#include <stdint.h>

#include "ctier.h"

#define VT_SEG0 (16ULL << 20)
#define VT_SEGS 64

/*
 * Segments of a shared mapping of @fd over [0, limit). A pointer into a
 * mapped segment stays valid until vt_segmap_fini(). Not thread safe: the
 * owner serialises (the store's lock).
 */
struct vt_segmap {
	int fd;
	int node;			/* mbind each segment to it; -1: no binding */
	uint64_t limit;			/* bytes the segments may cover */
	uint64_t mapped;		/* [0, mapped) is mapped */
	unsigned int nr;		/* segments mapped */
	uint8_t *seg[VT_SEGS];
	char placement[32];		/* "bind:N", "preferred:N": the weakest a segment got */
};

void vt_segmap_init(struct vt_segmap *sm, int fd, int node, uint64_t limit);
/* Map segments until [0, @end) is addressable: 0, -ENOSPC (past the limit), -errno. */
int vt_segmap_reserve(struct vt_segmap *sm, uint64_t end);
/* Where byte @off is, if mapped: a pointer and the bytes to the segment's end. */
uint8_t *vt_segmap_at(const struct vt_segmap *sm, uint64_t off, uint64_t *room);
void vt_segmap_fini(struct vt_segmap *sm);

struct vt_medium {
	enum vt_medium_kind kind;
	int fd;
	struct vt_segmap map;		/* node: the file, mapped as it is used;
					   map.placement: "bind:N", "preferred:N", "disk" */
	uint64_t size;
};

/*
 * Open the pool file @path (@create: make it, O_EXCL, sparse, of @size
 * bytes: -EEXIST if there is one). Reopen takes the size of the file. A node
 * medium maps and binds its first segment here, so a node that cannot hold
 * it fails the open. 0 or -errno.
 */
int vt_medium_open(struct vt_medium *m, const char *path, enum vt_medium_kind kind, int node,
		   uint64_t size, bool create);
void vt_medium_close(struct vt_medium *m);
/*
 * Make [0, @end) addressable (node: the segments under it mapped), as
 * vt_medium_commit() does for what it commits: at reopen, for the objects
 * the index names. 0 or -errno.
 */
int vt_medium_map(struct vt_medium *m, uint64_t end);
/* Back [@off, @off + @len) with storage, mapped: 0, -ENOSPC, -errno. */
int vt_medium_commit(struct vt_medium *m, uint64_t off, uint64_t len);
/* Give the storage of [@off, @off + @len) back (hole punched; reads as zero). */
void vt_medium_release(struct vt_medium *m, uint64_t off, uint64_t len);
/* Write into committed bytes (node: mapped by the commit). 0, -EINVAL, -errno. */
int vt_medium_write(struct vt_medium *m, uint64_t off, const void *buf, uint32_t len);
/*
 * The @len bytes at @off: a pointer into the mapping (node, within one
 * segment), or @scratch filled with them (file: pread; node: an object
 * across two segments). NULL on an I/O error or a range outside the file or
 * not mapped.
 */
const void *vt_medium_read(struct vt_medium *m, uint64_t off, uint32_t len, void *scratch);
/* Bytes of storage the file holds now (st_blocks). */
uint64_t vt_medium_resident(struct vt_medium *m);
/* Address space the medium maps now (node), 0 for a file medium. */
uint64_t vt_medium_mapped(const struct vt_medium *m);

#endif
