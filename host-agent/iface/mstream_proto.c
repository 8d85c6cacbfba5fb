// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The migration stream's wire format (mstream_proto.h,
 * docs/reference/migration-stream.md).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include <vtier/profile.h>

#include "errbuf.h"
#include "mstream_proto.h"

_Static_assert(VT_MS_KEY_BYTES == crypto_kdf_KEYBYTES, "KDF key size");
_Static_assert(VT_MS_KEY_BYTES >= crypto_generichash_KEYBYTES_MIN &&
	       VT_MS_KEY_BYTES <= crypto_generichash_KEYBYTES_MAX, "tag key size");
_Static_assert(VT_MS_TAG_BYTES >= crypto_generichash_BYTES_MIN, "tag size");
_Static_assert(VT_MS_TIERS_MAX == VTIER_PROFILE_TIERS_MAX, "a record's tier indexes the profile's table");
_Static_assert(VT_MS_PAGES_BYTES_MAX <= VT_MS_PAYLOAD_MAX, "a full PAGES frame fits the payload max");
_Static_assert(VT_MS_PAGE_SIZE / 8 * 8 == VT_MS_PAGE_SIZE, "records stay 8-byte aligned");

#define KDF_CONTEXT "vtiermst"
_Static_assert(sizeof(KDF_CONTEXT) - 1 == crypto_kdf_CONTEXTBYTES, "KDF context size");
enum { SUBKEY_D2S = 1, SUBKEY_S2D = 2 };

/* The smallest PAGES payload: its head and one record of 1..8 data bytes. */
#define PAGES_BYTES_MIN (VT_MS_PAGES_HEAD_BYTES + VT_MS_REC_BYTES + 8)
#define TYPE_MAX VT_MS_ABORT

typedef unsigned long long ull;

/* ---- bytes ---- */

/* @n bytes little-endian at @p, at any alignment, on any host. */
static uint64_t get_le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void put_le(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* 32 hex digits of a stream id. */
static void id_hex(const uint8_t id[VT_MS_ID_BYTES], char out[2 * VT_MS_ID_BYTES + 1])
{
	for (unsigned int i = 0; i < VT_MS_ID_BYTES; i++)
		snprintf(out + 2 * i, 3, "%02x", id[i]);
}

/* ---- names ---- */

const char *vt_ms_type_name(uint8_t type)
{
	static const char *const names[TYPE_MAX + 1] = {
		[VT_MS_HELLO] = "HELLO", [VT_MS_WELCOME] = "WELCOME", [VT_MS_PAGES] = "PAGES",
		[VT_MS_ACK] = "ACK", [VT_MS_END] = "END", [VT_MS_END_ACK] = "END_ACK",
		[VT_MS_ABORT] = "ABORT",
	};

	return type >= VT_MS_HELLO && type <= TYPE_MAX ? names[type] : "unknown";
}

const char *vt_ms_state_name(enum vt_ms_state st)
{
	static const char *const names[] = {
		[VT_MS_ST_START] = "start", [VT_MS_ST_HELLO] = "hello", [VT_MS_ST_PAGES] = "pages",
		[VT_MS_ST_END] = "end", [VT_MS_ST_DONE] = "done",
	};

	return (unsigned int)st <= VT_MS_ST_DONE ? names[st] : "unknown";
}

const char *vt_ms_role_name(enum vt_ms_role role)
{
	return role == VT_MS_SOURCE ? "source" : role == VT_MS_DESTINATION ? "destination" : "unknown";
}

/* ---- keys ---- */

static int sodium_up(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

int vt_ms_secret_new(struct vt_ms_secret *secret)
{
	int ret = sodium_up();

	if (ret)
		return ret;
	randombytes_buf(secret->key, sizeof(secret->key));
	randombytes_buf(secret->stream_id, sizeof(secret->stream_id));
	return 0;
}

int vt_ms_keys_derive(const uint8_t key[VT_MS_KEY_BYTES], struct vt_ms_keys *keys)
{
	int ret = sodium_up();

	if (ret)
		return ret;
	if (crypto_kdf_derive_from_key(keys->d2s, sizeof(keys->d2s), SUBKEY_D2S, KDF_CONTEXT, key) ||
	    crypto_kdf_derive_from_key(keys->s2d, sizeof(keys->s2d), SUBKEY_S2D, KDF_CONTEXT, key)) {
		sodium_memzero(keys, sizeof(*keys));
		return -EIO;
	}
	return 0;
}

void vt_ms_wipe(void *p, size_t len)
{
	sodium_memzero(p, len);
}

/* Keyed BLAKE2b-128 of the frame's first @len bytes (header and payload). */
static void tag_of(const uint8_t key[VT_MS_KEY_BYTES], const uint8_t *frame, size_t len,
		   uint8_t tag[VT_MS_TAG_BYTES])
{
	/* cannot fail with these sizes (static asserts above) */
	crypto_generichash(tag, VT_MS_TAG_BYTES, frame, len, key, VT_MS_KEY_BYTES);
}

/* ---- the header ---- */

void vt_ms_hdr_read(const uint8_t buf[VT_MS_HDR_BYTES], struct vt_ms_hdr *h)
{
	h->magic = (uint32_t)get_le(buf, 4);
	h->version = buf[4];
	h->type = buf[5];
	h->reserved0 = (uint16_t)get_le(buf + 6, 2);
	h->length = (uint32_t)get_le(buf + 8, 4);
	h->reserved1 = (uint32_t)get_le(buf + 12, 4);
	h->seq = get_le(buf + 16, 8);
}

void vt_ms_hdr_write(const struct vt_ms_hdr *h, uint8_t buf[VT_MS_HDR_BYTES])
{
	put_le(buf, h->magic, 4);
	buf[4] = h->version;
	buf[5] = h->type;
	put_le(buf + 6, h->reserved0, 2);
	put_le(buf + 8, h->length, 4);
	put_le(buf + 12, h->reserved1, 4);
	put_le(buf + 16, h->seq, 8);
}

/* A fixed type's payload size; 0 for PAGES and unknown types. */
static size_t fixed_size(uint8_t type)
{
	switch (type) {
	case VT_MS_HELLO:
		return VT_MS_HELLO_BYTES;
	case VT_MS_WELCOME:
		return VT_MS_WELCOME_BYTES;
	case VT_MS_ACK:
		return VT_MS_ACK_BYTES;
	case VT_MS_END:
		return VT_MS_END_BYTES;
	case VT_MS_END_ACK:
		return VT_MS_END_ACK_BYTES;
	case VT_MS_ABORT:
		return VT_MS_ABORT_BYTES;
	}
	return 0;
}

int vt_ms_frame_len(const uint8_t hdr[VT_MS_HDR_BYTES], size_t *frame_len,
		    char *err, size_t err_len)
{
	const char *name;
	struct vt_ms_hdr h;
	size_t want;

	vt_ms_hdr_read(hdr, &h);
	if (h.magic != VT_MS_MAGIC)
		return vt_err_set(-EPROTO, err, err_len,
				  "header: magic 0x%08x is not the migration stream's (0x%08x, \"VTMS\")",
				  h.magic, VT_MS_MAGIC);
	if (h.version != VT_MS_VERSION)
		return vt_err_set(-EPROTO, err, err_len,
				  "header: version %u not supported (this side speaks %u)",
				  h.version, VT_MS_VERSION);
	if (h.type < VT_MS_HELLO || h.type > TYPE_MAX)
		return vt_err_set(-EPROTO, err, err_len,
				  "header: type %u unknown (1 HELLO .. 7 ABORT)", h.type);
	name = vt_ms_type_name(h.type);
	if (h.reserved0 || h.reserved1)
		return vt_err_set(-EPROTO, err, err_len,
				  "%s header: reserved fields 0x%04x and 0x%08x (both must be 0)",
				  name, h.reserved0, h.reserved1);
	if (h.length > VT_MS_PAYLOAD_MAX)
		return vt_err_set(-EMSGSIZE, err, err_len,
				  "%s header: payload of %u bytes, over the maximum of %u",
				  name, h.length, VT_MS_PAYLOAD_MAX);
	want = fixed_size(h.type);
	if (want && h.length != want)
		return vt_err_set(-EMSGSIZE, err, err_len,
				  "%s header: payload of %u bytes (a %s has %zu)",
				  name, h.length, name, want);
	if (!want && (h.length < PAGES_BYTES_MIN || h.length > VT_MS_PAGES_BYTES_MAX ||
		      h.length % 8))
		return vt_err_set(-EMSGSIZE, err, err_len,
				  "PAGES header: payload of %u bytes (must be a multiple of 8 in %u..%u)",
				  h.length, PAGES_BYTES_MIN, VT_MS_PAGES_BYTES_MAX);
	*frame_len = VT_MS_HDR_BYTES + h.length + VT_MS_TAG_BYTES;
	return 0;
}

/* ---- PAGES records ---- */

static const char *kind_name(uint8_t kind)
{
	return kind == VT_MS_KIND_COMPRESSED ? "compressed" :
	       kind == VT_MS_KIND_SAME ? "same-filled" : kind == VT_MS_KIND_RAW ? "raw" : "unknown";
}

/*
 * Record @i's own fields and its page against @backend_pages and the @n pages
 * of the frame before it: the one rule of the builder and the iterator.
 */
static int check_page(const struct vt_ms_page *p, uint32_t i, uint64_t backend_pages,
		      const uint64_t *seen, uint32_t n, char *err, size_t err_len)
{
	uint32_t want;

	switch (p->kind) {
	case VT_MS_KIND_COMPRESSED:
		if (p->codec < VT_MS_CODEC_LZ4 || p->codec > VT_MS_CODEC_DEFLATE)
			return vt_err_set(-EPROTO, err, err_len,
					  "PAGES record %u (page %llu): codec %u for a compressed page "
					  "(1 lz4, 2 zstd, 3 deflate)", i, (ull)p->index, p->codec);
		if (p->len < 1 || p->len > VT_MS_PAGE_SIZE)
			return vt_err_set(-EMSGSIZE, err, err_len,
					  "PAGES record %u (page %llu): a compressed page of %u bytes "
					  "(must be 1..%u)", i, (ull)p->index, p->len, VT_MS_PAGE_SIZE);
		break;
	case VT_MS_KIND_SAME:
	case VT_MS_KIND_RAW:
		want = p->kind == VT_MS_KIND_SAME ? 8 : VT_MS_PAGE_SIZE;
		if (p->codec != VT_MS_CODEC_NONE)
			return vt_err_set(-EPROTO, err, err_len,
					  "PAGES record %u (page %llu): codec %u for a %s page (must be 0)",
					  i, (ull)p->index, p->codec, kind_name(p->kind));
		if (p->len != want)
			return vt_err_set(-EMSGSIZE, err, err_len,
					  "PAGES record %u (page %llu): a %s page of %u bytes (must be %u)",
					  i, (ull)p->index, kind_name(p->kind), p->len, want);
		break;
	default:
		return vt_err_set(-EPROTO, err, err_len,
				  "PAGES record %u (page %llu): kind %u (0 compressed, 1 same-filled, "
				  "2 raw)", i, (ull)p->index, p->kind);
	}
	if (p->tier >= VT_MS_TIERS_MAX)
		return vt_err_set(-ERANGE, err, err_len,
				  "PAGES record %u (page %llu): tier %u (must be < %u)",
				  i, (ull)p->index, p->tier, VT_MS_TIERS_MAX);
	if (p->index >= backend_pages)
		return vt_err_set(-ERANGE, err, err_len,
				  "PAGES record %u: page %llu is past the backend's %llu pages",
				  i, (ull)p->index, (ull)backend_pages);
	for (uint32_t j = 0; j < n; j++)
		if (seen[j] == p->index)
			return vt_err_set(-EEXIST, err, err_len,
					  "PAGES record %u: page %llu again (record %u has it; a page "
					  "travels at most once per frame)", i, (ull)p->index, j);
	return 0;
}

int vt_ms_pages_begin(struct vt_ms_pages_builder *b, uint8_t *buf, size_t cap)
{
	b->buf = buf;
	b->cap = cap;
	b->len = VT_MS_PAGES_HEAD_BYTES;
	b->count = 0;
	return cap < PAGES_BYTES_MIN ? -ENOSPC : 0;
}

int vt_ms_pages_add(struct vt_ms_pages_builder *b, const struct vt_ms_page *p,
		    char *err, size_t err_len)
{
	size_t need = VT_MS_REC_BYTES + pad8(p->len);
	uint8_t *r;
	int ret;

	if (b->count >= VT_MS_PAGES_MAX)
		return vt_err_set(-ENOSPC, err, err_len, "PAGES: the frame has its %u records",
				  VT_MS_PAGES_MAX);
	ret = check_page(p, b->count, UINT64_MAX, b->index, b->count, err, err_len);
	if (ret)
		return ret;
	if (b->len > b->cap || need > b->cap - b->len)
		return vt_err_set(-ENOSPC, err, err_len,
				  "PAGES: record %u (page %llu) needs %zu bytes, the buffer has %zu left",
				  b->count, (ull)p->index, need, b->len > b->cap ? 0 : b->cap - b->len);
	r = b->buf + b->len;
	memset(r, 0, need);
	put_le(r, p->index, 8);
	r[8] = p->kind;
	r[9] = p->codec;
	r[10] = p->tier;
	put_le(r + 12, p->len, 4);
	put_le(r + 16, p->crc, 4);
	memcpy(r + VT_MS_REC_BYTES, p->data, p->len);
	b->index[b->count++] = p->index;
	b->len += need;
	return 0;
}

int vt_ms_pages_finish(struct vt_ms_pages_builder *b, size_t *len)
{
	if (!b->count)
		return -ENODATA;
	put_le(b->buf, b->count, 4);
	put_le(b->buf + 4, 0, 4);
	*len = b->len;
	return 0;
}

/* The head of a PAGES payload: count, reserved, a length that many records can fill. */
static int check_head(struct vt_ms_pages_iter *it, char *err, size_t err_len)
{
	size_t body = it->len - VT_MS_PAGES_HEAD_BYTES;
	uint32_t reserved;

	it->count = (uint32_t)get_le(it->payload, 4);
	reserved = (uint32_t)get_le(it->payload + 4, 4);
	if (it->count < 1 || it->count > VT_MS_PAGES_MAX)
		return vt_err_set(-EPROTO, err, err_len, "PAGES: count %u (must be 1..%u)",
				  it->count, VT_MS_PAGES_MAX);
	if (reserved)
		return vt_err_set(-EPROTO, err, err_len,
				  "PAGES: reserved field 0x%08x after the count (must be 0)", reserved);
	if (body < (size_t)it->count * (VT_MS_REC_BYTES + 8))
		return vt_err_set(-EMSGSIZE, err, err_len,
				  "PAGES: %u records need at least %zu bytes, the payload has %zu",
				  it->count, VT_MS_PAGES_HEAD_BYTES +
				  (size_t)it->count * (VT_MS_REC_BYTES + 8), it->len);
	if (body > (size_t)it->count * (VT_MS_REC_BYTES + VT_MS_PAGE_SIZE))
		return vt_err_set(-EMSGSIZE, err, err_len,
				  "PAGES: payload of %zu bytes, more than %u records can fill (%zu)",
				  it->len, it->count, VT_MS_PAGES_HEAD_BYTES +
				  (size_t)it->count * (VT_MS_REC_BYTES + VT_MS_PAGE_SIZE));
	return 0;
}

int vt_ms_pages_iter_init(struct vt_ms_pages_iter *it, const uint8_t *payload, size_t len,
			  uint64_t backend_pages, char *err, size_t err_len)
{
	it->payload = payload;
	it->len = len;
	it->off = VT_MS_PAGES_HEAD_BYTES;
	it->count = 0;
	it->done = 0;
	it->backend_pages = backend_pages;
	if (len < VT_MS_PAGES_HEAD_BYTES)
		it->error = vt_err_set(-EMSGSIZE, err, err_len,
				       "PAGES: payload of %zu bytes, shorter than its %u-byte head",
				       len, VT_MS_PAGES_HEAD_BYTES);
	else
		it->error = check_head(it, err, err_len);
	return it->error;
}

/* The next record at it->off, checked; it->off moves past it. */
static int read_record(struct vt_ms_pages_iter *it, struct vt_ms_page *p, char *err,
		       size_t err_len)
{
	const uint8_t *r = it->payload + it->off;
	size_t left = it->len - it->off, padded;
	uint32_t i = it->done;
	uint32_t res32;
	int ret;

	if (left < VT_MS_REC_BYTES)
		return vt_err_set(-EMSGSIZE, err, err_len,
				  "PAGES record %u: its %u-byte head runs past the payload (%zu bytes "
				  "left)", i, VT_MS_REC_BYTES, left);
	p->index = get_le(r, 8);
	p->kind = r[8];
	p->codec = r[9];
	p->tier = r[10];
	p->len = (uint32_t)get_le(r + 12, 4);
	p->crc = (uint32_t)get_le(r + 16, 4);
	res32 = (uint32_t)get_le(r + 20, 4);
	if (r[11] || res32)
		return vt_err_set(-EPROTO, err, err_len,
				  "PAGES record %u (page %llu): reserved fields 0x%02x and 0x%08x "
				  "(both must be 0)", i, (ull)p->index, r[11], res32);
	ret = check_page(p, i, it->backend_pages, it->index, i, err, err_len);
	if (ret)
		return ret;
	padded = pad8(p->len);
	if (padded > left - VT_MS_REC_BYTES)
		return vt_err_set(-EMSGSIZE, err, err_len,
				  "PAGES record %u (page %llu): %u data bytes (%zu with padding) run "
				  "past the payload (%zu bytes left)", i, (ull)p->index, p->len, padded,
				  left - VT_MS_REC_BYTES);
	p->data = r + VT_MS_REC_BYTES;
	for (size_t j = p->len; j < padded; j++)
		if (p->data[j])
			return vt_err_set(-EPROTO, err, err_len,
					  "PAGES record %u (page %llu): padding byte %zu is 0x%02x "
					  "(must be 0)", i, (ull)p->index, j - p->len, p->data[j]);
	it->off += VT_MS_REC_BYTES + padded;
	return 0;
}

int vt_ms_pages_next(struct vt_ms_pages_iter *it, struct vt_ms_page *p,
		     char *err, size_t err_len)
{
	int ret;

	if (it->error)
		return vt_err_set(it->error, err, err_len,
				  "PAGES: refused at record %u; the iterator stops there", it->done);
	if (it->done == it->count) {
		if (it->off == it->len)
			return 0;
		it->error = -EPROTO;
		return vt_err_set(-EPROTO, err, err_len,
				  "PAGES: its %u records end at byte %zu of a %zu-byte payload (they "
				  "must fill it)", it->count, it->off, it->len);
	}
	ret = read_record(it, p, err, err_len);
	if (ret) {
		it->error = ret;
		return ret;
	}
	it->index[it->done++] = p->index;
	return 1;
}

/* ---- fixed payloads ---- */

/* -4095..-1, or 0 too when @zero_ok. */
static bool errno_ok(int32_t v, bool zero_ok)
{
	return (v < 0 && v >= -VT_MS_ERRNO_MAX) || (zero_ok && v == 0);
}

/* A fixed payload's reserved field of @bytes bytes at @p: 0, or the refusal naming it. */
static int reserved_zero(const char *type, const uint8_t *p, unsigned int bytes, char *err,
			 size_t err_len)
{
	uint64_t v = get_le(p, bytes);

	return v ? vt_err_set(-EPROTO, err, err_len, "%s: reserved field 0x%0*llx (must be 0)",
			      type, (int)(2 * bytes), (ull)v) : 0;
}

/* An errno field (@what names it): 0 when errno_ok(), else the refusal. */
static int errno_field(const char *what, int32_t v, bool zero_ok, char *err, size_t err_len)
{
	return errno_ok(v, zero_ok) ? 0 :
	       vt_err_set(-ERANGE, err, err_len, "%s %d (must be %s-%d..-1)", what, v,
			  zero_ok ? "0 or " : "", VT_MS_ERRNO_MAX);
}

/* ACK's and END_ACK's first 24 bytes: received, installed, dropped. */
static void put_counts(uint8_t *out, uint64_t received, uint64_t installed, uint64_t dropped)
{
	put_le(out, received, 8);
	put_le(out + 8, installed, 8);
	put_le(out + 16, dropped, 8);
}

static void get_counts(const uint8_t *p, uint64_t *received, uint64_t *installed,
		       uint64_t *dropped)
{
	*received = get_le(p, 8);
	*installed = get_le(p + 8, 8);
	*dropped = get_le(p + 16, 8);
}

int vt_ms_payload_encode(const struct vt_ms_msg *m, uint8_t *out, size_t cap, size_t *len)
{
	size_t n = fixed_size(m->type), i;

	if (!n)
		return -EINVAL;
	if (cap < n)
		return -ENOBUFS;
	memset(out, 0, n);
	switch (m->type) {
	case VT_MS_HELLO:
		memcpy(out, m->hello.stream_id, VT_MS_ID_BYTES);
		put_le(out + 16, m->hello.backend_size, 8);
		put_le(out + 24, m->hello.page_size, 4);
		break;
	case VT_MS_WELCOME:
		memcpy(out, m->welcome.stream_id, VT_MS_ID_BYTES);
		put_le(out + 16, m->welcome.pages_hint, 8);
		break;
	case VT_MS_ACK:
		put_counts(out, m->ack.received, m->ack.installed, m->ack.dropped);
		put_le(out + 24, m->ack.last_seq, 8);
		break;
	case VT_MS_END:
		put_le(out, m->end.pages, 8);
		put_le(out + 8, m->end.frames, 8);
		break;
	case VT_MS_END_ACK:
		put_counts(out, m->end_ack.received, m->end_ack.installed, m->end_ack.dropped);
		put_le(out + 24, (uint32_t)m->end_ack.status, 4);
		break;
	case VT_MS_ABORT:
		put_le(out, (uint32_t)m->abort.error, 4);
		for (i = 0; i < VT_MS_MSG_LEN - 1 && m->abort.message[i]; i++) {
			uint8_t c = (uint8_t)m->abort.message[i];

			out[8 + i] = c >= 0x20 && c <= 0x7e ? c : '?';
		}
		break;
	}
	*len = n;
	return 0;
}

/* ABORT's message: NUL-terminated, printable before the NUL, zeros after it. */
static int check_text(const uint8_t *t, char out[VT_MS_MSG_LEN], char *err, size_t err_len)
{
	const uint8_t *nul = memchr(t, 0, VT_MS_MSG_LEN);
	size_t n, i;

	if (!nul)
		return vt_err_set(-EPROTO, err, err_len,
				  "ABORT: message not NUL-terminated within its %u bytes", VT_MS_MSG_LEN);
	n = (size_t)(nul - t);
	for (i = 0; i < n; i++)
		if (t[i] < 0x20 || t[i] > 0x7e)
			return vt_err_set(-EPROTO, err, err_len,
					  "ABORT: message byte %zu is 0x%02x (printable ASCII "
					  "0x20..0x7e only)", i, t[i]);
	for (i = n + 1; i < VT_MS_MSG_LEN; i++)
		if (t[i])
			return vt_err_set(-EPROTO, err, err_len,
					  "ABORT: message byte %zu, after its NUL, is 0x%02x (must be 0)",
					  i, t[i]);
	memcpy(out, t, VT_MS_MSG_LEN);
	return 0;
}

/*
 * A payload's own checks, none against a session but the page bound: the
 * length is the type's (vt_ms_frame_len passed the header first).
 */
static int decode(uint8_t type, const uint8_t *p, size_t len, uint64_t backend_pages,
		  struct vt_ms_msg *m, char *err, size_t err_len)
{
	struct vt_ms_pages_iter it;
	struct vt_ms_page rec;
	int ret;

	memset(m, 0, sizeof(*m));
	m->type = type;
	m->payload = p;
	m->len = len;
	switch (type) {
	case VT_MS_HELLO:
		memcpy(m->hello.stream_id, p, VT_MS_ID_BYTES);
		m->hello.backend_size = get_le(p + 16, 8);
		m->hello.page_size = (uint32_t)get_le(p + 24, 4);
		ret = reserved_zero("HELLO", p + 28, 4, err, err_len);
		if (ret)
			return ret;
		if (m->hello.page_size != VT_MS_PAGE_SIZE)
			return vt_err_set(-EPROTO, err, err_len,
					  "HELLO: page size %u (version %u has %u only)",
					  m->hello.page_size, VT_MS_VERSION, VT_MS_PAGE_SIZE);
		return 0;
	case VT_MS_WELCOME:
		memcpy(m->welcome.stream_id, p, VT_MS_ID_BYTES);
		m->welcome.pages_hint = get_le(p + 16, 8);
		return reserved_zero("WELCOME", p + 24, 8, err, err_len);
	case VT_MS_PAGES:
		ret = vt_ms_pages_iter_init(&it, p, len, backend_pages, err, err_len);
		if (!ret)
			while ((ret = vt_ms_pages_next(&it, &rec, err, err_len)) == 1)
				;
		m->pages = it.count;
		return ret;
	case VT_MS_ACK:
		get_counts(p, &m->ack.received, &m->ack.installed, &m->ack.dropped);
		m->ack.last_seq = get_le(p + 24, 8);
		if (m->ack.installed > m->ack.received ||
		    m->ack.dropped > m->ack.received - m->ack.installed)
			return vt_err_set(-ERANGE, err, err_len,
					  "ACK: %llu installed + %llu dropped, more than the %llu received",
					  (ull)m->ack.installed, (ull)m->ack.dropped,
					  (ull)m->ack.received);
		return 0;
	case VT_MS_END:
		m->end.pages = get_le(p, 8);
		m->end.frames = get_le(p + 8, 8);
		return 0;
	case VT_MS_END_ACK:
		get_counts(p, &m->end_ack.received, &m->end_ack.installed, &m->end_ack.dropped);
		m->end_ack.status = (int32_t)(uint32_t)get_le(p + 24, 4);
		ret = reserved_zero("END_ACK", p + 28, 4, err, err_len);
		return ret ? ret : errno_field("END_ACK: status", m->end_ack.status, true, err,
					       err_len);
	case VT_MS_ABORT:
		m->abort.error = (int32_t)(uint32_t)get_le(p, 4);
		ret = reserved_zero("ABORT", p + 4, 4, err, err_len);
		if (!ret)
			ret = errno_field("ABORT: errno", m->abort.error, false, err, err_len);
		return ret ? ret : check_text(p + 8, m->abort.message, err, err_len);
	}
	return vt_err_set(-EPROTO, err, err_len, "type %u unknown", type);
}

/* ---- the session ---- */

int vt_ms_session_init(struct vt_ms_session *s, enum vt_ms_role role,
		       const struct vt_ms_keys *keys, const uint8_t stream_id[VT_MS_ID_BYTES],
		       uint64_t backend_size, uint32_t page_size, char *err, size_t err_len)
{
	if (sodium_up())
		return vt_err_set(-EIO, err, err_len, "libsodium did not start");
	if (role != VT_MS_SOURCE && role != VT_MS_DESTINATION)
		return vt_err_set(-EINVAL, err, err_len, "role %d (0 source, 1 destination)", role);
	if (page_size != VT_MS_PAGE_SIZE)
		return vt_err_set(-EINVAL, err, err_len, "page size %u (version %u has %u only)",
				  page_size, VT_MS_VERSION, VT_MS_PAGE_SIZE);
	if (!backend_size || backend_size % page_size)
		return vt_err_set(-EINVAL, err, err_len,
				  "backend of %llu bytes (must be a non-zero multiple of %u)",
				  (ull)backend_size, page_size);
	memset(s, 0, sizeof(*s));
	s->role = role;
	s->state = VT_MS_ST_START;
	s->keys = *keys;
	memcpy(s->stream_id, stream_id, VT_MS_ID_BYTES);
	s->backend_size = backend_size;
	s->page_size = page_size;
	return 0;
}

bool vt_ms_session_done(const struct vt_ms_session *s)
{
	return s->state == VT_MS_ST_DONE || vt_ms_session_dead(s);
}

bool vt_ms_session_dead(const struct vt_ms_session *s)
{
	return s->failed || s->aborted;
}

/* -EPIPE with the reason when no frame may pass any more. */
static int closed(const struct vt_ms_session *s, char *err, size_t err_len)
{
	if (s->aborted)
		return vt_err_set(-EPIPE, err, err_len, "the stream was aborted (%d: %s)",
				  s->abort.error, s->abort.message);
	if (s->failed)
		return vt_err_set(-EPIPE, err, err_len, "the session is dead: a frame was refused");
	if (s->state == VT_MS_ST_DONE)
		return vt_err_set(-EPIPE, err, err_len, "the stream is over (END_ACK passed)");
	return 0;
}

/* May @sender send @type in @st? The state machine, whole. */
static bool may_send(enum vt_ms_role sender, enum vt_ms_state st, uint8_t type)
{
	bool src = sender == VT_MS_SOURCE;

	switch (type) {
	case VT_MS_HELLO:
		return !src && st == VT_MS_ST_START;
	case VT_MS_WELCOME:
		return src && st == VT_MS_ST_HELLO;
	case VT_MS_PAGES:
	case VT_MS_END:
		return src && st == VT_MS_ST_PAGES;
	case VT_MS_ACK:
		return !src && (st == VT_MS_ST_PAGES || st == VT_MS_ST_END);
	case VT_MS_END_ACK:
		return !src && st == VT_MS_ST_END;
	case VT_MS_ABORT:
		return st == VT_MS_ST_HELLO || st == VT_MS_ST_PAGES || st == VT_MS_ST_END;
	}
	return false;
}

static int check_allowed(const struct vt_ms_session *s, enum vt_ms_role sender, uint8_t type,
			 char *err, size_t err_len)
{
	char list[64] = "";

	if (may_send(sender, s->state, type))
		return 0;
	for (uint8_t t = VT_MS_HELLO; t <= TYPE_MAX; t++)
		if (may_send(sender, s->state, t))
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 list[0] ? ", " : "", vt_ms_type_name(t));
	return vt_err_set(-EPROTO, err, err_len,
			  "%s from the %s in state %s: not allowed (the %s may send: %s)",
			  vt_ms_type_name(type), vt_ms_role_name(sender), vt_ms_state_name(s->state),
			  vt_ms_role_name(sender), list[0] ? list : "nothing");
}

static int check_id(const char *what, const struct vt_ms_session *s,
		    const uint8_t id[VT_MS_ID_BYTES], char *err, size_t err_len)
{
	char got[2 * VT_MS_ID_BYTES + 1], want[2 * VT_MS_ID_BYTES + 1];

	if (!memcmp(id, s->stream_id, VT_MS_ID_BYTES))
		return 0;
	id_hex(id, got);
	id_hex(s->stream_id, want);
	return vt_err_set(-EPROTO, err, err_len,
			  "%s: stream id %s, this stream is %s (another migration's)", what, got, want);
}

static int check_ack(const struct vt_ms_session *s, const struct vt_ms_ack *a,
		     char *err, size_t err_len)
{
	const struct vt_ms_ack *o = &s->ack;

	if (a->received > s->pages)
		return vt_err_set(-ERANGE, err, err_len,
				  "ACK: %llu pages received, more than the %llu in PAGES frames so far",
				  (ull)a->received, (ull)s->pages);
	if (a->last_seq > s->last_pages_seq)
		return vt_err_set(-ERANGE, err, err_len,
				  "ACK: last PAGES seq %llu, but the last PAGES frame so far is seq %llu",
				  (ull)a->last_seq, (ull)s->last_pages_seq);
	if (!a->last_seq && a->received)
		return vt_err_set(-ERANGE, err, err_len,
				  "ACK: %llu pages received of no PAGES frame (last seq 0)",
				  (ull)a->received);
	if (a->received < o->received || a->installed < o->installed ||
	    a->dropped < o->dropped || a->last_seq < o->last_seq)
		return vt_err_set(-ERANGE, err, err_len,
				  "ACK goes backwards: received %llu, installed %llu, dropped %llu, "
				  "last seq %llu after %llu, %llu, %llu, %llu (none may go down)",
				  (ull)a->received, (ull)a->installed, (ull)a->dropped,
				  (ull)a->last_seq, (ull)o->received, (ull)o->installed,
				  (ull)o->dropped, (ull)o->last_seq);
	return 0;
}

static int check_end_ack(const struct vt_ms_session *s, const struct vt_ms_end_ack *e,
			 char *err, size_t err_len)
{
	if (e->received != s->pages)
		return vt_err_set(-ERANGE, err, err_len,
				  "END_ACK: %llu pages received, the stream's PAGES frames carried %llu",
				  (ull)e->received, (ull)s->pages);
	if (e->installed > e->received || e->dropped != e->received - e->installed)
		return vt_err_set(-ERANGE, err, err_len,
				  "END_ACK: %llu installed + %llu dropped is not the %llu received "
				  "(every page must be accounted for)",
				  (ull)e->installed, (ull)e->dropped, (ull)e->received);
	if (e->installed < s->ack.installed || e->dropped < s->ack.dropped)
		return vt_err_set(-ERANGE, err, err_len,
				  "END_ACK: %llu installed and %llu dropped, below the last ACK's %llu "
				  "and %llu", (ull)e->installed, (ull)e->dropped,
				  (ull)s->ack.installed, (ull)s->ack.dropped);
	return 0;
}

/* The checks of a decoded message against the session; nothing changes. */
static int check_msg(const struct vt_ms_session *s, const struct vt_ms_msg *m,
		     char *err, size_t err_len)
{
	switch (m->type) {
	case VT_MS_HELLO:
		if (m->hello.backend_size != s->backend_size)
			return vt_err_set(-EPROTO, err, err_len,
					  "HELLO: a backend of %llu bytes, this stream's has %llu",
					  (ull)m->hello.backend_size, (ull)s->backend_size);
		return check_id("HELLO", s, m->hello.stream_id, err, err_len);
	case VT_MS_WELCOME:
		if (m->welcome.pages_hint > s->backend_size / s->page_size)
			return vt_err_set(-ERANGE, err, err_len,
					  "WELCOME: a hint of %llu pages, more than the backend's %llu",
					  (ull)m->welcome.pages_hint,
					  (ull)(s->backend_size / s->page_size));
		return check_id("WELCOME", s, m->welcome.stream_id, err, err_len);
	case VT_MS_ACK:
		return check_ack(s, &m->ack, err, err_len);
	case VT_MS_END:
		if (m->end.pages != s->pages || m->end.frames != s->frames)
			return vt_err_set(-ERANGE, err, err_len,
					  "END: %llu pages in %llu PAGES frames, the stream carried %llu "
					  "in %llu", (ull)m->end.pages, (ull)m->end.frames,
					  (ull)s->pages, (ull)s->frames);
		return 0;
	case VT_MS_END_ACK:
		return check_end_ack(s, &m->end_ack, err, err_len);
	}
	return 0;
}

/* The session after a message that passed every check. */
static void advance(struct vt_ms_session *s, const struct vt_ms_msg *m)
{
	switch (m->type) {
	case VT_MS_HELLO:
		s->state = VT_MS_ST_HELLO;
		break;
	case VT_MS_WELCOME:
		s->pages_hint = m->welcome.pages_hint;
		s->state = VT_MS_ST_PAGES;
		break;
	case VT_MS_PAGES:
		s->pages += m->pages;
		s->frames++;
		s->last_pages_seq = m->seq;
		break;
	case VT_MS_ACK:
		s->ack = m->ack;
		break;
	case VT_MS_END:
		s->state = VT_MS_ST_END;
		break;
	case VT_MS_END_ACK:
		s->end_ack = m->end_ack;
		s->state = VT_MS_ST_DONE;
		break;
	case VT_MS_ABORT:
		s->abort = m->abort;
		s->aborted = true;
		break;
	}
}

/*
 * A frame's payload from @sender at @seq, both ways: the state machine, the
 * payload's own checks, the session's; then the session moves on.
 */
static int take(struct vt_ms_session *s, enum vt_ms_role sender, uint8_t type, uint64_t seq,
		const uint8_t *payload, size_t len, struct vt_ms_msg *m, char *err, size_t err_len)
{
	int ret = check_allowed(s, sender, type, err, err_len);

	if (!ret)
		ret = decode(type, payload, len, s->backend_size / s->page_size, m, err, err_len);
	if (ret)
		return ret;
	m->seq = seq;
	ret = check_msg(s, m, err, err_len);
	if (!ret)
		advance(s, m);
	return ret;
}

/* Frames and takes it; the callers have checked the session may still send. */
static int send_frame(struct vt_ms_session *s, uint8_t type, const void *payload, size_t len,
		      uint8_t *frame, size_t cap, size_t *frame_len, char *err, size_t err_len)
{
	struct vt_ms_hdr h = {
		.magic = VT_MS_MAGIC, .version = VT_MS_VERSION, .type = type,
		.length = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len, .seq = s->send_seq,
	};
	uint8_t hdr[VT_MS_HDR_BYTES];
	struct vt_ms_msg m;
	size_t flen;
	int ret;

	vt_ms_hdr_write(&h, hdr);
	ret = vt_ms_frame_len(hdr, &flen, err, err_len);
	if (!ret && cap < flen)
		return vt_err_set(-ENOBUFS, err, err_len, "%s frame of %zu bytes, the buffer has %zu",
				  vt_ms_type_name(type), flen, cap);
	if (!ret)
		ret = take(s, s->role, type, s->send_seq, payload, len, &m, err, err_len);
	if (ret) {
		s->failed = true;
		return ret;
	}
	memmove(frame + VT_MS_HDR_BYTES, payload, len);
	memcpy(frame, hdr, VT_MS_HDR_BYTES);
	tag_of(s->role == VT_MS_SOURCE ? s->keys.s2d : s->keys.d2s, frame, VT_MS_HDR_BYTES + len,
	       frame + VT_MS_HDR_BYTES + len);
	s->send_seq++;
	*frame_len = flen;
	return 0;
}

int vt_ms_session_send(struct vt_ms_session *s, uint8_t type, const void *payload, size_t len,
		       uint8_t *frame, size_t cap, size_t *frame_len, char *err, size_t err_len)
{
	int ret = closed(s, err, err_len);

	return ret ? ret : send_frame(s, type, payload, len, frame, cap, frame_len, err, err_len);
}

int vt_ms_session_abort(struct vt_ms_session *s, int error, const char *message,
			uint8_t *frame, size_t cap, size_t *frame_len, char *err, size_t err_len)
{
	struct vt_ms_msg m = { .type = VT_MS_ABORT };
	uint8_t payload[VT_MS_ABORT_BYTES];
	size_t len;
	int ret;

	if (s->aborted || s->state == VT_MS_ST_DONE)
		return closed(s, err, err_len);
	if (s->state == VT_MS_ST_START)
		return vt_err_set(-EPIPE, err, err_len,
				  "no ABORT before the stream's first frame (the %s has %s no HELLO)",
				  vt_ms_role_name(s->role),
				  s->role == VT_MS_SOURCE ? "taken" : "sent");
	m.abort.error = errno_ok(error, false) ? error : -EINVAL;
	snprintf(m.abort.message, sizeof(m.abort.message), "%s", message ? message : "");
	ret = vt_ms_payload_encode(&m, payload, sizeof(payload), &len);
	return ret ? ret : send_frame(s, VT_MS_ABORT, payload, len, frame, cap, frame_len,
				      err, err_len);
}

int vt_ms_session_recv(struct vt_ms_session *s, const uint8_t *frame, size_t len,
		       struct vt_ms_msg *msg, char *err, size_t err_len)
{
	enum vt_ms_role peer = s->role == VT_MS_SOURCE ? VT_MS_DESTINATION : VT_MS_SOURCE;
	uint8_t tag[VT_MS_TAG_BYTES];
	struct vt_ms_hdr h;
	size_t flen;
	int ret = closed(s, err, err_len);

	if (ret)
		return ret;
	if (len < VT_MS_HDR_BYTES + VT_MS_TAG_BYTES) {
		ret = vt_err_set(-EMSGSIZE, err, err_len,
				 "a frame of %zu bytes, shorter than a header and a tag (%u)",
				 len, VT_MS_HDR_BYTES + VT_MS_TAG_BYTES);
		goto refused;
	}
	ret = vt_ms_frame_len(frame, &flen, err, err_len);
	if (ret)
		goto refused;
	vt_ms_hdr_read(frame, &h);
	if (len != flen) {
		ret = vt_err_set(-EMSGSIZE, err, err_len, "%s frame of %zu bytes, its header says %zu",
				 vt_ms_type_name(h.type), len, flen);
		goto refused;
	}
	tag_of(peer == VT_MS_SOURCE ? s->keys.s2d : s->keys.d2s, frame, len - VT_MS_TAG_BYTES, tag);
	if (sodium_memcmp(tag, frame + len - VT_MS_TAG_BYTES, VT_MS_TAG_BYTES)) {
		ret = vt_err_set(-EBADMSG, err, err_len,
				 "%s frame seq %llu: its tag does not verify with the %s's key "
				 "(forged, damaged, or another migration's)",
				 vt_ms_type_name(h.type), (ull)h.seq, vt_ms_role_name(peer));
		goto refused;
	}
	if (h.seq != s->recv_seq) {
		ret = vt_err_set(-EPROTO, err, err_len, "%s frame seq %llu %s (the next is %llu)",
				 vt_ms_type_name(h.type), (ull)h.seq,
				 h.seq < s->recv_seq ? "replayed" : "skips frames", (ull)s->recv_seq);
		goto refused;
	}
	ret = take(s, peer, h.type, h.seq, frame + VT_MS_HDR_BYTES, h.length, msg, err, err_len);
	if (ret)
		goto refused;
	s->recv_seq++;
	return 0;
refused:
	s->failed = true;
	return ret;
}
