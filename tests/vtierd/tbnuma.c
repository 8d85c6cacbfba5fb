// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-tbnuma: the testbed's independent view of where a process's pages
 * live (move_pages status queries), and the set-up step that spreads a VM's
 * RAM over nodes. It shares no code with vtierd, so the scenarios do not take
 * the agent's word for its own results.
 *
 *   vtier-tbnuma where PID HVA LEN              pages per node in [HVA, HVA+LEN)
 *   vtier-tbnuma where-gpa PID BASE FILE        same, for the "gpa=0x.. bytes=0x.."
 *                                               extents of FILE at BASE + gpa
 *   vtier-tbnuma spread PID HVA LEN NODES       move 2 MiB chunks round-robin to
 *                                               NODES (comma list)
 *   vtier-tbnuma place-gpa PID BASE FILE NODE   move the pages of FILE's extents
 *                                               at BASE + gpa to NODE
 *   vtier-tbnuma move PID HVA LEN NODE          move [HVA, HVA+LEN) to NODE in one
 *                                               move_pages call (the kernel's own
 *                                               migration of a range, to compare with)
 *   vtier-tbnuma chunks PID BASE FILE           one character per 2 MiB of FILE's
 *                                               extents: the node most of its present
 *                                               pages are on, '-' when none is present
 * Output: one line "node0=N node1=N node2=N absent=N other=N pages=N".
 * Exit: 0 ok, 2 usage or a failing call (with the reason on stderr).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BATCH 512
#define MAXN 8

static unsigned long long count[MAXN], absent, other, pages;

static long mp(int pid, unsigned long n, void **p, const int *nodes, int *st, int flags)
{
	return syscall(SYS_move_pages, pid, n, p, nodes, st, flags);
}

static int query(int pid, unsigned long long hva, unsigned long long len)
{
	void *p[BATCH];
	int st[BATCH];

	for (unsigned long long off = 0; off < len; off += BATCH * 4096ULL) {
		unsigned long n = (unsigned long)((len - off) / 4096 < BATCH ? (len - off) / 4096 : BATCH);

		for (unsigned long i = 0; i < n; i++)
			p[i] = (void *)(uintptr_t)(hva + off + i * 4096ULL);
		if (mp(pid, n, p, NULL, st, 0) < 0) {
			fprintf(stderr, "vtier-tbnuma: move_pages(%d): %s\n", pid, strerror(errno));
			return -1;
		}
		for (unsigned long i = 0; i < n; i++) {
			pages++;
			if (st[i] >= 0 && st[i] < MAXN)
				count[st[i]]++;
			else if (st[i] == -ENOENT || st[i] == -EFAULT)
				absent++;
			else
				other++;
		}
	}
	return 0;
}

/* Move [hva, hva+len) to nodes[], round-robin per 2 MiB; absent pages are skipped. */
static int move_range(int pid, unsigned long long hva, unsigned long long len, const int *nodes,
		      int nn)
{
	void *p[BATCH];
	int dst[BATCH], st[BATCH];

	for (unsigned long long off = 0; off < len; off += BATCH * 4096ULL) {
		unsigned long n = (unsigned long)((len - off) / 4096 < BATCH ? (len - off) / 4096 : BATCH);
		int node = nodes[(off / (2ULL << 20)) % nn];

		for (unsigned long i = 0; i < n; i++) {
			p[i] = (void *)(uintptr_t)(hva + off + i * 4096ULL);
			dst[i] = node;
		}
		if (mp(pid, n, p, dst, st, 2 /* MPOL_MF_MOVE */) < 0 && errno != ENOENT) {
			fprintf(stderr, "vtier-tbnuma: move_pages(%d): %s\n", pid, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* [hva, hva + len) to @node in one move_pages call */
static int move_once(int pid, unsigned long long hva, unsigned long long len, int node)
{
	unsigned long n = (unsigned long)(len / 4096);
	void **p = calloc(n ? n : 1, sizeof(*p));
	int *dst = calloc(n ? n : 1, sizeof(*dst)), *st = calloc(n ? n : 1, sizeof(*st));
	int ret = 0;

	if (!p || !dst || !st) {
		fprintf(stderr, "vtier-tbnuma: %lu pages: out of memory\n", n);
		ret = -1;
		goto out;
	}
	for (unsigned long i = 0; i < n; i++) {
		p[i] = (void *)(uintptr_t)(hva + i * 4096ULL);
		dst[i] = node;
	}
	if (mp(pid, n, p, dst, st, 2 /* MPOL_MF_MOVE */) < 0 && errno != ENOENT) {
		fprintf(stderr, "vtier-tbnuma: move_pages(%d): %s\n", pid, strerror(errno));
		ret = -1;
	}
out:
	free(p);
	free(dst);
	free(st);
	return ret;
}

static void print(void)
{
	for (int i = 0; i < 3; i++)
		printf("node%d=%llu ", i, count[i]);
	printf("absent=%llu other=%llu pages=%llu\n", absent, other, pages);
}

static unsigned long long num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || !*s) {
		fprintf(stderr, "vtier-tbnuma: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "where")) {
		if (query((int)num(argv[2]), num(argv[3]), num(argv[4])))
			return 2;
	} else if (argc == 5 && !strcmp(argv[1], "where-gpa")) {
		FILE *f = fopen(argv[4], "r");
		unsigned long long base = num(argv[3]), gpa, bytes;
		char line[256];

		if (!f) {
			fprintf(stderr, "vtier-tbnuma: %s: %s\n", argv[4], strerror(errno));
			return 2;
		}
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "gpa=%llx bytes=%llx", &gpa, &bytes) == 2 &&
			    query((int)num(argv[2]), base + gpa, bytes))
				return 2;
		fclose(f);
	} else if (argc == 5 && !strcmp(argv[1], "chunks")) {
		FILE *f = fopen(argv[4], "r");
		unsigned long long base = num(argv[3]), gpa, bytes;
		char line[256];

		if (!f) {
			fprintf(stderr, "vtier-tbnuma: %s: %s\n", argv[4], strerror(errno));
			return 2;
		}
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "gpa=%llx bytes=%llx", &gpa, &bytes) != 2)
				continue;
			for (unsigned long long off = 0; off < bytes; off += 2ULL << 20) {
				unsigned long long len = bytes - off < (2ULL << 20) ? bytes - off : 2ULL << 20;
				int best = -1;

				memset(count, 0, sizeof(count));
				if (query((int)num(argv[2]), base + gpa + off, len))
					return 2;
				for (int n = 0; n < MAXN; n++)
					if (count[n] && (best < 0 || count[n] > count[best]))
						best = n;
				putchar(best < 0 ? '-' : '0' + best);
			}
		}
		fclose(f);
		putchar('\n');
		return 0;
	} else if (argc == 6 && !strcmp(argv[1], "spread")) {
		int pid = (int)num(argv[2]), nodes[MAXN], nn = 0;
		unsigned long long hva = num(argv[3]), len = num(argv[4]);
		char *tok, *save = NULL;

		for (tok = strtok_r(argv[5], ",", &save); tok && nn < MAXN;
		     tok = strtok_r(NULL, ",", &save))
			nodes[nn++] = (int)num(tok);
		if (!nn)
			return 2;
		if (move_range(pid, hva, len, nodes, nn) || query(pid, hva, len))
			return 2;
	} else if (argc == 6 && !strcmp(argv[1], "place-gpa")) {
		FILE *f = fopen(argv[4], "r");
		unsigned long long base = num(argv[3]), gpa, bytes;
		int pid = (int)num(argv[2]), node = (int)num(argv[5]);
		char line[256];

		if (!f) {
			fprintf(stderr, "vtier-tbnuma: %s: %s\n", argv[4], strerror(errno));
			return 2;
		}
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "gpa=%llx bytes=%llx", &gpa, &bytes) == 2 &&
			    (move_range(pid, base + gpa, bytes, &node, 1) ||
			     query(pid, base + gpa, bytes)))
				return 2;
		fclose(f);
	} else if (argc == 6 && !strcmp(argv[1], "move")) {
		int pid = (int)num(argv[2]);
		unsigned long long hva = num(argv[3]), len = num(argv[4]);

		if (move_once(pid, hva, len, (int)num(argv[5])) || query(pid, hva, len))
			return 2;
	} else {
		fprintf(stderr, "usage: vtier-tbnuma where PID HVA LEN | where-gpa PID BASE FILE | "
			"spread PID HVA LEN NODES | place-gpa PID BASE FILE NODE | "
			"move PID HVA LEN NODE\n");
		return 2;
	}
	print();
	return 0;
}
