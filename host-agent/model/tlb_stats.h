/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The TLB flushes a VM's windows saw, from the kernel's own counters
 * (util/tlb_counters.h), as the VM model keeps them (filled on the VM's
 * worker by engine/tlb_stage.c, published with the window's stats).
 */
#ifndef VTIER_MODEL_TLB_STATS_H
#define VTIER_MODEL_TLB_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "tlb_counters.h"

/* One counter over the VM's windows (vtierctl stats: "tlb"). */
struct vt_tlb_count {
	bool ok;		/* read at the last window's end */
	uint64_t total;		/* over the windows that had a count before and after */
	uint64_t last;		/* in the last window */
	uint64_t moving;	/* in windows that moved memory */
	uint64_t moved_bytes;	/* ... the bytes those windows moved */
};

/*
 * host_shootdowns is host-wide: every CPU's shootdowns, for every VM and
 * process on the host, counted over this VM's windows; kvm_* are this VM's.
 */
struct vt_tlb_stats {
	struct vt_tlb_count host_shootdowns;		/* /proc/interrupts TLB: */
	struct vt_tlb_count kvm_remote_flushes;		/* debugfs remote_tlb_flush */
	struct vt_tlb_count kvm_flush_requests;		/* ... remote_tlb_flush_requests */
};

/* One counter's value at the last window's end, and what the log was last told of it. */
struct vt_tlb_mark {
	bool ok;
	uint64_t value;
	enum vt_counter_state said;	/* VT_COUNTER_OK until a change is logged */
};

/* The counters at the last window's end: the VM's worker's alone. */
struct vt_tlb_marks {
	struct vt_tlb_mark host_shootdowns;
	struct vt_tlb_mark kvm_remote_flushes;
	struct vt_tlb_mark kvm_flush_requests;
	struct vt_kvm_dir kvm_dir;	/* the VM's KVM directory, held once found */
};

/*
 * The host's TLB shootdowns as last read, shared by every VM's window: one
 * per host, owned by the daemon, each VM pointing at it (vm->tlb_host). A
 * window finding it older than an interval reads /proc/interrupts again
 * (engine/tlb_stage.c); every field under @lock. Each VM keeps its own marks
 * (struct vt_tlb_marks), so its windows' deltas stay its own.
 */
struct vt_tlb_host {
	GMutex lock;
	bool read;			/* read at least once */
	gint64 read_us;			/* when: g_get_monotonic_time() */
	enum vt_counter_state state;
	uint64_t value;			/* when state is OK */
	int code;			/* ... and the error's code (tlb_counters.h) */
	char error[256];		/* why, when state is not OK */
};

#endif
