/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The per-VM engine: the window and its stages (engine.c).
 */
#ifndef VTIER_ENGINE_ENGINE_H
#define VTIER_ENGINE_ENGINE_H

#include <stdbool.h>

#include <glib.h>

#include "vm.h"

/*
 * Engine: (re)start after attach or a policy change; stop before detach.
 * @failed runs on the VM's worker after a window that left the VM gone or
 * broken (the engine's timers keep running until its owner stops it).
 * A start whose profiler could not start returns false and tries again
 * every VT_ENGINE_RETRY_MS on the VM's worker (logged on success and every
 * VT_ENGINE_RETRY_LOG-th failure) until one works or a start or stop of
 * its owner's takes over.
 */
#define VT_ENGINE_RETRY_MS 1000
#define VT_ENGINE_RETRY_LOG 60
bool vt_engine_start(struct vt_vm *vm, vt_engine_failed_fn failed, void *opaque,
		     GError **error);
void vt_engine_stop(struct vt_vm *vm);
/* One window now (the timer calls it); false when the VM must be detached. */
bool vt_engine_window(struct vt_vm *vm);

#endif
