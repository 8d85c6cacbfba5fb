// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * JSON depth guard and peer text sanitising. See json_guard.h.
 */
#include <errno.h>
#include <stdio.h>

#include "json_guard.h"

int vt_json_check_depth(const char *data, size_t len, unsigned int max_depth, char *err,
			size_t err_len)
{
	unsigned int depth = 0;
	bool in_str = false, esc = false;

	for (size_t i = 0; i < len; i++) {
		char c = data[i];

		if (in_str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"') {
			in_str = true;
		} else if (c == '{' || c == '[') {
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
