/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Codecs of the compressed tiers: one ops table per codec (lz4, zstd,
 * deflate), the same contract for all. A context holds the codec's working
 * memory so that a put allocates nothing; one context is used by one thread
 * at a time (the store's lock).
 */
#ifndef VTIER_MOVERS_CTIER_CODEC_H
#define VTIER_MOVERS_CTIER_CODEC_H

#include <stdbool.h>
#include <stddef.h>

#include "ctier.h"

/* libzstd's levels, ZSTD_minCLevel()..ZSTD_maxCLevel() (1.5): negative ones are fast */
#define VT_ZSTD_MIN_LEVEL (-131072)
#define VT_ZSTD_MAX_LEVEL 22

struct vt_codec_ops {
	const char *name;		/* "lz4", "zstd", "deflate" */
	/*
	 * 0, 0 for a codec without levels. A range across 0 (zstd's negative
	 * fast levels) leaves 0 out: zstd's alias of its default level.
	 */
	int min_level, max_level;
	/* At store open, once per tier: working memory for @level. NULL: -ENOMEM. */
	void *(*ctx_new)(int level);
	/* At store close. NULL is fine. */
	void (*ctx_free)(void *ctx);
	/*
	 * On every put: compress @len bytes of @src into @dst (@cap bytes).
	 * Returns the compressed length, or -E2BIG when it does not fit in @cap.
	 */
	int (*compress)(void *ctx, const void *src, size_t len, void *dst, size_t cap);
	/*
	 * On every get: decompress @len bytes of @src into @dst (@cap bytes).
	 * Returns the decompressed length, or -EBADMSG on corrupt input; never
	 * reads or writes outside the buffers whatever @src holds.
	 */
	int (*decompress)(void *ctx, const void *src, size_t len, void *dst, size_t cap);
};

const struct vt_codec_ops *vt_codec_get(enum vt_codec_kind kind);
/* Kind of the codec named @name, or -EINVAL. */
int vt_codec_by_name(const char *name);
/* True when @level is one of @ops's levels (0 for a codec without levels). */
bool vt_codec_level_ok(const struct vt_codec_ops *ops, int level);

#endif
