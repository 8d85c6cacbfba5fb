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
 * "10GiB", "4 KiB", "1TiB+3MiB+12KiB", "4096", "0x1000" (B, KiB .. PiB or
 * K .. P, binary): bytes. The one size grammar of policy keys, demote's
 * gpa=/len=, config files and vtierd's options. An empty, negative, fractional
 * or overflowing size, or an unknown unit, is refused with a message that
 * names the size.
 */
bool vt_parse_size(const char *text, uint64_t *out, GError **error);

/*
 * @bytes written in the unit of @typed (a size as the user wrote it: "1KiB"
 * -> "4KiB" for 4096), or in the largest unit of the same kind that holds it
 * whole, so that an error quotes its bounds in the user's units. Free with g_free().
 */
char *vt_size_in_units_of(uint64_t bytes, const char *typed);

#endif
