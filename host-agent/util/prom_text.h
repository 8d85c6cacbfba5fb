/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Prometheus text format (0.0.4) as vtier's programs write it (vtierd's
 * endpoint, vtier-memd's textfile): a family's HELP and TYPE lines, and one
 * sample line with its label values escaped.
 */
#ifndef VTIER_UTIL_PROM_TEXT_H
#define VTIER_UTIL_PROM_TEXT_H

#include <stdbool.h>

#include <glib.h>

/* "# HELP name help" and "# TYPE name type" (counter, gauge, histogram, ...). */
void vt_prom_family(GString *out, const char *name, const char *type, const char *help);

/*
 * A sample written in three steps: the name (g_string_append), then each
 * label (@first true before the first: it opens the braces), then the value
 * (closing the braces when a label was written) and the newline.
 */
void vt_prom_label(GString *out, bool *first, const char *key, const char *value);
void vt_prom_value(GString *out, bool first, double value);

/* name{key="value",...} value: @... the key, value pairs, NULL-ended. */
void vt_prom_line(GString *out, const char *name, double value, ...) G_GNUC_NULL_TERMINATED;

#endif
