// SPDX-License-Identifier: GPL-2.0-or-later
/* A small SVG line-plot writer (no plotting library is packaged for C here). */
#include <math.h>
#include <stdio.h>

#include "plot_svg.h"

static const char *const colours[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
};

#define W 900
#define PANEL_H 260
#define LEFT 70
#define RIGHT 190
#define TOP 40
#define GAP 50

bool vt_plot_svg(const char *path, const char *title, const char *xlabel,
		 const struct vt_plot_panel *panels, size_t nr_panels,
		 const double *marks, size_t nr_marks)
{
	double xmin = INFINITY, xmax = -INFINITY;
	int height = TOP + (int)nr_panels * (PANEL_H + GAP) + 20;
	int pw = W - LEFT - RIGHT;
	FILE *f = fopen(path, "w");

	if (!f)
		return false;
	for (size_t p = 0; p < nr_panels; p++)
		for (size_t s = 0; s < panels[p].nr_series; s++)
			for (size_t i = 0; i < panels[p].series[s].n; i++) {
				xmin = fmin(xmin, panels[p].series[s].x[i]);
				xmax = fmax(xmax, panels[p].series[s].x[i]);
			}
	if (!(xmax > xmin)) {
		xmin = 0;
		xmax = 1;
	}
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n", W, height);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\">%s</text>\n", LEFT, title);
	for (size_t p = 0; p < nr_panels; p++) {
		const struct vt_plot_panel *pn = &panels[p];
		int y0 = TOP + (int)p * (PANEL_H + GAP);
		double span = pn->ymax - pn->ymin;

#define PX(x) (LEFT + ((x) - xmin) / (xmax - xmin) * pw)
#define PY(y) (y0 + PANEL_H - ((y) - pn->ymin) / span * PANEL_H)
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
			"stroke=\"#444\"/>\n", LEFT, y0, pw, PANEL_H);
		for (int t = 0; t <= 4; t++) {
			double yv = pn->ymin + span * t / 4;

			fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
				"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n",
				LEFT, LEFT + pw, PY(yv), PY(yv), LEFT - 6, PY(yv) + 4, yv);
		}
		for (int t = 0; t <= 8; t++) {
			double xv = xmin + (xmax - xmin) * t / 8;

			fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f</text>\n",
				PX(xv), y0 + PANEL_H + 16, xv);
		}
		for (size_t m = 0; m < nr_marks; m++)
			fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#888\" "
				"stroke-dasharray=\"4,4\"/>\n", PX(marks[m]), PX(marks[m]), y0,
				y0 + PANEL_H);
		fprintf(f, "<text x=\"18\" y=\"%d\" transform=\"rotate(-90 18 %d)\" "
			"text-anchor=\"middle\">%s</text>\n", y0 + PANEL_H / 2, y0 + PANEL_H / 2,
			pn->ylabel);
		for (size_t s = 0; s < pn->nr_series; s++) {
			const struct vt_plot_series *se = &pn->series[s];
			const char *c = colours[s % (sizeof(colours) / sizeof(colours[0]))];

			/* overlapping series stay visible: every other one dashed */
			fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"",
				c, s % 2 ? " stroke-dasharray=\"6,3\"" : "");
			for (size_t i = 0; i < se->n; i++) {
				double yv = fmin(fmax(se->y[i], pn->ymin), pn->ymax);

				fprintf(f, "%.1f,%.1f ", PX(se->x[i]), PY(yv));
			}
			fprintf(f, "\"/>\n<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" "
				"stroke-width=\"3\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
				LEFT + pw + 12, LEFT + pw + 32, y0 + 14 + (int)s * 18,
				y0 + 14 + (int)s * 18, c, LEFT + pw + 38, y0 + 18 + (int)s * 18, se->label);
		}
#undef PX
#undef PY
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", LEFT + pw / 2,
		height - 6, xlabel);
	fprintf(f, "</svg>\n");
	return fclose(f) == 0;
}
