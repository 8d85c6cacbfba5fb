/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Line plots as SVG: enough for precision/recall over time, per profiler. */
#ifndef VTIER_TOOLS_PLOT_SVG_H
#define VTIER_TOOLS_PLOT_SVG_H

#include <stdbool.h>
#include <stddef.h>

struct vt_plot_series {
	const char *label;
	const double *x;
	const double *y;
	size_t n;
};

struct vt_plot_panel {
	const char *ylabel;
	double ymin, ymax;
	const struct vt_plot_series *series;
	size_t nr_series;
};

/*
 * Panels stacked vertically over one x axis; @marks are x positions drawn as
 * dashed vertical lines (phase changes). Returns false with errno set on I/O error.
 */
bool vt_plot_svg(const char *path, const char *title, const char *xlabel,
		 const struct vt_plot_panel *panels, size_t nr_panels,
		 const double *marks, size_t nr_marks);

#endif
