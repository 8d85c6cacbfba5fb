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
 * How old the host's shared shootdown count (vm->tlb_host) may be when a
 * window takes it: half the shortest window a policy takes, 50 ms. A
 * window's delta is then shifted by at most that at each end, half of even
 * the shortest window (what is shifted counts in the next window: nothing
 * is lost), and the host reads /proc/interrupts at most 20 times a second
 * however many VMs it runs (100 VMs at 1 s windows: 20 reads a second, not
 * 100), and never more often than windows end.
 */
#define VT_TLB_HOST_MAX_AGE_US ((gint64)VT_WINDOW_MS_MIN * 1000 / 2)

/* The daemon's shared sample: none read yet; cleared when no VM points at it any more. */
void vt_tlb_host_init(struct vt_tlb_host *h);
void vt_tlb_host_clear(struct vt_tlb_host *h);

/*
 * At the end of a window that moved @moved_bytes, on the VM's worker: read
 * the counters (under the host config's proc_root and debugfs_root; "" is
 * the host's) and count them into @s. The VM's KVM directory is found once
 * and held in vm->tlb_marks (vt_kvm_tlb_read_held). The host's shootdowns
 * come from vm->tlb_host, read again when older than VT_TLB_HOST_MAX_AGE_US;
 * a VM without one (no daemon) reads /proc/interrupts itself. A counter that
 * turns missing or malformed is logged once, and again only after it was
 * read again.
 */
void vt_tlb_window(struct vt_vm *vm, uint64_t moved_bytes, struct vt_vm_stats *s);
/* The same at @now_us (g_get_monotonic_time()'s clock): tests choose the time. */
void vt_tlb_window_at(struct vt_vm *vm, uint64_t moved_bytes, struct vt_vm_stats *s,
		      gint64 now_us);

#endif
