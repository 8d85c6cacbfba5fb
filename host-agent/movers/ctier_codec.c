// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lz4 (liblz4), zstd (libzstd) and deflate behind struct vt_codec_ops;
 * deflate compresses with zlib and decompresses with libdeflate (the same
 * raw format, in about half the time per page).
 */
#include <errno.h>
#include <string.h>

#include <glib.h>
#include <libdeflate.h>
#include <lz4.h>
#include <zlib.h>
#include <zstd.h>

#include "ctier_codec.h"

/* lz4: the state of LZ4_compress_fast_extState, no level. */
static void *lz4_ctx_new(int level)
{
	(void)level;
	return g_try_malloc0(LZ4_sizeofState());
}

static void lz4_ctx_free(void *ctx)
{
	g_free(ctx);
}

static int lz4_compress(void *ctx, const void *src, size_t len, void *dst, size_t cap)
{
	int n = LZ4_compress_fast_extState(ctx, src, dst, (int)len, (int)cap, 1);

	return n > 0 ? n : -E2BIG;
}

static int lz4_decompress(void *ctx, const void *src, size_t len, void *dst, size_t cap)
{
	int n = LZ4_decompress_safe(src, dst, (int)len, (int)cap);

	(void)ctx;
	return n >= 0 ? n : -EBADMSG;
}

/* zstd: one compression and one decompression context per tier. */
struct zstd_ctx {
	ZSTD_CCtx *c;
	ZSTD_DCtx *d;
	int level;
};

static void zstd_ctx_free(void *ctx)
{
	struct zstd_ctx *z = ctx;

	if (!z)
		return;
	ZSTD_freeCCtx(z->c);
	ZSTD_freeDCtx(z->d);
	g_free(z);
}

static void *zstd_ctx_new(int level)
{
	struct zstd_ctx *z = g_try_new0(struct zstd_ctx, 1);

	if (!z)
		return NULL;
	z->c = ZSTD_createCCtx();
	z->d = ZSTD_createDCtx();
	z->level = level;
	if (!z->c || !z->d) {
		zstd_ctx_free(z);
		return NULL;
	}
	return z;
}

static int zstd_compress(void *ctx, const void *src, size_t len, void *dst, size_t cap)
{
	struct zstd_ctx *z = ctx;
	size_t n = ZSTD_compressCCtx(z->c, dst, cap, src, len, z->level);

	return ZSTD_isError(n) ? -E2BIG : (int)n;
}

static int zstd_decompress(void *ctx, const void *src, size_t len, void *dst, size_t cap)
{
	struct zstd_ctx *z = ctx;
	size_t n = ZSTD_decompressDCtx(z->d, dst, cap, src, len);

	return ZSTD_isError(n) ? -EBADMSG : (int)n;
}

/*
 * deflate: raw deflate streams (no zlib header: the store checksums pages).
 * zlib's deflate writes them, as it always has (its levels, its ratios);
 * libdeflate's whole-buffer decompressor reads them: a 4 KiB page is one
 * buffer, and it decodes one in half the time of zlib's inflate.
 */
struct deflate_ctx {
	z_stream c;
	struct libdeflate_decompressor *d;
};

static void deflate_ctx_free(void *ctx)
{
	struct deflate_ctx *z = ctx;

	if (!z)
		return;
	deflateEnd(&z->c);
	libdeflate_free_decompressor(z->d);
	g_free(z);
}

static void *deflate_ctx_new(int level)
{
	struct deflate_ctx *z = g_try_new0(struct deflate_ctx, 1);

	if (!z)
		return NULL;
	if (deflateInit2(&z->c, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		g_free(z);
		return NULL;
	}
	z->d = libdeflate_alloc_decompressor();
	if (!z->d) {
		deflateEnd(&z->c);
		g_free(z);
		return NULL;
	}
	return z;
}

static int deflate_compress(void *ctx, const void *src, size_t len, void *dst, size_t cap)
{
	struct deflate_ctx *z = ctx;
	int r;

	if (deflateReset(&z->c) != Z_OK)
		return -EIO;
	z->c.next_in = (Bytef *)src;
	z->c.avail_in = (uInt)len;
	z->c.next_out = dst;
	z->c.avail_out = (uInt)cap;
	r = deflate(&z->c, Z_FINISH);
	return r == Z_STREAM_END ? (int)z->c.total_out : -E2BIG;
}

static int deflate_decompress(void *ctx, const void *src, size_t len, void *dst, size_t cap)
{
	struct deflate_ctx *z = ctx;
	size_t n = 0;

	/* a stream that does not end within @src, or would overflow @cap: bad */
	if (libdeflate_deflate_decompress(z->d, src, len, dst, cap, &n) != LIBDEFLATE_SUCCESS)
		return -EBADMSG;
	return (int)n;
}

static const struct vt_codec_ops codecs[] = {
	[VT_CODEC_LZ4] = {
		.name = "lz4", .min_level = 0, .max_level = 0,
		.ctx_new = lz4_ctx_new, .ctx_free = lz4_ctx_free,
		.compress = lz4_compress, .decompress = lz4_decompress,
	},
	/* all of libzstd's levels: ZSTD_minCLevel()..ZSTD_maxCLevel() (test_ctier_spec) */
	[VT_CODEC_ZSTD] = {
		.name = "zstd", .min_level = VT_ZSTD_MIN_LEVEL, .max_level = VT_ZSTD_MAX_LEVEL,
		.ctx_new = zstd_ctx_new, .ctx_free = zstd_ctx_free,
		.compress = zstd_compress, .decompress = zstd_decompress,
	},
	[VT_CODEC_DEFLATE] = {
		.name = "deflate", .min_level = 1, .max_level = 9,
		.ctx_new = deflate_ctx_new, .ctx_free = deflate_ctx_free,
		.compress = deflate_compress, .decompress = deflate_decompress,
	},
};

const struct vt_codec_ops *vt_codec_get(enum vt_codec_kind kind)
{
	if ((unsigned int)kind >= G_N_ELEMENTS(codecs))
		return NULL;
	return &codecs[kind];
}

bool vt_codec_level_ok(const struct vt_codec_ops *ops, int level)
{
	if (ops->max_level == 0)
		return level == 0;
	return level >= ops->min_level && level <= ops->max_level && level != 0;
}

int vt_codec_by_name(const char *name)
{
	for (unsigned int i = 0; i < G_N_ELEMENTS(codecs); i++)
		if (strcmp(codecs[i].name, name) == 0)
			return (int)i;
	return -EINVAL;
}
