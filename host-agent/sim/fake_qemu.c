// SPDX-License-Identifier: GPL-2.0-or-later
/* A stand-in for QEMU: a memfd mapped shared, a userfaultfd on it (fake_qemu.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <glib.h>

#include "fake_qemu.h"

int fake_qemu_ram_open(struct fake_qemu_ram *r, size_t size, bool reg)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_MISSING_SHMEM | UFFD_FEATURE_WP_HUGETLBFS_SHMEM,
	};
	int ret;

	*r = (struct fake_qemu_ram){ .memfd = -1, .uffd = -1, .size = size };
	r->memfd = memfd_create("fake-qemu-ram", MFD_CLOEXEC);
	if (r->memfd < 0 || ftruncate(r->memfd, (off_t)size))
		goto fail;
	r->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, r->memfd, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		goto fail;
	}
	r->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (r->uffd < 0 || ioctl(r->uffd, UFFDIO_API, &api))
		goto fail;
	if (reg && fake_qemu_ram_register(r))
		goto fail;
	return 0;
fail:
	ret = -errno;
	fake_qemu_ram_close(r);
	return ret ? ret : -EIO;
}

int fake_qemu_ram_register(struct fake_qemu_ram *r)
{
	struct uffdio_register rg = {
		.range = { (uintptr_t)r->map, r->size },
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};

	if (ioctl(r->uffd, UFFDIO_REGISTER, &rg))
		return -errno;
	r->ioctls = rg.ioctls;
	return 0;
}

void fake_qemu_ram_close(struct fake_qemu_ram *r)
{
	if (r->map)
		munmap(r->map, r->size);
	if (r->uffd >= 0)
		close(r->uffd);
	if (r->memfd >= 0)
		close(r->memfd);
	r->map = NULL;
	r->uffd = r->memfd = -1;
}

struct vtier_handoff_hello fake_qemu_hello(const struct fake_qemu_ram *r, const char *backend_id,
					   uint64_t generation)
{
	struct vtier_handoff_hello h = {
		.flags = VTIER_HELLO_F_WP,
		.size_bytes = r->size,
		.page_size = 4096,
		.hva = (uintptr_t)r->map,
		.uffd_ioctls = r->ioctls,
		.generation = generation,
		.qemu_pid = (uint32_t)getpid(),
	};

	g_strlcpy(h.backend_id, backend_id, sizeof(h.backend_id));
	return h;
}
