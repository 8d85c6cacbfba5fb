// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-tbcache: where a guest's clean page cache is, for the guest-hints
 * scenario's cold part. Runs in the guest (root): reads /proc/kpageflags and
 * prints the guest-physical extents of the frames that are file pages on an
 * LRU list, neither anonymous, swap-backed, mapped, dirty, under writeback
 * nor unevictable: the pages vtier_guest.ko may report as COLD when nobody
 * touched them. One line per extent, "gpa=0x.. bytes=0x.." (vtier-tbnuma's
 * where-gpa reads them), then "pages=N frames=N lru=N lru_file=N" on stderr.
 *   vtier-tbcache > FILE
 * Static (the L2 root has no libraries); shares no code with vtier_guest.ko.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* include/uapi/linux/kernel-page-flags.h */
#define KPF_DIRTY	4
#define KPF_LRU		5
#define KPF_MMAP	11
#define KPF_ANON	12
#define KPF_WRITEBACK	8
#define KPF_SWAPBACKED	14
#define KPF_UNEVICTABLE	18
#define KPF_NOPAGE	20

#define BIT(n) (1ull << (n))

int main(void)
{
	const uint64_t bad = BIT(KPF_DIRTY) | BIT(KPF_MMAP) | BIT(KPF_ANON) | BIT(KPF_WRITEBACK) |
			     BIT(KPF_UNEVICTABLE) | BIT(KPF_SWAPBACKED) | BIT(KPF_NOPAGE);
	uint64_t buf[4096], pfn = 0, start = 0, run = 0, total = 0, lru = 0, file = 0, frames = 0;
	int fd = open("/proc/kpageflags", O_RDONLY);
	ssize_t n;

	if (fd < 0) {
		fprintf(stderr, "vtier-tbcache: /proc/kpageflags: %s\n", strerror(errno));
		return 2;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n / 8; i++, pfn++) {
			frames++;
			lru += !!(buf[i] & BIT(KPF_LRU));
			file += (buf[i] & (BIT(KPF_LRU) | BIT(KPF_ANON) | BIT(KPF_SWAPBACKED))) ==
				BIT(KPF_LRU);
			if ((buf[i] & BIT(KPF_LRU)) && !(buf[i] & bad)) {
				if (!run)
					start = pfn;
				run++;
				continue;
			}
			if (run)
				printf("gpa=0x%llx bytes=0x%llx\n", (unsigned long long)start * 4096,
				       (unsigned long long)run * 4096);
			total += run;
			run = 0;
		}
	}
	if (run)
		printf("gpa=0x%llx bytes=0x%llx\n", (unsigned long long)start * 4096,
		       (unsigned long long)run * 4096);
	total += run;
	close(fd);
	/* what it saw, for a run that finds nothing */
	fprintf(stderr, "pages=%llu frames=%llu lru=%llu lru_file=%llu\n",
		(unsigned long long)total, (unsigned long long)frames, (unsigned long long)lru,
		(unsigned long long)file);
	return n < 0 ? 2 : 0;
}
