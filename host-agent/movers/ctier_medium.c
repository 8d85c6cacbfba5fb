// SPDX-License-Identifier: GPL-2.0-or-later
/* Pool media: a node-bound shared mapping of a tmpfs file, or a disk file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <glib.h>
#include <numaif.h>

#include "ctier_medium.h"

#define NODEMASK_BITS 1024

static int bind_node(struct vt_medium *m, int node)
{
	unsigned long mask[NODEMASK_BITS / (8 * sizeof(unsigned long))] = { 0 };

	if (node < 0 || node >= NODEMASK_BITS)
		return -EINVAL;
	mask[node / (8 * sizeof(unsigned long))] = 1UL << (node % (8 * sizeof(unsigned long)));
	if (syscall(SYS_mbind, m->map, m->size, MPOL_BIND, mask, NODEMASK_BITS, 0) == 0) {
		snprintf(m->placement, sizeof(m->placement), "bind:%d", node);
		return 0;
	}
	g_debug("ctier: mbind(MPOL_BIND, node %d): %s; trying MPOL_PREFERRED", node,
		g_strerror(errno));
	if (syscall(SYS_mbind, m->map, m->size, MPOL_PREFERRED, mask, NODEMASK_BITS, 0) == 0) {
		snprintf(m->placement, sizeof(m->placement), "preferred:%d", node);
		return 0;
	}
	return -errno;
}

int vt_medium_open(struct vt_medium *m, const char *path, enum vt_medium_kind kind, int node,
		   uint64_t size, bool create)
{
	struct stat st;
	int r;

	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0600);
	if (m->fd < 0)
		return -errno;
	if (create && ftruncate(m->fd, (off_t)size) < 0)
		goto fail_errno;
	if (fstat(m->fd, &st) < 0)
		goto fail_errno;
	m->size = (uint64_t)st.st_size;
	if (kind == VT_MEDIUM_FILE) {
		snprintf(m->placement, sizeof(m->placement), "disk");
		return 0;
	}
	if (m->size == 0) {
		r = -EUCLEAN;
		goto fail;
	}
	m->map = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
		      m->fd, 0);
	if (m->map == MAP_FAILED) {
		m->map = NULL;
		goto fail_errno;
	}
	r = bind_node(m, node);
	if (r < 0)
		goto fail;
	return 0;
fail_errno:
	r = -errno;
fail:
	vt_medium_close(m);
	return r;
}

void vt_medium_close(struct vt_medium *m)
{
	if (m->map)
		munmap(m->map, m->size);
	if (m->fd >= 0)
		close(m->fd);
	m->map = NULL;
	m->fd = -1;
}

int vt_medium_commit(struct vt_medium *m, uint64_t off, uint64_t len)
{
	if (off + len > m->size || off + len < off)
		return -ENOSPC;
	if (fallocate(m->fd, 0, (off_t)off, (off_t)len) < 0)
		return errno == EOPNOTSUPP ? 0 : -errno;
	return 0;
}

void vt_medium_release(struct vt_medium *m, uint64_t off, uint64_t len)
{
	if (fallocate(m->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
		      (off_t)len) < 0)
		g_debug("ctier: punching a hole in a pool file: %s", g_strerror(errno));
}

int vt_medium_write(struct vt_medium *m, uint64_t off, const void *buf, uint32_t len)
{
	if (off + len > m->size || off + len < off)
		return -EINVAL;
	if (m->map) {
		memcpy(m->map + off, buf, len);
		return 0;
	}
	for (uint32_t done = 0; done < len;) {
		ssize_t n = pwrite(m->fd, (const char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (uint32_t)n;
	}
	return 0;
}

const void *vt_medium_read(struct vt_medium *m, uint64_t off, uint32_t len, void *scratch)
{
	if (off + len > m->size || off + len < off)
		return NULL;
	if (m->map)
		return m->map + off;
	for (uint32_t done = 0; done < len;) {
		ssize_t n = pread(m->fd, (char *)scratch + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		done += (uint32_t)n;
	}
	return scratch;
}

uint64_t vt_medium_resident(struct vt_medium *m)
{
	struct stat st;

	if (fstat(m->fd, &st) < 0)
		return 0;
	return (uint64_t)st.st_blocks * 512;
}
