// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-bench ctier: the compressed tiers on a guest-like page mix. Per
 * codec x pool x medium: compression ratio, compress and decompress MB/s,
 * metadata as a share of the stored bytes, and the latency of a fault served
 * from the store through a real userfaultfd (vt_store_get, UFFDIO_COPY,
 * vt_store_drop) next to a bare UFFDIO_COPY of a ready page on the same fault
 * path, in the same run. Then the index of a 1 TiB backend.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "ctier.h"
#include "ctier_codec.h"
#include "ctier_csum.h"
#include "ctier_mix.h"
#include "thread_ns.h"
#include "vtier_bench.h"

#define PAGE 4096U
#define ROUNDS 8

struct fault_run {
	uint8_t *area;			/* the "guest RAM": a memfd mapped MAP_SHARED */
	int uffd;
	struct vt_store *store;		/* NULL: bare UFFDIO_COPY from @ready */
	const uint8_t *ready;		/* page contents, the bare run copies from here */
	atomic_bool stop;
	int error;
	uint64_t served;
	uint64_t *copy_ns;		/* wall time of each fault's UFFDIO_COPY, in order */
	unsigned int nr;
};

/* The fault thread: read the uffd, fetch the page, UFFDIO_COPY it, drop it. */
static void *server(void *arg)
{
	struct fault_run *f = arg;
	uint8_t *buf = aligned_alloc(PAGE, PAGE);

	while (!atomic_load(&f->stop)) {
		struct pollfd pfd = { .fd = f->uffd, .events = POLLIN };
		struct uffd_msg msg;
		struct uffdio_copy copy = { 0 };
		uint64_t page, t0;
		const void *src;
		int r;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		if (read(f->uffd, &msg, sizeof(msg)) != sizeof(msg))
			continue;
		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		page = (msg.arg.pagefault.address - (uintptr_t)f->area) / PAGE;
		if (f->store) {
			r = vt_store_get(f->store, page, buf);

			if (r < 0) {
				f->error = r;
				memset(buf, 0, PAGE);
			}
			src = buf;
		} else {
			src = f->ready + page * PAGE;
		}
		copy.dst = (uintptr_t)f->area + page * PAGE;
		copy.src = (uintptr_t)src;
		copy.len = PAGE;
		t0 = vt_now_ns();
		r = ioctl(f->uffd, UFFDIO_COPY, &copy);
		if (f->served < f->nr)
			f->copy_ns[f->served] = vt_now_ns() - t0;
		if (r < 0 && errno != EEXIST)
			f->error = -errno;
		else if (f->store)
			vt_store_drop(f->store, page);
		f->served++;
	}
	free(buf);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Touch @nr pages @order[] of a fresh uffd-registered memfd of @pages pages;
 * the fault thread serves them from @store or @ready. Latencies (ns) in
 * @lat, the UFFDIO_COPY of each in @copy_ns. 0 or -errno (@why).
 */
static int fault_run(uint64_t pages, const uint64_t *order, unsigned int nr,
		     struct vt_store *store, const uint8_t *ready, uint64_t *lat,
		     uint64_t *copy_ns, bool rt, char *why, size_t wl)
{
	struct sched_param prio = { .sched_priority = 1 };
	struct fault_run f = { .store = store, .ready = ready, .copy_ns = copy_ns, .nr = nr };
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	pthread_t th;
	int memfd, r = 0;

	memfd = memfd_create("vtier-bench-ctier", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, (off_t)(pages * PAGE)) < 0) {
		snprintf(why, wl, "memfd: %s", g_strerror(errno));
		return -errno;
	}
	f.area = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	f.uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (f.area == MAP_FAILED || f.uffd < 0) {
		r = -errno;
		snprintf(why, wl, "%s: %s (userfaultfd needs root or "
			 "vm.unprivileged_userfaultfd=1)", f.area == MAP_FAILED ? "mmap" :
			 "userfaultfd", g_strerror(errno));
		goto out;
	}
	reg.range.start = (uintptr_t)f.area;
	reg.range.len = pages * PAGE;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(f.uffd, UFFDIO_API, &api) < 0 || ioctl(f.uffd, UFFDIO_REGISTER, &reg) < 0) {
		r = -errno;
		snprintf(why, wl, "UFFDIO_API/REGISTER on a shared memfd: %s", g_strerror(errno));
		goto out;
	}
	pthread_create(&th, NULL, server, &f);
	if (rt && (pthread_setschedparam(th, SCHED_FIFO, &prio) ||
		   pthread_setschedparam(pthread_self(), SCHED_FIFO, &prio))) {
		snprintf(why, wl, "--rt: SCHED_FIFO needs root (CAP_SYS_NICE)");
		r = -EPERM;
	}
	for (unsigned int i = 0; !r && i < nr; i++) {
		volatile uint8_t *p = f.area + order[i] * PAGE;
		uint64_t t0 = vt_now_ns();

		(void)*p;
		lat[i] = vt_now_ns() - t0;
	}
	prio.sched_priority = 0;
	pthread_setschedparam(pthread_self(), SCHED_OTHER, &prio);
	atomic_store(&f.stop, true);
	pthread_join(th, NULL);
	if (!r && f.error) {
		r = f.error;
		snprintf(why, wl, "fault thread: %s", g_strerror(-r));
	}
	/* the guest sees what was stored */
	for (unsigned int i = 0; !r && i < nr; i++)
		if (memcmp(f.area + order[i] * PAGE, ready + order[i] * PAGE, PAGE)) {
			r = -EBADMSG;
			snprintf(why, wl, "page %llu came back different",
				 (unsigned long long)order[i]);
		}
out:
	if (f.uffd >= 0)
		close(f.uffd);
	if (f.area != MAP_FAILED)
		munmap(f.area, pages * PAGE);
	close(memfd);
	return r;
}

struct putter {
	struct vt_store *s;
	const uint8_t *data;
	uint64_t first, pages;		/* puts pages first.. with data's contents */
	atomic_bool stop;
	uint64_t puts;
};

/* A VM's worker evicting meanwhile: put a range, drop it, again. */
static void *putter_run(void *arg)
{
	struct putter *p = arg;

	while (!atomic_load(&p->stop)) {
		for (uint64_t i = 0; i < p->pages && !atomic_load(&p->stop); i++)
			p->puts += vt_store_put(p->s, p->first + i, 0, p->data + i * PAGE) == 0;
		for (uint64_t i = 0; i < p->pages; i++)
			vt_store_drop(p->s, p->first + i);
	}
	return NULL;
}

struct options {
	char *mix;
	int pages;
	int faults;
	char **codecs, **pools, **media;
	char *dir;
	gboolean no_1tib;
	gboolean rt;
	gboolean putter;
};

struct row {
	char tier[300];
	double ratio, codec_ratio, c_mbs, d_mbs, meta_pct, put_us, get_us, put_copy_us;
	double p50_us, p99_us, bare_p50_us, bare_p99_us;
	uint64_t stored, rejected;
	/* where a compressed page's fault goes: p50s, wall us */
	double b_get_us, b_fetch_us, b_dec_us, b_crc_us, b_copy_us, b_bare_copy_us;
	unsigned int b_pages;
};

int vt_bench_tier_spec(const char *codec, const char *pool, const char *medium,
		       struct vt_ctier_spec *out, char *why, size_t wl)
{
	g_autofree char *text = g_strdup_printf("[ctier.bench]\ncodec=%s\npool=%s\nmedium=%s\n",
						codec, pool, medium);
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) e = NULL;

	if (!g_key_file_load_from_data(kf, text, strlen(text), G_KEY_FILE_NONE, &e) ||
	    !vt_ctier_spec_parse(kf, "ctier.bench", out, &e)) {
		snprintf(why, wl, "%s", e->message);
		return -EINVAL;
	}
	return 0;
}

/*
 * The codec alone over the pages that are neither zero nor same-filled: CPU
 * MB/s. The compressed pages stay in *@cbuf_out (slot i of PAGE bytes: page
 * i's, *@clen_out[i] bytes, 0 when none), as a destination's copies made
 * during precopy would be.
 */
static int codec_speed(const struct vt_ctier_spec *spec, const uint8_t *data, uint64_t pages,
		       struct row *row, uint8_t **cbuf_out, uint32_t **clen_out)
{
	const struct vt_codec_ops *c = vt_codec_get(spec->codec);
	void *ctx = c->ctx_new(spec->level);
	uint32_t cap = spec->max_stored_pct * PAGE / 100;
	g_autofree uint8_t *cbuf = g_malloc(pages * PAGE);
	g_autofree uint32_t *clen = g_new0(uint32_t, pages);
	uint8_t out[PAGE];
	uint64_t t0, in = 0, back = 0, ns_c, ns_d;

	if (!ctx)
		return -ENOMEM;
	t0 = vt_thread_ns();
	for (uint64_t i = 0; i < pages; i++) {
		const uint64_t *w = (const uint64_t *)(data + i * PAGE);
		unsigned int k = 1;
		int n;

		while (k < PAGE / 8 && w[k] == w[0])
			k++;
		if (k == PAGE / 8)
			continue;
		n = c->compress(ctx, data + i * PAGE, PAGE, cbuf + i * PAGE, cap);
		clen[i] = n > 0 ? (uint32_t)n : 0;
		in += PAGE;
	}
	ns_c = vt_thread_ns() - t0;
	t0 = vt_thread_ns();
	for (uint64_t i = 0; i < pages; i++)
		if (clen[i] && c->decompress(ctx, cbuf + i * PAGE, clen[i], out, PAGE) == PAGE)
			back += PAGE;
	ns_d = vt_thread_ns() - t0;
	c->ctx_free(ctx);
	row->c_mbs = (double)in / (double)MAX(ns_c, 1) * 1e3;
	row->d_mbs = (double)back / (double)MAX(ns_d, 1) * 1e3;
	*cbuf_out = g_steal_pointer(&cbuf);
	*clen_out = g_steal_pointer(&clen);
	return 0;
}

/*
 * CPU per vt_store_put_copy() of every page given its copy (a destination
 * prepared during precopy), in a store of its own; every stored page read
 * back. 0 or -errno with @why.
 */
static int put_copies(const struct options *o, const struct vt_ctier_spec *spec,
		      const struct vt_store_key *key, const uint8_t *data, uint64_t pages,
		      const uint8_t *cbuf, const uint32_t *clen, struct row *row, char *why,
		      size_t wl)
{
	g_autofree char *dir = g_strdup_printf("%s-copies", o->dir);
	g_autofree uint8_t *out = g_malloc(PAGE);
	struct vt_store *s = NULL;
	uint64_t t0, used = 0, offered = 0;
	int r;

	r = vt_store_open(dir, key, spec, 1, true, &s, why, wl);
	if (r < 0)
		return r;
	t0 = vt_thread_ns();
	for (uint64_t i = 0; i < pages; i++) {
		bool u = false;

		r = vt_store_put_copy(s, i, 0, data + i * PAGE, clen[i] ? cbuf + i * PAGE : NULL,
				      clen[i], &u);
		if (r < 0 && r != -E2BIG) {
			snprintf(why, wl, "put from a copy: %s", g_strerror(-r));
			goto out;
		}
		used += u;
		offered += clen[i] > 0;
	}
	row->put_copy_us = (double)(vt_thread_ns() - t0) / 1e3 / (double)pages;
	r = 0;
	for (uint64_t i = 0; i < pages && !r; i++) {
		int g = vt_store_get(s, i, out);

		if (g == -ENOENT)
			continue;
		if (g < 0 || memcmp(out, data + i * PAGE, PAGE)) {
			snprintf(why, wl, "page %llu stored from its copy: %s",
				 (unsigned long long)i, g < 0 ? g_strerror(-g) : "different content");
			r = g < 0 ? g : -EBADMSG;
		}
	}
	if (!r && used != offered) {
		snprintf(why, wl, "%llu of %llu copies used", (unsigned long long)used,
			 (unsigned long long)offered);
		r = -EBADMSG;
	}
out:
	vt_store_close(s);
	vt_store_destroy(dir);
	return r;
}

static double p50_us(uint64_t *ns, unsigned int n)
{
	if (!n)
		return 0;
	qsort(ns, n, sizeof(*ns), cmp_u64);
	return (double)ns[n / 2] / 1e3;
}

/*
 * Where a get of a compressed page goes, page by page over the stored
 * compressed pages (@order, @nr): the whole vt_store_get; its decompression
 * (the store's own decompress_ns, read around each get: decoding the same
 * bytes twice in a row would time the second with a trained branch
 * predictor); a CRC-32C of the page as the get computes it; the fetch
 * (lookup, lock, pool locate, medium read) is the rest of each get. Wall
 * time, p50s of each.
 */
static int get_breakdown(struct vt_store *s, const uint8_t *data, const uint64_t *order,
			 unsigned int nr, struct row *row, char *why, size_t wl)
{
	g_autofree uint64_t *get = g_new(uint64_t, MAX(nr, 1));
	g_autofree uint64_t *dec = g_new(uint64_t, MAX(nr, 1));
	g_autofree uint64_t *sum = g_new(uint64_t, MAX(nr, 1));
	g_autofree uint64_t *rest = g_new(uint64_t, MAX(nr, 1));
	uint8_t out[PAGE];
	unsigned int n = 0;
	int r = 0;

	for (unsigned int i = 0; i < nr && !r; i++) {
		struct vt_store_tier_stats a, b;
		uint64_t p = order[i], t0, t1, t2, word;
		volatile uint32_t crc;

		if (vt_store_classify(data + p * PAGE, &word) != VT_STORE_COMPRESSED)
			continue;
		vt_store_stats(s, &a, 1);
		t0 = vt_now_ns();
		r = vt_store_get(s, p, out);
		t1 = vt_now_ns();
		crc = vt_crc32c(out, PAGE);
		t2 = vt_now_ns();
		(void)crc;
		vt_store_stats(s, &b, 1);
		if (!r && memcmp(out, data + p * PAGE, PAGE))
			r = -EBADMSG;
		get[n] = t1 - t0;
		dec[n] = b.decompress_ns - a.decompress_ns;
		sum[n] = t2 - t1;
		rest[n] = get[n] > dec[n] + sum[n] ? get[n] - dec[n] - sum[n] : 0;
		n++;
	}
	if (r < 0) {
		snprintf(why, wl, "breakdown of a get: %s", g_strerror(-r));
		return r;
	}
	row->b_pages = n;
	row->b_get_us = p50_us(get, n);
	row->b_dec_us = p50_us(dec, n);
	row->b_crc_us = p50_us(sum, n);
	row->b_fetch_us = p50_us(rest, n);
	return 0;
}

static int run_tier(const struct options *o, const struct vt_ctier_spec *spec,
		    const struct vt_mix *mix, const uint8_t *data, struct row *row, char *why,
		    size_t wl)
{
	struct vt_store_key key = { .page_size = PAGE };
	uint64_t pages = (uint64_t)o->pages;
	g_autofree uint64_t *order = g_new(uint64_t, pages);
	g_autofree uint64_t *lat = g_new(uint64_t, pages);
	g_autofree uint64_t *bare = g_new(uint64_t, pages);
	g_autofree uint64_t *copy_ns = g_new0(uint64_t, pages);
	g_autofree uint64_t *bare_copy_ns = g_new0(uint64_t, pages);
	g_autofree uint8_t *out = g_malloc(PAGE);
	struct vt_store_tier_stats st;
	struct vt_store *s = NULL;
	g_autofree uint8_t *cbuf = NULL;
	g_autofree uint32_t *clen = NULL;
	unsigned int nr = 0, nf;
	uint64_t t0;
	GRand *rnd = g_rand_new_with_seed(1);
	int r;

	(void)mix;
	struct putter put = { .data = data, .first = pages, .pages = MIN(pages, 1024) };
	pthread_t put_th;

	snprintf(key.backend_id, sizeof(key.backend_id), "bench");
	key.size_bytes = 2 * pages * PAGE;	/* the putter's pages above the faulted ones */
	vt_ctier_spec_describe(spec, row->tier, sizeof(row->tier));
	r = vt_store_open(o->dir, &key, spec, 1, true, &s, why, wl);
	if (r < 0)
		goto out;
	r = codec_speed(spec, data, pages, row, &cbuf, &clen);
	if (r < 0) {
		snprintf(why, wl, "codec: %s", g_strerror(-r));
		goto out;
	}
	r = put_copies(o, spec, &key, data, pages, cbuf, clen, row, why, wl);
	if (r < 0)
		goto out;
	t0 = vt_thread_ns();
	for (uint64_t i = 0; i < pages; i++) {
		r = vt_store_put(s, i, 0, data + i * PAGE);
		if (r == 0)
			order[nr++] = i;
		else if (r != -E2BIG) {
			snprintf(why, wl, "put: %s", g_strerror(-r));
			goto out;
		}
	}
	row->put_us = (double)(vt_thread_ns() - t0) / 1e3 / (double)pages;
	t0 = vt_thread_ns();
	for (unsigned int i = 0; i < nr; i++) {
		r = vt_store_get(s, order[i], out);
		if (r < 0 || memcmp(out, data + order[i] * PAGE, PAGE)) {
			snprintf(why, wl, "get of page %llu: %s", (unsigned long long)order[i],
				 r < 0 ? g_strerror(-r) : "different content");
			r = r < 0 ? r : -EBADMSG;
			goto out;
		}
	}
	row->get_us = (double)(vt_thread_ns() - t0) / 1e3 / (double)MAX(nr, 1);
	r = get_breakdown(s, data, order, nr, row, why, wl);
	if (r < 0)
		goto out;
	vt_store_stats(s, &st, 1);
	row->stored = st.pages;
	row->rejected = st.rejected_e2big;
	row->ratio = (double)(st.pages * PAGE) / (double)MAX(st.pool_bytes, 1);
	row->codec_ratio = (double)((st.pages - st.zero_pages - st.same_pages) * PAGE) /
			   (double)MAX(st.compressed_bytes, 1);
	row->meta_pct = 100.0 * (double)st.metadata_bytes / (double)MAX(st.pages * PAGE, 1);

	/* faults: a random order of stored pages, bare first, then from the store */
	for (unsigned int i = nr; i > 1; i--) {
		unsigned int j = (unsigned int)g_rand_int_range(rnd, 0, (gint32)i);
		uint64_t t = order[i - 1];

		order[i - 1] = order[j];
		order[j] = t;
	}
	nf = MIN(nr, (unsigned int)o->faults);
	put.s = s;
	if (o->putter)
		pthread_create(&put_th, NULL, putter_run, &put);
	/* alternate bare and store rounds so that load on the host hits both alike */
	for (unsigned int k = 0; k < ROUNDS; k++) {
		unsigned int a = nf * k / ROUNDS, n = nf * (k + 1) / ROUNDS - a;

		r = fault_run(pages, order + a, n, NULL, data, bare + a, bare_copy_ns + a, o->rt,
			      why, wl);
		if (!r)
			r = fault_run(pages, order + a, n, s, data, lat + a, copy_ns + a, o->rt,
				      why, wl);
		if (r < 0)
			break;
	}
	if (o->putter) {
		atomic_store(&put.stop, true);
		pthread_join(put_th, NULL);
		if (!r && !put.puts) {
			snprintf(why, wl, "the putter stored nothing");
			r = -EIO;
		}
	}
	if (r < 0)
		goto out;
	qsort(lat, nf, sizeof(*lat), cmp_u64);
	qsort(bare, nf, sizeof(*bare), cmp_u64);
	row->bare_p50_us = (double)bare[nf / 2] / 1e3;
	row->bare_p99_us = (double)bare[nf * 99 / 100] / 1e3;
	row->p50_us = (double)lat[nf / 2] / 1e3;
	row->p99_us = (double)lat[nf * 99 / 100] / 1e3;
	row->b_copy_us = p50_us(copy_ns, nf);
	row->b_bare_copy_us = p50_us(bare_copy_ns, nf);
	for (unsigned int i = 0; i < nf; i++)
		if (vt_store_tier_of(s, order[i]) != -ENOENT) {
			snprintf(why, wl, "page %llu still stored after its fault",
				 (unsigned long long)order[i]);
			r = -EBADMSG;
			goto out;
		}
out:
	g_rand_free(rnd);
	vt_store_close(s);
	vt_store_destroy(o->dir);
	return r;
}

static uint64_t rss_bytes(void)
{
	unsigned long size, rss;
	FILE *f = fopen("/proc/self/statm", "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "%lu %lu", &size, &rss);
	fclose(f);
	return n == 2 ? (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static uint64_t file_bytes(const char *dir, const char *name)
{
	g_autofree char *p = g_build_filename(dir, name, NULL);
	struct stat st;

	return stat(p, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

/* The index of a 1 TiB backend: empty, then with one page in each of 1000 chunks. */
static int run_1tib(const struct options *o, const uint8_t *data, uint64_t data_pages,
		    char *why, size_t wl)
{
	struct vt_store_key key = { .page_size = PAGE, .size_bytes = 1ULL << 40 };
	struct vt_ctier_spec spec;
	struct vt_store *s = NULL;
	uint64_t rss0 = rss_bytes(), idx_empty, rss_empty, idx_some, rss_some;
	unsigned int stored = 0;
	int r;

	snprintf(key.backend_id, sizeof(key.backend_id), "bench-1tib");
	r = vt_bench_tier_spec("lz4", "zsmalloc", "node:0", &spec, why, wl);
	if (!r)
		r = vt_store_open(o->dir, &key, &spec, 1, true, &s, why, wl);
	if (r < 0)
		return r;
	idx_empty = vt_store_index_bytes(s);
	rss_empty = rss_bytes() - rss0;
	for (uint64_t i = 0; i < 1000; i++)
		stored += vt_store_put(s, i * ((1ULL << 28) / 1000), 0,
				       data + (i % data_pages) * PAGE) == 0;
	idx_some = vt_store_index_bytes(s);
	rss_some = rss_bytes() - rss0;
	printf("\n1 TiB backend (268435456 pages), lz4 x zsmalloc x node:0:\n\n");
	printf("| state | vt_store_index_bytes | index file | blocks file | agent RSS growth |\n");
	printf("|---|---|---|---|---|\n");
	printf("| empty | %.2f MiB | | | %.2f MiB |\n", idx_empty / 1048576.0,
	       rss_empty / 1048576.0);
	printf("| %u pages in 1000 chunks | %.2f MiB | %.2f MiB | %.2f MiB | %.2f MiB |\n", stored,
	       idx_some / 1048576.0, file_bytes(o->dir, "index") / 1048576.0,
	       file_bytes(o->dir, "blocks") / 1048576.0, rss_some / 1048576.0);
	printf("\ntarget: <= 64 MiB: %s\n", idx_some <= (64ULL << 20) ? "met" : "MISSED");
	vt_store_close(s);
	vt_store_destroy(o->dir);
	return 0;
}

int vt_bench_ctier(int argc, char **argv)
{
	struct options o = { .pages = 16384, .faults = 4000 };
	GOptionEntry entries[] = {
		{ "mix", 0, 0, G_OPTION_ARG_STRING, &o.mix,
		  "page mix, e.g. zero=30,same=5,text=25,binary=25,random=15 (the default)",
		  "KIND=W,..." },
		{ "pages", 0, 0, G_OPTION_ARG_INT, &o.pages, "pages per tier (16384)", "N" },
		{ "faults", 0, 0, G_OPTION_ARG_INT, &o.faults, "faults timed per tier (4000)", "N" },
		{ "codec", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.codecs,
		  "codec (repeatable; default lz4, zstd:3, deflate:6)", "CODEC" },
		{ "pool", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.pools,
		  "pool (repeatable; default zsmalloc, zbud)", "POOL" },
		{ "medium", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.media,
		  "medium (repeatable; default node:0 and file:/var/tmp/vtier-bench-ctier-PID-media)",
		  "MEDIUM" },
		{ "dir", 0, 0, G_OPTION_ARG_FILENAME, &o.dir,
		  "store directory (default /dev/shm/vtier-bench-ctier-PID)", "DIR" },
		{ "no-1tib", 0, 0, G_OPTION_ARG_NONE, &o.no_1tib, "skip the 1 TiB index run", NULL },
		{ "putter", 0, 0, G_OPTION_ARG_NONE, &o.putter,
		  "a thread puts and drops other pages of the store throughout the fault rounds "
		  "(bare and store alike)", NULL },
		{ "rt", 0, 0, G_OPTION_ARG_NONE, &o.rt,
		  "fault and touching threads SCHED_FIFO (as a production fault thread would be)",
		  NULL },
		{ NULL }
	};
	static const char *const def_codecs[] = { "lz4", "zstd:3", "deflate:6", NULL };
	static const char *const def_pools[] = { "zsmalloc", "zbud", NULL };
	g_autoptr(GOptionContext) ctx = g_option_context_new("- compressed tiers: ratio, speed, "
							     "metadata, fault latency");
	g_autofree char *media_dir = NULL, *file_medium = NULL;
	g_autofree uint8_t *data = NULL;
	const char *const *codecs, *const *pools, *def_media[3] = { "node:0", NULL, NULL };
	const char *const *media;
	struct vt_mix mix;
	unsigned int kinds[VT_MIX_NR] = { 0 };
	char why[400] = "", loadavg[64];
	struct utsname un;
	g_autoptr(GArray) rows = g_array_new(FALSE, TRUE, sizeof(struct row));
	int r, status = 0;

	if (!vt_bench_options(ctx, entries, &argc, &argv, "ctier"))
		return 2;
	if (o.pages < 64 || o.faults < 1) {
		fprintf(stderr, "vtier-bench ctier: --pages must be >= 64, --faults >= 1\n");
		return 2;
	}
	if (!o.dir)
		o.dir = g_strdup_printf("/dev/shm/vtier-bench-ctier-%d", (int)getpid());
	/* the file medium is for disk: /var/tmp, not the tmpfs of the store */
	media_dir = g_strdup_printf("/var/tmp/vtier-bench-ctier-%d-media", (int)getpid());
	file_medium = g_strdup_printf("file:%s", media_dir);
	def_media[1] = file_medium;
	codecs = o.codecs ? (const char *const *)o.codecs : def_codecs;
	pools = o.pools ? (const char *const *)o.pools : def_pools;
	media = o.media ? (const char *const *)o.media : def_media;
	r = vt_mix_init(&mix, o.mix, 1, why, sizeof(why));
	if (r < 0) {
		fprintf(stderr, "vtier-bench ctier: %s\n", why);
		g_free(o.dir);
		g_free(o.mix);
		g_strfreev(o.codecs);
		g_strfreev(o.pools);
		g_strfreev(o.media);
		return r == -EINVAL ? 2 : 1;
	}
	g_mkdir_with_parents(media_dir, 0700);
	data = g_malloc((size_t)o.pages * PAGE);
	for (int i = 0; i < o.pages; i++)
		kinds[vt_mix_page(&mix, (uint64_t)i, data + (size_t)i * PAGE)]++;
	uname(&un);
	{
		FILE *f = fopen("/proc/loadavg", "r");

		char *sp;

		if (!f || !fgets(loadavg, sizeof(loadavg), f))
			snprintf(loadavg, sizeof(loadavg), "?");
		/* the 1, 5 and 15 minute averages */
		sp = strchr(loadavg, ' ');
		sp = sp ? strchr(sp + 1, ' ') : NULL;
		sp = sp ? strchr(sp + 1, ' ') : NULL;
		if (sp)
			*sp = 0;
		if (f)
			fclose(f);
	}
	printf("# vtier-bench ctier: %d pages (%.0f MiB) per tier: ", o.pages,
	       o.pages * 4096.0 / 1048576);
	for (unsigned int k = 0; k < VT_MIX_NR; k++)
		printf("%s%s %u", k ? ", " : "", vt_mix_kind_name(k), kinds[k]);
	printf("\n# %s %s, %ld CPUs, load average %s; %d faults timed per tier%s%s\n\n",
	       un.sysname, un.release, sysconf(_SC_NPROCESSORS_ONLN), loadavg,
	       MIN(o.faults, o.pages), o.rt ? ", fault threads SCHED_FIFO" : "",
	       o.putter ? ", a putter thread throughout" : "");
	printf("| tier | stored | E2BIG | ratio | codec ratio | compress MB/s | decompress MB/s "
	       "| put us | put from copy us | get us | metadata %% | fault p50 us (bare) | p50 x "
	       "| fault p99 us (bare) | p99 x |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (const char *const *c = codecs; *c; c++)
		for (const char *const *p = pools; *p; p++)
			for (const char *const *m = media; *m; m++) {
				struct vt_ctier_spec spec;
				struct row row = { 0 };

				r = vt_bench_tier_spec(*c, *p, *m, &spec, why, sizeof(why));
				if (!r)
					r = run_tier(&o, &spec, &mix, data, &row, why, sizeof(why));
				if (r < 0) {
					fprintf(stderr, "vtier-bench ctier: %s x %s x %s: %s\n", *c,
						*p, *m, why);
					status = 1;
					continue;
				}
				printf("| %s | %llu | %llu | %.2f | %.2f | %.0f | %.0f | %.1f | %.1f | "
				       "%.1f | %.2f | "
				       "%.1f (%.1f) | %.2f | %.1f (%.1f) | %.2f |\n", row.tier,
				       (unsigned long long)row.stored,
				       (unsigned long long)row.rejected, row.ratio,
				       row.codec_ratio, row.c_mbs, row.d_mbs, row.put_us,
				       row.put_copy_us, row.get_us, row.meta_pct,
				       row.p50_us, row.bare_p50_us, row.p50_us / row.bare_p50_us,
				       row.p99_us, row.bare_p99_us, row.p99_us / row.bare_p99_us);
				fflush(stdout);
				g_array_append_val(rows, row);
			}
	printf("\nratio: stored bytes / pool bytes (zero and same-filled pages take none); "
	       "codec ratio: of the compressed pages only;\ncompress/decompress MB/s: the codec "
	       "alone on the non-zero, non-same pages, thread CPU time; put/get us: CPU per "
	       "vt_store_put / vt_store_get;\nput from copy us: CPU per vt_store_put_copy given "
	       "each page's compressed copy (a destination prepared during precopy: decompressed "
	       "and compared, not compressed again);\nmetadata: index entries + pool allocator, %% of "
	       "stored bytes; fault: wall time of a touch served through userfaultfd, p50 x / "
	       "p99 x: store / bare UFFDIO_COPY.\n");
	printf("\nWhere a compressed page's fault goes (wall us, p50s):\n\n");
	printf("| tier | pages | get | fetch | decompress | checksum | UFFDIO_COPY (bare) "
	       "| fault p50 (bare) |\n");
	printf("|---|---|---|---|---|---|---|---|\n");
	for (guint i = 0; i < rows->len; i++) {
		const struct row *w = &g_array_index(rows, struct row, i);

		printf("| %s | %u | %.1f | %.1f | %.1f | %.1f | %.1f (%.1f) | %.1f (%.1f) |\n",
		       w->tier, w->b_pages, w->b_get_us, w->b_fetch_us, w->b_dec_us, w->b_crc_us,
		       w->b_copy_us, w->b_bare_copy_us, w->p50_us, w->bare_p50_us);
	}
	printf("\nget: one vt_store_get of each stored compressed page; decompress: its "
	       "decompression (the store's decompress_ns); checksum: CRC-32C (%s) of the page;\n"
	       "fetch: the rest of each get (lookup, lock, pool, medium read); UFFDIO_COPY: the "
	       "ioctl in the fault thread, store rounds (bare rounds), all timed faults.\n",
	       vt_crc32c_impl());
	if (!o.no_1tib && run_1tib(&o, data, (uint64_t)o.pages, why, sizeof(why)) < 0) {
		fprintf(stderr, "vtier-bench ctier: 1 TiB index: %s\n", why);
		status = 1;
	}
	vt_mix_free(&mix);
	rmdir(media_dir);
	g_free(o.dir);
	g_free(o.mix);
	g_strfreev(o.codecs);
	g_strfreev(o.pools);
	g_strfreev(o.media);
	return status;
}
