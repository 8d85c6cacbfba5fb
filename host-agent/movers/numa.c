// SPDX-License-Identifier: GPL-2.0-or-later
/* move_pages(2) in batches with per-page accounting. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>
#include <numaif.h>

#include "numa.h"
#include "thread_ns.h"

static long sys_move_pages(pid_t pid, unsigned long count, void **pages, const int *nodes,
			   int *status, int flags)
{
	return syscall(SYS_move_pages, pid, count, pages, nodes, status, flags);
}

/* Pages @done.. of a query: @addrs[i], or @hva + i * @stride without a list. */
static int query(pid_t pid, const uint64_t *addrs, uint64_t hva, uint64_t stride, unsigned int n,
		 int *nodes)
{
	void *pages[VT_NUMA_BATCH];

	for (unsigned int done = 0; done < n;) {
		unsigned int k = MIN(n - done, VT_NUMA_BATCH);

		for (unsigned int i = 0; i < k; i++)
			pages[i] = (void *)(uintptr_t)(addrs ? addrs[done + i] :
						       hva + (uint64_t)(done + i) * stride);
		if (sys_move_pages(pid, k, pages, NULL, nodes + done, 0) < 0)
			return -errno;
		done += k;
	}
	return 0;
}

int vt_numa_query(pid_t pid, uint64_t hva, uint64_t stride, unsigned int n, int *nodes)
{
	return query(pid, NULL, hva, stride, n, nodes);
}

int vt_numa_query_list(pid_t pid, const uint64_t *addrs, unsigned int n, int *nodes)
{
	return query(pid, addrs, 0, 0, n, nodes);
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

/* Count the outcome of @n pages that share one answer in @res. */
static void count_pages(struct vt_move_result *res, int status, int before, int node,
			unsigned int n)
{
	res->pages += n;
	if (status == node) {
		res->moved += n;
		if (before == node)
			res->already += n;
	} else if (status == -EBUSY || status == -EAGAIN) {
		res->busy += n;
	} else if (status == -ENOENT || status == -EFAULT) {
		res->absent += n;
	} else if (status == -ENOMEM) {
		res->nomem += n;
	} else {
		res->other += n;
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

/*
 * PAGEMAP_SCAN (Linux 6.7, include/uapi/linux/fs.h; Debian 12's headers are
 * older): which parts of a range a PMD maps as one huge page.
 */
#define VT_PAGEMAP_SCAN _IOWR('f', 16, struct vt_pm_scan_arg)
#define VT_PAGE_IS_HUGE (1 << 6)

struct vt_page_region {
	uint64_t start, end, categories;
};

struct vt_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};

#define HUGE (2ULL << 20)
#define HUGE_PAGES (HUGE / 4096)

/*
 * Mark in @huge (one bit per 2 MiB block of [@hva, @hva + @len), @hva and
 * @len 2 MiB-aligned) the blocks mapped by one PMD. False when the kernel
 * cannot tell (no PAGEMAP_SCAN, or not allowed): then nothing is marked.
 */
static bool huge_blocks(int pagemap, uint64_t hva, uint64_t len, uint64_t *huge)
{
	struct vt_page_region vec[64];
	struct vt_pm_scan_arg a = {
		.size = sizeof(a), .start = hva, .end = hva + len,
		.vec = (uintptr_t)vec, .vec_len = G_N_ELEMENTS(vec),
		.category_mask = VT_PAGE_IS_HUGE, .return_mask = VT_PAGE_IS_HUGE,
	};

	while (a.start < a.end) {
		long n = ioctl(pagemap, VT_PAGEMAP_SCAN, &a);

		if (n < 0)
			return false;
		for (long i = 0; i < n; i++)
			for (uint64_t b = (vec[i].start + HUGE - 1) & ~(HUGE - 1); b + HUGE <= vec[i].end;
			     b += HUGE)
				huge[(b - hva) / HUGE / 64] |= 1ULL << ((b - hva) / HUGE % 64);
		if (a.walk_end <= a.start || a.walk_end >= a.end)
			break;
		a.start = a.walk_end;
	}
	return true;
}

int vt_numa_move_ranges(pid_t pid, struct vt_numa_range *r, unsigned int n, int node,
			unsigned int page_step, struct vt_move_result *total)
{
	g_autofree void **pages = g_new(void *, VT_NUMA_RANGES_BATCH);
	g_autofree int *nodes = g_new(int, VT_NUMA_RANGES_BATCH);
	g_autofree int *status = g_new(int, VT_NUMA_RANGES_BATCH);
	g_autofree int *before = g_new(int, VT_NUMA_RANGES_BATCH);
	g_autofree unsigned int *owner = g_new(unsigned int, VT_NUMA_RANGES_BATCH);
	g_autofree unsigned int *weight = g_new(unsigned int, VT_NUMA_RANGES_BATCH);
	g_autofree uint64_t *huge = NULL;
	uint64_t t0 = vt_thread_ns(), step = page_step ? page_step : 4096;
	unsigned int ri = 0;	/* the range being listed */
	uint64_t at = 0;	/* the next page of r[ri] to list */
	bool huge_known = false;
	int ret = 0, pagemap = -1;

	/*
	 * A PMD-mapped THP moves whole when its head is asked, and each of its
	 * other 511 entries costs a page walk and reports -EBUSY: ask the head
	 * alone and count its answer for the 512 pages. (A THP split between
	 * the scan and the move leaves its other pages where they were, and
	 * the next residency query sees them.)
	 */
	if (step == 4096) {
		g_autofree char *path = g_strdup_printf("/proc/%d/pagemap", (int)pid);

		pagemap = open(path, O_RDONLY | O_CLOEXEC);
	}
	while (ri < n) {
		unsigned int k = 0;

		/* list up to a batch of pages, across ranges */
		while (ri < n && k < VT_NUMA_RANGES_BATCH) {
			uint64_t addr = r[ri].hva + at * step, blk;

			if (at >= r[ri].len / step) {
				ri++;
				at = 0;
				huge_known = false;
				continue;
			}
			if (at == 0 && pagemap >= 0 && !(r[ri].hva % HUGE) && !(r[ri].len % HUGE)) {
				g_free(huge);
				huge = g_new0(uint64_t, r[ri].len / HUGE / 64 + 1);
				huge_known = huge_blocks(pagemap, r[ri].hva, r[ri].len, huge);
			}
			blk = (addr - r[ri].hva) / HUGE;
			owner[k] = ri;
			if (huge_known && !(addr % HUGE) && (huge[blk / 64] >> (blk % 64) & 1)) {
				weight[k] = HUGE_PAGES;
				at += HUGE_PAGES;
			} else {
				weight[k] = 1;
				at++;
			}
			pages[k++] = (void *)(uintptr_t)addr;
		}
		if (!k)
			break;
		total->entries += k;
		ret = move_batch(pid, pages, k, node, nodes, status, before, total);
		if (ret < 0)
			break;
		for (unsigned int i = 0; i < k; i++) {
			count_pages(&r[owner[i]].res, status[i], before[i], node, weight[i]);
			count_pages(total, status[i], before[i], node, weight[i]);
		}
	}
	if (pagemap >= 0)
		close(pagemap);
	total->cost_ns += vt_thread_ns() - t0;
	return ret;
}

int vt_numa_move(pid_t pid, uint64_t hva, uint64_t len, int node, unsigned int page_step,
		 struct vt_move_result *res)
{
	struct vt_numa_range one = { .hva = hva, .len = len };

	/* one range: the total is its own result */
	return vt_numa_move_ranges(pid, &one, 1, node, page_step, res);
}
