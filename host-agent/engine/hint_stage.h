/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A VM's guest hint channel on its worker (engine/hint_stage.c, docs/vtierd.md). */
#ifndef VTIER_CORE_VM_HINTS_H
#define VTIER_CORE_VM_HINTS_H

#include <glib.h>

struct vt_vm;
struct vt_vm_stats;

/*
 * The hints stage of a window, before the placement: with policy hints=on,
 * attach (or retry every few windows), read and act, and fill @s->hints;
 * with hints=off, leave the channel. On the VM's worker.
 */
void vt_vm_hints_window(struct vt_vm *vm, GPtrArray *backends, struct vt_vm_stats *s);
/* Leave the channel (discards queued cancelled, everything acknowledged). NULL hints fine. */
void vt_vm_hints_close(struct vt_vm *vm);

#endif
