// SPDX-License-Identifier: GPL-2.0-or-later
/* move_pages(2) in batches with per-page accounting. */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>
#include <numaif.h>

#include "numa.h"

static long sys_move_pages(pid_t pid, unsigned long count, void **pages, const int *nodes,
			   int *status, int flags)
{
	return syscall(SYS_move_pages, pid, count, pages, nodes, status, flags);
}

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int vt_numa_query(pid_t pid, uint64_t hva, uint64_t stride, unsigned int n, int *nodes)
{
	void *pages[VT_NUMA_BATCH];

	for (unsigned int done = 0; done < n;) {
		unsigned int k = MIN(n - done, VT_NUMA_BATCH);

		for (unsigned int i = 0; i < k; i++)
			pages[i] = (void *)(uintptr_t)(hva + (uint64_t)(done + i) * stride);
		if (sys_move_pages(pid, k, pages, NULL, nodes + done, 0) < 0)
			return -errno;
		done += k;
	}
	return 0;
}

int vt_numa_probe(pid_t pid)
{
	void *page = NULL;
	int status;

	/* a NULL address: the call checks permission first, then reports -EFAULT per page */
	if (sys_move_pages(pid, 1, &page, NULL, &status, 0) < 0)
		return -errno;
	return 0;
}

int vt_numa_move(pid_t pid, uint64_t hva, uint64_t len, int node, unsigned int page_step,
		 struct vt_move_result *res)
{
	void *pages[VT_NUMA_BATCH];
	int nodes[VT_NUMA_BATCH], status[VT_NUMA_BATCH], before[VT_NUMA_BATCH];
	uint64_t t0 = thread_ns();
	uint64_t step = page_step ? page_step : 4096;
	uint64_t n = len / step;
	int ret = 0;

	for (uint64_t done = 0; done < n;) {
		unsigned int k = (unsigned int)MIN(n - done, VT_NUMA_BATCH);

		for (unsigned int i = 0; i < k; i++) {
			pages[i] = (void *)(uintptr_t)(hva + (done + i) * step);
			nodes[i] = node;
		}
		res->calls += 2;
		if (sys_move_pages(pid, k, pages, NULL, before, 0) < 0) {
			ret = -errno;
			break;
		}
		if (sys_move_pages(pid, k, pages, nodes, status, MPOL_MF_MOVE) < 0) {
			ret = -errno;
			/* -ENOENT for the whole call: nothing in the batch could move */
			if (ret != -ENOENT)
				break;
			for (unsigned int i = 0; i < k; i++)
				status[i] = before[i] == node ? node : -ENOENT;
			ret = 0;
		}
		/*
		 * Busy pages (raced with a guest access, under I/O): retry them
		 * twice. Ask where they are first: every 4 KiB entry of a THP after
		 * its head reports -EBUSY (the head's folio is already isolated for
		 * this call) and is on @node once the call returns. A status query
		 * costs a page walk; another MPOL_MF_MOVE call costs an LRU drain
		 * and an RCU grace period on every CPU.
		 */
		for (int retry = 0; retry < 2; retry++) {
			void *again[VT_NUMA_BATCH];
			int idx[VT_NUMA_BATCH], st2[VT_NUMA_BATCH];
			unsigned int na = 0, nb = 0;

			for (unsigned int i = 0; i < k; i++)
				if (status[i] == -EBUSY || status[i] == -EAGAIN) {
					idx[na] = (int)i;
					again[na++] = pages[i];
				}
			if (!na)
				break;
			res->calls++;
			if (sys_move_pages(pid, na, again, NULL, st2, 0) < 0)
				break;
			for (unsigned int j = 0; j < na; j++) {
				if (st2[j] == node) {
					status[idx[j]] = node;
					continue;
				}
				idx[nb] = idx[j];
				again[nb++] = again[j];
			}
			if (!nb)
				break;
			res->calls++;
			res->retried += nb;
			if (sys_move_pages(pid, nb, again, nodes, st2, MPOL_MF_MOVE) < 0)
				break;
			for (unsigned int j = 0; j < nb; j++)
				status[idx[j]] = st2[j];
		}
		for (unsigned int i = 0; i < k; i++) {
			res->pages++;
			if (status[i] == node) {
				res->moved++;
				res->already += before[i] == node;
			} else if (status[i] == -EBUSY || status[i] == -EAGAIN) {
				res->busy++;
			} else if (status[i] == -ENOENT || status[i] == -EFAULT) {
				res->absent++;
			} else if (status[i] == -ENOMEM) {
				res->nomem++;
			} else {
				res->other++;
			}
		}
		done += k;
	}
	res->cost_ns += thread_ns() - t0;
	return ret;
}
