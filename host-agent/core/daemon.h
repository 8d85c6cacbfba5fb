/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's state: attached VMs by name, the host's tiers, and the
 * dispatcher of control requests. Events worth an operator's attention go to
 * the log function the program sets (library code does not log).
 */
#ifndef VTIER_CORE_DAEMON_H
#define VTIER_CORE_DAEMON_H

#include <glib.h>

#include "tiers.h"
#include "vm.h"

typedef void (*vt_log_fn)(GLogLevelFlags level, const char *vm, const char *message);

struct vt_daemon {
	GHashTable *vms;		/* name -> struct vt_vm * */
	struct vt_tiers tiers;
	struct vt_vm_policy defaults;
	vt_log_fn log;
	unsigned int next_id;
	int qmp_timeout_ms;
};

struct vt_daemon *vt_daemon_new(const struct vt_tiers *tiers, vt_log_fn log);
void vt_daemon_free(struct vt_daemon *d);
/* Handle one request; returns the newline-terminated JSON reply. */
char *vt_daemon_handle(struct vt_daemon *d, const char *data, size_t len);
/* The engine found the VM gone or broken: log and detach it. */
void vt_daemon_vm_failed(struct vt_daemon *d, struct vt_vm *vm);
struct vt_vm *vt_daemon_attach(struct vt_daemon *d, const char *qmp_path, const char *name,
			       char *const *set, unsigned int nr_set, GError **error);
bool vt_daemon_detach(struct vt_daemon *d, const char *name, const char *why, GError **error);

#endif
