// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: the one size grammar (util/size.c: policy keys, demote's
 * gpa=/len=, config sizes). A size that parses, written back in its own
 * unit by vt_size_in_units_of(), parses again to the same bytes; a refusal
 * names the size.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "size.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = g_strndup((const char *)data, size);
	GError *e = NULL;
	uint64_t v, w;

	if (vt_parse_size(text, &v, &e)) {
		char *back = vt_size_in_units_of(v, text);

		if (e || !vt_parse_size(back, &w, NULL) || w != v)
			__builtin_trap();
		g_free(back);
	} else if (!e || !strstr(e->message, "size")) {
		__builtin_trap();
	}
	g_clear_error(&e);
	g_free(text);
	return 0;
}
