// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Byte sizes as people write them: "10GiB", "4 KiB", "1TiB+3MiB+12KiB", "4096",
 * "0x100000" — the one size grammar of policy keys, demote's gpa=/len=, config
 * files and vtierd's options.
 */
#include <errno.h>
#include <inttypes.h>
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

/* The unit a term ends with (index into size_units), or -1. */
static int unit_of(const char *rest)
{
	while (*rest == ' ')
		rest++;
	for (unsigned int i = 0; i < G_N_ELEMENTS(size_units); i++)
		if (strcmp(rest, size_units[i].suffix) == 0)
			return (int)i;
	return -1;
}

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
		bool hex = term[0] == '0' && (term[1] == 'x' || term[1] == 'X');
		char *rest = NULL;
		guint64 value;
		int i;

		if (term[0] == '-') {
			SIZE_ERR(error, "invalid size '%s': negative (a size is 0 or more bytes, "
				 "e.g. 4096, 2MiB, 0x100000)", text);
			return false;
		}
		if (hex ? !g_ascii_isxdigit(term[2]) : !g_ascii_isdigit(term[0])) {
			SIZE_ERR(error, "invalid size '%s': each term must start with a digit "
				 "(or 0x and a hex digit)", text);
			return false;
		}
		errno = 0;
		value = g_ascii_strtoull(hex ? term + 2 : term, &rest, hex ? 16 : 10);
		if (errno) {
			SIZE_ERR(error, "invalid size '%s': number out of range (at most %" PRIu64
				 " bytes)", text, UINT64_MAX);
			return false;
		}
		while (*rest == ' ')
			rest++;
		i = unit_of(rest);
		if (i < 0) {
			SIZE_ERR(error, "invalid size '%s': unknown unit '%s' "
				 "(use B, KiB, MiB, GiB, TiB, PiB or K, M, G, T, P)", text, rest);
			return false;
		}
		if (value > (UINT64_MAX >> size_units[i].shift) ||
		    (value << size_units[i].shift) > UINT64_MAX - total) {
			SIZE_ERR(error, "invalid size '%s': too large (at most %" PRIu64 " bytes)",
				 text, UINT64_MAX);
			return false;
		}
		total += value << size_units[i].shift;
	}
	*out = total;
	return true;
}

char *vt_size_in_units_of(uint64_t bytes, const char *typed)
{
	const char *last = typed ? strrchr(typed, '+') : NULL;
	const char *p = last ? last + 1 : typed ? typed : "";
	int i;

	/* the typed unit: whatever follows the last term's digits */
	while (*p == ' ')
		p++;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		return g_strdup_printf("0x%" PRIx64, bytes);
	while (g_ascii_isdigit(*p))
		p++;
	i = unit_of(p);
	if (i < 0 || !size_units[i].shift)
		return g_strdup_printf("%" PRIu64 "%s", bytes, i < 0 ? "" : size_units[i].suffix);
	/* not a whole number of the typed unit: the largest of its kind that is */
	for (bool iec = strlen(size_units[i].suffix) == 3; i < (int)G_N_ELEMENTS(size_units); i++)
		if ((strlen(size_units[i].suffix) == 3) == iec && size_units[i].shift &&
		    !(bytes & ((1ULL << size_units[i].shift) - 1)))
			return g_strdup_printf("%" PRIu64 "%s", bytes >> size_units[i].shift,
					       size_units[i].suffix);
	return g_strdup_printf("%" PRIu64, bytes);
}
