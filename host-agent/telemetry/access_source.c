// SPDX-License-Identifier: GPL-2.0-or-later
/* Level geometry and the accounting wrappers around struct vt_access_source_ops. */
#include <errno.h>
#include <time.h>

#include "access_source.h"
#include "thread_ns.h"

const char *vt_level_name(unsigned int level)
{
	static const char *const names[VT_MAX_LEVELS] = { "pte", "pmd", "pud", "p4d", "pgd" };

	return level < VT_MAX_LEVELS ? names[level] : "?";
}

unsigned int vt_addr_align_level(uint64_t addr, unsigned int top)
{
	unsigned int level = 0;

	while (level < top && (addr & (vt_level_size(level + 1) - 1)) == 0)
		level++;
	return level;
}

uint64_t vt_source_checks_total(const struct vt_access_source *src)
{
	uint64_t sum = 0;

	for (unsigned int i = 0; i < VT_MAX_LEVELS; i++)
		sum += src->checks[i];
	return sum;
}

int vt_source_mapped(struct vt_access_source *src, struct vt_range *out, size_t max)
{
	return src->ops->mapped(src, out, max);
}

/*
 * The thread CPU clock is a system call (0.67 us a read on the development
 * machine): only a source whose cost is measured (a bench sets @timed)
 * pays for two reads a call.
 */
static inline uint64_t call_begin(struct vt_access_source *src)
{
	src->calls++;
	return src->timed ? vt_thread_ns() : 0;
}

static inline void call_end(struct vt_access_source *src, uint64_t t0)
{
	if (src->timed)
		src->cost_ns += vt_thread_ns() - t0;
}

uint64_t vt_source_clock_ns(void)
{
	uint64_t best = UINT64_MAX;

	/* the cheapest of a few batches: a preempted batch reads long */
	for (int b = 0; b < 5; b++) {
		uint64_t t0 = vt_thread_ns(), t1;

		for (int i = 0; i < 1000; i++)
			(void)vt_thread_ns();
		t1 = vt_thread_ns();
		if ((t1 - t0) / 1001 < best)
			best = (t1 - t0) / 1001;
	}
	return best;
}

int vt_source_test_clear(struct vt_access_source *src, uint64_t addr, unsigned int level)
{
	uint64_t t0;
	int ret;

	if (level >= src->levels)
		return -EINVAL;
	t0 = call_begin(src);
	ret = src->ops->test_clear(src, addr, level);
	call_end(src, t0);
	return ret;
}

int vt_source_batch(struct vt_access_source *src, struct vt_probe *probes, size_t n)
{
	uint64_t t0;
	int ret;

	if (n == 0)
		return 0;
	t0 = call_begin(src);
	ret = src->ops->batch(src, probes, n);
	call_end(src, t0);
	return ret;
}

long vt_source_scan(struct vt_access_source *src, uint64_t start, uint64_t end,
		    unsigned int level, unsigned int skip_from, vt_young_fn fn, void *arg)
{
	uint64_t t0;
	long ret;

	if (level >= src->levels || skip_from < level || skip_from >= src->levels || start > end)
		return -EINVAL;
	t0 = call_begin(src);
	ret = src->ops->scan(src, start, end, level, skip_from, fn, arg);
	call_end(src, t0);
	return ret;
}

void vt_source_destroy(struct vt_access_source *src)
{
	if (src)
		src->ops->destroy(src);
}
