// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Evicting guest pages and serving them back through the hand-off's
 * userfaultfd. See handoff_pager.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "handoff_pager.h"

#define UFFD_NEEDED_IOCTLS ((1ull << _UFFDIO_COPY) | (1ull << _UFFDIO_WAKE) | \
			    (1ull << _UFFDIO_WRITEPROTECT))

int vt_pager_open(struct vt_pager *p, const struct vtier_handoff_hello *hello, int memfd, int uffd)
{
	struct statfs sfs;
	int flags;

	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->ring, NULL);
	p->ring_efd = -1;
	p->memfd = memfd;
	p->uffd = uffd;
	p->hva = hello->hva;
	p->size = hello->size_bytes;
	p->page_size = hello->page_size;
	p->fd_offset = hello->fd_offset;
	p->ioctls = hello->uffd_ioctls;

	if (fstatfs(memfd, &sfs))
		goto fail_errno;
	if (sfs.f_type != TMPFS_MAGIC || (p->ioctls & UFFD_NEEDED_IOCTLS) != UFFD_NEEDED_IOCTLS) {
		errno = ENOTSUP;
		goto fail_errno;
	}
	/* Shared with QEMU's fd (one open file description); QEMU never reads it. */
	flags = fcntl(uffd, F_GETFL);
	if (flags < 0 || fcntl(uffd, F_SETFL, flags | O_NONBLOCK))
		goto fail_errno;
	return 0;

fail_errno:
	flags = -errno;
	vt_pager_close(p);
	return flags;
}

void vt_pager_close(struct vt_pager *p)
{
	if (p->memfd >= 0)
		close(p->memfd);
	if (p->uffd >= 0)
		close(p->uffd);
	p->memfd = p->uffd = -1;
}

void vt_pager_move(struct vt_pager *dst, struct vt_pager *src)
{
	pthread_mutex_lock(&src->ring);
	memcpy(dst, src, sizeof(*dst));
	src->memfd = src->uffd = -1;
	src->n_pending = 0;
	pthread_mutex_unlock(&src->ring);
	pthread_mutex_init(&dst->ring, NULL);
}

void vt_pager_set_ring_efd(struct vt_pager *p, int efd)
{
	pthread_mutex_lock(&p->ring);
	p->ring_efd = efd;
	pthread_mutex_unlock(&p->ring);
}

unsigned int vt_pager_queued(struct vt_pager *p)
{
	unsigned int n;

	pthread_mutex_lock(&p->ring);
	n = p->n_pending;
	pthread_mutex_unlock(&p->ring);
	return n;
}

#define COUNT(p, field, v) __atomic_fetch_add(&(p)->field, (v), __ATOMIC_RELAXED)

static bool pager_offset_ok(const struct vt_pager *p, uint64_t offset, uint64_t len)
{
	return !(offset % p->page_size) && len && !(len % p->page_size) &&
	       offset < p->size && len <= p->size - offset;
}

int vt_pager_present(struct vt_pager *p, uint64_t offset)
{
	off_t at = p->fd_offset + offset;
	off_t data;

	if (!pager_offset_ok(p, offset, p->page_size))
		return -EINVAL;
	data = lseek(p->memfd, at, SEEK_DATA);
	if (data < 0)
		return errno == ENXIO ? 0 : -errno;	/* ENXIO: only holes after @at */
	return data == at;
}

static int uffd_protect(struct vt_pager *p, uint64_t offset, uint64_t len, bool wp)
{
	struct uffdio_writeprotect w = {
		.range = { .start = p->hva + offset, .len = len },
		.mode = wp ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	while (ioctl(p->uffd, UFFDIO_WRITEPROTECT, &w)) {
		if (errno != EAGAIN)
			return -errno;
	}
	return 0;
}

/* The ring has faults: tell the thread that serves them. */
static void ring_notify(struct vt_pager *p)
{
	const uint64_t one = 1;

	if (p->ring_efd >= 0 && write(p->ring_efd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full, the reader wakes anyway */
	}
}

/*
 * Move every fault the kernel has queued into p->pending. Under p->ring.
 * @ahead: read ahead by an eviction, not by the thread that serves faults,
 * which is told (ring_notify()).
 */
static int pager_drain(struct vt_pager *p, bool ahead)
{
	unsigned int before = p->n_pending;
	int ret = 0;

	while (p->n_pending < VT_PAGER_PENDING_MAX) {
		unsigned int tail = (p->pending_head + p->n_pending) % VT_PAGER_PENDING_MAX;
		ssize_t n = read(p->uffd, &p->pending[tail], sizeof(p->pending[0]));

		if (n < 0) {
			ret = errno == EAGAIN ? 0 : -errno;
			break;
		}
		if (n != sizeof(p->pending[0])) {
			ret = -EIO;
			break;
		}
		if (p->pending[tail].event == UFFD_EVENT_PAGEFAULT)
			p->n_pending++;
	}
	if (ahead && p->n_pending > before)
		ring_notify(p);
	return ret;
}

static bool pager_write_pending(const struct vt_pager *p, uint64_t offset)
{
	for (unsigned int i = 0; i < p->n_pending; i++) {
		const struct uffd_msg *m = &p->pending[(p->pending_head + i) % VT_PAGER_PENDING_MAX];
		uint64_t addr = m->arg.pagefault.address;

		if ((m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) &&
		    addr >= p->hva + offset && addr < p->hva + offset + p->page_size)
			return true;
	}
	return false;
}

/*
 * An eviction may go on only if no write to the page is queued: a writer that
 * hit the protection is waiting for the page as it is. -EBUSY otherwise.
 */
static int pager_no_write_queued(struct vt_pager *p, uint64_t offset)
{
	int ret;

	pthread_mutex_lock(&p->ring);
	ret = pager_drain(p, true);
	if (!ret && pager_write_pending(p, offset)) {
		COUNT(p, nr_evict_aborted, 1);
		ret = -EBUSY;
	}
	pthread_mutex_unlock(&p->ring);
	return ret;
}

/* One page: the span form with a span of one (below), plus the early look at
 * queued writes that lets a caller skip storing a copy already stale. */
int vt_pager_evict_begin(struct vt_pager *p, uint64_t offset, void *out)
{
	uint64_t present = 0;
	int ret;

	ret = vt_pager_evict_begin_span(p, offset, p->page_size, out, &present);
	if (ret < 0)
		return ret;
	if (!present)
		return -ENOENT;
	ret = pager_no_write_queued(p, offset);
	if (ret)
		vt_pager_evict_abort(p, offset);
	return ret;
}

int vt_pager_evict_commit(struct vt_pager *p, uint64_t offset)
{
	const uint64_t one = 1;
	uint64_t punched = 0;
	int ret = vt_pager_evict_commit_span(p, offset, p->page_size, &one, &one, &punched);

	if (ret < 0)
		return ret;
	return punched ? 0 : -EBUSY;
}

void vt_pager_evict_abort(struct vt_pager *p, uint64_t offset)
{
	/* Wakes a writer waiting on the protection; the page never left. */
	uffd_protect(p, offset, p->page_size, false);
}

static bool span_ok(const struct vt_pager *p, uint64_t offset, uint64_t len)
{
	return pager_offset_ok(p, offset, len) && len / p->page_size <= VT_PAGER_SPAN_MAX;
}

/* Set bits [@from, @to) of @mask. */
static void set_bits(uint64_t *mask, uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++)
		vt_pager_mask_set(mask, i);
}

/* [*@first, *@end): from the first to past the last set bit of @mask (@n bits); false if none */
static bool mask_span(const uint64_t *mask, uint64_t n, uint64_t *first, uint64_t *end)
{
	uint64_t words = VT_PAGER_SPAN_WORDS(n), lo = UINT64_MAX, hi = 0;

	for (uint64_t w = 0; w < words; w++) {
		if (!mask[w])
			continue;
		if (lo == UINT64_MAX)
			lo = w * 64 + (uint64_t)__builtin_ctzll(mask[w]);
		hi = w * 64 + 64 - (uint64_t)__builtin_clzll(mask[w]);
	}
	*first = lo;
	*end = hi;
	return lo != UINT64_MAX;
}

int vt_pager_present_span(struct vt_pager *p, uint64_t offset, uint64_t len, uint64_t *present)
{
	off_t base = (off_t)p->fd_offset, at = base + (off_t)offset, end = at + (off_t)len;

	if (!span_ok(p, offset, len))
		return -EINVAL;
	memset(present, 0, VT_PAGER_SPAN_WORDS(len / p->page_size) * sizeof(*present));
	while (at < end) {
		off_t data = lseek(p->memfd, at, SEEK_DATA), hole;

		if (data < 0)
			return errno == ENXIO ? 0 : -errno;	/* only holes after @at */
		if (data >= end)
			break;
		hole = lseek(p->memfd, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		if (hole > end)
			hole = end;
		set_bits(present, (uint64_t)(data - base - (off_t)offset) / p->page_size,
			 ((uint64_t)(hole - base - (off_t)offset) + p->page_size - 1) / p->page_size);
		at = hole;
	}
	return 0;
}

int vt_pager_evict_begin_span(struct vt_pager *p, uint64_t offset, uint64_t len, void *out,
			      uint64_t *present)
{
	uint64_t first, end, at, span;
	ssize_t n;
	int ret;

	ret = vt_pager_present_span(p, offset, len, present);
	if (ret < 0 || !mask_span(present, len / p->page_size, &first, &end))
		return ret;
	at = offset + first * p->page_size;
	span = (end - first) * p->page_size;
	/* From here on a write to the span waits for us: the copies are final. */
	ret = uffd_protect(p, at, span, true);
	if (ret)
		goto fail;
	/* holes inside the span read as zeros; nobody uses those copies */
	n = pread(p->memfd, (char *)out + first * p->page_size, span, (off_t)(p->fd_offset + at));
	if (n != (ssize_t)span) {
		ret = n < 0 ? -errno : -EIO;
		uffd_protect(p, at, span, false);
		goto fail;
	}
	return 0;
fail:
	memset(present, 0, VT_PAGER_SPAN_WORDS(len / p->page_size) * sizeof(*present));
	return ret;
}

/*
 * Clear in @go (a span at @offset of @n pages) the pages a queued write waits
 * for. Under p->ring.
 */
static void drop_written(struct vt_pager *p, uint64_t offset, uint64_t n, uint64_t *go)
{
	for (unsigned int k = 0; k < p->n_pending; k++) {
		const struct uffd_msg *m = &p->pending[(p->pending_head + k) % VT_PAGER_PENDING_MAX];
		uint64_t addr = m->arg.pagefault.address, i;

		if (!(m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) || addr < p->hva + offset)
			continue;
		i = (addr - p->hva - offset) / p->page_size;
		if (i < n && vt_pager_mask_has(go, i)) {
			go[i / 64] &= ~(1ull << (i % 64));
			COUNT(p, nr_evict_aborted, 1);
		}
	}
}

int vt_pager_evict_commit_span(struct vt_pager *p, uint64_t offset, uint64_t len,
			       const uint64_t *present, const uint64_t *keep, uint64_t *punched)
{
	uint64_t n = len / p->page_size, go[VT_PAGER_SPAN_WORDS(VT_PAGER_SPAN_MAX)] = { 0 };
	uint64_t first, end, i, j;
	int ret;

	if (!span_ok(p, offset, len))
		return -EINVAL;
	memset(punched, 0, VT_PAGER_SPAN_WORDS(n) * sizeof(*punched));
	if (!mask_span(present, n, &first, &end))
		return 0;
	for (uint64_t w = 0; w < VT_PAGER_SPAN_WORDS(n); w++)
		go[w] = keep[w] & present[w];
	/*
	 * The span is protected: a write to it from here on waits in the ring
	 * (the thread serving faults leaves the span's alone), so what is queued
	 * now is every write that raced with the copies.
	 */
	pthread_mutex_lock(&p->ring);
	ret = pager_drain(p, true);
	if (ret)
		memset(go, 0, sizeof(go));
	else
		drop_written(p, offset, n, go);
	pthread_mutex_unlock(&p->ring);
	/*
	 * Punch the kept pages, holes between them included (punching a hole
	 * is a no-op, and no fault is served while the span is protected: a
	 * hole is still one): usually the whole span at once. A page that
	 * stays splits the punch.
	 */
	for (i = 0; i < n; i = j + 1) {
		uint64_t a = UINT64_MAX, b = 0;

		for (j = i; j < n && (vt_pager_mask_has(go, j) || !vt_pager_mask_has(present, j)); j++) {
			if (vt_pager_mask_has(go, j)) {
				a = a == UINT64_MAX ? j : a;
				b = j + 1;
			}
		}
		if (a == UINT64_MAX)
			continue;
		if (fallocate(p->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)(p->fd_offset + offset + a * p->page_size),
			      (off_t)((b - a) * p->page_size))) {
			ret = -errno;
			break;
		}
		for (uint64_t k = a; k < b; k++) {
			if (vt_pager_mask_has(go, k)) {
				vt_pager_mask_set(punched, k);
				COUNT(p, nr_evicted, 1);
			}
		}
	}
	/* drop the protection of the whole span in one go, waking any writer */
	uffd_protect(p, offset + first * p->page_size, (end - first) * p->page_size, false);
	return ret;
}

/* @m as a fault of the backend: 0, or -ERANGE when it is outside it. */
static int fault_of(const struct vt_pager *p, const struct uffd_msg *m, struct vt_pager_fault *f)
{
	f->offset = (m->arg.pagefault.address - p->hva) & ~(p->page_size - 1);
	f->write = m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE;
	f->wp = m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP;
	if (m->arg.pagefault.address < p->hva || f->offset >= p->size)
		return -ERANGE;
	return 0;
}

int vt_pager_next_fault(struct vt_pager *p, struct vt_pager_fault *f)
{
	struct uffd_msg m;
	int ret = 0;

	pthread_mutex_lock(&p->ring);
	if (!p->n_pending) {
		ret = pager_drain(p, false);
		if (!ret && !p->n_pending)
			ret = -EAGAIN;
	}
	if (!ret) {
		m = p->pending[p->pending_head];
		p->pending_head = (p->pending_head + 1) % VT_PAGER_PENDING_MAX;
		p->n_pending--;
	}
	pthread_mutex_unlock(&p->ring);
	return ret ? ret : fault_of(p, &m, f);
}

int vt_pager_next_fault_outside(struct vt_pager *p, uint64_t offset, uint64_t len,
				struct vt_pager_fault *f)
{
	unsigned int i, k;
	int ret;

	pthread_mutex_lock(&p->ring);
	ret = pager_drain(p, false);
	if (ret) {
		pthread_mutex_unlock(&p->ring);
		return ret;
	}
	for (i = 0; i < p->n_pending; i++) {
		const struct uffd_msg *m = &p->pending[(p->pending_head + i) % VT_PAGER_PENDING_MAX];
		uint64_t addr = m->arg.pagefault.address;

		if (addr >= p->hva + offset && addr - p->hva - offset < len)
			continue;	/* the span's: waits for its commit */
		ret = fault_of(p, m, f);
		/* out of the ring, the faults behind it moving up: the order stays */
		for (k = i; k + 1 < p->n_pending; k++)
			p->pending[(p->pending_head + k) % VT_PAGER_PENDING_MAX] =
				p->pending[(p->pending_head + k + 1) % VT_PAGER_PENDING_MAX];
		p->n_pending--;
		pthread_mutex_unlock(&p->ring);
		return ret;
	}
	pthread_mutex_unlock(&p->ring);
	return -EAGAIN;
}

static int uffd_wake(struct vt_pager *p, uint64_t offset, uint64_t len)
{
	struct uffdio_range r = { .start = p->hva + offset, .len = len };

	return ioctl(p->uffd, UFFDIO_WAKE, &r) ? -errno : 0;
}

int vt_pager_fill(struct vt_pager *p, uint64_t offset, const void *data)
{
	static const uint8_t zeros[1 << 16];
	uint64_t done = 0;
	bool zero = !data;

	if (!pager_offset_ok(p, offset, p->page_size))
		return -EINVAL;
	if (zero && p->page_size > sizeof(zeros) && !(p->ioctls & (1ull << _UFFDIO_ZEROPAGE)))
		return -ENOTSUP;
	while (done < p->page_size) {
		int ret;

		if (zero && (p->ioctls & (1ull << _UFFDIO_ZEROPAGE))) {
			struct uffdio_zeropage z = {
				.range = { .start = p->hva + offset + done, .len = p->page_size - done },
			};

			ret = ioctl(p->uffd, UFFDIO_ZEROPAGE, &z) ? -errno : 0;
			done += z.zeropage > 0 ? (uint64_t)z.zeropage : 0;
		} else {
			struct uffdio_copy c = {
				.dst = p->hva + offset + done,
				.src = (uintptr_t)(zero ? zeros : (const uint8_t *)data + done),
				.len = p->page_size - done,
			};

			ret = ioctl(p->uffd, UFFDIO_COPY, &c) ? -errno : 0;
			done += c.copy > 0 ? (uint64_t)c.copy : 0;
		}
		if (ret == -EEXIST) {
			/* Someone put it back already: just make sure nobody sleeps. */
			COUNT(p, nr_already_present, 1);
			ret = uffd_wake(p, offset, p->page_size);
			return ret ? ret : 0;
		}
		if (ret == -EAGAIN)
			continue;
		if (ret)
			return ret;
	}
	if (zero)
		COUNT(p, nr_zero_filled, 1);
	else
		COUNT(p, nr_filled, 1);
	return 1;
}

int vt_pager_wake(struct vt_pager *p, uint64_t offset, uint64_t len)
{
	if (!pager_offset_ok(p, offset, len))
		return -EINVAL;
	return uffd_wake(p, offset, len);
}

int64_t vt_pager_zero_range(struct vt_pager *p, uint64_t offset, uint64_t len, bool wake)
{
	uint64_t at = offset, end = offset + len;
	int64_t filled = 0;

	if (!pager_offset_ok(p, offset, len))
		return -EINVAL;
	if (!(p->ioctls & (1ull << _UFFDIO_ZEROPAGE)))
		return -ENOTSUP;
	while (at < end) {
		struct uffdio_zeropage z = {
			.range = { .start = p->hva + at, .len = end - at },
			.mode = UFFDIO_ZEROPAGE_MODE_DONTWAKE,
		};
		int ret = ioctl(p->uffd, UFFDIO_ZEROPAGE, &z) ? -errno : 0;

		if (z.zeropage > 0) {
			at += (uint64_t)z.zeropage;
			filled += z.zeropage / (int64_t)p->page_size;
			continue;
		}
		if (ret == -EAGAIN)
			continue;
		if (ret == -EEXIST) {
			at += p->page_size;	/* that page is there: go on after it */
			continue;
		}
		if (ret)
			return ret;
	}
	COUNT(p, nr_zero_filled, (uint64_t)filled);
	if (!wake)
		return filled;
	return uffd_wake(p, offset, len) ?: filled;
}

#ifndef UFFDIO_POISON
/* Linux 6.6 uapi; Debian 12's headers predate it */
#define _UFFDIO_POISON (0x08)
struct uffdio_poison {
	struct uffdio_range range;
	__u64 mode;
	__s64 updated;
};
#define UFFDIO_POISON _IOWR(UFFDIO, _UFFDIO_POISON, struct uffdio_poison)
#endif

int vt_pager_poison(struct vt_pager *p, uint64_t offset)
{
	struct uffdio_poison u = {
		.range = { .start = p->hva + offset, .len = p->page_size },
	};
	struct uffdio_writeprotect w = {
		.range = u.range,
		.mode = UFFDIO_WRITEPROTECT_MODE_DONTWAKE,
	};
	int ret;

	if (!pager_offset_ok(p, offset, p->page_size))
		return -EINVAL;
	if (!(p->ioctls & (1ull << _UFFDIO_POISON)))
		return -ENOTSUP;
	/*
	 * An evicted page was write-protected before it was punched: on shmem the
	 * kernel keeps that protection in QEMU's page table as a uffd-wp marker
	 * where the page was. UFFDIO_POISON replaces no PTE, not even a marker
	 * (EEXIST): the marker must go first, without waking the faulting thread
	 * (it would fault again, on a page the store no longer holds, and read
	 * zeros). Resolving the protection drops a marker and leaves a page that
	 * is there as it is.
	 */
	while (ioctl(p->uffd, UFFDIO_WRITEPROTECT, &w)) {
		if (errno != EAGAIN)
			return -errno;
	}
	while (ioctl(p->uffd, UFFDIO_POISON, &u)) {
		if (errno == EEXIST) {
			/* the page is there after all: its content wins, nothing poisoned */
			ret = uffd_wake(p, offset, p->page_size);
			return ret ? ret : 1;
		}
		if (errno != EAGAIN)
			return -errno;
	}
	return 0;
}

int vt_pager_unprotect(struct vt_pager *p, uint64_t offset, uint64_t len)
{
	int ret;

	if (!pager_offset_ok(p, offset, len))
		return -EINVAL;
	ret = uffd_protect(p, offset, len, false);
	if (!ret)
		COUNT(p, nr_unprotected, 1);
	return ret;
}

int vt_pager_wake_all(struct vt_pager *p)
{
	return uffd_wake(p, 0, p->size);
}
