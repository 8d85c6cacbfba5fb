/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One-shot reads of small kernel files (sysfs, procfs knobs): the whole
 * file, white space stripped, for a value the kernel prints on one line.
 */
#ifndef VTIER_UTIL_SYSFS_H
#define VTIER_UTIL_SYSFS_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

/* The text of the file at the printf-style path, stripped; NULL when unreadable. g_free() it. */
char *vt_sysfs_read(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/* The file holds one decimal number (white space around it): true and *@out, else false. */
bool vt_sysfs_read_u64(uint64_t *out, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

#endif
