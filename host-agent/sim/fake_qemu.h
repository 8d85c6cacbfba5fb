/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A stand-in for QEMU, for the tests and vtier-bench mover (never vtierd):
 * guest RAM as QEMU hands it to an agent, a memfd mapped
 * shared in this process with a userfaultfd registered on the mapping
 * (missing + write-protect, as the patched QEMU registers it).
 */
#ifndef VTIER_SIM_FAKE_QEMU_H
#define VTIER_SIM_FAKE_QEMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vtier/handoff.h>

struct fake_qemu_ram {
	int memfd;
	int uffd;
	uint8_t *map;
	size_t size;
	uint64_t ioctls;	/* what UFFDIO_REGISTER allowed (0 unregistered) */
};

/*
 * Map @size bytes of a new memfd and open a userfaultfd (registered on the
 * mapping if @reg). 0, or -errno when this kernel cannot give a userfaultfd
 * for shmem missing + write-protect faults: the caller skips with a reason.
 */
int fake_qemu_ram_open(struct fake_qemu_ram *r, size_t size, bool reg);
/* Register the userfaultfd on the whole mapping now (fill the RAM first). 0 or -errno. */
int fake_qemu_ram_register(struct fake_qemu_ram *r);
void fake_qemu_ram_close(struct fake_qemu_ram *r);
/* The HELLO QEMU would send for @r (no ranges, no uuid). */
struct vtier_handoff_hello fake_qemu_hello(const struct fake_qemu_ram *r, const char *backend_id,
					   uint64_t generation);

#endif
