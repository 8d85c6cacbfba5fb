// SPDX-License-Identifier: GPL-2.0-or-later
/* A guest-like mix of page contents (tests and benchmarks of the compressed tiers). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "ctier_mix.h"

#define PAGE 4096U
#define TEXT_PAGES 1024U		/* 4 MiB of text */
#define BIN_PAGES 2048U			/* 8 MiB of binaries */

static const char *const kind_names[VT_MIX_NR] = {
	"zero", "same", "text", "binary", "random",
};

/* Default: roughly what an idle Debian guest's evicted memory looks like. */
static const unsigned int default_weight[VT_MIX_NR] = { 30, 5, 25, 25, 15 };

const char *vt_mix_kind_name(enum vt_mix_kind kind)
{
	return (unsigned int)kind < VT_MIX_NR ? kind_names[kind] : "?";
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whole pages of the regular files under @dirs[] whose names pass @want, up to @max. */
static size_t slurp(const char *const *dirs, bool (*want)(const char *), uint8_t *buf,
		    size_t max)
{
	size_t pages = 0;

	for (const char *const *d = dirs; *d && pages < max; d++) {
		GDir *dir = g_dir_open(*d, 0, NULL);
		GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
		const char *n;

		if (!dir)
			continue;
		while ((n = g_dir_read_name(dir)))
			if (want(n))
				g_ptr_array_add(names, g_strdup(n));
		g_dir_close(dir);
		/* sorted: the same host gives the same mix */
		g_ptr_array_sort(names, cmp_names);
		for (unsigned int i = 0; i < names->len && pages < max; i++) {
			g_autofree char *path = g_build_filename(*d, names->pdata[i], NULL);
			FILE *f = fopen(path, "rb");

			if (!f)
				continue;
			while (pages < max && fread(buf + pages * PAGE, PAGE, 1, f) == 1)
				pages++;
			fclose(f);
		}
		g_ptr_array_free(names, TRUE);
	}
	return pages;
}

static bool is_text(const char *name)
{
	return g_str_has_suffix(name, ".h") || !strchr(name, '.');
}

static bool is_binary(const char *name)
{
	return name[0] != '.';
}

int vt_mix_init(struct vt_mix *m, const char *spec, uint64_t seed, char *why, size_t why_len)
{
	static const char *const text_dirs[] = { "/usr/share/common-licenses", "/usr/include",
						 "/usr/share/doc/glib-2.0", NULL };
	static const char *const bin_dirs[] = { "/usr/bin", "/usr/sbin", NULL };
	unsigned int sum = 0;

	memset(m, 0, sizeof(*m));
	m->seed = seed;
	memcpy(m->weight, default_weight, sizeof(m->weight));
	if (spec) {
		g_auto(GStrv) parts = g_strsplit(spec, ",", -1);

		memset(m->weight, 0, sizeof(m->weight));
		for (char **p = parts; *p; p++) {
			char *eq = strchr(*p, '=');
			guint64 w;
			unsigned int k;

			for (k = 0; eq && k < VT_MIX_NR; k++)
				if (strlen(kind_names[k]) == (size_t)(eq - *p) &&
				    !strncmp(*p, kind_names[k], (size_t)(eq - *p)))
					break;
			if (!eq || k == VT_MIX_NR ||
			    !g_ascii_string_to_unsigned(eq + 1, 10, 0, 1000, &w, NULL)) {
				snprintf(why, why_len, "mix: '%s' is not KIND=WEIGHT (zero, same, "
					 "text, binary, random; weights 0..1000)", *p);
				return -EINVAL;
			}
			m->weight[k] = (unsigned int)w;
		}
	}
	for (unsigned int k = 0; k < VT_MIX_NR; k++)
		sum += m->weight[k];
	if (!sum) {
		snprintf(why, why_len, "mix: all weights are zero");
		return -EINVAL;
	}
	m->text = g_malloc(TEXT_PAGES * PAGE);
	m->bin = g_malloc(BIN_PAGES * PAGE);
	m->text_pages = slurp(text_dirs, is_text, m->text, TEXT_PAGES);
	m->bin_pages = slurp(bin_dirs, is_binary, m->bin, BIN_PAGES);
	if (!m->text_pages || !m->bin_pages) {
		snprintf(why, why_len, "mix: found no %s under /usr",
			 m->text_pages ? "binaries" : "text");
		vt_mix_free(m);
		return -ENOENT;
	}
	return 0;
}

void vt_mix_free(struct vt_mix *m)
{
	g_free(m->text);
	g_free(m->bin);
	m->text = m->bin = NULL;
}

void vt_mix_fill(const struct vt_mix *m, enum vt_mix_kind kind, uint64_t i, void *page)
{
	uint64_t h = mix64(m->seed ^ mix64(i + 1)), *w = page;

	switch (kind) {
	case VT_MIX_ZERO:
		memset(page, 0, PAGE);
		break;
	case VT_MIX_SAME:
		for (unsigned int k = 0; k < PAGE / 8; k++)
			w[k] = h | 1;
		break;
	case VT_MIX_TEXT:
		memcpy(page, m->text + (h % m->text_pages) * PAGE, PAGE);
		break;
	case VT_MIX_BINARY:
		memcpy(page, m->bin + (h % m->bin_pages) * PAGE, PAGE);
		break;
	default:
		for (unsigned int k = 0; k < PAGE / 8; k++)
			w[k] = h = mix64(h + k);
		break;
	}
}

enum vt_mix_kind vt_mix_page(const struct vt_mix *m, uint64_t i, void *page)
{
	unsigned int sum = 0, k;
	uint64_t pick;

	for (k = 0; k < VT_MIX_NR; k++)
		sum += m->weight[k];
	pick = mix64(m->seed * 31 + i) % sum;
	for (k = 0; k < VT_MIX_NR - 1; k++) {
		if (pick < m->weight[k])
			break;
		pick -= m->weight[k];
	}
	vt_mix_fill(m, k, i, page);
	return k;
}
