/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The VM's worker thread: its engine runs there, never on the daemon's
 * main loop (README.md, "Threads").
 */
#ifndef VTIER_ENGINE_VM_WORKER_H
#define VTIER_ENGINE_VM_WORKER_H

#include <stdbool.h>

#include <glib.h>

#include "vm.h"

/* Run the VM's engine on its own thread from now on. 0 or -errno. */
int vt_vm_worker_start(struct vt_vm *vm);
/*
 * Ask the worker to apply @policy: at the next window when only live keys
 * changed (vt_vm_policy_live()), else by restarting the engine (on failure it
 * keeps the old one); @done (may be NULL) then runs on the main loop with NULL or
 * the reason of the refusal.
 */
typedef void (*vt_vm_policy_done_fn)(void *arg, const char *error);
void vt_vm_worker_post_policy(struct vt_vm *vm, const struct vt_vm_policy *policy,
			      vt_vm_policy_done_fn done, void *done_arg);
/* Ask the worker to take new RAM (the arrays become the worker's) and restart the engine. */
void vt_vm_worker_post_ram(struct vt_vm *vm, GArray *ram, GArray *gpa_map);
/*
 * (Re)start the VM's engine with the worker as its owner: a failed window is
 * reported to the main loop, which detaches the VM. On the worker, or before
 * it runs.
 */
bool vt_vm_worker_engine_start(struct vt_vm *vm, GError **error);
/*
 * Stop the worker and free the VM without blocking the caller: the engine
 * stops on a reaper thread once the window in progress ends. The main loop's
 * parts (QMP, backends' links) must be released before. @wait: stop it here
 * instead (the daemon's exit: a process that ends leaves a reaper no time to
 * stop the engine, and a kernel DAMON it started would keep running).
 */
void vt_vm_retire(struct vt_vm *vm, bool wait);

#endif
