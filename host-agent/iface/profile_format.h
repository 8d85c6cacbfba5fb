/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The migration profile's wire format (include/vtier/profile.h, v2; v1 from
 * include/vtier/handoff.h): reading one that came from another host, and
 * writing ours. Pure functions, no I/O.
 *
 * The profile comes from another host, through two QEMUs: it is checked
 * completely (header against the backend and the buffer's size, chunk shift
 * in range, the tier table, every chunk's tier index and size class, the
 * stream section) before any of it is used, and a bad one gives a negative
 * errno and a one-line reason. No reason and no string made here holds the
 * stream's secret.
 */
#ifndef VTIER_IFACE_PROFILE_FORMAT_H
#define VTIER_IFACE_PROFILE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vtier/profile.h>

#define VT_PROFILE_ERR_LEN 160

/* A tier of the source, as its profile names it. */
struct vt_profile_tier {
	char name[VTIER_PROFILE_TIER_NAME_LEN];
	enum vtier_profile_tier_kind kind;
};

/*
 * A profile's stream section (VTIER_PROFILE_F_STREAM), checked: where the
 * destination agent connects to the source agent, and the secret it proves
 * it knows. Never log @secret.
 */
struct vt_profile_stream {
	uint8_t secret[VTIER_PROFILE_STREAM_SECRET_LEN];	/* not all zeros */
	uint8_t stream_id[VTIER_PROFILE_STREAM_ID_LEN];		/* not all zeros */
	unsigned int family;		/* VTIER_PROFILE_STREAM_IPV4 or _IPV6 (not AF_*) */
	uint16_t port;			/* 1..65535 */
	uint8_t addr[16];		/* IPv4: 4 bytes, then zeros; network byte order */
};

/* "ADDR:PORT" ("[ADDR]:PORT" for IPv6) of a stream section: nothing of its secret. */
#define VT_PROFILE_STREAM_STR_LEN 56

/* A checked profile; @chunks points into the buffer it was read from. */
struct vt_profile {
	unsigned int version;		/* 1 or 2 */
	unsigned int chunk_shift;
	uint64_t size_bytes;
	uint32_t n_chunks;
	uint64_t windows;		/* v2; 0 for v1 */
	unsigned int n_tiers;		/* v2; 0 for v1 (no tiers) */
	struct vt_profile_tier tiers[VTIER_PROFILE_TIERS_MAX];
	const uint8_t *chunks;		/* v1: heat bytes; v2: struct vtier_profile_chunk */
	bool has_stream;		/* v2 with VTIER_PROFILE_F_STREAM; else @stream is zeros */
	struct vt_profile_stream stream;
};

/* One chunk of a profile, whatever its version. */
struct vt_profile_chunk {
	double ema;			/* 0..1 */
	int tier;			/* index in the profile's tiers, -1: none (always for v1) */
	uint32_t cold_windows;		/* 0 for v1 */
	unsigned int size_class;	/* VTIER_PROFILE_SIZE_*; UNKNOWN for v1 */
};

/*
 * Check @size bytes at @buf as a profile of a backend of @backend_size
 * bytes: v2, or v1 as a fallback (heat only). 0 with @out filled (its
 * pointer into @buf), or -EBADMSG (garbled), -ERANGE (another backend's
 * size), -EPROTONOSUPPORT (a version this agent does not know) with @err.
 */
int vt_profile_read(const void *buf, size_t size, uint64_t backend_size, struct vt_profile *out,
		    char *err, size_t err_len);
/* Chunk @i (< p->n_chunks) of a checked profile. */
void vt_profile_chunk(const struct vt_profile *p, uint32_t i, struct vt_profile_chunk *out);

/*
 * The smallest chunk shift >= @min_shift (at least VTIER_PROFILE_SHIFT_MIN)
 * at which a v2 profile of a @size_bytes backend with @n_tiers tiers fits
 * VTIER_HANDOFF_PROFILE_MAX; 0 if none does.
 */
unsigned int vt_profile_shift_for(uint64_t size_bytes, unsigned int n_tiers,
				  unsigned int min_shift);
/* Bytes of that v2 profile. */
size_t vt_profile_v2_bytes(uint64_t size_bytes, unsigned int n_tiers, unsigned int chunk_shift);
/*
 * Lay out a v2 profile in @buf (vt_profile_v2_bytes() bytes): header and
 * tiers (each name cut to 15 bytes), every chunk cold with no tier. -EINVAL
 * for arguments a reader would refuse (shift, tiers, names, size).
 */
int vt_profile_v2_init(void *buf, uint64_t size_bytes, unsigned int chunk_shift,
		       const struct vt_profile_tier *tiers, unsigned int n_tiers,
		       uint64_t windows);
/* Set chunk @i of a v2 profile laid out by vt_profile_v2_init() (values clamped). */
void vt_profile_v2_set(void *buf, uint32_t i, const struct vt_profile_chunk *c);

/*
 * A profile with a stream section: vt_profile_shift_for() and _v2_bytes()
 * with room for it (sizeof(struct vtier_profile_stream) bytes more).
 */
unsigned int vt_profile_shift_for_stream(uint64_t size_bytes, unsigned int n_tiers,
					 unsigned int min_shift);
size_t vt_profile_v2_stream_bytes(uint64_t size_bytes, unsigned int n_tiers,
				  unsigned int chunk_shift);
/*
 * Give a v2 profile laid out by vt_profile_v2_init() in @buf (@cap bytes,
 * at least vt_profile_v2_stream_bytes()) the stream section @s after its
 * chunks, and set VTIER_PROFILE_F_STREAM (a second call replaces the
 * section). Chunks may be set before or after. 0, or -EINVAL with @err for
 * a section a reader would refuse, -ENOSPC when @cap or
 * VTIER_HANDOFF_PROFILE_MAX has no room for it.
 */
int vt_profile_v2_set_stream(void *buf, size_t cap, const struct vt_profile_stream *s,
			     char *err, size_t err_len);
/* @s as "ADDR:PORT" ("[ADDR]:PORT" for IPv6) in @buf (VT_PROFILE_STREAM_STR_LEN): for logs. */
const char *vt_profile_stream_str(const struct vt_profile_stream *s, char *buf, size_t len);

/* Is @name a tier name a profile may carry ([A-Za-z0-9._:-], 1..15 bytes)? */
bool vt_profile_tier_name_ok(const char *name);
/*
 * Tier @t of a profile as a writer names it: @kind and @name, or "tier<t>"
 * where a profile may not carry @name.
 */
struct vt_profile_tier vt_profile_tier_named(unsigned int t, enum vtier_profile_tier_kind kind,
					     const char *name);

#endif
