// SPDX-License-Identifier: GPL-2.0-or-later
/* The guest hint region of a VM: found by name, checked on the open file (never mapped). */
#include "hint_region.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <vtier/guest.h>

#include "errbuf.h"
#include "procmaps.h"

/* [A-Za-z0-9._-]{1,63}, not "." or "..", not starting with '-' or '.' */
static bool plain_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 63 || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

int vt_hint_region_pid_uid(pid_t pid, uid_t *uid)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (pid <= 0 || stat(path, &st) < 0)
		return -ESRCH;
	*uid = st.st_uid;
	return 0;
}

/* Does @pid map the file @dev:@ino? 1 yes, 0 no, -errno. */
static int mapped_by(pid_t pid, uint64_t dev, uint64_t ino)
{
	g_autoptr(GArray) maps = g_array_new(FALSE, FALSE, sizeof(struct vt_mapping));
	g_autoptr(GError) e = NULL;

	if (!vt_procmaps_read(pid, maps, &e))
		return -e->code;
	for (unsigned int i = 0; i < maps->len; i++) {
		const struct vt_mapping *m = &g_array_index(maps, struct vt_mapping, i);

		if (m->inode == ino && makedev(m->dev_major, m->dev_minor) == dev)
			return 1;
	}
	return 0;
}

int vt_hint_region_open(const char *dir, const char *name, pid_t pid, uid_t uid,
			struct vt_hint_region *out, char *err, size_t err_len)
{
	char path[512];
	struct stat st;
	int fd, ret;

	*out = (struct vt_hint_region){ .fd = -1 };
	if (!plain_name(name))
		return vt_err_set(-EINVAL, err, err_len,
				  "VM name '%.64s' is not a plain name ([A-Za-z0-9._-]): no hint region",
				  name);
	snprintf(path, sizeof(path), "%s/" VT_HINT_REGION_PREFIX "%s", dir, name);
	/* O_NONBLOCK: a FIFO planted there must not block the worker */
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		return vt_err_set(ret, err, err_len, "%s: %s%s", path, strerror(-ret),
				  ret == -ENOENT ? " (give the VM an ivshmem-plain device on it: docs/vtierd.md)" :
				  ret == -ELOOP ? " (a symbolic link: refused)" : "");
	}
	if (fstat(fd, &st) < 0) {
		ret = vt_err_set(-errno, err, err_len, "%s: fstat: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = vt_err_set(-EINVAL, err, err_len, "%s: not a regular file", path);
		goto fail;
	}
	if (st.st_uid != uid) {
		ret = vt_err_set(-EPERM, err, err_len, "%s: owned by uid %u, not by QEMU's uid %u",
				 path, (unsigned int)st.st_uid, (unsigned int)uid);
		goto fail;
	}
	if (st.st_size < VTIER_GUEST_REGION_MIN || st.st_size > VTIER_GUEST_REGION_MAX ||
	    (st.st_size & (st.st_size - 1))) {
		ret = vt_err_set(-EINVAL, err, err_len,
				 "%s: %lld bytes: a hint region is a power of 2 from %u to %u",
				 path, (long long)st.st_size, VTIER_GUEST_REGION_MIN,
				 VTIER_GUEST_REGION_MAX);
		goto fail;
	}
	ret = mapped_by(pid, st.st_dev, st.st_ino);
	if (ret <= 0) {
		ret = vt_err_set(ret < 0 ? ret : -ESRCH, err, err_len,
				 "%s: not mapped by QEMU pid %d%s%s", path, (int)pid,
				 ret < 0 ? ": " : "", ret < 0 ? strerror(-ret) : "");
		goto fail;
	}
	*out = (struct vt_hint_region){ .size = (size_t)st.st_size, .fd = fd,
					.dev = st.st_dev, .ino = st.st_ino };
	return 0;
fail:
	close(fd);
	return ret;
}

int vt_hint_region_check(const struct vt_hint_region *r, char *err, size_t err_len)
{
	struct stat st;

	if (fstat(r->fd, &st) < 0)
		return vt_err_set(-ESTALE, err, err_len, "hint region: fstat: %s", strerror(errno));
	if (st.st_size < 0 || (uint64_t)st.st_size < r->size)
		return vt_err_set(-ESTALE, err, err_len,
				  "hint region shrunk by its owner (%lld of %zu bytes): closed",
				  (long long)st.st_size, r->size);
	return 0;
}

void vt_hint_region_close(struct vt_hint_region *r)
{
	if (r->fd < 0)
		return;		/* never opened, or closed already */
	close(r->fd);
	*r = (struct vt_hint_region){ .fd = -1 };
}
