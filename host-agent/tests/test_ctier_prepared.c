// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A destination's copies made during precopy (movers/ctier_prepared.h) and
 * the store's use of them (vt_store_put_copy()): on a real memfd written
 * the way an incoming migration writes it (pages arriving over time, zero
 * pages never written, pages sent again), every page stored from a copy or
 * compressed again reads back as the memfd holds it at the put.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "ctier.h"
#include "ctier_codec.h"
#include "ctier_mix.h"
#include "ctier_prepared.h"
#include "proc_self.h"

#define PAGE 4096U
#define CHUNK_PAGES 512u
#define NPAGES (4 * CHUNK_PAGES)	/* 8 MiB: four chunks */

static struct {
	char *base;
	char store[512];
	struct vt_store_key key;
	struct vt_mix mix;
} env;

static int setup(void **state)
{
	char why[200];
	const char *shm = g_file_test("/dev/shm", G_FILE_TEST_IS_DIR) ? "/dev/shm" : "/tmp";
	g_autofree char *tmpl = g_build_filename(shm, "vtier-prep-XXXXXX", NULL);

	(void)state;
	env.base = g_mkdtemp(g_strdup(tmpl));
	if (!env.base)
		return -1;
	snprintf(env.store, sizeof(env.store), "%s/store", env.base);
	memset(&env.key, 0, sizeof(env.key));
	env.key.vm_uuid[0] = 1;
	snprintf(env.key.backend_id, sizeof(env.key.backend_id), "ram");
	env.key.size_bytes = (uint64_t)NPAGES * PAGE;
	env.key.page_size = PAGE;
	return vt_mix_init(&env.mix, NULL, 7, why, sizeof(why)) ? -1 : 0;
}

static int teardown(void **state)
{
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", env.base);

	(void)state;
	vt_mix_free(&env.mix);
	g_free(env.base);
	return system(cmd) == 0 ? 0 : -1;
}

static struct vt_ctier_spec spec(const char *name, enum vt_codec_kind codec, int level)
{
	struct vt_ctier_spec s = { 0 };

	g_strlcpy(s.name, name, sizeof(s.name));
	s.codec = codec;
	s.level = level;
	s.pool = VT_POOL_ZSMALLOC;
	s.medium = VT_MEDIUM_NODE;
	s.node = 0;
	s.max_stored_pct = 75;
	return s;
}

static struct vt_store *open_store(const struct vt_ctier_spec *specs, unsigned int nr)
{
	struct vt_store *s = NULL;
	char why[300];
	int r;

	vt_store_destroy(env.store);
	r = vt_store_open(env.store, &env.key, specs, nr, true, &s, why, sizeof(why));
	if (r)
		fail_msg("vt_store_open: %s (%s)", g_strerror(-r), why);
	return s;
}

/* A text-like page that compresses, different for each (@page, @version). */
static void text_page(uint64_t page, unsigned int version, uint8_t *out)
{
	for (unsigned int i = 0; i < PAGE; i++)
		out[i] = (uint8_t)("vtier prepares copies "[(i + page) % 22] + (i % 512 == 0 ? version : 0));
	memcpy(out, &page, sizeof(page));
	memcpy(out + 8, &version, sizeof(version));
}

static struct vt_store_tier_stats tier_stats(struct vt_store *s, unsigned int t)
{
	struct vt_store_tier_stats st[VT_CTIER_MAX];

	assert_true(vt_store_stats(s, st, VT_CTIER_MAX) > t);
	return st[t];
}

/*
 * vt_store_put_copy(): a copy that decompresses to the page is stored as it
 * is (no compression); one of another version of the page, a garbled one, one
 * over the tier's threshold, or one from another codec is not: the page is
 * compressed again. Each reads back as the page.
 */
static void test_put_copy(void **state)
{
	struct vt_ctier_spec specs[2] = { spec("lz4", VT_CODEC_LZ4, 0),
					  spec("zstd", VT_CODEC_ZSTD, 3) };
	const struct vt_codec_ops *lz4 = vt_codec_get(VT_CODEC_LZ4);
	const struct vt_codec_ops *zstd = vt_codec_get(VT_CODEC_ZSTD);
	struct vt_store *s = open_store(specs, 2);
	uint8_t page[PAGE], old[PAGE], out[PAGE], copy[2 * PAGE], zcopy[2 * PAGE];
	void *lctx = lz4->ctx_new(0), *zctx = zstd->ctx_new(3);
	int len, zlen;
	bool used;

	(void)state;
	text_page(1, 0, page);
	len = lz4->compress(lctx, page, PAGE, copy, PAGE);
	assert_true(len > 0);
	assert_int_equal(vt_store_put_copy(s, 1, 0, page, copy, (uint32_t)len, &used), 0);
	assert_true(used);
	assert_int_equal(vt_store_get(s, 1, out), 0);
	assert_memory_equal(out, page, PAGE);

	/* a copy of the page as it was before the migration sent it again */
	text_page(2, 0, old);
	text_page(2, 1, page);
	len = lz4->compress(lctx, old, PAGE, copy, PAGE);
	assert_int_equal(vt_store_put_copy(s, 2, 0, page, copy, (uint32_t)len, &used), 0);
	assert_false(used);
	assert_int_equal(vt_store_get(s, 2, out), 0);
	assert_memory_equal(out, page, PAGE);

	/* garbled: a byte flipped, cut short, empty, over the threshold */
	text_page(3, 0, page);
	len = lz4->compress(lctx, page, PAGE, copy, PAGE);
	copy[len / 2] ^= 0x5a;
	assert_int_equal(vt_store_put_copy(s, 3, 0, page, copy, (uint32_t)len, &used), 0);
	assert_false(used);
	assert_int_equal(vt_store_get(s, 3, out), 0);
	assert_memory_equal(out, page, PAGE);
	text_page(4, 0, page);
	len = lz4->compress(lctx, page, PAGE, copy, PAGE);
	assert_int_equal(vt_store_put_copy(s, 4, 0, page, copy, (uint32_t)len - 3, &used), 0);
	assert_false(used);
	assert_int_equal(vt_store_get(s, 4, out), 0);
	assert_memory_equal(out, page, PAGE);
	text_page(5, 0, page);
	assert_int_equal(vt_store_put_copy(s, 5, 0, page, copy, 0, &used), 0);
	assert_false(used);
	assert_int_equal(vt_store_get(s, 5, out), 0);
	assert_memory_equal(out, page, PAGE);
	/* a random page's copy "fits" a codec's output cap of a page, not the tier's 75 % */
	for (unsigned int i = 0; i < PAGE; i++)
		page[i] = (uint8_t)g_random_int();
	len = lz4->compress(lctx, page, PAGE, copy, 2 * PAGE);
	assert_true(len > (int)(PAGE * 3 / 4));
	assert_int_equal(vt_store_put_copy(s, 6, 0, page, copy, (uint32_t)len, &used), -E2BIG);
	assert_false(used);
	assert_int_equal(vt_store_get(s, 6, out), -ENOENT);

	/* zstd's copy offered to the lz4 tier: not lz4's format, compressed again */
	text_page(7, 0, page);
	zlen = zstd->compress(zctx, page, PAGE, zcopy, PAGE);
	assert_true(zlen > 0);
	assert_int_equal(vt_store_put_copy(s, 7, 0, page, zcopy, (uint32_t)zlen, &used), 0);
	assert_false(used);
	assert_int_equal(vt_store_get(s, 7, out), 0);
	assert_memory_equal(out, page, PAGE);
	/* ... and to its own tier: used */
	text_page(8, 0, page);
	zlen = zstd->compress(zctx, page, PAGE, zcopy, PAGE);
	assert_int_equal(vt_store_put_copy(s, 8, 1, page, zcopy, (uint32_t)zlen, &used), 0);
	assert_true(used);
	assert_int_equal(vt_store_get(s, 8, out), 0);
	assert_memory_equal(out, page, PAGE);
	assert_int_equal(vt_store_tier_of(s, 8), 1);
	/* a zero page needs no copy: stored as zero whatever is offered */
	memset(page, 0, PAGE);
	assert_int_equal(vt_store_put_copy(s, 9, 0, page, copy, (uint32_t)len, &used), 0);
	assert_false(used);
	assert_int_equal(vt_store_get(s, 9, out), 0);
	assert_memory_equal(out, page, PAGE);

	lz4->ctx_free(lctx);
	zstd->ctx_free(zctx);
	vt_store_close(s);
}

static int new_memfd(void)
{
	int fd = memfd_create("vtier-prep-test", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)NPAGES * PAGE), 0);
	return fd;
}

static void write_page(int fd, uint64_t page, const uint8_t *data)
{
	assert_int_equal(pwrite(fd, data, PAGE, (off_t)(page * PAGE)), (ssize_t)PAGE);
}

static void wait_rounds(struct vt_prepared *p, uint64_t after)
{
	struct vt_prepared_stats st;

	for (unsigned int i = 0; i < 2000; i++) {
		vt_prepared_get_stats(p, &st);
		if (st.rounds >= after)
			return;
		g_usleep(5000);
	}
	fail_msg("no copying pass in 10 s");
}

/*
 * The plan: chunk 0 for tier 0, chunk 2 for tier 1; chunks 1 and 3 not.
 * Pages arrive in two waves while the thread copies; a page arrives again
 * changed after it was copied; zero pages are never written (holes) or
 * written as zeros. Copies exist for planned, present, compressible pages
 * of the first and second waves, in their chunk's tier; none for holes,
 * zero pages, unplanned chunks; the store uses the copies of unchanged
 * pages and compresses the changed one again, and every page reads back.
 */
static void test_prepared_copies(void **state)
{
	struct vt_ctier_spec specs[2] = { spec("lz4", VT_CODEC_LZ4, 0),
					  spec("zstd", VT_CODEC_ZSTD, 3) };
	struct vt_prepared_stats st;
	uint8_t page[PAGE], out[PAGE];
	struct vt_prepared *p;
	struct vt_store *s;
	int fd = new_memfd();
	uint32_t len;
	bool used;

	(void)state;
	p = vt_prepared_new(dup(fd), 0, (uint64_t)NPAGES * PAGE, specs, 2);
	assert_non_null(p);
	assert_int_equal(vt_prepared_plan(p, 0, (uint64_t)CHUNK_PAGES * PAGE, 0), 0);
	/* a range inside chunk 2 plans the whole chunk */
	assert_int_equal(vt_prepared_plan(p, (2ull * CHUNK_PAGES + 10) * PAGE, PAGE, 1), 0);
	/* outside the backend, a tier out of range, empty */
	assert_int_equal(vt_prepared_plan(p, (uint64_t)NPAGES * PAGE, PAGE, 0), -EINVAL);
	assert_int_equal(vt_prepared_plan(p, 0, (uint64_t)NPAGES * PAGE + PAGE, 0), -EINVAL);
	assert_int_equal(vt_prepared_plan(p, 0, PAGE, 2), -EINVAL);
	assert_int_equal(vt_prepared_plan(p, 0, 0, 0), -EINVAL);

	/* wave 1: the first half of every chunk (page 5: zeros written; 6: a hole) */
	for (uint64_t i = 0; i < NPAGES; i++) {
		if (i % CHUNK_PAGES >= CHUNK_PAGES / 2 || i % CHUNK_PAGES == 6)
			continue;
		if (i % CHUNK_PAGES == 5)
			memset(page, 0, PAGE);
		else
			text_page(i, 0, page);
		write_page(fd, i, page);
	}
	assert_int_equal(vt_prepared_start(p, 20, NULL, NULL, NULL), 0);
	assert_int_equal(vt_prepared_start(p, 20, NULL, NULL, NULL), -EINVAL);
	wait_rounds(p, 2);
	/* wave 2: the second halves; page 1 sent again, changed */
	for (uint64_t i = 0; i < NPAGES; i++) {
		if (i % CHUNK_PAGES < CHUNK_PAGES / 2)
			continue;
		text_page(i, 0, page);
		write_page(fd, i, page);
	}
	text_page(1, 1, page);
	write_page(fd, 1, page);
	vt_prepared_get_stats(p, &st);
	wait_rounds(p, st.rounds + 2);
	/* no copy is readable while copying */
	assert_null(vt_prepared_copy(p, 0, 0, &len));
	vt_prepared_stop(p);
	vt_prepared_get_stats(p, &st);
	assert_int_equal(st.chunks, 2);
	/* chunk 0: 512 - page 5 (zero) - page 6 (hole); chunk 2 the same */
	assert_int_equal(st.pages, 2 * (CHUNK_PAGES - 2));
	assert_int_equal(st.zero, 2);
	assert_true(st.bytes > 0 && vt_prepared_bytes(p) == st.bytes);

	assert_non_null(vt_prepared_copy(p, 0, 0, &len));
	assert_null(vt_prepared_copy(p, 0, 1, &len));		/* another tier */
	assert_null(vt_prepared_copy(p, 5, 0, &len));		/* zeros */
	assert_null(vt_prepared_copy(p, 6, 0, &len));		/* hole */
	assert_null(vt_prepared_copy(p, CHUNK_PAGES + 3, 0, &len));	/* not planned */
	assert_non_null(vt_prepared_copy(p, 2 * CHUNK_PAGES + 400, 1, &len));
	assert_null(vt_prepared_copy(p, (uint64_t)NPAGES, 0, &len));	/* outside */

	/* the placement: chunk 0 to tier 0, chunk 2 to tier 1, from the memfd as it is now */
	s = open_store(specs, 2);
	for (uint64_t i = 0; i < NPAGES; i++) {
		unsigned int tier = i / CHUNK_PAGES == 2 ? 1 : 0;
		const void *copy;
		int r;

		assert_int_equal(pread(fd, page, PAGE, (off_t)(i * PAGE)), (ssize_t)PAGE);
		copy = vt_prepared_copy(p, i, tier, &len);
		r = vt_store_put_copy(s, i, tier, page, copy, copy ? len : 0, &used);
		assert_int_equal(r, 0);
		/* only page 1 changed after its copy */
		assert_true(used == (copy && i != 1));
		assert_int_equal(vt_store_get(s, i, out), 0);
		assert_memory_equal(out, page, PAGE);
	}
	/* the copies were used: the tiers compressed only what had none */
	assert_true(tier_stats(s, 0).puts > 0);
	vt_prepared_release(p, 0, (uint64_t)CHUNK_PAGES * PAGE);
	assert_null(vt_prepared_copy(p, 0, 0, &len));
	assert_non_null(vt_prepared_copy(p, 2 * CHUNK_PAGES, 1, &len));
	/* a range that covers part of a chunk releases nothing of it */
	vt_prepared_release(p, 2ull * CHUNK_PAGES * PAGE, PAGE);
	assert_non_null(vt_prepared_copy(p, 2 * CHUNK_PAGES, 1, &len));
	vt_prepared_release(p, 0, (uint64_t)NPAGES * PAGE);
	assert_int_equal(vt_prepared_bytes(p), 0);
	vt_prepared_free(p);
	vt_store_close(s);
	close(fd);
}

/* The plan from a callback on the thread; stop during copying; a tier's capacity. */
static void plan_two(struct vt_prepared *p, void *arg)
{
	unsigned int *calls = arg;

	(*calls)++;
	assert_int_equal(vt_prepared_plan(p, 0, (uint64_t)NPAGES * PAGE, 0), 0);
}

static void test_prepared_plan_cb_capacity(void **state)
{
	struct vt_ctier_spec specs[1] = { spec("lz4", VT_CODEC_LZ4, 0) };
	struct vt_prepared_stats st;
	uint8_t page[PAGE];
	unsigned int *calls = g_new0(unsigned int, 1);
	struct vt_prepared *p;
	int fd = new_memfd();

	(void)state;
	specs[0].capacity_bytes = 64 * 1024;	/* room for a few dozen copies */
	for (uint64_t i = 0; i < NPAGES; i++) {
		text_page(i, 0, page);
		write_page(fd, i, page);
	}
	p = vt_prepared_new(dup(fd), 0, (uint64_t)NPAGES * PAGE, specs, 1);
	assert_int_equal(vt_prepared_start(p, 20, plan_two, calls, NULL), 0);
	wait_rounds(p, 1);
	vt_prepared_stop(p);
	assert_int_equal(*calls, 1);
	vt_prepared_get_stats(p, &st);
	assert_int_equal(st.chunks, 4);
	assert_true(st.pages > 0 && st.full > 0);
	assert_int_equal(st.pages + st.full, NPAGES);
	/* the capacity is reached by the last copy at most */
	assert_true(st.bytes < 64 * 1024 + PAGE);
	vt_prepared_free(p);
	g_free(calls);
	close(fd);
	/* unusable arguments: NULL, and the memfd is closed */
	assert_null(vt_prepared_new(new_memfd(), 0, 0, specs, 1));
	assert_null(vt_prepared_new(-1, 0, PAGE, specs, 1));
	assert_null(vt_prepared_new(new_memfd(), 0, PAGE, specs, 0));
	assert_null(vt_prepared_new(new_memfd(), PAGE / 2, PAGE, specs, 1));
}

/* Every page of chunk @chunk: its copy decompresses to the memfd's page. */
static void check_chunk_copies(struct vt_prepared *p, int fd, uint64_t chunk, void *ctx)
{
	const struct vt_codec_ops *lz4 = vt_codec_get(VT_CODEC_LZ4);
	uint8_t page[PAGE], out[PAGE];

	for (uint64_t i = chunk * CHUNK_PAGES; i < (chunk + 1) * CHUNK_PAGES; i++) {
		uint32_t len = 0;
		const void *copy = vt_prepared_copy(p, i, 0, &len);

		assert_int_equal(pread(fd, page, PAGE, (off_t)(i * PAGE)), (ssize_t)PAGE);
		assert_non_null(copy);
		assert_int_equal(lz4->decompress(ctx, copy, len, out, PAGE), (int)PAGE);
		assert_memory_equal(out, page, PAGE);
	}
}

/*
 * A PREPARE of a sparse memfd of 1 TiB declared, planned whole for the
 * compressed tier (an all-cold profile), holding 3 chunks of data: the
 * copier holds records for those 3 chunks and its plan as one run, not a
 * record per 2 MiB declared (1.6 GiB per TiB); its RSS grows by what the
 * data needs. Every page of the data has its copy, checked by content.
 */
static void test_prepared_sparse(void **state)
{
	struct vt_ctier_spec specs[1] = { spec("lz4", VT_CODEC_LZ4, 0) };
	const uint64_t size = 1ull << 40, chunks = size / VT_PREPARED_CHUNK_BYTES;
	const uint64_t data[3] = { 0, chunks / 3 + 7, chunks - 1 };
	void *ctx = vt_codec_get(VT_CODEC_LZ4)->ctx_new(0);
	struct vt_prepared_stats st;
	uint8_t page[PAGE];
	struct vt_prepared *p;
	uint64_t rss0, grew;
	int fd = memfd_create("vtier-prep-sparse", MFD_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	for (unsigned int k = 0; k < 3; k++)
		for (uint64_t i = data[k] * CHUNK_PAGES; i < (data[k] + 1) * CHUNK_PAGES; i++) {
			text_page(i, k, page);
			write_page(fd, i, page);
		}
	rss0 = proc_self_status_bytes("VmRSS");
	p = vt_prepared_new(dup(fd), 0, size, specs, 1);
	assert_non_null(p);
	/* the plan as a profile gives it: chunk by chunk, in address order */
	for (uint64_t c = 0; c < chunks; c++)
		assert_int_equal(vt_prepared_plan(p, c * VT_PREPARED_CHUNK_BYTES,
						  VT_PREPARED_CHUNK_BYTES, 0), 0);
	assert_int_equal(vt_prepared_start(p, 20, NULL, NULL, NULL), 0);
	wait_rounds(p, 2);
	vt_prepared_stop(p);
	grew = proc_self_status_bytes("VmRSS") - MIN(rss0, proc_self_status_bytes("VmRSS"));
	vt_prepared_get_stats(p, &st);
	fprintf(stderr, "# 1 TiB sparse: %" G_GUINT64_FORMAT " planned chunks, %" G_GUINT64_FORMAT
		" records, state %" G_GUINT64_FORMAT " B, copies %" G_GUINT64_FORMAT
		" B, RSS +%" G_GUINT64_FORMAT " KiB\n", st.chunks, st.records,
		vt_prepared_state_bytes(p), st.bytes, grew >> 10);
	assert_int_equal(st.chunks, chunks);
	assert_int_equal(st.records, 3);
	assert_int_equal(st.pages, 3 * CHUNK_PAGES);
	/* 3 records of ~3.2 KiB and one run */
	assert_true(vt_prepared_state_bytes(p) < 16 * 1024);
	/* the copies (3 x 2 MiB of text, compressed) and their records, not 1.6 GiB */
	assert_true(grew < 16ull << 20);
	for (unsigned int k = 0; k < 3; k++)
		check_chunk_copies(p, fd, data[k], ctx);
	assert_null(vt_prepared_copy(p, CHUNK_PAGES, 0, &(uint32_t){ 0 }));	/* a hole */
	vt_prepared_free(p);
	vt_codec_get(VT_CODEC_LZ4)->ctx_free(ctx);
	close(fd);
}

/*
 * Plans that overlap: the later one wins chunk by chunk, what it does not
 * cover keeps its tier, and neighbours of a tier join. Then two copiers of
 * the same memfd share a quota: together they never hold more than its cap,
 * the pages they could not copy are counted (capped), and the quota is given
 * back when they go.
 */
static void test_prepared_overlap_quota(void **state)
{
	struct vt_ctier_spec specs[2] = { spec("lz4", VT_CODEC_LZ4, 0),
					  spec("zstd", VT_CODEC_ZSTD, 3) };
	struct vt_prepared_quota *q = vt_prepared_quota_new(256 * 1024);
	struct vt_prepared_stats st, st2;
	struct vt_prepared *p, *p2;
	uint8_t page[PAGE];
	uint32_t len;
	int fd = new_memfd();

	(void)state;
	for (uint64_t i = 0; i < NPAGES; i++) {
		text_page(i, 0, page);
		write_page(fd, i, page);
	}
	p = vt_prepared_new(dup(fd), 0, (uint64_t)NPAGES * PAGE, specs, 2);
	/* all four for lz4, then chunks 1..2 for zstd, then chunk 2 for lz4 again */
	assert_int_equal(vt_prepared_plan(p, 0, (uint64_t)NPAGES * PAGE, 0), 0);
	assert_int_equal(vt_prepared_plan(p, (uint64_t)CHUNK_PAGES * PAGE,
					  2ull * CHUNK_PAGES * PAGE, 1), 0);
	assert_int_equal(vt_prepared_plan(p, 2ull * CHUNK_PAGES * PAGE,
					  (uint64_t)CHUNK_PAGES * PAGE, 0), 0);
	assert_int_equal(vt_prepared_start(p, 20, NULL, NULL, NULL), 0);
	wait_rounds(p, 2);
	vt_prepared_stop(p);
	vt_prepared_get_stats(p, &st);
	assert_int_equal(st.chunks, 4);
	assert_int_equal(st.pages, NPAGES);
	for (uint64_t c = 0; c < 4; c++) {
		unsigned int tier = c == 1 ? 1 : 0;

		assert_non_null(vt_prepared_copy(p, c * CHUNK_PAGES + 9, tier, &len));
		assert_null(vt_prepared_copy(p, c * CHUNK_PAGES + 9, !tier, &len));
	}
	vt_prepared_free(p);

	/* two copiers, one quota of 256 KiB: 8 MiB of text does not fit */
	p = vt_prepared_new(dup(fd), 0, (uint64_t)NPAGES * PAGE, specs, 2);
	p2 = vt_prepared_new(dup(fd), 0, (uint64_t)NPAGES * PAGE, specs, 2);
	assert_int_equal(vt_prepared_add_quota(p, q), 0);
	assert_int_equal(vt_prepared_add_quota(p2, q), 0);
	assert_int_equal(vt_prepared_plan(p, 0, (uint64_t)NPAGES * PAGE, 0), 0);
	assert_int_equal(vt_prepared_plan(p2, 0, (uint64_t)NPAGES * PAGE, 1), 0);
	assert_int_equal(vt_prepared_start(p, 20, NULL, NULL, NULL), 0);
	assert_int_equal(vt_prepared_start(p2, 20, NULL, NULL, NULL), 0);
	assert_int_equal(vt_prepared_add_quota(p, q), -EINVAL);	/* started */
	wait_rounds(p, 2);
	wait_rounds(p2, 2);
	vt_prepared_stop(p);
	vt_prepared_stop(p2);
	vt_prepared_get_stats(p, &st);
	vt_prepared_get_stats(p2, &st2);
	assert_true(vt_prepared_quota_used(q) <= 256 * 1024);
	assert_true(vt_prepared_quota_used(q) > 0);
	/*
	 * Which copier meets the cap first is the scheduler's choice: the
	 * other may have copied all it planned (zstd packs this text tightly)
	 * before the first one filled the quota.
	 */
	assert_true(st.capped + st2.capped > 0);
	assert_int_equal(st.pages + st.capped, NPAGES);
	assert_int_equal(st2.pages + st2.capped, NPAGES);
	/* released chunks give their arenas back */
	vt_prepared_release(p, 0, (uint64_t)NPAGES * PAGE);
	assert_int_equal(vt_prepared_bytes(p), 0);
	vt_prepared_free(p);
	vt_prepared_free(p2);
	assert_int_equal(vt_prepared_quota_used(q), 0);
	vt_prepared_quota_unref(q);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_copy),
		cmocka_unit_test(test_prepared_copies),
		cmocka_unit_test(test_prepared_plan_cb_capacity),
		cmocka_unit_test(test_prepared_sparse),
		cmocka_unit_test(test_prepared_overlap_quota),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
