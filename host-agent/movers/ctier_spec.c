// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * [ctier.NAME] config groups: the compressed tiers of this host. Unknown keys
 * and bad values are errors naming the key, so that a typo never silently
 * changes a tier.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctier.h"
#include "tier_name.h"
#include "ctier_codec.h"
#include "size.h"

#define SPEC_ERR(error, ...) \
	g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, __VA_ARGS__)

static const char *const pool_names[] = {
	[VT_POOL_ZSMALLOC] = "zsmalloc",
	[VT_POOL_ZBUD] = "zbud",
};

/* "123" -> 123 within [lo, hi]; anything else false. */
static bool parse_uint(const char *s, unsigned int lo, unsigned int hi, unsigned int *out)
{
	guint64 v;

	if (!g_ascii_string_to_unsigned(s, 10, lo, hi, &v, NULL))
		return false;
	*out = (unsigned int)v;
	return true;
}

static bool parse_codec(const char *group, const char *v, struct vt_ctier_spec *out,
			GError **error)
{
	g_auto(GStrv) parts = g_strsplit(v, ":", 2);
	const struct vt_codec_ops *ops;
	gint64 level;
	int kind = vt_codec_by_name(parts[0] ? parts[0] : "");

	if (kind < 0) {
		SPEC_ERR(error, "[%s] codec: unknown codec '%s' (lz4, zstd[:LEVEL], deflate[:1-9])",
			 group, v);
		return false;
	}
	ops = vt_codec_get(kind);
	out->codec = kind;
	if (!parts[1]) {
		/* the libraries' own defaults */
		out->level = kind == VT_CODEC_ZSTD ? 3 : kind == VT_CODEC_DEFLATE ? 6 : 0;
		return true;
	}
	if (ops->max_level == 0) {
		SPEC_ERR(error, "[%s] codec: %s takes no level ('%s')", group, ops->name, v);
		return false;
	}
	if (!g_ascii_string_to_signed(parts[1], 10, ops->min_level, ops->max_level, &level,
				      NULL) || !vt_codec_level_ok(ops, (int)level)) {
		if (ops->min_level < 0)
			SPEC_ERR(error, "[%s] codec: level of %s must be %d..-1 (fast) or 1..%d "
				 "('%s')", group, ops->name, ops->min_level, ops->max_level, v);
		else
			SPEC_ERR(error, "[%s] codec: level of %s must be %d..%d ('%s')", group,
				 ops->name, ops->min_level, ops->max_level, v);
		return false;
	}
	out->level = (int)level;
	return true;
}

static bool parse_medium(const char *group, const char *v, struct vt_ctier_spec *out,
			 GError **error)
{
	unsigned int node;

	if (g_str_has_prefix(v, "node:") && parse_uint(v + 5, 0, 1023, &node)) {
		out->medium = VT_MEDIUM_NODE;
		out->node = (int)node;
		return true;
	}
	if (g_str_has_prefix(v, "file:")) {
		const char *dir = v + 5;

		if (dir[0] != '/' || strlen(dir) >= sizeof(out->dir)) {
			SPEC_ERR(error, "[%s] medium: file: needs an absolute directory shorter "
				 "than %zu bytes ('%s')", group, sizeof(out->dir), v);
			return false;
		}
		out->medium = VT_MEDIUM_FILE;
		out->node = -1;
		g_strlcpy(out->dir, dir, sizeof(out->dir));
		return true;
	}
	SPEC_ERR(error, "[%s] medium: '%s' is neither node:N nor file:/ABS/DIR", group, v);
	return false;
}

char *vt_ctier_key_value(GKeyFile *kf, const char *group, const char *key, GError **error)
{
	GError *ge = NULL;
	/* GLib returns the value and sets the error on a bad escape (a trailing
	 * backslash): the error is what counts */
	char *v = g_key_file_get_string(kf, group, key, &ge);

	if (ge || !v) {
		g_free(v);
		if (ge)
			g_propagate_error(error, ge);
		else
			SPEC_ERR(error, "[%s] %s: no value", group, key);
		return NULL;
	}
	return g_strstrip(v);
}

bool vt_ctier_spec_parse(GKeyFile *kf, const char *group, struct vt_ctier_spec *out,
			 GError **error)
{
	g_auto(GStrv) keys = NULL;
	bool has_codec = false, has_pool = false, has_medium = false;

	memset(out, 0, sizeof(*out));
	out->max_stored_pct = 75;
	if (!g_str_has_prefix(group, "ctier.") || !vt_tier_name_ok(group + 6)) {
		SPEC_ERR(error, "[%s]: a compressed tier's group is ctier.NAME, NAME "
			 VT_TIER_NAME_RULE, group);
		return false;
	}
	g_strlcpy(out->name, group + 6, sizeof(out->name));
	keys = g_key_file_get_keys(kf, group, NULL, error);
	if (!keys)
		return false;
	for (char **k = keys; *k; k++) {
		g_autofree char *v = vt_ctier_key_value(kf, group, *k, error);

		if (!v)
			return false;
		if (strcmp(*k, "codec") == 0) {
			if (!parse_codec(group, v, out, error))
				return false;
			has_codec = true;
		} else if (strcmp(*k, "pool") == 0) {
			unsigned int i;

			for (i = 0; i < G_N_ELEMENTS(pool_names); i++)
				if (strcmp(v, pool_names[i]) == 0)
					break;
			if (i == G_N_ELEMENTS(pool_names)) {
				SPEC_ERR(error, "[%s] pool: unknown pool '%s' (zsmalloc, zbud)",
					 group, v);
				return false;
			}
			out->pool = i;
			has_pool = true;
		} else if (strcmp(*k, "medium") == 0) {
			if (!parse_medium(group, v, out, error))
				return false;
			has_medium = true;
		} else if (strcmp(*k, "max_stored_pct") == 0) {
			if (!parse_uint(v, 10, 100, &out->max_stored_pct)) {
				SPEC_ERR(error, "[%s] max_stored_pct: must be 10..100 ('%s')", group, v);
				return false;
			}
		} else if (strcmp(*k, "capacity") == 0) {
			GError *e = NULL;

			if (!vt_parse_size(v, &out->capacity_bytes, &e)) {
				SPEC_ERR(error, "[%s] capacity: %s", group, e->message);
				g_error_free(e);
				return false;
			}
		} else if (strcmp(*k, "price_usd_per_gib") == 0) {
			/* the agent's tier model reads it (model/tier_model.c), not the store */
		} else {
			SPEC_ERR(error, "[%s] %s: unknown key (codec, pool, medium, max_stored_pct, "
				 "capacity, price_usd_per_gib)", group, *k);
			return false;
		}
	}
	if (!has_codec || !has_pool || !has_medium) {
		SPEC_ERR(error, "[%s] %s: missing (codec, pool and medium are required)", group,
			 !has_codec ? "codec" : !has_pool ? "pool" : "medium");
		return false;
	}
	return true;
}

void vt_ctier_spec_describe(const struct vt_ctier_spec *spec, char *buf, size_t len)
{
	const struct vt_codec_ops *ops = vt_codec_get(spec->codec);
	char codec[32], medium[sizeof(spec->dir) + 8];

	if (ops && ops->max_level)
		snprintf(codec, sizeof(codec), "%s:%d", ops->name, spec->level);
	else
		snprintf(codec, sizeof(codec), "%s", ops ? ops->name : "?");
	if (spec->medium == VT_MEDIUM_REMOTE) {
		snprintf(buf, len, "%s x remote", codec);
		return;
	}
	if (spec->medium == VT_MEDIUM_NODE)
		snprintf(medium, sizeof(medium), "node:%d", spec->node);
	else
		snprintf(medium, sizeof(medium), "file:%s", spec->dir);
	snprintf(buf, len, "%s x %s x %s", codec,
		 (unsigned int)spec->pool < G_N_ELEMENTS(pool_names) ? pool_names[spec->pool] : "?",
		 medium);
}
