// SPDX-License-Identifier: GPL-2.0-or-later
/* The one tier-name rule (tier_name.h). */
#include <string.h>

#include <glib.h>

#include "tier_name.h"

bool vt_tier_name_ok(const char *name)
{
	size_t len = name ? strnlen(name, VT_TIER_NAME_MAX + 1) : 0;

	if (!len || len > VT_TIER_NAME_MAX)
		return false;
	for (const char *c = name; *c; c++)
		if (!g_ascii_isalnum(*c) && !strchr("._:-", *c))
			return false;
	return true;
}
