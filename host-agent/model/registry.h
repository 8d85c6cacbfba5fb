/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the layers below the daemon report to the registry of VMs and
 * backends, the way access sources and profilers are reached: an ops table
 * the registry (daemon/) implements, so that nothing below it includes the
 * daemon. Every op runs on the main loop unless it says otherwise.
 */
#ifndef VTIER_MODEL_REGISTRY_H
#define VTIER_MODEL_REGISTRY_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include <vtier/handoff.h>

struct vt_vm;
struct vt_backend;

struct vt_registry_ops {
	/*
	 * A line for the operator about @vm (NULL: the daemon), rate-limited
	 * per (@fmt's address, @vm) as vt_daemon_log() says. Any thread.
	 */
	void (*logv)(void *opaque, GLogLevelFlags level, const char *vm, const char *fmt,
		     va_list ap) G_GNUC_PRINTF(4, 0);
	/* Tie an accepted hand-off to its VM (by QEMU pid), creating the VM if none is attached. */
	bool (*adopt_backend)(void *opaque, struct vt_backend *b, GError **error);
	/* The hand-off of @b ended: untie it; a VM attached only by hand-offs goes with its last. */
	void (*backend_gone)(void *opaque, struct vt_vm *vm, struct vt_backend *b);
	/* A backend came, went or moved: the VM's engine restarts on its RAM and tiers. */
	void (*ranges_changed)(void *opaque, struct vt_vm *vm);
	/* Apply "KEY=VALUE" assignments to @vm's policy (all or nothing), restart its engine. */
	bool (*set_policy)(void *opaque, struct vt_vm *vm, char *const *set, unsigned int n,
			   GError **error);
	/* QEMU's MIGRATION event @event on @b of @vm (the VM's migration takes it). */
	void (*migration_event)(void *opaque, struct vt_vm *vm, struct vt_backend *b,
				enum vtier_migration_event event);
	/* The VM attached as @name with @serial, or NULL when it went (maybe another took its name). */
	struct vt_vm *(*vm_find)(void *opaque, const char *name, uint64_t serial);
	/* The VM's engine found it gone or broken: log and detach it. */
	void (*vm_failed)(void *opaque, struct vt_vm *vm);
};

struct vt_registry {
	const struct vt_registry_ops *ops;
	void *opaque;
};

void vt_registry_log(const struct vt_registry *r, GLogLevelFlags level, const char *vm,
		     const char *fmt, ...) G_GNUC_PRINTF(4, 5);

#endif
