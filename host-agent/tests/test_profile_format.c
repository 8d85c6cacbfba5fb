// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the migration profile's format (host-agent/iface/profile_format.c):
 * a v2 profile written and read back, v1 read as a fallback, the chunk shift
 * chosen to stay under VTIER_HANDOFF_PROFILE_MAX, then a table of garbled
 * and foreign profiles that must each be refused with its errno and a reason;
 * then the stream section (VTIER_PROFILE_F_STREAM): IPv4 and IPv6 written
 * and read back, a profile without it as before, its refusals, and its
 * secret in no reason and no string made for a log.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

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
	{ "flags bit 1", OFF_FLAGS, 2, 4, 0, -EBADMSG, "bit 1 unknown" },
	{ "flags bit 31 and the stream's", OFF_FLAGS, 0x80000001u, 4, 0, -EBADMSG,
	  "bit 31 unknown" },
	/* the stream's flag with no section: 72 bytes short */
	{ "stream flag, no section", OFF_FLAGS, 1, 4, 0, -EBADMSG, "a stream section in 360 bytes" },
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

/* The stream section's secret: printable, so that a leak shows as a substring. */
static const char secret[] = "the-secret-of-this-migration-32b";
#define SECRET_HEX "7468652d736563726574"	/* its first 10 bytes in hex */

static struct vt_profile_stream stream_of(const char *addr, uint16_t port)
{
	struct vt_profile_stream s = { .port = port };

	_Static_assert(sizeof(secret) - 1 == VTIER_PROFILE_STREAM_SECRET_LEN, "secret size");
	memcpy(s.secret, secret, sizeof(s.secret));
	for (unsigned int i = 0; i < sizeof(s.stream_id); i++)
		s.stream_id[i] = (uint8_t)(0xa0 + i);
	if (inet_pton(AF_INET, addr, s.addr) == 1)
		s.family = VTIER_PROFILE_STREAM_IPV4;
	else if (inet_pton(AF_INET6, addr, s.addr) == 1)
		s.family = VTIER_PROFILE_STREAM_IPV6;
	else
		fail_msg("test address %s", addr);
	return s;
}

static bool leaks(const char *text)
{
	return strstr(text, "secret-of") || strstr(text, SECRET_HEX) || strstr(text, "7468652D");
}

/* make_v2()'s profile with the section of @addr:@port (set after the chunks). */
static uint8_t *make_v2_stream(const char *addr, uint16_t port, size_t *size)
{
	size_t n = vt_profile_v2_stream_bytes(BACKEND, 3, SHIFT), plain;
	uint8_t *good = make_v2(&plain), *buf = malloc(n);
	struct vt_profile_stream s = stream_of(addr, port);
	char err[VT_PROFILE_ERR_LEN] = "";

	assert_int_equal(n, plain + sizeof(struct vtier_profile_stream));
	memcpy(buf, good, plain);
	free(good);
	if (vt_profile_v2_set_stream(buf, n, &s, err, sizeof(err)))
		fail_msg("%s:%u: %s", addr, port, err);
	*size = n;
	return buf;
}

static void check_read_stream(const char *addr, uint16_t port, const char *str)
{
	size_t size;
	uint8_t *buf = make_v2_stream(addr, port, &size);
	struct vt_profile_stream want = stream_of(addr, port);
	char err[VT_PROFILE_ERR_LEN] = "", text[VT_PROFILE_STREAM_STR_LEN];
	struct vt_profile p;
	struct vt_profile_chunk c;
	uint32_t flags;

	assert_int_equal(size, 32 + 3 * 24 + NCHUNK * 8 + 72);
	memcpy(&flags, buf + OFF_FLAGS, sizeof(flags));
	assert_int_equal(flags, VTIER_PROFILE_F_STREAM);
	if (vt_profile_read(buf, size, BACKEND, &p, err, sizeof(err)))
		fail_msg("%s: %s", addr, err);
	assert_true(p.has_stream);
	assert_memory_equal(p.stream.secret, want.secret, sizeof(want.secret));
	assert_memory_equal(p.stream.stream_id, want.stream_id, sizeof(want.stream_id));
	assert_int_equal(p.stream.family, want.family);
	assert_int_equal(p.stream.port, port);
	assert_memory_equal(p.stream.addr, want.addr, sizeof(want.addr));
	/* the chunks are where they were */
	assert_int_equal(p.n_chunks, NCHUNK);
	assert_ptr_equal(p.chunks, buf + OFF_CHUNK(0));
	vt_profile_chunk(&p, 5, &c);
	assert_int_equal(c.tier, 2);
	assert_int_equal(c.size_class, 3);
	/* for a log: the address and port, nothing of the secret */
	assert_string_equal(vt_profile_stream_str(&p.stream, text, sizeof(text)), str);
	assert_false(leaks(text));
	free(buf);
}

static void test_stream_roundtrip(void **state)
{
	(void)state;
	check_read_stream("192.0.2.10", 4444, "192.0.2.10:4444");
	check_read_stream("127.0.0.1", 65535, "127.0.0.1:65535");
	check_read_stream("2001:db8::1", 1, "[2001:db8::1]:1");
	check_read_stream("::1", 4444, "[::1]:4444");
	check_read_stream("fd00:1:2:3:4:5:6:7", 80, "[fd00:1:2:3:4:5:6:7]:80");
	check_read_stream("fdff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", 65535,
			  "[fdff:ffff:ffff:ffff:ffff:ffff:ffff:fffe]:65535");
}

/* The section set first, then the chunks; set again, it is replaced. */
static void test_stream_set_order(void **state)
{
	size_t n = vt_profile_v2_stream_bytes(BACKEND, 1, SHIFT);
	uint8_t *buf = malloc(n);
	struct vt_profile_stream s4 = stream_of("10.1.2.3", 7000);
	struct vt_profile_stream s6 = stream_of("2001:db8::2", 7001);
	char err[VT_PROFILE_ERR_LEN] = "";
	struct vt_profile p;
	struct vt_profile_chunk c;

	(void)state;
	assert_int_equal(vt_profile_v2_init(buf, BACKEND, SHIFT, tiers3, 1, 0), 0);
	assert_int_equal(vt_profile_v2_set_stream(buf, n, &s4, err, sizeof(err)), 0);
	vt_profile_v2_set(buf, NCHUNK - 1, &(struct vt_profile_chunk){ .ema = 1.0, .tier = 0 });
	assert_int_equal(vt_profile_v2_set_stream(buf, n, &s6, err, sizeof(err)), 0);
	assert_int_equal(vt_profile_read(buf, n, BACKEND, &p, err, sizeof(err)), 0);
	assert_true(p.has_stream);
	assert_int_equal(p.stream.family, VTIER_PROFILE_STREAM_IPV6);
	assert_int_equal(p.stream.port, 7001);
	vt_profile_chunk(&p, NCHUNK - 1, &c);
	assert_int_equal(c.tier, 0);
	assert_true(c.ema == 1.0);
	free(buf);
}

/* The layout without the section, field by field: as the writer wrote before the section. */
static void test_no_stream_unchanged(void **state)
{
	size_t size;
	uint8_t *buf = make_v2(&size), *want = calloc(1, size);
	struct vtier_profile_v2 h = {
		.magic = VTIER_PROFILE_MAGIC, .version = 2, .chunk_shift = SHIFT, .n_tiers = 3,
		.size_bytes = BACKEND, .n_chunks = NCHUNK, .flags = 0, .windows = 42,
	};
	struct vt_profile p;
	char err[VT_PROFILE_ERR_LEN] = "";
	static const uint8_t zero[sizeof(p.stream)];

	(void)state;
	memcpy(want, &h, sizeof(h));
	for (unsigned int t = 0; t < 3; t++) {
		struct vtier_profile_tier pt = { .kind = tiers3[t].kind };

		memcpy(pt.name, tiers3[t].name, strlen(tiers3[t].name));
		memcpy(want + OFF_TIER(t), &pt, sizeof(pt));
	}
	for (uint32_t i = 0; i < NCHUNK; i++) {
		struct vtier_profile_chunk c = {
			.heat = i < 4 ? 65535 : 0, .tier = (uint8_t)(i % 3),
			.size_class = i % 3 == 2 ? 3 : 0, .cold_windows = i < 4 ? 0 : 65535,
		};

		memcpy(want + OFF_CHUNK(i), &c, sizeof(c));
	}
	assert_int_equal(size, vt_profile_v2_stream_bytes(BACKEND, 3, SHIFT) - 72);
	assert_memory_equal(buf, want, size);
	assert_int_equal(vt_profile_read(buf, size, BACKEND, &p, err, sizeof(err)), 0);
	assert_false(p.has_stream);
	assert_memory_equal(&p.stream, zero, sizeof(zero));
	free(want);
	free(buf);
}

/* Offsets in the stream section, from its start (after make_v2()'s chunks). */
#define OFF_STREAM OFF_CHUNK(NCHUNK)
#define S_SECRET 0
#define S_ID 32
#define S_FAMILY 48
#define S_RESERVED 49
#define S_PORT 50
#define S_RESERVED2 52
#define S_ADDR 56

struct stream_garble {
	const char *what;
	const char *addr;	/* the section's address before the damage */
	size_t off;		/* in the section, where to write @bytes */
	uint8_t bytes[32];
	unsigned int width;
	long resize;		/* bytes added to (or cut from) the buffer */
	const char *reason;	/* words the reason must contain (all: -EBADMSG) */
};

static const struct stream_garble stream_garbles[] = {
	{ "one byte short", "192.0.2.1", 0, { 0 }, 0, -1, "a stream section in 431 bytes" },
	{ "one byte long", "192.0.2.1", 0, { 0 }, 0, 1, "a stream section in 433 bytes" },
	{ "a section long", "192.0.2.1", 0, { 0 }, 0, 72, "a stream section in 504 bytes" },
	{ "family 3", "192.0.2.1", S_FAMILY, { 3 }, 1, 0, "stream family 3 (want 4, IPv4, or 6" },
	{ "family 0", "192.0.2.1", S_FAMILY, { 0 }, 1, 0, "stream family 0" },
	{ "family AF_INET6", "2001:db8::1", S_FAMILY, { 10 }, 1, 0, "stream family 10" },
	{ "port 0", "192.0.2.1", S_PORT, { 0, 0 }, 2, 0, "stream port 0 (want 1..65535)" },
	{ "reserved", "192.0.2.1", S_RESERVED, { 1 }, 1, 0, "stream reserved 1, reserved2 0" },
	{ "reserved2", "192.0.2.1", S_RESERVED2 + 3, { 0x80 }, 1, 0,
	  "reserved 0, reserved2 2147483648 (want 0, 0)" },
	{ "IPv4 with a tail", "192.0.2.1", S_ADDR + 15, { 1 }, 1, 0,
	  "stream IPv4 address: byte 15 is 0x1 (want 4 address bytes, then 12 zeros)" },
	{ "IPv4 with an IPv6 address", "2001:db8::1", S_FAMILY, { 4 }, 1, 0,
	  "stream IPv4 address: byte 15 is 0x1" },
	{ "IPv4 unspecified", "192.0.2.1", S_ADDR, { 0, 0, 0, 0 }, 4, 0,
	  "stream address 0.0.0.0 is unspecified (want a unicast address; loopback is allowed)" },
	{ "IPv4 multicast", "192.0.2.1", S_ADDR, { 224, 0, 0, 1 }, 4, 0,
	  "stream address 224.0.0.1 is multicast" },
	{ "IPv4 multicast, the top", "192.0.2.1", S_ADDR, { 239, 255, 255, 255 }, 4, 0,
	  "stream address 239.255.255.255 is multicast" },
	{ "IPv4 broadcast", "192.0.2.1", S_ADDR, { 255, 255, 255, 255 }, 4, 0,
	  "stream address 255.255.255.255 is broadcast" },
	{ "IPv6 unspecified", "2001:db8::1", S_ADDR, { 0 }, 16, 0,
	  "stream address :: is unspecified" },
	{ "IPv6 multicast", "2001:db8::1", S_ADDR, { 0xff, 0x02 }, 2, 0,
	  "stream address ff02:db8::1 is multicast" },
	{ "IPv6 link-local", "2001:db8::1", S_ADDR, { 0xfe, 0x80, 0, 0 }, 4, 0,
	  "stream address fe80::1 is link-local (it needs a scope id" },
	{ "IPv6 IPv4-mapped", "::ffff:192.0.2.1", 0, { 0 }, 0, 0,
	  "stream address ::ffff:192.0.2.1 is IPv4-mapped (an IPv4 address goes as family 4)" },
	{ "IPv6 IPv4-mapped unspecified", "::ffff:0.0.0.0", 0, { 0 }, 0, 0, "is IPv4-mapped" },
	{ "secret all zeros", "192.0.2.1", S_SECRET, { 0 }, 32, 0,
	  "stream secret: all zeros (want 32 bytes of key material)" },
	{ "stream id all zeros", "192.0.2.1", S_ID, { 0 }, 16, 0,
	  "stream id: all zeros (want 16 bytes, not all zero)" },
};

/* Sections written by hand (the writer refuses to write them), each read and refused. */
static void test_stream_garbled(void **state)
{
	(void)state;
	for (unsigned int k = 0; k < sizeof(stream_garbles) / sizeof(stream_garbles[0]); k++) {
		const struct stream_garble *g = &stream_garbles[k];
		struct vt_profile_stream s = stream_of(g->addr, 4444);
		struct vtier_profile_stream w = {
			.family = (uint8_t)s.family, .port = s.port,
		};
		size_t size, n;
		uint8_t *good = make_v2(&size), *buf;
		char err[VT_PROFILE_ERR_LEN] = "";
		struct vt_profile p;
		uint32_t flags = VTIER_PROFILE_F_STREAM;
		int ret;

		memcpy(w.secret, s.secret, sizeof(w.secret));
		memcpy(w.stream_id, s.stream_id, sizeof(w.stream_id));
		memcpy(w.addr, s.addr, sizeof(w.addr));
		n = (size_t)((long)(size + sizeof(w)) + g->resize);
		buf = calloc(1, n + sizeof(w));
		memcpy(buf, good, size);
		memcpy(buf + OFF_FLAGS, &flags, sizeof(flags));
		memcpy(buf + OFF_STREAM, &w, sizeof(w));
		if (g->resize > 0)	/* what follows is a copy of the section */
			memcpy(buf + OFF_STREAM + sizeof(w), &w, (size_t)g->resize);
		memcpy(buf + OFF_STREAM + g->off, g->bytes, g->width);
		ret = vt_profile_read(buf, n, BACKEND, &p, err, sizeof(err));
		if (ret != -EBADMSG || !strstr(err, g->reason) || leaks(err))
			fail_msg("%s: got %d '%s', want %d with '%s'", g->what, ret, err, -EBADMSG,
				 g->reason);
		free(buf);
		free(good);
	}
}

/* Without the flag, a section after the chunks is 72 bytes too many. */
static void test_stream_without_flag(void **state)
{
	size_t size;
	uint8_t *buf = make_v2_stream("192.0.2.1", 4444, &size);
	uint32_t flags = 0;
	char err[VT_PROFILE_ERR_LEN] = "";
	struct vt_profile p;

	(void)state;
	memcpy(buf + OFF_FLAGS, &flags, sizeof(flags));
	assert_int_equal(vt_profile_read(buf, size, BACKEND, &p, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "3 tiers in 432 bytes (want 32 chunks, 360 bytes"));
	free(buf);
}

/* The writer refuses what a reader would, and a section that does not fit. */
static void test_stream_set_refuses(void **state)
{
	static const struct {
		const char *what;
		const char *addr;
		unsigned int family;	/* 0: the address's */
		uint16_t port;
		int zero;		/* 1: the secret, 2: the id */
		const char *reason;
	} bad[] = {
		{ "family AF_INET", "192.0.2.1", 2, 4444, 0, "stream section: family 2" },
		{ "port 0", "192.0.2.1", 0, 0, 0, "stream section: port 0" },
		{ "no secret", "192.0.2.1", 0, 4444, 1, "stream section: secret: all zeros" },
		{ "no id", "2001:db8::1", 0, 4444, 2, "stream section: id: all zeros" },
		{ "multicast", "ff05::2", 0, 4444, 0, "address ff05::2 is multicast" },
		{ "broadcast", "255.255.255.255", 0, 4444, 0, "is broadcast" },
		{ "unspecified", "0.0.0.0", 0, 4444, 0, "is unspecified" },
	};
	size_t n = vt_profile_v2_stream_bytes(BACKEND, 3, SHIFT), plain;
	uint8_t *good = make_v2(&plain), *buf = malloc(n);
	struct vt_profile_stream s;
	char err[VT_PROFILE_ERR_LEN];

	(void)state;
	for (unsigned int k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		s = stream_of(bad[k].addr, bad[k].port);
		if (bad[k].family)
			s.family = bad[k].family;
		if (bad[k].zero == 1)
			memset(s.secret, 0, sizeof(s.secret));
		if (bad[k].zero == 2)
			memset(s.stream_id, 0, sizeof(s.stream_id));
		memcpy(buf, good, plain);
		err[0] = 0;
		if (vt_profile_v2_set_stream(buf, n, &s, err, sizeof(err)) != -EINVAL ||
		    !strstr(err, bad[k].reason) || leaks(err))
			fail_msg("%s: '%s', want -EINVAL with '%s'", bad[k].what, err,
				 bad[k].reason);
		assert_memory_equal(buf, good, plain);	/* untouched: no flag */
	}
	/* an IPv4 address with bytes past its 4 */
	s = stream_of("192.0.2.1", 4444);
	s.addr[4] = 1;
	assert_int_equal(vt_profile_v2_set_stream(buf, n, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "byte 4 is 0x1"));
	/* a buffer one byte short of the section */
	s.addr[4] = 0;
	assert_int_equal(vt_profile_v2_set_stream(buf, n - 1, &s, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "takes 432 bytes, the buffer has 431"));
	assert_false(leaks(err));
	assert_memory_equal(buf, good, plain);
	free(buf);
	free(good);
}

/* A profile at the bound has no room for the section: the shift for one with it goes up. */
static void test_stream_at_the_bound(void **state)
{
	uint64_t size_bytes = ((VTIER_HANDOFF_PROFILE_MAX - 32 - 24) / 8) * 4096ull;
	size_t n = vt_profile_v2_bytes(size_bytes, 1, 12);
	uint8_t *buf = malloc(n + 72);
	struct vt_profile_stream s = stream_of("192.0.2.1", 4444);
	char err[VT_PROFILE_ERR_LEN] = "";
	struct vt_profile p;

	(void)state;
	assert_int_equal(vt_profile_shift_for(size_bytes, 1, 12), 12);
	assert_int_equal(vt_profile_shift_for_stream(size_bytes, 1, 12), 13);
	assert_int_equal(vt_profile_shift_for_stream(BACKEND, 3, 21), 21);
	assert_int_equal(vt_profile_shift_for_stream(0, 3, 21), 0);
	assert_int_equal(vt_profile_v2_init(buf, size_bytes, 12, tiers3, 1, 0), 0);
	assert_int_equal(vt_profile_v2_set_stream(buf, n + 72, &s, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "at most"));
	assert_int_equal(vt_profile_read(buf, n, size_bytes, &p, err, sizeof(err)), 0);
	assert_false(p.has_stream);
	free(buf);
	/* at shift 13 it fits */
	n = vt_profile_v2_stream_bytes(size_bytes, 1, 13);
	buf = malloc(n);
	assert_int_equal(vt_profile_v2_init(buf, size_bytes, 13, tiers3, 1, 0), 0);
	assert_int_equal(vt_profile_v2_set_stream(buf, n, &s, err, sizeof(err)), 0);
	assert_int_equal(vt_profile_read(buf, n, size_bytes, &p, err, sizeof(err)), 0);
	assert_true(p.has_stream);
	free(buf);
}

/* A section of no family, as vt_profile_stream_str() shows it: a log line, no secret. */
static void test_stream_str(void **state)
{
	struct vt_profile_stream s = stream_of("192.0.2.1", 9);
	char text[VT_PROFILE_STREAM_STR_LEN];

	(void)state;
	s.family = 5;
	assert_string_equal(vt_profile_stream_str(&s, text, sizeof(text)), "(family 5):9");
	/* a long one fits (the buffer has room for INET6_ADDRSTRLEN, "[]" and ":65535") */
	s = stream_of("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 65535);
	assert_string_equal(vt_profile_stream_str(&s, text, sizeof(text)),
			    "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535");
	assert_false(leaks(text));
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
		cmocka_unit_test(test_stream_roundtrip),
		cmocka_unit_test(test_stream_set_order),
		cmocka_unit_test(test_no_stream_unchanged),
		cmocka_unit_test(test_stream_garbled),
		cmocka_unit_test(test_stream_without_flag),
		cmocka_unit_test(test_stream_set_refuses),
		cmocka_unit_test(test_stream_at_the_bound),
		cmocka_unit_test(test_stream_str),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
