// SPDX-License-Identifier: GPL-2.0-or-later
/* Fuzz target: policy assignments, one KEY=VALUE per line; a refused set changes nothing. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vm_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = g_strndup((const char *)data, size);
	char **lines = g_strsplit(text, "\n", 64);
	struct vt_vm_policy p, before;
	GError *e = NULL;

	vt_vm_policy_default(&p);
	before = p;
	if (!vt_vm_policy_apply(&p, lines, g_strv_length(lines), &e)) {
		if (!e || memcmp(&p, &before, sizeof(p)) != 0 || !g_utf8_validate(e->message, -1, NULL))
			__builtin_trap();
	} else if (p.sample_ms > p.window_ms || p.dram_share < 0 || p.dram_share > 1 ||
		   p.chunk_bytes % (2 << 20) || !(p.tco_alpha >= 0 && p.tco_alpha <= 1) ||
		   (p.placement != VT_PLACEMENT_WATERFALL && p.placement != VT_PLACEMENT_TCO) ||
		   p.weight < 1 || p.weight > 10000 ||
		   (p.dram_limit_bytes && p.dram_min_bytes > p.dram_limit_bytes)) {
		__builtin_trap();
	}
	g_clear_error(&e);
	g_strfreev(lines);
	g_free(text);
	return 0;
}
