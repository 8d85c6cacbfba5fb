// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * JSON depth guard and peer text sanitising. See json_guard.h.
 */
#include <errno.h>
#include <stdio.h>

#include <glib.h>

#include "json_guard.h"

/* Where a scan is: inside a string (after a backslash) or not. */
struct json_scan {
	bool in_str;
	bool esc;
};

/* Feed @c; true when it is outside any string (a structural byte or space). */
static bool scan_outside(struct json_scan *s, char c)
{
	if (s->in_str) {
		if (s->esc)
			s->esc = false;
		else if (c == '\\')
			s->esc = true;
		else if (c == '"')
			s->in_str = false;
		return false;
	}
	if (c == '"') {
		s->in_str = true;
		return false;
	}
	return true;
}

int vt_json_check_depth(const char *data, size_t len, unsigned int max_depth, char *err,
			size_t err_len)
{
	struct json_scan s = { false, false };
	unsigned int depth = 0;

	for (size_t i = 0; i < len; i++) {
		char c = data[i];

		if (!scan_outside(&s, c))
			continue;
		if (c == '{' || c == '[') {
			if (++depth > max_depth) {
				if (err && err_len)
					snprintf(err, err_len, "JSON nested deeper than %u levels at "
						 "byte %zu", max_depth, i);
				return -ELOOP;
			}
		} else if ((c == '}' || c == ']') && depth) {
			depth--;
		}
	}
	return 0;
}

bool vt_json_single_object(const char *data, size_t len)
{
	struct json_scan s = { false, false };
	size_t i = 0;
	long depth = 0;

	while (i < len && g_ascii_isspace(data[i]))
		i++;
	if (i == len || data[i] != '{')
		return false;
	for (; i < len; i++) {
		char c = data[i];

		if (!scan_outside(&s, c))
			continue;
		if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0)
			break;
	}
	if (i == len)
		return false;
	for (i++; i < len; i++)
		if (!g_ascii_isspace(data[i]))
			return false;
	return true;
}

char *vt_text_printable(char *dst, size_t dst_len, const char *src, size_t src_len)
{
	size_t i;

	if (!dst_len)
		return dst;
	for (i = 0; i < src_len && i + 1 < dst_len && src[i]; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	dst[i] = '\0';
	return dst;
}

bool vt_text_is_printable(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s >= 0x7f)
			return false;
	return true;
}
