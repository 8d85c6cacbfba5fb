/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A VM's guest hint channel on its worker (engine/hint_stage.c, docs/vtierd.md). */
#ifndef VTIER_CORE_VM_HINTS_H
#define VTIER_CORE_VM_HINTS_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

struct vt_vm;
struct vt_vm_stats;

/*
 * Between windows, on the VM's worker, before the window that @windows
 * (s->windows) counts: with policy hints=off the channel is left; with
 * hints=on it is opened (at first, then every RETRY_WINDOWS windows while it
 * does not open), unless @precopy: the window to come is an early
 * hand-off's precopy, which ends before the hint stage.
 */
void vt_vm_hints_channel(struct vt_vm *vm, uint64_t windows, bool precopy);
/*
 * The hints stage of a window, before the placement: read the channel that
 * vt_vm_hints_channel() opened and act, and fill @s->hints (a channel not
 * open: its error and refusals). A region that failed (shrunk) is closed and
 * counted here, looked for again RETRY_WINDOWS later. A chunk the guest calls
 * COLD ages to @cold_age windows (the waterfall's age, vt_window.cold_age;
 * 0: none). On the VM's worker.
 */
void vt_vm_hints_window(struct vt_vm *vm, GPtrArray *backends, unsigned int cold_age,
			struct vt_vm_stats *s);
/* Leave the channel (discards queued cancelled, everything acknowledged). NULL hints fine. */
void vt_vm_hints_close(struct vt_vm *vm);

#endif
