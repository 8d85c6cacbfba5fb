// SPDX-License-Identifier: GPL-2.0-or-later
/* Byte sizes as people write them: "10GiB", "4 KiB", "1TiB+3MiB+12KiB", "4096". */
#include <errno.h>
#include <string.h>

#include "size.h"

G_DEFINE_QUARK(vt-size-error-quark, vt_size_error)

#define SIZE_ERR(error, ...) g_set_error(error, VT_SIZE_ERROR, 0, __VA_ARGS__)

static const struct {
	const char *suffix;
	unsigned int shift;
} size_units[] = {
	{ "PiB", 50 }, { "TiB", 40 }, { "GiB", 30 }, { "MiB", 20 }, { "KiB", 10 },
	{ "P", 50 }, { "T", 40 }, { "G", 30 }, { "M", 20 }, { "K", 10 }, { "B", 0 }, { "", 0 },
};

bool vt_parse_size(const char *text, uint64_t *out, GError **error)
{
	g_auto(GStrv) terms = NULL;
	uint64_t total = 0;

	if (!text || !*text) {
		SIZE_ERR(error, "empty size");
		return false;
	}
	terms = g_strsplit(text, "+", -1);
	for (char **t = terms; *t; t++) {
		g_autofree char *term = g_strstrip(g_strdup(*t));
		char *rest = NULL;
		guint64 value;
		unsigned int i;

		if (!g_ascii_isdigit(term[0])) {
			SIZE_ERR(error, "invalid size '%s': each term must start with a digit", text);
			return false;
		}
		errno = 0;
		value = g_ascii_strtoull(term, &rest, 10);
		if (errno) {
			SIZE_ERR(error, "invalid size '%s': number out of range", text);
			return false;
		}
		while (*rest == ' ')
			rest++;
		for (i = 0; i < G_N_ELEMENTS(size_units); i++)
			if (strcmp(rest, size_units[i].suffix) == 0)
				break;
		if (i == G_N_ELEMENTS(size_units)) {
			SIZE_ERR(error, "invalid size '%s': unknown unit '%s' "
				 "(use B, KiB, MiB, GiB, TiB or PiB)", text, rest);
			return false;
		}
		if (value > (UINT64_MAX >> size_units[i].shift) ||
		    (value << size_units[i].shift) > UINT64_MAX - total) {
			SIZE_ERR(error, "invalid size '%s': too large", text);
			return false;
		}
		total += value << size_units[i].shift;
	}
	*out = total;
	return true;
}
