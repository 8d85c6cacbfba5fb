// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * damon-kernel: the host kernel's DAMON through sysfs on a process (QEMU),
 * with the same snapshot shape as every other profiler.
 *
 * The kernel samples; this file configures one kdamond per profiler (fvaddr
 * operations on the given ranges when the kernel has them, else vaddr, whose
 * regions are then clipped to the ranges), a "stat" scheme that matches every
 * region, and at each window end asks for the scheme's tried regions, whose
 * nr_accesses / (aggr_us / sample_us) are the snapshot's accesses.
 *
 * DAMON's sysfs is one global object: nr_kdamonds can only change while no
 * kdamond runs. So all damon-kernel profilers of this process share it: each
 * start or stop turns ours off, rewrites the count and every configuration,
 * and turns them on again. A kdamond that someone else started makes start()
 * fail with -EBUSY and leaves it alone.
 *
 * Fixed regions (region_bytes, fvaddr only): DAMON samples one random address
 * per region, and under a 2 MiB THP one accessed bit covers the frame, so a
 * region of 8 MiB with one hot frame in it (the guest kernel's) reads hot for
 * all 8 MiB. Given one initial region per 2 MiB chunk, aligned like vtierd's
 * chunks, with nr_regions min = max = their count, DAMON never splits (it
 * splits only while nr_regions <= max / 2) nor merges (two pieces exceed
 * total / min): each region is one chunk for the kdamond's lifetime.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "damon_kernel.h"
#include "profiler.h"
#include "sysfs.h"

#define KD VT_DAMON_ADMIN "/kdamonds"

struct proc_source {
	struct vt_access_source base;
	pid_t pid;
	size_t nr;
	struct vt_range ranges[VT_MAX_RANGES];
};

struct damon_kernel {
	pid_t pid;
	int index;		/* kdamond index, -1 when not running */
	bool fixed;		/* fvaddr: regions stay as given */
	uint64_t region_bytes;	/* fixed regions of this size, 0 = DAMON's adaptive ones */
	struct vt_profiler *p;
};

/*
 * The host has one set of kdamonds for all VMs, and each VM's profiler runs
 * on that VM's worker thread: @kdamonds guards the set, and each profiler's
 * index into it, which a rebuild for another VM renumbers.
 */
static GMutex kdamonds;
static GPtrArray *running;	/* struct damon_kernel *, in kdamond order */
static unsigned int owned;	/* kdamonds this process created */

static int proc_mapped(struct vt_access_source *src, struct vt_range *out, size_t max)
{
	struct proc_source *s = (struct proc_source *)src;

	memcpy(out, s->ranges, MIN(max, s->nr) * sizeof(*out));
	return (int)s->nr;
}

static int proc_test_clear(struct vt_access_source *src, uint64_t addr, unsigned int level)
{
	(void)src, (void)addr, (void)level;
	return -EOPNOTSUPP;
}

static int proc_batch(struct vt_access_source *src, struct vt_probe *probes, size_t n)
{
	(void)src, (void)probes, (void)n;
	return -EOPNOTSUPP;
}

static long proc_scan(struct vt_access_source *src, uint64_t start, uint64_t end,
		      unsigned int level, unsigned int skip_from, vt_young_fn fn, void *arg)
{
	(void)src, (void)start, (void)end, (void)level, (void)skip_from, (void)fn, (void)arg;
	return -EOPNOTSUPP;
}

static void proc_destroy(struct vt_access_source *src)
{
	g_free(src);
}

static const struct vt_access_source_ops proc_ops = {
	.name = "proc",
	.mapped = proc_mapped,
	.test_clear = proc_test_clear,
	.batch = proc_batch,
	.scan = proc_scan,
	.destroy = proc_destroy,
};

struct vt_access_source *vt_damon_kernel_source_new(pid_t pid, const struct vt_range *ranges,
						    size_t n)
{
	struct proc_source *s;

	if (n > VT_MAX_RANGES)
		return NULL;
	s = g_new0(struct proc_source, 1);
	s->base.ops = &proc_ops;
	s->base.levels = 4;
	s->pid = pid;
	s->nr = n;
	memcpy(s->ranges, ranges, n * sizeof(*ranges));
	return &s->base;
}

static int write_str(const char *path, const char *value)
{
	FILE *f = fopen(path, "w");
	int ret = 0;

	if (!f)
		return -errno;
	if (fputs(value, f) < 0)
		ret = -errno;
	if (fclose(f) != 0 && !ret)
		ret = -errno;
	return ret;
}

static int writef(const char *value, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static int writef(const char *value, const char *fmt, ...)
{
	g_autofree char *path = NULL;
	va_list ap;

	va_start(ap, fmt);
	path = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	return write_str(path, value);
}

/* Is a kdamond we did not start running? */
static int foreign_busy(unsigned int *nr, unsigned int *busy_index)
{
	uint64_t n;

	if (!g_file_test(VT_DAMON_ADMIN, G_FILE_TEST_IS_DIR))
		return -ENOENT;
	if (!vt_sysfs_read_u64(&n, KD "/nr_kdamonds"))
		return -EACCES;
	*nr = (unsigned int)n;
	for (unsigned int i = 0; i < n; i++) {
		g_autofree char *state = vt_sysfs_read(KD "/%u/state", i);

		if (state && strcmp(state, "on") == 0 && i >= owned) {
			*busy_index = i;
			return -EBUSY;
		}
	}
	return 0;
}

int vt_damon_kernel_probe(char **why)
{
	g_autoptr(GMutexLocker) locked = g_mutex_locker_new(&kdamonds);
	unsigned int nr = 0, busy = 0;
	int ret = foreign_busy(&nr, &busy);

	if (ret == -ENOENT)
		*why = g_strdup("no " VT_DAMON_ADMIN " (kernel without CONFIG_DAMON_SYSFS)");
	else if (ret == -EACCES)
		*why = g_strdup("cannot read " KD "/nr_kdamonds (run vtierd as root)");
	else if (ret == -EBUSY)
		*why = g_strdup_printf("kdamond %u is running and was not started by vtierd: the "
				       "host's DAMON is in use (stop it, or use another profiler)",
				       busy);
	else if (access(KD "/nr_kdamonds", W_OK) != 0) {
		ret = -EACCES;
		*why = g_strdup("cannot write " KD "/nr_kdamonds (run vtierd as root)");
	} else if (nr > 0) {
		g_autofree char *ops = vt_sysfs_read(KD "/0/contexts/0/avail_operations");

		if (ops && !strstr(ops, "vaddr")) {
			ret = -EOPNOTSUPP;
			*why = g_strdup_printf("this kernel's DAMON has no vaddr operations "
					       "(avail_operations: %s; needs CONFIG_DAMON_VADDR)", ops);
		}
	}
	if (!ret)
		*why = g_strdup("host DAMON sysfs is available");
	return ret;
}

void vt_damon_kernel_fixed_regions(const struct vt_range *ranges, size_t n, uint64_t region_bytes,
				   GArray *out)
{
	for (size_t k = 0; k < n; k++)
		for (uint64_t a = ranges[k].start; a < ranges[k].end; a += region_bytes) {
			struct vt_range r = { a, MIN(a + region_bytes, ranges[k].end) };

			g_array_append_val(out, r);
		}
}

static int configure(struct damon_kernel *dk, unsigned int i)
{
	const struct vt_profiler_attrs *a = &dk->p->attrs;
	g_autofree char *ops = vt_sysfs_read(KD "/%u/contexts/0/avail_operations", i);
	g_autoptr(GArray) regions = g_array_new(FALSE, FALSE, sizeof(struct vt_range));
	unsigned int nr_min, nr_max;
	char buf[64];
	int ret;

	if (!ops)
		return -EIO;
	/* avail_operations lists whole words: vaddr fvaddr paddr */
	dk->fixed = strstr(ops, "fvaddr") != NULL;
	if (!dk->fixed && !g_regex_match_simple("(^|\\s)vaddr(\\s|$)", ops, 0, 0))
		return -EOPNOTSUPP;
	if ((ret = writef(dk->fixed ? "fvaddr" : "vaddr", KD "/%u/contexts/0/operations", i)))
		return ret;
	g_snprintf(buf, sizeof(buf), "%" G_GUINT64_FORMAT, (guint64)a->sample_us);
	if ((ret = writef(buf, KD "/%u/contexts/0/monitoring_attrs/intervals/sample_us", i)))
		return ret;
	g_snprintf(buf, sizeof(buf), "%" G_GUINT64_FORMAT, (guint64)a->window_us);
	if ((ret = writef(buf, KD "/%u/contexts/0/monitoring_attrs/intervals/aggr_us", i)))
		return ret;
	g_snprintf(buf, sizeof(buf), "%" G_GUINT64_FORMAT, (guint64)a->window_us * 10);
	if ((ret = writef(buf, KD "/%u/contexts/0/monitoring_attrs/intervals/update_us", i)))
		return ret;
	if (dk->fixed && dk->region_bytes)
		vt_damon_kernel_fixed_regions(dk->p->ranges, dk->p->nr_ranges, dk->region_bytes,
					      regions);
	else
		g_array_append_vals(regions, dk->p->ranges, dk->p->nr_ranges);
	if (dk->fixed && dk->region_bytes) {
		nr_min = MAX(regions->len, 3);
		nr_max = nr_min;
	} else {
		nr_min = MAX(a->min_regions, (unsigned int)dk->p->nr_ranges);
		nr_max = a->max_regions;
	}
	/* max first: min may not exceed it */
	g_snprintf(buf, sizeof(buf), "%u", nr_max);
	if ((ret = writef(buf, KD "/%u/contexts/0/monitoring_attrs/nr_regions/max", i)))
		return ret;
	g_snprintf(buf, sizeof(buf), "%u", nr_min);
	if ((ret = writef(buf, KD "/%u/contexts/0/monitoring_attrs/nr_regions/min", i)))
		return ret;
	if ((ret = writef("1", KD "/%u/contexts/0/targets/nr_targets", i)))
		return ret;
	g_snprintf(buf, sizeof(buf), "%d", (int)dk->pid);
	if ((ret = writef(buf, KD "/%u/contexts/0/targets/0/pid_target", i)))
		return ret;
	g_snprintf(buf, sizeof(buf), "%u", regions->len);
	if ((ret = writef(buf, KD "/%u/contexts/0/targets/0/regions/nr_regions", i)))
		return ret;
	for (unsigned int r = 0; r < regions->len; r++) {
		const struct vt_range *rg = &g_array_index(regions, struct vt_range, r);

		g_snprintf(buf, sizeof(buf), "%" G_GUINT64_FORMAT, (guint64)rg->end);
		if ((ret = writef(buf, KD "/%u/contexts/0/targets/0/regions/%u/end", i, r)))
			return ret;
		g_snprintf(buf, sizeof(buf), "%" G_GUINT64_FORMAT, (guint64)rg->start);
		if ((ret = writef(buf, KD "/%u/contexts/0/targets/0/regions/%u/start", i, r)))
			return ret;
	}
	if ((ret = writef("1", KD "/%u/contexts/0/schemes/nr_schemes", i)))
		return ret;
	/* the access pattern defaults to [0, 0] everywhere, which matches nothing */
	if ((ret = writef("18446744073709551615",
			  KD "/%u/contexts/0/schemes/0/access_pattern/sz/max", i)) ||
	    (ret = writef("4294967295",
			  KD "/%u/contexts/0/schemes/0/access_pattern/nr_accesses/max", i)) ||
	    (ret = writef("4294967295", KD "/%u/contexts/0/schemes/0/access_pattern/age/max", i)))
		return ret;
	return writef("stat", KD "/%u/contexts/0/schemes/0/action", i);
}

/* Turn ours off, set the count, configure and start every running profiler. */
static int rebuild(void)
{
	unsigned int nr = 0, busy = 0;
	char buf[16];
	int ret = foreign_busy(&nr, &busy);

	if (ret)
		return ret;
	for (unsigned int i = 0; i < MIN(owned, nr); i++) {
		g_autofree char *state = vt_sysfs_read(KD "/%u/state", i);

		if (state && strcmp(state, "on") == 0 && (ret = writef("off", KD "/%u/state", i)))
			return ret;
	}
	g_snprintf(buf, sizeof(buf), "%u", running->len);
	if ((ret = write_str(KD "/nr_kdamonds", buf)))
		return ret;
	owned = running->len;
	for (unsigned int i = 0; i < running->len; i++) {
		struct damon_kernel *dk = running->pdata[i];

		dk->index = (int)i;
		if ((ret = writef("1", KD "/%u/contexts/nr_contexts", i)) || (ret = configure(dk, i)) ||
		    (ret = writef("on", KD "/%u/state", i))) {
			dk->index = -1;
			return ret;
		}
	}
	return 0;
}

static int dk_init(struct vt_profiler *p)
{
	struct damon_kernel *dk;

	if (p->src->ops != &proc_ops)
		return -EINVAL;	/* needs the process source */
	dk = g_new0(struct damon_kernel, 1);
	dk->pid = ((struct proc_source *)p->src)->pid;
	dk->index = -1;
	dk->p = p;
	p->priv = dk;
	return 0;
}

static int dk_start(struct vt_profiler *p)
{
	g_autoptr(GMutexLocker) locked = g_mutex_locker_new(&kdamonds);
	struct damon_kernel *dk = p->priv;
	int ret;

	if (!running)
		running = g_ptr_array_new();
	g_ptr_array_add(running, dk);
	ret = rebuild();
	if (ret) {
		g_ptr_array_remove(running, dk);
		/* leave the others running as they were */
		if (ret != -EBUSY && ret != -ENOENT && ret != -EACCES)
			rebuild();
	}
	return ret;
}

struct dk_region {
	uint64_t start, end, nr_accesses, age;
};

static int cmp_region(const void *a, const void *b)
{
	const struct dk_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int dk_window(struct vt_profiler *p, struct vt_snapshot *snap)
{
	g_autoptr(GMutexLocker) locked = g_mutex_locker_new(&kdamonds);
	struct damon_kernel *dk = p->priv;
	double max_acc = (double)MAX(p->attrs.window_us / p->attrs.sample_us, 1);
	g_autoptr(GArray) regs = g_array_new(FALSE, FALSE, sizeof(struct dk_region));
	g_autofree char *state = NULL;
	g_autofree char *dir = NULL;
	uint64_t n;
	int ret;

	if (dk->index < 0)
		return -ESRCH;
	/* sysfs answers -EBUSY while another reader holds DAMON's lock: retry */
	for (int tries = 0; !state && tries < 50; tries++) {
		state = vt_sysfs_read(KD "/%d/state", dk->index);
		if (!state)
			g_usleep(2000);
	}
	if (!state)
		return -EAGAIN;
	if (strcmp(state, "on") != 0)
		return -ESRCH;	/* the kdamond stopped: the target process exited */
	for (int tries = 0; tries < 50; tries++) {
		ret = writef("update_schemes_tried_regions", KD "/%d/state", dk->index);
		if (ret != -EBUSY)
			break;
		g_usleep(2000);
	}
	if (ret)
		return ret;
	dir = g_strdup_printf(KD "/%d/contexts/0/schemes/0/tried_regions", dk->index);
	for (n = 0;; n++) {
		struct dk_region r;

		if (!vt_sysfs_read_u64(&r.start, "%s/%" G_GUINT64_FORMAT "/start", dir, (guint64)n))
			break;
		if (!vt_sysfs_read_u64(&r.end, "%s/%" G_GUINT64_FORMAT "/end", dir, (guint64)n) ||
		    !vt_sysfs_read_u64(&r.nr_accesses, "%s/%" G_GUINT64_FORMAT "/nr_accesses", dir,
			      (guint64)n) ||
		    !vt_sysfs_read_u64(&r.age, "%s/%" G_GUINT64_FORMAT "/age", dir, (guint64)n) ||
		    r.end <= r.start)
			return -EIO;
		g_array_append_val(regs, r);
	}
	qsort(regs->data, regs->len, sizeof(struct dk_region), cmp_region);
	/* clip to the ranges (vaddr covers the whole process), keep address order */
	for (size_t k = 0; k < p->nr_ranges; k++)
		for (unsigned int i = 0; i < regs->len; i++) {
			struct dk_region *r = &g_array_index(regs, struct dk_region, i);
			struct vt_snapshot_region s;

			s.start = MAX(r->start, p->ranges[k].start);
			s.end = MIN(r->end, p->ranges[k].end);
			if (s.end <= s.start)
				continue;
			s.accesses = MIN((double)r->nr_accesses / max_acc, 1.0);
			s.age = (unsigned int)MIN(r->age, G_MAXUINT);
			s.level = 0;
			g_array_append_val(snap->regions, s);
		}
	return 0;
}

static void dk_destroy(struct vt_profiler *p)
{
	struct damon_kernel *dk = p->priv;

	if (!dk)
		return;
	g_mutex_lock(&kdamonds);
	if (running && g_ptr_array_remove(running, dk)) {
		if (dk->index >= 0 && (unsigned int)dk->index < owned)
			writef("off", KD "/%d/state", dk->index);
		rebuild();
	}
	g_mutex_unlock(&kdamonds);
	g_free(dk);
	p->priv = NULL;
}

const struct vt_profiler_ops vt_damon_kernel_ops = {
	.name = "damon-kernel",
	.summary = "the host kernel's DAMON on a process (sysfs); real processes only",
	.init = dk_init,
	.start = dk_start,
	.window = dk_window,
	.destroy = dk_destroy,
};

struct vt_profiler *vt_damon_kernel_profiler_new(struct vt_access_source *src,
						 const struct vt_profiler_attrs *attrs,
						 uint64_t region_bytes, int *err)
{
	struct vt_profiler *p = g_new0(struct vt_profiler, 1);
	int ret;

	p->ops = &vt_damon_kernel_ops;
	p->src = src;
	p->attrs = *attrs;
	p->rng = g_rand_new_with_seed(attrs->seed);
	ret = dk_init(p);
	if (ret < 0) {
		*err = ret;
		vt_profiler_free(p);
		return NULL;
	}
	((struct damon_kernel *)p->priv)->region_bytes = region_bytes;
	return p;
}
