// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-bench mover: what a fault on a stored page costs the guest while the
 * compressed-tier mover is busy elsewhere. The real mover (movers/ctier_mover.h)
 * over a real userfaultfd on a shared memfd (QEMU's guest RAM, this process
 * playing QEMU and its vCPU): region A is evicted into the store, then a vCPU
 * thread touches A's pages in a random order (--in-order: in address order,
 * a read-back that store-ahead serves a window a fault; --streams N with it:
 * N readers in turn, one page each, each reading its Nth of A in address
 * order, as a guest reading N files at once does), computing (spinning) --gap-us
 * between two touches as a guest does, and times each touch (the guest's
 * view: the fault's wait in the queue included) twice, once with the mover
 * idle and once while it evicts and fetches region B back and forth (the
 * work a placement gives it). Every page of A and B is compared with what
 * was written. One line:
 *   RESULT-MOVER-FAULTS codec=... idle_p50_us=... idle_p99_us=...
 *     busy_p50_us=... busy_p99_us=... p50_x=... p99_x=... busy_evicted=...
 *     busy_rounds=... bad_pages=0 busy_faults_beside=... busy_fence_waits=...
 *     busy_fence_wait_ms=... busy_evict_ms=... busy_s=... order=random|address
 *     idle_faults=... idle_ahead=... idle_s=... busy_faults=... busy_ahead=...
 *     streams=...
 * (p50_x, p99_x: busy over idle; busy_evicted, busy_rounds: B's pages evicted
 * and B's evict-fetch rounds done while A's faults were timed, busy_s long;
 * busy_faults_beside: faults served while the mover worked on a range, the
 * mover's span_faults; busy_fence_waits, _ms: the mover waiting for a fault's
 * service to leave a range; busy_evict_ms: the mover's time evicting;
 * idle_faults, busy_faults: the stored faults each round took, idle_ahead,
 * busy_ahead: the pages store-ahead served ahead of theirs; idle_s: the
 * idle round's length.)
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "ctier_mix.h"
#include "ctier_mover.h"
#include "fake_qemu.h"
#include "thread_ns.h"
#include "vtier_bench.h"

#define PAGE 4096ul

struct busy {
	struct vt_ctier_mover *m;
	uint64_t offset, len;
	atomic_bool stop;
	uint64_t rounds;
};

/* The mover's other work: region B evicted, fetched back, evicted again. */
static void *busy_run(void *arg)
{
	struct busy *b = arg;

	while (!atomic_load(&b->stop)) {
		for (uint64_t at = b->offset; at < b->offset + b->len; at += 32 * PAGE)
			vt_ctier_mover_evict(b->m, at, MIN(32 * PAGE, b->offset + b->len - at), 0);
		while (vt_ctier_mover_backlog(b->m) && !atomic_load(&b->stop))
			g_usleep(200);
		vt_ctier_mover_fetch(b->m, b->offset, b->len);
		while (vt_ctier_mover_backlog(b->m) && !atomic_load(&b->stop))
			g_usleep(200);
		b->rounds++;
	}
	return NULL;
}

static void wait_idle(struct vt_ctier_mover *m)
{
	while (vt_ctier_mover_backlog(m))
		g_usleep(1000);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct_us(uint64_t *ns, unsigned int n, unsigned int pct)
{
	qsort(ns, n, sizeof(*ns), cmp_u64);
	return ns[MIN((uint64_t)n * pct / 100, n - 1)] / 1000.0;
}

/* The vCPU: touch @nr pages (@order), each timed, @gap_ns of work between. */
static void touch(struct fake_qemu_ram *r, const uint64_t *order, unsigned int nr, uint64_t gap_ns,
		  uint64_t *ns)
{
	for (unsigned int i = 0; i < nr; i++) {
		volatile uint8_t *p = r->map + order[i] * PAGE;
		uint64_t t0 = vt_now_ns();

		(void)*p;
		ns[i] = vt_now_ns() - t0;
		while (vt_now_ns() - t0 < ns[i] + gap_ns)
			;
	}
}

static uint64_t bad_pages(const struct fake_qemu_ram *r, const uint8_t *want, uint64_t pages)
{
	uint64_t bad = 0;

	for (uint64_t p = 0; p < pages; p++)
		bad += memcmp(r->map + p * PAGE, want + p * PAGE, PAGE) != 0;
	return bad;
}

int vt_bench_mover(int argc, char **argv)
{
	int pages = 16384, faults = 16384, gap_us = 50, streams = 1;
	gboolean in_order = FALSE;
	g_autofree char *codec = NULL, *mixspec = NULL, *dir = NULL;
	GOptionEntry entries[] = {
		{ "pages", 0, 0, G_OPTION_ARG_INT, &pages,
		  "pages of each region, A (faulted) and B (moved meanwhile) (16384)", "N" },
		{ "faults", 0, 0, G_OPTION_ARG_INT, &faults,
		  "faults timed per round, at most --pages (16384)", "N" },
		{ "gap-us", 0, 0, G_OPTION_ARG_INT, &gap_us,
		  "the vCPU's work between two touches, spinning (50)", "US" },
		{ "codec", 0, 0, G_OPTION_ARG_STRING, &codec, "the tier's codec (lz4)", "CODEC" },
		{ "in-order", 0, 0, G_OPTION_ARG_NONE, &in_order,
		  "touch A's pages in address order (a read-back), not at random", NULL },
		{ "streams", 0, 0, G_OPTION_ARG_INT, &streams,
		  "with --in-order: N readers in turn, each reading its Nth of A in order (1)",
		  "N" },
		{ "mix", 0, 0, G_OPTION_ARG_STRING, &mixspec,
		  "page mix (ctier's default: zero=30,same=5,text=25,binary=25,random=15)",
		  "KIND=W,..." },
		{ NULL }
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("- faults on stored pages while "
							     "the mover works elsewhere");
	g_autofree uint8_t *want = NULL;
	g_autofree uint64_t *order = NULL, *idle = NULL, *busy_ns = NULL;
	struct vt_ctier_spec spec;
	struct vt_store_key key = { .backend_id = "bench", .page_size = PAGE };
	struct vt_store *store = NULL;
	struct vt_ctier_mover *m = NULL;
	struct vt_ctier_mover_stats st0, st1, sti0, sti1;
	struct vtier_handoff_hello hello;
	struct vt_pager pager;
	struct busy b = { 0 };
	struct vt_mix mix;
	struct fake_qemu_ram r;
	pthread_t th;
	char why[300] = "";
	uint64_t total, bad, t0;
	double busy_s, idle_s;
	GRand *rng;
	int ret;

	if (!vt_bench_options(ctx, entries, &argc, &argv, "mover"))
		return 2;
	if (pages < 64 || faults < 1 || gap_us < 0) {
		fprintf(stderr, "vtier-bench mover: --pages must be >= 64 (got %d), --faults >= 1 "
			"(got %d), --gap-us >= 0 (got %d)\n", pages, faults, gap_us);
		return 2;
	}
	if (streams < 1 || streams > pages / 64 || (streams > 1 && !in_order)) {
		fprintf(stderr, "vtier-bench mover: --streams must be 1 to --pages / 64 (%d) and "
			"above 1 only with --in-order (got %d%s)\n", pages / 64, streams,
			in_order ? "" : ", no --in-order");
		return 2;
	}
	faults = MIN(faults, pages);
	if (vt_bench_tier_spec(codec ? codec : "lz4", "zsmalloc", "node:0", &spec, why,
			       sizeof(why))) {
		fprintf(stderr, "vtier-bench mover: --codec: %s\n", why);
		return 2;
	}
	if (vt_mix_init(&mix, mixspec, 1, why, sizeof(why)) < 0) {
		fprintf(stderr, "vtier-bench mover: --mix: %s\n", why);
		return 2;
	}
	total = 2ull * (uint64_t)pages;
	want = g_malloc(total * PAGE);
	for (uint64_t p = 0; p < total; p++)
		vt_mix_page(&mix, p, want + p * PAGE);
	/* written before the registration: those writes never fault */
	ret = fake_qemu_ram_open(&r, total * PAGE, false);
	if (!ret) {
		memcpy(r.map, want, total * PAGE);
		ret = fake_qemu_ram_register(&r);
	}
	if (ret) {
		fprintf(stderr, "vtier-bench mover: a memfd with a userfaultfd (shmem missing + "
			"write-protect; root): %s\n", g_strerror(-ret));
		fake_qemu_ram_close(&r);
		return 1;
	}
	dir = g_strdup_printf("/dev/shm/vtier-bench-mover-%d", (int)getpid());
	key.size_bytes = total * PAGE;
	ret = vt_store_open(dir, &key, &spec, 1, true, &store, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "vtier-bench mover: store in %s: %s\n", dir, why);
		fake_qemu_ram_close(&r);
		return 1;
	}
	hello = fake_qemu_hello(&r, "bench", 1);
	ret = vt_pager_open(&pager, &hello, dup(r.memfd), dup(r.uffd));
	if (!ret)
		ret = vt_ctier_mover_start(&pager, store, -1, NULL, NULL, &m);
	if (ret) {
		fprintf(stderr, "vtier-bench mover: mover: %s\n", g_strerror(-ret));
		vt_store_close(store);
		vt_store_destroy(dir);
		fake_qemu_ram_close(&r);
		return 1;
	}
	order = g_new(uint64_t, pages);
	idle = g_new(uint64_t, faults);
	busy_ns = g_new(uint64_t, faults);
	rng = g_rand_new_with_seed(7);
	/* the streams' slices in turn, a page of each; the rest of A after them */
	{
		int slice = pages / streams, k = 0;

		for (int i = 0; i < slice; i++)
			for (int st = 0; st < streams; st++)
				order[k++] = (uint64_t)st * slice + i;
		for (; k < pages; k++)
			order[k] = (uint64_t)k;
	}
	for (int i = pages - 1; i > 0 && !in_order; i--) {
		int j = g_rand_int_range(rng, 0, i + 1);
		uint64_t t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	g_rand_free(rng);

	vt_ctier_mover_evict(m, 0, (uint64_t)pages * PAGE, 0);
	wait_idle(m);
	vt_ctier_mover_get_stats(m, &sti0);
	t0 = vt_now_ns();
	touch(&r, order, (unsigned int)faults, gap_us * 1000ull, idle);
	idle_s = (vt_now_ns() - t0) / 1e9;
	vt_ctier_mover_get_stats(m, &sti1);
	b = (struct busy){ .m = m, .offset = (uint64_t)pages * PAGE,
			   .len = (uint64_t)pages * PAGE };
	vt_ctier_mover_evict(m, 0, (uint64_t)pages * PAGE, 0);	/* A again, before B starts */
	wait_idle(m);
	vt_ctier_mover_get_stats(m, &st0);
	pthread_create(&th, NULL, busy_run, &b);
	g_usleep(20000);	/* B's first orders under way */
	t0 = vt_now_ns();
	touch(&r, order, (unsigned int)faults, gap_us * 1000ull, busy_ns);
	busy_s = (vt_now_ns() - t0) / 1e9;
	vt_ctier_mover_get_stats(m, &st1);
	atomic_store(&b.stop, true);
	pthread_join(th, NULL);
	wait_idle(m);
	/* every page of A and B, through the faults they take */
	bad = bad_pages(&r, want, total);
	{
		double ip50 = pct_us(idle, (unsigned int)faults, 50);
		double ip99 = pct_us(idle, (unsigned int)faults, 99);
		double bp50 = pct_us(busy_ns, (unsigned int)faults, 50);
		double bp99 = pct_us(busy_ns, (unsigned int)faults, 99);

		printf("# vtier-bench mover: %d pages a region, %d faults a round %d us apart, "
		       "codec %s; %ld CPUs\n", pages, faults, gap_us, codec ? codec : "lz4",
		       sysconf(_SC_NPROCESSORS_ONLN));
		printf("RESULT-MOVER-FAULTS codec=%s idle_p50_us=%.1f idle_p99_us=%.1f "
		       "busy_p50_us=%.1f busy_p99_us=%.1f p50_x=%.2f p99_x=%.2f "
		       "busy_evicted=%" G_GUINT64_FORMAT " busy_rounds=%" G_GUINT64_FORMAT
		       " bad_pages=%" G_GUINT64_FORMAT " busy_faults_beside=%" G_GUINT64_FORMAT
		       " busy_fence_waits=%" G_GUINT64_FORMAT " busy_fence_wait_ms=%.1f"
		       " busy_evict_ms=%.1f busy_s=%.2f order=%s idle_faults=%" G_GUINT64_FORMAT
		       " idle_ahead=%" G_GUINT64_FORMAT " idle_s=%.2f busy_faults=%"
		       G_GUINT64_FORMAT " busy_ahead=%" G_GUINT64_FORMAT " streams=%d\n",
		       codec ? codec : "lz4", ip50, ip99, bp50, bp99, ip50 > 0 ? bp50 / ip50 : 0,
		       ip99 > 0 ? bp99 / ip99 : 0, st1.evicted - st0.evicted, b.rounds, bad,
		       st1.span_faults - st0.span_faults, st1.fence_waits - st0.fence_waits,
		       (st1.fence_wait_ns - st0.fence_wait_ns) / 1e6,
		       (st1.evict_ns - st0.evict_ns) / 1e6, busy_s, in_order ? "address" : "random",
		       sti1.faults_stored - sti0.faults_stored, sti1.stored_ahead - sti0.stored_ahead,
		       idle_s, st1.faults_stored - st0.faults_stored,
		       st1.stored_ahead - st0.stored_ahead, streams);
	}
	vt_ctier_mover_stop(m);
	vt_store_close(store);
	vt_store_destroy(dir);
	fake_qemu_ram_close(&r);
	return bad ? 1 : 0;
}
