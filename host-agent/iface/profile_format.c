// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The migration profile's wire format: the reader that trusts nothing and
 * the writer. Every field is read with memcpy (the buffer is QEMU's, of any
 * alignment) and checked before use. The stream section's secret goes into
 * no reason and no string made here.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "errbuf.h"
#include "profile_format.h"
#include "tier_name.h"

bool vt_profile_tier_name_ok(const char *name)
{
	_Static_assert(VT_TIER_NAME_MAX + 1 == VTIER_PROFILE_TIER_NAME_LEN, "one name rule");
	return vt_tier_name_ok(name);
}

struct vt_profile_tier vt_profile_tier_named(unsigned int t, enum vtier_profile_tier_kind kind,
					     const char *name)
{
	struct vt_profile_tier out = { .kind = kind };

	snprintf(out.name, sizeof(out.name), "%s", name);
	if (!vt_profile_tier_name_ok(out.name))
		snprintf(out.name, sizeof(out.name), "tier%u", t);
	return out;
}

/* A name field: a valid name, and nothing but NULs after it (one encoding per name). */
static bool name_field_ok(const char *field)
{
	size_t n;

	if (!vt_profile_tier_name_ok(field))
		return false;
	for (n = strlen(field); n < VTIER_PROFILE_TIER_NAME_LEN; n++)
		if (field[n])
			return false;
	return true;
}

static bool size_class_ok(unsigned int sc)
{
	return sc <= VTIER_PROFILE_SIZE_EIGHTHS || sc == VTIER_PROFILE_SIZE_INCOMPRESSIBLE;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * Why a stream section's address can never be the source agent's TCP
 * address (NULL when it can), and what is wanted instead. IPv4: 0.0.0.0,
 * 224.0.0.0/4, 255.255.255.255. IPv6: ::, ff00::/8, an IPv4-mapped address
 * (a second encoding of family 4, that would pass by its checks), fe80::/10
 * (a link-local address needs a scope id the section does not carry).
 * Loopback is an address like any other here.
 */
static const char *addr_refused(unsigned int family, const uint8_t *a, const char **want)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t bcast[4] = { 0xff, 0xff, 0xff, 0xff };

	*want = "want a unicast address; loopback is allowed";
	if (all_zero(a, family == VTIER_PROFILE_STREAM_IPV4 ? 4 : 16))
		return "unspecified";
	if (family == VTIER_PROFILE_STREAM_IPV4) {
		if ((a[0] & 0xf0) == 0xe0)
			return "multicast";
		if (!memcmp(a, bcast, sizeof(bcast)))
			return "broadcast";
		return NULL;
	}
	if (a[0] == 0xff)
		return "multicast";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) {
		*want = "it needs a scope id, which the section does not carry";
		return "link-local";
	}
	if (!memcmp(a, mapped, sizeof(mapped))) {
		*want = "an IPv4 address goes as family 4";
		return "IPv4-mapped";
	}
	return NULL;
}

/*
 * A stream section, the reader's or the writer's: @ret and a reason that
 * starts with @who and names the field, its value and what is accepted
 * (never the secret's bytes), or 0.
 */
static int stream_check(const struct vt_profile_stream *s, const char *who, int ret, char *err,
			size_t err_len)
{
	char a[INET6_ADDRSTRLEN] = "";
	const char *why, *want;

	if (all_zero(s->secret, sizeof(s->secret)))
		return vt_err_set(ret, err, err_len, "%s secret: all zeros (want %u bytes of key "
				  "material)", who, VTIER_PROFILE_STREAM_SECRET_LEN);
	if (all_zero(s->stream_id, sizeof(s->stream_id)))
		return vt_err_set(ret, err, err_len, "%s id: all zeros (want %u bytes, not all "
				  "zero)", who, VTIER_PROFILE_STREAM_ID_LEN);
	if (s->family != VTIER_PROFILE_STREAM_IPV4 && s->family != VTIER_PROFILE_STREAM_IPV6)
		return vt_err_set(ret, err, err_len, "%s family %u (want %u, IPv4, or %u, IPv6)",
				  who, s->family, VTIER_PROFILE_STREAM_IPV4,
				  VTIER_PROFILE_STREAM_IPV6);
	if (!s->port)
		return vt_err_set(ret, err, err_len, "%s port 0 (want 1..65535)", who);
	if (s->family == VTIER_PROFILE_STREAM_IPV4) {
		for (unsigned int i = 4; i < sizeof(s->addr); i++)
			if (s->addr[i])
				return vt_err_set(ret, err, err_len, "%s IPv4 address: byte %u "
						  "is %#x (want 4 address bytes, then 12 zeros)",
						  who, i, s->addr[i]);
		inet_ntop(AF_INET, s->addr, a, sizeof(a));
	} else {
		inet_ntop(AF_INET6, s->addr, a, sizeof(a));
	}
	why = addr_refused(s->family, s->addr, &want);
	if (why)
		return vt_err_set(ret, err, err_len, "%s address %s is %s (%s)", who, a, why, want);
	return 0;
}

const char *vt_profile_stream_str(const struct vt_profile_stream *s, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	_Static_assert(VT_PROFILE_STREAM_STR_LEN >= INET6_ADDRSTRLEN + sizeof("[]:65535") - 1,
		       "room for any address");
	if (s->family == VTIER_PROFILE_STREAM_IPV4 && inet_ntop(AF_INET, s->addr, a, sizeof(a)))
		snprintf(buf, len, "%s:%u", a, s->port);
	else if (s->family == VTIER_PROFILE_STREAM_IPV6 &&
		 inet_ntop(AF_INET6, s->addr, a, sizeof(a)))
		snprintf(buf, len, "[%s]:%u", a, s->port);
	else
		snprintf(buf, len, "(family %u):%u", s->family, s->port);
	return buf;
}

/* The stream section at @at, checked, into @out. */
static int read_stream(const uint8_t *at, struct vt_profile_stream *out, char *err,
		       size_t err_len)
{
	struct vtier_profile_stream w;
	struct vt_profile_stream s;
	int ret;

	memcpy(&w, at, sizeof(w));
	if (w.reserved || w.reserved2)
		return vt_err_set(-EBADMSG, err, err_len, "profile v2: stream reserved %u, "
				  "reserved2 %u (want 0, 0)", w.reserved, w.reserved2);
	memcpy(s.secret, w.secret, sizeof(s.secret));
	memcpy(s.stream_id, w.stream_id, sizeof(s.stream_id));
	s.family = w.family;
	s.port = w.port;
	memcpy(s.addr, w.addr, sizeof(s.addr));
	ret = stream_check(&s, "profile v2: stream", -EBADMSG, err, err_len);
	if (!ret)
		*out = s;
	return ret;
}

/* Chunks of 1 << @shift covering @size_bytes (not 0: checked by the caller). */
static uint64_t chunks_for(uint64_t size_bytes, unsigned int shift)
{
	return (size_bytes >> shift) + !!(size_bytes & ((1ull << shift) - 1));
}

static int read_v1(const uint8_t *buf, size_t size, uint64_t backend_size, struct vt_profile *out,
		   char *err, size_t err_len)
{
	struct vtier_profile_v1 h;
	uint64_t want;

	if (size < sizeof(h))
		return vt_err_set(-EBADMSG, err, err_len, "profile v1 of %zu bytes has no header",
				  size);
	memcpy(&h, buf, sizeof(h));
	if (h.chunk_shift < VTIER_PROFILE_SHIFT_MIN || h.chunk_shift > VTIER_PROFILE_SHIFT_MAX ||
	    h.reserved || h.reserved2)
		return vt_err_set(-EBADMSG, err, err_len, "profile v1: chunk shift %u (want %u..%u), "
				  "reserved fields %u/%u", h.chunk_shift, VTIER_PROFILE_SHIFT_MIN,
				  VTIER_PROFILE_SHIFT_MAX, h.reserved, h.reserved2);
	if (!h.size_bytes || h.size_bytes != backend_size)
		return vt_err_set(-ERANGE, err, err_len, "profile v1 of a %llu-byte backend, this "
				  "one has %llu", (unsigned long long)h.size_bytes,
				  (unsigned long long)backend_size);
	want = chunks_for(h.size_bytes, h.chunk_shift);
	if (h.n_chunks != want || size != sizeof(h) + (uint64_t)h.n_chunks)
		return vt_err_set(-EBADMSG, err, err_len, "profile v1 with %u chunks in %zu bytes "
				  "(want %llu chunks, %llu bytes)", h.n_chunks, size,
				  (unsigned long long)want, (unsigned long long)(sizeof(h) + want));
	*out = (struct vt_profile){
		.version = 1,
		.chunk_shift = h.chunk_shift,
		.size_bytes = h.size_bytes,
		.n_chunks = h.n_chunks,
		.chunks = buf + sizeof(h),
	};
	return 0;
}

static int read_v2(const uint8_t *buf, size_t size, uint64_t backend_size, struct vt_profile *out,
		   char *err, size_t err_len)
{
	struct vtier_profile_v2 h;
	const uint8_t *chunks;
	uint64_t want_chunks, want_size;
	bool stream;
	int ret;

	if (size < sizeof(h))
		return vt_err_set(-EBADMSG, err, err_len, "profile v2 of %zu bytes has no header",
				  size);
	memcpy(&h, buf, sizeof(h));
	if (h.chunk_shift < VTIER_PROFILE_SHIFT_MIN || h.chunk_shift > VTIER_PROFILE_SHIFT_MAX)
		return vt_err_set(-EBADMSG, err, err_len, "profile v2: chunk shift %u (want %u..%u)",
				  h.chunk_shift, VTIER_PROFILE_SHIFT_MIN, VTIER_PROFILE_SHIFT_MAX);
	if (!h.n_tiers || h.n_tiers > VTIER_PROFILE_TIERS_MAX)
		return vt_err_set(-EBADMSG, err, err_len, "profile v2: %u tiers (want 1..%u)",
				  h.n_tiers, VTIER_PROFILE_TIERS_MAX);
	if (h.flags & ~VTIER_PROFILE_F_STREAM)
		return vt_err_set(-EBADMSG, err, err_len, "profile v2: flags %#x, bit %d unknown "
				  "(this agent knows bit 0, the stream section)", h.flags,
				  __builtin_ctz(h.flags & ~VTIER_PROFILE_F_STREAM));
	stream = h.flags & VTIER_PROFILE_F_STREAM;
	if (!h.size_bytes || h.size_bytes != backend_size)
		return vt_err_set(-ERANGE, err, err_len, "profile v2 of a %llu-byte backend, this "
				  "one has %llu", (unsigned long long)h.size_bytes,
				  (unsigned long long)backend_size);
	want_chunks = chunks_for(h.size_bytes, h.chunk_shift);
	want_size = sizeof(h) + (uint64_t)h.n_tiers * sizeof(struct vtier_profile_tier) +
		    want_chunks * sizeof(struct vtier_profile_chunk) +
		    (stream ? sizeof(struct vtier_profile_stream) : 0);
	if (h.n_chunks != want_chunks || want_size > VTIER_HANDOFF_PROFILE_MAX || size != want_size)
		return vt_err_set(-EBADMSG, err, err_len, "profile v2 with %u chunks, %u tiers%s in "
				  "%zu bytes (want %llu chunks, %llu bytes, at most %u)", h.n_chunks,
				  h.n_tiers, stream ? ", a stream section" : "", size,
				  (unsigned long long)want_chunks, (unsigned long long)want_size,
				  VTIER_HANDOFF_PROFILE_MAX);
	*out = (struct vt_profile){
		.version = 2,
		.chunk_shift = h.chunk_shift,
		.size_bytes = h.size_bytes,
		.n_chunks = h.n_chunks,
		.windows = h.windows,
		.n_tiers = h.n_tiers,
	};
	for (unsigned int t = 0; t < h.n_tiers; t++) {
		struct vtier_profile_tier pt;

		memcpy(&pt, buf + sizeof(h) + t * sizeof(pt), sizeof(pt));
		if (!name_field_ok(pt.name))
			return vt_err_set(-EBADMSG, err, err_len, "profile v2: tier %u has no valid "
					  "name ([A-Za-z0-9._:-], 1..15 bytes, NUL-padded)", t);
		if (pt.kind > VTIER_PROFILE_TIER_COMPRESSED || pt.reserved)
			return vt_err_set(-EBADMSG, err, err_len, "profile v2: tier %u '%s' of kind "
					  "%u, reserved %u", t, pt.name, pt.kind, pt.reserved);
		if (t == 0 && pt.kind != VTIER_PROFILE_TIER_NUMA)
			return vt_err_set(-EBADMSG, err, err_len, "profile v2: tier 0 '%s' is not "
					  "memory (the fastest tier must be a NUMA tier)", pt.name);
		memcpy(out->tiers[t].name, pt.name, sizeof(pt.name));
		out->tiers[t].kind = (enum vtier_profile_tier_kind)pt.kind;
	}
	chunks = buf + sizeof(h) + h.n_tiers * sizeof(struct vtier_profile_tier);
	for (uint32_t i = 0; i < h.n_chunks; i++) {
		struct vtier_profile_chunk c;

		memcpy(&c, chunks + (size_t)i * sizeof(c), sizeof(c));
		if ((c.tier >= h.n_tiers && c.tier != VTIER_PROFILE_TIER_NONE) ||
		    !size_class_ok(c.size_class) || c.reserved)
			return vt_err_set(-EBADMSG, err, err_len, "profile v2: chunk %u names tier %u "
					  "of %u, size class %u, reserved %u", i, c.tier, h.n_tiers,
					  c.size_class, c.reserved);
	}
	if (stream) {
		ret = read_stream(chunks + (size_t)h.n_chunks * sizeof(struct vtier_profile_chunk),
				  &out->stream, err, err_len);
		if (ret)
			return ret;
		out->has_stream = true;
	}
	out->chunks = chunks;
	return 0;
}

int vt_profile_read(const void *buf, size_t size, uint64_t backend_size, struct vt_profile *out,
		    char *err, size_t err_len)
{
	uint32_t magic;
	uint16_t version;

	if (!buf || size < sizeof(magic) + sizeof(version))
		return vt_err_set(-EBADMSG, err, err_len, "profile of %zu bytes: too short", size);
	if (size > VTIER_HANDOFF_PROFILE_MAX)
		return vt_err_set(-EBADMSG, err, err_len, "profile of %zu bytes (at most %u)", size,
				  VTIER_HANDOFF_PROFILE_MAX);
	memcpy(&magic, buf, sizeof(magic));
	memcpy(&version, (const uint8_t *)buf + sizeof(magic), sizeof(version));
	if (magic != VTIER_PROFILE_MAGIC)
		return vt_err_set(-EBADMSG, err, err_len, "not a vtier profile (magic %#x, want %#x)",
				  magic, VTIER_PROFILE_MAGIC);
	if (version == VTIER_PROFILE_VERSION)
		return read_v1(buf, size, backend_size, out, err, err_len);
	if (version == VTIER_PROFILE_VERSION_2)
		return read_v2(buf, size, backend_size, out, err, err_len);
	return vt_err_set(-EPROTONOSUPPORT, err, err_len, "profile version %u (this agent reads "
			  "1 and 2)", version);
}

void vt_profile_chunk(const struct vt_profile *p, uint32_t i, struct vt_profile_chunk *out)
{
	struct vtier_profile_chunk c;

	if (p->version == 1) {
		*out = (struct vt_profile_chunk){ .ema = p->chunks[i] / 255.0, .tier = -1 };
		return;
	}
	memcpy(&c, p->chunks + (size_t)i * sizeof(c), sizeof(c));
	*out = (struct vt_profile_chunk){
		.ema = c.heat / 65535.0,
		.tier = c.tier == VTIER_PROFILE_TIER_NONE ? -1 : c.tier,
		.cold_windows = c.cold_windows,
		.size_class = c.size_class,
	};
}

size_t vt_profile_v2_bytes(uint64_t size_bytes, unsigned int n_tiers, unsigned int chunk_shift)
{
	return sizeof(struct vtier_profile_v2) + n_tiers * sizeof(struct vtier_profile_tier) +
	       chunks_for(size_bytes, chunk_shift) * sizeof(struct vtier_profile_chunk);
}

size_t vt_profile_v2_stream_bytes(uint64_t size_bytes, unsigned int n_tiers,
				  unsigned int chunk_shift)
{
	return vt_profile_v2_bytes(size_bytes, n_tiers, chunk_shift) +
	       sizeof(struct vtier_profile_stream);
}

/* The smallest shift from @min_shift at which a v2 profile and @extra bytes fit. */
static unsigned int shift_for(uint64_t size_bytes, unsigned int n_tiers, unsigned int min_shift,
			      size_t extra)
{
	unsigned int s = min_shift < VTIER_PROFILE_SHIFT_MIN ? VTIER_PROFILE_SHIFT_MIN : min_shift;

	if (!size_bytes || !n_tiers || n_tiers > VTIER_PROFILE_TIERS_MAX)
		return 0;
	for (; s <= VTIER_PROFILE_SHIFT_MAX; s++)
		if (chunks_for(size_bytes, s) <= UINT32_MAX &&
		    vt_profile_v2_bytes(size_bytes, n_tiers, s) + extra <= VTIER_HANDOFF_PROFILE_MAX)
			return s;
	return 0;
}

unsigned int vt_profile_shift_for(uint64_t size_bytes, unsigned int n_tiers,
				  unsigned int min_shift)
{
	return shift_for(size_bytes, n_tiers, min_shift, 0);
}

unsigned int vt_profile_shift_for_stream(uint64_t size_bytes, unsigned int n_tiers,
					 unsigned int min_shift)
{
	return shift_for(size_bytes, n_tiers, min_shift, sizeof(struct vtier_profile_stream));
}

int vt_profile_v2_init(void *buf, uint64_t size_bytes, unsigned int chunk_shift,
		       const struct vt_profile_tier *tiers, unsigned int n_tiers,
		       uint64_t windows)
{
	struct vtier_profile_v2 h = {
		.magic = VTIER_PROFILE_MAGIC,
		.version = VTIER_PROFILE_VERSION_2,
		.chunk_shift = (uint8_t)chunk_shift,
		.n_tiers = (uint8_t)n_tiers,
		.size_bytes = size_bytes,
		.windows = windows,
	};
	struct vtier_profile_chunk none = { .tier = VTIER_PROFILE_TIER_NONE };
	uint8_t *p = buf;

	if (chunk_shift < VTIER_PROFILE_SHIFT_MIN || chunk_shift > VTIER_PROFILE_SHIFT_MAX ||
	    !size_bytes || !n_tiers || n_tiers > VTIER_PROFILE_TIERS_MAX ||
	    tiers[0].kind != VTIER_PROFILE_TIER_NUMA ||
	    chunks_for(size_bytes, chunk_shift) > UINT32_MAX ||
	    vt_profile_v2_bytes(size_bytes, n_tiers, chunk_shift) > VTIER_HANDOFF_PROFILE_MAX)
		return -EINVAL;
	h.n_chunks = (uint32_t)chunks_for(size_bytes, chunk_shift);
	memcpy(p, &h, sizeof(h));
	p += sizeof(h);
	for (unsigned int t = 0; t < n_tiers; t++) {
		struct vtier_profile_tier pt = { .kind = tiers[t].kind };

		/* up to its NUL, the rest of the field stays 0 */
		memcpy(pt.name, tiers[t].name, strnlen(tiers[t].name, sizeof(pt.name) - 1));
		if (!vt_profile_tier_name_ok(pt.name) || pt.kind > VTIER_PROFILE_TIER_COMPRESSED)
			return -EINVAL;
		memcpy(p, &pt, sizeof(pt));
		p += sizeof(pt);
	}
	for (uint32_t i = 0; i < h.n_chunks; i++)
		memcpy(p + (size_t)i * sizeof(none), &none, sizeof(none));
	return 0;
}

void vt_profile_v2_set(void *buf, uint32_t i, const struct vt_profile_chunk *c)
{
	struct vtier_profile_v2 h;
	struct vtier_profile_chunk pc = { 0 };
	uint8_t *p = buf;
	double ema = c->ema < 0 ? 0 : c->ema > 1 ? 1 : c->ema;

	memcpy(&h, p, sizeof(h));
	if (i >= h.n_chunks)
		return;
	pc.heat = (uint16_t)(ema * 65535.0 + 0.5);
	pc.tier = c->tier < 0 || c->tier >= h.n_tiers ? VTIER_PROFILE_TIER_NONE : (uint8_t)c->tier;
	pc.size_class = (uint8_t)(size_class_ok(c->size_class) ? c->size_class :
				  VTIER_PROFILE_SIZE_UNKNOWN);
	pc.cold_windows = (uint16_t)(c->cold_windows > UINT16_MAX ? UINT16_MAX : c->cold_windows);
	memcpy(p + sizeof(h) + h.n_tiers * sizeof(struct vtier_profile_tier) +
	       (size_t)i * sizeof(pc), &pc, sizeof(pc));
}

int vt_profile_v2_set_stream(void *buf, size_t cap, const struct vt_profile_stream *s,
			     char *err, size_t err_len)
{
	struct vtier_profile_v2 h;
	struct vtier_profile_stream w = {
		.family = (uint8_t)s->family,
		.port = s->port,
	};
	uint8_t *p = buf;
	size_t at;
	int ret;

	ret = stream_check(s, "stream section:", -EINVAL, err, err_len);
	if (ret)
		return ret;
	memcpy(&h, p, sizeof(h));
	at = vt_profile_v2_bytes(h.size_bytes, h.n_tiers, h.chunk_shift);
	if (at + sizeof(w) > cap || at + sizeof(w) > VTIER_HANDOFF_PROFILE_MAX)
		return vt_err_set(-ENOSPC, err, err_len, "stream section: the profile with it takes "
				  "%zu bytes, the buffer has %zu (at most %u)", at + sizeof(w), cap,
				  VTIER_HANDOFF_PROFILE_MAX);
	memcpy(w.secret, s->secret, sizeof(w.secret));
	memcpy(w.stream_id, s->stream_id, sizeof(w.stream_id));
	memcpy(w.addr, s->addr, sizeof(w.addr));
	h.flags |= VTIER_PROFILE_F_STREAM;
	memcpy(p, &h, sizeof(h));
	memcpy(p + at, &w, sizeof(w));
	return 0;
}
