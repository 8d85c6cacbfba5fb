/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engine's residency stage (core/residency.c): after the profiler's
 * window and before the policy, where each chunk of the VM's MTM state is.
 */
#ifndef VTIER_CORE_RESIDENCY_H
#define VTIER_CORE_RESIDENCY_H

#include <glib.h>

#include "vm.h"

#define VT_RESIDENCY_STRIDE (16 * 1024)	/* one status sample per 16 KiB */

/*
 * Fill vm->mtm's residency (vt_mtm_residency_*) from the pages' places;
 * @backends: the VM's hand-offs (vt_vm_backends_ref). 0 or -errno of
 * move_pages (-ESRCH: QEMU is gone). On the worker.
 */
int vt_residency_query(struct vt_vm *vm, GPtrArray *backends);

#endif
