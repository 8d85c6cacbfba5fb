// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The heatmap as SVG, written by hand (plain text, no plotting library):
 * x = windows, oldest left; y = address, lowest at the bottom, one row per
 * bin and a grey band for each hole between RAM ranges; colour = hotness on
 * a viridis ramp; a magenta line where the tier changes between two bins of
 * a column; a strip on the right with each bin's tier in the newest window.
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "heatmap.h"
#include "vm_policy.h"

#define LEFT 96			/* address labels */
#define TOP 48			/* title */
#define PLOT_W 720.0
#define PLOT_H 512.0
#define HOLE_H 6.0
#define BOTTOM 64		/* time labels */
#define STRIP_X 10		/* the tier strip, right of the plot */
#define STRIP_W 16
#define LEGEND_W 250
#define EDGE_COLOUR "#ff00ff"

/* matplotlib's viridis at 9 even stops */
static const unsigned char viridis[9][3] = {
	{ 68, 1, 84 }, { 71, 44, 122 }, { 59, 81, 139 }, { 44, 113, 142 }, { 33, 144, 141 },
	{ 39, 173, 129 }, { 92, 200, 99 }, { 170, 220, 50 }, { 253, 231, 37 },
};

/* categorical, away from viridis' blues, greens and yellows */
static const char *const tier_colours[VT_MAX_TIERS] = {
	"#d62728", "#ff7f0e", "#e377c2", "#8c564b", "#7f7f7f", "#9467bd", "#17becf", "#bcbd22",
};
#define NO_TIER_COLOUR "#ffffff"

static void ramp(double v, char out[8])
{
	double x = CLAMP(v, 0.0, 1.0) * 8;
	int i = MIN((int)x, 7);
	double f = x - i;
	unsigned int c[3];

	for (int k = 0; k < 3; k++)
		c[k] = (unsigned int)lround(viridis[i][k] + f * (viridis[i + 1][k] - viridis[i][k]));
	g_snprintf(out, 8, "#%02x%02x%02x", c[0], c[1], c[2]);
}

static char *size_label(uint64_t a)
{
	const uint64_t tib = 1ULL << 40, gib = 1ULL << 30, mib = 1ULL << 20;

	if (a == 0)
		return g_strdup("0");
	if (a % tib == 0)
		return g_strdup_printf("%" G_GUINT64_FORMAT " TiB", a / tib);
	if (a % gib == 0)
		return g_strdup_printf("%" G_GUINT64_FORMAT " GiB", a / gib);
	if (a >= gib)
		return g_strdup_printf("%.2f GiB", (double)a / (double)gib);
	if (a % mib == 0)
		return g_strdup_printf("%" G_GUINT64_FORMAT " MiB", a / mib);
	return g_strdup_printf("%.2f MiB", (double)a / (double)mib);
}

static const char *tier_colour(const struct vt_heatmap *h, int t)
{
	return t >= 0 && t < (int)h->nr_tiers ? tier_colours[t] : NO_TIER_COLOUR;
}

static double cell_value(const struct vt_heatmap_col *c, unsigned int i, bool use_max)
{
	return (use_max ? c->max[i] : c->mean[i]) / (double)VT_HEATMAP_SCALE;
}

int vt_heatmap_svg(const struct vt_heatmap *h, const struct vt_heatmap_svg_opts *o, GString *out)
{
	g_autofree double *ytop = NULL;
	g_autofree const struct vt_heatmap_col **cols = NULL;
	g_autofree char *title = NULL, *bin_label = NULL;
	double rh, cw, vmax = 0, plot_h, width, height, x0 = LEFT, last_label = 1e9;
	unsigned int holes = 0;
	uint64_t total = 0, step;
	char colour[8];

	if (!h->nr_bins || !h->len || h->nr_bins > VT_HEATMAP_MAX_BINS ||
	    h->len > VT_HEATMAP_WINDOWS)
		return -ENODATA;
	cols = g_new0(const struct vt_heatmap_col *, h->len);
	for (unsigned int k = 0; k < h->len; k++)
		cols[k] = &h->col[vt_heatmap_col_index(h, h->len - 1 - k)];	/* oldest first */
	for (unsigned int i = 0; i < h->nr_bins; i++) {
		total += h->bin[i].end - h->bin[i].start;
		holes += i && h->bin[i].start != h->bin[i - 1].end;
	}
	for (unsigned int k = 0; k < h->len; k++)
		for (unsigned int i = 0; i < h->nr_bins; i++)
			vmax = MAX(vmax, cell_value(cols[k], i, o->use_max));
	if (vmax <= 0)
		vmax = 1;
	rh = floor(PLOT_H / h->nr_bins * 100) / 100;
	rh = MAX(rh, 1.0);
	cw = floor(PLOT_W / h->len * 100) / 100;
	plot_h = rh * h->nr_bins + HOLE_H * holes;
	width = LEFT + cw * h->len + STRIP_X + STRIP_W + LEGEND_W;
	height = TOP + plot_h + BOTTOM;
	/* the bins from the bottom up */
	ytop = g_new0(double, h->nr_bins);
	{
		double y = TOP + plot_h;

		for (unsigned int i = 0; i < h->nr_bins; i++) {
			if (i && h->bin[i].start != h->bin[i - 1].end)
				y -= HOLE_H;
			y -= rh;
			ytop[i] = y;
		}
	}
	title = g_markup_escape_text(o->title ? o->title : "vtier heatmap", -1);
	bin_label = size_label(h->bin_bytes);
	g_string_append_printf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
			       "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
			       ceil(width), ceil(height));
	g_string_append(out, "<defs><linearGradient id=\"ramp\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">");
	for (int s = 0; s < 9; s++)
		g_string_append_printf(out, "<stop offset=\"%.3f\" stop-color=\"#%02x%02x%02x\"/>",
				       s / 8.0, viridis[s][0], viridis[s][1], viridis[s][2]);
	g_string_append(out, "</linearGradient></defs>\n");
	g_string_append_printf(out, "<text class=\"title\" x=\"%d\" y=\"22\" font-size=\"14\">%s</text>\n",
			       LEFT, title);
	g_string_append_printf(out, "<text x=\"%d\" y=\"38\">%u bins of %s, %u windows; colour: %s "
			       "EMA hotness per bin (linear, 0 .. %.3g)</text>\n", LEFT, h->nr_bins,
			       bin_label, h->len, o->use_max ? "max" : "mean", vmax);

	/* the cells: one rect per bin and window */
	g_string_append(out, "<g class=\"cells\" shape-rendering=\"crispEdges\">\n");
	for (unsigned int k = 0; k < h->len; k++)
		for (unsigned int i = 0; i < h->nr_bins; i++) {
			ramp(cell_value(cols[k], i, o->use_max) / vmax, colour);
			g_string_append_printf(out, "<rect class=\"cell\" x=\"%.2f\" y=\"%.2f\" "
					       "width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n",
					       x0 + k * cw, ytop[i], cw, rh, colour);
		}
	g_string_append(out, "</g>\n");

	/* holes: grey bands */
	for (unsigned int i = 1; i < h->nr_bins; i++) {
		g_autofree char *a = NULL, *b = NULL;

		if (h->bin[i].start == h->bin[i - 1].end)
			continue;
		a = size_label(h->bin[i - 1].end);
		b = size_label(h->bin[i].start);
		g_string_append_printf(out, "<path class=\"hole\" d=\"M%.2f %.2fh%.2fv%.2fh%.2fz\" "
				       "fill=\"#d0d0d0\"><title>no RAM: %s .. %s</title></path>\n",
				       x0, ytop[i] + rh, cw * h->len, HOLE_H, -cw * h->len, a, b);
	}

	/* tier changes along the address axis: one line per run of columns */
	g_string_append_printf(out, "<g class=\"tier-edges\" stroke=\"%s\" stroke-width=\"1\">\n",
			       EDGE_COLOUR);
	for (unsigned int i = 1; i < h->nr_bins; i++) {
		if (h->bin[i].start != h->bin[i - 1].end)
			continue;
		for (unsigned int k = 0; k < h->len;) {
			unsigned int k1 = k;

			while (k1 < h->len && cols[k1]->tier[i] != cols[k1]->tier[i - 1])
				k1++;
			if (k1 > k)
				g_string_append_printf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" "
						       "y2=\"%.2f\"/>\n", x0 + k * cw, ytop[i] + rh,
						       x0 + k1 * cw, ytop[i] + rh);
			k = MAX(k1, k + 1);
		}
	}
	g_string_append(out, "</g>\n");

	/* the tier of each bin in the newest window */
	{
		const struct vt_heatmap_col *c = cols[h->len - 1];
		double sx = x0 + cw * h->len + STRIP_X;

		for (unsigned int i = 0; i < h->nr_bins;) {
			unsigned int j = i + 1;

			while (j < h->nr_bins && c->tier[j] == c->tier[i] &&
			       h->bin[j].start == h->bin[j - 1].end)
				j++;
			g_string_append_printf(out, "<path class=\"tier\" d=\"M%.2f %.2fh%dv%.2fh%dz\" "
					       "fill=\"%s\" stroke=\"#606060\" stroke-width=\"0.3\"/>\n",
					       sx, ytop[j - 1], STRIP_W, ytop[i] + rh - ytop[j - 1],
					       -STRIP_W, tier_colour(h, c->tier[i]));
			i = j;
		}
		g_string_append_printf(out, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">tier</text>\n"
				       "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">now</text>\n",
				       sx + STRIP_W / 2.0, TOP - 16.0, sx + STRIP_W / 2.0, TOP - 4.0);
	}

	/* address axis: ticks at round addresses, and where a range starts */
	step = VT_HEATMAP_MIN_BIN;
	while (step < total / 8 || step < h->bin_bytes)
		step <<= 1;
	g_string_append(out, "<g class=\"y-axis\" text-anchor=\"end\">\n");
	for (unsigned int i = 0; i <= h->nr_bins; i++) {
		uint64_t a = i < h->nr_bins ? h->bin[i].start : h->bin[i - 1].end;
		double y = i < h->nr_bins ? ytop[i] + rh : ytop[i - 1];
		bool range_start = i == 0 || (i < h->nr_bins && h->bin[i].start != h->bin[i - 1].end);
		g_autofree char *l = NULL;

		if (!(a % step == 0 || range_start || i == h->nr_bins) || last_label - y < 12)
			continue;
		l = size_label(a);
		g_string_append_printf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
				       "stroke=\"black\"/><text class=\"addr\" x=\"%.2f\" y=\"%.2f\">%s</text>\n",
				       x0 - 5, y, x0, y, x0 - 7, y + 4, l);
		last_label = y;
	}
	g_string_append_printf(out, "</g>\n<text x=\"16\" y=\"%.2f\" text-anchor=\"middle\" "
			       "transform=\"rotate(-90 16 %.2f)\">%s</text>\n", TOP + plot_h / 2,
			       TOP + plot_h / 2, strcmp(h->space, "gpa") == 0 ?
			       "guest-physical address" : "offset in guest RAM");

	/* time axis: seconds ago, about six labels */
	g_string_append(out, "<g class=\"x-axis\" text-anchor=\"middle\">\n");
	{
		unsigned int every = MAX(1u, h->len / 6);

		for (unsigned int k = 0; k < h->len; k++) {
			double x = x0 + (k + 0.5) * cw, ago;

			if ((h->len - 1 - k) % every != 0)
				continue;
			ago = (double)(o->now_us - cols[k]->at_us) / 1e6;
			g_string_append_printf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
					       "stroke=\"black\"/><text class=\"time\" x=\"%.2f\" "
					       "y=\"%.2f\">%.0f</text>\n", x, TOP + plot_h, x,
					       TOP + plot_h + 5, x, TOP + plot_h + 18, MAX(ago, 0.0));
		}
	}
	g_string_append_printf(out, "</g>\n<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">"
			       "seconds ago (one column per window, oldest left)</text>\n",
			       x0 + cw * h->len / 2, TOP + plot_h + 40);

	/* legends: the ramp, then the tiers */
	{
		double lx = x0 + cw * h->len + STRIP_X + STRIP_W + 30, ly = TOP, lh = 160;

		g_string_append_printf(out, "<g class=\"legend\">\n<text x=\"%.2f\" y=\"%.2f\">%s "
				       "hotness</text>\n", lx, ly - 4, o->use_max ? "max" : "mean");
		g_string_append_printf(out, "<path d=\"M%.2f %.2fh16v%.2fh-16z\" fill=\"url(#ramp)\" "
				       "stroke=\"black\" stroke-width=\"0.5\"/>\n", lx, ly, lh);
		for (int s = 0; s <= 4; s++)
			g_string_append_printf(out, "<text x=\"%.2f\" y=\"%.2f\">%.3g</text>\n", lx + 22,
					       ly + lh - s * lh / 4 + 4, vmax * s / 4);
		ly += lh + 30;
		g_string_append_printf(out, "<text x=\"%.2f\" y=\"%.2f\">tier (most of the bin's "
				       "bytes)</text>\n", lx, ly);
		for (unsigned int t = 0; t <= h->nr_tiers; t++) {
			g_autofree char *name = g_markup_escape_text(t < h->nr_tiers ? h->tier_name[t] :
								     "none present", -1);

			ly += 16;
			g_string_append_printf(out, "<path d=\"M%.2f %.2fh12v12h-12z\" fill=\"%s\" "
					       "stroke=\"#606060\" stroke-width=\"0.5\"/><text class=\"tier-name\" "
					       "x=\"%.2f\" y=\"%.2f\">%s</text>\n", lx, ly - 10,
					       tier_colour(h, t < h->nr_tiers ? (int)t : -1), lx + 18, ly,
					       name);
		}
		ly += 22;
		g_string_append_printf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
				       "stroke=\"%s\" stroke-width=\"2\"/><text x=\"%.2f\" y=\"%.2f\">"
				       "tier changes between bins</text>\n</g>\n", lx, ly - 4, lx + 12,
				       ly - 4, EDGE_COLOUR, lx + 18, ly);
	}
	g_string_append(out, "</svg>\n");
	return 0;
}

int vt_heatmap_write_file(const char *path, const char *data, size_t len, GError **error)
{
	struct stat st;

	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		g_set_error(error, VT_CORE_ERROR, EEXIST, "%s exists and is not a regular file: "
			    "not replaced", path);
		return -EEXIST;
	}
	/* a temporary file next to it, then rename(2): a reader never sees half a file */
	if (!g_file_set_contents_full(path, data, (gssize)len, G_FILE_SET_CONTENTS_CONSISTENT,
				      0644, error))
		return -EIO;
	return 0;
}
