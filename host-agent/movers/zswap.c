// SPDX-License-Identifier: GPL-2.0-or-later
/* The zswap mover: process_madvise(MADV_PAGEOUT) on the QEMU process. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <glib.h>

#include "sysfs.h"
#include "zswap.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#define PM_SWAP (1ULL << 62)

int vt_zswap_probe(const char *root, char *why, size_t why_len)
{
	g_autofree char *swaps = g_build_filename(root, "proc/swaps", NULL);
	g_autofree char *en = g_build_filename(root, "sys/module/zswap/parameters/enabled", NULL);
	g_autofree char *text = NULL, *on = NULL;

	if (!g_file_get_contents(swaps, &text, NULL, NULL) || !strchr(text, '\n') ||
	    !strchr(strchr(text, '\n') + 1, '/')) {
		g_snprintf(why, why_len, "no swap device (%s lists none): zswap needs one behind it",
			   swaps);
		return -ENOENT;
	}
	on = vt_sysfs_read("%s", en);
	if (!on || on[0] != 'Y') {
		g_snprintf(why, why_len, "zswap is %s (%s)", on ? "disabled" : "not in this kernel",
			   en);
		return -EOPNOTSUPP;
	}
	g_snprintf(why, why_len, "swap with zswap in front");
	return 0;
}

int vt_zswap_open(struct vt_zswap *z, pid_t pid)
{
	z->pid = pid;
	z->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return z->pidfd < 0 ? -errno : 0;
}

void vt_zswap_close(struct vt_zswap *z)
{
	if (z->pidfd >= 0)
		close(z->pidfd);
	z->pidfd = -1;
}

static int64_t advise(struct vt_zswap *z, uint64_t hva, uint64_t len, int advice)
{
	struct iovec iov = { .iov_base = (void *)(uintptr_t)hva, .iov_len = len };
	ssize_t n = syscall(SYS_process_madvise, z->pidfd, &iov, 1UL, advice, 0U);

	return n < 0 ? -errno : n;
}

int64_t vt_zswap_pageout(struct vt_zswap *z, uint64_t hva, uint64_t len)
{
	return advise(z, hva, len, MADV_PAGEOUT);
}

int64_t vt_zswap_willneed(struct vt_zswap *z, uint64_t hva, uint64_t len)
{
	return advise(z, hva, len, MADV_WILLNEED);
}

int vt_zswap_query(struct vt_zswap *z, uint64_t hva, uint64_t stride, unsigned int n,
		   bool *swapped)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/pagemap", (int)z->pid);
	uint64_t first = hva / 4096, last = (hva + (uint64_t)(n ? n - 1 : 0) * stride) / 4096;
	g_autofree uint64_t *pm = NULL;
	size_t count = (size_t)(last - first + 1);
	ssize_t got;
	int fd;

	if (!n)
		return 0;
	if (count > (1u << 20))
		return -E2BIG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	pm = g_new0(uint64_t, count);
	got = pread(fd, pm, count * sizeof(*pm), (off_t)(first * sizeof(*pm)));
	close(fd);
	if (got < 0)
		return -errno;
	for (unsigned int i = 0; i < n; i++) {
		size_t k = (size_t)((hva + (uint64_t)i * stride) / 4096 - first);

		swapped[i] = (size_t)got >= (k + 1) * sizeof(*pm) && (pm[k] & PM_SWAP);
	}
	return 0;
}
