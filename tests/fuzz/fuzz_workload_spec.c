// SPDX-License-Identifier: GPL-2.0-or-later
/* Fuzz target: the workload spec parser must reject anything malformed cleanly. */
#include <stddef.h>
#include <stdint.h>

#include "workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GError *error = NULL;
	struct vt_workload *w = vt_workload_from_json((const char *)data, (gssize)size, &error);

	/* exactly one of a workload and an error, and a valid workload is valid */
	if (!w == !error)
		__builtin_trap();
	if (w && !vt_workload_validate(w, NULL))
		__builtin_trap();
	vt_workload_free(w);
	g_clear_error(&error);
	return 0;
}
