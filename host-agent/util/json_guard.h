/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Guards in front of json-glib, whose parser recurses once per nesting
 * level: a peer sending 200 KB of '[' crashes it. Every reader of JSON from
 * a peer or an operator calls vt_json_check() before json_parser_load_*.
 * Also: making peer text safe to log or to put in a JSON reply.
 *
 * Library code: no logging, no allocation in the checks.
 */
#ifndef VTIER_UTIL_JSON_GUARD_H
#define VTIER_UTIL_JSON_GUARD_H

#include <stdbool.h>
#include <stddef.h>

/* The deepest nesting of objects/arrays any vtier JSON reader accepts. */
#define VT_JSON_MAX_DEPTH 64

/*
 * Scan [data, data+len) without recursion, respecting strings and escapes,
 * and fail when objects/arrays nest deeper than @max_depth. Brackets need not
 * balance (json-glib reports that); only depth is judged here.
 * Returns 0, or -ELOOP with @err ("JSON nested deeper than 64 levels at
 * byte N") when @err is not NULL.
 */
int vt_json_check_depth(const char *data, size_t len, unsigned int max_depth, char *err,
			size_t err_len);

/*
 * Is [data, data+len) exactly one JSON object, with only whitespace around it?
 * json-glib accepts "{}{}" and keeps one; the protocols here take one object.
 */
bool vt_json_single_object(const char *data, size_t len);

/*
 * Copy @src (up to @src_len bytes, stops at NUL) into @dst of @dst_len
 * bytes (NUL-terminated), replacing every byte that is not printable ASCII
 * (control characters, DEL, bytes >= 0x80, including valid UTF-8) by '?'.
 * For peer text that goes into logs or JSON replies. Returns @dst.
 */
char *vt_text_printable(char *dst, size_t dst_len, const char *src, size_t src_len);

/* Is every byte of the NUL-terminated @s printable ASCII (0x20..0x7e)? */
bool vt_text_is_printable(const char *s);

#endif /* VTIER_UTIL_JSON_GUARD_H */
