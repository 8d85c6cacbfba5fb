// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: /proc/interrupts text, its TLB: line summed over the CPUs;
 * an error set exactly when the count is not, the count untouched then.
 */
#include <stddef.h>
#include <stdint.h>

#include "tlb_counters.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GError *e = NULL;
	uint64_t total = 7;
	enum vt_counter_state st = vt_interrupts_tlb_parse((const char *)data, size, &total, &e);

	if ((st == VT_COUNTER_OK) == !!e || (st != VT_COUNTER_OK && total != 7))
		__builtin_trap();
	if (e && (!e->message || !*e->message))
		__builtin_trap();
	g_clear_error(&e);
	return 0;
}
