/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vtierd's config file as a whole, read the way vtierd reads it at start
 * (tools/vtierd.c calls this, and so does tests/fuzz/fuzz_config_file.c).
 */
#ifndef VTIER_DAEMON_CONFIG_FILE_H
#define VTIER_DAEMON_CONFIG_FILE_H

#include <glib.h>

#include "daemon.h"

/*
 * Parse @text (@len bytes; NULL: no config file) as a key file and build the
 * daemon from it: [tier.NAME] over the NUMA nodes of @sysfs ("/": this
 * host's), then [ctier.NAME] and [policy], then the keys of [libvirt] and
 * [metrics] (known ones only; attach = and listen = valid). Returns the
 * daemon and, in @config (may be NULL), the key file for the caller's reads
 * of [libvirt] and [metrics]; or NULL and @error naming group, key and value.
 */
struct vt_daemon *vt_daemon_from_config(const char *text, size_t len, const char *sysfs,
					vt_log_fn log, GKeyFile **config, GError **error);

#endif
