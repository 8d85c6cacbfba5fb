// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-tbhostile: a lying, flooding guest for the guest-hostile scenario.
 * Runs in an L2 guest that has a vtier hint device (ivshmem-plain) and no
 * vtier_guest.ko: maps the device's BAR 2 through sysfs, writes a valid
 * guest header, then floods the ring for SECONDS at up to RATE records/s
 * with a mix of lies: random bytes, stale sequence numbers, ranges outside
 * RAM, unaligned and oversized ranges, unknown kinds, DEFLATEs of balloons it
 * never had, producer indices far ahead of the host, and FREE hints for its
 * own pages in use (the only pages a lie may cost). It never waits for an
 * acknowledgement.
 *   vtier-tbhostile RESOURCE2 SECONDS RATE   ->  "records=N free_lies=N pages=N"
 * Static (the L2 root has no libraries); shares no code with vtierd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <vtier/guest.h>

#define OWN_PAGES 4096		/* 16 MiB of its own memory that it calls free */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Guest-physical addresses of its own pages, from /proc/self/pagemap. */
static int own_gpas(uint8_t *buf, uint64_t *gpa)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return -errno;
	for (int i = 0; i < OWN_PAGES; i++) {
		uint64_t e;
		off_t off = (off_t)((uintptr_t)(buf + (size_t)i * 4096) / 4096 * 8);

		if (pread(fd, &e, 8, off) != 8 || !(e & (1ull << 63)) || !(e & ((1ull << 55) - 1))) {
			close(fd);
			return -EPERM;	/* not present, or no PFN (needs root) */
		}
		gpa[i] = (e & ((1ull << 55) - 1)) * 4096;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull, records = 0, free_lies = 0, t0, end, rate;
	struct vtier_guest_guest *g;
	struct vtier_guest_hint *ring;
	uint64_t *gpa;
	uint32_t prod = 0, mask;
	uint8_t *mem, *own;
	struct stat st;
	int fd;

	if (argc != 4) {
		fprintf(stderr, "usage: vtier-tbhostile RESOURCE2 SECONDS RATE\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_SYNC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "vtier-tbhostile: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	mem = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		fprintf(stderr, "vtier-tbhostile: mmap %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	own = mmap(NULL, OWN_PAGES * 4096ul, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	gpa = calloc(OWN_PAGES, sizeof(*gpa));
	if (own == MAP_FAILED || !gpa || mlock(own, OWN_PAGES * 4096ul) < 0) {
		fprintf(stderr, "vtier-tbhostile: its own memory: %s\n", strerror(errno));
		return 2;
	}
	memset(own, 0xa5, OWN_PAGES * 4096ul);
	if (own_gpas(own, gpa) < 0) {
		fprintf(stderr, "vtier-tbhostile: /proc/self/pagemap gives no frames (root?)\n");
		return 2;
	}
	g = (void *)(mem + VTIER_GUEST_GUEST_OFFSET);
	ring = (void *)(mem + VTIER_GUEST_RING_OFFSET);
	mask = (uint32_t)((st.st_size - VTIER_GUEST_RING_OFFSET) / sizeof(*ring));
	while (mask & (mask - 1))
		mask &= mask - 1;	/* the host's ring: the power of 2 that fits */
	mask--;
	g->abi_version = VTIER_GUEST_ABI_VERSION;
	g->header_size = sizeof(*g);
	g->flags = VTIER_GUEST_F_FREE | VTIER_GUEST_F_COLD | VTIER_GUEST_F_RECLAIM;
	__atomic_store_n(&g->magic, VTIER_GUEST_GUEST_MAGIC, __ATOMIC_RELEASE);

	rate = strtoull(argv[3], NULL, 0);
	t0 = now_ns();
	end = t0 + strtoull(argv[2], NULL, 0) * 1000000000ull;
	for (uint64_t now = t0; now < end; now = now_ns()) {
		/* in batches of 256, paced to RATE on average */
		if (rate && records * 1000000000ull / rate > now - t0) {
			usleep(100);
			continue;
		}
		for (int b = 0; b < 256; b++, records++) {
			struct vtier_guest_hint *r = &ring[prod & mask];
			uint64_t x = rnd(&seed);

			r->seq = prod;
			r->flags = 0;
			r->arg = 0;
			switch (x % 10) {
			case 0:		/* garbage */
				for (unsigned int i = 0; i < sizeof(*r) / 8; i++)
					((uint64_t *)r)[i] = rnd(&seed);
				break;
			case 1:		/* stale seq */
				r->seq = prod - 1024;
				r->kind = VTIER_GUEST_FREE;
				r->gpa = 0x100000;
				r->size_bytes = 4096;
				break;
			case 2:		/* outside RAM */
				r->kind = VTIER_GUEST_FREE;
				r->gpa = (1ull << 46) + (x & ~4095ull);
				r->size_bytes = 1 << 20;
				break;
			case 3:		/* unaligned */
				r->kind = VTIER_GUEST_COLD;
				r->gpa = 0x100123;
				r->size_bytes = 4096;
				break;
			case 4:		/* too big */
				r->kind = VTIER_GUEST_FREE;
				r->gpa = 0;
				r->size_bytes = 2ull << 30;
				break;
			case 5:		/* unknown kind */
				r->kind = 77;
				break;
			case 6:		/* a balloon it never had */
				r->kind = VTIER_GUEST_DEFLATE;
				r->gpa = 0x200000;
				r->size_bytes = 1 << 21;
				r->arg = 1;
				break;
			case 7:		/* its index far ahead of the host's: once per 2^20 records */
				if ((records & ((1u << 20) - 1)) < 10) {
					prod += 1u << 24;
					break;
				}
				/* fall through */
			default:	/* "free": its own pages, in use */
				r->kind = VTIER_GUEST_FREE;
				r->gpa = gpa[x % OWN_PAGES];
				r->size_bytes = 4096;
				free_lies++;
				break;
			}
			prod++;
			__atomic_store_n(&g->prod, prod, __ATOMIC_RELEASE);
		}
	}
	/* what the lies cost it: pages of its own that no longer hold 0xa5 */
	{
		uint64_t changed = 0;

		for (size_t i = 0; i < OWN_PAGES * 4096ul; i += 4096)
			changed += own[i] != 0xa5 || own[i + 4095] != 0xa5;
		printf("records=%llu free_lies=%llu own_pages_changed=%llu\n",
		       (unsigned long long)records, (unsigned long long)free_lies,
		       (unsigned long long)changed);
	}
	return 0;
}
