// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-tbrewrite: use a block device's cached pages, over and over, for the
 * guest-hints scenario's cold part. Runs in the guest (root). SRC is what was
 * written to DEV from offset 0; DEV is mapped shared and every pass stores
 * one byte into each of its 4 KiB pages, the byte SRC holds there (the
 * contents do not change): one store a page and no system call, where a dd
 * pass copies whole pages through write() (3-5 s a pass for 128 MiB in the
 * testbed's nested guest, late in the shared-L1 suite), so that each page is
 * written several times a second. On the way out the mapping is made cold
 * (MADV_COLD: its pages' young and referenced bits cleared, the pages
 * deactivated) and unmapped: the pages end as dd leaves them, dirty page
 * cache nobody maps or has referenced (what vtier_guest.ko reports as COLD
 * once clean). The caller syncs.
 *   vtier-tbrewrite DEV SRC SECONDS MIN_PASSES
 * After a first pass that maps the pages, passes go on until SECONDS have
 * gone by and MIN_PASSES are done; then one line:
 * "first_pass_ms=F passes=N seconds=S pass_ms_max=M pages=P".
 * Static (the L2 root has no libraries).
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

#define PAGE 4096

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int die(const char *what, const char *name)
{
	fprintf(stderr, "vtier-tbrewrite: %s %s: %s\n", what, name, strerror(errno));
	return 2;
}

int main(int argc, char **argv)
{
	unsigned long seconds, min_passes, passes = 0;
	double t0, first, pass_max = 0;
	volatile unsigned char *map;
	unsigned char *bytes;
	struct stat st;
	uint64_t pages;
	char *end;
	int dev, src;

	if (argc != 5) {
		fprintf(stderr, "usage: vtier-tbrewrite DEV SRC SECONDS MIN_PASSES\n");
		return 2;
	}
	errno = 0;
	seconds = strtoul(argv[3], &end, 10);
	if (errno || *end || end == argv[3]) {
		fprintf(stderr, "vtier-tbrewrite: SECONDS: not a number: %s\n", argv[3]);
		return 2;
	}
	min_passes = strtoul(argv[4], &end, 10);
	if (errno || *end || end == argv[4]) {
		fprintf(stderr, "vtier-tbrewrite: MIN_PASSES: not a number: %s\n", argv[4]);
		return 2;
	}
	src = open(argv[2], O_RDONLY);
	if (src < 0 || fstat(src, &st) < 0)
		return die("open", argv[2]);
	dev = open(argv[1], O_RDWR);
	if (dev < 0)
		return die("open", argv[1]);
	pages = (uint64_t)st.st_size / PAGE;
	if (!pages) {
		fprintf(stderr, "vtier-tbrewrite: %s: less than a page\n", argv[2]);
		return 2;
	}
	bytes = malloc(pages);
	if (!bytes)
		return die("malloc for", argv[2]);
	{
		const unsigned char *s = mmap(NULL, pages * PAGE, PROT_READ, MAP_SHARED, src, 0);

		if (s == MAP_FAILED)
			return die("mmap", argv[2]);
		for (uint64_t i = 0; i < pages; i++)
			bytes[i] = s[i * PAGE];
		munmap((void *)s, pages * PAGE);
	}
	map = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, dev, 0);
	if (map == MAP_FAILED)
		return die("mmap", argv[1]);
	/*
	 * The first pass maps every page (a write fault each: 5-7 s for 128 MiB
	 * in the testbed's nested guest, where a pass over mapped pages takes
	 * tens of ms): the SECONDS of use start after it.
	 */
	first = now_s();
	for (uint64_t i = 0; i < pages; i++)
		map[i * PAGE] = bytes[i];
	t0 = now_s();
	first = t0 - first;
	while (passes < min_passes || now_s() - t0 < (double)seconds) {
		double p0 = now_s(), took;

		for (uint64_t i = 0; i < pages; i++)
			map[i * PAGE] = bytes[i];
		passes++;
		took = now_s() - p0;
		if (took > pass_max)
			pass_max = took;
	}
	if (madvise((void *)map, pages * PAGE, MADV_COLD) < 0)
		return die("madvise(MADV_COLD)", argv[1]);
	if (munmap((void *)map, pages * PAGE) < 0)
		return die("munmap", argv[1]);
	printf("first_pass_ms=%.0f passes=%lu seconds=%.1f pass_ms_max=%.0f pages=%llu\n",
	       first * 1000, passes, now_s() - t0, pass_max * 1000, (unsigned long long)pages);
	return 0;
}
