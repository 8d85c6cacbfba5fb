/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/PID/maps: find the mapping that holds a range of a process's memory. */
#ifndef VTIER_UTIL_PROCMAPS_H
#define VTIER_UTIL_PROCMAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <glib.h>

struct vt_mapping {
	uint64_t start;
	uint64_t end;
	char perms[5];
	uint64_t offset;
	unsigned int dev_major, dev_minor;	/* the mapped file's device */
	uint64_t inode;				/* ... and inode (0: anonymous) */
	char path[256];		/* "" for anonymous */
};

/* Errors: the code is an errno (ESRCH, EACCES, EMFILE: out of fds, EPROTO). */
#define VT_PROCMAPS_ERROR (vt_procmaps_error_quark())
GQuark vt_procmaps_error_quark(void);

/* Parse maps text into an array of struct vt_mapping (sorted as the kernel prints). */
bool vt_procmaps_parse(const char *text, size_t len, GArray *out, GError **error);
/* Read /proc/@pid/maps. */
bool vt_procmaps_read(pid_t pid, GArray *out, GError **error);
/* The mapping that contains [@start, @end) entirely, or NULL. */
const struct vt_mapping *vt_procmaps_find(GArray *maps, uint64_t start, uint64_t end);

#endif
