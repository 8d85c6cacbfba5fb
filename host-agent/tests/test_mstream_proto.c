// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the migration stream's wire format (host-agent/iface/mstream_proto.c):
 * the keys and tag against vectors computed outside libsodium (Python's hashlib), the
 * header's layout, every frame's round trip, every refusal with its errno and reason
 * (header, tag, seq, state, each payload's fields, PAGES records, counts), the builder
 * and the iterator, ABORT and the dead session, and a whole exchange in memory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "mstream_proto.h"

#define BACKEND (8ull << 20)		/* 2048 pages */
#define NPAGES (BACKEND / VT_MS_PAGE_SIZE)

static const uint8_t K[VT_MS_KEY_BYTES] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
};
static const uint8_t SID[VT_MS_ID_BYTES] = {
	0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
	0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf,
};

/* A source and a destination of one stream, and a frame buffer. */
struct pair {
	struct vt_ms_keys keys;
	struct vt_ms_session src, dst;
	uint8_t frame[VT_MS_FRAME_MAX];
	size_t flen;
	char err[VT_MS_ERR_LEN];
};

static struct pair *pair_new(void)
{
	struct pair *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	assert_int_equal(vt_ms_keys_derive(K, &p->keys), 0);
	assert_int_equal(vt_ms_session_init(&p->src, VT_MS_SOURCE, &p->keys, SID, BACKEND,
					    VT_MS_PAGE_SIZE, p->err, sizeof(p->err)), 0);
	assert_int_equal(vt_ms_session_init(&p->dst, VT_MS_DESTINATION, &p->keys, SID, BACKEND,
					    VT_MS_PAGE_SIZE, p->err, sizeof(p->err)), 0);
	return p;
}

static void pair_free(struct pair *p)
{
	vt_ms_wipe(p, sizeof(*p));
	free(p);
}

/* A fixed message of @type framed by @from. */
static int send_msg(struct pair *p, struct vt_ms_session *from, const struct vt_ms_msg *m)
{
	uint8_t payload[VT_MS_ABORT_BYTES];
	size_t len;

	assert_int_equal(vt_ms_payload_encode(m, payload, sizeof(payload), &len), 0);
	p->err[0] = '\0';
	return vt_ms_session_send(from, m->type, payload, len, p->frame, sizeof(p->frame),
				  &p->flen, p->err, sizeof(p->err));
}

/* @to takes the frame in p->frame; the reason stays in p->err. */
static int deliver(struct pair *p, struct vt_ms_session *to, struct vt_ms_msg *m)
{
	struct vt_ms_msg scratch;

	p->err[0] = '\0';
	return vt_ms_session_recv(to, p->frame, p->flen, m ? m : &scratch, p->err, sizeof(p->err));
}

static void hello(struct pair *p)
{
	struct vt_ms_msg m = { .type = VT_MS_HELLO };

	memcpy(m.hello.stream_id, SID, sizeof(SID));
	m.hello.backend_size = BACKEND;
	m.hello.page_size = VT_MS_PAGE_SIZE;
	assert_int_equal(send_msg(p, &p->dst, &m), 0);
	assert_int_equal(deliver(p, &p->src, NULL), 0);
}

static void welcome(struct pair *p, uint64_t hint)
{
	struct vt_ms_msg m = { .type = VT_MS_WELCOME };

	memcpy(m.welcome.stream_id, SID, sizeof(SID));
	m.welcome.pages_hint = hint;
	assert_int_equal(send_msg(p, &p->src, &m), 0);
	assert_int_equal(deliver(p, &p->dst, NULL), 0);
}

/* Both sides past HELLO and WELCOME. */
static struct pair *pair_open(void)
{
	struct pair *p = pair_new();

	hello(p);
	welcome(p, 10);
	return p;
}

/* A frame by hand: any header fields, any payload, a valid tag by @key. */
static size_t raw_frame(uint8_t *f, const uint8_t key[VT_MS_KEY_BYTES], uint8_t type,
			uint64_t seq, const void *payload, size_t len)
{
	struct vt_ms_hdr h = {
		.magic = VT_MS_MAGIC, .version = VT_MS_VERSION, .type = type,
		.length = (uint32_t)len, .seq = seq,
	};

	vt_ms_hdr_write(&h, f);
	memcpy(f + VT_MS_HDR_BYTES, payload, len);
	crypto_generichash(f + VT_MS_HDR_BYTES + len, VT_MS_TAG_BYTES, f, VT_MS_HDR_BYTES + len,
			   key, VT_MS_KEY_BYTES);
	return VT_MS_HDR_BYTES + len + VT_MS_TAG_BYTES;
}

static void put(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* One record by hand at @r: returns its size with padding (@pad is written into it). */
static size_t raw_rec(uint8_t *r, uint64_t index, uint8_t kind, uint8_t codec, uint8_t tier,
		      uint32_t len, uint8_t fill, uint8_t pad)
{
	size_t padded = (len + 7) & ~7u;

	memset(r, 0, VT_MS_REC_BYTES);
	put(r, index, 8);
	r[8] = kind;
	r[9] = codec;
	r[10] = tier;
	put(r + 12, len, 4);
	put(r + 16, 0x12345678, 4);
	memset(r + VT_MS_REC_BYTES, fill, len);
	memset(r + VT_MS_REC_BYTES + len, pad, padded - len);
	return VT_MS_REC_BYTES + padded;
}

static void raw_head(uint8_t *b, uint32_t count, uint32_t reserved)
{
	put(b, count, 4);
	put(b + 4, reserved, 4);
}

/* ---- keys, layout, the header ---- */

static void test_keys_vector(void **state)
{
	static const char d2s[] =
		"b1ebc9d800d2759b2f38eb64b55b0b3ef0f6360f7e96d5028cd13dea1a32e025";
	static const char s2d[] =
		"0fb2ee54982972b6a6a74534be7c2f3263b73672dc45391d2e562a1807b05698";
	/* HELLO of SID, 8 MiB, 4096, seq 0, tagged by d2s: Python's hashlib */
	static const char hello_hex[] =
		"56544d530101000020000000000000000000000000000000"	/* header */
		"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"			/* stream id */
		"0000800000000000" "00100000" "00000000"		/* size, page, 0 */
		"79800b264551076f06a3acc3f4da6222";			/* tag */
	char hex[2 * 256 + 1];
	struct vt_ms_secret a, b;
	struct pair *p = pair_new();
	struct vt_ms_keys k2;
	struct vt_ms_msg m = { .type = VT_MS_HELLO };

	(void)state;
	assert_string_equal(sodium_bin2hex(hex, sizeof(hex), p->keys.d2s, VT_MS_KEY_BYTES), d2s);
	assert_string_equal(sodium_bin2hex(hex, sizeof(hex), p->keys.s2d, VT_MS_KEY_BYTES), s2d);
	memcpy(m.hello.stream_id, SID, sizeof(SID));
	m.hello.backend_size = BACKEND;
	m.hello.page_size = VT_MS_PAGE_SIZE;
	assert_int_equal(send_msg(p, &p->dst, &m), 0);
	assert_int_equal(p->flen, VT_MS_HDR_BYTES + VT_MS_HELLO_BYTES + VT_MS_TAG_BYTES);
	assert_string_equal(sodium_bin2hex(hex, sizeof(hex), p->frame, p->flen), hello_hex);
	/* another secret, other keys; two secrets drawn differ, in both halves */
	assert_int_equal(vt_ms_secret_new(&a), 0);
	assert_int_equal(vt_ms_secret_new(&b), 0);
	assert_memory_not_equal(a.key, b.key, sizeof(a.key));
	assert_memory_not_equal(a.stream_id, b.stream_id, sizeof(a.stream_id));
	assert_int_equal(vt_ms_keys_derive(a.key, &k2), 0);
	assert_memory_not_equal(k2.d2s, p->keys.d2s, VT_MS_KEY_BYTES);
	assert_memory_not_equal(k2.d2s, k2.s2d, VT_MS_KEY_BYTES);
	vt_ms_wipe(&k2, sizeof(k2));
	assert_int_equal(k2.d2s[0] | k2.s2d[31], 0);
	pair_free(p);
}

static void test_header_layout(void **state)
{
	static const uint8_t want[VT_MS_HDR_BYTES] = {
		'V', 'T', 'M', 'S', 1, VT_MS_ACK, 0x0b, 0x0a,		/* magic, version, type, res */
		0x44, 0x33, 0x22, 0x11, 0x88, 0x77, 0x66, 0x55,		/* length, res */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,		/* seq */
	};
	struct vt_ms_hdr h = {
		.magic = VT_MS_MAGIC, .version = 1, .type = VT_MS_ACK, .reserved0 = 0x0a0b,
		.length = 0x11223344, .reserved1 = 0x55667788, .seq = 0x0102030405060708ull,
	}, back;
	uint8_t b[VT_MS_HDR_BYTES];

	(void)state;
	vt_ms_hdr_write(&h, b);
	assert_memory_equal(b, want, sizeof(want));
	vt_ms_hdr_read(b, &back);
	assert_memory_equal(&h, &back, sizeof(h));
	assert_string_equal(vt_ms_type_name(VT_MS_END_ACK), "END_ACK");
	assert_string_equal(vt_ms_type_name(0), "unknown");
	assert_string_equal(vt_ms_type_name(8), "unknown");
	assert_string_equal(vt_ms_state_name(VT_MS_ST_PAGES), "pages");
	assert_string_equal(vt_ms_role_name(VT_MS_DESTINATION), "destination");
}

struct hdr_case {
	uint32_t magic;
	uint8_t version, type;
	uint16_t res0;
	uint32_t length, res1;
	int ret;
	const char *says;
};

static void test_frame_len(void **state)
{
	static const struct hdr_case cases[] = {
		{ VT_MS_MAGIC, 1, VT_MS_HELLO, 0, 32, 0, 0, NULL },
		{ VT_MS_MAGIC, 1, VT_MS_WELCOME, 0, 32, 0, 0, NULL },
		{ VT_MS_MAGIC, 1, VT_MS_ACK, 0, 32, 0, 0, NULL },
		{ VT_MS_MAGIC, 1, VT_MS_END, 0, 16, 0, 0, NULL },
		{ VT_MS_MAGIC, 1, VT_MS_END_ACK, 0, 32, 0, 0, NULL },
		{ VT_MS_MAGIC, 1, VT_MS_ABORT, 0, 136, 0, 0, NULL },
		{ VT_MS_MAGIC, 1, VT_MS_PAGES, 0, 40, 0, 0, NULL },
		{ VT_MS_MAGIC, 1, VT_MS_PAGES, 0, VT_MS_PAGES_BYTES_MAX, 0, 0, NULL },
		{ 0x534d5457, 1, VT_MS_HELLO, 0, 32, 0, -EPROTO, "magic 0x534d5457" },
		{ VT_MS_MAGIC, 2, VT_MS_HELLO, 0, 32, 0, -EPROTO, "version 2 not supported" },
		{ VT_MS_MAGIC, 0, VT_MS_HELLO, 0, 32, 0, -EPROTO, "version 0" },
		{ VT_MS_MAGIC, 1, 0, 0, 32, 0, -EPROTO, "type 0 unknown" },
		{ VT_MS_MAGIC, 1, 8, 0, 32, 0, -EPROTO, "type 8 unknown" },
		{ VT_MS_MAGIC, 1, VT_MS_END, 1, 16, 0, -EPROTO, "reserved fields 0x0001" },
		{ VT_MS_MAGIC, 1, VT_MS_END, 0, 16, 0x100, -EPROTO, "0x00000100 (both must be 0)" },
		{ VT_MS_MAGIC, 1, VT_MS_PAGES, 0, VT_MS_PAYLOAD_MAX + 1, 0, -EMSGSIZE,
		  "over the maximum of 1114112" },
		{ VT_MS_MAGIC, 1, VT_MS_HELLO, 0, 0xffffffff, 0, -EMSGSIZE, "over the maximum" },
		{ VT_MS_MAGIC, 1, VT_MS_HELLO, 0, 33, 0, -EMSGSIZE, "33 bytes (a HELLO has 32)" },
		{ VT_MS_MAGIC, 1, VT_MS_END, 0, 32, 0, -EMSGSIZE, "(a END has 16)" },
		{ VT_MS_MAGIC, 1, VT_MS_ABORT, 0, 0, 0, -EMSGSIZE, "(a ABORT has 136)" },
		{ VT_MS_MAGIC, 1, VT_MS_PAGES, 0, 44, 0, -EMSGSIZE, "multiple of 8 in 40..1054728" },
		{ VT_MS_MAGIC, 1, VT_MS_PAGES, 0, 32, 0, -EMSGSIZE, "PAGES header: payload of 32" },
		{ VT_MS_MAGIC, 1, VT_MS_PAGES, 0, VT_MS_PAGES_BYTES_MAX + 8, 0, -EMSGSIZE,
		  "multiple of 8 in" },
		{ VT_MS_MAGIC, 1, VT_MS_PAGES, 0, VT_MS_PAYLOAD_MAX, 0, -EMSGSIZE, "in 40..1054728" },
	};
	char err[VT_MS_ERR_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct hdr_case *c = &cases[i];
		struct vt_ms_hdr h = {
			.magic = c->magic, .version = c->version, .type = c->type,
			.reserved0 = c->res0, .length = c->length, .reserved1 = c->res1, .seq = 5,
		};
		uint8_t b[VT_MS_HDR_BYTES];
		size_t flen = 0;
		int ret;

		vt_ms_hdr_write(&h, b);
		err[0] = '\0';
		ret = vt_ms_frame_len(b, &flen, err, sizeof(err));
		if (ret != c->ret || (c->says && !strstr(err, c->says)))
			fail_msg("case %zu: %d '%s' (want %d '%s')", i, ret, err, c->ret,
				 c->says ? c->says : "");
		if (!c->ret)
			assert_int_equal(flen, VT_MS_HDR_BYTES + c->length + VT_MS_TAG_BYTES);
	}
}

/* ---- round trips ---- */

static void test_roundtrip(void **state)
{
	static const uint8_t comp[37] = "lz4 bytes, as the source's store has";
	uint8_t same[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, raw[VT_MS_PAGE_SIZE];
	struct vt_ms_pages_builder b;
	struct vt_ms_pages_iter it;
	struct vt_ms_page pg[3] = {
		{ .index = 7, .kind = VT_MS_KIND_COMPRESSED, .codec = VT_MS_CODEC_LZ4, .tier = 2,
		  .len = sizeof(comp), .crc = 0xdeadbeef, .data = comp },
		{ .index = 0, .kind = VT_MS_KIND_SAME, .tier = 1, .len = 8, .crc = 1, .data = same },
		{ .index = NPAGES - 1, .kind = VT_MS_KIND_RAW, .tier = 15, .len = VT_MS_PAGE_SIZE,
		  .crc = 2, .data = raw },
	}, got;
	struct pair *p = pair_new();
	struct vt_ms_msg m = { .type = VT_MS_HELLO }, r;
	size_t len;

	(void)state;
	for (unsigned int i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)(i * 7);
	/* HELLO */
	memcpy(m.hello.stream_id, SID, sizeof(SID));
	m.hello.backend_size = BACKEND;
	m.hello.page_size = VT_MS_PAGE_SIZE;
	assert_int_equal(send_msg(p, &p->dst, &m), 0);
	assert_int_equal(p->dst.state, VT_MS_ST_HELLO);
	assert_int_equal(deliver(p, &p->src, &r), 0);
	assert_int_equal(r.type, VT_MS_HELLO);
	assert_int_equal(r.seq, 0);
	assert_memory_equal(r.hello.stream_id, SID, sizeof(SID));
	assert_int_equal(r.hello.backend_size, BACKEND);
	assert_int_equal(r.hello.page_size, VT_MS_PAGE_SIZE);
	assert_ptr_equal(r.payload, p->frame + VT_MS_HDR_BYTES);
	assert_int_equal(r.len, VT_MS_HELLO_BYTES);
	assert_int_equal(p->src.state, VT_MS_ST_HELLO);
	/* WELCOME */
	m = (struct vt_ms_msg){ .type = VT_MS_WELCOME, .welcome.pages_hint = 3 };
	memcpy(m.welcome.stream_id, SID, sizeof(SID));
	assert_int_equal(send_msg(p, &p->src, &m), 0);
	assert_int_equal(deliver(p, &p->dst, &r), 0);
	assert_int_equal(r.type, VT_MS_WELCOME);
	assert_int_equal(r.welcome.pages_hint, 3);
	assert_int_equal(p->dst.pages_hint, 3);
	assert_int_equal(p->src.state, VT_MS_ST_PAGES);
	assert_int_equal(p->dst.state, VT_MS_ST_PAGES);
	/* PAGES, built in place in the frame */
	assert_int_equal(vt_ms_pages_begin(&b, p->frame + VT_MS_HDR_BYTES, VT_MS_PAYLOAD_MAX), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(vt_ms_pages_add(&b, &pg[i], p->err, sizeof(p->err)), 0);
	assert_int_equal(vt_ms_pages_finish(&b, &len), 0);
	assert_int_equal(len, 8 + 24 + 40 + 24 + 8 + 24 + 4096);
	assert_int_equal(vt_ms_session_send(&p->src, VT_MS_PAGES, p->frame + VT_MS_HDR_BYTES, len,
					    p->frame, sizeof(p->frame), &p->flen, p->err,
					    sizeof(p->err)), 0);
	assert_int_equal(deliver(p, &p->dst, &r), 0);
	assert_int_equal(r.type, VT_MS_PAGES);
	assert_int_equal(r.seq, 1);
	assert_int_equal(r.pages, 3);
	assert_int_equal(vt_ms_pages_iter_init(&it, r.payload, r.len, NPAGES, p->err,
					       sizeof(p->err)), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(vt_ms_pages_next(&it, &got, p->err, sizeof(p->err)), 1);
		assert_int_equal(got.index, pg[i].index);
		assert_int_equal(got.kind, pg[i].kind);
		assert_int_equal(got.codec, pg[i].codec);
		assert_int_equal(got.tier, pg[i].tier);
		assert_int_equal(got.len, pg[i].len);
		assert_int_equal(got.crc, pg[i].crc);
		assert_memory_equal(got.data, pg[i].data, pg[i].len);
	}
	assert_int_equal(vt_ms_pages_next(&it, &got, p->err, sizeof(p->err)), 0);
	assert_int_equal(p->src.pages, 3);
	assert_int_equal(p->dst.pages, 3);
	assert_int_equal(p->dst.frames, 1);
	assert_int_equal(p->dst.last_pages_seq, 1);
	/* ACK */
	m = (struct vt_ms_msg){ .type = VT_MS_ACK, .ack = { 3, 2, 1, 1 } };
	assert_int_equal(send_msg(p, &p->dst, &m), 0);
	assert_int_equal(deliver(p, &p->src, &r), 0);
	assert_int_equal(r.type, VT_MS_ACK);
	assert_memory_equal(&r.ack, &m.ack, sizeof(m.ack));
	assert_memory_equal(&p->src.ack, &m.ack, sizeof(m.ack));
	/* END */
	m = (struct vt_ms_msg){ .type = VT_MS_END, .end = { 3, 1 } };
	assert_int_equal(send_msg(p, &p->src, &m), 0);
	assert_int_equal(deliver(p, &p->dst, &r), 0);
	assert_int_equal(r.end.pages, 3);
	assert_int_equal(r.end.frames, 1);
	assert_int_equal(p->dst.state, VT_MS_ST_END);
	/* END_ACK */
	m = (struct vt_ms_msg){ .type = VT_MS_END_ACK, .end_ack = { 3, 2, 1, -EIO } };
	assert_int_equal(send_msg(p, &p->dst, &m), 0);
	assert_int_equal(deliver(p, &p->src, &r), 0);
	assert_int_equal(r.end_ack.received, 3);
	assert_int_equal(r.end_ack.installed, 2);
	assert_int_equal(r.end_ack.dropped, 1);
	assert_int_equal(r.end_ack.status, -EIO);
	assert_int_equal(p->src.end_ack.status, -EIO);
	assert_true(vt_ms_session_done(&p->src) && vt_ms_session_done(&p->dst));
	assert_false(vt_ms_session_dead(&p->src) || vt_ms_session_dead(&p->dst));
	/* over: nothing more either way */
	assert_int_equal(deliver(p, &p->src, &r), -EPIPE);
	assert_non_null(strstr(p->err, "the stream is over"));
	assert_int_equal(send_msg(p, &p->dst, &m), -EPIPE);
	assert_int_equal(vt_ms_session_abort(&p->src, -EIO, "late", p->frame, sizeof(p->frame),
					     &p->flen, p->err, sizeof(p->err)), -EPIPE);
	pair_free(p);
}

static void test_abort_roundtrip(void **state)
{
	struct pair *p = pair_new();
	struct vt_ms_msg r;
	char err[VT_MS_ERR_LEN];

	(void)state;
	/* no ABORT before the first frame: from neither side */
	assert_int_equal(vt_ms_session_abort(&p->dst, -EIO, "x", p->frame, sizeof(p->frame),
					     &p->flen, err, sizeof(err)), -EPIPE);
	assert_non_null(strstr(err, "has sent no HELLO"));
	assert_int_equal(vt_ms_session_abort(&p->src, -EIO, "x", p->frame, sizeof(p->frame),
					     &p->flen, err, sizeof(err)), -EPIPE);
	assert_non_null(strstr(err, "has taken no HELLO"));
	assert_false(vt_ms_session_dead(&p->src));
	hello(p);
	/* the source refuses the destination instead of welcoming it; the text is cleaned */
	assert_int_equal(vt_ms_session_abort(&p->src, -ENOSPC, "no room\tfor it\n",
					     p->frame, sizeof(p->frame), &p->flen, err,
					     sizeof(err)), 0);
	assert_true(vt_ms_session_dead(&p->src));
	assert_int_equal(deliver(p, &p->dst, &r), 0);
	assert_int_equal(r.type, VT_MS_ABORT);
	assert_int_equal(r.abort.error, -ENOSPC);
	assert_string_equal(r.abort.message, "no room?for it?");
	assert_true(p->dst.aborted && vt_ms_session_dead(&p->dst));
	/* after it, every call on either side: -EPIPE, naming the abort */
	assert_int_equal(deliver(p, &p->dst, &r), -EPIPE);
	assert_non_null(strstr(p->err, "aborted (-28: no room?for it?)"));
	assert_int_equal(vt_ms_session_abort(&p->dst, -EIO, "", p->frame, sizeof(p->frame),
					     &p->flen, err, sizeof(err)), -EPIPE);
	assert_int_equal(deliver(p, &p->src, &r), -EPIPE);
	pair_free(p);
}

/* An errno out of range goes as -EINVAL; a message of 200 bytes is cut to 127. */
static void test_abort_encode(void **state)
{
	struct pair *p = pair_open();
	char long_msg[201];
	struct vt_ms_msg r;

	(void)state;
	memset(long_msg, 'a', 200);
	long_msg[200] = '\0';
	assert_int_equal(vt_ms_session_abort(&p->dst, 5, long_msg, p->frame, 10, &p->flen,
					     p->err, sizeof(p->err)), -ENOBUFS);
	assert_false(vt_ms_session_dead(&p->dst));
	assert_int_equal(vt_ms_session_abort(&p->dst, 5, long_msg, p->frame, sizeof(p->frame),
					     &p->flen, p->err, sizeof(p->err)), 0);
	assert_int_equal(deliver(p, &p->src, &r), 0);
	assert_int_equal(r.abort.error, -EINVAL);
	assert_int_equal(strlen(r.abort.message), VT_MS_MSG_LEN - 1);
	pair_free(p);
}

/* ---- the tag: every bit of a frame matters ---- */

static void test_bit_flips(void **state)
{
	static const uint8_t comp[20] = "compressed page data";
	struct vt_ms_page pg = { .index = 3, .kind = VT_MS_KIND_COMPRESSED,
				 .codec = VT_MS_CODEC_ZSTD, .len = sizeof(comp), .data = comp };
	struct vt_ms_pages_builder b;
	struct pair *p = pair_open();
	size_t len, bits;
	uint8_t *f;

	(void)state;
	assert_int_equal(vt_ms_pages_begin(&b, p->frame + VT_MS_HDR_BYTES, 4096), 0);
	assert_int_equal(vt_ms_pages_add(&b, &pg, p->err, sizeof(p->err)), 0);
	assert_int_equal(vt_ms_pages_finish(&b, &len), 0);
	assert_int_equal(vt_ms_session_send(&p->src, VT_MS_PAGES, p->frame + VT_MS_HDR_BYTES, len,
					    p->frame, sizeof(p->frame), &p->flen, p->err,
					    sizeof(p->err)), 0);
	f = p->frame;
	bits = p->flen * 8;
	for (size_t bit = 0; bit < bits; bit++) {
		struct vt_ms_session dst = p->dst;
		char err[VT_MS_ERR_LEN] = "";
		struct vt_ms_msg r;
		size_t flen = 0;
		int ret;

		f[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		ret = vt_ms_session_recv(&dst, f, p->flen, &r, err, sizeof(err));
		if (ret >= 0)
			fail_msg("bit %zu flipped: accepted", bit);
		assert_true(vt_ms_session_dead(&dst));
		/* a header the format takes, of the same length: the tag catches it */
		if (vt_ms_frame_len(f, &flen, NULL, 0) == 0 && flen == p->flen &&
		    (ret != -EBADMSG || !strstr(err, "tag does not verify")))
			fail_msg("bit %zu flipped: %d '%s' (want the tag's refusal)", bit, ret, err);
		f[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	/* unflipped, it passes */
	assert_int_equal(deliver(p, &p->dst, NULL), 0);
	pair_free(p);
}

/* Frames of another migration, or sent back to their own sender. */
static void test_keys_and_ids(void **state)
{
	struct pair *p = pair_new(), *q;
	struct vt_ms_session other;
	struct vt_ms_keys keys2;
	uint8_t k2[VT_MS_KEY_BYTES], sid2[VT_MS_ID_BYTES];
	uint8_t payload[VT_MS_HELLO_BYTES];
	struct vt_ms_msg m = { .type = VT_MS_HELLO };
	size_t len;

	(void)state;
	memcpy(m.hello.stream_id, SID, sizeof(SID));
	m.hello.backend_size = BACKEND;
	m.hello.page_size = VT_MS_PAGE_SIZE;
	/* the destination's own HELLO, reflected to it: tagged by the other direction's key */
	assert_int_equal(send_msg(p, &p->dst, &m), 0);
	other = p->dst;
	other.state = VT_MS_ST_START;
	other.send_seq = 0;
	assert_int_equal(vt_ms_session_recv(&other, p->frame, p->flen, &m, p->err,
					    sizeof(p->err)), -EBADMSG);
	assert_non_null(strstr(p->err, "HELLO frame seq 0: its tag does not verify with the "
				       "source's key"));
	/* a frame by the source's key given to the source */
	q = pair_open();
	p->flen = raw_frame(p->frame, q->keys.s2d, VT_MS_ACK, 0, (uint8_t[32]){ 0 }, 32);
	assert_int_equal(deliver(p, &q->src, NULL), -EBADMSG);
	pair_free(q);
	/* another migration's key: the HELLO again */
	assert_int_equal(vt_ms_payload_encode(&m, payload, sizeof(payload), &len), 0);
	p->flen = raw_frame(p->frame, p->keys.d2s, VT_MS_HELLO, 0, payload, len);
	memcpy(k2, K, sizeof(k2));
	k2[0] ^= 1;
	assert_int_equal(vt_ms_keys_derive(k2, &keys2), 0);
	assert_int_equal(vt_ms_session_init(&other, VT_MS_SOURCE, &keys2, SID, BACKEND,
					    VT_MS_PAGE_SIZE, NULL, 0), 0);
	assert_int_equal(deliver(p, &other, NULL), -EBADMSG);
	/* the same key, another stream id */
	memcpy(sid2, SID, sizeof(sid2));
	sid2[15] = 0;
	assert_int_equal(vt_ms_session_init(&other, VT_MS_SOURCE, &p->keys, sid2, BACKEND,
					    VT_MS_PAGE_SIZE, NULL, 0), 0);
	assert_int_equal(deliver(p, &other, NULL), -EPROTO);
	assert_non_null(strstr(p->err, "HELLO: stream id a0a1a2a3a4a5a6a7a8a9aaabacadaeaf, this "
				       "stream is a0a1a2a3a4a5a6a7a8a9aaabacadae00"));
	/* another backend size */
	assert_int_equal(vt_ms_session_init(&other, VT_MS_SOURCE, &p->keys, SID, 2 * BACKEND,
					    VT_MS_PAGE_SIZE, NULL, 0), 0);
	assert_int_equal(deliver(p, &other, NULL), -EPROTO);
	assert_non_null(strstr(p->err, "a backend of 8388608 bytes, this stream's has 16777216"));
	/* another page size: the destination cannot send it, a hand-made one is refused */
	m.hello.page_size = 8192;
	assert_int_equal(vt_ms_payload_encode(&m, payload, sizeof(payload), &len), 0);
	p->flen = raw_frame(p->frame, p->keys.d2s, VT_MS_HELLO, 0, payload, len);
	other = p->src;
	assert_int_equal(deliver(p, &other, NULL), -EPROTO);
	assert_non_null(strstr(p->err, "HELLO: page size 8192 (version 1 has 4096 only)"));
	other = p->dst;
	other.state = VT_MS_ST_START;
	other.send_seq = 0;
	assert_int_equal(vt_ms_session_send(&other, VT_MS_HELLO, payload, len, p->frame,
					    sizeof(p->frame), &p->flen, p->err, sizeof(p->err)),
			 -EPROTO);
	assert_true(vt_ms_session_dead(&other));
	pair_free(p);
}

/* ---- seq, state ---- */

static void test_seq(void **state)
{
	struct pair *p = pair_open();
	struct vt_ms_session src = p->src;
	struct vt_ms_msg m = { .type = VT_MS_ACK };

	(void)state;
	/* replay: the same ACK twice */
	assert_int_equal(send_msg(p, &p->dst, &m), 0);
	assert_int_equal(deliver(p, &p->src, NULL), 0);
	assert_int_equal(deliver(p, &p->src, NULL), -EPROTO);
	assert_non_null(strstr(p->err, "ACK frame seq 1 replayed (the next is 2)"));
	assert_int_equal(deliver(p, &p->src, NULL), -EPIPE);
	/* skip: the second ACK before the first */
	assert_int_equal(send_msg(p, &p->dst, &m), 0);
	assert_int_equal(vt_ms_session_recv(&src, p->frame, p->flen, &m, p->err, sizeof(p->err)),
			 -EPROTO);
	assert_non_null(strstr(p->err, "ACK frame seq 2 skips frames (the next is 1)"));
	pair_free(p);
}

struct state_case {
	int setup;		/* 0: new; 1: after HELLO; 2: after WELCOME; 3: after END */
	bool to_src;		/* delivered to the source (else the destination) */
	uint8_t type;
	const char *says;
};

static void test_out_of_state(void **state)
{
	static const struct state_case cases[] = {
		{ 0, false, VT_MS_WELCOME, "WELCOME from the source in state start: not allowed "
					   "(the source may send: nothing)" },
		{ 0, true, VT_MS_ABORT, "ABORT from the destination in state start" },
		{ 0, true, VT_MS_ACK, "(the destination may send: HELLO)" },
		{ 1, true, VT_MS_HELLO, "HELLO from the destination in state hello: not allowed "
					"(the destination may send: ABORT)" },
		{ 1, false, VT_MS_PAGES, "(the source may send: WELCOME, ABORT)" },
		{ 1, false, VT_MS_END, "END from the source in state hello" },
		{ 2, false, VT_MS_WELCOME, "(the source may send: PAGES, END, ABORT)" },
		{ 2, true, VT_MS_END_ACK, "(the destination may send: ACK, ABORT)" },
		{ 2, true, VT_MS_PAGES, "PAGES from the destination" },
		{ 2, false, VT_MS_ACK, "ACK from the source" },
		{ 3, false, VT_MS_PAGES, "(the source may send: ABORT)" },
		{ 3, false, VT_MS_END, "END from the source in state end" },
		{ 3, true, VT_MS_WELCOME, "(the destination may send: ACK, END_ACK, ABORT)" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct state_case *c = &cases[i];
		struct pair *p = pair_new();
		struct vt_ms_session *to;
		uint8_t payload[VT_MS_ABORT_BYTES] = { 0 };
		size_t len;
		int ret;

		if (c->setup >= 1)
			hello(p);
		if (c->setup >= 2)
			welcome(p, 0);
		if (c->setup >= 3) {
			struct vt_ms_msg m = { .type = VT_MS_END };

			assert_int_equal(send_msg(p, &p->src, &m), 0);
			assert_int_equal(deliver(p, &p->dst, NULL), 0);
		}
		to = c->to_src ? &p->src : &p->dst;
		/* a payload that would pass its own checks, to reach the state's */
		if (c->type == VT_MS_PAGES) {
			len = raw_rec(payload + 8, 1, VT_MS_KIND_SAME, 0, 0, 8, 0, 0) + 8;
			raw_head(payload, 1, 0);
		} else if (c->type == VT_MS_ABORT) {
			put(payload, (uint32_t)-EIO, 4);
			len = VT_MS_ABORT_BYTES;
		} else {
			len = c->type == VT_MS_END ? 16 : 32;
			if (c->type == VT_MS_HELLO || c->type == VT_MS_WELCOME)
				memcpy(payload, SID, sizeof(SID));
			if (c->type == VT_MS_HELLO) {
				put(payload + 16, BACKEND, 8);
				put(payload + 24, VT_MS_PAGE_SIZE, 4);
			}
		}
		p->flen = raw_frame(p->frame, c->to_src ? p->keys.d2s : p->keys.s2d, c->type,
				    to->recv_seq, payload, len);
		ret = deliver(p, to, NULL);
		if (ret != -EPROTO || !strstr(p->err, c->says))
			fail_msg("case %zu: %d '%s' (want -EPROTO '%s')", i, ret, p->err, c->says);
		pair_free(p);
	}
}

/* A side may send only what its role sends in its state; a refused send kills it. */
static void test_send_refused(void **state)
{
	struct pair *p = pair_open();
	struct vt_ms_msg m = { .type = VT_MS_END_ACK };
	uint8_t small[8];

	(void)state;
	/* a buffer too small: nothing changes */
	m = (struct vt_ms_msg){ .type = VT_MS_ACK };
	assert_int_equal(vt_ms_payload_encode(&m, p->frame + 1000, 1000, &p->flen), 0);
	assert_int_equal(vt_ms_session_send(&p->dst, VT_MS_ACK, p->frame + 1000, 32, small,
					    sizeof(small), &p->flen, p->err, sizeof(p->err)),
			 -ENOBUFS);
	assert_false(vt_ms_session_dead(&p->dst));
	assert_int_equal(p->dst.send_seq, 1);
	/* a payload of the wrong size for its type */
	assert_int_equal(vt_ms_session_send(&p->dst, VT_MS_ACK, p->frame + 1000, 31, p->frame,
					    sizeof(p->frame), &p->flen, p->err, sizeof(p->err)),
			 -EMSGSIZE);
	assert_true(vt_ms_session_dead(&p->dst));
	assert_int_equal(send_msg(p, &p->dst, &m), -EPIPE);
	assert_non_null(strstr(p->err, "the session is dead: a frame was refused"));
	/* ... and it may still say why */
	assert_int_equal(vt_ms_session_abort(&p->dst, -EMSGSIZE, "bug", p->frame, sizeof(p->frame),
					     &p->flen, p->err, sizeof(p->err)), 0);
	assert_int_equal(deliver(p, &p->src, &m), 0);
	assert_int_equal(m.abort.error, -EMSGSIZE);
	/* the source may not send a destination's frame */
	pair_free(p);
	p = pair_open();
	m = (struct vt_ms_msg){ .type = VT_MS_END_ACK };
	assert_int_equal(send_msg(p, &p->src, &m), -EPROTO);
	assert_non_null(strstr(p->err, "END_ACK from the source in state pages: not allowed"));
	assert_int_equal(vt_ms_payload_encode(&(struct vt_ms_msg){ .type = VT_MS_PAGES },
					      p->frame, 100, &p->flen), -EINVAL);
	assert_int_equal(vt_ms_payload_encode(&(struct vt_ms_msg){ .type = VT_MS_HELLO },
					      p->frame, 31, &p->flen), -ENOBUFS);
	pair_free(p);
}

/* ---- PAGES records ---- */

struct rec_case {
	uint64_t index;
	uint8_t kind, codec, tier;
	uint32_t len;
	uint8_t pad;
	int ret;
	const char *says;
};

static void test_records(void **state)
{
	static const struct rec_case cases[] = {
		{ 0, 0, 1, 0, 1, 0, 0, NULL },
		{ NPAGES - 1, 0, 3, 15, 4096, 0, 0, NULL },
		{ 5, 1, 0, 0, 8, 0, 0, NULL },
		{ 5, 2, 0, 0, 4096, 0, 0, NULL },
		{ NPAGES, 0, 1, 0, 10, 0, -ERANGE, "record 0: page 2048 is past the backend's 2048 pages" },
		{ UINT64_MAX, 1, 0, 0, 8, 0, -ERANGE, "page 18446744073709551615 is past" },
		{ 1, 3, 0, 0, 8, 0, -EPROTO, "kind 3 (0 compressed, 1 same-filled, 2 raw)" },
		{ 1, 0, 0, 0, 8, 0, -EPROTO, "codec 0 for a compressed page (1 lz4, 2 zstd, 3 deflate)" },
		{ 1, 0, 4, 0, 8, 0, -EPROTO, "codec 4 for a compressed page" },
		{ 1, 1, 1, 0, 8, 0, -EPROTO, "codec 1 for a same-filled page (must be 0)" },
		{ 1, 2, 2, 0, 4096, 0, -EPROTO, "codec 2 for a raw page (must be 0)" },
		{ 1, 1, 0, 0, 16, 0, -EMSGSIZE, "a same-filled page of 16 bytes (must be 8)" },
		{ 1, 1, 0, 0, 0, 0, -EMSGSIZE, "a same-filled page of 0 bytes" },
		{ 1, 2, 0, 0, 4088, 0, -EMSGSIZE, "a raw page of 4088 bytes (must be 4096)" },
		{ 1, 0, 1, 0, 0, 0, -EMSGSIZE, "a compressed page of 0 bytes (must be 1..4096)" },
		/* 4097 bytes of data: more than one record can fill */
		{ 1, 0, 1, 0, 4097, 0, -EMSGSIZE, "more than 1 records can fill" },
		{ 1, 0, 2, 16, 8, 0, -ERANGE, "tier 16 (must be < 16)" },
		{ 1, 0, 2, 0, 5, 0x01, -EPROTO, "padding byte 0 is 0x01 (must be 0)" },
		{ 1, 0, 2, 0, 1, 0x80, -EPROTO, "record 0 (page 1): padding byte 0 is 0x80" },
	};
	uint8_t payload[8 + 24 + 4104];
	char err[VT_MS_ERR_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct rec_case *c = &cases[i];
		struct vt_ms_pages_iter it;
		struct vt_ms_page pg;
		size_t len;
		int ret;

		memset(payload, 0, sizeof(payload));
		raw_head(payload, 1, 0);
		len = 8 + raw_rec(payload + 8, c->index, c->kind, c->codec, c->tier, c->len, 0x5a,
				  c->pad);
		if (len < 40)	/* the head's bound: a record of 1..8 data bytes at least */
			len = 40;
		err[0] = '\0';
		ret = vt_ms_pages_iter_init(&it, payload, len, NPAGES, err, sizeof(err));
		if (!ret)
			ret = vt_ms_pages_next(&it, &pg, err, sizeof(err));
		if (ret == 1)
			ret = vt_ms_pages_next(&it, &pg, err, sizeof(err));
		if (ret != c->ret || (c->says && !strstr(err, c->says)))
			fail_msg("case %zu: %d '%s' (want %d '%s')", i, ret, err, c->ret,
				 c->says ? c->says : "");
		/* the builder refuses the same records (but the page's bound: the session's) */
		pg = (struct vt_ms_page){ .index = c->index, .kind = c->kind, .codec = c->codec,
					  .tier = c->tier, .len = c->len, .data = payload };
		if (c->pad || c->index >= NPAGES)
			continue;
		{
			struct vt_ms_pages_builder b;
			uint8_t out[sizeof(payload)];

			assert_int_equal(vt_ms_pages_begin(&b, out, sizeof(out)), 0);
			assert_int_equal(vt_ms_pages_add(&b, &pg, err, sizeof(err)), c->ret);
			if (c->ret)
				assert_int_equal(b.len, 8);
		}
	}
}

/* The payload's shape: counts, reserved fields, repeats, records against the payload. */
static void test_pages_shape(void **state)
{
	uint8_t payload[8 + 3 * (24 + 4096) + 64];
	struct vt_ms_pages_iter it;
	struct vt_ms_page pg;
	char err[VT_MS_ERR_LEN];
	size_t len;

	(void)state;
	/* a page twice in one frame */
	raw_head(payload, 3, 0);
	len = 8;
	len += raw_rec(payload + len, 9, VT_MS_KIND_SAME, 0, 0, 8, 0, 0);
	len += raw_rec(payload + len, 10, VT_MS_KIND_SAME, 0, 0, 8, 0, 0);
	len += raw_rec(payload + len, 9, VT_MS_KIND_RAW, 0, 0, 4096, 0, 0);
	assert_int_equal(vt_ms_pages_iter_init(&it, payload, len, NPAGES, err, sizeof(err)), 0);
	assert_int_equal(vt_ms_pages_next(&it, &pg, err, sizeof(err)), 1);
	assert_int_equal(vt_ms_pages_next(&it, &pg, err, sizeof(err)), 1);
	assert_int_equal(vt_ms_pages_next(&it, &pg, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "record 2: page 9 again (record 0 has it"));
	/* and it stays stopped */
	assert_int_equal(vt_ms_pages_next(&it, &pg, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "refused at record 2"));
	/* records do not fill the payload: 8 bytes left over */
	raw_head(payload, 1, 0);
	len = 8 + raw_rec(payload + 8, 1, VT_MS_KIND_SAME, 0, 0, 8, 0, 0);
	memset(payload + len, 0, 8);
	assert_int_equal(vt_ms_pages_iter_init(&it, payload, len + 8, NPAGES, err, sizeof(err)), 0);
	assert_int_equal(vt_ms_pages_next(&it, &pg, err, sizeof(err)), 1);
	assert_int_equal(vt_ms_pages_next(&it, &pg, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "its 1 records end at byte 40 of a 48-byte payload"));
	/* the count says 2, one record is there */
	raw_head(payload, 2, 0);
	len = 8 + raw_rec(payload + 8, 1, VT_MS_KIND_COMPRESSED, 1, 0, 100, 0, 0);
	assert_int_equal(vt_ms_pages_iter_init(&it, payload, len, NPAGES, err, sizeof(err)), 0);
	assert_int_equal(vt_ms_pages_next(&it, &pg, err, sizeof(err)), 1);
	assert_int_equal(vt_ms_pages_next(&it, &pg, err, sizeof(err)), -EMSGSIZE);
	assert_non_null(strstr(err, "record 1: its 24-byte head runs past the payload (0 bytes "
				    "left)"));
	/* a record's data past the end */
	raw_head(payload, 2, 0);
	len = 8 + raw_rec(payload + 8, 1, VT_MS_KIND_SAME, 0, 0, 8, 0, 0);
	len += raw_rec(payload + len, 2, VT_MS_KIND_COMPRESSED, 1, 0, 200, 0, 0);
	assert_int_equal(vt_ms_pages_iter_init(&it, payload, len - 64, NPAGES, err, sizeof(err)),
			 0);
	assert_int_equal(vt_ms_pages_next(&it, &pg, err, sizeof(err)), 1);
	assert_int_equal(vt_ms_pages_next(&it, &pg, err, sizeof(err)), -EMSGSIZE);
	assert_non_null(strstr(err, "200 data bytes (200 with padding) run past the payload "
				    "(136 bytes left)"));
	/* a record's reserved fields */
	raw_head(payload, 1, 0);
	len = 8 + raw_rec(payload + 8, 1, VT_MS_KIND_SAME, 0, 0, 8, 0, 0);
	payload[8 + 11] = 1;
	assert_int_equal(vt_ms_pages_iter_init(&it, payload, len, NPAGES, err, sizeof(err)), 0);
	assert_int_equal(vt_ms_pages_next(&it, &pg, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "reserved fields 0x01 and 0x00000000"));
	payload[8 + 11] = 0;
	payload[8 + 23] = 2;
	assert_int_equal(vt_ms_pages_iter_init(&it, payload, len, NPAGES, err, sizeof(err)), 0);
	assert_int_equal(vt_ms_pages_next(&it, &pg, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "0x00 and 0x02000000 (both must be 0)"));
	/* the head: count 0, count 257, reserved, too short, too long for its count */
	raw_head(payload, 0, 0);
	assert_int_equal(vt_ms_pages_iter_init(&it, payload, 40, NPAGES, err, sizeof(err)),
			 -EPROTO);
	assert_non_null(strstr(err, "count 0 (must be 1..256)"));
	assert_int_equal(vt_ms_pages_next(&it, &pg, err, sizeof(err)), -EPROTO);
	raw_head(payload, 257, 0);
	assert_int_equal(vt_ms_pages_iter_init(&it, payload, 40, NPAGES, err, sizeof(err)),
			 -EPROTO);
	assert_non_null(strstr(err, "count 257"));
	raw_head(payload, 1, 4);
	assert_int_equal(vt_ms_pages_iter_init(&it, payload, 40, NPAGES, err, sizeof(err)),
			 -EPROTO);
	assert_non_null(strstr(err, "reserved field 0x00000004 after the count"));
	assert_int_equal(vt_ms_pages_iter_init(&it, payload, 7, NPAGES, err, sizeof(err)),
			 -EMSGSIZE);
	assert_non_null(strstr(err, "payload of 7 bytes, shorter than its 8-byte head"));
	raw_head(payload, 2, 0);
	assert_int_equal(vt_ms_pages_iter_init(&it, payload, 40, NPAGES, err, sizeof(err)),
			 -EMSGSIZE);
	assert_non_null(strstr(err, "2 records need at least 72 bytes, the payload has 40"));
	raw_head(payload, 1, 0);
	assert_int_equal(vt_ms_pages_iter_init(&it, payload, 8 + 4120 + 8, NPAGES, err,
					       sizeof(err)), -EMSGSIZE);
	assert_non_null(strstr(err, "more than 1 records can fill (4128)"));
}

/* The builder: full at 256 records or at its buffer, never empty, repeats refused. */
static void test_builder(void **state)
{
	uint8_t *buf = malloc(VT_MS_PAYLOAD_MAX), word[8] = { 0 };
	struct vt_ms_pages_builder b;
	struct vt_ms_page pg = { .kind = VT_MS_KIND_SAME, .len = 8, .data = word };
	char err[VT_MS_ERR_LEN];
	size_t len;

	(void)state;
	assert_int_equal(vt_ms_pages_begin(&b, buf, 39), -ENOSPC);
	assert_int_equal(vt_ms_pages_begin(&b, buf, VT_MS_PAYLOAD_MAX), 0);
	assert_int_equal(vt_ms_pages_finish(&b, &len), -ENODATA);
	for (unsigned int i = 0; i < VT_MS_PAGES_MAX; i++) {
		pg.index = i;
		assert_int_equal(vt_ms_pages_add(&b, &pg, err, sizeof(err)), 0);
	}
	pg.index = 1000;
	assert_int_equal(vt_ms_pages_add(&b, &pg, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "the frame has its 256 records"));
	assert_int_equal(vt_ms_pages_finish(&b, &len), 0);
	assert_int_equal(len, 8 + 256 * 32);
	/* by the buffer: room for two records of 32 bytes */
	assert_int_equal(vt_ms_pages_begin(&b, buf, 8 + 64 + 16), 0);
	pg.index = 1;
	assert_int_equal(vt_ms_pages_add(&b, &pg, err, sizeof(err)), 0);
	assert_int_equal(vt_ms_pages_add(&b, &pg, err, sizeof(err)), -EEXIST);
	pg.index = 2;
	assert_int_equal(vt_ms_pages_add(&b, &pg, err, sizeof(err)), 0);
	pg.index = 3;
	assert_int_equal(vt_ms_pages_add(&b, &pg, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "record 2 (page 3) needs 32 bytes, the buffer has 16 left"));
	assert_int_equal(vt_ms_pages_finish(&b, &len), 0);
	assert_int_equal(len, 72);
	free(buf);
}

/* Every record of a PAGES frame is checked before the session takes it. */
static void test_pages_in_session(void **state)
{
	static const uint8_t word[8] = { 0 };
	struct pair *p = pair_open();
	uint8_t payload[128] = { 0 };
	struct vt_ms_pages_builder b;
	struct vt_ms_page pg = { .index = NPAGES, .kind = VT_MS_KIND_SAME, .len = 8,
				 .data = word };
	size_t len;

	(void)state;
	/* a good record, then one past the backend: the frame is refused whole */
	raw_head(payload, 2, 0);
	len = 8 + raw_rec(payload + 8, 1, VT_MS_KIND_SAME, 0, 0, 8, 0, 0);
	len += raw_rec(payload + len, NPAGES + 5, VT_MS_KIND_SAME, 0, 0, 8, 0, 0);
	p->flen = raw_frame(p->frame, p->keys.s2d, VT_MS_PAGES, 1, payload, len);
	assert_int_equal(deliver(p, &p->dst, NULL), -ERANGE);
	assert_non_null(strstr(p->err, "record 1: page 2053 is past the backend's 2048 pages"));
	assert_int_equal(p->dst.pages, 0);
	assert_int_equal(p->dst.frames, 0);
	/* the source does not send it either (the builder does not know the bound) */
	assert_int_equal(vt_ms_pages_begin(&b, payload, sizeof(payload)), 0);
	assert_int_equal(vt_ms_pages_add(&b, &pg, p->err, sizeof(p->err)), 0);
	assert_int_equal(vt_ms_pages_finish(&b, &len), 0);
	assert_int_equal(vt_ms_session_send(&p->src, VT_MS_PAGES, payload, len, p->frame,
					    sizeof(p->frame), &p->flen, p->err, sizeof(p->err)),
			 -ERANGE);
	assert_true(vt_ms_session_dead(&p->src));
	pair_free(p);
}

/* ---- counts ---- */

/* The source sent @n pages in one frame; the destination took it. */
static void pages_frame(struct pair *p, uint64_t first, unsigned int n)
{
	uint8_t word[8] = { 9 };
	struct vt_ms_pages_builder b;
	size_t len;

	assert_int_equal(vt_ms_pages_begin(&b, p->frame + VT_MS_HDR_BYTES, VT_MS_PAYLOAD_MAX), 0);
	for (unsigned int i = 0; i < n; i++) {
		struct vt_ms_page pg = { .index = first + i, .kind = VT_MS_KIND_SAME, .len = 8,
					 .data = word };

		assert_int_equal(vt_ms_pages_add(&b, &pg, p->err, sizeof(p->err)), 0);
	}
	assert_int_equal(vt_ms_pages_finish(&b, &len), 0);
	assert_int_equal(vt_ms_session_send(&p->src, VT_MS_PAGES, p->frame + VT_MS_HDR_BYTES, len,
					    p->frame, sizeof(p->frame), &p->flen, p->err,
					    sizeof(p->err)), 0);
	assert_int_equal(deliver(p, &p->dst, NULL), 0);
}

/* An ACK or END_ACK of @m from a hand-made frame at the source's next seq. */
static int raw_to_src(struct pair *p, struct vt_ms_session *src, const struct vt_ms_msg *m)
{
	uint8_t payload[VT_MS_ABORT_BYTES];
	size_t len;

	assert_int_equal(vt_ms_payload_encode(m, payload, sizeof(payload), &len), 0);
	p->flen = raw_frame(p->frame, p->keys.d2s, m->type, src->recv_seq, payload, len);
	p->err[0] = '\0';
	return vt_ms_session_recv(src, p->frame, p->flen, &(struct vt_ms_msg){ 0 }, p->err,
				  sizeof(p->err));
}

struct ack_case {
	struct vt_ms_ack ack;
	int ret;
	const char *says;
};

static void test_acks(void **state)
{
	/* the source has sent 10 pages in seq 1 and 5 in seq 2; the last ACK was {10, 4, 1, 1} */
	static const struct ack_case cases[] = {
		{ { 10, 4, 1, 1 }, 0, NULL },
		{ { 15, 14, 1, 2 }, 0, NULL },
		{ { 16, 4, 1, 2 }, -ERANGE, "ACK: 16 pages received, more than the 15 in PAGES "
					    "frames so far" },
		{ { 15, 4, 1, 3 }, -ERANGE, "last PAGES seq 3, but the last PAGES frame so far is "
					    "seq 2" },
		{ { 9, 4, 1, 1 }, -ERANGE, "ACK goes backwards: received 9, installed 4, dropped 1, "
					   "last seq 1 after 10, 4, 1, 1 (none may go down)" },
		{ { 10, 3, 1, 1 }, -ERANGE, "ACK goes backwards" },
		{ { 10, 4, 0, 1 }, -ERANGE, "ACK goes backwards" },
		{ { 10, 4, 1, 0 }, -ERANGE, "ACK: 10 pages received of no PAGES frame (last seq 0)" },
		{ { 10, 8, 3, 2 }, -ERANGE, "ACK: 8 installed + 3 dropped, more than the 10 received" },
		{ { 10, UINT64_MAX, 2, 2 }, -ERANGE, "more than the 10 received" },
	};
	struct pair *p = pair_open();
	struct vt_ms_msg m = { .type = VT_MS_ACK, .ack = { 10, 4, 1, 1 } };

	(void)state;
	pages_frame(p, 0, 10);
	assert_int_equal(send_msg(p, &p->dst, &m), 0);
	assert_int_equal(deliver(p, &p->src, NULL), 0);
	pages_frame(p, 100, 5);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vt_ms_session src = p->src;
		int ret;

		m.ack = cases[i].ack;
		ret = raw_to_src(p, &src, &m);
		if (ret != cases[i].ret || (cases[i].says && !strstr(p->err, cases[i].says)))
			fail_msg("case %zu: %d '%s' (want %d '%s')", i, ret, p->err, cases[i].ret,
				 cases[i].says ? cases[i].says : "");
	}
	/* the destination cannot send one the source would refuse */
	m.ack = (struct vt_ms_ack){ 9, 4, 1, 2 };
	assert_int_equal(send_msg(p, &p->dst, &m), -ERANGE);
	assert_true(vt_ms_session_dead(&p->dst));
	pair_free(p);
}

static void test_end_counts(void **state)
{
	struct pair *p = pair_open();
	struct vt_ms_msg m = { .type = VT_MS_END, .end = { 12, 2 } };
	struct vt_ms_session dst, src;

	(void)state;
	pages_frame(p, 0, 10);
	pages_frame(p, 20, 3);
	/* the source cannot claim other totals... */
	src = p->src;
	assert_int_equal(send_msg(p, &src, &m), -ERANGE);
	assert_non_null(strstr(p->err, "END: 12 pages in 2 PAGES frames, the stream carried 13 "
				       "in 2"));
	/* ... nor can a hand-made END pass the destination */
	dst = p->dst;
	{
		uint8_t payload[16];
		size_t len;

		assert_int_equal(vt_ms_payload_encode(&(struct vt_ms_msg){ .type = VT_MS_END,
								   .end = { 13, 3 } },
						      payload, sizeof(payload), &len), 0);
		p->flen = raw_frame(p->frame, p->keys.s2d, VT_MS_END, dst.recv_seq, payload, len);
		assert_int_equal(deliver(p, &dst, NULL), -ERANGE);
		assert_non_null(strstr(p->err, "END: 13 pages in 3 PAGES frames, the stream "
					       "carried 13 in 2"));
	}
	m.end = (struct vt_ms_end){ 13, 2 };
	assert_int_equal(send_msg(p, &p->src, &m), 0);
	assert_int_equal(deliver(p, &p->dst, NULL), 0);
	/* END_ACK: all received, all accounted for, not below the last ACK */
	src = p->src;
	src.ack = (struct vt_ms_ack){ 13, 10, 1, 2 };
	m = (struct vt_ms_msg){ .type = VT_MS_END_ACK, .end_ack = { 12, 12, 0, 0 } };
	assert_int_equal(raw_to_src(p, &src, &m), -ERANGE);
	assert_non_null(strstr(p->err, "END_ACK: 12 pages received, the stream's PAGES frames "
				       "carried 13"));
	src = p->src;
	src.ack = (struct vt_ms_ack){ 13, 10, 1, 2 };
	m.end_ack = (struct vt_ms_end_ack){ 13, 12, 0, 0 };
	assert_int_equal(raw_to_src(p, &src, &m), -ERANGE);
	assert_non_null(strstr(p->err, "12 installed + 0 dropped is not the 13 received"));
	src = p->src;
	src.ack = (struct vt_ms_ack){ 13, 10, 1, 2 };
	m.end_ack = (struct vt_ms_end_ack){ 13, 13, 0, 0 };
	assert_int_equal(raw_to_src(p, &src, &m), -ERANGE);
	assert_non_null(strstr(p->err, "13 installed and 0 dropped, below the last ACK's 10 and 1"));
	src = p->src;
	m.end_ack = (struct vt_ms_end_ack){ 13, 13, 0, 1 };
	assert_int_equal(raw_to_src(p, &src, &m), -ERANGE);
	assert_non_null(strstr(p->err, "END_ACK: status 1 (must be 0 or -4095..-1)"));
	src = p->src;
	m.end_ack = (struct vt_ms_end_ack){ 13, 13, 0, -4096 };
	assert_int_equal(raw_to_src(p, &src, &m), -ERANGE);
	/* the destination sends none of those */
	dst = p->dst;
	m.end_ack = (struct vt_ms_end_ack){ 13, 12, 0, 0 };
	assert_int_equal(send_msg(p, &dst, &m), -ERANGE);
	m.end_ack = (struct vt_ms_end_ack){ 13, 12, 1, 0 };
	assert_int_equal(send_msg(p, &p->dst, &m), 0);
	assert_int_equal(deliver(p, &p->src, NULL), 0);
	assert_true(vt_ms_session_done(&p->src));
	pair_free(p);
}

/* Reserved fields and value rules of the fixed payloads, frames made by hand. */
static void test_fixed_fields(void **state)
{
	struct pair *p = pair_new();
	struct vt_ms_session src, dst;
	uint8_t pl[VT_MS_ABORT_BYTES];

	(void)state;
	/* HELLO's reserved u32 */
	memset(pl, 0, sizeof(pl));
	memcpy(pl, SID, sizeof(SID));
	put(pl + 16, BACKEND, 8);
	put(pl + 24, VT_MS_PAGE_SIZE, 4);
	put(pl + 28, 1, 4);
	src = p->src;
	p->flen = raw_frame(p->frame, p->keys.d2s, VT_MS_HELLO, 0, pl, VT_MS_HELLO_BYTES);
	assert_int_equal(deliver(p, &src, NULL), -EPROTO);
	assert_non_null(strstr(p->err, "HELLO: reserved field 0x00000001 (must be 0)"));
	hello(p);
	/* WELCOME's reserved u64, its hint */
	memset(pl, 0, sizeof(pl));
	memcpy(pl, SID, sizeof(SID));
	put(pl + 24, 1ull << 40, 8);
	dst = p->dst;
	p->flen = raw_frame(p->frame, p->keys.s2d, VT_MS_WELCOME, 0, pl, VT_MS_WELCOME_BYTES);
	assert_int_equal(deliver(p, &dst, NULL), -EPROTO);
	assert_non_null(strstr(p->err, "WELCOME: reserved field 0x0000010000000000"));
	put(pl + 24, 0, 8);
	put(pl + 16, NPAGES + 1, 8);
	dst = p->dst;
	p->flen = raw_frame(p->frame, p->keys.s2d, VT_MS_WELCOME, 0, pl, VT_MS_WELCOME_BYTES);
	assert_int_equal(deliver(p, &dst, NULL), -ERANGE);
	assert_non_null(strstr(p->err, "WELCOME: a hint of 2049 pages, more than the backend's 2048"));
	/* WELCOME of another stream */
	put(pl + 16, 0, 8);
	pl[0] ^= 0xff;
	dst = p->dst;
	p->flen = raw_frame(p->frame, p->keys.s2d, VT_MS_WELCOME, 0, pl, VT_MS_WELCOME_BYTES);
	assert_int_equal(deliver(p, &dst, NULL), -EPROTO);
	assert_non_null(strstr(p->err, "WELCOME: stream id 5fa1"));
	/* ABORT: errno, reserved, message */
	memset(pl, 0, sizeof(pl));
	put(pl, 0, 4);
	dst = p->dst;
	p->flen = raw_frame(p->frame, p->keys.s2d, VT_MS_ABORT, 0, pl, VT_MS_ABORT_BYTES);
	assert_int_equal(deliver(p, &dst, NULL), -ERANGE);
	assert_non_null(strstr(p->err, "ABORT: errno 0 (must be -4095..-1)"));
	put(pl, (uint32_t)-EIO, 4);
	put(pl + 4, 3, 4);
	dst = p->dst;
	p->flen = raw_frame(p->frame, p->keys.s2d, VT_MS_ABORT, 0, pl, VT_MS_ABORT_BYTES);
	assert_int_equal(deliver(p, &dst, NULL), -EPROTO);
	assert_non_null(strstr(p->err, "ABORT: reserved field 0x00000003"));
	put(pl + 4, 0, 4);
	memset(pl + 8, 'x', VT_MS_MSG_LEN);
	dst = p->dst;
	p->flen = raw_frame(p->frame, p->keys.s2d, VT_MS_ABORT, 0, pl, VT_MS_ABORT_BYTES);
	assert_int_equal(deliver(p, &dst, NULL), -EPROTO);
	assert_non_null(strstr(p->err, "ABORT: message not NUL-terminated within its 128 bytes"));
	memset(pl + 8, 0, VT_MS_MSG_LEN);
	memcpy(pl + 8, "bad\x1b[2J", 7);
	dst = p->dst;
	p->flen = raw_frame(p->frame, p->keys.s2d, VT_MS_ABORT, 0, pl, VT_MS_ABORT_BYTES);
	assert_int_equal(deliver(p, &dst, NULL), -EPROTO);
	assert_non_null(strstr(p->err, "ABORT: message byte 3 is 0x1b (printable ASCII"));
	memset(pl + 8, 0, VT_MS_MSG_LEN);
	memcpy(pl + 8, "ok", 2);
	pl[8 + 100] = 'z';
	dst = p->dst;
	p->flen = raw_frame(p->frame, p->keys.s2d, VT_MS_ABORT, 0, pl, VT_MS_ABORT_BYTES);
	assert_int_equal(deliver(p, &dst, NULL), -EPROTO);
	assert_non_null(strstr(p->err, "ABORT: message byte 100, after its NUL, is 0x7a"));
	/* a frame shorter than its header says, or than a header */
	dst = p->dst;
	p->flen -= 1;
	assert_int_equal(deliver(p, &dst, NULL), -EMSGSIZE);
	assert_non_null(strstr(p->err, "ABORT frame of 175 bytes, its header says 176"));
	dst = p->dst;
	p->flen = 39;
	assert_int_equal(deliver(p, &dst, NULL), -EMSGSIZE);
	assert_non_null(strstr(p->err, "a frame of 39 bytes, shorter than a header and a tag (40)"));
	pair_free(p);
}

static void test_session_init(void **state)
{
	struct vt_ms_session s;
	struct vt_ms_keys keys = { { 0 } };
	char err[VT_MS_ERR_LEN];

	(void)state;
	assert_int_equal(vt_ms_session_init(&s, VT_MS_SOURCE, &keys, SID, BACKEND, 8192, err,
					    sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "page size 8192 (version 1 has 4096 only)"));
	assert_int_equal(vt_ms_session_init(&s, VT_MS_SOURCE, &keys, SID, 0, 4096, err,
					    sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "backend of 0 bytes (must be a non-zero multiple of 4096)"));
	assert_int_equal(vt_ms_session_init(&s, VT_MS_SOURCE, &keys, SID, BACKEND + 1, 4096, err,
					    sizeof(err)), -EINVAL);
	assert_int_equal(vt_ms_session_init(&s, (enum vt_ms_role)2, &keys, SID, BACKEND, 4096,
					    err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "role 2 (0 source, 1 destination)"));
}

/* ---- a whole stream ---- */

/*
 * The source sends 1500 pages of every kind in frames of up to 256 records (some cut
 * by a 256 KiB buffer); the destination checks every page against what the source
 * holds, installs all but every 50th, ACKs every other frame; the ACKs reach the
 * source two frames late, the last ones after its END.
 */
static void test_full_exchange(void **state)
{
	enum { N = 1500 };
	struct pair *p = pair_new();
	uint8_t *store = malloc((size_t)N * VT_MS_PAGE_SIZE);
	uint8_t *acks[64];
	size_t ack_len[64];
	unsigned int n_acks = 0, acks_done = 0, sent = 0;
	uint64_t installed = 0, dropped = 0, received = 0, frames = 0;
	struct vt_ms_msg m;

	(void)state;
	for (size_t i = 0; i < (size_t)N * VT_MS_PAGE_SIZE; i++)
		store[i] = (uint8_t)(i * 2654435761u >> 13);
	hello(p);
	welcome(p, N);
	while (sent < N) {
		struct vt_ms_pages_builder b;
		struct vt_ms_pages_iter it;
		struct vt_ms_page pg;
		size_t len;

		assert_int_equal(vt_ms_pages_begin(&b, p->frame + VT_MS_HDR_BYTES, 256 << 10), 0);
		for (; sent < N; sent++) {
			uint64_t index = (uint64_t)sent * 7 % NPAGES;
			const uint8_t *page = store + (size_t)sent * VT_MS_PAGE_SIZE;
			uint8_t kind = (uint8_t)(sent % 3);

			pg = (struct vt_ms_page){
				.index = index, .kind = kind, .tier = (uint8_t)(sent % 16),
				.codec = kind == VT_MS_KIND_COMPRESSED ? (uint8_t)(sent % 3 + 1) : 0,
				.len = kind == VT_MS_KIND_SAME ? 8 :
				       kind == VT_MS_KIND_RAW ? VT_MS_PAGE_SIZE : 1 + sent % 4096,
				.crc = sent, .data = page,
			};
			if (vt_ms_pages_add(&b, &pg, p->err, sizeof(p->err)) == -ENOSPC)
				break;
		}
		assert_int_equal(vt_ms_pages_finish(&b, &len), 0);
		assert_int_equal(vt_ms_session_send(&p->src, VT_MS_PAGES, p->frame +
						    VT_MS_HDR_BYTES, len, p->frame,
						    sizeof(p->frame), &p->flen, p->err,
						    sizeof(p->err)), 0);
		assert_int_equal(deliver(p, &p->dst, &m), 0);
		frames++;
		assert_int_equal(vt_ms_pages_iter_init(&it, m.payload, m.len, NPAGES, p->err,
						       sizeof(p->err)), 0);
		while (vt_ms_pages_next(&it, &pg, p->err, sizeof(p->err)) == 1) {
			const uint8_t *page = store + (size_t)pg.crc * VT_MS_PAGE_SIZE;

			assert_int_equal(pg.index, (uint64_t)pg.crc * 7 % NPAGES);
			assert_memory_equal(pg.data, page, pg.len);
			received++;
			if (pg.crc % 50)
				installed++;
			else
				dropped++;
		}
		assert_int_equal(received, p->dst.pages);
		/* an ACK every other frame, held back by the network */
		if (frames % 2 == 0) {
			struct vt_ms_msg a = { .type = VT_MS_ACK,
					       .ack = { received, installed, dropped,
							p->dst.last_pages_seq } };

			assert_int_equal(send_msg(p, &p->dst, &a), 0);
			assert_true(n_acks < 64);
			acks[n_acks] = malloc(p->flen);
			memcpy(acks[n_acks], p->frame, p->flen);
			ack_len[n_acks++] = p->flen;
		}
		while (acks_done + 1 < n_acks) {
			assert_int_equal(vt_ms_session_recv(&p->src, acks[acks_done],
							    ack_len[acks_done], &m, p->err,
							    sizeof(p->err)), 0);
			free(acks[acks_done++]);
		}
	}
	assert_int_equal(frames, p->src.frames);
	assert_true(frames > (N + 255) / 256);	/* the buffer cut some frames short */
	assert_int_equal(p->src.pages, N);
	/* END; then the late ACKs reach the source; then END_ACK */
	m = (struct vt_ms_msg){ .type = VT_MS_END, .end = { N, frames } };
	assert_int_equal(send_msg(p, &p->src, &m), 0);
	assert_int_equal(deliver(p, &p->dst, &m), 0);
	assert_int_equal(p->dst.state, VT_MS_ST_END);
	while (acks_done < n_acks) {
		assert_int_equal(vt_ms_session_recv(&p->src, acks[acks_done], ack_len[acks_done],
						    &m, p->err, sizeof(p->err)), 0);
		free(acks[acks_done++]);
	}
	assert_int_equal(p->src.ack.received, p->src.ack.installed + p->src.ack.dropped);
	m = (struct vt_ms_msg){ .type = VT_MS_END_ACK,
				.end_ack = { received, installed, dropped, 0 } };
	assert_int_equal(send_msg(p, &p->dst, &m), 0);
	assert_int_equal(deliver(p, &p->src, &m), 0);
	assert_int_equal(m.end_ack.received, N);
	assert_int_equal(m.end_ack.installed, N - 30);
	assert_int_equal(m.end_ack.dropped, 30);
	assert_int_equal(p->src.state, VT_MS_ST_DONE);
	assert_int_equal(p->dst.state, VT_MS_ST_DONE);
	assert_int_equal(p->src.send_seq, p->dst.recv_seq);
	assert_int_equal(p->dst.send_seq, p->src.recv_seq);
	assert_int_equal(p->src.send_seq, frames + 2);	/* WELCOME, PAGES..., END */
	free(store);
	pair_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_vector),
		cmocka_unit_test(test_header_layout),
		cmocka_unit_test(test_frame_len),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_abort_roundtrip),
		cmocka_unit_test(test_abort_encode),
		cmocka_unit_test(test_bit_flips),
		cmocka_unit_test(test_keys_and_ids),
		cmocka_unit_test(test_seq),
		cmocka_unit_test(test_out_of_state),
		cmocka_unit_test(test_send_refused),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_pages_shape),
		cmocka_unit_test(test_builder),
		cmocka_unit_test(test_pages_in_session),
		cmocka_unit_test(test_acks),
		cmocka_unit_test(test_end_counts),
		cmocka_unit_test(test_fixed_fields),
		cmocka_unit_test(test_session_init),
		cmocka_unit_test(test_full_exchange),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
