// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-tbuffd: the baseline of vtierd's fault latency, measured where vtierd
 * runs. A thread touches N pages of a shared memfd registered with a
 * userfaultfd (MISSING, shmem: like QEMU's guest RAM); this thread serves
 * each fault with a bare UFFDIO_COPY of a ready page, timing the same span
 * vtierd's fault thread times (from reading the fault to the copy done).
 *   vtier-tbuffd bare-copy [PAGES]   ->  "bare_copy_p50_us=.. bare_copy_p99_us=.. n=.."
 * Static (the testbed's L1 has no libraries for it); no code shared with vtierd.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL

static uint8_t *map;
static unsigned long npages;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void *toucher(void *arg)
{
	volatile uint64_t sum = 0;

	(void)arg;
	for (unsigned long i = 0; i < npages; i++)
		sum += map[i * PAGE];
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_MISSING_SHMEM };
	struct uffdio_register reg;
	static uint8_t src[PAGE];
	uint64_t *lat;
	unsigned long n = 0;
	pthread_t t;
	int memfd, uffd;

	if (argc < 2 || strcmp(argv[1], "bare-copy")) {
		fprintf(stderr, "usage: vtier-tbuffd bare-copy [PAGES]\n");
		return 2;
	}
	npages = argc > 2 ? strtoul(argv[2], NULL, 0) : 20000;
	if (!npages || npages > (1UL << 24))
		return 2;
	memset(src, 0x5a, sizeof(src));
	lat = calloc(npages, sizeof(*lat));
	memfd = memfd_create("tbuffd", MFD_CLOEXEC);
	if (!lat || memfd < 0 || ftruncate(memfd, (off_t)(npages * PAGE))) {
		perror("vtier-tbuffd: memfd");
		return 1;
	}
	map = mmap(NULL, npages * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (map == MAP_FAILED || uffd < 0 || ioctl(uffd, UFFDIO_API, &api)) {
		perror("vtier-tbuffd: userfaultfd");
		return 1;
	}
	reg = (struct uffdio_register){
		.range = { (uintptr_t)map, npages * PAGE },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	if (ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		perror("vtier-tbuffd: UFFDIO_REGISTER");
		return 1;
	}
	if (pthread_create(&t, NULL, toucher, NULL))
		return 1;
	while (n < npages) {
		struct pollfd pfd = { .fd = uffd, .events = POLLIN };
		struct uffd_msg msg;
		struct uffdio_copy c;
		uint64_t t0;

		if (poll(&pfd, 1, 10000) <= 0)
			break;
		t0 = now_ns();
		if (read(uffd, &msg, sizeof(msg)) != sizeof(msg) || msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		c = (struct uffdio_copy){
			.dst = msg.arg.pagefault.address & ~(PAGE - 1),
			.src = (uintptr_t)src,
			.len = PAGE,
		};
		if (ioctl(uffd, UFFDIO_COPY, &c) && errno != EEXIST) {
			perror("vtier-tbuffd: UFFDIO_COPY");
			return 1;
		}
		lat[n++] = now_ns() - t0;
	}
	pthread_join(t, NULL);
	if (!n)
		return 1;
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("bare_copy_p50_us=%.1f bare_copy_p99_us=%.1f n=%lu\n", lat[n / 2] / 1000.0,
	       lat[n * 99 / 100] / 1000.0, n);
	return 0;
}
