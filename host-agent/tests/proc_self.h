/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * For tests that bound what this process holds: a /proc/self/status figure
 * in bytes (VmRSS, VmSize) and the entries of a directory (/proc/self/fd,
 * /proc/self/task, a pool directory). Include after <cmocka.h>.
 */
#ifndef VTIER_TESTS_PROC_SELF_H
#define VTIER_TESTS_PROC_SELF_H

#include <stdint.h>
#include <string.h>

#include <glib.h>

/* The "@key:" line of /proc/self/status (kB there), in bytes. */
static inline uint64_t proc_self_status_bytes(const char *key)
{
	g_autofree char *text = NULL;
	g_autofree char *tag = g_strdup_printf("\n%s:", key);
	const char *at;

	assert_true(g_file_get_contents("/proc/self/status", &text, NULL, NULL));
	at = strstr(text, tag);
	assert_non_null(at);
	return g_ascii_strtoull(at + strlen(tag), NULL, 10) << 10;
}

/* Entries of directory @path, "." and ".." not counted. */
static inline unsigned int dir_entries(const char *path)
{
	GDir *d = g_dir_open(path, 0, NULL);
	unsigned int n = 0;

	assert_non_null(d);
	while (g_dir_read_name(d))
		n++;
	g_dir_close(d);
	return n;
}

#endif
