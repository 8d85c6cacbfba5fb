// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the remote tier's wire format (host-agent/remote/remote_proto.c):
 * the header's layout, every message's round trip through datagrams and
 * reassembly, every malformed field refused with its own reason, fragment
 * edge cases (duplicate, out of order, overlapping, gaps, oversize, expiry,
 * a full table), the anti-replay window and the client's reply check.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "remote_proto.h"

static const uint8_t NS[VT_RP_NS_BYTES] = "namespace-0001!";
static uint8_t KEY[VT_SEAL_KEY_BYTES] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };

/* A datagram by hand: any header, any fragment bytes, a valid tag. */
static size_t raw_dgram(uint8_t *buf, const struct vt_rp_hdr *h, const uint8_t *frag,
			size_t flen)
{
	vt_rp_hdr_write(h, buf);
	memcpy(buf + VT_RP_HDR_BYTES, frag, flen);
	vt_seal_tag(KEY, buf, VT_RP_HDR_BYTES + flen, buf + VT_RP_HDR_BYTES + flen);
	return VT_RP_HDR_BYTES + flen + VT_RP_TAG_BYTES;
}

static struct vt_rp_hdr hdr_of(uint8_t op, uint64_t seq, uint32_t body_len, uint8_t frag,
			       uint8_t nfrags, uint32_t off, uint16_t flen)
{
	struct vt_rp_hdr h = {
		.magic = VT_RP_MAGIC, .version = VT_RP_VERSION, .op = op, .frag = frag,
		.nfrags = nfrags, .seq = seq, .body_len = body_len, .frag_len = flen,
		.frag_off = off,
	};

	memcpy(h.ns, NS, sizeof(NS));
	return h;
}

static void test_header_layout(void **state)
{
	struct vt_rp_hdr h = hdr_of(VT_RP_GET, 0x0102030405060708ull, 0x11223344, 2, 3,
				    0x55667788, 0x99aa), back;
	uint8_t b[VT_RP_HDR_BYTES];

	(void)state;
	h.status = 0xbbcc;
	vt_rp_hdr_write(&h, b);
	assert_memory_equal(b, "VTRM", 4);
	assert_int_equal(b[4], 1);
	assert_int_equal(b[5], VT_RP_GET);
	assert_int_equal(b[6], 2);
	assert_int_equal(b[7], 3);
	assert_memory_equal(b + 8, NS, 16);
	assert_int_equal(b[24], 0x08);	/* seq, little-endian */
	assert_int_equal(b[31], 0x01);
	assert_int_equal(b[32], 0x44);	/* body_len */
	assert_int_equal(b[36], 0xaa);	/* frag_len */
	assert_int_equal(b[38], 0xcc);	/* status */
	assert_int_equal(b[40], 0x88);	/* frag_off */
	assert_int_equal(b[44] | b[45] | b[46] | b[47], 0);	/* reserved */
	vt_rp_hdr_read(b, &back);
	assert_memory_equal(&h, &back, sizeof(h));
	assert_string_equal(vt_rp_reason_name(VT_RP_R_FRAG_OVERLAP), "frag_overlap");
	assert_string_equal(vt_rp_reason_name(VT_RP_R_COUNT), "?");
	for (int r = 0; r < VT_RP_R_COUNT; r++)
		assert_non_null(vt_rp_reason_name(r));
}

/* Encodes, parses and reassembles (fragments in the order given by @order). */
static void roundtrip(uint8_t op, uint16_t status, const uint8_t *body, size_t len, size_t fmax,
		      const unsigned int *order, unsigned int want_frags, uint8_t **out,
		      size_t *out_len)
{
	struct vt_rp_dgrams *d = g_new0(struct vt_rp_dgrams, 1);
	struct vt_rp_reasm r = { 0 };
	struct vt_rp_msg msg = { 0 };
	unsigned int expired = 0;
	bool done = false;

	assert_int_equal(vt_rp_encode(op, NS, 77, status, body, len, fmax, KEY, d),
			 (int)want_frags);
	assert_int_equal(d->n, want_frags);
	for (unsigned int i = 0; i < d->n; i++) {
		unsigned int k = order ? order[i] : i;
		struct vt_rp_dgram dg;

		assert_true(d->len[k] <= VT_RP_HDR_BYTES + fmax + VT_RP_TAG_BYTES);
		assert_int_equal(vt_rp_parse(d->buf[k], d->len[k], fmax, op & VT_RP_REPLY, &dg),
				 VT_RP_OK);
		assert_int_equal(vt_rp_verify(d->buf[k], d->len[k], KEY), VT_RP_OK);
		assert_false(done);
		assert_int_equal(vt_rp_reasm_add(&r, &dg, 1000, &msg, &done, &expired), VT_RP_OK);
	}
	assert_true(done);
	assert_int_equal(msg.hdr.op, op);
	assert_int_equal(msg.hdr.seq, 77);
	assert_int_equal(msg.hdr.status, status);
	assert_memory_equal(msg.hdr.ns, NS, sizeof(NS));
	assert_int_equal(msg.len, len);
	*out = g_memdup2(msg.body, len ? len : 1);
	*out_len = msg.len;
	vt_rp_msg_release(&msg);
	for (unsigned int i = 0; i < VT_RP_REASM_SLOTS; i++)
		assert_false(r.slot[i].used);
	g_free(d);
}

static void test_fragments_roundtrip(void **state)
{
	static const unsigned int rev3[] = { 2, 0, 1 }, rev8[] = { 7, 6, 5, 4, 3, 2, 1, 0 };
	const size_t sizes[] = { 0, 1, 1399, 1400, 1401, 2800, 4136, 8 * 1400 };
	const unsigned int frags[] = { 1, 1, 1, 1, 2, 2, 3, 8 };
	uint8_t *body = g_malloc(VT_RP_BODY_LIMIT + 1), *out;
	size_t olen;

	(void)state;
	for (size_t i = 0; i < VT_RP_BODY_LIMIT + 1; i++)
		body[i] = (uint8_t)(i * 13 + (i >> 8));
	for (unsigned int i = 0; i < G_N_ELEMENTS(sizes); i++) {
		roundtrip(VT_RP_PUT, 0, body, sizes[i], VT_RP_FRAG_DEFAULT, NULL, frags[i], &out, &olen);
		assert_memory_equal(out, body, sizes[i]);
		g_free(out);
	}
	/* Out of order. */
	roundtrip(VT_RP_GET | VT_RP_REPLY, ENOENT, body, 4136, 1400, rev3, 3, &out, &olen);
	assert_memory_equal(out, body, 4136);
	g_free(out);
	roundtrip(VT_RP_PUT, 0, body, 8 * 1400, 1400, rev8, 8, &out, &olen);
	assert_memory_equal(out, body, 8 * 1400);
	g_free(out);
	/* Jumbo: one sealed page in one datagram; the largest body in 8. */
	roundtrip(VT_RP_PUT, 0, body, 4136, VT_RP_FRAG_LIMIT, NULL, 2, &out, &olen);
	g_free(out);
	roundtrip(VT_RP_PUT, 0, body, 3968, VT_RP_FRAG_LIMIT, NULL, 1, &out, &olen);
	assert_memory_equal(out, body, 3968);
	g_free(out);
	roundtrip(VT_RP_PUT, 0, body, VT_RP_BODY_LIMIT, VT_RP_FRAG_LIMIT, NULL, 8, &out, &olen);
	assert_memory_equal(out, body, VT_RP_BODY_LIMIT);
	g_free(out);
	/* Oversize bodies and bad frag maxes are not encoded. */
	{
		struct vt_rp_dgrams *d = g_new0(struct vt_rp_dgrams, 1);

		assert_int_equal(vt_rp_encode(VT_RP_PUT, NS, 1, 0, body, 8 * 1400 + 1, 1400, KEY, d),
				 -E2BIG);
		assert_int_equal(vt_rp_encode(VT_RP_PUT, NS, 1, 0, body, VT_RP_BODY_LIMIT + 1,
					      VT_RP_FRAG_LIMIT, KEY, d), -E2BIG);
		assert_int_equal(vt_rp_encode(VT_RP_PUT, NS, 1, 0, body, 10, VT_RP_FRAG_LIMIT + 1,
					      KEY, d), -EINVAL);
		assert_int_equal(vt_rp_encode(VT_RP_PUT, NS, 1, 0, body, 10, VT_RP_FRAG_MIN - 1,
					      KEY, d), -EINVAL);
		g_free(d);
	}
	g_free(body);
}

/* One valid 2-fragment PUT's first datagram, then each field broken. */
static void test_malformed(void **state)
{
	uint8_t frag[2000] = { 0 }, buf[VT_RP_DGRAM_MAX + 8];
	struct vt_rp_dgram dg;
	struct vt_rp_hdr h;
	size_t len;

	(void)state;
#define BASE() (h = hdr_of(VT_RP_PUT, 5, 2000, 0, 2, 0, 1000))
#define EXPECT(reason, flen) do { \
		len = raw_dgram(buf, &h, frag, (flen)); \
		assert_int_equal(vt_rp_parse(buf, len, 1400, false, &dg), (reason)); \
	} while (0)
	BASE();
	EXPECT(VT_RP_OK, 1000);
	assert_ptr_equal(dg.frag, buf + VT_RP_HDR_BYTES);
	assert_ptr_equal(dg.tag, buf + VT_RP_HDR_BYTES + 1000);
	/* Lengths of the datagram itself, at every short length. */
	for (size_t l = 0; l < VT_RP_HDR_BYTES + VT_RP_TAG_BYTES; l++)
		assert_int_equal(vt_rp_parse(buf, l, 1400, false, &dg), VT_RP_R_SHORT);
	assert_int_equal(vt_rp_parse(buf, VT_RP_DGRAM_MAX + 1, 1400, false, &dg), VT_RP_R_LONG);
	assert_int_equal(vt_rp_parse(buf, len - 1, 1400, false, &dg), VT_RP_R_DGRAM_LEN);
	assert_int_equal(vt_rp_parse(buf, len + 1, 1400, false, &dg), VT_RP_R_DGRAM_LEN);
	BASE(); h.magic ^= 1; EXPECT(VT_RP_R_MAGIC, 1000);
	BASE(); h.version = 2; EXPECT(VT_RP_R_VERSION, 1000);
	BASE(); h.version = 0; EXPECT(VT_RP_R_VERSION, 1000);
	BASE(); h.op = 0; EXPECT(VT_RP_R_OP, 1000);
	BASE(); h.op = 6; EXPECT(VT_RP_R_OP, 1000);
	BASE(); h.op = 0x7f; EXPECT(VT_RP_R_OP, 1000);
	/* A reply where a request is due, and the other way round. */
	BASE(); h.op = VT_RP_PUT | VT_RP_REPLY; EXPECT(VT_RP_R_OP, 1000);
	BASE();
	len = raw_dgram(buf, &h, frag, 1000);
	assert_int_equal(vt_rp_parse(buf, len, 1400, true, &dg), VT_RP_R_OP);
	BASE(); h.nfrags = 0; EXPECT(VT_RP_R_NFRAGS, 1000);
	BASE(); h.nfrags = VT_RP_MAX_FRAGS + 1; EXPECT(VT_RP_R_NFRAGS, 1000);
	BASE(); h.frag = 2; EXPECT(VT_RP_R_FRAG, 1000);
	BASE(); h.frag = 255; EXPECT(VT_RP_R_FRAG, 1000);
	BASE(); h.reserved = 1; EXPECT(VT_RP_R_RESERVED, 1000);
	BASE(); h.status = ENOSPC; EXPECT(VT_RP_R_STATUS, 1000);
	/* A reply may carry a status. */
	BASE(); h.op |= VT_RP_REPLY; h.status = ENOSPC;
	len = raw_dgram(buf, &h, frag, 1000);
	assert_int_equal(vt_rp_parse(buf, len, 1400, true, &dg), VT_RP_OK);
	/* frag_len over the receiver's frag max; 0 in a non-empty body. */
	BASE(); h.frag_len = 1401; h.body_len = 2802; EXPECT(VT_RP_R_FRAG_LEN, 1401);
	BASE(); h.frag_len = 0; EXPECT(VT_RP_R_FRAG_LEN, 0);
	BASE(); h.frag_len = 0; h.body_len = 0; EXPECT(VT_RP_R_FRAG_LEN, 0);
	BASE(); h.frag_len = 0; h.body_len = 0; h.nfrags = 1; h.frag = 0; EXPECT(VT_RP_OK, 0);
	/* body_len over nfrags * frag max; a single fragment that is not all of it. */
	BASE(); h.body_len = 2801; EXPECT(VT_RP_R_BODY_LEN, 1000);
	BASE(); h.nfrags = 1; EXPECT(VT_RP_R_BODY_LEN, 1000);
	BASE(); h.nfrags = 1; h.body_len = 999; EXPECT(VT_RP_R_BODY_LEN, 1000);
	/* Fragment past the end of its body (also near UINT32_MAX). */
	BASE(); h.frag_off = 1001; EXPECT(VT_RP_R_FRAG_OFF, 1000);
	BASE(); h.frag_off = UINT32_MAX; EXPECT(VT_RP_R_FRAG_OFF, 1000);
	BASE(); h.frag_off = 1000; EXPECT(VT_RP_OK, 1000);
	/* frag_len that disagrees with the datagram's length. */
	BASE(); h.frag_len = 999; EXPECT(VT_RP_R_DGRAM_LEN, 1000);
	BASE(); h.frag_len = 1001; EXPECT(VT_RP_R_DGRAM_LEN, 1000);
	/* HELLO: one fragment only. */
	BASE(); h.op = VT_RP_HELLO; EXPECT(VT_RP_R_HELLO_FRAGS, 1000);
	/* An out-of-range frag max given by a caller falls back to the default. */
	BASE(); h.frag_len = 1400; h.body_len = 2800;
	len = raw_dgram(buf, &h, frag, 1400);
	assert_int_equal(vt_rp_parse(buf, len, 1, false, &dg), VT_RP_OK);
	assert_int_equal(vt_rp_parse(buf, len, 1399, false, &dg), VT_RP_R_FRAG_LEN);
	/* Forged: any flipped bit of header, fragment or tag. */
	BASE();
	len = raw_dgram(buf, &h, frag, 100);
	h.body_len = 100; h.nfrags = 1; h.frag_len = 100;
	len = raw_dgram(buf, &h, frag, 100);
	assert_int_equal(vt_rp_verify(buf, len, KEY), VT_RP_OK);
	for (size_t bit = 0; bit < len * 8; bit++) {
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_equal(vt_rp_verify(buf, len, KEY), VT_RP_R_FORGED);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	{
		uint8_t key2[VT_SEAL_KEY_BYTES] = { 9 };

		assert_int_equal(vt_rp_verify(buf, len, key2), VT_RP_R_FORGED);
	}
	assert_int_equal(vt_rp_verify(buf, 10, KEY), VT_RP_R_SHORT);
#undef BASE
#undef EXPECT
}

static enum vt_rp_reason add(struct vt_rp_reasm *r, uint8_t *buf, const struct vt_rp_hdr *h,
			     const uint8_t *frag, uint64_t now, struct vt_rp_msg *m, bool *done,
			     unsigned int *expired)
{
	struct vt_rp_dgram dg;
	size_t len = raw_dgram(buf, h, frag, h->frag_len);

	assert_int_equal(vt_rp_parse(buf, len, 1400, false, &dg), VT_RP_OK);
	return vt_rp_reasm_add(r, &dg, now, m, done, expired);
}

static void test_reassembly_edges(void **state)
{
	uint8_t body[3000], buf[VT_RP_DGRAM_MAX];
	struct vt_rp_reasm r = { 0 };
	struct vt_rp_msg m = { 0 };
	unsigned int expired = 0;
	struct vt_rp_hdr h;
	bool done;

	(void)state;
	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (uint8_t)(i ^ 0x5a);
	/* Duplicate fragment: refused, the message completes with the rest. */
	h = hdr_of(VT_RP_PUT, 1, 3000, 0, 3, 0, 1000);
	assert_int_equal(add(&r, buf, &h, body, 0, &m, &done, &expired), VT_RP_OK);
	assert_int_equal(add(&r, buf, &h, body, 0, &m, &done, &expired), VT_RP_R_FRAG_DUP);
	assert_true(vt_rp_reasm_has(&r, 1));
	/* Overlapping another fragment's bytes (a different index). */
	h = hdr_of(VT_RP_PUT, 1, 3000, 1, 3, 999, 1000);
	assert_int_equal(add(&r, buf, &h, body + 999, 0, &m, &done, &expired),
			 VT_RP_R_FRAG_OVERLAP);
	h = hdr_of(VT_RP_PUT, 1, 3000, 2, 3, 500, 10);
	assert_int_equal(add(&r, buf, &h, body + 500, 0, &m, &done, &expired),
			 VT_RP_R_FRAG_OVERLAP);
	/* Disagreeing with its message: op, nfrags, body_len. */
	h = hdr_of(VT_RP_FREE, 1, 3000, 1, 3, 1000, 1000);
	assert_int_equal(add(&r, buf, &h, body + 1000, 0, &m, &done, &expired),
			 VT_RP_R_FRAG_MISMATCH);
	h = hdr_of(VT_RP_PUT, 1, 3000, 1, 4, 1000, 1000);
	assert_int_equal(add(&r, buf, &h, body + 1000, 0, &m, &done, &expired),
			 VT_RP_R_FRAG_MISMATCH);
	h = hdr_of(VT_RP_PUT, 1, 2999, 1, 3, 1000, 1000);
	assert_int_equal(add(&r, buf, &h, body + 1000, 0, &m, &done, &expired),
			 VT_RP_R_FRAG_MISMATCH);
	/* A single-fragment message reusing a seq in reassembly. */
	h = hdr_of(VT_RP_PUT, 1, 10, 0, 1, 0, 10);
	assert_int_equal(add(&r, buf, &h, body, 0, &m, &done, &expired), VT_RP_R_FRAG_MISMATCH);
	/* The rest, out of order: complete and byte for byte. */
	h = hdr_of(VT_RP_PUT, 1, 3000, 2, 3, 2000, 1000);
	assert_int_equal(add(&r, buf, &h, body + 2000, 0, &m, &done, &expired), VT_RP_OK);
	assert_false(done);
	h = hdr_of(VT_RP_PUT, 1, 3000, 1, 3, 1000, 1000);
	assert_int_equal(add(&r, buf, &h, body + 1000, 0, &m, &done, &expired), VT_RP_OK);
	assert_true(done);
	assert_int_equal(m.len, 3000);
	assert_memory_equal(m.body, body, 3000);
	vt_rp_msg_release(&m);
	assert_false(vt_rp_reasm_has(&r, 1));

	/* Fragments that leave a gap: all in, not all of the body. */
	h = hdr_of(VT_RP_PUT, 2, 2000, 0, 2, 0, 900);
	assert_int_equal(add(&r, buf, &h, body, 0, &m, &done, &expired), VT_RP_OK);
	h = hdr_of(VT_RP_PUT, 2, 2000, 1, 2, 1000, 1000);
	assert_int_equal(add(&r, buf, &h, body, 0, &m, &done, &expired), VT_RP_R_BODY_LEN);
	assert_false(done);
	assert_false(vt_rp_reasm_has(&r, 2));

	/*
	 * A full table: a newer message takes the oldest partial's slot (a try
	 * its sender gave up on), counted expired; an older one is refused;
	 * expiry frees the rest.
	 */
	for (uint64_t s = 100; s < 100 + VT_RP_REASM_SLOTS; s++) {
		h = hdr_of(VT_RP_PUT, s, 2000, 0, 2, 0, 1000);
		assert_int_equal(add(&r, buf, &h, body, 5, &m, &done, &expired), VT_RP_OK);
	}
	h = hdr_of(VT_RP_PUT, 50, 2000, 0, 2, 0, 1000);
	assert_int_equal(add(&r, buf, &h, body, 5, &m, &done, &expired), VT_RP_R_REASM_FULL);
	assert_int_equal(expired, 0);
	h = hdr_of(VT_RP_PUT, 200, 2000, 0, 2, 0, 1000);
	assert_int_equal(add(&r, buf, &h, body, 5, &m, &done, &expired), VT_RP_OK);
	assert_int_equal(expired, 1);
	assert_false(vt_rp_reasm_has(&r, 100));
	assert_true(vt_rp_reasm_has(&r, 101));
	assert_true(vt_rp_reasm_has(&r, 200));
	expired = 0;
	/* ... while single-fragment messages still pass. */
	h = hdr_of(VT_RP_PUT, 201, 10, 0, 1, 0, 10);
	assert_int_equal(add(&r, buf, &h, body, 5, &m, &done, &expired), VT_RP_OK);
	assert_true(done);
	vt_rp_msg_release(&m);
	/* Not expired at exactly the deadline, expired one ns after. */
	assert_int_equal(vt_rp_reasm_expire(&r, 5 + VT_RP_REASM_TIMEOUT_NS), 0);
	assert_int_equal(expired, 0);
	h = hdr_of(VT_RP_PUT, 300, 2000, 0, 2, 0, 1000);
	assert_int_equal(add(&r, buf, &h, body, 6 + VT_RP_REASM_TIMEOUT_NS, &m, &done, &expired),
			 VT_RP_OK);
	assert_int_equal(expired, VT_RP_REASM_SLOTS);
	/* The late fragment of an expired message starts it again (and expires). */
	h = hdr_of(VT_RP_PUT, 100, 2000, 1, 2, 1000, 1000);
	assert_int_equal(add(&r, buf, &h, body, 7 + VT_RP_REASM_TIMEOUT_NS, &m, &done, &expired),
			 VT_RP_OK);
	assert_false(done);
	vt_rp_reasm_clear(&r);
	for (unsigned int i = 0; i < VT_RP_REASM_SLOTS; i++)
		assert_false(r.slot[i].used);
}

static void test_window(void **state)
{
	struct vt_rp_window w = { 0 };

	(void)state;
	assert_true(vt_rp_window_check(&w, 0));
	assert_true(vt_rp_window_mark(&w, 5000));
	assert_false(vt_rp_window_mark(&w, 5000));
	assert_true(vt_rp_window_mark(&w, 5001));
	/* Out of order inside the window, each once. */
	assert_true(vt_rp_window_mark(&w, 4990));
	assert_false(vt_rp_window_mark(&w, 4990));
	assert_true(vt_rp_window_mark(&w, 5001 - 1023));
	/* At and below the window's bottom. */
	assert_false(vt_rp_window_check(&w, 5001 - 1024));
	assert_false(vt_rp_window_mark(&w, 5001 - 1024));
	assert_false(vt_rp_window_mark(&w, 0));
	/* Shifts of every size keep the marks that stay inside. */
	for (uint64_t step = 1; step < 1100; step += 37) {
		uint64_t top = w.top;

		assert_true(vt_rp_window_mark(&w, top + step));
		assert_false(vt_rp_window_check(&w, top + step));
		/* The old top: still marked inside the window, or below it. */
		assert_false(vt_rp_window_check(&w, top));
		assert_false(vt_rp_window_mark(&w, top));
		assert_true(vt_rp_window_check(&w, top + step - 1) == (step > 1));
	}
	/* Marks made out of order survive a shift across a word boundary. */
	{
		uint64_t top = w.top;

		assert_true(vt_rp_window_mark(&w, top - 100));
		assert_true(vt_rp_window_mark(&w, top + 70));
		assert_false(vt_rp_window_check(&w, top - 100));
		assert_false(vt_rp_window_check(&w, top));
		assert_true(vt_rp_window_check(&w, top - 99));
		assert_true(vt_rp_window_check(&w, top - 101));
		assert_true(vt_rp_window_check(&w, top + 69));
	}
	/* A jump further than the window forgets everything below it. */
	{
		uint64_t top = w.top;

		assert_true(vt_rp_window_mark(&w, top + 100000));
		assert_false(vt_rp_window_check(&w, top));
		assert_true(vt_rp_window_check(&w, top + 100000 - 1));
		assert_true(vt_rp_window_check(&w, top + 100000 - 1023));
		assert_false(vt_rp_window_check(&w, top + 100000 - 1024));
	}
}

static void test_bodies(void **state)
{
	uint8_t blobs[3][VT_RP_BLOB_MAX], buf[VT_RP_BODY_LIMIT];
	struct vt_rp_put_item put[VT_RP_BATCH_MAX + 1], pback[VT_RP_BATCH_MAX];
	struct vt_rp_get_item get[3], gback[VT_RP_BATCH_MAX];
	uint64_t ids[VT_RP_BATCH_MAX + 1], iback[VT_RP_BATCH_MAX];
	uint16_t st[VT_RP_BATCH_MAX + 1], sback[VT_RP_BATCH_MAX];
	unsigned int n;
	long len;

	(void)state;
	for (int b = 0; b < 3; b++)
		for (int i = 0; i < VT_RP_BLOB_MAX; i++)
			blobs[b][i] = (uint8_t)(b * 100 + i);
	/* PUT */
	put[0] = (struct vt_rp_put_item) { 10, 4136, blobs[0] };
	put[1] = (struct vt_rp_put_item) { UINT64_MAX, 1, blobs[1] };
	put[2] = (struct vt_rp_put_item) { 0, VT_RP_BLOB_MAX, blobs[2] };
	len = vt_rp_put_encode(put, 3, buf, sizeof(buf));
	assert_int_equal(len, 2 + 3 * 10 + 4136 + 1 + VT_RP_BLOB_MAX);
	assert_int_equal(vt_rp_put_decode(buf, (size_t)len, pback, &n), VT_RP_OK);
	assert_int_equal(n, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(pback[i].page_id, put[i].page_id);
		assert_int_equal(pback[i].blob_len, put[i].blob_len);
		assert_memory_equal(pback[i].blob, put[i].blob, put[i].blob_len);
	}
	/* Every truncation and one byte too many are refused. */
	for (long l = 0; l < len; l++)
		assert_int_equal(vt_rp_put_decode(buf, (size_t)l, pback, &n), VT_RP_R_BODY);
	assert_int_equal(vt_rp_put_decode(buf, (size_t)len + 1, pback, &n), VT_RP_R_BODY);
	buf[0] = 0; buf[1] = 0;
	assert_int_equal(vt_rp_put_decode(buf, (size_t)len, pback, &n), VT_RP_R_BODY);
	buf[0] = VT_RP_BATCH_MAX + 1;
	assert_int_equal(vt_rp_put_decode(buf, sizeof(buf), pback, &n), VT_RP_R_BODY);
	buf[0] = 0xff; buf[1] = 0xff;
	assert_int_equal(vt_rp_put_decode(buf, sizeof(buf), pback, &n), VT_RP_R_BODY);
	/* Encoder bounds: 0 or 65 items, an oversize blob, no room. */
	assert_int_equal(vt_rp_put_encode(put, 0, buf, sizeof(buf)), -E2BIG);
	for (int i = 0; i <= VT_RP_BATCH_MAX; i++)
		put[i] = (struct vt_rp_put_item) { (uint64_t)i, 1, blobs[0] };
	assert_int_equal(vt_rp_put_encode(put, VT_RP_BATCH_MAX + 1, buf, sizeof(buf)), -E2BIG);
	assert_true(vt_rp_put_encode(put, VT_RP_BATCH_MAX, buf, sizeof(buf)) > 0);
	put[0].blob_len = VT_RP_BLOB_MAX + 1;
	assert_int_equal(vt_rp_put_encode(put, 1, buf, sizeof(buf)), -E2BIG);
	put[0].blob_len = 100;
	assert_int_equal(vt_rp_put_encode(put, 1, buf, 111), -E2BIG);
	assert_int_equal(vt_rp_put_encode(put, 1, buf, 112), 112);

	/* GET / FREE ids */
	for (int i = 0; i <= VT_RP_BATCH_MAX; i++)
		ids[i] = 0x1000000000ull * (uint64_t)i + 3;
	len = vt_rp_ids_encode(ids, VT_RP_BATCH_MAX, buf, sizeof(buf));
	assert_int_equal(len, 2 + 8 * VT_RP_BATCH_MAX);
	assert_int_equal(vt_rp_ids_decode(buf, (size_t)len, iback, &n), VT_RP_OK);
	assert_int_equal(n, VT_RP_BATCH_MAX);
	assert_memory_equal(iback, ids, sizeof(iback));
	for (long l = 0; l < len; l++)
		assert_int_equal(vt_rp_ids_decode(buf, (size_t)l, iback, &n), VT_RP_R_BODY);
	assert_int_equal(vt_rp_ids_decode(buf, (size_t)len + 1, iback, &n), VT_RP_R_BODY);
	assert_int_equal(vt_rp_ids_encode(ids, VT_RP_BATCH_MAX + 1, buf, sizeof(buf)), -E2BIG);
	assert_int_equal(vt_rp_ids_encode(ids, 0, buf, sizeof(buf)), -E2BIG);
	assert_int_equal(vt_rp_ids_encode(ids, 2, buf, 17), -E2BIG);
	buf[0] = 0; buf[1] = 0;
	assert_int_equal(vt_rp_ids_decode(buf, 2, iback, &n), VT_RP_R_BODY);
	buf[0] = VT_RP_BATCH_MAX + 1;
	assert_int_equal(vt_rp_ids_decode(buf, 2 + 8 * (VT_RP_BATCH_MAX + 1), iback, &n),
			 VT_RP_R_BODY);

	/* Status lists */
	for (int i = 0; i <= VT_RP_BATCH_MAX; i++)
		st[i] = (uint16_t)(i % 3 ? ENOSPC : 0);
	len = vt_rp_status_encode(st, VT_RP_BATCH_MAX, buf, sizeof(buf));
	assert_int_equal(vt_rp_status_decode(buf, (size_t)len, sback, &n), VT_RP_OK);
	assert_int_equal(n, VT_RP_BATCH_MAX);
	assert_memory_equal(sback, st, sizeof(sback));
	for (long l = 0; l < len; l++)
		assert_int_equal(vt_rp_status_decode(buf, (size_t)l, sback, &n), VT_RP_R_BODY);
	assert_int_equal(vt_rp_status_decode(buf, (size_t)len + 1, sback, &n), VT_RP_R_BODY);
	assert_int_equal(vt_rp_status_encode(st, VT_RP_BATCH_MAX + 1, buf, sizeof(buf)), -E2BIG);
	buf[0] = VT_RP_BATCH_MAX + 1; buf[1] = 0;
	assert_int_equal(vt_rp_status_decode(buf, 2 + 2 * (VT_RP_BATCH_MAX + 1), sback, &n),
			 VT_RP_R_BODY);

	/* GET reply */
	get[0] = (struct vt_rp_get_item) { 7, 0, 4136, blobs[0] };
	get[1] = (struct vt_rp_get_item) { 8, ENOENT, 0, NULL };
	get[2] = (struct vt_rp_get_item) { 9, 0, 40, blobs[2] };
	len = vt_rp_get_reply_encode(get, 3, buf, sizeof(buf));
	assert_int_equal(len, (long)vt_rp_get_reply_size(get, 3));
	assert_int_equal(len, 2 + 36 + 4136 + 40);
	assert_int_equal(vt_rp_get_reply_decode(buf, (size_t)len, gback, &n), VT_RP_OK);
	assert_int_equal(n, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(gback[i].page_id, get[i].page_id);
		assert_int_equal(gback[i].status, get[i].status);
		assert_int_equal(gback[i].blob_len, get[i].blob_len);
		if (get[i].blob_len)
			assert_memory_equal(gback[i].blob, get[i].blob, get[i].blob_len);
	}
	for (long l = 0; l < len; l++)
		assert_int_equal(vt_rp_get_reply_decode(buf, (size_t)l, gback, &n), VT_RP_R_BODY);
	assert_int_equal(vt_rp_get_reply_decode(buf, (size_t)len + 1, gback, &n), VT_RP_R_BODY);
	/* A blob with an error status; a blob over the maximum. */
	buf[2 + 8] = ENOENT;
	assert_int_equal(vt_rp_get_reply_decode(buf, (size_t)len, gback, &n), VT_RP_R_BODY);
	buf[2 + 8] = 0;
	buf[2 + 10] = (VT_RP_BLOB_MAX + 1) & 0xff;
	buf[2 + 11] = (VT_RP_BLOB_MAX + 1) >> 8;
	assert_int_equal(vt_rp_get_reply_decode(buf, sizeof(buf), gback, &n), VT_RP_R_BODY);
	get[1].blob_len = 5;
	assert_int_equal(vt_rp_get_reply_encode(get, 3, buf, sizeof(buf)), -EINVAL);
	get[1].blob_len = 0;
	assert_int_equal(vt_rp_get_reply_encode(get, 3, buf, 100), -E2BIG);
	/* An empty reply (nothing fitted) is well-formed. */
	len = vt_rp_get_reply_encode(get, 0, buf, sizeof(buf));
	assert_int_equal(vt_rp_get_reply_decode(buf, (size_t)len, gback, &n), VT_RP_OK);
	assert_int_equal(n, 0);

	/* HELLO reply caps and STAT */
	{
		struct vt_rp_caps c = { 1ull << 30, 12345, 1ull << 40 }, cb;
		struct vt_rp_stat s = { 3, 12000, 1ull << 30, 99, { 1, 2, 3, 4 } }, sb;
		uint8_t cbuf[VT_RP_CAPS_BYTES], sbuf[VT_RP_STAT_BYTES + 16];

		assert_int_equal(vt_rp_caps_encode(&c, cbuf), VT_RP_CAPS_BYTES);
		assert_int_equal(vt_rp_caps_decode(cbuf, sizeof(cbuf), &cb), VT_RP_OK);
		assert_memory_equal(&c, &cb, sizeof(c));
		assert_int_equal(vt_rp_caps_decode(cbuf, sizeof(cbuf) - 1, &cb), VT_RP_R_BODY);
		assert_int_equal(vt_rp_stat_encode(&s, sbuf), VT_RP_STAT_BYTES);
		assert_int_equal(vt_rp_stat_decode(sbuf, VT_RP_STAT_BYTES, &sb), VT_RP_OK);
		assert_memory_equal(&s, &sb, sizeof(s));
		for (size_t l = 0; l < VT_RP_STAT_BYTES; l++)
			assert_int_equal(vt_rp_stat_decode(sbuf, l, &sb), VT_RP_R_BODY);
		/* A newer server's extra counters are skipped. */
		sbuf[32] = VT_RP_DROP_COUNT + 2;
		memset(sbuf + VT_RP_STAT_BYTES, 0xee, 16);
		assert_int_equal(vt_rp_stat_decode(sbuf, VT_RP_STAT_BYTES + 16, &sb), VT_RP_OK);
		assert_memory_equal(&s, &sb, sizeof(s));
		assert_int_equal(vt_rp_stat_decode(sbuf, VT_RP_STAT_BYTES + 15, &sb), VT_RP_R_BODY);
	}
}

static void test_hello(void **state)
{
	g_autofree char *dir = g_dir_make_tmp("remote-proto-XXXXXX", NULL);
	g_autofree char *p1 = g_build_filename(dir, "k1", NULL);
	g_autofree char *p2 = g_build_filename(dir, "k2", NULL);
	uint8_t box[VT_RP_HELLO_BYTES], ns[VT_RP_NS_BYTES], ak[VT_SEAL_KEY_BYTES];
	struct vt_seal_server_key srv, other;
	uint32_t flags;

	(void)state;
	assert_int_equal(vt_seal_server_key_create(p1, &srv, NULL, 0), 0);
	assert_int_equal(vt_seal_server_key_create(p2, &other, NULL, 0), 0);
	unlink(p1);
	unlink(p2);
	rmdir(dir);
	assert_int_equal(vt_rp_hello_seal(srv.pk, NS, KEY, 0xdeadbeef, box), 0);
	assert_int_equal(vt_rp_hello_open(&srv, box, sizeof(box), ns, ak, &flags), VT_RP_OK);
	assert_memory_equal(ns, NS, sizeof(ns));
	assert_memory_equal(ak, KEY, sizeof(ak));
	assert_int_equal(flags, 0xdeadbeef);
	assert_int_equal(vt_rp_hello_open(&other, box, sizeof(box), ns, ak, &flags), VT_RP_R_BODY);
	assert_int_equal(vt_rp_hello_open(&srv, box, sizeof(box) - 1, ns, ak, &flags),
			 VT_RP_R_BODY);
	box[60] ^= 4;
	assert_int_equal(vt_rp_hello_open(&srv, box, sizeof(box), ns, ak, &flags), VT_RP_R_BODY);
}

static void test_reply_check(void **state)
{
	struct vt_rp_dgrams *d = g_new0(struct vt_rp_dgrams, 1);
	uint8_t other_ns[VT_RP_NS_BYTES] = "another-ns-0002", body[40] = { 1 };
	uint8_t key2[VT_SEAL_KEY_BYTES] = { 7 };
	struct vt_rp_dgram dg;

	(void)state;
	assert_int_equal(vt_rp_encode(VT_RP_GET | VT_RP_REPLY, NS, 900, ENOENT, body, sizeof(body),
				      1400, KEY, d), 1);
	assert_int_equal(vt_rp_reply_check(d->buf[0], d->len[0], 1400, KEY, NS, VT_RP_GET, 900,
					   &dg), VT_RP_OK);
	assert_int_equal(dg.hdr.status, ENOENT);
	assert_int_equal(vt_rp_reply_check(d->buf[0], d->len[0], 1400, key2, NS, VT_RP_GET, 900,
					   &dg), VT_RP_R_FORGED);
	assert_int_equal(vt_rp_reply_check(d->buf[0], d->len[0], 1400, KEY, NS, VT_RP_PUT, 900,
					   &dg), VT_RP_R_OP);
	assert_int_equal(vt_rp_reply_check(d->buf[0], d->len[0], 1400, KEY, other_ns, VT_RP_GET,
					   900, &dg), VT_RP_R_NS);
	assert_int_equal(vt_rp_reply_check(d->buf[0], d->len[0], 1400, KEY, NS, VT_RP_GET, 901,
					   &dg), VT_RP_R_SEQ);
	assert_int_equal(vt_rp_reply_check(d->buf[0], d->len[0] - 1, 1400, KEY, NS, VT_RP_GET,
					   900, &dg), VT_RP_R_DGRAM_LEN);
	/* A request is no reply. */
	assert_int_equal(vt_rp_encode(VT_RP_GET, NS, 900, 0, body, sizeof(body), 1400, KEY, d), 1);
	assert_int_equal(vt_rp_reply_check(d->buf[0], d->len[0], 1400, KEY, NS, VT_RP_GET, 900,
					   &dg), VT_RP_R_OP);
	g_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_layout),
		cmocka_unit_test(test_fragments_roundtrip),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_reassembly_edges),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_bodies),
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_reply_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
