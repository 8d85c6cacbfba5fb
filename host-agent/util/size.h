/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Byte sizes as people write them (policy keys, tier specs, workload specs). */
#ifndef VTIER_UTIL_SIZE_H
#define VTIER_UTIL_SIZE_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#define VT_SIZE_ERROR (vt_size_error_quark())
GQuark vt_size_error_quark(void);

/*
 * "10GiB", "4 KiB", "1TiB+3MiB+12KiB", "4096" (B, KiB .. PiB or K .. P, binary):
 * bytes. An empty, negative, fractional, hexadecimal or overflowing size, or an
 * unknown unit, is refused with a message that names the size.
 */
bool vt_parse_size(const char *text, uint64_t *out, GError **error);

#endif
