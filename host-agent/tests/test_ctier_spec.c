// SPDX-License-Identifier: GPL-2.0-or-later
/* [ctier.NAME] groups: good specs and their description; every bad key and value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <zstd.h>

#include "ctier.h"
#include "ctier_codec.h"

static bool parse(const char *text, const char *group, struct vt_ctier_spec *out, GError **e)
{
	GKeyFile *k = g_key_file_new();
	bool ok;

	assert_true(g_key_file_load_from_data(k, text, strlen(text), G_KEY_FILE_NONE, NULL));
	ok = vt_ctier_spec_parse(k, group, out, e);
	g_key_file_free(k);
	return ok;
}

static void test_good(void **state)
{
	static const struct {
		const char *text, *group, *describe;
		unsigned int pct;
		uint64_t capacity;
	} good[] = {
		{ "[ctier.warm]\ncodec=lz4\npool=zsmalloc\nmedium=node:1\n", "ctier.warm",
		  "lz4 x zsmalloc x node:1", 75, 0 },
		{ "[ctier.cold-2]\ncodec=zstd:19\npool=zbud\nmedium=file:/var/lib/vtier\n"
		  "max_stored_pct=50\ncapacity=4GiB\n", "ctier.cold-2",
		  "zstd:19 x zbud x file:/var/lib/vtier", 50, 4ULL << 30 },
		{ "[ctier.z]\ncodec=deflate\npool=zbud\nmedium=node:0\ncapacity=1GiB+512MiB\n",
		  "ctier.z", "deflate:6 x zbud x node:0", 75, 3ULL << 29 },
		{ "[ctier.a_b]\ncodec = zstd\npool = zsmalloc\nmedium = node:3\n"
		  "max_stored_pct = 100\n", "ctier.a_b", "zstd:3 x zsmalloc x node:3", 100, 0 },
		/* zstd's fast (negative) levels and its top ones */
		{ "[ctier.fast]\ncodec=zstd:-1\npool=zsmalloc\nmedium=node:0\n", "ctier.fast",
		  "zstd:-1 x zsmalloc x node:0", 75, 0 },
		{ "[ctier.fast]\ncodec=zstd:-131072\npool=zsmalloc\nmedium=node:0\n", "ctier.fast",
		  "zstd:-131072 x zsmalloc x node:0", 75, 0 },
		{ "[ctier.dense]\ncodec=zstd:22\npool=zsmalloc\nmedium=node:0\n", "ctier.dense",
		  "zstd:22 x zsmalloc x node:0", 75, 0 },
		/* the rule of [tier.NAME] and tiers=: capitals, '.', ':' */
		{ "[ctier.LZ4.fast:1]\ncodec=lz4\npool=zbud\nmedium=node:0\n", "ctier.LZ4.fast:1",
		  "lz4 x zbud x node:0", 75, 0 },
	};

	(void)state;
	for (unsigned int i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct vt_ctier_spec s;
		GError *e = NULL;
		char buf[300];

		if (!parse(good[i].text, good[i].group, &s, &e))
			fail_msg("%s: %s", good[i].group, e->message);
		vt_ctier_spec_describe(&s, buf, sizeof(buf));
		assert_string_equal(buf, good[i].describe);
		assert_int_equal(s.max_stored_pct, good[i].pct);
		assert_int_equal(s.capacity_bytes, good[i].capacity);
		assert_string_equal(s.name, good[i].group + 6);
	}
}

static void test_bad(void **state)
{
	static const struct {
		const char *group, *key, *value, *needle;
	} bad[] = {
		{ "ctier.t", "colour", "red", "colour: unknown key" },
		{ "ctier.t", "codec", "lzo", "unknown codec" },
		{ "ctier.t", "codec", "zstd:99", "level of zstd must be -131072..-1 (fast) or 1..22" },
		{ "ctier.t", "codec", "zstd:23", "level of zstd must be -131072..-1 (fast) or 1..22" },
		{ "ctier.t", "codec", "zstd:-131073", "level of zstd must be -131072..-1" },
		{ "ctier.t", "codec", "zstd:0", "level of zstd" },
		{ "ctier.t", "codec", "zstd:-0", "level of zstd" },
		{ "ctier.t", "codec", "zstd:--1", "level of zstd" },
		{ "ctier.t", "codec", "zstd:", "level of zstd" },
		{ "ctier.t", "codec", "deflate:-1", "level of deflate must be 1..9" },
		{ "ctier.t", "codec", "lz4:-1", "takes no level" },
		{ "ctier.t", "codec", "deflate:10", "level of deflate must be 1..9" },
		{ "ctier.t", "codec", "lz4:3", "takes no level" },
		{ "ctier.t", "pool", "slab", "unknown pool" },
		{ "ctier.t", "medium", "file:relative/dir", "absolute directory" },
		{ "ctier.t", "medium", "node:", "neither node:N" },
		{ "ctier.t", "medium", "node:-1", "neither node:N" },
		{ "ctier.t", "medium", "tape", "neither node:N" },
		{ "ctier.t", "max_stored_pct", "5", "10..100" },
		{ "ctier.t", "max_stored_pct", "101", "10..100" },
		{ "ctier.t", "max_stored_pct", "7x", "10..100" },
		{ "ctier.t", "capacity", "lots", "capacity" },
		{ "ctier.t", "capacity", "4 parsecs", "capacity" },
		/* the one tier-name rule (util/tier_name.h): 15 characters, the wire's */
		{ "ctier.0123456789abcdef", NULL, NULL, "1..15 characters of A-Z a-z 0-9 . _ : -" },
		{ "ctier.a b", NULL, NULL, "ctier.NAME" },
		{ "ctier.", NULL, NULL, "ctier.NAME" },
		{ "ctier.a/b", NULL, NULL, "ctier.NAME" },
		{ "ctier.0123456789012345678901234567890123", NULL, NULL, "ctier.NAME" },
		{ "tier.t", NULL, NULL, "ctier.NAME" },
	};

	(void)state;
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		g_autofree char *text = NULL;
		struct vt_ctier_spec s;
		GError *e = NULL;
		const char *codec = "lz4", *pool = "zbud", *medium = "node:0", *extra = "";

		if (bad[i].key && !strcmp(bad[i].key, "codec"))
			codec = bad[i].value;
		else if (bad[i].key && !strcmp(bad[i].key, "pool"))
			pool = bad[i].value;
		else if (bad[i].key && !strcmp(bad[i].key, "medium"))
			medium = bad[i].value;
		if (bad[i].key && strcmp(bad[i].key, "codec") && strcmp(bad[i].key, "pool") &&
		    strcmp(bad[i].key, "medium"))
			extra = g_strdup_printf("%s=%s\n", bad[i].key, bad[i].value);
		text = g_strdup_printf("[%s]\ncodec=%s\npool=%s\nmedium=%s\n%s", bad[i].group,
				       codec, pool, medium, extra);
		if (*extra)
			g_free((char *)extra);
		assert_false(parse(text, bad[i].group, &s, &e));
		assert_non_null(e);
		if (!strstr(e->message, bad[i].needle))
			fail_msg("%s %s=%s: '%s' lacks '%s'", bad[i].group, bad[i].key,
				 bad[i].value, e->message, bad[i].needle);
		g_error_free(e);
	}
}

/*
 * The accepted zstd levels are the library's, and each of them (the ends
 * and the fast ones) compresses a page that decompresses to itself.
 */
static void test_zstd_levels(void **state)
{
	const struct vt_codec_ops *z = vt_codec_get(VT_CODEC_ZSTD);
	static const int levels[] = { VT_ZSTD_MIN_LEVEL, -5, -1, 1, 3, VT_ZSTD_MAX_LEVEL };
	uint8_t page[4096], c[ZSTD_COMPRESSBOUND(4096)], out[4096];

	(void)state;
	assert_int_equal(z->min_level, ZSTD_minCLevel());
	assert_int_equal(z->max_level, ZSTD_maxCLevel());
	assert_false(vt_codec_level_ok(z, 0));
	assert_false(vt_codec_level_ok(z, ZSTD_maxCLevel() + 1));
	assert_false(vt_codec_level_ok(vt_codec_get(VT_CODEC_LZ4), 1));
	assert_true(vt_codec_level_ok(vt_codec_get(VT_CODEC_LZ4), 0));
	for (unsigned int i = 0; i < sizeof(page); i++)
		page[i] = (uint8_t)("vtier compressed tier "[i % 22] + i / 512);
	for (unsigned int i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		void *ctx = z->ctx_new(levels[i]);
		int n;

		assert_non_null(ctx);
		n = z->compress(ctx, page, sizeof(page), c, sizeof(c));
		assert_true(n > 0);
		if (levels[i] >= -5)
			assert_true(n < (int)sizeof(page) / 2);
		memset(out, 0, sizeof(out));
		assert_int_equal(z->decompress(ctx, c, (size_t)n, out, sizeof(out)), sizeof(page));
		assert_memory_equal(out, page, sizeof(page));
		z->ctx_free(ctx);
	}
}

static void test_missing(void **state)
{
	struct vt_ctier_spec s;
	GError *e = NULL;

	(void)state;
	assert_false(parse("[ctier.t]\ncodec=lz4\nmedium=node:0\n", "ctier.t", &s, &e));
	assert_non_null(strstr(e->message, "pool: missing"));
	g_clear_error(&e);
	assert_false(parse("[ctier.t]\ncodec=lz4\n", "ctier.u", &s, &e));
	g_clear_error(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_zstd_levels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
