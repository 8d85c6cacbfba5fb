// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The heatmap: binning of a 1 GiB and a 1 TiB guest (synthetic chunks, no
 * memory), the ring of windows, the JSON round trip and its refusals, the
 * SVG (parsed back as XML), the file writer, and the control request.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib/gstdio.h>

#include "daemon.h"
#include "heatmap.h"
#include "json_pin.h"
#include "vm.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
#define HVA0 0x7f0000000000ULL

static const char *const names3[] = { "dram", "cxl", "lz4" };

static struct vt_heatmap *new_map(const struct vt_heatmap_range *r, unsigned int n)
{
	struct vt_heatmap *h = g_new0(struct vt_heatmap, 1);

	assert_int_equal(vt_heatmap_layout(h, "gpa", r, n, names3, 3), 1);
	return h;
}

/* Bins cover the ranges exactly, in order, none across a hole or over bin_bytes. */
static void check_cover(const struct vt_heatmap *h, const struct vt_heatmap_range *r, unsigned int n)
{
	unsigned int i = 0;

	assert_true(h->nr_bins <= VT_HEATMAP_MAX_BINS);
	for (unsigned int k = 0; k < n; k++) {
		uint64_t a = r[k].addr;

		while (a < r[k].addr + r[k].len) {
			assert_true(i < h->nr_bins);
			assert_int_equal(h->bin[i].start, a);
			assert_true(h->bin[i].end <= r[k].addr + r[k].len);
			assert_true(h->bin[i].end - h->bin[i].start <= h->bin_bytes);
			assert_int_equal(h->bin[i].hva, r[k].hva + (a - r[k].addr));
			a = h->bin[i++].end;
		}
	}
	assert_int_equal(i, h->nr_bins);
}

/* 1 GiB guest: 256 bins of 4 MiB; a bin's mean, max and majority tier. */
static void test_small_guest(void **state)
{
	struct vt_heatmap_range r = { 0, GIB, HVA0 };
	g_autofree struct vt_heatmap *h = new_map(&r, 1);
	g_autofree struct vt_heatmap_acc *a = g_new0(struct vt_heatmap_acc, 1);
	const struct vt_heatmap_col *c;

	(void)state;
	assert_int_equal(h->bin_bytes, 4 * MIB);
	assert_int_equal(h->nr_bins, 256);
	check_cover(h, &r, 1);
	vt_heatmap_acc_reset(a, h);
	for (uint64_t off = 0; off < GIB; off += 2 * MIB) {
		/* bin 10 = chunks 20 and 21: one hot on dram, one cold on cxl;
		 * bin 11: both on cxl; everything else cold on lz4, bin 0 none present */
		unsigned int chunk = (unsigned int)(off / (2 * MIB));
		double ema = chunk == 20 ? 0.8 : chunk == 21 ? 0.2 : chunk == 22 ? 0.5 : 0;
		int tier = chunk == 20 ? 0 : chunk == 21 || chunk == 22 || chunk == 23 ? 1 :
			   chunk < 2 ? -1 : 2;

		vt_heatmap_acc_chunk(a, h, HVA0 + off, HVA0 + off + 2 * MIB, ema, tier);
	}
	vt_heatmap_push(h, a, 1000, 1);
	c = &h->col[vt_heatmap_col_index(h, 0)];
	assert_int_equal(c->window, 1);
	assert_int_equal(c->mean[10], 32768);	/* (0.8 + 0.2) / 2 */
	assert_int_equal(c->max[10], 52428);	/* 0.8 */
	assert_int_equal(c->tier[10], 0);	/* a tie: the faster tier */
	assert_int_equal(c->mean[11], 16384);
	assert_int_equal(c->tier[11], 1);
	assert_int_equal(c->tier[5], 2);
	assert_int_equal(c->tier[0], VT_HEATMAP_NO_TIER);
	assert_int_equal(c->mean[200], 0);
	/* a chunk outside the ranges counts nowhere; NaN and > 1 are clamped */
	vt_heatmap_acc_reset(a, h);
	vt_heatmap_acc_chunk(a, h, HVA0 - 2 * MIB, HVA0, 1.0, 0);
	vt_heatmap_acc_chunk(a, h, HVA0 + GIB, HVA0 + GIB + 2 * MIB, 1.0, 0);
	vt_heatmap_acc_chunk(a, h, HVA0, HVA0 + 2 * MIB, 0.0 / 0.0, 0);
	vt_heatmap_acc_chunk(a, h, HVA0 + 4 * MIB, HVA0 + 6 * MIB, 7.0, 0);
	vt_heatmap_push(h, a, 2000, 2);
	c = &h->col[vt_heatmap_col_index(h, 0)];
	assert_int_equal(c->max[0], 0);
	assert_int_equal(c->max[1], VT_HEATMAP_SCALE);
	for (unsigned int i = 2; i < h->nr_bins; i++)
		assert_int_equal(c->max[i], 0);
}

/* A 1 TiB guest, contiguous and with a PC-like hole below 4 GiB, chunks of 2 MiB. */
static void test_1tib_guest(void **state)
{
	struct vt_heatmap_range flat = { 0, 1024 * GIB, HVA0 };
	struct vt_heatmap_range pc[2] = { { 0, 3 * GIB, HVA0 }, { 4 * GIB, 1021 * GIB, HVA0 + 3 * GIB } };
	g_autofree struct vt_heatmap *h = new_map(&flat, 1);
	g_autofree struct vt_heatmap *p = NULL;
	g_autofree struct vt_heatmap_acc *a = g_new0(struct vt_heatmap_acc, 1);
	const struct vt_heatmap_col *c;
	unsigned int hole_bin = 0;

	(void)state;
	assert_int_equal(h->bin_bytes, 4 * GIB);
	assert_int_equal(h->nr_bins, 256);
	check_cover(h, &flat, 1);
	p = new_map(pc, 2);
	check_cover(p, pc, 2);
	assert_int_equal(p->bin_bytes, 8 * GIB);	/* 4 GiB bins would be 257 */
	for (unsigned int i = 1; i < p->nr_bins; i++)
		if (p->bin[i].start != p->bin[i - 1].end)
			hole_bin = i;
	assert_int_equal(hole_bin, 1);
	assert_int_equal(p->bin[0].end, 3 * GIB);
	assert_int_equal(p->bin[1].start, 4 * GIB);
	assert_int_equal(p->bin[1].end, 8 * GIB);
	/* one hot 2 MiB chunk at guest-physical 100 GiB: invisible in the mean, in the max */
	vt_heatmap_acc_reset(a, p);
	for (uint64_t hva = HVA0; hva < HVA0 + 1024 * GIB; hva += 2 * MIB)
		vt_heatmap_acc_chunk(a, p, hva, hva + 2 * MIB, hva == HVA0 + 99 * GIB ? 1.0 : 0.0,
				     hva < HVA0 + 512 * GIB ? 0 : 1);
	vt_heatmap_push(p, a, 5, 7);
	c = &p->col[vt_heatmap_col_index(p, 0)];
	for (unsigned int i = 0; i < p->nr_bins; i++) {
		bool has = p->bin[i].start <= 100 * GIB && 100 * GIB < p->bin[i].end;
		/* guest-physical 513 GiB is hva offset 512 GiB: the tier boundary */
		bool fast = p->bin[i].end <= 513 * GIB;

		assert_int_equal(c->max[i], has ? VT_HEATMAP_SCALE : 0);
		assert_int_equal(c->mean[i], has ? 16 : 0);	/* 2 MiB of 8 GiB */
		if (p->bin[i].start >= 513 * GIB)
			assert_int_equal(c->tier[i], 1);
		else if (fast)
			assert_int_equal(c->tier[i], 0);
	}
}

/* The ring keeps the last VT_HEATMAP_WINDOWS; layout changes start it afresh. */
static void test_ring(void **state)
{
	struct vt_heatmap_range r = { 0, 64 * MIB, HVA0 };
	struct vt_heatmap_range r2 = { 0, 128 * MIB, HVA0 };
	g_autofree struct vt_heatmap *h = new_map(&r, 1);
	g_autofree struct vt_heatmap_acc *a = g_new0(struct vt_heatmap_acc, 1);
	struct vt_heatmap_range bad[2] = { { 0, 64 * MIB, HVA0 }, { 32 * MIB, 64 * MIB, HVA0 } };

	(void)state;
	assert_int_equal(h->nr_bins, 32);	/* 2 MiB bins at least */
	for (unsigned int w = 1; w <= VT_HEATMAP_WINDOWS + 10; w++) {
		vt_heatmap_acc_reset(a, h);
		vt_heatmap_acc_chunk(a, h, HVA0, HVA0 + 2 * MIB, (w % 100) / 100.0, 0);
		vt_heatmap_push(h, a, (gint64)w * 1000, w);
		assert_int_equal(h->len, MIN(w, (unsigned int)VT_HEATMAP_WINDOWS));
	}
	assert_int_equal(h->col[vt_heatmap_col_index(h, 0)].window, VT_HEATMAP_WINDOWS + 10);
	assert_int_equal(h->col[vt_heatmap_col_index(h, VT_HEATMAP_WINDOWS - 1)].window, 11);
	for (unsigned int k = 1; k < h->len; k++)
		assert_true(h->col[vt_heatmap_col_index(h, k)].window + 1 ==
			    h->col[vt_heatmap_col_index(h, k - 1)].window);
	/* the same layout keeps the columns, another one clears them */
	assert_int_equal(vt_heatmap_layout(h, "gpa", &r, 1, names3, 3), 0);
	assert_int_equal(h->len, VT_HEATMAP_WINDOWS);
	assert_int_equal(vt_heatmap_layout(h, "gpa", &r, 1, names3, 2), 1);
	assert_int_equal(h->len, 0);
	assert_int_equal(vt_heatmap_layout(h, "gpa", &r2, 1, names3, 2), 1);
	assert_int_equal(h->nr_bins, 64);
	/* refusals leave it as it was */
	assert_int_equal(vt_heatmap_layout(h, "gpa", bad, 2, names3, 2), -EINVAL);
	assert_int_equal(vt_heatmap_layout(h, "gpa", &r, 0, names3, 2), -EINVAL);
	assert_int_equal(vt_heatmap_layout(h, "gpa", &r, 1, names3, VT_MAX_TIERS + 1), -EINVAL);
	assert_int_equal(h->nr_bins, 64);
}

/* A map of 2 ranges (a hole), 3 tiers and 40 windows of a moving hot spot. */
static struct vt_heatmap *sample_map(unsigned int windows)
{
	struct vt_heatmap_range r[2] = { { 0, 768 * MIB, HVA0 }, { GIB, 256 * MIB, HVA0 + 768 * MIB } };
	struct vt_heatmap *h = new_map(r, 2);
	g_autofree struct vt_heatmap_acc *a = g_new0(struct vt_heatmap_acc, 1);

	for (unsigned int w = 0; w < windows; w++) {
		vt_heatmap_acc_reset(a, h);
		for (uint64_t off = 0; off < GIB; off += 2 * MIB) {
			uint64_t hot = (64 + w * 12) * MIB;
			double ema = off >= hot && off < hot + 96 * MIB ? 0.9 :
				     off < 64 * MIB ? 0.3 : 0.01;

			vt_heatmap_acc_chunk(a, h, HVA0 + off, HVA0 + off + 2 * MIB, ema,
					     ema > 0.2 ? 0 : off < 768 * MIB ? 1 : 2);
		}
		vt_heatmap_push(h, a, (gint64)w * 1000000, w + 1);
	}
	return h;
}

static JsonNode *to_json(const struct vt_heatmap *h, gint64 now_us)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonGenerator) gen = json_generator_new();
	g_autoptr(JsonParser) p = json_parser_new();
	g_autoptr(JsonNode) root = NULL;
	g_autofree char *text = NULL;

	vt_heatmap_to_json(h, "vm0", 1000, now_us, b);
	root = json_builder_get_root(b);
	json_generator_set_root(gen, root);
	text = json_generator_to_data(gen, NULL);
	/* through text, as vtierctl gets it */
	assert_true(json_parser_load_from_data(p, text, -1, NULL));
	return json_node_copy(json_parser_get_root(p));
}

static void test_json_round_trip(void **state)
{
	g_autofree struct vt_heatmap *h = sample_map(40);
	g_autofree struct vt_heatmap *back = g_new0(struct vt_heatmap, 1);
	g_autoptr(JsonNode) n = to_json(h, 39000000);
	g_autoptr(GError) e = NULL;
	char name[64];

	(void)state;
	assert_true(vt_heatmap_from_json(n, back, name, sizeof(name), &e));
	assert_string_equal(name, "vm0");
	assert_string_equal(back->space, "gpa");
	assert_int_equal(back->bin_bytes, h->bin_bytes);
	assert_int_equal(back->nr_bins, h->nr_bins);
	assert_int_equal(back->nr_tiers, 3);
	assert_string_equal(back->tier_name[2], "lz4");
	assert_int_equal(back->len, 40);
	for (unsigned int i = 0; i < h->nr_bins; i++) {
		assert_int_equal(back->bin[i].start, h->bin[i].start);
		assert_int_equal(back->bin[i].end, h->bin[i].end);
	}
	for (unsigned int k = 0; k < 40; k++) {
		const struct vt_heatmap_col *x = &h->col[vt_heatmap_col_index(h, k)];
		const struct vt_heatmap_col *y = &back->col[vt_heatmap_col_index(back, k)];

		assert_int_equal(x->window, y->window);
		assert_int_equal(y->at_us, -(gint64)k * 1000000);	/* k seconds ago */
		assert_memory_equal(x->mean, y->mean, h->nr_bins * sizeof(x->mean[0]));
		assert_memory_equal(x->max, y->max, h->nr_bins * sizeof(x->max[0]));
		assert_memory_equal(x->tier, y->tier, h->nr_bins);
	}
}

/* Each edit of a good reply must be refused. */
static void test_json_refused(void **state)
{
	g_autofree struct vt_heatmap *h = sample_map(3);
	g_autofree struct vt_heatmap *back = g_new0(struct vt_heatmap, 1);
	/* regex -> replacement, applied to every match */
	static const char *const edits[][2] = {
		{ "\"tier\":\\[-?[0-9]+", "\"tier\":[3" },	/* tier index out of range */
		{ "\"tier\":\\[-?[0-9]+", "\"tier\":[-2" },
		{ "\"mean\":\\[[0-9]+", "\"mean\":[65536" },	/* above the scale */
		{ "\"max\":\\[[0-9]+,", "\"max\":[" },		/* one value short */
		{ "\"space\":\"gpa\"", "\"space\":\"../x\"" },
		{ "\"name\":\"vm0\"", "\"name\":\"../vm0\"" },
		{ "\"hot_scale\":65535", "\"hot_scale\":255" },
		{ "\"bin_bytes\":4194304", "\"bin_bytes\":4194303" },
		{ "\"bin_bytes\":4194304", "\"bin_bytes\":0" },
		{ "\\{\"start\":0,\"end\":4194304\\}", "{\"start\":4194304,\"end\":4194304}" },
		{ "\\{\"start\":4194304,\"end\":8388608\\}", "{\"start\":0,\"end\":8388608}" },
		{ "\"window\":1,", "\"window\":3," },		/* out of order */
		{ "\"age_ms\":", "\"age_ms\":-" },
		{ "\"cells\":\\[", "\"cells\":[{}," },		/* one more than windows */
		{ "\"tiers\":\\[\"dram\"", "\"tiers\":[1" },
		{ "\"mean\"", "\"mean_\"" },
	};
	g_autoptr(JsonNode) n = to_json(h, 3000000);
	g_autofree char *text = json_to_string(n, FALSE);

	(void)state;
	assert_int_equal(h->bin_bytes, 4 * MIB);
	for (unsigned int i = 0; i < G_N_ELEMENTS(edits); i++) {
		g_autoptr(JsonParser) p = json_parser_new();
		g_autoptr(GError) e = NULL;
		g_autoptr(GRegex) re = g_regex_new(edits[i][0], 0, 0, NULL);
		g_autofree char *bad = NULL;

		assert_non_null(re);
		if (!g_regex_match(re, text, 0, NULL))
			fail_msg("edit %u: '%s' not in the reply", i, edits[i][0]);
		bad = g_regex_replace_literal(re, text, -1, 0, edits[i][1], 0, NULL);
		if (!json_parser_load_from_data(p, bad, -1, NULL))
			continue;	/* not even JSON: refused earlier still */
		if (vt_heatmap_from_json(json_parser_get_root(p), back, NULL, 0, &e))
			fail_msg("edit %u accepted: %s", i, edits[i][1]);
		assert_int_equal(e->code, EINVAL);
	}
}

/* The SVG, parsed back as XML: one cell per bin and window, labels, legends. */
struct svg_count {
	unsigned int cells, lines_magenta, tier_paths, holes;
	GString *text;
	bool in_svg;
};

static void svg_start(GMarkupParseContext *ctx, const char *el, const char **an, const char **av,
		      gpointer data, GError **error)
{
	struct svg_count *s = data;
	const char *cls = NULL;

	(void)ctx;
	(void)error;
	for (unsigned int i = 0; an[i]; i++)
		if (strcmp(an[i], "class") == 0)
			cls = av[i];
	if (strcmp(el, "svg") == 0)
		s->in_svg = true;
	if (strcmp(el, "rect") == 0) {
		assert_non_null(cls);
		assert_string_equal(cls, "cell");
		s->cells++;
	}
	if (cls && strcmp(el, "path") == 0 && strcmp(cls, "tier") == 0)
		s->tier_paths++;
	if (cls && strcmp(el, "path") == 0 && strcmp(cls, "hole") == 0)
		s->holes++;
}

static void svg_text(GMarkupParseContext *ctx, const char *t, gsize len, gpointer data,
		     GError **error)
{
	struct svg_count *s = data;

	(void)ctx;
	(void)error;
	g_string_append_len(s->text, t, (gssize)len);
	g_string_append_c(s->text, '|');
}

static void parse_svg(const char *svg, struct svg_count *s)
{
	static const GMarkupParser parser = { .start_element = svg_start, .text = svg_text };
	g_autoptr(GMarkupParseContext) ctx = NULL;
	g_autoptr(GError) e = NULL;
	/* GMarkup takes no XML declaration */
	const char *body = strstr(svg, "<svg");

	assert_non_null(body);
	ctx = g_markup_parse_context_new(&parser, 0, s, NULL);
	if (!g_markup_parse_context_parse(ctx, body, -1, &e) ||
	    !g_markup_parse_context_end_parse(ctx, &e))
		fail_msg("SVG is not well-formed: %s", e->message);
}

static void test_svg(void **state)
{
	g_autofree struct vt_heatmap *h = sample_map(40);
	g_autofree struct vt_heatmap *empty = NULL;
	struct vt_heatmap_range r = { 0, GIB, HVA0 };
	struct vt_heatmap_svg_opts o = { .title = "vm0 <&> test", .now_us = 39000000 };
	g_autoptr(GString) out = g_string_new(NULL);
	struct svg_count s = { .text = g_string_new(NULL) };

	(void)state;
	assert_int_equal(vt_heatmap_svg(h, &o, out), 0);
	parse_svg(out->str, &s);
	assert_true(s.in_svg);
	assert_int_equal(s.cells, h->nr_bins * 40);
	assert_int_equal(s.holes, 1);
	assert_true(s.tier_paths >= 3);		/* hot spot on dram, cxl, lz4 */
	assert_non_null(strstr(out->str, "class=\"tier-edges\""));
	assert_non_null(strstr(out->str, "<line x1="));	/* tier changes drawn */
	assert_non_null(strstr(s.text->str, "vm0 <&> test"));	/* escaped, read back */
	assert_non_null(strstr(s.text->str, "|512 MiB|"));
	assert_non_null(strstr(s.text->str, "|1 GiB|"));	/* the range after the hole */
	assert_non_null(strstr(s.text->str, "|0|"));
	assert_non_null(strstr(s.text->str, "seconds ago"));
	assert_non_null(strstr(s.text->str, "|36|"));		/* a column's age in s */
	assert_non_null(strstr(s.text->str, "guest-physical address"));
	assert_non_null(strstr(s.text->str, "|dram|"));
	assert_non_null(strstr(s.text->str, "|lz4|"));
	assert_non_null(strstr(s.text->str, "none present"));
	/* the 1 TiB layout labels in GiB */
	{
		struct vt_heatmap_range big = { 0, 1024 * GIB, HVA0 };
		g_autofree struct vt_heatmap *t = new_map(&big, 1);
		g_autofree struct vt_heatmap_acc *a = g_new0(struct vt_heatmap_acc, 1);
		g_autoptr(GString) o2 = g_string_new(NULL);
		struct svg_count s2 = { .text = g_string_new(NULL) };

		vt_heatmap_acc_reset(a, t);
		vt_heatmap_push(t, a, 0, 1);
		assert_int_equal(vt_heatmap_svg(t, &o, o2), 0);
		parse_svg(o2->str, &s2);
		assert_int_equal(s2.cells, 256);
		assert_non_null(strstr(s2.text->str, "|128 GiB|"));
		assert_non_null(strstr(s2.text->str, "|1 TiB|"));
		g_string_free(s2.text, TRUE);
	}
	/* no window yet: nothing to draw */
	empty = new_map(&r, 1);
	assert_int_equal(vt_heatmap_svg(empty, &o, out), -ENODATA);
	g_string_free(s.text, TRUE);
}

static void test_write_file(void **state)
{
	g_autofree char *dir = g_dir_make_tmp("vtier-heat-XXXXXX", NULL);
	g_autofree char *file = g_build_filename(dir, "m.svg", NULL);
	g_autofree char *link = g_build_filename(dir, "link.svg", NULL);
	g_autofree char *fifo = g_build_filename(dir, "fifo.svg", NULL);
	g_autofree char *sub = g_build_filename(dir, "sub", NULL);
	g_autofree char *text = NULL;
	g_autoptr(GError) e = NULL;

	(void)state;
	assert_int_equal(vt_heatmap_write_file(file, "one", 3, NULL), 0);
	assert_int_equal(vt_heatmap_write_file(file, "two", 3, NULL), 0);	/* a regular file: replaced */
	assert_true(g_file_get_contents(file, &text, NULL, NULL));
	assert_string_equal(text, "two");
	assert_int_equal(symlink(file, link), 0);
	assert_int_equal(vt_heatmap_write_file(link, "x", 1, &e), -EEXIST);
	g_clear_error(&e);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(vt_heatmap_write_file(fifo, "x", 1, NULL), -EEXIST);
	assert_int_equal(g_mkdir(sub, 0700), 0);
	assert_int_equal(vt_heatmap_write_file(sub, "x", 1, NULL), -EEXIST);
	g_free(text);
	text = NULL;
	assert_true(g_file_get_contents(file, &text, NULL, NULL));
	assert_string_equal(text, "two");	/* the link's target untouched */
	g_unlink(link);
	g_unlink(fifo);
	g_rmdir(sub);
	g_unlink(file);
	g_rmdir(dir);
}

static char *request(struct vt_daemon *d, const char *req)
{
	return vt_daemon_handle(d, req, strlen(req));
}

/* The control request: unknown VM, no vm, a VM without RAM or windows yet. */
static void test_request(void **state)
{
	struct vt_tiers tiers = { .nr = 0 };
	struct vt_daemon *d = vt_daemon_new(&tiers, NULL);
	g_autofree char *r1 = request(d, "{\"v\":1,\"cmd\":\"heatmap\",\"vm\":\"nope\"}\n");
	g_autofree char *r2 = request(d, "{\"v\":1,\"cmd\":\"heatmap\"}\n");
	g_autofree char *r3 = request(d, "{\"v\":1,\"cmd\":\"heatmap\",\"vm\":\"../etc\"}\n");
	g_autofree char *r4 = request(d, "{\"v\":1,\"cmd\":\"heatmap\",\"vm\":\"vm0\",\"set\":[\"a=b\"]}\n");
	struct vt_vm *vm = g_new0(struct vt_vm, 1);
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonNode) n = NULL;
	g_autofree struct vt_heatmap *back = g_new0(struct vt_heatmap, 1);
	g_autoptr(GString) out = g_string_new(NULL);
	struct vt_heatmap_svg_opts o = { 0 };

	(void)state;
	assert_non_null(strstr(r1, "\"errno\":2"));
	assert_non_null(strstr(r1, "no VM named 'nope'"));
	assert_non_null(strstr(r2, "heatmap: needs 'vm'"));
	assert_non_null(strstr(r3, "\"errno\":22"));
	assert_non_null(strstr(r4, "'set' only goes with"));
	/* attached, no window yet: an empty map, which draws nothing */
	g_mutex_init(&vm->lock);
	g_strlcpy(vm->name, "vm0", sizeof(vm->name));
	vm->policy.window_ms = 1000;
	vt_vm_heatmap_to_json(vm, b);
	n = json_builder_get_root(b);
	assert_true(vt_heatmap_from_json(n, back, NULL, 0, NULL));
	assert_int_equal(back->len, 0);
	assert_int_equal(vt_heatmap_svg(back, &o, out), -ENODATA);
	g_mutex_clear(&vm->lock);
	g_free(vm);
	vt_daemon_free(d);
}

/*
 * docs/heatmap-example.svg: a 128 MiB guest with a hole (96 MiB at 0, 32 MiB
 * at 128 MiB), three tiers, 60 windows: a hot set that moves at window 30,
 * promoted to dram two windows after each change, the rest aging to lz4.
 */
static void write_example(const char *path)
{
	struct vt_heatmap_range r[2] = { { 0, 96 * MIB, HVA0 }, { 128 * MIB, 32 * MIB, HVA0 + 96 * MIB } };
	g_autofree struct vt_heatmap *h = new_map(r, 2);
	g_autofree struct vt_heatmap_acc *a = g_new0(struct vt_heatmap_acc, 1);
	struct vt_heatmap_svg_opts o = { .title = "vm0: hotness by guest-physical address, "
					 "last 60 windows of 1000 ms (synthetic)", .now_us = 59000000 };
	g_autoptr(GString) out = g_string_new(NULL);
	double ema[64] = { 0 };
	int tier[64];

	for (unsigned int c = 0; c < 64; c++)
		tier[c] = c < 32 ? 0 : 1;
	for (unsigned int w = 0; w < 60; w++) {
		vt_heatmap_acc_reset(a, h);
		for (unsigned int c = 0; c < 64; c++) {
			bool hot = w < 30 ? c >= 8 && c < 20 : c >= 44 && c < 58;
			double access = hot ? 0.6 + 0.3 * ((c * 7 + w * 3) % 5) / 4.0 :
					c < 4 ? 0.15 : 0.0;

			ema[c] = 0.5 * ema[c] + 0.5 * access;
			if (ema[c] > 0.3 && tier[c] != 0 && w % 2 == 0)
				tier[c] = 0;
			else if (ema[c] < 0.01 && tier[c] == 0 && w > 6 && c >= 4)
				tier[c] = 1;
			else if (ema[c] < 0.001 && tier[c] == 1 && w > 20)
				tier[c] = 2;
			vt_heatmap_acc_chunk(a, h, HVA0 + c * 2 * MIB, HVA0 + (c + 1) * 2 * MIB,
					     ema[c], tier[c]);
		}
		vt_heatmap_push(h, a, (gint64)w * 1000000, w + 1);
	}
	assert_int_equal(vt_heatmap_svg(h, &o, out), 0);
	assert_int_equal(vt_heatmap_write_file(path, out->str, out->len, NULL), 0);
}

/* The heatmap's text, byte for byte: the view may be written another way, not change. */
static void test_json_pinned(void **state)
{
	g_autofree struct vt_heatmap *h = sample_map(40);
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autofree char *text = NULL;

	(void)state;
	vt_heatmap_to_json(h, "vm0", 1000, 39000000, b);
	text = json_pin_text(b);
	assert_true(json_pin_matches("heatmap", text,
		"8d951b52a28f3009eee5a9f15f3f14c14e397f6651e0cbec4074b5aca893e531"));
}

int main(void)
{
	const char *example = g_getenv("VTIER_HEATMAP_EXAMPLE");

	if (example && *example) {
		write_example(example);
		return 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_guest),
		cmocka_unit_test(test_1tib_guest),
		cmocka_unit_test(test_ring),
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_json_pinned),
		cmocka_unit_test(test_json_refused),
		cmocka_unit_test(test_svg),
		cmocka_unit_test(test_write_file),
		cmocka_unit_test(test_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
