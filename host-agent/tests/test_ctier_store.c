// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The compressed-tier page store, table-driven over codec x pool x medium
 * (node medium: node 0 in a tmpfs store directory; file medium: a temp dir):
 * round trips of guest-like pages, checksum failures, reopen, corrupted
 * stores, kill -9 at random points, a full pool, concurrent threads, and the
 * metadata targets.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "ctier.h"
#include "ctier_csum.h"
#include "ctier_mix.h"

#define PAGE 4096U

struct combo {
	enum vt_codec_kind codec;
	int level;
	enum vt_pool_kind pool;
	enum vt_medium_kind medium;
};

static const struct combo combos[] = {
	{ VT_CODEC_LZ4, 0, VT_POOL_ZSMALLOC, VT_MEDIUM_NODE },
	{ VT_CODEC_LZ4, 0, VT_POOL_ZBUD, VT_MEDIUM_NODE },
	{ VT_CODEC_LZ4, 0, VT_POOL_ZSMALLOC, VT_MEDIUM_FILE },
	{ VT_CODEC_LZ4, 0, VT_POOL_ZBUD, VT_MEDIUM_FILE },
	{ VT_CODEC_ZSTD, 3, VT_POOL_ZSMALLOC, VT_MEDIUM_NODE },
	{ VT_CODEC_ZSTD, 3, VT_POOL_ZBUD, VT_MEDIUM_NODE },
	{ VT_CODEC_ZSTD, 3, VT_POOL_ZSMALLOC, VT_MEDIUM_FILE },
	{ VT_CODEC_ZSTD, 3, VT_POOL_ZBUD, VT_MEDIUM_FILE },
	{ VT_CODEC_DEFLATE, 6, VT_POOL_ZSMALLOC, VT_MEDIUM_NODE },
	{ VT_CODEC_DEFLATE, 6, VT_POOL_ZBUD, VT_MEDIUM_NODE },
	{ VT_CODEC_DEFLATE, 6, VT_POOL_ZSMALLOC, VT_MEDIUM_FILE },
	{ VT_CODEC_DEFLATE, 6, VT_POOL_ZBUD, VT_MEDIUM_FILE },
};

struct env {
	char *base;			/* temp dir (tmpfs if there is one): store/ under it */
	char *media_dir;		/* temp dir of the file medium */
	char store[512], media[512];
	struct vt_store_key key;
	struct vt_mix mix;
};

static struct env env;

static int setup(void **state)
{
	char why[200];
	const char *shm = g_file_test("/dev/shm", G_FILE_TEST_IS_DIR) ? "/dev/shm" : "/tmp";
	g_autofree char *tmpl = g_build_filename(shm, "vtier-ctier-XXXXXX", NULL);

	(void)state;
	env.base = g_mkdtemp(g_strdup(tmpl));
	if (!env.base)
		return -1;
	snprintf(env.store, sizeof(env.store), "%s/store", env.base);
	/* the file medium is for disk: a temp dir outside the tmpfs of the store */
	env.media_dir = g_dir_make_tmp("vtier-ctier-media-XXXXXX", NULL);
	if (!env.media_dir)
		return -1;
	snprintf(env.media, sizeof(env.media), "%s", env.media_dir);
	memset(&env.key, 0, sizeof(env.key));
	for (unsigned int i = 0; i < 16; i++)
		env.key.vm_uuid[i] = (uint8_t)(i * 17 + 1);
	snprintf(env.key.backend_id, sizeof(env.key.backend_id), "pc.ram");
	env.key.size_bytes = 64ULL << 20;
	env.key.page_size = PAGE;
	return vt_mix_init(&env.mix, NULL, 42, why, sizeof(why)) ? -1 : 0;
}

static int teardown(void **state)
{
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s' '%s'", env.base, env.media_dir);

	(void)state;
	vt_mix_free(&env.mix);
	if (system(cmd) != 0)
		return -1;
	g_free(env.base);
	g_free(env.media_dir);
	return 0;
}

static struct vt_ctier_spec spec_of(const struct combo *c, const char *name)
{
	struct vt_ctier_spec s = { 0 };

	g_strlcpy(s.name, name, sizeof(s.name));
	s.codec = c->codec;
	s.level = c->level;
	s.pool = c->pool;
	s.medium = c->medium;
	s.node = c->medium == VT_MEDIUM_NODE ? 0 : -1;
	if (c->medium == VT_MEDIUM_FILE)
		g_strlcpy(s.dir, env.media, sizeof(s.dir));
	s.max_stored_pct = 75;
	return s;
}

static const char *describe(const struct combo *c)
{
	static char buf[400];
	struct vt_ctier_spec s = spec_of(c, "t");

	vt_ctier_spec_describe(&s, buf, sizeof(buf));
	return buf;
}

static struct vt_store *open_store(const struct vt_ctier_spec *specs, unsigned int nr,
				   bool create)
{
	struct vt_store *s = NULL;
	char why[300];
	int r = vt_store_open(env.store, &env.key, specs, nr, create, &s, why, sizeof(why));

	if (r)
		fail_msg("vt_store_open: %s (%s)", g_strerror(-r), why);
	return s;
}

/* Put @n mix pages from page @first; returns how many were stored (E2BIG ones not). */
static unsigned int put_mix(struct vt_store *s, uint64_t first, unsigned int n, unsigned int tier)
{
	uint8_t page[PAGE];
	unsigned int stored = 0;

	for (uint64_t i = first; i < first + n; i++) {
		enum vt_mix_kind k = vt_mix_page(&env.mix, i, page);
		int r = vt_store_put(s, i, tier, page);

		if (k == VT_MIX_RANDOM)
			assert_int_equal(r, -E2BIG);
		else if (r != -E2BIG)
			assert_int_equal(r, 0);
		stored += r == 0;
	}
	return stored;
}

/* Every page from @first on is stored with its mix content or absent (E2BIG). */
static void check_mix(struct vt_store *s, uint64_t first, unsigned int n)
{
	uint8_t want[PAGE], got[PAGE];

	for (uint64_t i = first; i < first + n; i++) {
		enum vt_mix_kind k = vt_mix_page(&env.mix, i, want);
		int r = vt_store_get(s, i, got);

		if (k == VT_MIX_RANDOM) {
			assert_int_equal(r, -ENOENT);
			continue;
		}
		if (r == -ENOENT)
			continue;	/* a text or binary page that did not compress enough */
		assert_int_equal(r, 0);
		assert_memory_equal(got, want, PAGE);
	}
}

static char *pool_file(const struct combo *c);

/*
 * A page a tier refused is not compressed again while its content stays the
 * same: the second offer is answered from the memo; a changed page, another
 * tier, or the same slot taken by another page are compressed again.
 */
static void test_refused_memo(void **state)
{
	struct vt_ctier_spec specs[2] = { spec_of(&combos[0], "a"), spec_of(&combos[0], "b") };
	struct vt_store *s = open_store(specs, 2, true);
	struct vt_store_tier_stats st[2];
	uint8_t page[PAGE], out[PAGE];
	uint64_t ns;

	(void)state;
	for (unsigned int i = 0; i < PAGE; i++)
		page[i] = (uint8_t)g_random_int();
	assert_int_equal(vt_store_put(s, 7, 0, page), -E2BIG);
	assert_int_equal(vt_store_stats(s, st, 2), 2);
	assert_int_equal(st[0].rejected_e2big, 1);
	assert_int_equal(st[0].rejected_memo, 0);
	ns = st[0].compress_ns;
	/* the same content again: refused without compressing */
	assert_int_equal(vt_store_put(s, 7, 0, page), -E2BIG);
	vt_store_stats(s, st, 2);
	assert_int_equal(st[0].rejected_e2big, 2);
	assert_int_equal(st[0].rejected_memo, 1);
	assert_int_equal(st[0].compress_ns, ns);
	/* another tier has not refused it yet */
	assert_int_equal(vt_store_put(s, 7, 1, page), -E2BIG);
	vt_store_stats(s, st, 2);
	assert_int_equal(st[1].rejected_memo, 0);
	/* another page refused in the same slot (one per 8 pages: 2048) takes it */
	assert_int_equal(vt_store_put(s, 7 + 2048, 0, page), -E2BIG);
	assert_int_equal(vt_store_put(s, 7, 0, page), -E2BIG);
	vt_store_stats(s, st, 2);
	assert_int_equal(st[0].rejected_memo, 1);
	assert_int_equal(vt_store_put(s, 7, 0, page), -E2BIG);
	vt_store_stats(s, st, 2);
	assert_int_equal(st[0].rejected_memo, 2);
	/* a changed page is compressed again */
	page[100] ^= 1;
	assert_int_equal(vt_store_put(s, 7, 0, page), -E2BIG);
	vt_store_stats(s, st, 2);
	assert_int_equal(st[0].rejected_memo, 2);
	assert_int_equal(st[0].rejected_e2big, 6);
	/* ... and once it compresses, it is stored */
	memset(page + 64, 'x', PAGE - 64);
	assert_int_equal(vt_store_put(s, 7, 0, page), 0);
	assert_int_equal(vt_store_get(s, 7, out), 0);
	assert_memory_equal(out, page, PAGE);
	vt_store_close(s);
}

static void test_round_trip(void **state)
{
	uint8_t page[PAGE], out[PAGE];
	int fd = open("/usr/bin/bash", O_RDONLY);

	(void)state;
	assert_true(fd >= 0);
	for (unsigned int c = 0; c < G_N_ELEMENTS(combos); c++) {
		struct vt_ctier_spec spec = spec_of(&combos[c], "t0");
		struct vt_store *s = open_store(&spec, 1, true);
		struct vt_store_tier_stats st;
		unsigned int stored;

		print_message("# %s\n", describe(&combos[c]));
		/* zero and same-filled: no pool space */
		memset(page, 0, PAGE);
		assert_int_equal(vt_store_put(s, 0, 0, page), 0);
		for (unsigned int i = 0; i < PAGE / 8; i++)
			((uint64_t *)page)[i] = 0x0123456789abcdefULL;
		assert_int_equal(vt_store_put(s, 1, 0, page), 0);
		assert_int_equal(vt_store_stats(s, &st, 1), 1);
		assert_int_equal(st.pages, 2);
		assert_int_equal(st.zero_pages, 1);
		assert_int_equal(st.same_pages, 1);
		assert_int_equal(st.pool_bytes, 0);
		assert_int_equal(st.compressed_bytes, 0);
		assert_int_equal(vt_store_get(s, 1, out), 0);
		assert_memory_equal(out, page, PAGE);
		assert_int_equal(vt_store_get(s, 0, out), 0);
		memset(page, 0, PAGE);
		assert_memory_equal(out, page, PAGE);
		/* a page of a real binary */
		assert_int_equal(pread(fd, page, PAGE, 64 * PAGE), PAGE);
		assert_int_equal(vt_store_put(s, 2, 0, page), 0);
		assert_int_equal(vt_store_put(s, 2, 0, page), -EEXIST);
		assert_int_equal(vt_store_get(s, 2, out), 0);
		assert_memory_equal(out, page, PAGE);
		/* the mix: text, binaries, random (E2BIG), zero, same */
		stored = put_mix(s, 1000, 600, 0);
		assert_true(stored > 300);
		check_mix(s, 1000, 600);
		assert_int_equal(vt_store_stats(s, &st, 1), 1);
		assert_int_equal(st.pages, stored + 3);
		assert_true(st.rejected_e2big > 0);
		assert_true(st.pool_bytes > 0);
		assert_true(st.compressed_bytes <= st.pool_bytes);
		assert_string_equal(st.placement, combos[c].medium == VT_MEDIUM_NODE ?
				    "bind:0" : "disk");
		/* walk, tier of, drop */
		assert_int_equal(vt_store_next(s, 0), 0);
		assert_int_equal(vt_store_next(s, 3), vt_store_next(s, 1000));
		assert_int_equal(vt_store_tier_of(s, 2), 0);
		assert_int_equal(vt_store_tier_of(s, 3), -ENOENT);
		assert_int_equal(vt_store_put(s, 5, 1, page), -EINVAL);
		{
			struct vt_ctier_spec two[2] = { spec, spec };
			struct vt_store *bad = NULL;
			char why[200];

			assert_int_equal(vt_store_open(env.store, &env.key, two, 2, false, &bad,
						       why, sizeof(why)), -EINVAL);
			assert_null(bad);
		}
		assert_int_equal(vt_store_put(s, env.key.size_bytes / PAGE, 0, page), -EINVAL);
		for (uint64_t p = vt_store_next(s, 0); p != UINT64_MAX; p = vt_store_next(s, p))
			assert_int_equal(vt_store_drop(s, p), 0);
		assert_int_equal(vt_store_drop(s, 2), -ENOENT);
		assert_int_equal(vt_store_get(s, 2, out), -ENOENT);
		assert_int_equal(vt_store_stats(s, &st, 1), 1);
		assert_int_equal(st.pages, 0);
		assert_int_equal(st.pool_bytes, 0);
		assert_int_equal(st.compressed_bytes, 0);
		vt_store_close(s);
		{
			/* every freed pool page gave its storage back */
			g_autofree char *pool = pool_file(&combos[c]);
			struct stat sb;

			assert_int_equal(stat(pool, &sb), 0);
			assert_int_equal(sb.st_blocks, 0);
		}
	}
	close(fd);
	assert_int_equal(vt_store_destroy(env.store), 0);
	assert_false(g_file_test(env.store, G_FILE_TEST_EXISTS));
}

/* The pool file of tier slot 0 of @c. */
static char *pool_file(const struct combo *c)
{
	GDir *d;
	const char *n;
	char *path = NULL;

	if (c->medium == VT_MEDIUM_NODE)
		return g_strdup_printf("%s/pool-0", env.store);
	d = g_dir_open(env.media, 0, NULL);
	assert_non_null(d);
	while ((n = g_dir_read_name(d)))
		if (g_str_has_suffix(n, "-0.pool")) {
			assert_null(path);	/* one store's: none left by another */
			path = g_build_filename(env.media, n, NULL);
		}
	g_dir_close(d);
	assert_non_null(path);
	return path;
}

static void flip_byte(const char *path, off_t off)
{
	int fd = open(path, O_RDWR);
	uint8_t b;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, off), 1);
	b ^= 0x5a;
	assert_int_equal(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

static void test_checksum(void **state)
{
	uint8_t page[PAGE], out[PAGE];

	(void)state;
	for (unsigned int c = 0; c < G_N_ELEMENTS(combos); c++) {
		struct vt_ctier_spec spec = spec_of(&combos[c], "t0");
		struct vt_store *s = open_store(&spec, 1, true);
		struct vt_store_tier_stats st;
		g_autofree char *pool = pool_file(&combos[c]);
		g_autofree char *blocks = g_strdup_printf("%s/blocks", env.store);

		print_message("# %s\n", describe(&combos[c]));
		/* the first object of a fresh pool is at its start (both pools) */
		vt_mix_fill(&env.mix, VT_MIX_TEXT, 7, page);
		assert_int_equal(vt_store_put(s, 5, 0, page), 0);
		flip_byte(pool, 40);
		memset(out, 0xee, PAGE);
		assert_int_equal(vt_store_get(s, 5, out), -EBADMSG);
		memset(page, 0, PAGE);
		assert_memory_equal(out, page, PAGE);	/* nothing handed out */
		/* a zero page whose entry's checksum changed behind the store's back */
		assert_int_equal(vt_store_put(s, 6, 0, page), 0);
		flip_byte(blocks, 6 * 16 + 4);
		assert_int_equal(vt_store_get(s, 6, out), -EBADMSG);
		assert_int_equal(vt_store_stats(s, &st, 1), 1);
		assert_int_equal(st.bad_checksum, 2);
		assert_int_equal(st.gets, 2);
		vt_store_close(s);
	}
}

static void test_reopen(void **state)
{
	uint8_t page[PAGE];
	struct vt_store_owner o = { .qemu_pid = 1234, .qemu_start_time = 99, .generation = 7 };
	struct vt_store_owner got;

	(void)state;
	for (unsigned int c = 0; c < G_N_ELEMENTS(combos); c++) {
		struct vt_ctier_spec specs[2] = { spec_of(&combos[c], "warm"),
						  spec_of(&combos[(c + 5) % 12], "cold") };
		struct vt_store *s = open_store(specs, 2, true);
		struct vt_store_tier_stats st[3], st2[3];
		unsigned int a, b;

		print_message("# %s\n", describe(&combos[c]));
		assert_int_equal(vt_store_get_owner(s, &got), 0);
		assert_int_equal(got.qemu_pid, 0);
		assert_int_equal(vt_store_set_owner(s, &o), 0);
		a = put_mix(s, 0, 300, 0);
		b = put_mix(s, 3000, 300, 1);
		assert_int_equal(vt_store_stats(s, st, 3), 2);
		vt_store_close(s);

		s = open_store(specs, 2, false);
		check_mix(s, 0, 300);
		check_mix(s, 3000, 300);
		assert_int_equal(vt_store_stats(s, st2, 3), 2);
		for (unsigned int i = 0; i < 2; i++) {
			assert_int_equal(st2[i].pages, st[i].pages);
			assert_int_equal(st2[i].pool_bytes, st[i].pool_bytes);
			assert_int_equal(st2[i].compressed_bytes, st[i].compressed_bytes);
		}
		assert_int_equal(st2[0].pages, a);
		assert_int_equal(st2[1].pages, b);
		assert_int_equal(vt_store_get_owner(s, &got), 0);
		assert_memory_equal(&got, &o, sizeof(o));
		o.generation++;
		assert_int_equal(vt_store_set_owner(s, &o), 0);
		vt_store_close(s);

		/* "cold" is no longer configured: its pages stay readable as tier 1 */
		s = open_store(specs, 1, false);
		check_mix(s, 0, 300);
		check_mix(s, 3000, 300);
		assert_int_equal(vt_store_stats(s, st2, 3), 2);
		assert_string_equal(st2[1].name, "cold");
		assert_int_equal(st2[1].pages, b);
		assert_int_equal(vt_store_tier_of(s, vt_store_next(s, 3000)), 1);
		vt_mix_fill(&env.mix, VT_MIX_TEXT, 1, page);
		assert_int_equal(vt_store_put(s, 5000, 1, page), -EINVAL);
		assert_int_equal(vt_store_get_owner(s, &got), 0);
		assert_int_equal(got.generation, o.generation);
		/* a new tier that cannot open fails the open and leaves the store as it was */
		{
			struct vt_ctier_spec bad[2] = { specs[0], spec_of(&combos[2], "new") };
			struct vt_store *s2 = NULL;
			char why[300];

			g_strlcpy(bad[1].dir, "/nonexistent/vtier", sizeof(bad[1].dir));
			vt_store_close(s);
			assert_int_equal(vt_store_open(env.store, &env.key, bad, 2, false, &s2, why,
						       sizeof(why)), -ENOENT);
			assert_null(s2);
			s = open_store(specs, 1, false);
			check_mix(s, 3000, 300);
		}
		/* served back: once empty, the old tier goes at the next open */
		for (uint64_t p = vt_store_next(s, 3000); p != UINT64_MAX; p = vt_store_next(s, p))
			assert_int_equal(vt_store_drop(s, p), 0);
		vt_store_close(s);
		s = open_store(specs, 1, false);
		assert_int_equal(vt_store_stats(s, st2, 3), 1);
		vt_store_close(s);
	}
}

/* Reopen must fail with @err and say why. */
static void expect_open(const struct vt_ctier_spec *spec, const struct vt_store_key *key,
			int err)
{
	struct vt_store *s = NULL;
	char why[300] = "";
	int r = vt_store_open(env.store, key, spec, 1, false, &s, why, sizeof(why));

	print_message("#   -> %d %s\n", r, why);
	assert_int_equal(r, err);
	assert_null(s);
	assert_true(why[0]);
}

/* A store with pages 0..9 (text) and 513 (zero, chunk 1) in slot 0, closed. */
static struct vt_ctier_spec fresh(const struct combo *c)
{
	struct vt_ctier_spec spec = spec_of(c, "t0");
	struct vt_store *s = open_store(&spec, 1, true);
	uint8_t page[PAGE];

	for (unsigned int i = 0; i < 10; i++) {
		vt_mix_fill(&env.mix, VT_MIX_TEXT, i, page);
		assert_int_equal(vt_store_put(s, i, 0, page), 0);
	}
	memset(page, 0, PAGE);
	assert_int_equal(vt_store_put(s, 513, 0, page), 0);
	vt_store_close(s);
	return spec;
}

static void poke(const char *file, off_t off, const void *data, size_t len)
{
	g_autofree char *path = g_strdup_printf("%s/%s", env.store, file);
	int fd = open(path, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, data, len, off), (ssize_t)len);
	close(fd);
}

static void peek(const char *file, off_t off, void *data, size_t len)
{
	g_autofree char *path = g_strdup_printf("%s/%s", env.store, file);
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, data, len, off), (ssize_t)len);
	close(fd);
}

static void test_corrupt(void **state)
{
	const struct combo *combo_list[] = { &combos[0], &combos[7] };
	struct vt_store_key other = env.key;
	uint8_t e[16], e2[16], b = 0xff;
	uint32_t u32;

	(void)state;
	for (unsigned int c = 0; c < G_N_ELEMENTS(combo_list); c++) {
		struct vt_ctier_spec spec;

		print_message("# %s\n", describe(combo_list[c]));
		spec = fresh(combo_list[c]);
		other.backend_id[0] = 'X';
		expect_open(&spec, &other, -ESTALE);
		other = env.key;
		other.size_bytes *= 2;
		expect_open(&spec, &other, -ESTALE);
		/* header */
		poke("index", 20, &b, 1);
		expect_open(&spec, &env.key, -EUCLEAN);
		/* two entries on one pool slot: page 1's entry copied onto page 2 */
		spec = fresh(combo_list[c]);
		peek("blocks", 16, e, 16);
		poke("blocks", 32, e, 16);
		expect_open(&spec, &env.key, -EUCLEAN);
		/* an unknown tier slot */
		spec = fresh(combo_list[c]);
		peek("blocks", 16, e, 16);
		memcpy(&u32, e, 4);
		u32 |= 7U << 24;
		poke("blocks", 16, &u32, 4);
		expect_open(&spec, &env.key, -EUCLEAN);
		/* an unknown kind */
		spec = fresh(combo_list[c]);
		memcpy(&u32, e, 4);
		u32 |= 3U << 28;
		poke("blocks", 16, &u32, 4);
		expect_open(&spec, &env.key, -EUCLEAN);
		/* a slot outside the pool */
		spec = fresh(combo_list[c]);
		peek("blocks", 16, e2, 16);
		memset(e2 + 8, 0x7f, 7);
		poke("blocks", 16, e2, 16);
		expect_open(&spec, &env.key, -EUCLEAN);
		/* a chunk pointing outside the blocks file, two chunks sharing a block */
		spec = fresh(combo_list[c]);
		u32 = 99;
		poke("index", 4096, &u32, 4);
		expect_open(&spec, &env.key, -EUCLEAN);
		spec = fresh(combo_list[c]);
		peek("index", 4096, &u32, 4);
		poke("index", 4096 + 4, &u32, 4);
		expect_open(&spec, &env.key, -EUCLEAN);
		/* an entry in a block's tail beyond the end of the backend */
		env.key.size_bytes = (2ULL << 20) + 2 * PAGE;
		spec = fresh(combo_list[c]);
		peek("index", 4096 + 4, &u32, 4);	/* chunk 1: page 513's block */
		peek("blocks", (off_t)(u32 - 1) * 8192 + 1 * 16, e2, 16);
		poke("blocks", (off_t)(u32 - 1) * 8192 + 100 * 16, e2, 16);
		expect_open(&spec, &env.key, -EUCLEAN);
		env.key.size_bytes = 64ULL << 20;
		/* a truncated index, a missing pool file, no store at all */
		spec = fresh(combo_list[c]);
		{
			g_autofree char *p = g_strdup_printf("%s/index", env.store);
			g_autofree char *pool = pool_file(combo_list[c]);

			assert_int_equal(truncate(p, 100), 0);
			expect_open(&spec, &env.key, -EUCLEAN);
			/* a store whose header is gone cannot name its file pools: left */
			assert_int_equal(vt_store_destroy(env.store), 0);
			if (combo_list[c]->medium == VT_MEDIUM_FILE)
				assert_int_equal(unlink(pool), 0);
		}
		spec = fresh(combo_list[c]);
		{
			g_autofree char *p = pool_file(combo_list[c]);

			assert_int_equal(unlink(p), 0);
		}
		expect_open(&spec, &env.key, -EUCLEAN);
		assert_int_equal(vt_store_destroy(env.store), 0);
		expect_open(&spec, &env.key, -ENOENT);
	}
}

/* A torn owner update (its slot's checksum never written) keeps the owner before it. */
static void test_torn_owner(void **state)
{
	struct vt_ctier_spec spec = fresh(&combos[0]);
	struct vt_store_owner a = { .qemu_pid = 11, .generation = 0x1111222233334444ULL };
	struct vt_store_owner b = { .qemu_pid = 22, .generation = 0x5555666677778888ULL };
	struct vt_store_owner got;
	uint8_t hdr[4096];
	struct vt_store *s;
	unsigned int off;

	(void)state;
	s = open_store(&spec, 1, false);
	assert_int_equal(vt_store_set_owner(s, &a), 0);
	assert_int_equal(vt_store_set_owner(s, &b), 0);
	vt_store_close(s);
	/* find b's generation in the header and tear it */
	peek("index", 0, hdr, sizeof(hdr));
	for (off = 0; off + 8 <= sizeof(hdr); off++)
		if (!memcmp(hdr + off, &b.generation, 8))
			break;
	assert_true(off + 8 <= sizeof(hdr));
	hdr[off] ^= 1;
	poke("index", off, &hdr[off], 1);
	s = open_store(&spec, 1, false);
	assert_int_equal(vt_store_get_owner(s, &got), 0);
	assert_memory_equal(&got, &a, sizeof(a));
	/* and the next update goes to the torn slot, not over a */
	assert_int_equal(vt_store_set_owner(s, &b), 0);
	vt_store_close(s);
	s = open_store(&spec, 1, false);
	assert_int_equal(vt_store_get_owner(s, &got), 0);
	assert_memory_equal(&got, &b, sizeof(b));
	vt_store_close(s);
}

/* A half-written entry (state word never set) is ignored on reopen. */
static void test_torn_entry(void **state)
{
	struct vt_ctier_spec spec = fresh(&combos[0]);
	uint8_t e[16], e2[PAGE], out[PAGE];
	struct vt_store *s;

	(void)state;
	peek("blocks", 16, e, 16);
	memset(e, 0, 4);	/* page 1: crc and location written, state not */
	poke("blocks", 16, e, 16);
	s = open_store(&spec, 1, false);
	assert_int_equal(vt_store_get(s, 1, out), -ENOENT);
	assert_int_equal(vt_store_get(s, 2, out), 0);
	/* its pool slot is free again and gets reused without harm */
	vt_mix_fill(&env.mix, VT_MIX_TEXT, 1, e2);
	assert_int_equal(vt_store_put(s, 1, 0, e2), 0);
	assert_int_equal(vt_store_get(s, 1, out), 0);
	assert_memory_equal(out, e2, PAGE);
	vt_mix_fill(&env.mix, VT_MIX_TEXT, 2, e2);
	assert_int_equal(vt_store_get(s, 2, out), 0);
	assert_memory_equal(out, e2, PAGE);
	vt_store_close(s);
}

/* Crash simulation: a child puts and drops; SIGKILL at a random point. */
#define CRASH_OPS 3000

/* Op @i: put page i (mix), or for every fourth op, drop page i - 3. */
static bool op_is_drop(unsigned int i)
{
	return i % 4 == 3;
}

static void child_run(const struct combo *c, int wfd)
{
	struct vt_ctier_spec spec = spec_of(c, "t0");
	struct vt_store *s = NULL;
	uint8_t page[PAGE];
	char why[200];

	if (vt_store_open(env.store, &env.key, &spec, 1, true, &s, why, sizeof(why)))
		_exit(2);
	for (unsigned int i = 0; i < CRASH_OPS; i++) {
		int r;

		if (op_is_drop(i)) {
			r = vt_store_drop(s, i - 3);
			if (r && r != -ENOENT)
				_exit(3);
		} else {
			vt_mix_page(&env.mix, i, page);
			r = vt_store_put(s, i, 0, page);
			if (r && r != -E2BIG)
				_exit(4);
		}
		/* op i is durable */
		if (write(wfd, &i, sizeof(i)) != sizeof(i))
			_exit(5);
	}
	pause();
	_exit(0);
}

static void test_crash(void **state)
{
	GRand *rnd = g_rand_new_with_seed(7);

	(void)state;
	for (unsigned int round = 0; round < 12; round++) {
		const struct combo *c = &combos[(round * 5) % G_N_ELEMENTS(combos)];
		struct vt_ctier_spec spec = spec_of(c, "t0");
		int fds[2], status;
		unsigned int done = 0, v;
		uint8_t want[PAGE], got[PAGE];
		struct vt_store *s;
		pid_t pid;

		assert_int_equal(pipe(fds), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			child_run(c, fds[1]);
		}
		close(fds[1]);
		/* the child has started once it reported its first op */
		assert_int_equal(read(fds[0], &v, sizeof(v)), sizeof(v));
		done = v + 1;
		g_usleep(g_rand_int_range(rnd, 0, 40000));
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		while (read(fds[0], &v, sizeof(v)) == sizeof(v))
			done = v + 1;
		close(fds[0]);
		print_message("# %s: killed after %u durable ops\n", describe(c), done);

		s = open_store(&spec, 1, false);
		for (unsigned int i = 0; i < CRASH_OPS; i++) {
			bool kept = !op_is_drop(i) && i < done;	/* put, reported durable */
			bool maybe = i == done;			/* the op in flight */
			enum vt_mix_kind k;
			int r;

			if (op_is_drop(i))
				continue;
			if (kept && op_is_drop(i + 3) && i + 3 < done)
				kept = false;			/* dropped, reported */
			else if (kept && op_is_drop(i + 3) && i + 3 == done)
				maybe = true;			/* its drop was in flight */
			k = vt_mix_page(&env.mix, i, want);
			r = vt_store_get(s, i, got);
			if (r == 0)
				assert_memory_equal(got, want, PAGE);
			else
				assert_int_equal(r, -ENOENT);
			if (k == VT_MIX_RANDOM) {
				assert_int_equal(r, -ENOENT);
				continue;
			}
			/* only a page that did not compress may be missing */
			if (r == -ENOENT && kept && !maybe)
				assert_true(k == VT_MIX_TEXT || k == VT_MIX_BINARY);
			if (r == 0 && !kept)
				assert_true(maybe);
		}
		vt_store_close(s);
	}
	g_rand_free(rnd);
}

static void test_pool_full(void **state)
{
	uint8_t page[PAGE], out[PAGE];

	(void)state;
	for (unsigned int c = 0; c < G_N_ELEMENTS(combos); c++) {
		struct vt_ctier_spec spec = spec_of(&combos[c], "small");
		struct vt_store *s;
		uint64_t i;
		int r = 0;

		spec.capacity_bytes = 4 * PAGE;
		s = open_store(&spec, 1, true);
		for (i = 0; i < 1000; i++) {
			vt_mix_fill(&env.mix, VT_MIX_TEXT, i, page);
			r = vt_store_put(s, i, 0, page);
			if (r == -ENOSPC)
				break;
			assert_true(r == 0 || r == -E2BIG);
		}
		assert_int_equal(r, -ENOSPC);
		assert_int_equal(vt_store_tier_of(s, i), -ENOENT);
		/* zero pages still fit: they take no pool space */
		memset(page, 0, PAGE);
		assert_int_equal(vt_store_put(s, i, 0, page), 0);
		for (uint64_t k = 0; k < i; k++) {
			vt_mix_fill(&env.mix, VT_MIX_TEXT, k, page);
			r = vt_store_get(s, k, out);
			if (r == 0)
				assert_memory_equal(out, page, PAGE);
			else
				assert_int_equal(r, -ENOENT);
		}
		vt_store_close(s);
	}
}

struct worker {
	struct vt_store *s;
	unsigned int id;
	unsigned int stored;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	uint8_t page[PAGE], out[PAGE];

	for (unsigned int n = 0; n < 300; n++) {
		uint64_t i = w->id * 100000ULL + n;
		enum vt_mix_kind k = vt_mix_page(&env.mix, i, page);
		int r = vt_store_put(w->s, i, w->id % 2, page);

		if (r == -E2BIG)
			continue;
		if (r != 0 || vt_store_get(w->s, i, out) != 0 || memcmp(out, page, PAGE))
			return (void *)1;
		if (n % 2 && vt_store_drop(w->s, i) != 0)
			return (void *)1;
		w->stored += !(n % 2);
		(void)k;
	}
	return NULL;
}

struct racer {
	struct vt_store *s;
	unsigned int ok;
};

/* Everyone puts the same pages: exactly one put of each succeeds. */
static void *racer_run(void *arg)
{
	struct racer *r = arg;
	uint8_t page[PAGE];

	for (uint64_t i = 50000; i < 50200; i++) {
		int ret;

		vt_mix_fill(&env.mix, VT_MIX_TEXT, i, page);
		ret = vt_store_put(r->s, i, 0, page);
		if (ret == 0)
			r->ok++;
		else if (ret != -EEXIST && ret != -E2BIG)
			return (void *)1;
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct vt_ctier_spec specs[2] = { spec_of(&combos[0], "a"), spec_of(&combos[7], "b") };
	struct vt_store *s;
	struct worker w[4];
	pthread_t th[4];
	struct vt_store_tier_stats st[2];
	uint64_t total = 0;

	(void)state;
	env.key.size_bytes = 4ULL << 30;
	s = open_store(specs, 2, true);
	for (unsigned int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .s = s, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
	}
	for (unsigned int i = 0; i < 4; i++) {
		void *ret;

		assert_int_equal(pthread_join(th[i], &ret), 0);
		assert_null(ret);
		total += w[i].stored;
	}
	assert_int_equal(vt_store_stats(s, st, 2), 2);
	assert_int_equal(st[0].pages + st[1].pages, total);
	{
		struct racer rc[3] = { { .s = s }, { .s = s }, { .s = s } };
		unsigned int stored = 0, ok = 0;

		for (unsigned int i = 0; i < 3; i++)
			assert_int_equal(pthread_create(&th[i], NULL, racer_run, &rc[i]), 0);
		for (unsigned int i = 0; i < 3; i++) {
			void *ret;

			assert_int_equal(pthread_join(th[i], &ret), 0);
			assert_null(ret);
			ok += rc[i].ok;
		}
		for (uint64_t i = 50000; i < 50200; i++) {
			uint8_t want[PAGE], got[PAGE];

			if (vt_store_get(s, i, got) != 0)
				continue;
			vt_mix_fill(&env.mix, VT_MIX_TEXT, i, want);
			assert_memory_equal(got, want, PAGE);
			stored++;
		}
		assert_int_equal(ok, stored);
		assert_true(stored > 100);
		total += stored;
	}
	vt_store_close(s);
	s = open_store(specs, 2, false);
	assert_int_equal(vt_store_stats(s, st, 2), 2);
	assert_int_equal(st[0].pages + st[1].pages, total);
	vt_store_close(s);
	env.key.size_bytes = 64ULL << 20;
}

/* Targets: pool metadata <= 1% of stored bytes; 1 TiB backend's index <= 64 MiB. */
static void test_metadata(void **state)
{
	struct vt_ctier_spec spec;
	struct vt_store_tier_stats st;
	struct vt_store *s;
	uint64_t idx;

	(void)state;
	for (unsigned int c = 0; c < 2; c++) {
		spec = spec_of(&combos[c], "m");
		s = open_store(&spec, 1, true);
		put_mix(s, 0, 4000, 0);
		assert_int_equal(vt_store_stats(s, &st, 1), 1);
		print_message("# %s: %llu pages, metadata %llu bytes = %.3f%% of stored\n",
			      describe(&combos[c]), (unsigned long long)st.pages,
			      (unsigned long long)st.metadata_bytes,
			      100.0 * (double)st.metadata_bytes / (double)(st.pages * PAGE));
		assert_true(st.metadata_bytes * 100 <= st.pages * PAGE);
		vt_store_close(s);
	}
	env.key.size_bytes = 1ULL << 40;
	spec = spec_of(&combos[0], "m");
	s = open_store(&spec, 1, true);
	put_mix(s, 0, 1000, 0);
	put_mix(s, (1ULL << 28) - 1000, 1000, 0);
	idx = vt_store_index_bytes(s);
	print_message("# 1 TiB backend: index %llu bytes\n", (unsigned long long)idx);
	assert_true(idx <= 64ULL << 20);
	vt_store_close(s);
	s = open_store(&spec, 1, false);
	check_mix(s, (1ULL << 28) - 1000, 1000);
	vt_store_close(s);
	assert_int_equal(vt_store_destroy(env.store), 0);
	env.key.size_bytes = 64ULL << 20;
}

/* CRC-32C bit by bit, from its definition: the reference for both versions. */
static uint32_t crc32c_bitwise(const uint8_t *p, size_t len)
{
	uint32_t c = ~0U;

	while (len--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78U : c >> 1;
	}
	return ~c;
}

/* Open (or @create) a store in @dir with @specs[@nr]. */
static struct vt_store *open_store_at(const char *dir, const struct vt_ctier_spec *specs,
				      unsigned int nr, bool create)
{
	struct vt_store *s = NULL;
	char why[300];
	int r = vt_store_open(dir, &env.key, specs, nr, create, &s, why, sizeof(why));

	if (r)
		fail_msg("vt_store_open %s: %s (%s)", dir, g_strerror(-r), why);
	return s;
}

/*
 * Compressed travel: a page got as its store keeps it goes into another
 * store as it is and reads back byte for byte, also after a reopen; a tier
 * of another codec takes the ZERO and SAME pages only; malformed
 * encodings are refused; a wrong crc is caught when the page is got, as
 * for any put.
 */
static void test_encoded(void **state)
{
	g_autofree char *dir_b = g_strdup_printf("%s/store-b", env.base);
	uint8_t page[PAGE], out[PAGE], bytes[PAGE];

	(void)state;
	for (unsigned int c = 0; c < G_N_ELEMENTS(combos); c++) {
		/* lz4 -> zstd -> deflate -> lz4: another codec */
		const struct combo *other = &combos[(c + 4) % G_N_ELEMENTS(combos)];
		struct vt_ctier_spec spec = spec_of(&combos[c], "t0");
		struct vt_ctier_spec specs_b[2] = { spec_of(&combos[c], "t0"), spec_of(other, "t1") };
		struct vt_store *a = open_store(&spec, 1, true);
		struct vt_store *b = open_store_at(dir_b, specs_b, 2, true);
		struct vt_store_encoded enc, bad;
		uint64_t compressed = UINT64_MAX, word;
		unsigned int stored, n = 0;

		print_message("# %s\n", describe(&combos[c]));
		stored = put_mix(a, 0, 300, 0);
		for (uint64_t p = vt_store_next(a, 0); p != UINT64_MAX; p = vt_store_next(a, p + 1)) {
			int r;

			vt_mix_page(&env.mix, p, page);
			assert_int_equal(vt_store_get_encoded(a, p, &enc, bytes), 0);
			assert_int_equal(enc.kind, vt_store_classify(page, &word));
			assert_int_equal(enc.crc, vt_crc32c(page, PAGE));
			if (enc.kind == VT_STORE_COMPRESSED) {
				assert_int_equal(enc.codec, combos[c].codec);
				assert_true(enc.len > 0 && enc.len <= PAGE);
				compressed = compressed == UINT64_MAX ? p : compressed;
			} else {
				assert_int_equal(enc.word, word);
				assert_int_equal(enc.len, 0);
			}
			r = vt_store_put_encoded(b, p, 1, &enc, bytes);
			if (enc.kind == VT_STORE_COMPRESSED) {
				assert_int_equal(r, -EOPNOTSUPP);
			} else {
				assert_int_equal(r, 0);
				assert_int_equal(vt_store_drop(b, p), 0);
			}
			assert_int_equal(vt_store_put_encoded(b, p, 0, &enc, bytes), 0);
			assert_int_equal(vt_store_put_encoded(b, p, 0, &enc, bytes), -EEXIST);
			assert_int_equal(vt_store_get(b, p, out), 0);
			assert_memory_equal(out, page, PAGE);
			n++;
		}
		assert_int_equal(n, stored);
		assert_true(compressed != UINT64_MAX);
		assert_int_equal(vt_store_get_encoded(a, 5000, &enc, bytes), -ENOENT);

		/* malformed: each refused, nothing stored */
		bad = (struct vt_store_encoded){ .kind = VT_STORE_ZERO, .word = 1 };
		assert_int_equal(vt_store_put_encoded(b, 400, 0, &bad, bytes), -EINVAL);
		bad = (struct vt_store_encoded){ .kind = VT_STORE_SAME };
		assert_int_equal(vt_store_put_encoded(b, 400, 0, &bad, bytes), -EINVAL);
		bad = (struct vt_store_encoded){ .kind = VT_STORE_COMPRESSED,
						 .codec = combos[c].codec };
		assert_int_equal(vt_store_put_encoded(b, 400, 0, &bad, bytes), -EINVAL);
		bad.len = PAGE + 1;
		assert_int_equal(vt_store_put_encoded(b, 400, 0, &bad, bytes), -EINVAL);
		bad.len = 100;
		assert_int_equal(vt_store_put_encoded(b, 400, 0, &bad, NULL), -EINVAL);
		bad.len = PAGE * 75 / 100 + 1;	/* past the tier's max_stored_pct */
		assert_int_equal(vt_store_put_encoded(b, 400, 0, &bad, bytes), -EOPNOTSUPP);
		bad.len = 100;
		assert_int_equal(vt_store_put_encoded(b, env.key.size_bytes / PAGE, 0, &bad, bytes),
				 -EINVAL);
		assert_int_equal(vt_store_put_encoded(b, 400, 2, &bad, bytes), -EINVAL);
		assert_int_equal(vt_store_tier_of(b, 400), -ENOENT);

		/* a wrong crc goes in, and the get says the copy is bad */
		assert_int_equal(vt_store_get_encoded(a, compressed, &enc, bytes), 0);
		enc.crc ^= 1;
		assert_int_equal(vt_store_put_encoded(b, 401, 0, &enc, bytes), 0);
		assert_int_equal(vt_store_get(b, 401, out), -EBADMSG);

		/* durable: the copies read back after a reopen */
		vt_store_close(b);
		b = open_store_at(dir_b, specs_b, 2, false);
		for (uint64_t p = vt_store_next(a, 0); p != UINT64_MAX; p = vt_store_next(a, p + 1)) {
			vt_mix_page(&env.mix, p, page);
			assert_int_equal(vt_store_get(b, p, out), 0);
			assert_memory_equal(out, page, PAGE);
		}
		vt_store_close(b);
		assert_int_equal(vt_store_destroy(dir_b), 0);
		vt_store_close(a);
	}
	assert_int_equal(vt_store_destroy(env.store), 0);
}

/* CRC-32C's check value, by hardware and by table, on odd lengths too. */
static void test_crc32c(void **state)
{
	uint8_t page[PAGE];

	(void)state;
	assert_int_equal(vt_crc32c("123456789", 9), 0xe3069283);
	assert_int_equal(vt_crc32c_table("123456789", 9), 0xe3069283);
	assert_true(!strcmp(vt_crc32c_impl(), "sse4.2") || !strcmp(vt_crc32c_impl(), "table"));
	vt_mix_fill(&env.mix, VT_MIX_BINARY, 3, page);
	for (size_t len = 0; len < 20; len++)
		assert_int_equal(vt_crc32c(page + 1, len), vt_crc32c_table(page + 1, len));
	assert_int_equal(vt_crc32c(page, PAGE), vt_crc32c_table(page, PAGE));
	/* the table's eight-byte steps and its tail, at every alignment */
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len < 40; len++)
			assert_int_equal(vt_crc32c_table(page + off, len),
					 crc32c_bitwise(page + off, len));
	assert_int_equal(vt_crc32c_table(page, PAGE), crc32c_bitwise(page, PAGE));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_encoded),
		cmocka_unit_test(test_refused_memo),
		cmocka_unit_test(test_checksum),
		cmocka_unit_test(test_reopen),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_torn_entry),
		cmocka_unit_test(test_torn_owner),
		cmocka_unit_test(test_crash),
		cmocka_unit_test(test_pool_full),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_metadata),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
