// SPDX-License-Identifier: GPL-2.0-or-later
/* Fuzz target: /proc/PID/maps text; every mapping kept is non-empty. */
#include <stddef.h>
#include <stdint.h>

#include "procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GArray *m = g_array_new(FALSE, TRUE, sizeof(struct vt_mapping));
	GError *e = NULL;

	if (vt_procmaps_parse((const char *)data, size, m, &e) == !!e)
		__builtin_trap();
	for (unsigned int i = 0; i < m->len; i++)
		if (g_array_index(m, struct vt_mapping, i).end <=
		    g_array_index(m, struct vt_mapping, i).start)
			__builtin_trap();
	g_clear_error(&e);
	g_array_free(m, TRUE);
	return 0;
}
