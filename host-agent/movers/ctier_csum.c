// SPDX-License-Identifier: GPL-2.0-or-later
/* CRC-32C: SSE4.2's crc32 instruction where the CPU has it, a table otherwise. */
#include <stdbool.h>
#include <string.h>

#include <glib.h>

#include "ctier_csum.h"

#define POLY 0x82f63b78U		/* Castagnoli, reflected */

static uint32_t table[256];

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (unsigned int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
		table[i] = c;
	}
}

static uint32_t crc_table(uint32_t c, const uint8_t *p, size_t len)
{
	while (len--)
		c = table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc_sse42(uint32_t c, const uint8_t *p, size_t len)
{
	uint64_t c64 = c;

	for (; len >= 8; len -= 8, p += 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		c64 = __builtin_ia32_crc32di(c64, w);
	}
	c = (uint32_t)c64;
	while (len--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}
#endif

static bool hw;

static void init(void)
{
	static gsize once;

	if (g_once_init_enter(&once)) {
		table_init();
#if defined(__x86_64__)
		hw = __builtin_cpu_supports("sse4.2");
#endif
		g_once_init_leave(&once, 1);
	}
}

uint32_t vt_crc32c_table(const void *data, size_t len)
{
	init();
	return ~crc_table(~0U, data, len);
}

uint32_t vt_crc32c(const void *data, size_t len)
{
	init();
#if defined(__x86_64__)
	if (hw)
		return ~crc_sse42(~0U, data, len);
#endif
	return ~crc_table(~0U, data, len);
}
