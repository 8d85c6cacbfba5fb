/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The TLB flushes of a VM's window (engine/tlb_stage.c, docs/abi-control.md
 * "tlb"): the kernel's counters read at each window's end, on the VM's
 * worker, and their deltas counted into the window's stats.
 */
#ifndef VTIER_ENGINE_TLB_STAGE_H
#define VTIER_ENGINE_TLB_STAGE_H

#include <stdint.h>

#include "tlb_counters.h"
#include "tlb_stats.h"

struct vt_vm;
struct vt_vm_stats;

/* The counters as read at a window's end. */
struct vt_tlb_sample {
	enum vt_counter_state host;	/* host_shootdowns */
	uint64_t host_shootdowns;
	enum vt_counter_state kvm;	/* kvm.flushes; kvm.requests when kvm.has_requests */
	struct vt_kvm_tlb kvm_tlb;
};

/*
 * Count @now into @s against the marks of the last window's end, and mark
 * @now: a counter's delta counts when it was read at both ends (not in the
 * VM's first window, nor one after it was missing) and did not go back (a
 * CPU taken offline leaves /proc/interrupts, a VM's KVM counters start
 * again); with @moved_bytes, the window moved memory and its delta and
 * bytes also count in the per-GiB figures.
 */
void vt_tlb_account(struct vt_tlb_marks *m, const struct vt_tlb_sample *now,
		    uint64_t moved_bytes, struct vt_tlb_stats *s);
/*
 * Forget the marks (the windows stopped): the next window's end only marks.
 * The KVM directory stays held: the VM's counters are still there.
 */
void vt_tlb_marks_drop(struct vt_tlb_marks *m);
/* Release what the marks hold (the KVM directory), when the VM goes. */
void vt_tlb_release(struct vt_tlb_marks *m);
/* Flushes per GiB moved (@moving / @moved_bytes in GiB); 0 when nothing moved. */
double vt_tlb_per_gib(const struct vt_tlb_count *c);
/*
 * At the end of a window that moved @moved_bytes, on the VM's worker: read
 * the counters (under the host config's proc_root and debugfs_root; "" is
 * the host's) and count them into @s. The VM's KVM directory is found once
 * and held in vm->tlb_marks (vt_kvm_tlb_read_held). A counter that turns
 * missing or malformed is logged once, and again only after it was read again.
 */
void vt_tlb_window(struct vt_vm *vm, uint64_t moved_bytes, struct vt_vm_stats *s);

#endif
