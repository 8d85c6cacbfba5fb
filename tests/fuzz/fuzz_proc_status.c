// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: /proc/PID/status text, its Mems_allowed_list: line (QEMU's
 * cpuset mems, which the DRAM nodes of its moves and its home node obey);
 * a mask of at least one node exactly when accepted, untouched otherwise.
 */
#include <stddef.h>
#include <stdint.h>

#include "tiers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = g_strndup((const char *)data, size);
	uint64_t mask = 7;

	if (vt_parse_mems_allowed(text, &mask)) {
		if (!mask)
			__builtin_trap();
	} else if (mask != 7) {
		__builtin_trap();
	}
	g_free(text);
	return 0;
}
