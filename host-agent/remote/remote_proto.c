// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The remote tier's wire format (remote_proto.h).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "remote_proto.h"

static const char *const reason_names[VT_RP_R_COUNT] = {
	[VT_RP_OK] = "ok",
	[VT_RP_R_SHORT] = "short",
	[VT_RP_R_LONG] = "long",
	[VT_RP_R_MAGIC] = "magic",
	[VT_RP_R_VERSION] = "version",
	[VT_RP_R_OP] = "op",
	[VT_RP_R_NFRAGS] = "nfrags",
	[VT_RP_R_FRAG] = "frag",
	[VT_RP_R_FRAG_LEN] = "frag_len",
	[VT_RP_R_FRAG_OFF] = "frag_off",
	[VT_RP_R_BODY_LEN] = "body_len",
	[VT_RP_R_DGRAM_LEN] = "dgram_len",
	[VT_RP_R_RESERVED] = "reserved",
	[VT_RP_R_STATUS] = "status",
	[VT_RP_R_HELLO_FRAGS] = "hello_frags",
	[VT_RP_R_FORGED] = "forged",
	[VT_RP_R_SEQ] = "seq",
	[VT_RP_R_NS] = "ns",
	[VT_RP_R_REPLAYED] = "replayed",
	[VT_RP_R_FRAG_DUP] = "frag_dup",
	[VT_RP_R_FRAG_OVERLAP] = "frag_overlap",
	[VT_RP_R_FRAG_MISMATCH] = "frag_mismatch",
	[VT_RP_R_REASM_FULL] = "reasm_full",
	[VT_RP_R_BODY] = "body",
	[VT_RP_R_UNKNOWN_NS] = "unknown_ns",
};

const char *vt_rp_reason_name(enum vt_rp_reason r)
{
	return (unsigned int)r < VT_RP_R_COUNT ? reason_names[r] : "?";
}

/* Little-endian loads and stores at any alignment. */
static uint16_t ld16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static uint32_t ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static void st16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

static void st32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static void st64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

void vt_rp_hdr_read(const uint8_t *buf, struct vt_rp_hdr *h)
{
	memcpy(h, buf, sizeof(*h));
	h->magic = le32toh(h->magic);
	h->seq = le64toh(h->seq);
	h->body_len = le32toh(h->body_len);
	h->frag_len = le16toh(h->frag_len);
	h->status = le16toh(h->status);
	h->frag_off = le32toh(h->frag_off);
	h->reserved = le32toh(h->reserved);
}

void vt_rp_hdr_write(const struct vt_rp_hdr *h, uint8_t *buf)
{
	struct vt_rp_hdr w = *h;

	w.magic = htole32(w.magic);
	w.seq = htole64(w.seq);
	w.body_len = htole32(w.body_len);
	w.frag_len = htole16(w.frag_len);
	w.status = htole16(w.status);
	w.frag_off = htole32(w.frag_off);
	w.reserved = htole32(w.reserved);
	memcpy(buf, &w, sizeof(w));
}

static bool frag_max_ok(size_t frag_max)
{
	return frag_max >= VT_RP_FRAG_MIN && frag_max <= VT_RP_FRAG_LIMIT;
}

enum vt_rp_reason vt_rp_parse(const uint8_t *buf, size_t len, size_t frag_max, bool want_reply,
			      struct vt_rp_dgram *out)
{
	struct vt_rp_hdr *h = &out->hdr;
	uint8_t op;

	if (!frag_max_ok(frag_max))
		frag_max = VT_RP_FRAG_DEFAULT;
	if (len < VT_RP_HDR_BYTES + VT_RP_TAG_BYTES)
		return VT_RP_R_SHORT;
	if (len > VT_RP_DGRAM_MAX)
		return VT_RP_R_LONG;
	vt_rp_hdr_read(buf, h);
	if (h->magic != VT_RP_MAGIC)
		return VT_RP_R_MAGIC;
	if (h->version != VT_RP_VERSION)
		return VT_RP_R_VERSION;
	op = h->op & (uint8_t)~VT_RP_REPLY;
	if (op < VT_RP_HELLO || op > VT_RP_STAT || !!(h->op & VT_RP_REPLY) != want_reply)
		return VT_RP_R_OP;
	if (h->nfrags == 0 || h->nfrags > VT_RP_MAX_FRAGS)
		return VT_RP_R_NFRAGS;
	if (h->frag >= h->nfrags)
		return VT_RP_R_FRAG;
	if (h->reserved != 0)
		return VT_RP_R_RESERVED;
	if (!want_reply && h->status != 0)
		return VT_RP_R_STATUS;
	/* An empty fragment only as the whole of an empty body. */
	if (h->frag_len > frag_max || (h->frag_len == 0 && (h->body_len != 0 || h->nfrags != 1)))
		return VT_RP_R_FRAG_LEN;
	if (h->body_len > (uint64_t)h->nfrags * frag_max ||
	    (h->nfrags == 1 && h->frag_len != h->body_len))
		return VT_RP_R_BODY_LEN;
	if ((uint64_t)h->frag_off + h->frag_len > h->body_len)
		return VT_RP_R_FRAG_OFF;
	if (len != (size_t)VT_RP_HDR_BYTES + h->frag_len + VT_RP_TAG_BYTES)
		return VT_RP_R_DGRAM_LEN;
	if (op == VT_RP_HELLO && h->nfrags != 1)
		return VT_RP_R_HELLO_FRAGS;
	out->frag = buf + VT_RP_HDR_BYTES;
	out->tag = buf + VT_RP_HDR_BYTES + h->frag_len;
	return VT_RP_OK;
}

enum vt_rp_reason vt_rp_verify(const uint8_t *buf, size_t len,
			       const uint8_t access_key[VT_SEAL_KEY_BYTES])
{
	if (len < VT_RP_HDR_BYTES + VT_RP_TAG_BYTES)
		return VT_RP_R_SHORT;
	return vt_seal_tag_ok(access_key, buf, len - VT_RP_TAG_BYTES, buf + len - VT_RP_TAG_BYTES)
		? VT_RP_OK : VT_RP_R_FORGED;
}

int vt_rp_encode(uint8_t op, const uint8_t ns[VT_RP_NS_BYTES], uint64_t seq, uint16_t status,
		 const uint8_t *body, size_t body_len, size_t frag_max,
		 const uint8_t access_key[VT_SEAL_KEY_BYTES], struct vt_rp_dgrams *out)
{
	struct vt_rp_hdr h = {
		.magic = VT_RP_MAGIC, .version = VT_RP_VERSION, .op = op, .seq = seq,
		.status = status,
	};
	size_t nfrags;

	if (!frag_max_ok(frag_max))
		return -EINVAL;
	nfrags = body_len ? (body_len + frag_max - 1) / frag_max : 1;
	if (nfrags > VT_RP_MAX_FRAGS)
		return -E2BIG;
	memcpy(h.ns, ns, VT_RP_NS_BYTES);
	h.nfrags = (uint8_t)nfrags;
	h.body_len = (uint32_t)body_len;
	for (size_t i = 0; i < nfrags; i++) {
		size_t off = i * frag_max;
		size_t flen = body_len - off < frag_max ? body_len - off : frag_max;
		uint8_t *d = out->buf[i];

		h.frag = (uint8_t)i;
		h.frag_off = (uint32_t)off;
		h.frag_len = (uint16_t)flen;
		vt_rp_hdr_write(&h, d);
		if (flen)
			memcpy(d + VT_RP_HDR_BYTES, body + off, flen);
		vt_seal_tag(access_key, d, VT_RP_HDR_BYTES + flen, d + VT_RP_HDR_BYTES + flen);
		out->len[i] = VT_RP_HDR_BYTES + flen + VT_RP_TAG_BYTES;
	}
	out->n = (unsigned int)nfrags;
	return (int)nfrags;
}

/* ---- anti-replay ---- */

static bool window_bit(const struct vt_rp_window *w, uint64_t i)
{
	return w->bits[i / 64] >> (i % 64) & 1;
}

bool vt_rp_window_check(const struct vt_rp_window *w, uint64_t seq)
{
	if (!w->started || seq > w->top)
		return true;
	if (w->top - seq >= VT_RP_WINDOW_BITS)
		return false;
	return !window_bit(w, w->top - seq);
}

static void window_shift(struct vt_rp_window *w, uint64_t by)
{
	const unsigned int words = VT_RP_WINDOW_BITS / 64;
	uint64_t nw[VT_RP_WINDOW_BITS / 64] = { 0 };
	unsigned int wshift, bshift;

	if (by >= VT_RP_WINDOW_BITS) {
		memset(w->bits, 0, sizeof(w->bits));
		return;
	}
	wshift = (unsigned int)(by / 64);
	bshift = (unsigned int)(by % 64);
	/* Bit i moves to bit i + by (seq top - i is now top' - (i + by)). */
	for (unsigned int i = 0; i + wshift < words; i++) {
		nw[i + wshift] |= w->bits[i] << bshift;
		if (bshift && i + wshift + 1 < words)
			nw[i + wshift + 1] |= w->bits[i] >> (64 - bshift);
	}
	memcpy(w->bits, nw, sizeof(nw));
}

bool vt_rp_window_mark(struct vt_rp_window *w, uint64_t seq)
{
	if (!vt_rp_window_check(w, seq))
		return false;
	if (!w->started) {
		w->started = true;
		w->top = seq;
		memset(w->bits, 0, sizeof(w->bits));
	} else if (seq > w->top) {
		window_shift(w, seq - w->top);
		w->top = seq;
	}
	w->bits[(w->top - seq) / 64] |= 1ull << ((w->top - seq) % 64);
	return true;
}

/* ---- reassembly ---- */

static void slot_free(struct vt_rp_reasm_slot *s)
{
	free(s->body);
	memset(s, 0, sizeof(*s));
}

unsigned int vt_rp_reasm_expire(struct vt_rp_reasm *r, uint64_t now_ns)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < VT_RP_REASM_SLOTS; i++) {
		if (r->slot[i].used && r->slot[i].deadline_ns < now_ns) {
			slot_free(&r->slot[i]);
			n++;
		}
	}
	return n;
}

bool vt_rp_reasm_has(const struct vt_rp_reasm *r, uint64_t seq)
{
	for (unsigned int i = 0; i < VT_RP_REASM_SLOTS; i++)
		if (r->slot[i].used && r->slot[i].seq == seq)
			return true;
	return false;
}

void vt_rp_reasm_clear(struct vt_rp_reasm *r)
{
	for (unsigned int i = 0; i < VT_RP_REASM_SLOTS; i++)
		if (r->slot[i].used)
			slot_free(&r->slot[i]);
}

void vt_rp_msg_release(struct vt_rp_msg *m)
{
	free(m->owned);
	m->owned = NULL;
	m->body = NULL;
	m->len = 0;
}

enum vt_rp_reason vt_rp_reasm_add(struct vt_rp_reasm *r, const struct vt_rp_dgram *d,
				  uint64_t now_ns, struct vt_rp_msg *msg, bool *done,
				  unsigned int *expired)
{
	const struct vt_rp_hdr *h = &d->hdr;
	struct vt_rp_reasm_slot *s = NULL, *free_slot = NULL;
	uint32_t off = h->frag_off, len = h->frag_len;

	*done = false;
	*expired += vt_rp_reasm_expire(r, now_ns);
	/* One fragment is all of its body (vt_rp_parse): no copy, no slot. */
	if (h->nfrags == 1) {
		if (vt_rp_reasm_has(r, h->seq))
			return VT_RP_R_FRAG_MISMATCH;
		msg->hdr = *h;
		msg->body = d->frag;
		msg->len = h->frag_len;
		msg->owned = NULL;
		*done = true;
		return VT_RP_OK;
	}
	for (unsigned int i = 0; i < VT_RP_REASM_SLOTS; i++) {
		if (r->slot[i].used && r->slot[i].seq == h->seq)
			s = &r->slot[i];
		else if (!r->slot[i].used && !free_slot)
			free_slot = &r->slot[i];
	}
	if (s) {
		if (s->op != h->op || s->nfrags != h->nfrags || s->body_len != h->body_len)
			return VT_RP_R_FRAG_MISMATCH;
		if (s->got & (1u << h->frag))
			return VT_RP_R_FRAG_DUP;
		for (unsigned int i = 0; i < s->nfrags; i++) {
			if (!(s->got & (1u << i)))
				continue;
			if (off < s->off[i] + s->len[i] && s->off[i] < off + len)
				return VT_RP_R_FRAG_OVERLAP;
		}
	} else {
		if (!free_slot) {
			/*
			 * Full: a peer sends its requests in order, so a partial message
			 * older than this one is a try it gave up on (its fragments were
			 * lost): the oldest goes, counted as expired. A table holds one
			 * namespace's messages (or one server's replies): nobody else's.
			 */
			struct vt_rp_reasm_slot *old = &r->slot[0];

			for (unsigned int i = 1; i < VT_RP_REASM_SLOTS; i++)
				if (r->slot[i].seq < old->seq)
					old = &r->slot[i];
			if (old->seq >= h->seq)
				return VT_RP_R_REASM_FULL;
			slot_free(old);
			(*expired)++;
			free_slot = old;
		}
		s = free_slot;
		s->body = malloc(h->body_len);
		if (!s->body)
			return VT_RP_R_REASM_FULL;
		s->used = true;
		s->op = h->op;
		s->nfrags = h->nfrags;
		s->seq = h->seq;
		s->body_len = h->body_len;
		s->deadline_ns = now_ns + VT_RP_REASM_TIMEOUT_NS;
		s->have = 0;
		s->got = 0;
	}
	memcpy(s->body + off, d->frag, len);
	s->off[h->frag] = off;
	s->len[h->frag] = len;
	s->got |= (uint8_t)(1u << h->frag);
	s->have += len;
	/*
	 * All fragments in: nfrags pairwise disjoint ranges inside the body, each
	 * non-empty; they cover it exactly when their lengths add up to it.
	 */
	if (s->got != (uint8_t)((1u << s->nfrags) - 1))
		return VT_RP_OK;
	if (s->have != s->body_len) {
		slot_free(s);
		return VT_RP_R_BODY_LEN;
	}
	msg->hdr = *h;
	msg->hdr.frag = 0;
	msg->hdr.frag_off = 0;
	msg->hdr.frag_len = 0;
	msg->owned = s->body;
	msg->body = s->body;
	msg->len = s->body_len;
	s->body = NULL;
	slot_free(s);
	*done = true;
	return VT_RP_OK;
}

/* ---- bodies ---- */

int vt_rp_hello_seal(const uint8_t server_pk[VT_SEAL_PK_BYTES], const uint8_t ns[VT_RP_NS_BYTES],
		     const uint8_t access_key[VT_SEAL_KEY_BYTES], uint32_t flags,
		     uint8_t out[VT_RP_HELLO_BYTES])
{
	uint8_t plain[VT_RP_HELLO_PLAIN_BYTES];
	int ret;

	memcpy(plain, ns, VT_RP_NS_BYTES);
	memcpy(plain + VT_RP_NS_BYTES, access_key, VT_SEAL_KEY_BYTES);
	st32(plain + VT_RP_NS_BYTES + VT_SEAL_KEY_BYTES, flags);
	ret = vt_seal_box(server_pk, plain, sizeof(plain), out, VT_RP_HELLO_BYTES);
	memset(plain, 0, sizeof(plain));
	return ret;
}

enum vt_rp_reason vt_rp_hello_open(const struct vt_seal_server_key *key, const uint8_t *body,
				   size_t len, uint8_t ns[VT_RP_NS_BYTES],
				   uint8_t access_key[VT_SEAL_KEY_BYTES], uint32_t *flags)
{
	uint8_t plain[VT_RP_HELLO_PLAIN_BYTES];
	size_t plen;

	if (len != VT_RP_HELLO_BYTES ||
	    vt_seal_box_open(key, body, len, plain, sizeof(plain), &plen) ||
	    plen != sizeof(plain))
		return VT_RP_R_BODY;
	memcpy(ns, plain, VT_RP_NS_BYTES);
	memcpy(access_key, plain + VT_RP_NS_BYTES, VT_SEAL_KEY_BYTES);
	*flags = ld32(plain + VT_RP_NS_BYTES + VT_SEAL_KEY_BYTES);
	memset(plain, 0, sizeof(plain));
	return VT_RP_OK;
}

size_t vt_rp_caps_encode(const struct vt_rp_caps *c, uint8_t out[VT_RP_CAPS_BYTES])
{
	st64(out, c->ns_cap);
	st64(out + 8, c->ns_used);
	st64(out + 16, c->server_free);
	return VT_RP_CAPS_BYTES;
}

enum vt_rp_reason vt_rp_caps_decode(const uint8_t *body, size_t len, struct vt_rp_caps *c)
{
	if (len != VT_RP_CAPS_BYTES)
		return VT_RP_R_BODY;
	c->ns_cap = ld64(body);
	c->ns_used = ld64(body + 8);
	c->server_free = ld64(body + 16);
	return VT_RP_OK;
}

#define PUT_ENTRY 10	/* u64 page_id, u16 blob_len */
#define GET_ENTRY 12	/* u64 page_id, u16 status, u16 blob_len */

long vt_rp_put_encode(const struct vt_rp_put_item *items, unsigned int n, uint8_t *out, size_t cap)
{
	size_t need = 2 + (size_t)n * PUT_ENTRY, pos;

	if (n == 0 || n > VT_RP_BATCH_MAX)
		return -E2BIG;
	for (unsigned int i = 0; i < n; i++) {
		if (items[i].blob_len > VT_RP_BLOB_MAX)
			return -E2BIG;
		need += items[i].blob_len;
	}
	if (need > cap || need > VT_RP_BODY_LIMIT)
		return -E2BIG;
	st16(out, (uint16_t)n);
	pos = 2 + (size_t)n * PUT_ENTRY;
	for (unsigned int i = 0; i < n; i++) {
		st64(out + 2 + i * PUT_ENTRY, items[i].page_id);
		st16(out + 2 + i * PUT_ENTRY + 8, items[i].blob_len);
		if (items[i].blob_len)
			memcpy(out + pos, items[i].blob, items[i].blob_len);
		pos += items[i].blob_len;
	}
	return (long)pos;
}

enum vt_rp_reason vt_rp_put_decode(const uint8_t *body, size_t len, struct vt_rp_put_item *items,
				   unsigned int *n)
{
	size_t pos;
	unsigned int cnt;

	if (len < 2)
		return VT_RP_R_BODY;
	cnt = ld16(body);
	if (cnt == 0 || cnt > VT_RP_BATCH_MAX || len < 2 + (size_t)cnt * PUT_ENTRY)
		return VT_RP_R_BODY;
	pos = 2 + (size_t)cnt * PUT_ENTRY;
	for (unsigned int i = 0; i < cnt; i++) {
		items[i].page_id = ld64(body + 2 + i * PUT_ENTRY);
		items[i].blob_len = ld16(body + 2 + i * PUT_ENTRY + 8);
		/* blob_len is not capped here: the server answers E2BIG per page. */
		if (items[i].blob_len > len - pos)
			return VT_RP_R_BODY;
		items[i].blob = body + pos;
		pos += items[i].blob_len;
	}
	if (pos != len)
		return VT_RP_R_BODY;
	*n = cnt;
	return VT_RP_OK;
}

long vt_rp_ids_encode(const uint64_t *ids, unsigned int n, uint8_t *out, size_t cap)
{
	size_t need = 2 + (size_t)n * 8;

	if (n == 0 || n > VT_RP_BATCH_MAX || need > cap)
		return -E2BIG;
	st16(out, (uint16_t)n);
	for (unsigned int i = 0; i < n; i++)
		st64(out + 2 + i * 8, ids[i]);
	return (long)need;
}

enum vt_rp_reason vt_rp_ids_decode(const uint8_t *body, size_t len, uint64_t *ids, unsigned int *n)
{
	unsigned int cnt;

	if (len < 2)
		return VT_RP_R_BODY;
	cnt = ld16(body);
	if (cnt == 0 || cnt > VT_RP_BATCH_MAX || len != 2 + (size_t)cnt * 8)
		return VT_RP_R_BODY;
	for (unsigned int i = 0; i < cnt; i++)
		ids[i] = ld64(body + 2 + i * 8);
	*n = cnt;
	return VT_RP_OK;
}

long vt_rp_status_encode(const uint16_t *status, unsigned int n, uint8_t *out, size_t cap)
{
	size_t need = 2 + (size_t)n * 2;

	if (n > VT_RP_BATCH_MAX || need > cap)
		return -E2BIG;
	st16(out, (uint16_t)n);
	for (unsigned int i = 0; i < n; i++)
		st16(out + 2 + i * 2, status[i]);
	return (long)need;
}

enum vt_rp_reason vt_rp_status_decode(const uint8_t *body, size_t len, uint16_t *status,
				      unsigned int *n)
{
	unsigned int cnt;

	if (len < 2)
		return VT_RP_R_BODY;
	cnt = ld16(body);
	if (cnt > VT_RP_BATCH_MAX || len != 2 + (size_t)cnt * 2)
		return VT_RP_R_BODY;
	for (unsigned int i = 0; i < cnt; i++)
		status[i] = ld16(body + 2 + i * 2);
	*n = cnt;
	return VT_RP_OK;
}

size_t vt_rp_get_reply_size(const struct vt_rp_get_item *items, unsigned int n)
{
	size_t need = 2 + (size_t)n * GET_ENTRY;

	for (unsigned int i = 0; i < n; i++)
		need += items[i].blob_len;
	return need;
}

long vt_rp_get_reply_encode(const struct vt_rp_get_item *items, unsigned int n, uint8_t *out,
			    size_t cap)
{
	size_t pos;

	if (n > VT_RP_BATCH_MAX)
		return -E2BIG;
	for (unsigned int i = 0; i < n; i++)
		if (items[i].blob_len > VT_RP_BLOB_MAX || (items[i].status && items[i].blob_len))
			return -EINVAL;
	if (vt_rp_get_reply_size(items, n) > cap)
		return -E2BIG;
	st16(out, (uint16_t)n);
	pos = 2 + (size_t)n * GET_ENTRY;
	for (unsigned int i = 0; i < n; i++) {
		uint8_t *e = out + 2 + i * GET_ENTRY;

		st64(e, items[i].page_id);
		st16(e + 8, items[i].status);
		st16(e + 10, items[i].blob_len);
		if (items[i].blob_len)	/* a refused page has no blob (NULL) */
			memcpy(out + pos, items[i].blob, items[i].blob_len);
		pos += items[i].blob_len;
	}
	return (long)pos;
}

enum vt_rp_reason vt_rp_get_reply_decode(const uint8_t *body, size_t len,
					 struct vt_rp_get_item *items, unsigned int *n)
{
	unsigned int cnt;
	size_t pos;

	if (len < 2)
		return VT_RP_R_BODY;
	cnt = ld16(body);
	if (cnt > VT_RP_BATCH_MAX || len < 2 + (size_t)cnt * GET_ENTRY)
		return VT_RP_R_BODY;
	pos = 2 + (size_t)cnt * GET_ENTRY;
	for (unsigned int i = 0; i < cnt; i++) {
		const uint8_t *e = body + 2 + i * GET_ENTRY;

		items[i].page_id = ld64(e);
		items[i].status = ld16(e + 8);
		items[i].blob_len = ld16(e + 10);
		if (items[i].blob_len > VT_RP_BLOB_MAX || items[i].blob_len > len - pos ||
		    (items[i].status && items[i].blob_len))
			return VT_RP_R_BODY;
		items[i].blob = body + pos;
		pos += items[i].blob_len;
	}
	if (pos != len)
		return VT_RP_R_BODY;
	*n = cnt;
	return VT_RP_OK;
}

size_t vt_rp_stat_encode(const struct vt_rp_stat *s, uint8_t out[VT_RP_STAT_BYTES])
{
	st64(out, s->pages);
	st64(out + 8, s->bytes);
	st64(out + 16, s->cap);
	st64(out + 24, s->server_free);
	st16(out + 32, VT_RP_DROP_COUNT);
	for (unsigned int i = 0; i < VT_RP_DROP_COUNT; i++)
		st64(out + 34 + i * 8, s->drops[i]);
	return VT_RP_STAT_BYTES;
}

enum vt_rp_reason vt_rp_stat_decode(const uint8_t *body, size_t len, struct vt_rp_stat *s)
{
	unsigned int cnt;

	if (len < 34)
		return VT_RP_R_BODY;
	cnt = ld16(body + 32);
	if (cnt > 64 || len != 34 + (size_t)cnt * 8)
		return VT_RP_R_BODY;
	memset(s, 0, sizeof(*s));
	s->pages = ld64(body);
	s->bytes = ld64(body + 8);
	s->cap = ld64(body + 16);
	s->server_free = ld64(body + 24);
	for (unsigned int i = 0; i < cnt && i < VT_RP_DROP_COUNT; i++)
		s->drops[i] = ld64(body + 34 + i * 8);
	return VT_RP_OK;
}

enum vt_rp_reason vt_rp_reply_check(const uint8_t *buf, size_t len, size_t frag_max,
				    const uint8_t access_key[VT_SEAL_KEY_BYTES],
				    const uint8_t ns[VT_RP_NS_BYTES], uint8_t op, uint64_t seq,
				    struct vt_rp_dgram *out)
{
	enum vt_rp_reason r = vt_rp_parse(buf, len, frag_max, true, out);

	if (r != VT_RP_OK)
		return r;
	r = vt_rp_verify(buf, len, access_key);
	if (r != VT_RP_OK)
		return r;
	if (out->hdr.op != (op | VT_RP_REPLY))
		return VT_RP_R_OP;
	if (memcmp(out->hdr.ns, ns, VT_RP_NS_BYTES))
		return VT_RP_R_NS;
	if (out->hdr.seq != seq)
		return VT_RP_R_SEQ;
	return VT_RP_OK;
}
