/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A VM as JSON for the control socket (docs/abi-control.md).
 */
#ifndef VTIER_DAEMON_VM_JSON_H
#define VTIER_DAEMON_VM_JSON_H

#include <stdbool.h>

#include <glib.h>

#include <json-glib/json-glib.h>

#include "vm.h"

/* For the main loop (daemon/vm_json.c): a consistent view, under the VM's lock. */
void vt_vm_status_to_json(struct vt_vm *vm, JsonBuilder *b);
void vt_vm_stats_to_json(struct vt_vm *vm, const struct vt_tiers *tiers, JsonBuilder *b);

#endif
