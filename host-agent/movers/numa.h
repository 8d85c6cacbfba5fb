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
/*
 * Where are the pages at @hva + i * @stride (i < @n)? @nodes[i] gets the node
 * or a negative errno (-ENOENT: not present). Returns 0 or -errno.
 */
int vt_numa_query(pid_t pid, uint64_t hva, uint64_t stride, unsigned int n, int *nodes);
/* Is move_pages usable on @pid? 0, -EPERM (needs CAP_SYS_NICE), -ESRCH, -ENOSYS. */
int vt_numa_probe(pid_t pid);

#endif
