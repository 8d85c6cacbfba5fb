// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-tbprogress: reads several guests' access counts at one instant, from
 * L1. Each guest's vtier-workload keeps its count in a locked page
 * ("vtier-workload ctl progress": its guest-physical address and cookie); this
 * reads that page out of each guest's QEMU (/proc/PID/mem), one guest after
 * the other within microseconds, so that two twins' rates cover the same
 * seconds (bench-slowdown). Asking each guest in turn put a command's latency,
 * hundreds of ms under TCG, between the two counts.
 *
 *   vtier-tbprogress ram PID SIZE            the address in PID of the guest's
 *                                            RAM: its one writable mapping of
 *                                            SIZE bytes (anonymous or memfd)
 *   vtier-tbprogress read PID:ADDR:COOKIE... one line "ns=N accesses=A,B,...":
 *                                            CLOCK_MONOTONIC between the reads,
 *                                            each page's count in order
 * Exit: 0 ok, 2 usage or a failure (the reason on stderr: no such mapping, a
 * page that is not the workload's progress page, a cookie that differs).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* tests/testbed/workload/workload.h, struct wl_progress */
#define WL_PROGRESS_MAGIC 0x7674696572707267ULL
struct wl_progress {
	uint64_t magic, cookie, accesses;
};

#define MAXG 8

static unsigned long long num(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end) {
		fprintf(stderr, "vtier-tbprogress: %s: bad number '%s'\n", what, s);
		exit(2);
	}
	return v;
}

static int ram(const char *pid, unsigned long long size)
{
	char path[64], line[512];
	unsigned long long lo, hi, found = 0;
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "vtier-tbprogress: %s: %s\n", path, strerror(errno));
		return 2;
	}
	while (fgets(line, sizeof(line), f)) {
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) == 3 && hi - lo == size &&
		    perms[0] == 'r' && perms[1] == 'w') {
			found = lo;
			n++;
		}
	}
	fclose(f);
	if (n != 1) {
		fprintf(stderr, "vtier-tbprogress: pid %s has %d writable mappings of %llu bytes, "
			"not one: which is the guest's RAM is not known\n", pid, n, size);
		return 2;
	}
	printf("0x%llx\n", found);
	return 0;
}

static int read_all(int n, char **specs)
{
	int fd[MAXG];
	unsigned long long addr[MAXG], cookie[MAXG];
	struct wl_progress pg[MAXG];
	struct timespec t0, t1;

	if (n > MAXG) {
		fprintf(stderr, "vtier-tbprogress: at most %d guests\n", MAXG);
		return 2;
	}
	for (int i = 0; i < n; i++) {
		char *pid = specs[i], *a = strchr(pid, ':'), *c = a ? strchr(a + 1, ':') : NULL;
		char path[64];

		if (!a || !c) {
			fprintf(stderr, "vtier-tbprogress: '%s': want PID:ADDR:COOKIE\n", specs[i]);
			return 2;
		}
		*a++ = 0;
		*c++ = 0;
		addr[i] = num(a, "ADDR");
		cookie[i] = num(c, "COOKIE");
		snprintf(path, sizeof(path), "/proc/%s/mem", pid);
		fd[i] = open(path, O_RDONLY | O_CLOEXEC);
		if (fd[i] < 0) {
			fprintf(stderr, "vtier-tbprogress: %s: %s\n", path, strerror(errno));
			return 2;
		}
	}
	/* the files opened first: the reads alone between the two clock reads */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) {
		if (pread(fd[i], &pg[i], sizeof(pg[i]), (off_t)addr[i]) != (ssize_t)sizeof(pg[i])) {
			fprintf(stderr, "vtier-tbprogress: guest %d: reading 0x%llx: %s\n", i, addr[i],
				strerror(errno));
			return 2;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int i = 0; i < n; i++) {
		close(fd[i]);
		if (pg[i].magic != WL_PROGRESS_MAGIC || pg[i].cookie != cookie[i]) {
			fprintf(stderr, "vtier-tbprogress: guest %d: 0x%llx is not its progress page "
				"(magic 0x%" PRIx64 ", cookie 0x%" PRIx64 ", want 0x%llx): moved, or the "
				"wrong address\n", i, addr[i], pg[i].magic, pg[i].cookie, cookie[i]);
			return 2;
		}
	}
	printf("ns=%lld spread_ns=%lld accesses=",
	       (long long)t0.tv_sec * 1000000000 + t0.tv_nsec,
	       ((long long)t1.tv_sec - t0.tv_sec) * 1000000000 + t1.tv_nsec - t0.tv_nsec);
	for (int i = 0; i < n; i++)
		printf("%s%" PRIu64, i ? "," : "", pg[i].accesses);
	putchar('\n');
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "ram"))
		return ram(argv[2], num(argv[3], "SIZE"));
	if (argc >= 3 && !strcmp(argv[1], "read"))
		return read_all(argc - 2, argv + 2);
	fprintf(stderr, "usage: vtier-tbprogress ram PID SIZE | read PID:ADDR:COOKIE...\n");
	return 2;
}
