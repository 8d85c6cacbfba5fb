/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The NUMA mover: move_pages(2) on another process (QEMU) over host-virtual
 * ranges of guest RAM, in batches. Per-page outcomes are counted, never
 * fatal: a pinned or busy page stays where it is and shows in the counts.
 */
#ifndef VTIER_MOVERS_NUMA_H
#define VTIER_MOVERS_NUMA_H

#include <stdint.h>
#include <sys/types.h>

#define VT_NUMA_BATCH 512	/* pages per move_pages call */

struct vt_move_result {
	uint64_t pages;		/* pages asked */
	uint64_t moved;		/* now on the target node (including already there) */
	uint64_t already;	/* of those, already on the target node before */
	uint64_t busy;		/* -EBUSY: pinned or under I/O */
	uint64_t absent;	/* -ENOENT/-EFAULT: not present (never touched) or no page */
	uint64_t nomem;		/* -ENOMEM: target node full */
	uint64_t other;		/* any other per-page error */
	uint64_t retried;	/* busy pages asked again (twice at most) */
	uint64_t calls;
	uint64_t entries;	/* addresses listed (a PMD-mapped THP: one for its 512 pages) */
	uint64_t cost_ns;	/* thread CPU time in move_pages */
};

/*
 * Move [@hva, @hva + @len) of @pid to @node, page by page (4 KiB steps; a THP
 * moves whole when its head is asked and the rest report it). Returns 0 or a
 * -errno that stopped the whole move (-ESRCH: process gone, -EPERM: no
 * CAP_SYS_NICE); per-page failures are only counted in @res.
 */
int vt_numa_move(pid_t pid, uint64_t hva, uint64_t len, int node, unsigned int page_step,
		 struct vt_move_result *res);

#define VT_NUMA_RANGES_BATCH 4096	/* pages per move_pages call across ranges */
/*
 * Ranges per vt_numa_move_ranges() call in the engine (consecutive orders to
 * one tier; 16 chunks of 2 MiB are two lists), so that the window's time
 * limit is checked between calls.
 */
#define VT_NUMA_RANGES_MAX 16

/* One range of a batched move and what happened to its pages. */
struct vt_numa_range {
	uint64_t hva, len;
	struct vt_move_result res;	/* this range's pages (calls, cost, retries: in the total) */
};

/*
 * Move @n ranges of @pid to @node as one page list: one status query and one
 * move call per VT_NUMA_RANGES_BATCH pages, across range boundaries (each
 * MPOL_MF_MOVE call drains the LRU caches and waits for an RCU grace period
 * on every CPU: fewer, larger calls move more per second). Each range's
 * per-page outcomes are added to its own @r[i].res, and all of them to
 * @total with the calls, retries and CPU time the ranges share. Same errors as vt_numa_move();
 * on one, the ranges not reached have nothing counted.
 */
int vt_numa_move_ranges(pid_t pid, struct vt_numa_range *r, unsigned int n, int node,
			unsigned int page_step, struct vt_move_result *total);
/*
 * Where are the pages at @hva + i * @stride (i < @n)? @nodes[i] gets the node
 * or a negative errno (-ENOENT: not present). Returns 0 or -errno.
 */
int vt_numa_query(pid_t pid, uint64_t hva, uint64_t stride, unsigned int n, int *nodes);
/* The same for the @n pages at @addrs (any order), VT_NUMA_BATCH per call. */
int vt_numa_query_list(pid_t pid, const uint64_t *addrs, unsigned int n, int *nodes);
/* Is move_pages usable on @pid? 0, -EPERM (needs CAP_SYS_NICE), -ESRCH, -ENOSYS. */
int vt_numa_probe(pid_t pid);

#endif
