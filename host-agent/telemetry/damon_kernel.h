/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The damon-kernel profiler (telemetry/damon_kernel.c): the host kernel's DAMON,
 * driven through /sys/kernel/mm/damon/admin, on a process's virtual address
 * ranges. Its access source is a process and its ranges (no accessed-bit
 * operations: the kernel samples). Snapshots are in that process's host-virtual
 * address space. Declared here until telemetry/ has a header for it.
 */
#ifndef VTIER_CORE_DAMON_KERNEL_H
#define VTIER_CORE_DAMON_KERNEL_H

#include <sys/types.h>

#include <glib.h>

#include "access_source.h"

#define VT_DAMON_ADMIN "/sys/kernel/mm/damon/admin"

struct vt_profiler;
struct vt_profiler_attrs;

/*
 * The damon-kernel profiler over @src (from vt_damon_kernel_source_new). Not in
 * the profiler registry: the registry's profilers all run on simulated sources.
 * @region_bytes > 0: one fixed DAMON region per @region_bytes of each range
 * (from the range's start; needs fvaddr), else DAMON's adaptive regions
 * between @attrs' min_regions and max_regions.
 */
struct vt_profiler *vt_damon_kernel_profiler_new(struct vt_access_source *src,
						 const struct vt_profiler_attrs *attrs,
						 uint64_t region_bytes, int *err);

/* @ranges cut into pieces of @region_bytes from each start (the last one
 * shorter), appended to @out (struct vt_range): the fixed regions. */
void vt_damon_kernel_fixed_regions(const struct vt_range *ranges, size_t n, uint64_t region_bytes,
				   GArray *out);

/* A source that is @pid's ranges; @ranges are copied. */
struct vt_access_source *vt_damon_kernel_source_new(pid_t pid, const struct vt_range *ranges,
						    size_t n);
/*
 * Can the host's DAMON be used now? 0, or -ENOENT (no DAMON sysfs), -EACCES
 * (not root), -EBUSY (a kdamond that vtierd did not start is running),
 * -EOPNOTSUPP (no vaddr/fvaddr operations). @why gets one line for the log.
 * Changes nothing on the host.
 */
int vt_damon_kernel_probe(char **why);

#endif
