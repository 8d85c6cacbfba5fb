/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel's own counts of TLB flushes, read from a root path (a host:
 * "/proc" and "/sys/kernel/debug"; tests: a fake tree):
 *  - the host's TLB shootdowns: x86's "TLB:" line of /proc/interrupts,
 *    summed over the CPUs; host-wide (every VM and process on the host);
 *  - KVM's remote TLB flushes of one VM: debugfs kvm/<pid>-<fd>/
 *    remote_tlb_flush (and remote_tlb_flush_requests, where the kernel has it).
 * Each read says OK, ABSENT (the kernel has no such counter here: not x86,
 * debugfs not mounted, no VM of the pid; not an error) or BAD (the text is
 * not what the kernel prints), with why in @error for ABSENT and BAD.
 */
#ifndef VTIER_UTIL_TLB_COUNTERS_H
#define VTIER_UTIL_TLB_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <glib.h>

enum vt_counter_state {
	VT_COUNTER_OK,
	VT_COUNTER_ABSENT,
	VT_COUNTER_BAD,
};

/* Errors: the code is an errno (ENOENT: absent, EPROTO: malformed, E2BIG: too long). */
#define VT_TLB_COUNTERS_ERROR (vt_tlb_counters_error_quark())
GQuark vt_tlb_counters_error_quark(void);

/* The text of /proc/interrupts: the "TLB:" line's counts summed over the header's CPUs. */
enum vt_counter_state vt_interrupts_tlb_parse(const char *text, size_t len, uint64_t *total,
					      GError **error);
/* The same, of @proc_root/interrupts (unreadable: ABSENT). */
enum vt_counter_state vt_interrupts_tlb_read(const char *proc_root, uint64_t *total,
					     GError **error);

struct vt_kvm_tlb {
	uint64_t flushes;	/* remote_tlb_flush */
	uint64_t requests;	/* remote_tlb_flush_requests, when has_requests */
	bool has_requests;
};

/*
 * KVM's counters of the VM that process @pid (the kernel's pid, as vtierd
 * holds it) created: the one directory of @debugfs_root/kvm named
 * "<pid>-<fd>" (both decimal), found by listing that directory; none, or
 * more than one: ABSENT.
 */
enum vt_counter_state vt_kvm_tlb_read(const char *debugfs_root, pid_t pid,
				      struct vt_kvm_tlb *out, GError **error);

/*
 * A VM's KVM directory, held open once found (zeroed: none held). The
 * kernel removes the directory when the VM's KVM fd closes: a read through
 * the held fd then fails, and only then is kvm/ listed again.
 */
struct vt_kvm_dir {
	bool held;		/* fd is open on kvm/name, the directory of pid */
	int fd;
	pid_t pid;
	char name[24];		/* "<pid>-<fd>" */
};

/*
 * vt_kvm_tlb_read() through @dir: the directory held is read while it reads;
 * kvm/ is listed (and the directory found held) only when none is held, when
 * a read from it fails (ABSENT), or when @pid is not the one it was found
 * for (a new QEMU never reads the old one's directory).
 */
enum vt_counter_state vt_kvm_tlb_read_held(struct vt_kvm_dir *dir, const char *debugfs_root,
					   pid_t pid, struct vt_kvm_tlb *out, GError **error);
/* Close what @dir holds (none held after). */
void vt_kvm_dir_release(struct vt_kvm_dir *dir);

#endif
