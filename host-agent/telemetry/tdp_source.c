// SPDX-License-Identifier: GPL-2.0-or-later
/* The "tdp" access source over vtier_tdp.ko (see tdp_source.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <vtier/tdp.h>

#include "tdp_source.h"
#include "thread_ns.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

#define TDP_YOUNG_BUF 4096

struct tdp_source {
	struct vt_access_source src;
	int dev;
	struct vtier_tdp_info info;
	struct vt_tdp_stats stats;
	struct vtier_tdp_probe *probes;	/* VTIER_TDP_MAX_BATCH */
	uint64_t *young;		/* TDP_YOUNG_BUF */
	uint32_t req_flags;		/* VTIER_TDP_HUGE_LEAVES when the module has it */
	bool v1;			/* a version 1 module: the *_V1 ioctls */
	enum vt_tdp_flush flush;
	bool flush_pending;		/* the next SAMPLE/SCAN carries VTIER_TDP_FLUSH_TLB */
	uint64_t last_root;		/* the last non-zero root cookie */
};

G_DEFINE_QUARK(vt-tdp-error-quark, vt_tdp_error)

static const struct vt_access_source_ops tdp_ops;

static struct tdp_source *to_tdp(struct vt_access_source *src)
{
	return (struct tdp_source *)src;
}

/* The version 2 outputs of one SAMPLE or SCAN. */
static void tdp_account(struct tdp_source *t, uint64_t cookie, uint64_t flush_ns, uint32_t marked,
			uint32_t yields)
{
	if (t->v1)
		return;
	/* a zap leaves no root for a while (cookie 0): compare with the last root */
	if (cookie && t->last_root && cookie != t->last_root)
		t->stats.root_swaps++;
	if (cookie)
		t->last_root = cookie;
	t->stats.root_cookie = cookie;
	if (flush_ns) {
		t->stats.flushes++;
		t->stats.flush_ns += flush_ns;
	}
	t->stats.marked += marked;
	t->stats.yields += yields;
}

/* Flags of the next SAMPLE or SCAN: the flush goes with the first of a window. */
static uint32_t tdp_flags(struct tdp_source *t)
{
	uint32_t f = t->req_flags;

	if (t->flush_pending) {
		f |= VTIER_TDP_FLUSH_TLB;
		t->flush_pending = false;
	}
	return f;
}

static int range_cmp(const void *a, const void *b)
{
	const struct vt_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int tdp_mapped(struct vt_access_source *src, struct vt_range *out, size_t max)
{
	struct tdp_source *t = to_tdp(src);
	struct vtier_tdp_memslots req = { .abi_version = VTIER_TDP_ABI_VERSION };
	g_autofree struct vtier_tdp_memslot *slots = NULL;
	g_autofree struct vt_range *r = NULL;
	size_t n = 0, merged = 0;

	/* Ask for the count, then for the slots; retry if slots were added in between. */
	for (;;) {
		if (ioctl(t->dev, VTIER_TDP_MEMSLOTS, &req) < 0)
			return -errno;
		if (slots && req.count <= req.max)
			break;
		g_free(slots);
		req.max = req.count + 8;
		slots = g_new0(struct vtier_tdp_memslot, req.max);
		req.slots = (uintptr_t)slots;
	}
	r = g_new0(struct vt_range, req.count + 1);
	for (uint32_t i = 0; i < req.count; i++) {
		if (slots[i].flags & VTIER_TDP_SLOT_INTERNAL || !slots[i].size)
			continue;
		r[n].start = slots[i].gpa;
		r[n].end = slots[i].gpa + slots[i].size;
		n++;
	}
	qsort(r, n, sizeof(*r), range_cmp);
	for (size_t i = 0; i < n; i++) {
		if (merged && r[merged - 1].end == r[i].start) {
			r[merged - 1].end = r[i].end;
			continue;
		}
		r[merged++] = r[i];
	}
	for (size_t i = 0; i < merged && i < max; i++)
		out[i] = r[i];
	return (int)merged;
}

/* One SAMPLE or SCAN ioctl, its wall time and count in the stats. 0 or -errno. */
static int tdp_ioctl(struct tdp_source *t, unsigned long cmd, void *req)
{
	uint64_t t0 = vt_now_ns();
	int ret = ioctl(t->dev, cmd, req) < 0 ? -errno : 0;

	t->stats.wall_ns += vt_now_ns() - t0;
	t->stats.ioctls++;
	return ret;
}

static int tdp_batch(struct vt_access_source *src, struct vt_probe *probes, size_t n)
{
	struct tdp_source *t = to_tdp(src);

	for (size_t done = 0; done < n;) {
		size_t chunk = MIN(n - done, (size_t)VTIER_TDP_MAX_BATCH);
		struct vtier_tdp_sample req = {
			.abi_version = t->v1 ? 1 : VTIER_TDP_ABI_VERSION,
			.n = (uint32_t)chunk,
			.probes = (uintptr_t)t->probes,
			.flags = tdp_flags(t),
		};
		int ret;

		for (size_t i = 0; i < chunk; i++) {
			t->probes[i].gpa = probes[done + i].addr;
			t->probes[i].level = probes[done + i].level;
			t->probes[i].result = 0;
		}
		ret = tdp_ioctl(t, t->v1 ? VTIER_TDP_SAMPLE_V1 : VTIER_TDP_SAMPLE, &req);
		if (ret < 0)
			return ret;
		tdp_account(t, req.root_cookie, req.flush_ns, req.nr_marked, req.nr_yields);
		for (unsigned int l = 0; l < VT_MAX_LEVELS; l++)
			src->checks[l] += req.checks[l];
		t->stats.noslot += req.nr_noslot;
		for (size_t i = 0; i < chunk; i++) {
			uint8_t r = t->probes[i].result;

			probes[done + i].result = r == VTIER_TDP_YOUNG ? VT_BIT_YOUNG :
						  r == VTIER_TDP_OLD ? VT_BIT_OLD : VT_BIT_ABSENT;
		}
		done += chunk;
	}
	return 0;
}

static int tdp_test_clear(struct vt_access_source *src, uint64_t addr, unsigned int level)
{
	struct vt_probe p = { .addr = addr, .level = (uint8_t)level };
	int ret = tdp_batch(src, &p, 1);

	return ret < 0 ? ret : p.result;
}

static long tdp_scan(struct vt_access_source *src, uint64_t start, uint64_t end,
		     unsigned int level, unsigned int skip_from, vt_young_fn fn, void *arg)
{
	struct tdp_source *t = to_tdp(src);
	uint64_t first = start, step = vt_level_size(level);
	long young = 0;

	while (start < end) {
		struct vtier_tdp_scan req = {
			.abi_version = t->v1 ? 1 : VTIER_TDP_ABI_VERSION,
			.level = level,
			.skip_from = skip_from,
			.start = start,
			.end = end,
			.young = (uintptr_t)t->young,
			.max_young = TDP_YOUNG_BUF,
			.flags = tdp_flags(t),
		};
		int ret = tdp_ioctl(t, t->v1 ? VTIER_TDP_SCAN_V1 : VTIER_TDP_SCAN, &req);

		if (ret < 0)
			return ret;
		tdp_account(t, req.root_cookie, req.flush_ns, req.nr_marked, req.nr_yields);
		for (unsigned int l = 0; l < VT_MAX_LEVELS; l++)
			src->checks[l] += req.checks[l];
		for (uint32_t i = 0; i < req.nr_young; i++) {
			uint64_t e = t->young[i], gpa = e & ~0xfffULL;
			unsigned int l = (unsigned int)(e & 0xfff);

			if (l <= level) {
				if (fn)
					fn(gpa, l, arg);
				young++;
				continue;
			}
			/*
			 * A young huge leaf above @level: every level-@level
			 * entry it covers inside the range was accessed as far
			 * as the hardware can tell. Callers see entries at the
			 * level they asked for.
			 */
			for (uint64_t a = MAX(gpa, first & ~(step - 1)), e_end = MIN(gpa + vt_level_size(l), end);
			     a < e_end; a += step) {
				if (fn)
					fn(a, level, arg);
				young++;
			}
		}
		if (req.next <= start)	/* the module always progresses; never spin */
			return -EIO;
		start = req.next;
	}
	return young;
}

static void tdp_destroy(struct vt_access_source *src)
{
	struct tdp_source *t = to_tdp(src);

	if (!t)
		return;
	if (t->dev >= 0)
		close(t->dev);
	g_free(t->probes);
	g_free(t->young);
	g_free(t);
}

static const struct vt_access_source_ops tdp_ops = {
	.name = "tdp",
	.mapped = tdp_mapped,
	.test_clear = tdp_test_clear,
	.batch = tdp_batch,
	.scan = tdp_scan,
	.destroy = tdp_destroy,
};

bool vt_is_tdp(const struct vt_access_source *src)
{
	return src && src->ops == &tdp_ops;
}

int vt_tdp_set_flush(struct vt_access_source *src, enum vt_tdp_flush mode)
{
	struct tdp_source *t = to_tdp(src);

	if (mode != VT_TDP_FLUSH_NEVER && !(t->info.features & VTIER_TDP_F_FLUSH_TLB))
		return -EOPNOTSUPP;
	t->flush = mode;
	t->flush_pending = false;
	return 0;
}

void vt_tdp_window_begin(struct vt_access_source *src)
{
	struct tdp_source *t = to_tdp(src);

	if (t->flush == VT_TDP_FLUSH_WINDOW)
		t->flush_pending = true;
}

void vt_tdp_get_stats(const struct vt_access_source *src, struct vt_tdp_stats *out)
{
	*out = ((const struct tdp_source *)src)->stats;
}

static const char *tdp_device(void)
{
	const char *d = getenv("VTIER_TDP_DEVICE");

	return d && *d ? d : VT_TDP_DEVICE_DEFAULT;
}

/*
 * ATTACH, in version 2 and else in version 1: a version 1 module refuses
 * version 2 (EPROTO) and knows only the version 1 sizes of INFO, SAMPLE and
 * SCAN (the *_V1 numbers), which have no flush, cookie or counters.
 */
static int tdp_attach(struct tdp_source *t, int vm_fd)
{
	struct vtier_tdp_attach a = { .abi_version = VTIER_TDP_ABI_VERSION, .vm_fd = vm_fd };

	if (ioctl(t->dev, VTIER_TDP_ATTACH, &a) == 0)
		return 0;
	if (errno != EPROTO)
		return -1;
	a.abi_version = 1;
	t->v1 = true;
	return ioctl(t->dev, VTIER_TDP_ATTACH, &a);
}

static int tdp_info(struct tdp_source *t)
{
	memset(&t->info, 0, sizeof(t->info));
	t->info.abi_version = t->v1 ? 1 : VTIER_TDP_ABI_VERSION;
	return ioctl(t->dev, t->v1 ? VTIER_TDP_INFO_V1 : VTIER_TDP_INFO, &t->info);
}

struct vt_access_source *vt_tdp_new(int vm_fd, GError **error)
{
	const char *dev = tdp_device();
	struct tdp_source *t = g_new0(struct tdp_source, 1);
	unsigned int l;

	t->src.ops = &tdp_ops;
	t->dev = open(dev, O_RDWR | O_CLOEXEC);
	if (t->dev < 0) {
		int e = errno;

		if (e == ENOENT)
			g_set_error(error, VT_TDP_ERROR, e,
				    "%s: no such device: load vtier_tdp.ko (make kmod; insmod build/kmod/host-kmod/vtier_tdp.ko)",
				    dev);
		else
			g_set_error(error, VT_TDP_ERROR, e, "%s: %s%s", dev, g_strerror(e),
				    e == EACCES || e == EPERM ? " (needs CAP_SYS_ADMIN)" : "");
		goto fail;
	}
	if (tdp_attach(t, vm_fd) < 0) {
		int e = errno;

		g_set_error(error, VT_TDP_ERROR, e, "attach fd %d: %s", vm_fd,
			    e == ENOTTY ? "not a KVM VM fd" :
			    e == EOPNOTSUPP ? "KVM's TDP MMU is off (kvm.tdp_mmu=N) or the CPU has no EPT/NPT" :
			    e == EPROTO ? "ABI version mismatch with the loaded vtier_tdp.ko" :
			    g_strerror(e));
		goto fail;
	}
	if (tdp_info(t) < 0) {
		int e = errno;

		g_set_error(error, VT_TDP_ERROR, e, "INFO: %s%s", g_strerror(e),
			    e == EPROTO ? " (KVM MMU layout differs from the module's; see dmesg)" : "");
		goto fail;
	}
	if (t->info.levels != 4 && t->info.levels != 5) {
		g_set_error(error, VT_TDP_ERROR, ENOENT,
			    "the VM has no second-level page table yet (no vCPU has run)");
		goto fail;
	}
	t->src.levels = t->info.levels;
	/* Leaves at the lowest level that has any: 4 KiB, or 2 MiB when all are huge. */
	t->src.leaf_level = 0;
	for (l = 0; l < VT_MAX_LEVELS - 1; l++) {
		if (t->info.leaves[l])
			break;
	}
	if (l < 2)
		t->src.leaf_level = l;
	if (t->info.features & VTIER_TDP_F_HUGE_LEAVES)
		t->req_flags = VTIER_TDP_HUGE_LEAVES;
	t->stats.format = t->info.format;
	t->stats.abi_version = t->v1 ? 1 : VTIER_TDP_ABI_VERSION;
	t->stats.root_cookie = t->info.root_cookie;
	t->last_root = t->info.root_cookie;
	memcpy(t->stats.leaves, t->info.leaves, sizeof(t->stats.leaves));
	t->probes = g_new0(struct vtier_tdp_probe, VTIER_TDP_MAX_BATCH);
	t->young = g_new0(uint64_t, TDP_YOUNG_BUF);
	return &t->src;
fail:
	tdp_destroy(&t->src);
	return NULL;
}

int vt_tdp_vm_fd_of_pid(pid_t pid, GError **error)
{
	g_autofree char *dir = g_strdup_printf("/proc/%d/fd", (int)pid);
	DIR *d = opendir(dir);
	struct dirent *de;
	int target = -1, pidfd, fd;

	if (!d) {
		g_set_error(error, VT_TDP_ERROR, errno, "%s: %s", dir, g_strerror(errno));
		return -errno;
	}
	while ((de = readdir(d))) {
		char link[PATH_MAX], path[PATH_MAX + 64];
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len < 0)
			continue;
		link[len] = '\0';
		if (!strcmp(link, "anon_inode:kvm-vm")) {
			target = atoi(de->d_name);
			break;
		}
	}
	closedir(d);
	if (target < 0) {
		g_set_error(error, VT_TDP_ERROR, ENOENT,
			    "process %d holds no KVM VM fd (anon_inode:kvm-vm): not a QEMU/KVM VM?",
			    (int)pid);
		return -ENOENT;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		g_set_error(error, VT_TDP_ERROR, errno, "pidfd_open(%d): %s", (int)pid, g_strerror(errno));
		return -errno;
	}
	fd = (int)syscall(SYS_pidfd_getfd, pidfd, target, 0);
	if (fd < 0) {
		int e = errno;

		g_set_error(error, VT_TDP_ERROR, e, "pidfd_getfd(%d, fd %d): %s%s", (int)pid, target,
			    g_strerror(e), e == EPERM ? " (needs ptrace access to QEMU)" : "");
		close(pidfd);
		return -e;
	}
	close(pidfd);
	return fd;
}

int vt_tdp_pid_of_socket(const char *path, pid_t *pid, GError **error)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int s;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		g_set_error(error, VT_TDP_ERROR, ENAMETOOLONG, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		int e = errno;

		g_set_error(error, VT_TDP_ERROR, e, "%s: %s", path, g_strerror(e));
		if (s >= 0)
			close(s);
		return -e;
	}
	close(s);
	*pid = cred.pid;
	return 0;
}

struct vt_access_source *vt_tdp_new_pid(pid_t pid, GError **error)
{
	struct vt_access_source *src;
	int fd;

	/* Name a missing module before anything about the VM. */
	if (access(tdp_device(), F_OK) < 0) {
		g_set_error(error, VT_TDP_ERROR, ENOENT,
			    "%s: no such device: load vtier_tdp.ko (make kmod; insmod build/kmod/host-kmod/vtier_tdp.ko)",
			    tdp_device());
		return NULL;
	}
	fd = vt_tdp_vm_fd_of_pid(pid, error);
	if (fd < 0)
		return NULL;
	src = vt_tdp_new(fd, error);
	close(fd);
	return src;
}
