/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The "tdp" access source: a live KVM VM's second-level page table (AMD NPT,
 * Intel EPT with A/D bits) through vtier_tdp.ko's ioctls (include/vtier/tdp.h,
 * docs/abi-tdp.md). Every profiler runs on it unchanged.
 *
 * Addresses are guest-physical. mapped() lists the VM's user memslots (merged
 * where adjacent). Checks are counted by the module, per level, and added to
 * src->checks; a probe of a gpa outside every memslot reads VT_BIT_ABSENT and
 * is counted in vt_tdp_stats.noslot.
 */
#ifndef VTIER_TELEMETRY_TDP_SOURCE_H
#define VTIER_TELEMETRY_TDP_SOURCE_H

#include <stdbool.h>
#include <sys/types.h>

#include <glib.h>

#include "access_source.h"

/* Device path; the environment variable VTIER_TDP_DEVICE overrides it. */
#define VT_TDP_DEVICE_DEFAULT "/dev/vtier-tdp"

struct vt_tdp_stats {
	unsigned int format;		/* VTIER_TDP_FORMAT_* */
	uint64_t leaves[VT_MAX_LEVELS];	/* present leaves per level at open */
	uint64_t ioctls;		/* SAMPLE + SCAN calls */
	uint64_t wall_ns;		/* wall time inside SAMPLE and SCAN */
	uint64_t noslot;		/* probes outside every memslot */
	unsigned int abi_version;	/* the module's: 1 (old module) or 2 */
	uint64_t root_cookie;		/* root of the last call (0: none) */
	uint64_t root_swaps;		/* times the cookie changed from one root to another */
	uint64_t flushes;		/* TLB flushes done (VT_TDP_FLUSH_WINDOW) */
	uint64_t flush_ns;		/* their time, inside the module */
	uint64_t marked;		/* host folios marked young by the module */
	uint64_t yields;		/* mmu_lock drops inside the module */
};

/*
 * When the module flushes the VM's TLBs after clearing accessed bits
 * (VTIER_TDP_FLUSH_TLB): never, or once per window (the first SAMPLE or SCAN
 * after vt_tdp_window_begin() carries the flag).
 */
enum vt_tdp_flush {
	VT_TDP_FLUSH_NEVER = 0,
	VT_TDP_FLUSH_WINDOW = 1,
};

/* The KVM VM fd of process @pid, duplicated into ours (pidfd_getfd). -errno on error. */
int vt_tdp_vm_fd_of_pid(pid_t pid, GError **error);
/* The pid of the process at the other end of a unix socket (a QMP socket). */
int vt_tdp_pid_of_socket(const char *path, pid_t *pid, GError **error);

/* Attach to the VM behind @vm_fd (not consumed). NULL and @error on failure. */
struct vt_access_source *vt_tdp_new(int vm_fd, GError **error);
/* Convenience: find the VM fd of QEMU process @pid and attach. */
struct vt_access_source *vt_tdp_new_pid(pid_t pid, GError **error);

bool vt_is_tdp(const struct vt_access_source *src);
/* -EOPNOTSUPP when the loaded module cannot flush (version 1). */
int vt_tdp_set_flush(struct vt_access_source *src, enum vt_tdp_flush mode);
/* A window starts: with VT_TDP_FLUSH_WINDOW, its first call flushes. */
void vt_tdp_window_begin(struct vt_access_source *src);
void vt_tdp_get_stats(const struct vt_access_source *src, struct vt_tdp_stats *out);

#define VT_TDP_ERROR (vt_tdp_error_quark())
GQuark vt_tdp_error_quark(void);

#endif
