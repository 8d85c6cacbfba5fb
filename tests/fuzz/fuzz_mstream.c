// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target of the migration stream's wire format (host-agent/iface/mstream_proto.c):
 * frames into a destination's and a source's session, PAGES payloads into the
 * iterator, headers into vt_ms_frame_len(). The input:
 *   byte 0      how far both sessions are before the records (the harness plays
 *               both sides with their own sends): bits 0-1: 0 new, 1 HELLO passed,
 *               2 WELCOME passed, 3 and a PAGES frame of 2 pages and its ACK; bit 2
 *               (with 2 or 3): the source has sent END too (the destination has not
 *               seen it), so that END_ACK reaches the source
 *   records     u16 length (LE), u8 flags, the bytes (cut at the input's end)
 *               flags bits 0-1: 0 a frame to the destination, 1 a frame to the
 *               source, 2 a PAGES payload to the iterator, 3 a header to
 *               vt_ms_frame_len(); for frames, fixed before they are given:
 *               bit 2 magic and version, bit 3 the header's length (the bytes'
 *               payload), bit 4 the stream id (HELLO, WELCOME), bit 5 the seq the
 *               session expects, bit 6 a valid tag by the sender's key (last)
 * What a session takes must be whole and in its frame, a PAGES frame's records all
 * good; a session answers what it takes as a real side would (WELCOME to a HELLO, ACK
 * to PAGES, END_ACK to END) and its own checks pass that answer; a dead session
 * refuses everything with -EPIPE. A payload the iterator takes is rebuilt, byte for
 * byte, by the builder.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "fuzz_dgram_records.h"
#include "mstream_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BACKEND (4ull << 20)
#define NPAGES (BACKEND / VT_MS_PAGE_SIZE)

enum { TO_DST, TO_SRC, TO_ITER, TO_HDR };
enum {
	FIX_MAGIC = 4, FIX_LENGTH = 8, FIX_ID = 16, FIX_SEQ = 32, FIX_TAG = 64,
};

static const uint8_t SID[VT_MS_ID_BYTES] = "fuzz stream id.";

struct sides {
	struct vt_ms_keys keys;
	struct vt_ms_session src, dst;
	uint8_t frame[512];
	size_t flen;
};

static void put(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* @from sends @m; it must pass its own checks. */
static void send_ok(struct sides *x, struct vt_ms_session *from, const struct vt_ms_msg *m)
{
	uint8_t payload[VT_MS_ABORT_BYTES];
	size_t len;

	assert(vt_ms_payload_encode(m, payload, sizeof(payload), &len) == 0);
	assert(vt_ms_session_send(from, m->type, payload, len, x->frame, sizeof(x->frame),
				  &x->flen, NULL, 0) == 0);
}

static void take_ok(struct sides *x, struct vt_ms_session *to)
{
	struct vt_ms_msg m;

	assert(vt_ms_session_recv(to, x->frame, x->flen, &m, NULL, 0) == 0);
}

/* The source sends 2 pages, the destination takes them and ACKs, the source takes that. */
static void pages_and_ack(struct sides *x)
{
	static const uint8_t word[8] = "12345678", comp[5] = "lz4!!";
	struct vt_ms_page pg[2] = {
		{ .index = 1, .kind = VT_MS_KIND_SAME, .len = 8, .data = word },
		{ .index = 2, .kind = VT_MS_KIND_COMPRESSED, .codec = VT_MS_CODEC_LZ4,
		  .len = 5, .data = comp },
	};
	struct vt_ms_msg m = { .type = VT_MS_ACK, .ack = { 2, 1, 1, 1 } };
	struct vt_ms_pages_builder b;
	size_t len;

	assert(vt_ms_pages_begin(&b, x->frame + VT_MS_HDR_BYTES,
				 sizeof(x->frame) - VT_MS_HDR_BYTES - VT_MS_TAG_BYTES) == 0);
	for (int i = 0; i < 2; i++)
		assert(vt_ms_pages_add(&b, &pg[i], NULL, 0) == 0);
	assert(vt_ms_pages_finish(&b, &len) == 0);
	assert(vt_ms_session_send(&x->src, VT_MS_PAGES, x->frame + VT_MS_HDR_BYTES, len,
				  x->frame, sizeof(x->frame), &x->flen, NULL, 0) == 0);
	take_ok(x, &x->dst);
	send_ok(x, &x->dst, &m);
	take_ok(x, &x->src);
}

static void setup(struct sides *x, unsigned int depth, bool end)
{
	static const uint8_t key[VT_MS_KEY_BYTES] = "the fuzzer's migration secret.";
	struct vt_ms_msg m = { .type = VT_MS_HELLO };

	assert(vt_ms_keys_derive(key, &x->keys) == 0);
	assert(vt_ms_session_init(&x->src, VT_MS_SOURCE, &x->keys, SID, BACKEND, VT_MS_PAGE_SIZE,
				  NULL, 0) == 0);
	assert(vt_ms_session_init(&x->dst, VT_MS_DESTINATION, &x->keys, SID, BACKEND,
				  VT_MS_PAGE_SIZE, NULL, 0) == 0);
	if (depth < 1)
		return;
	memcpy(m.hello.stream_id, SID, sizeof(SID));
	m.hello.backend_size = BACKEND;
	m.hello.page_size = VT_MS_PAGE_SIZE;
	send_ok(x, &x->dst, &m);
	take_ok(x, &x->src);
	if (depth < 2)
		return;
	m = (struct vt_ms_msg){ .type = VT_MS_WELCOME, .welcome.pages_hint = 2 };
	memcpy(m.welcome.stream_id, SID, sizeof(SID));
	send_ok(x, &x->src, &m);
	take_ok(x, &x->dst);
	if (depth >= 3)
		pages_and_ack(x);
	if (end) {
		m = (struct vt_ms_msg){ .type = VT_MS_END,
					.end = { x->src.pages, x->src.frames } };
		send_ok(x, &x->src, &m);
	}
}

/* Every record of an accepted PAGES payload, and the builder makes the same bytes. */
static void walk_pages(const uint8_t *payload, size_t len)
{
	struct vt_ms_pages_builder b;
	struct vt_ms_pages_iter it;
	struct vt_ms_page pg;
	uint8_t *again;
	size_t len2;
	int ret;

	if (vt_ms_pages_iter_init(&it, payload, len, NPAGES, NULL, 0))
		return;
	again = malloc(len);
	assert(vt_ms_pages_begin(&b, again, len) == 0);
	while ((ret = vt_ms_pages_next(&it, &pg, NULL, 0)) == 1) {
		assert(pg.data >= payload && pg.len <= len &&
		       (size_t)(pg.data - payload) <= len - pg.len);
		assert(pg.index < NPAGES && pg.tier < VT_MS_TIERS_MAX && pg.kind <= VT_MS_KIND_RAW);
		assert(vt_ms_pages_add(&b, &pg, NULL, 0) == 0);
	}
	if (ret == 0) {
		assert(it.done == it.count && it.off == len);
		assert(vt_ms_pages_finish(&b, &len2) == 0);
		assert(len2 == len && memcmp(again, payload, len) == 0);
	} else {
		assert(ret < 0);
		assert(vt_ms_pages_next(&it, &pg, NULL, 0) == ret);
	}
	free(again);
}

/* The session took @m from @f: check it, and answer as that side would. */
static void answer(struct sides *x, struct vt_ms_session *s, const struct vt_ms_msg *m,
		   const uint8_t *f, size_t len)
{
	struct vt_ms_msg a;

	assert(m->payload == f + VT_MS_HDR_BYTES && m->len == len - VT_MS_HDR_BYTES -
	       VT_MS_TAG_BYTES);
	switch (m->type) {
	case VT_MS_HELLO:
		assert(s->role == VT_MS_SOURCE && s->state == VT_MS_ST_HELLO);
		a = (struct vt_ms_msg){ .type = VT_MS_WELCOME, .welcome.pages_hint = NPAGES };
		memcpy(a.welcome.stream_id, SID, sizeof(SID));
		send_ok(x, s, &a);
		break;
	case VT_MS_PAGES:
		assert(s->role == VT_MS_DESTINATION && m->pages >= 1 && m->pages <= VT_MS_PAGES_MAX);
		walk_pages(m->payload, m->len);
		a = (struct vt_ms_msg){ .type = VT_MS_ACK,
					.ack = { s->pages, s->pages - s->ack.dropped, s->ack.dropped,
						 s->last_pages_seq } };
		send_ok(x, s, &a);
		break;
	case VT_MS_END:
		assert(s->state == VT_MS_ST_END && m->end.pages == s->pages);
		a = (struct vt_ms_msg){ .type = VT_MS_END_ACK,
					.end_ack = { s->pages, s->pages - s->ack.dropped,
						     s->ack.dropped, 0 } };
		send_ok(x, s, &a);
		assert(vt_ms_session_done(s) && !vt_ms_session_dead(s));
		break;
	case VT_MS_ACK:
		assert(s->role == VT_MS_SOURCE && s->ack.received <= s->pages);
		break;
	case VT_MS_ABORT:
		assert(vt_ms_session_dead(s) && m->abort.error < 0);
		assert(memchr(m->abort.message, 0, sizeof(m->abort.message)));
		break;
	default:
		assert(m->type == VT_MS_WELCOME || m->type == VT_MS_END_ACK);
	}
}

static void fix(struct sides *x, struct vt_ms_session *to, uint8_t flags, uint8_t *f, size_t len)
{
	const uint8_t *key = to->role == VT_MS_SOURCE ? x->keys.d2s : x->keys.s2d;

	if (len < VT_MS_HDR_BYTES + VT_MS_TAG_BYTES)
		return;
	if (flags & FIX_MAGIC) {
		put(f, VT_MS_MAGIC, 4);
		f[4] = VT_MS_VERSION;
	}
	if (flags & FIX_LENGTH)
		put(f + 8, len - VT_MS_HDR_BYTES - VT_MS_TAG_BYTES, 4);
	if ((flags & FIX_ID) && (f[5] == VT_MS_HELLO || f[5] == VT_MS_WELCOME) &&
	    len >= VT_MS_HDR_BYTES + VT_MS_ID_BYTES + VT_MS_TAG_BYTES)
		memcpy(f + VT_MS_HDR_BYTES, SID, sizeof(SID));
	if (flags & FIX_SEQ)
		put(f + 16, to->recv_seq, 8);
	if (flags & FIX_TAG)
		crypto_generichash(f + len - VT_MS_TAG_BYTES, VT_MS_TAG_BYTES, f,
				   len - VT_MS_TAG_BYTES, key, VT_MS_KEY_BYTES);
}

static void frame_to(struct sides *x, struct vt_ms_session *to, uint8_t flags, uint8_t *f,
		     size_t len)
{
	bool dead = vt_ms_session_dead(to) || to->state == VT_MS_ST_DONE;
	uint64_t seq = to->recv_seq;
	struct vt_ms_msg m;
	int ret;

	fix(x, to, flags, f, len);
	ret = vt_ms_session_recv(to, f, len, &m, NULL, 0);
	if (dead) {
		assert(ret == -EPIPE);
		return;
	}
	if (ret) {
		assert(ret < 0 && ret != -EPIPE && vt_ms_session_dead(to));
		return;
	}
	assert(to->recv_seq == seq + 1 && m.seq == seq);
	answer(x, to, &m, f, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sides *x;
	uint8_t flags, *d;
	size_t len;

	if (size < 1)
		return 0;
	x = calloc(1, sizeof(*x));
	setup(x, data[0] & 3, data[0] & 4);
	data++;
	size--;
	while ((d = fuzz_next_dgram(&data, &size, &len, &flags))) {
		size_t flen;

		switch (flags & 3) {
		case TO_DST:
			frame_to(x, &x->dst, flags, d, len);
			break;
		case TO_SRC:
			frame_to(x, &x->src, flags, d, len);
			break;
		case TO_ITER:
			walk_pages(d, len);
			break;
		case TO_HDR:
			if (len >= VT_MS_HDR_BYTES && vt_ms_frame_len(d, &flen, NULL, 0) == 0)
				assert(flen >= VT_MS_HDR_BYTES + VT_MS_END_BYTES + VT_MS_TAG_BYTES &&
				       flen <= VT_MS_FRAME_MAX);
			break;
		}
		free(d);
	}
	vt_ms_wipe(x, sizeof(*x));
	free(x);
	return 0;
}
