// SPDX-License-Identifier: GPL-2.0-or-later
/* Pool media: a node-bound shared mapping of a tmpfs file, in segments, or a disk file. */
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

static uint64_t seg_base(unsigned int k)
{
	return k ? VT_SEG0 << (k - 1) : 0;
}

static unsigned int seg_index(uint64_t off)
{
	uint64_t q = off / VT_SEG0;

	return q ? 64U - (unsigned int)__builtin_clzll(q) : 0;
}

/* Bind [@addr, +@len) to @node: MPOL_BIND, else MPOL_PREFERRED (said in @sm->placement). */
static int bind_node(struct vt_segmap *sm, void *addr, uint64_t len)
{
	unsigned long mask[NODEMASK_BITS / (8 * sizeof(unsigned long))] = { 0 };
	int node = sm->node;

	if (node >= NODEMASK_BITS)
		return -EINVAL;
	mask[node / (8 * sizeof(unsigned long))] = 1UL << (node % (8 * sizeof(unsigned long)));
	if (!g_str_has_prefix(sm->placement, "preferred") &&
	    syscall(SYS_mbind, addr, len, MPOL_BIND, mask, NODEMASK_BITS, 0) == 0) {
		snprintf(sm->placement, sizeof(sm->placement), "bind:%d", node);
		return 0;
	}
	g_debug("ctier: mbind(MPOL_BIND, node %d): %s; trying MPOL_PREFERRED", node,
		g_strerror(errno));
	if (syscall(SYS_mbind, addr, len, MPOL_PREFERRED, mask, NODEMASK_BITS, 0) == 0) {
		snprintf(sm->placement, sizeof(sm->placement), "preferred:%d", node);
		return 0;
	}
	return -errno;
}

void vt_segmap_init(struct vt_segmap *sm, int fd, int node, uint64_t limit)
{
	memset(sm, 0, sizeof(*sm));
	sm->fd = fd;
	sm->node = node;
	sm->limit = limit;
}

int vt_segmap_reserve(struct vt_segmap *sm, uint64_t end)
{
	if (end > sm->limit)
		return -ENOSPC;
	while (sm->mapped < end) {
		uint64_t base = seg_base(sm->nr);
		uint64_t len = MIN(VT_SEG0 << sm->nr, sm->limit) - base;
		void *p;

		if (sm->nr >= VT_SEGS)
			return -ENOSPC;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, sm->fd,
			 (off_t)base);
		if (p == MAP_FAILED)
			return -errno;
		if (sm->node >= 0) {
			int r = bind_node(sm, p, len);

			if (r < 0) {
				munmap(p, len);
				return r;
			}
		}
		sm->seg[sm->nr++] = p;
		sm->mapped = base + len;
	}
	return 0;
}

uint8_t *vt_segmap_at(const struct vt_segmap *sm, uint64_t off, uint64_t *room)
{
	unsigned int k;

	if (off >= sm->mapped)
		return NULL;
	k = seg_index(off);
	*room = MIN(VT_SEG0 << k, sm->mapped) - off;
	return sm->seg[k] + (off - seg_base(k));
}

void vt_segmap_fini(struct vt_segmap *sm)
{
	for (unsigned int k = 0; k < sm->nr; k++)
		munmap(sm->seg[k], MIN(VT_SEG0 << k, sm->limit) - seg_base(k));
	sm->nr = 0;
	sm->mapped = 0;
}

int vt_medium_open(struct vt_medium *m, const char *path, enum vt_medium_kind kind, int node,
		   uint64_t size, bool create)
{
	struct stat st;
	int r;

	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0), 0600);
	if (m->fd < 0)
		return -errno;
	if (create && ftruncate(m->fd, (off_t)size) < 0)
		goto fail_errno;
	if (fstat(m->fd, &st) < 0)
		goto fail_errno;
	m->size = (uint64_t)st.st_size;
	vt_segmap_init(&m->map, m->fd, kind == VT_MEDIUM_NODE ? node : -1, m->size);
	if (kind == VT_MEDIUM_FILE) {
		snprintf(m->map.placement, sizeof(m->map.placement), "disk");
		return 0;
	}
	if (m->size == 0 || node < 0) {
		r = m->size ? -EINVAL : -EUCLEAN;
		goto fail;
	}
	/* the first segment now: a node that cannot take it fails the open */
	r = vt_segmap_reserve(&m->map, 1);
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
	vt_segmap_fini(&m->map);
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
}

int vt_medium_map(struct vt_medium *m, uint64_t end)
{
	if (end > m->size)
		return -ENOSPC;
	return m->kind == VT_MEDIUM_NODE ? vt_segmap_reserve(&m->map, end) : 0;
}

int vt_medium_commit(struct vt_medium *m, uint64_t off, uint64_t len)
{
	int r;

	if (off + len > m->size || off + len < off)
		return -ENOSPC;
	r = vt_medium_map(m, off + len);
	if (r < 0)
		return r;
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
	if (m->kind == VT_MEDIUM_NODE) {
		for (uint32_t done = 0; done < len;) {
			uint64_t room;
			uint8_t *p = vt_segmap_at(&m->map, off + done, &room);

			if (!p)
				return -EINVAL;
			room = MIN(room, (uint64_t)(len - done));
			memcpy(p, (const char *)buf + done, room);
			done += (uint32_t)room;
		}
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
	if (m->kind == VT_MEDIUM_NODE) {
		uint64_t room;
		const uint8_t *p = vt_segmap_at(&m->map, off, &room);

		if (p && room >= len)
			return p;
		/* across two segments: copied */
		for (uint32_t done = 0; done < len;) {
			p = vt_segmap_at(&m->map, off + done, &room);
			if (!p)
				return NULL;
			room = MIN(room, (uint64_t)(len - done));
			memcpy((char *)scratch + done, p, room);
			done += (uint32_t)room;
		}
		return scratch;
	}
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

uint64_t vt_medium_mapped(const struct vt_medium *m)
{
	return m->map.mapped;
}
