// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the migration profile's format (host-agent/iface/profile_format.c):
 * a v2 profile written and read back, v1 read as a fallback, the chunk shift
 * chosen to stay under VTIER_HANDOFF_PROFILE_MAX, then a table of garbled
 * and foreign profiles that must each be refused with its errno and a reason.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profile_format.h"

#define BACKEND (64ull << 20)
#define SHIFT 21
#define NCHUNK 32u

static const struct vt_profile_tier tiers3[] = {
	{ "dram", VTIER_PROFILE_TIER_NUMA },
	{ "cxl", VTIER_PROFILE_TIER_NUMA },
	{ "lz4", VTIER_PROFILE_TIER_COMPRESSED },
};

/* A v2 profile of BACKEND with tiers3: chunk i hot when i < 4, on tier i % 3. */
static uint8_t *make_v2(size_t *size)
{
	size_t n = vt_profile_v2_bytes(BACKEND, 3, SHIFT);
	uint8_t *buf = malloc(n);

	assert_int_equal(vt_profile_v2_init(buf, BACKEND, SHIFT, tiers3, 3, 42), 0);
	for (uint32_t i = 0; i < NCHUNK; i++) {
		struct vt_profile_chunk c = {
			.ema = i < 4 ? 1.0 : 0.0,
			.tier = (int)(i % 3),
			.cold_windows = i < 4 ? 0 : 100000,	/* saturates at 65535 */
			.size_class = i % 3 == 2 ? 3 : 0,
		};

		vt_profile_v2_set(buf, i, &c);
	}
	*size = n;
	return buf;
}

static void test_v2_roundtrip(void **state)
{
	size_t size;
	uint8_t *buf = make_v2(&size);
	struct vt_profile p;
	struct vt_profile_chunk c;
	char err[VT_PROFILE_ERR_LEN] = "";

	(void)state;
	assert_int_equal(size, 32 + 3 * 24 + NCHUNK * 8);
	assert_int_equal(vt_profile_read(buf, size, BACKEND, &p, err, sizeof(err)), 0);
	assert_int_equal(p.version, 2);
	assert_int_equal(p.chunk_shift, SHIFT);
	assert_int_equal(p.n_chunks, NCHUNK);
	assert_int_equal(p.n_tiers, 3);
	assert_int_equal(p.windows, 42);
	assert_string_equal(p.tiers[2].name, "lz4");
	assert_int_equal(p.tiers[2].kind, VTIER_PROFILE_TIER_COMPRESSED);
	vt_profile_chunk(&p, 0, &c);
	assert_true(c.ema == 1.0);
	assert_int_equal(c.tier, 0);
	assert_int_equal(c.cold_windows, 0);
	vt_profile_chunk(&p, 5, &c);
	assert_true(c.ema == 0.0);
	assert_int_equal(c.tier, 2);
	assert_int_equal(c.cold_windows, 65535);
	assert_int_equal(c.size_class, 3);
	free(buf);
}

static void test_v2_no_tier(void **state)
{
	size_t n = vt_profile_v2_bytes(BACKEND, 1, SHIFT);
	uint8_t *buf = malloc(n);
	struct vt_profile p;
	struct vt_profile_chunk c;
	char err[VT_PROFILE_ERR_LEN];

	(void)state;
	assert_int_equal(vt_profile_v2_init(buf, BACKEND, SHIFT, tiers3, 1, 0), 0);
	/* a chunk never set: no tier, cold; a tier index past the table is written as none */
	vt_profile_v2_set(buf, 1, &(struct vt_profile_chunk){ .ema = 2.0, .tier = 7 });
	vt_profile_v2_set(buf, NCHUNK, &(struct vt_profile_chunk){ .ema = 1.0 });	/* ignored */
	assert_int_equal(vt_profile_read(buf, n, BACKEND, &p, err, sizeof(err)), 0);
	vt_profile_chunk(&p, 0, &c);
	assert_int_equal(c.tier, -1);
	assert_true(c.ema == 0.0);
	vt_profile_chunk(&p, 1, &c);
	assert_int_equal(c.tier, -1);
	assert_true(c.ema == 1.0);	/* clamped */
	free(buf);
}

static void test_v1_fallback(void **state)
{
	struct {
		struct vtier_profile_v1 h;
		uint8_t heat[NCHUNK];
	} b = {
		.h = { .magic = VTIER_PROFILE_MAGIC, .version = VTIER_PROFILE_VERSION,
		       .chunk_shift = SHIFT, .size_bytes = BACKEND, .n_chunks = NCHUNK },
	};
	struct vt_profile p;
	struct vt_profile_chunk c;
	char err[VT_PROFILE_ERR_LEN];

	(void)state;
	b.heat[3] = 255;
	assert_int_equal(vt_profile_read(&b, sizeof(b), BACKEND, &p, err, sizeof(err)), 0);
	assert_int_equal(p.version, 1);
	assert_int_equal(p.n_tiers, 0);
	vt_profile_chunk(&p, 3, &c);
	assert_true(c.ema == 1.0);
	assert_int_equal(c.tier, -1);
	vt_profile_chunk(&p, 4, &c);
	assert_true(c.ema == 0.0);
	/* v1's own checks: another backend's size, a short buffer */
	assert_int_equal(vt_profile_read(&b, sizeof(b), BACKEND * 2, &p, err, sizeof(err)), -ERANGE);
	assert_int_equal(vt_profile_read(&b, sizeof(b) - 1, BACKEND, &p, err, sizeof(err)), -EBADMSG);
	b.h.chunk_shift = 31;
	assert_int_equal(vt_profile_read(&b, sizeof(b), BACKEND, &p, err, sizeof(err)), -EBADMSG);
	/* found by the fuzzer: a header alone claiming a 0-byte backend, read for one */
	b.h.chunk_shift = SHIFT;
	b.h.size_bytes = 0;
	b.h.n_chunks = 0;
	assert_int_equal(vt_profile_read(&b, sizeof(b.h), 0, &p, err, sizeof(err)), -ERANGE);
	assert_non_null(strstr(err, "backend"));
}

static void test_shift_for(void **state)
{
	(void)state;
	assert_int_equal(vt_profile_shift_for(BACKEND, 3, 21), 21);
	assert_int_equal(vt_profile_shift_for(BACKEND, 3, 0), 12);
	/* 4 TiB: 2 MiB chunks take 16 MiB, 4 MiB chunks 8 MiB + the header, 8 MiB ones fit */
	assert_int_equal(vt_profile_shift_for(4ull << 40, 3, 21), 23);
	assert_true(vt_profile_v2_bytes(4ull << 40, 3, 22) > VTIER_HANDOFF_PROFILE_MAX);
	assert_true(vt_profile_v2_bytes(4ull << 40, 3, 23) <= VTIER_HANDOFF_PROFILE_MAX);
	assert_int_equal(vt_profile_shift_for(BACKEND, 0, 21), 0);
	assert_int_equal(vt_profile_shift_for(BACKEND, 17, 21), 0);
	assert_int_equal(vt_profile_shift_for(0, 3, 21), 0);
	/* 1 EiB does not fit even at 1 GiB chunks */
	assert_int_equal(vt_profile_shift_for(1ull << 60, 3, 21), 0);
}

static void test_init_refuses(void **state)
{
	uint8_t buf[4096];
	struct vt_profile_tier bad[2] = { { "dram", VTIER_PROFILE_TIER_NUMA }, { "a b", 0 } };
	struct vt_profile_tier comp0[1] = { { "lz4", VTIER_PROFILE_TIER_COMPRESSED } };

	(void)state;
	assert_int_equal(vt_profile_v2_init(buf, BACKEND, SHIFT, bad, 2, 0), -EINVAL);
	assert_int_equal(vt_profile_v2_init(buf, BACKEND, SHIFT, comp0, 1, 0), -EINVAL);
	assert_int_equal(vt_profile_v2_init(buf, BACKEND, 11, tiers3, 3, 0), -EINVAL);
	assert_int_equal(vt_profile_v2_init(buf, 0, SHIFT, tiers3, 3, 0), -EINVAL);
}

/* Offsets of the v2 layout the table below damages. */
#define OFF_VERSION 4
#define OFF_SHIFT 6
#define OFF_NTIERS 7
#define OFF_SIZE 8
#define OFF_NCHUNKS 16
#define OFF_FLAGS 20
#define OFF_TIER(t) (32 + (t) * 24)
#define OFF_CHUNK(i) (32 + 3 * 24 + (i) * 8)

struct garble {
	const char *what;
	size_t off;		/* where to write */
	uint64_t value;
	unsigned int width;	/* bytes */
	long resize;		/* bytes added to (or cut from) the buffer */
	int want;
	const char *reason;	/* a word the reason must contain */
};

static const struct garble garbles[] = {
	{ "magic", 0, 0x12345678, 4, 0, -EBADMSG, "magic" },
	{ "version 3", OFF_VERSION, 3, 2, 0, -EPROTONOSUPPORT, "version" },
	{ "version 0", OFF_VERSION, 0, 2, 0, -EPROTONOSUPPORT, "version" },
	{ "shift 11", OFF_SHIFT, 11, 1, 0, -EBADMSG, "shift" },
	{ "shift 31", OFF_SHIFT, 31, 1, 0, -EBADMSG, "shift" },
	{ "shift 255", OFF_SHIFT, 255, 1, 0, -EBADMSG, "shift" },
	{ "shift 22 (chunks no longer match)", OFF_SHIFT, 22, 1, 0, -EBADMSG, "chunks" },
	{ "no tiers", OFF_NTIERS, 0, 1, 0, -EBADMSG, "tiers" },
	{ "17 tiers", OFF_NTIERS, 17, 1, 0, -EBADMSG, "tiers" },
	{ "4 tiers claimed, 3 sent", OFF_NTIERS, 4, 1, 0, -EBADMSG, "bytes" },
	{ "another backend", OFF_SIZE, BACKEND * 2, 8, 0, -ERANGE, "backend" },
	{ "size 0", OFF_SIZE, 0, 8, 0, -ERANGE, "backend" },
	{ "size one page more", OFF_SIZE, BACKEND + 4096, 8, 0, -ERANGE, "backend" },
	{ "n_chunks 31", OFF_NCHUNKS, 31, 4, 0, -EBADMSG, "chunks" },
	{ "n_chunks huge", OFF_NCHUNKS, 0xffffffff, 4, 0, -EBADMSG, "chunks" },
	{ "flags", OFF_FLAGS, 1, 4, 0, -EBADMSG, "flags" },
	{ "one byte short", 0, 0, 0, -1, -EBADMSG, "bytes" },
	{ "one byte long", 0, 0, 0, 1, -EBADMSG, "bytes" },
	{ "a chunk short", 0, 0, 0, -8, -EBADMSG, "bytes" },
	{ "header only", 0, 0, 0, -(long)(3 * 24 + NCHUNK * 8), -EBADMSG, "bytes" },
	{ "half a header", 0, 0, 0, -(long)(16 + 3 * 24 + NCHUNK * 8), -EBADMSG, "header" },
	{ "tier name empty", OFF_TIER(1), 0, 1, 0, -EBADMSG, "name" },
	{ "tier name with a slash", OFF_TIER(1), '/', 1, 0, -EBADMSG, "name" },
	{ "tier name with a newline", OFF_TIER(1) + 1, '\n', 1, 0, -EBADMSG, "name" },
	/* found by the fuzzer: a second encoding of the same name */
	{ "tier name not NUL-padded", OFF_TIER(1) + 15, 1, 1, 0, -EBADMSG, "name" },
	{ "tier kind 2", OFF_TIER(1) + 16, 2, 4, 0, -EBADMSG, "kind" },
	{ "tier reserved", OFF_TIER(1) + 20, 1, 4, 0, -EBADMSG, "reserved" },
	{ "tier 0 compressed", OFF_TIER(0) + 16, 1, 4, 0, -EBADMSG, "fastest" },
	{ "chunk tier 3 of 3", OFF_CHUNK(7) + 2, 3, 1, 0, -EBADMSG, "tier" },
	{ "chunk tier 200", OFF_CHUNK(31) + 2, 200, 1, 0, -EBADMSG, "tier" },
	{ "chunk size class 9", OFF_CHUNK(0) + 3, 9, 1, 0, -EBADMSG, "size class" },
	{ "chunk size class 255", OFF_CHUNK(0) + 3, 255, 1, 0, -EBADMSG, "size class" },
	{ "chunk reserved", OFF_CHUNK(0) + 6, 1, 2, 0, -EBADMSG, "reserved" },
};

static void test_garbled(void **state)
{
	(void)state;
	for (unsigned int k = 0; k < sizeof(garbles) / sizeof(garbles[0]); k++) {
		const struct garble *g = &garbles[k];
		size_t size;
		uint8_t *good = make_v2(&size);
		size_t n = (size_t)((long)size + g->resize);
		uint8_t *buf = calloc(1, n ? n : 1);
		char err[VT_PROFILE_ERR_LEN] = "";
		struct vt_profile p;
		int ret;

		memcpy(buf, good, n < size ? n : size);
		if (g->width)
			memcpy(buf + g->off, &g->value, g->width);	/* little endian host */
		ret = vt_profile_read(buf, n, BACKEND, &p, err, sizeof(err));
		if (ret != g->want || !strstr(err, g->reason))
			fail_msg("%s: got %d '%s', want %d with '%s'", g->what, ret, err, g->want,
				 g->reason);
		free(buf);
		free(good);
	}
}

static void test_unterminated_name(void **state)
{
	size_t size;
	uint8_t *buf = make_v2(&size);
	struct vt_profile p;
	char err[VT_PROFILE_ERR_LEN] = "";

	(void)state;
	memset(buf + OFF_TIER(1), 'A', VTIER_PROFILE_TIER_NAME_LEN);
	assert_int_equal(vt_profile_read(buf, size, BACKEND, &p, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "name"));
	free(buf);
}

static void test_tiny_and_huge(void **state)
{
	char err[VT_PROFILE_ERR_LEN];
	struct vt_profile p;
	uint8_t b[6] = { 0x56, 0x54, 0x50, 0x46, 2, 0 };

	(void)state;
	assert_int_equal(vt_profile_read(NULL, 0, BACKEND, &p, err, sizeof(err)), -EBADMSG);
	assert_int_equal(vt_profile_read(b, 5, BACKEND, &p, err, sizeof(err)), -EBADMSG);
	/* the right magic and version with nothing after */
	assert_int_equal(vt_profile_read(b, 6, BACKEND, &p, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "header"));
	/* over the hand-off's bound: refused before any field is read */
	assert_int_equal(vt_profile_read(b, VTIER_HANDOFF_PROFILE_MAX + 1ull, BACKEND, &p, err,
					 sizeof(err)), -EBADMSG);
}

/* The largest profile that fits, at the bound exactly, reads. */
static void test_at_the_bound(void **state)
{
	uint64_t size_bytes;
	size_t n;
	uint8_t *buf;
	struct vt_profile p;
	char err[VT_PROFILE_ERR_LEN];

	(void)state;
	/* (MAX - 32 - 24) / 8 chunks of 4 KiB */
	size_bytes = ((VTIER_HANDOFF_PROFILE_MAX - 32 - 24) / 8) * 4096ull;
	n = vt_profile_v2_bytes(size_bytes, 1, 12);
	assert_true(n <= VTIER_HANDOFF_PROFILE_MAX);
	assert_true(n + 8 > VTIER_HANDOFF_PROFILE_MAX);
	buf = malloc(n);
	assert_int_equal(vt_profile_v2_init(buf, size_bytes, 12, tiers3, 1, 0), 0);
	assert_int_equal(vt_profile_read(buf, n, size_bytes, &p, err, sizeof(err)), 0);
	free(buf);
	/* one chunk more does not fit: the writer refuses, the shift goes up */
	assert_int_equal(vt_profile_shift_for(size_bytes + 4096, 1, 12), 13);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v2_roundtrip),
		cmocka_unit_test(test_v2_no_tier),
		cmocka_unit_test(test_v1_fallback),
		cmocka_unit_test(test_shift_for),
		cmocka_unit_test(test_init_refuses),
		cmocka_unit_test(test_garbled),
		cmocka_unit_test(test_unterminated_name),
		cmocka_unit_test(test_tiny_and_huge),
		cmocka_unit_test(test_at_the_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
