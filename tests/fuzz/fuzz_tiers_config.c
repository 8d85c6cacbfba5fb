// SPDX-License-Identifier: GPL-2.0-or-later
/* Fuzz target: the [tier.NAME] config groups over this host's sysfs. */
#include <stddef.h>
#include <stdint.h>

#include "tiers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GKeyFile *k = g_key_file_new();
	struct vt_tiers t;
	GError *e = NULL;

	if (g_key_file_load_from_data(k, (const char *)data, size, G_KEY_FILE_NONE, NULL)) {
		if (vt_tiers_discover(&t, "/", k, &e)) {
			if (t.nr == 0 || t.nr > VT_MAX_TIERS)
				__builtin_trap();
			for (unsigned int i = 0; i < t.nr; i++)
				if (!t.tier[i].nr_nodes || t.tier[i].price_usd_gib < 0 ||
				    !vt_tier_name_valid(t.tier[i].name))
					__builtin_trap();
		} else if (!e || !g_utf8_validate(e->message, -1, NULL)) {
			__builtin_trap();
		}
	}
	g_clear_error(&e);
	g_key_file_free(k);
	return 0;
}
