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
 */
#ifndef VTIER_MOVERS_CTIER_MEDIUM_H
#define VTIER_MOVERS_CTIER_MEDIUM_H

#include <stdbool.h>
#include <stdint.h>

#include "ctier.h"

struct vt_medium {
	enum vt_medium_kind kind;
	int fd;
	uint8_t *map;			/* node: the whole file, mapped; file: NULL */
	uint64_t size;
	char placement[32];		/* "bind:N", "preferred:N", "disk" */
};

/*
 * Open (@create: make, replacing any file, sparse, of @size bytes) the pool
 * file @path. Reopen takes the size of the file. 0 or -errno.
 */
int vt_medium_open(struct vt_medium *m, const char *path, enum vt_medium_kind kind, int node,
		   uint64_t size, bool create);
void vt_medium_close(struct vt_medium *m);
/* Back [@off, @off + @len) with storage: 0, -ENOSPC, -errno. */
int vt_medium_commit(struct vt_medium *m, uint64_t off, uint64_t len);
/* Give the storage of [@off, @off + @len) back (hole punched; reads as zero). */
void vt_medium_release(struct vt_medium *m, uint64_t off, uint64_t len);
int vt_medium_write(struct vt_medium *m, uint64_t off, const void *buf, uint32_t len);
/*
 * The @len bytes at @off: a pointer into the mapping (node) or @scratch filled
 * with pread (file). NULL on an I/O error or a range outside the file.
 */
const void *vt_medium_read(struct vt_medium *m, uint64_t off, uint32_t len, void *scratch);
/* Bytes of storage the file holds now (st_blocks). */
uint64_t vt_medium_resident(struct vt_medium *m);

#endif
