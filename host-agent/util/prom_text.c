// SPDX-License-Identifier: GPL-2.0-or-later
/* Prometheus text exposition: family heads, samples, labels, escaping (prom_text.h). */
#include <stdarg.h>

#include "prom_text.h"

void vt_prom_family(GString *out, const char *name, const char *type, const char *help)
{
	g_string_append_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void escaped(GString *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			g_string_append_c(out, '\\');
		if (*s == '\n')
			g_string_append(out, "\\n");
		else
			g_string_append_c(out, *s);
	}
}

void vt_prom_label(GString *out, bool *first, const char *key, const char *value)
{
	g_string_append_printf(out, "%s%s=\"", *first ? "{" : ",", key);
	escaped(out, value);
	g_string_append_c(out, '"');
	*first = false;
}

void vt_prom_value(GString *out, bool first, double value)
{
	char num[G_ASCII_DTOSTR_BUF_SIZE];

	g_string_append_printf(out, "%s %s\n", first ? "" : "}",
			       g_ascii_dtostr(num, sizeof(num), value));
}

void vt_prom_line(GString *out, const char *name, double value, ...)
{
	bool first = true;
	const char *k;
	va_list ap;

	g_string_append(out, name);
	va_start(ap, value);
	while ((k = va_arg(ap, const char *)))
		vt_prom_label(out, &first, k, va_arg(ap, const char *));
	va_end(ap);
	vt_prom_value(out, first, value);
}
