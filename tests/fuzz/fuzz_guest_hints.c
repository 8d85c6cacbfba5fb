// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target of the guest hint ring reader (host-agent/iface/guest_hints.c).
 * The input is what a guest may write after the agent attached:
 *   byte 0      host flags (bits 0-3: FREE, COLD, HOT, RECLAIM asked for)
 *   byte 1      polls (low 3 bits + 1) and the time step between them
 *               (high 5 bits, in 50 ms)
 *   72 bytes    the guest's page (struct vtier_guest_guest)
 *   the rest    the ring of a 16 KiB region (256 records, 8 KiB), zero-padded
 * Every hint handed out must be a known kind inside guest RAM, aligned and
 * within the size limit, and every record read must be counted once.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "guest_hints.h"

#define REGION 16384u
#define GIB (1ull << 30)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct vt_ghint_ram ram[] = {
	{ .gpa = 0, .size = 3 * GIB },
	{ .gpa = 4 * GIB, .size = GIB },
};

/* host telemetry "saw" every COLD range at an odd 4 KiB page accessed */
static bool contradicts(void *opaque, const struct vt_ghint *h)
{
	(void)opaque;
	return h->kind == VTIER_GUEST_COLD && (h->gpa >> 12) % 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct vt_ghint_limits lim = {
		.max_records_per_poll = 128, .records_per_sec = 1000, .burst_records = 200,
		.discard_bytes_per_sec = 64ull << 20, .discard_burst_bytes = 256ull << 20,
	};
	static struct vt_ghint out[256];
	struct vt_ghint_chan *ch;
	uint64_t now = 0, got = 0, rejected = 0, accepted = 0;
	const struct vt_ghint_stats *s;
	unsigned int polls, step;
	uint8_t *mem;
	size_t rest;
	int fd;

	if (size < 2 + sizeof(struct vtier_guest_guest))
		return 0;
	/* the region's file, as QEMU's: the channel reads it with pread */
	fd = memfd_create("fuzz-guest-hints", MFD_CLOEXEC);
	assert(fd >= 0);
	assert(ftruncate(fd, REGION) == 0);
	mem = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert(mem != MAP_FAILED);
	if (vt_ghint_attach(&ch, fd, REGION, ram, 2, &lim, (data[0] & 0xf) << 1, 0, NULL, 0)) {
		munmap(mem, REGION);
		close(fd);
		return 0;
	}
	vt_ghint_set_contradicts(ch, contradicts, NULL);
	vt_ghint_set_balloon_target(ch, 4096);
	polls = (data[1] & 7) + 1;
	step = data[1] >> 3;
	memcpy(mem + VTIER_GUEST_GUEST_OFFSET, data + 2, sizeof(struct vtier_guest_guest));
	data += 2 + sizeof(struct vtier_guest_guest);
	size -= 2 + sizeof(struct vtier_guest_guest);
	rest = REGION - VTIER_GUEST_RING_OFFSET;
	memcpy(mem + VTIER_GUEST_RING_OFFSET, data, size < rest ? size : rest);

	for (unsigned int p = 0; p < polls; p++, now += step * 50000000ull) {
		size_t n = vt_ghint_poll(ch, out, sizeof(out) / sizeof(out[0]), now);

		assert(n <= sizeof(out) / sizeof(out[0]));
		for (size_t i = 0; i < n; i++) {
			const struct vt_ghint *h = &out[i];
			bool in = false;

			assert(h->kind >= 1 && h->kind <= VTIER_GUEST_KIND_MAX);
			assert((h->gpa | h->size_bytes) % VTIER_GUEST_PAGE_SIZE == 0);
			assert(h->size_bytes > 0 && h->size_bytes <= VTIER_GUEST_RANGE_MAX);
			for (int r = 0; r < 2; r++)
				in |= h->gpa >= ram[r].gpa &&
				      h->gpa + h->size_bytes <= ram[r].gpa + ram[r].size;
			assert(in);
			assert(!contradicts(NULL, h));
		}
		got += n;
		vt_ghint_commit(ch);
	}
	s = vt_ghint_stats(ch);
	for (int r = 0; r < VT_GHINT_R_COUNT; r++)
		rejected += s->rejected[r];
	for (int k = 0; k <= VTIER_GUEST_KIND_MAX; k++)
		accepted += s->accepted[k];
	assert(accepted == got && s->records == accepted + rejected);
	assert(s->records <= 200 + polls * 1000ull * step * 50 / 1000 + polls);
	assert(vt_ghint_error(ch, NULL, 0) == 0);
	vt_ghint_detach(ch);
	munmap(mem, REGION);
	close(fd);
	return 0;
}
