/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where a VM's guest hint region is (docs/abi-guest.md, docs/vtierd.md): the
 * file DIR/vtier-hints-NAME (DIR: /dev/shm) that QEMU maps as the memory
 * backend of the VM's ivshmem-plain device. The VM's name becomes a path only
 * when it is a plain name; the file is opened without following links, and
 * the open file itself is checked: a regular file of the QEMU process's
 * owner, a region size the ABI allows, mapped by that QEMU process (same
 * device and inode in /proc/PID/maps). The agent never maps it: its owner
 * may shrink it at any moment, and an access through a mapping past the new
 * end would be SIGBUS for every VM's agent; it is read and written with
 * pread/pwrite on @fd (iface/guest_hints.h), where a shrunk file is a short
 * read that closes this VM's channel only.
 */
#ifndef VTIER_CORE_HINT_REGION_H
#define VTIER_CORE_HINT_REGION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VT_HINT_REGION_DIR "/dev/shm"
#define VT_HINT_REGION_PREFIX "vtier-hints-"

struct vt_hint_region {
	size_t size;
	int fd;			/* -1: not open */
	uint64_t dev;		/* st_dev and st_ino of the file, checked again per window */
	uint64_t ino;
};

/*
 * Open the region of VM @name for the QEMU process @pid, whose
 * owner must be @uid. 0, or -errno with @err saying what to do: -EINVAL (a
 * name that is no plain name, a size the ABI refuses, not a regular file),
 * -ENOENT (no such file: the VM has no hint device), -ELOOP (a symbolic
 * link), -EPERM (another owner), -ESRCH (QEMU does not map it).
 */
int vt_hint_region_open(const char *dir, const char *name, pid_t pid, uid_t uid,
			struct vt_hint_region *out, char *err, size_t err_len);
/*
 * Is the region still of the size it was? Checked before each window, so
 * that a file shrunk meanwhile is refused with its size; one shrunk during
 * the window fails the channel's next read (vt_ghint_error). 0 or -ESTALE
 * with @err set.
 */
int vt_hint_region_check(const struct vt_hint_region *r, char *err, size_t err_len);
/* Close; a region never opened (fd -1) or closed already is fine. */
void vt_hint_region_close(struct vt_hint_region *r);
/* The uid owning process @pid (of /proc/PID), or -errno. */
int vt_hint_region_pid_uid(pid_t pid, uid_t *uid);

#endif
