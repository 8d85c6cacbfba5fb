// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the kernel says about a hand-off peer and its fds. See handoff_peer.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/magic.h>
#include <linux/userfaultfd.h>

#include <glib.h>

#include "errbuf.h"
#include "handoff_peer.h"
#include "procmaps.h"

int vt_proc_start_time(pid_t pid, uint64_t *start_time)
{
	char path[64], buf[1024];
	unsigned long long v;
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	/* comm (field 2) may hold spaces and ')': fields resume after the last ')' */
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	/* the space before field N + 1 is the N-th one after ')' */
	for (int field = 2; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EIO;
	}
	if (sscanf(p + 1, "%llu", &v) != 1)
		return -EIO;
	*start_time = v;
	return 0;
}

/* The path of line @line ("ID:CONTROLLERS:PATH"), or NULL. */
static char *cgroup_path(const char *line, size_t len)
{
	const char *p = memchr(line, ':', len), *q;

	if (!p)
		return NULL;
	q = memchr(p + 1, ':', len - (size_t)(p + 1 - line));
	if (!q)
		return NULL;
	return g_strndup(q + 1, len - (size_t)(q + 1 - line));
}

char *vt_proc_cgroup(pid_t pid, int *err)
{
	char path[64], buf[4096];
	const char *first = NULL, *systemd = NULL, *line;
	size_t first_len = 0, systemd_len = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	*err = n < 0 ? -errno : -EIO;
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	for (line = buf; *line; ) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (len >= 3 && !memcmp(line, "0::", 3))
			return cgroup_path(line, len);
		if (!systemd && g_strstr_len(line, (gssize)len, ":name=systemd:")) {
			systemd = line;
			systemd_len = len;
		}
		if (!first) {
			first = line;
			first_len = len;
		}
		if (!end)
			break;
		line = end + 1;
	}
	if (systemd)
		return cgroup_path(systemd, systemd_len);
	return first ? cgroup_path(first, first_len) : NULL;
}

int vt_handoff_peer_get(int sockfd, struct vt_handoff_peer *peer)
{
	int err;

	struct ucred cred;
	socklen_t len = sizeof(cred);

	*peer = (struct vt_handoff_peer) { .pidfd = -1 };
	if (getsockopt(sockfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	if (cred.pid <= 0)
		return -ESRCH;
	peer->pid = cred.pid;
	peer->uid = cred.uid;
	peer->gid = cred.gid;
#ifdef SYS_pidfd_open
	peer->pidfd = (int)syscall(SYS_pidfd_open, cred.pid, 0);
	if (peer->pidfd < 0)
		g_debug("handoff: pidfd_open(%d): %s", (int)cred.pid, g_strerror(errno));
#endif
	if (vt_proc_start_time(cred.pid, &peer->start_time))
		peer->start_time = 0;
	peer->cgroup = vt_proc_cgroup(cred.pid, &err);
	if (!peer->cgroup)
		g_debug("handoff: cgroup of pid %d: %s", (int)cred.pid, g_strerror(-err));
	return 0;
}

void vt_handoff_peer_clear(struct vt_handoff_peer *peer)
{
	if (peer->pidfd >= 0)
		close(peer->pidfd);
	peer->pidfd = -1;
	g_clear_pointer(&peer->cgroup, g_free);
}

static bool is_userfaultfd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return strcmp(target, "anon_inode:[userfaultfd]") == 0;
}

/*
 * Is [hva, hva + size) in @pid's maps covered, without gaps, by shared
 * mappings of the file (@st) at file offset @fd_offset + (addr - hva)?
 */
static int check_mapping(pid_t pid, const struct stat *st, uint64_t hva, uint64_t size,
			 uint64_t fd_offset)
{
	g_autoptr(GArray) maps = g_array_new(FALSE, TRUE, sizeof(struct vt_mapping));
	g_autoptr(GError) e = NULL;
	uint64_t covered = hva, end = hva + size;

	if (!vt_procmaps_read(pid, maps, &e))
		return e->code == EACCES || e->code == EMFILE ? -e->code : -ESRCH;
	for (unsigned int i = 0; i < maps->len && covered < end; i++) {
		const struct vt_mapping *m = &g_array_index(maps, struct vt_mapping, i);

		if (m->end <= covered || m->start > covered)
			continue;
		if (m->perms[3] != 's' || m->dev_major != major(st->st_dev) ||
		    m->dev_minor != minor(st->st_dev) || m->inode != (uint64_t)st->st_ino ||
		    m->offset + (covered - m->start) != fd_offset + (covered - hva))
			return -ERANGE;
		covered = m->end;
	}
	return covered >= end ? 0 : -ERANGE;
}

int vt_handoff_check_fds(const struct vtier_handoff_hello *h, const struct vt_handoff_peer *peer,
			 int memfd, int uffd, char *err, size_t err_len)
{
	struct uffdio_register reg;
	struct statfs sfs;
	struct stat st;
	int ret;

	if (!peer->pid || h->qemu_pid != (uint32_t)peer->pid)
		return vt_err_set(-EPERM, err, err_len, "HELLO says qemu_pid %u, the socket's peer is "
			          "pid %d: send getpid()", h->qemu_pid, (int)peer->pid);
	if (fstat(memfd, &st) || !S_ISREG(st.st_mode) || fstatfs(memfd, &sfs) ||
	    (sfs.f_type != TMPFS_MAGIC && sfs.f_type != HUGETLBFS_MAGIC))
		return vt_err_set(-EBADF, err, err_len,
			          "fd 0 is not a memfd or tmpfs/hugetlbfs file: hand over the backend's fd");
	if (h->fd_offset > UINT64_MAX - h->size_bytes || st.st_size < 0 ||
	    (uint64_t)st.st_size < h->fd_offset + h->size_bytes)
		return vt_err_set(-ERANGE, err, err_len, "memfd of %lld bytes is smaller than fd_offset "
			          "%" PRIu64 " + size_bytes %" PRIu64, (long long)st.st_size,
			          h->fd_offset, h->size_bytes);
	if (h->flags & VTIER_HELLO_F_PREPARE)
		return 0;	/* the memfd alone: no mapping, no userfaultfd yet */
	if (!is_userfaultfd(uffd))
		return vt_err_set(-EBADF, err, err_len, "fd 1 is not a userfaultfd");
	ret = check_mapping(peer->pid, &st, h->hva, h->size_bytes, h->fd_offset);
	if (ret == -EACCES)
		return vt_err_set(ret, err, err_len, "cannot read /proc/%d/maps: run the agent as root "
			          "or as QEMU's user", (int)peer->pid);
	if (ret == -EMFILE)
		return vt_err_set(ret, err, err_len, "cannot read /proc/%d/maps: the agent is out of "
			          "fds (RLIMIT_NOFILE): retry later", (int)peer->pid);
	if (ret)
		return vt_err_set(ret, err, err_len, "hva 0x%" PRIx64 "+%" PRIu64 " is not pid %d's "
			          "shared mapping of the memfd at fd_offset", h->hva, h->size_bytes,
			          (int)peer->pid);
	/*
	 * Registering again with the same userfaultfd and modes changes nothing;
	 * another userfaultfd on the range gives EBUSY, an unusable range EINVAL.
	 */
	reg = (struct uffdio_register) {
		.range = { h->hva, h->size_bytes },
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};
	if (ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		ret = -errno;
		return vt_err_set(ret == -EBUSY ? ret : -EBADF, err, err_len,
			          "the userfaultfd is not registered on hva 0x%" PRIx64 ": %s", h->hva,
			          g_strerror(-ret));
	}
	return 0;
}

int vt_handoff_check_map(const struct vtier_handoff_hello *h, unsigned int fd_index, int fd,
			 char *err, size_t err_len)
{
	const int want = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	const char *name = vt_handoff_map_name(fd_index);
	uint64_t bytes = vtier_zero_map_bytes(h->size_bytes, h->page_size);
	struct stat st;
	int seals;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return vt_err_set(-EBADF, err, err_len, "fd %u (the %s) is not a memfd", fd_index,
			          name);
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & want) != want)
		return vt_err_set(-EBADF, err, err_len, "the %s is not sealed against "
			          "shrinking, growing and new seals (seals 0x%x, want 0x%x)", name,
			          seals < 0 ? 0 : seals, want);
	if (st.st_size < 0 || (uint64_t)st.st_size != bytes)
		return vt_err_set(-ERANGE, err, err_len, "the %s has %lld bytes; a backend of "
			          "%" PRIu64 " bytes in %" PRIu64 "-byte pages needs %" PRIu64, name,
			          (long long)st.st_size, h->size_bytes, h->page_size, bytes);
	return 0;
}
