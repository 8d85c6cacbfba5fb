/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where a VM's guest hint region is (docs/abi-guest.md, docs/vtierd.md): the
 * file DIR/vtier-hints-NAME (DIR: /dev/shm) that QEMU maps as the memory
 * backend of the VM's ivshmem-plain device. The VM's name becomes a path only
 * when it is a plain name; the file is opened without following links, and
 * the open file itself is checked: a regular file of the QEMU process's
 * owner, a region size the ABI allows, mapped by that QEMU process (same
 * device and inode in /proc/PID/maps). Then it is mapped shared.
 */
#ifndef VTIER_CORE_HINT_REGION_H
#define VTIER_CORE_HINT_REGION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VT_HINT_REGION_DIR "/dev/shm"
#define VT_HINT_REGION_PREFIX "vtier-hints-"

struct vt_hint_region {
	void *mem;
	size_t size;
	int fd;
	uint64_t dev;		/* st_dev and st_ino of the file, checked again per window */
	uint64_t ino;
};

/*
 * Open and map the region of VM @name for the QEMU process @pid, whose
 * owner must be @uid. 0, or -errno with @err saying what to do: -EINVAL (a
 * name that is no plain name, a size the ABI refuses, not a regular file),
 * -ENOENT (no such file: the VM has no hint device), -ELOOP (a symbolic
 * link), -EPERM (another owner), -ESRCH (QEMU does not map it).
 */
int vt_hint_region_open(const char *dir, const char *name, pid_t pid, uid_t uid,
			struct vt_hint_region *out, char *err, size_t err_len);
/*
 * Is the region still the file it was, of the size it was? The file's owner
 * could shrink it under the mapping (a read beyond its end is SIGBUS): checked
 * before each use. 0 or -ESTALE with @err set.
 */
int vt_hint_region_check(const struct vt_hint_region *r, char *err, size_t err_len);
/* Unmap and close; a zeroed or closed region is fine. */
void vt_hint_region_close(struct vt_hint_region *r);
/* The uid owning process @pid (of /proc/PID), or -errno. */
int vt_hint_region_pid_uid(pid_t pid, uid_t *uid);

#endif
