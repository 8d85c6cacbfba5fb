/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The zswap mover: the compressed tier of a VM whose QEMU did not hand its
 * memory over (stock QEMU). Cold ranges of the QEMU process are paged out
 * with process_madvise(MADV_PAGEOUT); where the host has swap with zswap in
 * front, the kernel compresses them into zswap's pool, and a guest access
 * faults them back like any swapped page. Works for anonymous guest RAM
 * (memory-backend-ram) and shared memory alike; pages the kernel cannot
 * reclaim (pinned, locked) simply stay.
 */
#ifndef VTIER_MOVERS_ZSWAP_H
#define VTIER_MOVERS_ZSWAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Can this host page out to zswap? 0, or -ENOENT (no swap), -EOPNOTSUPP
 * (zswap disabled or absent), with @why (one line) saying which.
 */
int vt_zswap_probe(const char *root, char *why, size_t why_len);

/* A process to page out of: a pidfd (the QEMU process, not a reused pid). */
struct vt_zswap {
	pid_t pid;
	int pidfd;
};

int vt_zswap_open(struct vt_zswap *z, pid_t pid);
void vt_zswap_close(struct vt_zswap *z);
/* Page out [@hva, @hva + @len) of the process. Bytes advised, or -errno (-ESRCH: gone). */
int64_t vt_zswap_pageout(struct vt_zswap *z, uint64_t hva, uint64_t len);
/* Ask the kernel to bring [@hva, @hva + @len) back from swap (MADV_WILLNEED). */
int64_t vt_zswap_willneed(struct vt_zswap *z, uint64_t hva, uint64_t len);
/*
 * Of the pages at @hva + i * @stride (i < @n), which are swapped out (zswap
 * or disk)? @swapped[i] is set; returns 0 or -errno. From /proc/PID/pagemap.
 */
int vt_zswap_query(struct vt_zswap *z, uint64_t hva, uint64_t stride, unsigned int n,
		   bool *swapped);

#endif
