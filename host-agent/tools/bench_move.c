// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-bench move: bytes per second moved between NUMA nodes by vtier's NUMA
 * mover (vt_numa_move_ranges() on another process, up to 16 chunks of 2 MiB
 * per call, as the engine passes a window's orders to one tier) against plain move_pages(2) loops over the same pages
 * and a memcpy of the same bytes between buffers bound to the same two nodes,
 * all in one run, the methods alternating round by round.
 *
 * The memory is a QEMU process's guest RAM: the 2 MiB chunks of it that are
 * fully present and have the asked backing (4 KiB pages or a PMD-mapped THP,
 * told by /proc/kpageflags), up to --region-mib. Every method starts with the
 * whole set on node 0, moves it to node N (timed), then back (timed); pages a
 * method left behind are moved untimed before the next one, and only bytes
 * that reached the target count.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>
#include <numaif.h>

#include "numa.h"
#include "procmaps.h"
#include "thread_ns.h"
#include "vtier_bench.h"

#define CHUNK (2ULL << 20)
#define PAGE 4096ULL
#define PAGES_PER_CHUNK (CHUNK / PAGE)
#define KPF_THP 22

enum backing { BACKING_4K, BACKING_THP };

enum method_kind {
	M_MOVER,	/* vt_numa_move_ranges, @batch chunks per call (0: the engine's 16) */
	M_PAGES,	/* move_pages, one entry per 4 KiB, @batch entries per call */
	M_HEADS,	/* move_pages, one entry per 2 MiB (THP heads), @batch per call */
	M_QUERY,	/* move_pages status query only (what the mover adds per batch) */
	M_MEMCPY,	/* memcpy between buffers bound to the two nodes */
};

struct method {
	const char *name;
	enum method_kind kind;
	unsigned int batch;	/* entries per call; 0 = all in one call */
	GArray *mbps;		/* double per timed round trip */
	uint64_t calls, entries, busy, retried, already, moved_pages, cost_ns;
	unsigned int trips;
};

struct bench {
	pid_t pid;
	uint64_t hva, guest_size;
	GArray *chunks;		/* uint64_t hva of each selected chunk */
	uint64_t bytes;
	void **pages;		/* every 4 KiB page of the chunks */
	int *status, *nodes;
	uint64_t npages;
	char *buf0, *bufn;
};

static long sys_move_pages(pid_t pid, unsigned long n, void **pages, const int *nodes,
			   int *status, int flags)
{
	return syscall(SYS_move_pages, pid, n, pages, nodes, status, flags);
}

/* The node of every page of the set, into b->status. */
static int query_all(struct bench *b)
{
	for (uint64_t done = 0; done < b->npages; done += VT_NUMA_BATCH) {
		unsigned long k = MIN(b->npages - done, VT_NUMA_BATCH);

		if (sys_move_pages(b->pid, k, b->pages + done, NULL, b->status + done, 0) < 0)
			return -errno;
	}
	return 0;
}

static int count_on(struct bench *b, int node, uint64_t *on)
{
	int ret = query_all(b);

	*on = 0;
	for (uint64_t i = 0; i < b->npages && !ret; i++)
		*on += b->status[i] == node;
	return ret;
}

/* Untimed: every page of the set to @node (a few passes for busy pages). */
static int settle(struct bench *b, int node)
{
	for (int pass = 0; pass < 5; pass++) {
		uint64_t on;
		int ret = count_on(b, node, &on);

		if (ret)
			return ret;
		if (on == b->npages)
			return 0;
		for (uint64_t i = 0; i < b->npages; i++)
			b->nodes[i] = node;
		if (sys_move_pages(b->pid, b->npages, b->pages, b->nodes, b->status,
				   MPOL_MF_MOVE) < 0 && errno != ENOENT)
			return -errno;
	}
	return -EAGAIN;
}

static int run_pages(struct bench *b, struct method *m, int node, uint64_t stride_pages)
{
	uint64_t n = b->npages / stride_pages;
	uint64_t batch = m->batch ? m->batch : n;
	void **p = b->pages;
	g_autofree void **heads = NULL;

	if (stride_pages > 1) {
		heads = g_new(void *, n);
		for (uint64_t i = 0; i < n; i++)
			heads[i] = b->pages[i * stride_pages];
		p = heads;
	}
	for (uint64_t i = 0; i < n; i++)
		b->nodes[i] = node;
	for (uint64_t done = 0; done < n; done += batch) {
		unsigned long k = MIN(n - done, batch);
		int *nodes = m->kind == M_QUERY ? NULL : b->nodes + done;

		m->calls++;
		m->entries += k;
		if (sys_move_pages(b->pid, k, p + done, nodes, b->status + done,
				   m->kind == M_QUERY ? 0 : MPOL_MF_MOVE) < 0 && errno != ENOENT)
			return -errno;
	}
	return 0;
}

static int run_mover(struct bench *b, struct method *m, int node)
{
	/* @batch chunks per call; the engine's: VT_NUMA_RANGES_MAX */
	unsigned int per = m->batch ? MIN(m->batch, VT_NUMA_RANGES_MAX) : VT_NUMA_RANGES_MAX;

	for (unsigned int i = 0; i < b->chunks->len; i += per) {
		struct vt_numa_range r[VT_NUMA_RANGES_MAX] = { 0 };
		struct vt_move_result t = { 0 };
		unsigned int n = MIN(b->chunks->len - i, per);
		int ret;

		for (unsigned int k = 0; k < n; k++) {
			r[k].hva = g_array_index(b->chunks, uint64_t, i + k);
			r[k].len = CHUNK;
		}
		ret = vt_numa_move_ranges(b->pid, r, n, node, PAGE, &t);
		if (ret)
			return ret;
		m->calls += t.calls;
		m->entries += t.entries + t.retried;
		m->busy += t.busy;
		m->retried += t.retried;
		m->already += t.already;
		m->moved_pages += t.moved;
		m->cost_ns += t.cost_ns;
	}
	return 0;
}

/* One timed move of the set to @node; *@bytes_out: the bytes that got there. */
static int timed_move(struct bench *b, struct method *m, int node, uint64_t *ns,
		      uint64_t *bytes_out)
{
	uint64_t t0 = vt_now_ns(), on;
	int ret;

	switch (m->kind) {
	case M_MOVER:
		ret = run_mover(b, m, node);
		break;
	case M_PAGES:
	case M_QUERY:
		ret = run_pages(b, m, node, 1);
		break;
	case M_HEADS:
		ret = run_pages(b, m, node, PAGES_PER_CHUNK);
		break;
	case M_MEMCPY:
		if (node == 0)
			memcpy(b->buf0, b->bufn, b->bytes);
		else
			memcpy(b->bufn, b->buf0, b->bytes);
		ret = 0;
		break;
	default:
		ret = -EINVAL;
	}
	*ns = vt_now_ns() - t0;
	if (ret)
		return ret;
	if (m->kind == M_MEMCPY || m->kind == M_QUERY) {
		*bytes_out = b->bytes;
		return 0;
	}
	ret = count_on(b, node, &on);
	*bytes_out = on * PAGE;
	return ret;
}

static void close_page_flags(int fds[2])
{
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	fds[0] = fds[1] = -1;
}

/* The kpageflags THP bit of the page mapped at @hva of @pid, 0/1, or -errno. */
static int page_is_thp(int pagemap_fd, int kpf_fd, uint64_t hva)
{
	uint64_t ent, flags;

	if (pread(pagemap_fd, &ent, sizeof(ent), (off_t)(hva / PAGE * 8)) != sizeof(ent))
		return -errno;
	if (!(ent >> 63) || !(ent & ((1ULL << 55) - 1)))
		return -ENOENT;		/* not present, or no PFN (needs CAP_SYS_ADMIN) */
	if (pread(kpf_fd, &flags, sizeof(flags), (off_t)((ent & ((1ULL << 55) - 1)) * 8)) !=
	    sizeof(flags))
		return -errno;
	return (int)((flags >> KPF_THP) & 1);
}

/* @pid's pagemap and /proc/kpageflags into @fds (0 or -errno; both closed on error). */
static int open_page_flags(pid_t pid, int fds[2])
{
	char path[64];
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	fds[0] = open(path, O_RDONLY | O_CLOEXEC);
	fds[1] = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	if (fds[0] < 0 || fds[1] < 0) {
		ret = -errno;
		fprintf(stderr, "vtier-bench move: cannot read %s or /proc/kpageflags: %s (run as root)\n",
			path, strerror(-ret));
		close_page_flags(fds);
	}
	return ret;
}

/* THP-backed chunks among the selected ones (-errno: cannot tell). */
static int count_thp(struct bench *b)
{
	int fds[2], thp = open_page_flags(b->pid, fds);

	for (unsigned int i = 0; i < b->chunks->len && !thp; i++) {
		int r = page_is_thp(fds[0], fds[1], g_array_index(b->chunks, uint64_t, i));

		if (r < 0) {
			thp = r;
			break;
		}
		thp += r;
	}
	close_page_flags(fds);
	return thp;
}

/* AnonHugePages of the mapping that holds @hva, in KiB (-1: not found). */
static long smaps_anon_huge_kb(pid_t pid, uint64_t hva, uint64_t *vma_size)
{
	char path[64], line[512];
	FILE *f;
	int in = 0;
	long kb = -1;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;

		if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in = hva >= lo && hva < hi;
			if (in)
				*vma_size = hi - lo;
		} else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) {
			break;
		}
	}
	fclose(f);
	return kb;
}

/* The guest RAM mapping: the anonymous read-write mapping of exactly @size bytes. */
static int find_guest_ram(pid_t pid, uint64_t size, uint64_t *hva)
{
	g_autoptr(GArray) maps = g_array_new(FALSE, TRUE, sizeof(struct vt_mapping));
	g_autoptr(GError) e = NULL;
	int found = 0;

	if (!vt_procmaps_read(pid, maps, &e))
		return -e->code;
	for (unsigned int i = 0; i < maps->len; i++) {
		const struct vt_mapping *m = &g_array_index(maps, struct vt_mapping, i);

		if (m->end - m->start == size && m->perms[0] == 'r' && m->perms[1] == 'w' &&
		    !m->path[0]) {
			*hva = m->start;
			found++;
		}
	}
	return found == 1 ? 0 : found ? -EEXIST : -ENOENT;
}

/*
 * Split every THP of guest RAM into 4 KiB pages, in place (the debugfs knob
 * split_huge_pages: PID,START,END). With L1's THP set to never afterwards,
 * khugepaged leaves them split: the same pages, 4 KiB-backed.
 */
static int split_thp(const struct bench *b)
{
	const char *knob = "/sys/kernel/debug/split_huge_pages";
	char cmd[96];
	int fd, len, ret = 0;

	fd = open(knob, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		fprintf(stderr, "vtier-bench move: %s: %s (mount debugfs; needs root)\n", knob,
			strerror(-ret));
		return ret;
	}
	len = snprintf(cmd, sizeof(cmd), "%d,0x%" PRIx64 ",0x%" PRIx64, (int)b->pid, b->hva,
		       b->hva + b->guest_size);
	if (write(fd, cmd, (size_t)len) != len) {
		ret = -errno;
		fprintf(stderr, "vtier-bench move: %s <- %s: %s\n", knob, cmd, strerror(-ret));
	}
	close(fd);
	return ret;
}

/*
 * Pick up to @max_chunks 2 MiB chunks of guest RAM that are fully present and
 * have backing @want; fill b->chunks and b->pages.
 */
static int select_chunks(struct bench *b, enum backing want, unsigned int max_chunks,
			 unsigned int *present_chunks)
{
	uint64_t nchunks = b->guest_size / CHUNK;
	int st[PAGES_PER_CHUNK];
	void *p[PAGES_PER_CHUNK];
	int fds[2], ret = open_page_flags(b->pid, fds);

	if (ret)
		return ret;
	*present_chunks = 0;
	b->chunks = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	for (uint64_t c = 0; c < nchunks && b->chunks->len < max_chunks; c++) {
		uint64_t base = b->hva + c * CHUNK;
		int full = 1, thp;

		for (unsigned int i = 0; i < PAGES_PER_CHUNK; i++)
			p[i] = (void *)(uintptr_t)(base + i * PAGE);
		if (sys_move_pages(b->pid, PAGES_PER_CHUNK, p, NULL, st, 0) < 0) {
			ret = -errno;
			goto out;
		}
		for (unsigned int i = 0; i < PAGES_PER_CHUNK && full; i++)
			full = st[i] >= 0;
		if (!full)
			continue;
		(*present_chunks)++;
		thp = page_is_thp(fds[0], fds[1], base);
		if (thp < 0)
			continue;
		if ((want == BACKING_THP) == (thp == 1))
			g_array_append_val(b->chunks, base);
	}
	b->npages = (uint64_t)b->chunks->len * PAGES_PER_CHUNK;
	b->bytes = b->npages * PAGE;
	b->pages = g_new(void *, MAX(b->npages, 1));
	b->status = g_new(int, MAX(b->npages, 1));
	b->nodes = g_new(int, MAX(b->npages, 1));
	for (uint64_t i = 0; i < b->npages; i++)
		b->pages[i] = (void *)(uintptr_t)(g_array_index(b->chunks, uint64_t, i / PAGES_PER_CHUNK) +
						  i % PAGES_PER_CHUNK * PAGE);
out:
	close_page_flags(fds);
	return ret;
}

/* @bytes of anonymous memory bound to @node (mbind, MPOL_BIND), or NULL. */
static char *alloc_on_node(uint64_t bytes, int node)
{
	unsigned long mask = 1UL << node;
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (mbind(p, bytes, MPOL_BIND, &mask, sizeof(mask) * 8, 0) < 0) {
		munmap(p, bytes);
		return NULL;
	}
	return p;
}

static int alloc_copy_buffers(struct bench *b, int node)
{
	uint64_t on;
	void *p[2];
	int st[2];

	b->buf0 = alloc_on_node(b->bytes, 0);
	b->bufn = alloc_on_node(b->bytes, node);
	if (!b->buf0 || !b->bufn)
		return -ENOMEM;
	memset(b->buf0, 0x5a, b->bytes);
	memset(b->bufn, 0xa5, b->bytes);
	p[0] = b->buf0;
	p[1] = b->bufn;
	if (sys_move_pages(0, 2, p, NULL, st, 0) < 0)
		return -errno;
	on = (uint64_t)(st[0] == 0) + (st[1] == node);
	if (on != 2) {
		fprintf(stderr, "vtier-bench move: copy buffers landed on nodes %d and %d, not 0 and %d\n",
			st[0], st[1], node);
		return -EIO;
	}
	return 0;
}

static void free_copy_buffers(struct bench *b)
{
	if (b->buf0)
		munmap(b->buf0, b->bytes);
	if (b->bufn)
		munmap(b->bufn, b->bytes);
	b->buf0 = b->bufn = NULL;
}

static void print_table(struct method *ms, unsigned int nm, const char *label, int node,
			double best, int rounds)
{
	printf("\nbacking=%s nodes 0<->%d, %d rounds, each a round trip 0->%d->0\n", label, node,
	       rounds, node);
	printf("%-22s %9s %9s %9s %7s %10s %10s %8s %8s\n", "method", "MB/s med", "min", "max",
	       "%best", "calls/trip", "pages/call", "busy/tr", "retry/tr");
	for (unsigned int i = 0; i < nm; i++) {
		struct method *m = &ms[i];
		double lo, hi, med = vt_bench_median(m->mbps, &lo, &hi);
		unsigned int t = MAX(m->trips, 1);

		printf("%-22s %9.1f %9.1f %9.1f", m->name, med, lo, hi);
		if (m->kind == M_MOVER || m->kind == M_PAGES || m->kind == M_HEADS)
			printf(" %6.1f%%", best > 0 ? 100.0 * med / best : 0);
		else
			printf(" %7s", "-");
		if (m->kind == M_MEMCPY)
			printf(" %10s %10s %8s %8s\n", "-", "-", "-", "-");
		else
			printf(" %10.1f %10.1f %8.1f %8.1f\n", (double)m->calls / t,
			       m->calls ? (double)m->entries / (double)m->calls : 0,
			       (double)m->busy / t, (double)m->retried / t);
	}
}

static int usage(FILE *f)
{
	fprintf(f,
		"usage: vtier-bench move --pid PID (--hva HVA --guest-size SIZE | --guest-size SIZE)\n"
		"                        --backing 4k|thp [--region-mib N] [--nodes N,...] [--rounds R]\n"
		"                        [--split-thp]\n"
		"  Move up to N MiB (default 64) of PID's guest RAM between node 0 and each of\n"
		"  --nodes (default 1,2) with vtier's mover, move_pages loops and memcpy.\n"
		"  Without --hva, guest RAM is the one anonymous rw mapping of --guest-size bytes.\n"
		"  --backing picks the 2 MiB chunks that are fully present and 4 KiB pages (4k)\n"
		"  or one PMD-mapped THP (thp); needs root (/proc/kpageflags).\n"
		"  --split-thp first splits guest RAM's THPs into 4 KiB pages in place\n"
		"  (/sys/kernel/debug/split_huge_pages; set L1's THP to never first).\n");
	return f == stderr ? 2 : 0;
}

static int run_pair(struct bench *b, enum backing backing, int node, int rounds)
{
	const char *label = backing == BACKING_THP ? "thp" : "4k";
	struct method ms[] = {
		{ .name = "vtier mover (16-chunk lists)", .kind = M_MOVER },
		{ .name = "vtier mover, 1 chunk per call", .kind = M_MOVER, .batch = 1 },
		{ .name = "move_pages 4k b512", .kind = M_PAGES, .batch = 512 },
		{ .name = "move_pages 4k b4096", .kind = M_PAGES, .batch = 4096 },
		{ .name = "move_pages 4k whole", .kind = M_PAGES, .batch = 0 },
		{ .name = "move_pages 2M-heads b1", .kind = M_HEADS, .batch = 1 },
		{ .name = "move_pages 2M-heads all", .kind = M_HEADS, .batch = 0 },
		{ .name = "query only 4k b512", .kind = M_QUERY, .batch = 512 },
		{ .name = "memcpy", .kind = M_MEMCPY },
	};
	unsigned int nm = G_N_ELEMENTS(ms);
	double best = 0, lo, hi, mover, mem;
	const char *best_name = "-";
	int ret;

	/* one entry per 2 MiB moves 1/512 of 4 KiB-backed memory: THP only */
	if (backing == BACKING_4K) {
		memmove(&ms[5], &ms[7], 2 * sizeof(ms[0]));	/* drop the 2M-heads rows */
		nm -= 2;
	}
	ret = alloc_copy_buffers(b, node);
	if (ret)
		goto out;
	for (unsigned int i = 0; i < nm; i++)
		ms[i].mbps = g_array_new(FALSE, FALSE, sizeof(double));
	ret = settle(b, 0);
	for (int r = 0; r < rounds && !ret; r++) {
		for (unsigned int j = 0; j < nm && !ret; j++) {
			/* rotate the order so that no method always runs first */
			struct method *m = &ms[(j + (unsigned int)r) % nm];
			uint64_t ns1, ns2, by1, by2;
			double v;

			ret = timed_move(b, m, node, &ns1, &by1);
			if (!ret && m->kind != M_MEMCPY && m->kind != M_QUERY)
				ret = settle(b, node);
			if (!ret)
				ret = timed_move(b, m, 0, &ns2, &by2);
			if (!ret && m->kind != M_MEMCPY && m->kind != M_QUERY)
				ret = settle(b, 0);
			if (ret)
				break;
			v = (double)(by1 + by2) / 1e6 / ((double)(ns1 + ns2) / 1e9);
			g_array_append_val(m->mbps, v);
			m->trips++;
		}
	}
	if (ret) {
		fprintf(stderr, "vtier-bench move: nodes 0<->%d: %s\n", node, strerror(-ret));
		goto out;
	}
	for (unsigned int i = 0; i < nm; i++) {
		double med = vt_bench_median(ms[i].mbps, &lo, &hi);

		if ((ms[i].kind == M_PAGES || ms[i].kind == M_HEADS) && med > best) {
			best = med;
			best_name = ms[i].name;
		}
	}
	print_table(ms, nm, label, node, best, rounds);
	mover = vt_bench_median(ms[0].mbps, &lo, &hi);
	mem = vt_bench_median(ms[nm - 1].mbps, &lo, &hi);
	printf("mover: %.1f calls, %.1f busy, %.1f retried, %.1f already per round trip; "
	       "CPU in vt_numa_move %.1f ms per round trip\n",
	       (double)ms[0].calls / MAX(ms[0].trips, 1), (double)ms[0].busy / MAX(ms[0].trips, 1),
	       (double)ms[0].retried / MAX(ms[0].trips, 1),
	       (double)ms[0].already / MAX(ms[0].trips, 1),
	       (double)ms[0].cost_ns / 1e6 / MAX(ms[0].trips, 1));
	printf("RESULT-MOVE backing=%s nodes=0-%d bytes=%" PRIu64 " mover_mbps=%.1f "
	       "best_move_pages_mbps=%.1f best_move_pages=\"%s\" memcpy_mbps=%.1f mover_pct=%.1f\n",
	       label, node, b->bytes, mover, best, best_name, mem, best > 0 ? 100.0 * mover / best : 0);
out:
	for (unsigned int i = 0; i < nm; i++)
		if (ms[i].mbps)
			g_array_free(ms[i].mbps, TRUE);
	free_copy_buffers(b);
	return ret;
}

int vt_bench_move(int argc, char **argv)
{
	struct bench b = { 0 };
	g_autofree char *backing_s = NULL, *nodes_s = NULL, *hva_s = NULL, *size_s = NULL;
	gint pid = 0, region_mib = 64, rounds = 5;
	gboolean help = FALSE, split = FALSE;
	GOptionEntry entries[] = {
		{ "pid", 0, 0, G_OPTION_ARG_INT, &pid, "QEMU process", "PID" },
		{ "hva", 0, 0, G_OPTION_ARG_STRING, &hva_s, "start of guest RAM in PID", "HVA" },
		{ "guest-size", 0, 0, G_OPTION_ARG_STRING, &size_s, "guest RAM bytes (K/M/G)", "SIZE" },
		{ "backing", 0, 0, G_OPTION_ARG_STRING, &backing_s, "4k or thp", "B" },
		{ "region-mib", 0, 0, G_OPTION_ARG_INT, &region_mib, "MiB to move (default 64)", "N" },
		{ "nodes", 0, 0, G_OPTION_ARG_STRING, &nodes_s, "target nodes (default 1,2)", "N,.." },
		{ "rounds", 0, 0, G_OPTION_ARG_INT, &rounds, "rounds (default 5)", "R" },
		{ "split-thp", 0, 0, G_OPTION_ARG_NONE, &split,
		  "split guest RAM's THPs first (debugfs)", NULL },
		{ "usage", 0, 0, G_OPTION_ARG_NONE, &help, "usage", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("- NUMA mover throughput");
	g_autoptr(GError) err = NULL;
	g_auto(GStrv) nodes = NULL;
	enum backing backing;
	unsigned int present = 0;
	uint64_t vma_size = 0, mult = 1;
	long ahp;
	char *end;
	int ret, thp;

	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
		fprintf(stderr, "vtier-bench move: %s\n", err->message);
		return usage(stderr);
	}
	if (help)
		return usage(stdout);
	if (pid <= 0 || !size_s || !backing_s || rounds < 1 || region_mib < 2)
		return usage(stderr);
	if (strcmp(backing_s, "4k") == 0)
		backing = BACKING_4K;
	else if (strcmp(backing_s, "thp") == 0)
		backing = BACKING_THP;
	else
		return usage(stderr);
	b.pid = pid;
	b.guest_size = g_ascii_strtoull(size_s, &end, 0);
	if (*end == 'K' || *end == 'k')
		mult = 1ULL << 10;
	else if (*end == 'M')
		mult = 1ULL << 20;
	else if (*end == 'G')
		mult = 1ULL << 30;
	b.guest_size *= mult;
	if (!b.guest_size || b.guest_size % CHUNK)
		return usage(stderr);
	ret = vt_numa_probe(b.pid);
	if (ret) {
		fprintf(stderr, "vtier-bench move: move_pages on pid %d: %s%s\n", (int)b.pid,
			strerror(-ret), ret == -EPERM ? " (needs CAP_SYS_NICE)" : "");
		return 1;
	}
	if (hva_s) {
		b.hva = g_ascii_strtoull(hva_s, NULL, 0);
	} else {
		ret = find_guest_ram(b.pid, b.guest_size, &b.hva);
		if (ret) {
			fprintf(stderr, "vtier-bench move: pid %d: %s anonymous rw mapping of %" PRIu64
				" bytes (give --hva)\n", (int)b.pid, ret == -EEXIST ? "more than one" : "no",
				b.guest_size);
			return 1;
		}
	}
	ahp = smaps_anon_huge_kb(b.pid, b.hva, &vma_size);
	if (split) {
		if (split_thp(&b))
			return 1;
		printf("split THPs: smaps AnonHugePages %ld kB before, %ld kB after\n", ahp,
		       smaps_anon_huge_kb(b.pid, b.hva, &vma_size));
	}
	ret = select_chunks(&b, backing, (unsigned int)region_mib / 2, &present);
	if (ret)
		return 1;
	ahp = smaps_anon_huge_kb(b.pid, b.hva, &vma_size);
	printf("guest RAM: pid %d hva 0x%" PRIx64 " size %" PRIu64 " MiB; smaps: VMA %" PRIu64
	       " MiB, AnonHugePages %ld kB\n", (int)b.pid, b.hva, b.guest_size >> 20, vma_size >> 20,
	       ahp);
	printf("fully present 2 MiB chunks: %u; picked %u with backing %s (%" PRIu64 " MiB)\n",
	       present, b.chunks->len, backing_s, b.bytes >> 20);
	if (b.chunks->len < 2) {
		fprintf(stderr, "vtier-bench move: fewer than 2 fully present %s-backed chunks\n",
			backing_s);
		ret = -ENOENT;
		goto out;
	}
	nodes = g_strsplit(nodes_s ? nodes_s : "1,2", ",", 0);
	for (unsigned int i = 0; nodes[i] && !ret; i++) {
		int node = atoi(nodes[i]);
		char path[64];
		struct stat sb;

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", node);
		if (node <= 0 || node >= (int)(sizeof(long) * 8) || stat(path, &sb) < 0) {
			fprintf(stderr, "vtier-bench move: no node %s\n", nodes[i]);
			ret = -EINVAL;
			break;
		}
		ret = run_pair(&b, backing, node, rounds);
	}
	thp = count_thp(&b);
	ahp = smaps_anon_huge_kb(b.pid, b.hva, &vma_size);
	printf("after: %d of %u picked chunks THP-backed; smaps AnonHugePages %ld kB\n", thp,
	       b.chunks->len, ahp);
out:
	g_array_free(b.chunks, TRUE);
	g_free(b.pages);
	g_free(b.status);
	g_free(b.nodes);
	return ret ? 1 : 0;
}
