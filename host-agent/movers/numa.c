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

/* Count one page's outcome in @res. */
static void count_page(struct vt_move_result *res, int status, int before, int node)
{
	res->pages++;
	if (status == node) {
		res->moved++;
		res->already += before == node;
	} else if (status == -EBUSY || status == -EAGAIN) {
		res->busy++;
	} else if (status == -ENOENT || status == -EFAULT) {
		res->absent++;
	} else if (status == -ENOMEM) {
		res->nomem++;
	} else {
		res->other++;
	}
}

/*
 * Move the @k pages of @pages to @node: status query, move, then the busy
 * ones again (twice at most). @status gets each page's outcome, @before where
 * it was. Returns 0 or the -errno that stops the whole move.
 */
static int move_batch(pid_t pid, void **pages, unsigned int k, int node, int *nodes,
		      int *status, int *before, struct vt_move_result *total)
{
	total->calls += 2;
	for (unsigned int i = 0; i < k; i++)
		nodes[i] = node;
	if (sys_move_pages(pid, k, pages, NULL, before, 0) < 0)
		return -errno;
	if (sys_move_pages(pid, k, pages, nodes, status, MPOL_MF_MOVE) < 0) {
		int ret = -errno;

		/* -ENOENT for the whole call: nothing in the batch could move */
		if (ret != -ENOENT)
			return ret;
		for (unsigned int i = 0; i < k; i++)
			status[i] = before[i] == node ? node : -ENOENT;
	}
	/*
	 * Busy pages (raced with a guest access, under I/O): retry them twice.
	 * Ask where they are first: every 4 KiB entry of a THP after its head
	 * reports -EBUSY (the head's folio is already isolated for this call)
	 * and is on @node once the call returns. A status query costs a page
	 * walk; another MPOL_MF_MOVE call costs an LRU drain and an RCU grace
	 * period on every CPU.
	 */
	for (int retry = 0; retry < 2; retry++) {
		g_autofree void **again = NULL;
		g_autofree int *idx = NULL, *st2 = NULL;
		unsigned int na = 0, nb = 0;

		for (unsigned int i = 0; i < k; i++)
			na += status[i] == -EBUSY || status[i] == -EAGAIN;
		if (!na)
			break;
		again = g_new(void *, na);
		idx = g_new(int, na);
		st2 = g_new(int, na);
		na = 0;
		for (unsigned int i = 0; i < k; i++)
			if (status[i] == -EBUSY || status[i] == -EAGAIN) {
				idx[na] = (int)i;
				again[na++] = pages[i];
			}
		total->calls++;
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
		total->calls++;
		total->retried += nb;
		if (sys_move_pages(pid, nb, again, nodes, st2, MPOL_MF_MOVE) < 0)
			break;
		for (unsigned int j = 0; j < nb; j++)
			status[idx[j]] = st2[j];
	}
	return 0;
}

int vt_numa_move_ranges(pid_t pid, struct vt_numa_range *r, unsigned int n, int node,
			unsigned int page_step, struct vt_move_result *total)
{
	g_autofree void **pages = g_new(void *, VT_NUMA_RANGES_BATCH);
	g_autofree int *nodes = g_new(int, VT_NUMA_RANGES_BATCH);
	g_autofree int *status = g_new(int, VT_NUMA_RANGES_BATCH);
	g_autofree int *before = g_new(int, VT_NUMA_RANGES_BATCH);
	g_autofree unsigned int *owner = g_new(unsigned int, VT_NUMA_RANGES_BATCH);
	uint64_t t0 = thread_ns(), step = page_step ? page_step : 4096;
	unsigned int ri = 0;	/* the range being listed */
	uint64_t at = 0;	/* the next page of r[ri] to list */
	int ret = 0;

	while (ri < n) {
		unsigned int k = 0;

		/* list up to a batch of pages, across ranges */
		while (ri < n && k < VT_NUMA_RANGES_BATCH) {
			if (at >= r[ri].len / step) {
				ri++;
				at = 0;
				continue;
			}
			owner[k] = ri;
			pages[k++] = (void *)(uintptr_t)(r[ri].hva + at++ * step);
		}
		if (!k)
			break;
		ret = move_batch(pid, pages, k, node, nodes, status, before, total);
		if (ret < 0)
			break;
		for (unsigned int i = 0; i < k; i++) {
			count_page(&r[owner[i]].res, status[i], before[i], node);
			count_page(total, status[i], before[i], node);
		}
	}
	total->cost_ns += thread_ns() - t0;
	return ret;
}

int vt_numa_move(pid_t pid, uint64_t hva, uint64_t len, int node, unsigned int page_step,
		 struct vt_move_result *res)
{
	struct vt_numa_range one = { .hva = hva, .len = len };

	/* one range: the total is its own result */
	return vt_numa_move_ranges(pid, &one, 1, node, page_step, res);
}
