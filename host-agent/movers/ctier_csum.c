// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * CRC-32C: SSE4.2's crc32 instruction or a slicing-by-8 table, whichever runs
 * faster on this CPU, timed once at first use (as Linux picks its XOR and
 * RAID6 routines at boot). Both give the same result.
 */
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include <glib.h>

#include "ctier_csum.h"
#include "thread_ns.h"

#define POLY 0x82f63b78U		/* Castagnoli, reflected */

static uint32_t table[8][256];

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (unsigned int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
		table[0][i] = c;
	}
	/* table[k][i]: the CRC of byte i followed by k zero bytes */
	for (uint32_t i = 0; i < 256; i++)
		for (unsigned int k = 1; k < 8; k++)
			table[k][i] = table[0][table[k - 1][i] & 0xff] ^ (table[k - 1][i] >> 8);
}

/* Eight bytes per step, eight lookups (little-endian loads). */
static uint32_t crc_slice8(uint32_t c, const uint8_t *p, size_t len)
{
	for (; len >= 8; len -= 8, p += 8) {
		uint32_t lo, hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo = GUINT32_FROM_LE(lo) ^ c;
		hi = GUINT32_FROM_LE(hi);
		c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^
		    table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
		    table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
		    table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
	}
	while (len--)
		c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
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

typedef uint32_t (*crc_fn)(uint32_t c, const uint8_t *p, size_t len);

static crc_fn best = crc_slice8;
static const char *best_name = "table";

/* The best of 3 timings of 4 passes over a page: thread CPU time, in ns. */
static uint64_t time_fn(crc_fn f, const uint8_t *page, size_t len)
{
	uint64_t min = UINT64_MAX;
	volatile uint32_t sink = 0;

	for (int round = 0; round < 3; round++) {
		uint64_t t0 = vt_thread_ns();

		for (int i = 0; i < 4; i++)
			sink ^= f(~0U, page, len);
		min = MIN(min, vt_thread_ns() - t0);
	}
	(void)sink;
	return min;
}

static void init(void)
{
	static gsize once;

	if (g_once_init_enter(&once)) {
		table_init();
#if defined(__x86_64__)
		if (__builtin_cpu_supports("sse4.2")) {
			/*
			 * The instruction wins by far on hardware; an emulator
			 * (QEMU TCG computes it bit by bit) can make it slower
			 * than the table.
			 */
			static uint8_t page[4096];

			for (unsigned int i = 0; i < sizeof(page); i++)
				page[i] = (uint8_t)(i * 131 + (i >> 8));
			if (time_fn(crc_sse42, page, sizeof(page)) <=
			    time_fn(crc_slice8, page, sizeof(page))) {
				best = crc_sse42;
				best_name = "sse4.2";
			}
		}
#endif
		g_once_init_leave(&once, 1);
	}
}

uint32_t vt_crc32c_table(const void *data, size_t len)
{
	init();
	return ~crc_slice8(~0U, data, len);
}

uint32_t vt_crc32c(const void *data, size_t len)
{
	init();
	return ~best(~0U, data, len);
}

const char *vt_crc32c_impl(void)
{
	init();
	return best_name;
}
