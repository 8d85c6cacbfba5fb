/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Who is on the other end of a hand-off connection, by what the kernel says
 * (SO_PEERCRED, a pidfd, the process start time), and whether the fds a HELLO
 * carries are what it claims: a tmpfs/hugetlbfs file large enough for the
 * backend, a real userfaultfd registered on the peer's mapping of that file
 * at @hva. A HELLO's fields are the peer's word; these checks are the
 * kernel's.
 *
 * Library code: returns negative errno, logs nothing above g_debug.
 */
#ifndef VTIER_IFACE_HANDOFF_PEER_H
#define VTIER_IFACE_HANDOFF_PEER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <vtier/handoff.h>

struct vt_handoff_peer {
	pid_t pid;		/* SO_PEERCRED, in the agent's pid namespace */
	uid_t uid;
	gid_t gid;
	int pidfd;		/* pidfd_open(pid) at accept, or -1 (old kernel) */
	uint64_t start_time;	/* /proc/PID/stat field 22 (clock ticks after boot), 0 unknown */
	char *cgroup;		/* /proc/PID/cgroup at accept (see vt_proc_cgroup()), NULL unknown */
};

/*
 * Fill @peer for connected unix socket @sockfd: credentials, a pidfd, the
 * start time and the cgroup, taken right at accept so that a later check can
 * tell the same process from a new one with a recycled pid, and so that what
 * the peer costs is charged to it (its process, and its uid + cgroup: libvirt
 * puts each VM in a scope of its own). 0 or -errno (-ESRCH when the peer's
 * pid is not visible in this pid namespace); a pidfd, start time or cgroup
 * that cannot be read stays -1 / 0 / NULL.
 */
int vt_handoff_peer_get(int sockfd, struct vt_handoff_peer *peer);
/* Close the pidfd, free the cgroup; safe on a zeroed or already cleared peer (pidfd -1). */
void vt_handoff_peer_clear(struct vt_handoff_peer *peer);

/* Start time of @pid from /proc/PID/stat field 22. 0 or -errno. */
int vt_proc_start_time(pid_t pid, uint64_t *start_time);

/*
 * The cgroup of @pid from /proc/PID/cgroup: the path of the first "0::"
 * line (cgroup v2), else of the first "name=systemd" line (v1), else of the
 * first line; a newline in a cgroup's name cannot forge another line before
 * the real one. Returns a new string (g_free) or NULL with -errno in @err.
 */
char *vt_proc_cgroup(pid_t pid, int *err);

/*
 * Check a parsed HELLO (vt_handoff_parse() accepted it) against the kernel:
 * qemu_pid is the socket's peer; @memfd is a regular tmpfs or hugetlbfs
 * file with at least fd_offset + size_bytes bytes; @uffd is a userfaultfd;
 * [hva, hva + size_bytes) in the peer is a shared mapping of @memfd at
 * fd_offset; @uffd is the userfaultfd registered there (missing + WP). A
 * PREPARE (VTIER_HELLO_F_PREPARE) has the memfd alone: its checks stop there.
 * Returns 0, or -EPERM / -EBADF / -ERANGE / -EBUSY / -errno with a one-line
 * reason in @err (fits a HELLO_REPLY message).
 */
int vt_handoff_check_fds(const struct vtier_handoff_hello *hello,
			 const struct vt_handoff_peer *peer, int memfd, int uffd, char *err,
			 size_t err_len);
/*
 * One of a HELLO's bitmaps, the fd at @fd_index: the zero map
 * (VTIER_HANDOFF_FD_ZERO_MAP, flag VTIER_HELLO_F_ZERO_MAP) or the send map
 * (VTIER_HANDOFF_FD_SEND_MAP, flag VTIER_HELLO_F_SEND_MAP). @fd is a memfd of
 * exactly vtier_zero_map_bytes() bytes for the HELLO's backend, sealed
 * against shrinking, growing and further seals (the agent writes it through
 * a shared mapping: a peer that could shrink it would make those writes
 * fault). Returns 0, or -EBADF / -ERANGE with a one-line reason naming the
 * map in @err.
 */
int vt_handoff_check_map(const struct vtier_handoff_hello *hello, unsigned int fd_index, int fd,
			 char *err, size_t err_len);
/* "zero map" or "send map" for a HELLO's fd index (VTIER_HANDOFF_FD_*_MAP). */
static inline const char *vt_handoff_map_name(unsigned int fd_index)
{
	return fd_index == VTIER_HANDOFF_FD_SEND_MAP ? "send map" : "zero map";
}

#endif /* VTIER_IFACE_HANDOFF_PEER_H */
