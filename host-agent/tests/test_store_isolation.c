// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * No store can hurt another (rule 3 of the design): two VMs whose stores
 * would share a file-medium pool name under the version-1 naming (two
 * QEMUs without -uuid and backend "ram"; a backend id with the victim's
 * CRC-32C under its uuid) fill, check every page, remove the other and
 * reopen; a damaged store refuses only itself; a store written with the
 * version-1 layout reopens with every page; and a pool maps address space
 * for what it holds, not for the backend's size (node media in segments).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "ctier.h"
#include "ctier_csum.h"
#include "ctier_medium.h"
#include "proc_self.h"

#define PAGE 4096U
#define NPAGES 1024U

/* Fresh for each test: what one test leaves cannot decide another. */
struct env {
	char *base;			/* tmpfs temp dir: the store root */
	char *media;			/* temp dir of the file medium */
};

static struct env env;

static int setup(void **state)
{
	const char *shm = g_file_test("/dev/shm", G_FILE_TEST_IS_DIR) ? "/dev/shm" : "/tmp";
	g_autofree char *tmpl = g_build_filename(shm, "vtier-iso-XXXXXX", NULL);

	(void)state;
	env.base = g_mkdtemp(g_strdup(tmpl));
	env.media = g_dir_make_tmp("vtier-iso-media-XXXXXX", NULL);
	return env.base && env.media ? 0 : -1;
}

static int teardown(void **state)
{
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s' '%s'", env.base, env.media);

	(void)state;
	if (system(cmd) != 0)
		return -1;
	g_free(env.base);
	g_free(env.media);
	return 0;
}

/* Tier 0: lz4 x zsmalloc on disk (the shared-name medium); tier 1: lz4 x zbud x node 0. */
static void specs_of(struct vt_ctier_spec sp[2])
{
	memset(sp, 0, 2 * sizeof(*sp));
	g_strlcpy(sp[0].name, "cold", sizeof(sp[0].name));
	sp[0].codec = VT_CODEC_LZ4;
	sp[0].pool = VT_POOL_ZSMALLOC;
	sp[0].medium = VT_MEDIUM_FILE;
	sp[0].node = -1;
	g_strlcpy(sp[0].dir, env.media, sizeof(sp[0].dir));
	sp[0].max_stored_pct = 75;
	g_strlcpy(sp[1].name, "warm", sizeof(sp[1].name));
	sp[1].codec = VT_CODEC_LZ4;
	sp[1].pool = VT_POOL_ZBUD;
	sp[1].medium = VT_MEDIUM_NODE;
	sp[1].node = 0;
	sp[1].max_stored_pct = 75;
}

static struct vt_store_key key_of(const uint8_t *uuid, const char *id, uint64_t size)
{
	struct vt_store_key k = { .size_bytes = size, .page_size = PAGE };

	if (uuid)
		memcpy(k.vm_uuid, uuid, 16);
	g_strlcpy(k.backend_id, id, sizeof(k.backend_id));
	return k;
}

/* Page @i of VM @tag: text-like (compresses about 2:1 with lz4), unique per (tag, page). */
static void page_of(char tag, uint64_t i, uint8_t *p)
{
	unsigned int off = 0, line = 0;

	while (off < PAGE) {
		uint32_t h = vt_crc32c(&(uint64_t[2]){ (uint64_t)tag, i * 4096 + line }, 16);
		char buf[96];
		int n = snprintf(buf, sizeof(buf), "vm %c page %06llu line %03u value %08x %s\n",
				 tag, (unsigned long long)i, line, h, h & 1 ? "odd" : "even");

		memcpy(p + off, buf, MIN((unsigned int)n, PAGE - off));
		off += (unsigned int)n;
		line++;
	}
}

static struct vt_store *open_with(const char *dir, const struct vt_store_key *key,
				  const struct vt_ctier_spec *sp, bool create, int want)
{
	struct vt_store *s = NULL;
	char why[400] = "";
	int r = vt_store_open(dir, key, sp, 2, create, &s, why, sizeof(why));

	if (r != want)
		fail_msg("vt_store_open(%s, %s): %d %s, expected %d", dir,
			 create ? "create" : "reopen", r, why, want);
	if (r)
		print_message("#   %s refused: %s\n", dir, why);
	return s;
}

static struct vt_store *open_at(const char *dir, const struct vt_store_key *key, bool create,
				int want)
{
	struct vt_ctier_spec sp[2];

	specs_of(sp);
	return open_with(dir, key, sp, create, want);
}

/* Pages [0, @n) of VM @tag: even ones in the file tier, odd ones in the node tier. */
static void fill(struct vt_store *s, char tag, uint64_t n)
{
	uint8_t page[PAGE];

	for (uint64_t i = 0; i < n; i++) {
		page_of(tag, i, page);
		assert_int_equal(vt_store_put(s, i, (unsigned int)(i & 1), page), 0);
	}
}

/* Every page of VM @tag is there, in its tier, byte for byte. */
static void check(struct vt_store *s, char tag, uint64_t n)
{
	uint8_t want[PAGE], got[PAGE];
	uint64_t bad = 0;

	for (uint64_t i = 0; i < n; i++) {
		int r = vt_store_get(s, i, got);

		page_of(tag, i, want);
		if (r || memcmp(got, want, PAGE) || vt_store_tier_of(s, i) != (int)(i & 1))
			bad++;
	}
	if (bad)
		fail_msg("VM %c: %llu of %llu pages lost or changed", tag, (unsigned long long)bad,
			 (unsigned long long)n);
}

/*
 * Victim A and another store B (whose version-1 pool name is A's): both
 * filled and checked; B removed as when its QEMU exits; A checked, closed
 * and reopened as after a vtierd restart, every page checked.
 */
static void two_stores(const char *dir_a, const struct vt_store_key *ka, const char *dir_b,
		       const struct vt_store_key *kb)
{
	struct vt_store *a = open_at(dir_a, ka, true, 0), *b;

	fill(a, 'A', NPAGES);
	check(a, 'A', NPAGES);
	b = open_at(dir_b, kb, true, 0);
	fill(b, 'B', NPAGES);
	check(a, 'A', NPAGES);
	check(b, 'B', NPAGES);
	/* B's QEMU exits: the orphan sweep removes its store */
	vt_store_close(b);
	assert_int_equal(vt_store_destroy(dir_b), 0);
	check(a, 'A', NPAGES);
	/* vtierd restarts: A's RECONNECT reopens its store */
	vt_store_close(a);
	a = open_at(dir_a, ka, false, 0);
	check(a, 'A', NPAGES);
	vt_store_close(a);
	a = open_at(dir_a, ka, false, 0);
	check(a, 'A', NPAGES);
	vt_store_close(a);
	assert_int_equal(vt_store_destroy(dir_a), 0);
	/* nothing of either is left on disk */
	assert_int_equal(dir_entries(env.media), 0);
}

/* Two QEMUs without -uuid (uuid zero), both with backend "ram": two store dirs. */
static void test_two_uuidless_qemus(void **state)
{
	struct vt_store_key k = key_of(NULL, "ram", 64ULL << 20);
	g_autofree char *a = g_strdup_printf("%s/pid100-5000-ram", env.base);
	g_autofree char *b = g_strdup_printf("%s/pid200-6000-ram", env.base);

	(void)state;
	two_stores(a, &k, b, &k);
}

/*
 * A backend id other than @victim whose CRC-32C is @victim's: @victim + 11
 * letters of {a c e g i k m o} (bits 1..3 of each free: 33 unknowns), solved
 * over GF(2) since CRC is affine in its input for a fixed length.
 */
static void crc_twin(const char *victim, char *out, size_t len)
{
	const unsigned int nch = 11, vlen = (unsigned int)strlen(victim);
	uint32_t target = vt_crc32c(victim, vlen), base, need;
	uint32_t rows[64], piv[64];
	uint64_t combo[64];
	unsigned int nrows = 0;
	char buf[64];
	uint64_t pick = 0;

	assert_true(vlen + nch < sizeof(buf) && vlen + nch < len);
	memcpy(buf, victim, vlen);
	memset(buf + vlen, 'a', nch);
	base = vt_crc32c(buf, vlen + nch);
	/*
	 * Each column (the crc change of one free bit) reduced by the rows so
	 * far, in order: what is left has a pivot (lowest bit) no row has.
	 */
	for (unsigned int j = 0; j < 3 * nch; j++) {
		uint32_t v;
		uint64_t c = 1ULL << j;

		buf[vlen + j / 3] ^= (char)(2 << (j % 3));
		v = vt_crc32c(buf, vlen + nch) ^ base;
		buf[vlen + j / 3] ^= (char)(2 << (j % 3));
		for (unsigned int r = 0; r < nrows; r++)
			if (v & piv[r]) {
				v ^= rows[r];
				c ^= combo[r];
			}
		if (v) {
			piv[nrows] = v & -v;
			rows[nrows] = v;
			combo[nrows++] = c;
		}
	}
	assert_int_equal(nrows, 32);
	need = target ^ base;
	for (unsigned int r = 0; r < nrows; r++)
		if (need & piv[r]) {
			need ^= rows[r];
			pick ^= combo[r];
		}
	assert_int_equal(need, 0);
	for (unsigned int j = 0; j < 3 * nch; j++)
		if (pick >> j & 1)
			buf[vlen + j / 3] ^= (char)(2 << (j % 3));
	buf[vlen + nch] = 0;
	g_strlcpy(out, buf, len);
}

/* The victim's uuid (public) and a backend id with the CRC-32C of the victim's. */
static void test_crc_colliding_backend_id(void **state)
{
	static const uint8_t uuid[16] = { 0x6c, 0x1f, 0x2e, 0x3d, 0x4c, 0x5b, 0x6a, 0x79,
					  0x88, 0x97, 0xa6, 0xb5, 0xc4, 0xd3, 0xe2, 0xf1 };
	char twin[64];
	struct vt_store_key kv, ka;
	g_autofree char *dv = NULL, *da = NULL;

	(void)state;
	crc_twin("ram", twin, sizeof(twin));
	print_message("# backend id %s has the CRC-32C of ram: %08x\n", twin,
		      vt_crc32c(twin, strlen(twin)));
	assert_string_not_equal(twin, "ram");
	assert_int_equal(vt_crc32c(twin, strlen(twin)), vt_crc32c("ram", 3));
	/* a backend id vtierd accepts: [A-Za-z0-9_.-]{1,63} */
	assert_int_equal(strspn(twin, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			       "0123456789_.-"), strlen(twin));
	kv = key_of(uuid, "ram", 64ULL << 20);
	ka = key_of(uuid, twin, 32ULL << 20);
	dv = g_strdup_printf("%s/6c1f2e3d4c5b6a798897a6b5c4d3e2f1-ram", env.base);
	da = g_strdup_printf("%s/6c1f2e3d4c5b6a798897a6b5c4d3e2f1-%s", env.base, twin);
	two_stores(dv, &kv, da, &ka);
}

static char *only_new_file(const char *dir, GHashTable *before)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *n;
	char *found = NULL;

	assert_non_null(d);
	while ((n = g_dir_read_name(d)))
		if (!g_hash_table_contains(before, n)) {
			assert_null(found);
			found = g_build_filename(dir, n, NULL);
		}
	g_dir_close(d);
	return found;
}

static GHashTable *names_in(const char *dir)
{
	GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *n;

	assert_non_null(d);
	while ((n = g_dir_read_name(d)))
		g_hash_table_add(h, g_strdup(n));
	g_dir_close(d);
	return h;
}

/*
 * A's pool files deleted or truncated: A refuses itself (-EUCLEAN), B, in
 * the same directories and with the same key, still opens with every page.
 */
static void test_damage_refuses_only_itself(void **state)
{
	struct vt_store_key k = key_of(NULL, "ram", 64ULL << 20);
	g_autofree char *da = g_strdup_printf("%s/pid300-7000-ram", env.base);
	g_autofree char *db = g_strdup_printf("%s/pid400-8000-ram", env.base);
	g_autofree char *node_pool = g_strdup_printf("%s/pool-1", da);
	enum { DELETE, TRUNCATE, NODE_TRUNCATE } how;

	(void)state;
	for (how = DELETE; how <= NODE_TRUNCATE; how++) {
		g_autoptr(GHashTable) before = names_in(env.media);
		struct vt_store *a = open_at(da, &k, true, 0), *b;
		g_autofree char *file_pool = only_new_file(env.media, before);

		assert_non_null(file_pool);
		fill(a, 'A', NPAGES);
		b = open_at(db, &k, true, 0);
		fill(b, 'B', NPAGES);
		vt_store_close(a);
		vt_store_close(b);
		if (how == DELETE)
			assert_int_equal(unlink(file_pool), 0);
		else
			assert_int_equal(truncate(how == TRUNCATE ? file_pool : node_pool,
						  1 << 20), 0);
		print_message("# A's %s pool %s\n", how == NODE_TRUNCATE ? "node" : "file",
			      how == DELETE ? "deleted" : "truncated");
		assert_null(open_at(da, &k, false, -EUCLEAN));
		b = open_at(db, &k, false, 0);
		check(b, 'B', NPAGES);
		vt_store_close(b);
		/* A's removal leaves B whole too */
		assert_int_equal(vt_store_destroy(da), 0);
		b = open_at(db, &k, false, 0);
		check(b, 'B', NPAGES);
		vt_store_close(b);
		assert_int_equal(vt_store_destroy(db), 0);
		assert_int_equal(dir_entries(env.media), 0);
	}
}

/* The store id in a file pool's name "vtier-sHEX-SLOT.pool" of @dir. */
static bool store_id_of(const char *dir, unsigned int slot, uint8_t id[16])
{
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *n;
	bool found = false;

	assert_non_null(d);
	while ((n = g_dir_read_name(d))) {
		unsigned int got_slot;
		char hex[33];

		if (strlen(n) > 8 + 32 && sscanf(n, "vtier-s%32[0-9a-f]-%u.pool", hex,
						  &got_slot) == 2 && strlen(hex) == 32 &&
		    got_slot == slot) {
			for (unsigned int i = 0; i < 16; i++)
				sscanf(hex + 2 * i, "%2hhx", &id[i]);
			found = true;
		}
	}
	g_dir_close(d);
	return found;
}

#define HDR_CRC_OFF 128		/* magic, version, size, key, geometry: then the crc */

/*
 * Turn the store in @dir into what the version-1 code wrote: no store id in
 * the header (version 1, its crc), file pool slot 0 under the old name
 * DIR/vtier-UUID-CRC32C(backend id)-0.pool. Returns that name.
 */
static char *make_v1(const char *dir, const struct vt_store_key *k)
{
	g_autofree char *index = g_strdup_printf("%s/index", dir);
	uint8_t hdr[4096], id[16];
	char uuid[33], hex[33], *legacy;
	g_autofree char *pool = NULL;
	uint32_t v = 1, c;
	unsigned int off;
	int fd = open(index, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, hdr, sizeof(hdr), 0), sizeof(hdr));
	assert_true(store_id_of(env.media, 0, id));
	for (off = HDR_CRC_OFF; off + 24 <= sizeof(hdr); off++)
		if (!memcmp(hdr + off, id, 16))
			break;
	assert_true(off + 24 <= sizeof(hdr));
	memset(hdr + off, 0, 24);		/* id, its crc, pad */
	memcpy(hdr + 8, &v, 4);
	c = vt_crc32c(hdr, HDR_CRC_OFF);
	memcpy(hdr + HDR_CRC_OFF, &c, 4);
	assert_int_equal(pwrite(fd, hdr, sizeof(hdr), 0), sizeof(hdr));
	close(fd);
	for (unsigned int i = 0; i < 16; i++)
		snprintf(uuid + 2 * i, 3, "%02x", k->vm_uuid[i]);
	for (unsigned int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	pool = g_strdup_printf("%s/vtier-s%s-0.pool", env.media, hex);
	legacy = g_strdup_printf("%s/vtier-%s-%08x-0.pool", env.media, uuid,
				 vt_crc32c(k->backend_id, strlen(k->backend_id)));
	assert_int_equal(rename(pool, legacy), 0);
	return legacy;
}

/*
 * A store written by the version-1 code reopens (a RECONNECT after a
 * vtierd upgrade): every page read; its file pool gets a name by a new
 * store id; removing a version-1 store never reopened leaves the old name
 * (it may be another's).
 */
static void test_v1_store_reopens(void **state)
{
	static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	struct vt_store_key k = key_of(uuid, "pc.ram", 64ULL << 20);
	g_autofree char *dir = g_strdup_printf("%s/v1-pc.ram", env.base);
	g_autofree char *legacy = NULL;
	struct vt_store *s = open_at(dir, &k, true, 0);
	uint8_t id[16];

	(void)state;
	fill(s, 'V', NPAGES);
	vt_store_close(s);
	legacy = make_v1(dir, &k);
	assert_false(store_id_of(env.media, 0, id));
	s = open_at(dir, &k, false, 0);
	check(s, 'V', NPAGES);
	/* renamed to this store's own name; new pages go on */
	assert_false(g_file_test(legacy, G_FILE_TEST_EXISTS));
	assert_true(store_id_of(env.media, 0, id));
	{
		uint8_t page[PAGE];

		page_of('V', NPAGES, page);
		assert_int_equal(vt_store_put(s, NPAGES, 0, page), 0);
		assert_int_equal(vt_store_get(s, NPAGES, page), 0);
	}
	vt_store_close(s);
	s = open_at(dir, &k, false, 0);
	check(s, 'V', NPAGES);
	vt_store_close(s);
	assert_int_equal(vt_store_destroy(dir), 0);
	assert_int_equal(dir_entries(env.media), 0);

	/* a version-1 store removed without a reopen: its old-named pool stays */
	s = open_at(dir, &k, true, 0);
	fill(s, 'V', 16);
	vt_store_close(s);
	g_free(legacy);
	legacy = make_v1(dir, &k);
	assert_int_equal(vt_store_destroy(dir), 0);
	assert_true(g_file_test(legacy, G_FILE_TEST_EXISTS));
	assert_int_equal(unlink(legacy), 0);
}

/*
 * A pool file of this store left by a kill between its creation and its
 * record is replaced when the slot is taken again; a pool file named by
 * another store's id is never touched, not even by a removal.
 */
static void test_stale_pool_files(void **state)
{
	struct vt_store_key k = key_of(NULL, "ram", 64ULL << 20);
	g_autofree char *dir = g_strdup_printf("%s/pid500-9000-ram", env.base);
	g_autofree char *stale = NULL;
	g_autofree char *foreign = g_strdup_printf("%s/vtier-s0123456789abcdef0123456789abcdef-1"
						  ".pool", env.media);
	static const char junk[] = "not a pool: must survive";
	struct vt_ctier_spec sp[2];
	struct vt_store *s = NULL;
	uint8_t page[PAGE], got[PAGE], id[16];
	char why[400] = "", hex[33], back[sizeof(junk)];
	int fd;

	(void)state;
	specs_of(sp);
	sp[1] = sp[0];
	g_strlcpy(sp[1].name, "cold2", sizeof(sp[1].name));
	sp[1].pool = VT_POOL_ZBUD;
	assert_int_equal(vt_store_open(dir, &k, sp, 1, true, &s, why, sizeof(why)), 0);
	for (uint64_t i = 0; i < 64; i++) {
		page_of('S', i, page);
		assert_int_equal(vt_store_put(s, i, 0, page), 0);
	}
	vt_store_close(s);
	/* slot 1's file, as a kill right after creating it would leave it; another's */
	assert_true(store_id_of(env.media, 0, id));
	for (unsigned int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	stale = g_strdup_printf("%s/vtier-s%s-1.pool", env.media, hex);
	assert_true(g_file_set_contents(stale, "stale", -1, NULL));
	assert_true(g_file_set_contents(foreign, junk, sizeof(junk), NULL));
	assert_int_equal(vt_store_open(dir, &k, sp, 2, false, &s, why, sizeof(why)), 0);
	for (uint64_t i = 64; i < 128; i++) {
		page_of('S', i, page);
		assert_int_equal(vt_store_put(s, i, 1, page), 0);
	}
	for (uint64_t i = 0; i < 128; i++) {
		page_of('S', i, page);
		assert_int_equal(vt_store_get(s, i, got), 0);
		assert_memory_equal(got, page, PAGE);
		assert_int_equal(vt_store_tier_of(s, i), i >= 64);
	}
	vt_store_close(s);
	assert_int_equal(vt_store_destroy(dir), 0);
	/* only the other store's file is left, as it was */
	assert_int_equal(dir_entries(env.media), 1);
	fd = open(foreign, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, back, sizeof(back)), sizeof(junk));
	close(fd);
	assert_memory_equal(back, junk, sizeof(junk));
	assert_int_equal(unlink(foreign), 0);
}

/*
 * Address space of a store of @size declared bytes holding @n pages (@n
 * spread over the backend, one per chunk at most, or dense from 0), all in
 * the node tier; every page read back. Returns VmSize after - before.
 */
static uint64_t store_vm(uint64_t size, uint64_t n, bool spread)
{
	struct vt_store_key k = key_of(NULL, "ram", size);
	g_autofree char *dir = g_strdup_printf("%s/pid600-1-ram", env.base);
	uint64_t stride = spread ? size / PAGE / n : 1, before, after;
	struct vt_ctier_spec sp[2];
	struct vt_store *s;
	uint8_t page[PAGE], got[PAGE];

	specs_of(sp);
	sp[0].capacity_bytes = 1ULL << 30;	/* a disk file system's file size limit */
	sp[1].pool = VT_POOL_ZSMALLOC;		/* objects across pool pages: and segments */
	before = proc_self_status_bytes("VmSize");
	s = open_with(dir, &k, sp, true, 0);

	for (uint64_t i = 0; i < n; i++) {
		page_of('M', i * stride, page);
		assert_int_equal(vt_store_put(s, i * stride, 1, page), 0);
	}
	after = proc_self_status_bytes("VmSize");
	/* reopened: mapped as far as the entries reach, every page read */
	vt_store_close(s);
	s = open_with(dir, &k, sp, false, 0);
	for (uint64_t i = 0; i < n; i++) {
		page_of('M', i * stride, page);
		assert_int_equal(vt_store_get(s, i * stride, got), 0);
		assert_memory_equal(got, page, PAGE);
	}
	after = MAX(after, proc_self_status_bytes("VmSize"));
	vt_store_close(s);
	assert_int_equal(vt_store_destroy(dir), 0);
	print_message("# %llu GiB declared, %llu MiB stored: VmSize +%llu MiB\n",
		      (unsigned long long)(size >> 30), (unsigned long long)(n * PAGE >> 20),
		      (unsigned long long)((after - before) >> 20));
	return after - before;
}

/*
 * Pools, and the blocks of index entries, map what they hold: a pool sized
 * for a sparse backend no longer maps the backend's size. What stays
 * proportional to the declared size is the chunk table (4 bytes per 2 MiB,
 * mapped), the live counts (2 bytes per 2 MiB) and the refusal memo (4 MiB
 * at most): 3 MiB per TiB + 4 MiB. The rest is a segment of 16 MiB for the
 * blocks and for each node pool (at most twice what each holds beyond
 * that), and the codecs: so 3 MiB per TiB + 64 MiB bounds a store holding
 * up to 8 MiB in either pool, + 2 x its data beyond.
 */
static void test_address_space(void **state)
{
	(void)state;
	/* 1 TiB holding 64 MiB (the measure in docs/ctier.md) */
	assert_true(store_vm(1ULL << 40, 16384, false) < (3ULL << 20) + (64ULL << 20) +
		    2 * (64ULL << 20));
	/* 16 TiB holding 4 MiB, one page per 16 GiB */
	assert_true(store_vm(16ULL << 40, 1024, true) < 16 * (3ULL << 20) + (64ULL << 20) +
		    2 * (4ULL << 20));
}

/*
 * A node medium across its first segment boundary (16 MiB): an object
 * straddling it is written in two parts and read back through the scratch
 * buffer; one inside a segment is read in place; nothing past what was
 * committed is reachable.
 */
static void test_medium_segments(void **state)
{
	g_autofree char *path = g_strdup_printf("%s/pool-seg", env.base);
	uint8_t obj[3000], scratch[3000];
	struct vt_medium m;
	const uint8_t *p;

	(void)state;
	for (unsigned int i = 0; i < sizeof(obj); i++)
		obj[i] = (uint8_t)(i * 7 + 3);
	assert_int_equal(vt_medium_open(&m, path, VT_MEDIUM_NODE, 0, 1ULL << 30, true), 0);
	assert_int_equal(vt_medium_mapped(&m), VT_SEG0);
	assert_int_equal(vt_medium_open(&(struct vt_medium){ 0 }, path, VT_MEDIUM_NODE, 0,
					1ULL << 30, true), -EEXIST);
	/* past the first segment: not reachable until committed */
	assert_int_equal(vt_medium_write(&m, VT_SEG0 + 4096, obj, 100), -EINVAL);
	assert_null(vt_medium_read(&m, VT_SEG0 - 50, 100, scratch));
	assert_int_equal(vt_medium_commit(&m, VT_SEG0 - 4096, 8192), 0);
	assert_int_equal(vt_medium_mapped(&m), 2 * VT_SEG0);
	assert_int_equal(vt_medium_write(&m, VT_SEG0 - 1000, obj, sizeof(obj)), 0);
	p = vt_medium_read(&m, VT_SEG0 - 1000, sizeof(obj), scratch);
	assert_ptr_equal(p, scratch);
	assert_memory_equal(p, obj, sizeof(obj));
	memset(scratch, 0, sizeof(scratch));
	p = vt_medium_read(&m, VT_SEG0 - 1000, 1000, scratch);
	assert_ptr_not_equal(p, scratch);
	assert_memory_equal(p, obj, 1000);
	p = vt_medium_read(&m, VT_SEG0, 2000, scratch);
	assert_ptr_not_equal(p, scratch);
	assert_memory_equal(p, obj + 1000, 2000);
	/* the third segment doubles: [32, 64) MiB */
	assert_int_equal(vt_medium_commit(&m, 3 * VT_SEG0, 4096), 0);
	assert_int_equal(vt_medium_mapped(&m), 4 * VT_SEG0);
	assert_int_equal(vt_medium_commit(&m, (1ULL << 30) - 4096, 8192), -ENOSPC);
	vt_medium_close(&m);
	/* reopened: what was written is there once mapped again */
	assert_int_equal(vt_medium_open(&m, path, VT_MEDIUM_NODE, 0, 0, false), 0);
	assert_int_equal(vt_medium_map(&m, VT_SEG0 + 4096), 0);
	p = vt_medium_read(&m, VT_SEG0 - 1000, sizeof(obj), scratch);
	assert_non_null(p);
	assert_memory_equal(p, obj, sizeof(obj));
	vt_medium_close(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_two_uuidless_qemus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crc_colliding_backend_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damage_refuses_only_itself, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v1_store_reopens, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_pool_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_medium_segments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_address_space, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
