// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: what a QMP peer may send. The first byte picks the parser
 * ('0' greeting, '1' query-memdev + qom-list, '2' x-query-ramblock text,
 * '3' info mtree -f text, '4' one-object check, '5' an event line; other bytes
 * modulo 6).
 * JSON goes through the depth guard first, as in qmp_client.c.
 */
#include <stddef.h>
#include <stdint.h>

#include "json_guard.h"
#include "qmp_client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text;
	size_t len;

	if (size < 1)
		return 0;
	text = (const char *)data + 1;
	len = size - 1;
	switch ((uint8_t)(data[0] - '0') % 6) {
	case 0: {
		char *version = NULL;
		GError *e = NULL;

		if (vt_qmp_parse_greeting(text, len, &version, &e) == !!e)
			__builtin_trap();
		g_free(version);
		g_clear_error(&e);
		break;
	}
	case 1: {
		JsonParser *p = json_parser_new();
		GArray *m = g_array_new(FALSE, TRUE, sizeof(struct vt_memdev));

		if (!vt_json_check_depth(text, len, VT_JSON_MAX_DEPTH, NULL, 0)) {
			if (json_parser_load_from_data(p, text, (gssize)len, NULL) &&
			    json_parser_get_root(p)) {
				if (vt_qmp_parse_memdev(json_parser_get_root(p), m, NULL))
					vt_qmp_parse_objects(json_parser_get_root(p), m, NULL);
			}
		}
		g_array_free(m, TRUE);
		g_object_unref(p);
		break;
	}
	case 2: {
		char *s = g_strndup(text, len);
		GArray *rb = g_array_new(FALSE, TRUE, sizeof(struct vt_ramblock));

		if (vt_qmp_parse_ramblocks(s, rb, NULL))
			for (unsigned int i = 0; i < rb->len; i++)
				if (g_array_index(rb, struct vt_ramblock, i).used >
				    g_array_index(rb, struct vt_ramblock, i).total)
					__builtin_trap();
		g_array_free(rb, TRUE);
		g_free(s);
		break;
	}
	case 3: {
		char *s = g_strndup(text, len);
		GArray *r = g_array_new(FALSE, TRUE, sizeof(struct vt_gpa_range));

		if (vt_qmp_parse_mtree(s, r, NULL))
			for (unsigned int i = 0; i < r->len; i++)
				if (!g_array_index(r, struct vt_gpa_range, i).len)
					__builtin_trap();
		g_array_free(r, TRUE);
		g_free(s);
		break;
	}
	case 5: {
		struct vt_qmp_event ev = { .migration = VT_QMP_MIGRATION_OTHER + 1 };
		GError *e = NULL;
		int r = vt_qmp_parse_event(text, len, &ev, &e);

		/* refused with a reason, or a printable name and a known status */
		if ((r < 0) != !!e || r < -1 || r > 1)
			__builtin_trap();
		if (r == 1) {
			if (ev.migration > VT_QMP_MIGRATION_OTHER || !ev.name[0])
				__builtin_trap();
			for (const char *c = ev.name; *c; c++)
				if (!g_ascii_isprint(*c))
					__builtin_trap();
		}
		g_clear_error(&e);
		break;
	}
	default:
		vt_json_single_object(text, len);
	}
	return 0;
}
