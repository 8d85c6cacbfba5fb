// SPDX-License-Identifier: GPL-2.0-or-later
/* One-shot reads of small kernel files (sysfs.h). */
#include <stdarg.h>

#include "sysfs.h"

static char *read_stripped(const char *fmt, va_list ap) G_GNUC_PRINTF(1, 0);

static char *read_stripped(const char *fmt, va_list ap)
{
	g_autofree char *path = g_strdup_vprintf(fmt, ap);
	char *text = NULL;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		return NULL;
	return g_strstrip(text);
}

char *vt_sysfs_read(const char *fmt, ...)
{
	va_list ap;
	char *text;

	va_start(ap, fmt);
	text = read_stripped(fmt, ap);
	va_end(ap);
	return text;
}

bool vt_sysfs_read_u64(uint64_t *out, const char *fmt, ...)
{
	g_autofree char *text = NULL;
	guint64 v;
	va_list ap;

	va_start(ap, fmt);
	text = read_stripped(fmt, ap);
	va_end(ap);
	if (!text || !g_ascii_string_to_unsigned(text, 10, 0, G_MAXUINT64, &v, NULL))
		return false;
	*out = v;
	return true;
}
