/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vtier migration profile, version 2: what the source agent knows of one
 * memory backend's memory, carried by QEMU (opaquely, PROFILE and the
 * destination's HELLO, include/vtier/handoff.h) to the destination agent,
 * which uses it as a hint only. docs/abi-handoff.md, "The migration
 * profile", has the tables.
 *
 * Layout: struct vtier_profile_v2, then n_tiers struct vtier_profile_tier
 * (the source's tiers, fastest first: chunks name a tier by its index in
 * this table, and the destination maps it by name, else by kind and rank,
 * to its own tiers), then n_chunks struct vtier_profile_chunk for
 * consecutive 1 << chunk_shift byte chunks of the backend, then, only when
 * flags has VTIER_PROFILE_F_STREAM, one struct vtier_profile_stream: where
 * the destination agent connects to the source agent for the pages that
 * travel compressed, and the secret it proves it knows there.
 *
 * Version 1 (struct vtier_profile_v1 in handoff.h: one heat byte per chunk)
 * starts with the same magic, version and chunk_shift; agents still read it.
 * This header is not part of the QEMU series: QEMU never looks inside a
 * profile. Integers are in host byte order (both agents run on hosts of
 * one architecture; a foreign byte order fails the magic).
 */
#ifndef VTIER_PROFILE_H
#define VTIER_PROFILE_H

#include <stdint.h>

#include <vtier/handoff.h>

#define VTIER_PROFILE_VERSION_2     2
#define VTIER_PROFILE_TIERS_MAX     16u
#define VTIER_PROFILE_TIER_NAME_LEN 16u
#define VTIER_PROFILE_SHIFT_MIN     12u     /* 4 KiB chunks */
#define VTIER_PROFILE_SHIFT_MAX     30u     /* 1 GiB chunks */

struct vtier_profile_v2 {
    uint32_t magic;             /* VTIER_PROFILE_MAGIC */
    uint16_t version;           /* VTIER_PROFILE_VERSION_2 */
    uint8_t chunk_shift;        /* VTIER_PROFILE_SHIFT_MIN .. _MAX */
    uint8_t n_tiers;            /* 1 .. VTIER_PROFILE_TIERS_MAX */
    uint64_t size_bytes;        /* backend size the profile describes */
    uint32_t n_chunks;          /* ceil(size_bytes / (1 << chunk_shift)) */
    uint32_t flags;             /* VTIER_PROFILE_F_*; no other bit */
    uint64_t windows;           /* profiling windows behind the EMAs */
};

/* vtier_profile_v2.flags */
#define VTIER_PROFILE_F_STREAM      (1u << 0)   /* struct vtier_profile_stream after the chunks */

/* vtier_profile_tier.kind */
enum vtier_profile_tier_kind {
    VTIER_PROFILE_TIER_NUMA = 0,        /* a NUMA node's memory (DRAM, CXL, PMEM) */
    VTIER_PROFILE_TIER_COMPRESSED = 1,  /* a compressed pool */
};

struct vtier_profile_tier {
    char name[VTIER_PROFILE_TIER_NAME_LEN]; /* [A-Za-z0-9._:-], NUL-padded */
    uint32_t kind;              /* enum vtier_profile_tier_kind; tier 0 is NUMA */
    uint32_t reserved;          /* 0 */
};

/* vtier_profile_chunk.tier when no page of the chunk was present */
#define VTIER_PROFILE_TIER_NONE     0xffu

/* vtier_profile_chunk.size_class */
#define VTIER_PROFILE_SIZE_UNKNOWN  0u      /* never compressed */
#define VTIER_PROFILE_SIZE_EIGHTHS  8u      /* 1..8: compresses to <= N/8 */
#define VTIER_PROFILE_SIZE_INCOMPRESSIBLE 15u   /* a compressed tier refused it */

struct vtier_profile_chunk {
    uint16_t heat;              /* hotness EMA x 65535 (0 cold .. 65535 hottest) */
    uint8_t tier;               /* index in the tier table, or VTIER_PROFILE_TIER_NONE */
    uint8_t size_class;         /* VTIER_PROFILE_SIZE_* */
    uint16_t cold_windows;      /* age: windows in a row without access (saturates) */
    uint16_t reserved;          /* 0 */
};

#define VTIER_PROFILE_STREAM_SECRET_LEN 32u
#define VTIER_PROFILE_STREAM_ID_LEN     16u

/* vtier_profile_stream.family */
#define VTIER_PROFILE_STREAM_IPV4   4u
#define VTIER_PROFILE_STREAM_IPV6   6u

/*
 * The migration stream's section (VTIER_PROFILE_F_STREAM): the source
 * agent's TCP address for this migration and its per-migration secret. The
 * profile travels inside QEMU's migration stream, so the secret is as
 * private as that channel; no agent logs it.
 */
struct vtier_profile_stream {
    uint8_t secret[VTIER_PROFILE_STREAM_SECRET_LEN]; /* key material, never all zeros */
    uint8_t stream_id[VTIER_PROFILE_STREAM_ID_LEN];  /* names this stream, never all zeros */
    uint8_t family;             /* VTIER_PROFILE_STREAM_IPV4 or _IPV6 */
    uint8_t reserved;           /* 0 */
    uint16_t port;              /* 1..65535, host byte order like the rest */
    uint32_t reserved2;         /* 0 */
    uint8_t addr[16];           /* IPv4: 4 bytes then 12 zeros; IPv6: 16 bytes (network order) */
};

_Static_assert(sizeof(struct vtier_profile_v2) == 32, "profile v2 ABI");
_Static_assert(sizeof(struct vtier_profile_tier) == 24, "profile tier ABI");
_Static_assert(sizeof(struct vtier_profile_chunk) == 8, "profile chunk ABI");
_Static_assert(sizeof(struct vtier_profile_stream) == 72, "profile stream ABI");

#endif /* VTIER_PROFILE_H */
