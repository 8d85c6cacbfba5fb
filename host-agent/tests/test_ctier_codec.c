// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The codecs' contract (ctier_codec.h): a page round-trips; a damaged or
 * truncated stream is refused or decodes to other bytes (the store's
 * CRC-32C then refuses it), never past the output's capacity; deflate's
 * streams written by zlib are what libdeflate reads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "ctier.h"
#include "ctier_codec.h"
#include "ctier_mix.h"

#define PAGE 4096U

static const struct {
	enum vt_codec_kind kind;
	int level;
} codecs[] = {
	{ VT_CODEC_LZ4, 0 }, { VT_CODEC_ZSTD, 3 }, { VT_CODEC_ZSTD, -1 },
	{ VT_CODEC_DEFLATE, 1 }, { VT_CODEC_DEFLATE, 6 }, { VT_CODEC_DEFLATE, 9 },
};

/* A text page and a binary page of the bench's mix. */
static void pages(uint8_t page[2][PAGE])
{
	struct vt_mix mix;
	char why[200];

	assert_int_equal(vt_mix_init(&mix, NULL, 1, why, sizeof(why)), 0);
	vt_mix_fill(&mix, VT_MIX_TEXT, 3, page[0]);
	vt_mix_fill(&mix, VT_MIX_BINARY, 5, page[1]);
	vt_mix_free(&mix);
}

static void test_round_trip_and_damage(void **state)
{
	uint8_t page[2][PAGE], c[2 * PAGE], out[PAGE + 64];

	(void)state;
	pages(page);
	for (unsigned int i = 0; i < G_N_ELEMENTS(codecs); i++)
		for (unsigned int p = 0; p < 2; p++) {
			const struct vt_codec_ops *o = vt_codec_get(codecs[i].kind);
			void *ctx = o->ctx_new(codecs[i].level);
			int n, r;

			assert_non_null(ctx);
			n = o->compress(ctx, page[p], PAGE, c, PAGE);
			assert_true(n > 0 && n < (int)PAGE);
			memset(out, 0xa5, sizeof(out));
			assert_int_equal(o->decompress(ctx, c, (size_t)n, out, PAGE), PAGE);
			assert_memory_equal(out, page[p], PAGE);
			/* one byte short of the page: refused, nothing past the capacity */
			memset(out, 0xa5, sizeof(out));
			assert_int_equal(o->decompress(ctx, c, (size_t)n, out, PAGE - 1), -EBADMSG);
			for (unsigned int k = PAGE - 1; k < sizeof(out); k++)
				assert_int_equal(out[k], 0xa5);
			/* truncated: never the page */
			r = o->decompress(ctx, c, (size_t)n / 2, out, PAGE);
			assert_true(r < 0 || r < (int)PAGE || memcmp(out, page[p], PAGE));
			/* a flipped byte: refused, or other bytes, which the CRC refuses */
			c[n / 2] ^= 0x5a;
			memset(out, 0xa5, sizeof(out));
			r = o->decompress(ctx, c, (size_t)n, out, PAGE);
			assert_true(r == -EBADMSG || (r >= 0 && r <= (int)PAGE));
			for (unsigned int k = PAGE; k < sizeof(out); k++)
				assert_int_equal(out[k], 0xa5);
			o->ctx_free(ctx);
		}
}

/* Streams that zlib's own raw deflate wrote (a store's pages before libdeflate read them). */
static void test_deflate_reads_zlib(void **state)
{
	const struct vt_codec_ops *o = vt_codec_get(VT_CODEC_DEFLATE);
	uint8_t page[2][PAGE], c[2 * PAGE], out[PAGE];

	(void)state;
	pages(page);
	for (int level = 1; level <= 9; level++)
		for (unsigned int p = 0; p < 2; p++) {
			z_stream z = { 0 };
			void *ctx = o->ctx_new(6);

			assert_int_equal(deflateInit2(&z, level, Z_DEFLATED, -15, 8,
						      Z_DEFAULT_STRATEGY), Z_OK);
			z.next_in = page[p];
			z.avail_in = PAGE;
			z.next_out = c;
			z.avail_out = sizeof(c);
			assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
			assert_int_equal(o->decompress(ctx, c, z.total_out, out, PAGE), PAGE);
			assert_memory_equal(out, page[p], PAGE);
			deflateEnd(&z);
			o->ctx_free(ctx);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_and_damage),
		cmocka_unit_test(test_deflate_reads_zlib),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
