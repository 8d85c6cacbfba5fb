/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control protocol between vtierctl and vtierd (docs/abi-control.md):
 * one JSON object per connection, terminated by a newline, answered by one
 * JSON object. Requests are parsed here, strictly: unknown members, wrong
 * types, oversized strings and missing arguments are refused with a reason.
 */
#ifndef VTIER_CORE_CTL_PROTO_H
#define VTIER_CORE_CTL_PROTO_H

#include <stdbool.h>
#include <stddef.h>

#include <glib.h>

#include "control_socket.h"
#include "vm_policy.h"

#define VT_CTL_VERSION 1
#define VT_CTL_MAX_REQUEST VT_CONTROL_MAX_REQUEST	/* bytes, newline included */
#define VT_CTL_MAX_ASSIGN 32
#define VT_CTL_MAX_PATH 107		/* sun_path of a unix socket, minus NUL */
#define VT_CTL_MAX_DOMAIN 255		/* bytes of a libvirt domain name */

enum vt_ctl_cmd {
	VT_CTL_LIST,
	VT_CTL_ATTACH,
	VT_CTL_DETACH,
	VT_CTL_STATUS,
	VT_CTL_STATS,
	VT_CTL_POLICY,
	VT_CTL_TIERS,
	VT_CTL_PING,
	VT_CTL_DEMOTE,		/* vm + set: tier=NAME [gpa=ADDR len=SIZE] */
	VT_CTL_REPORT,		/* vm: its TCO report; without vm: every VM's */
	VT_CTL_HEATMAP,		/* vm: address bins x windows of hotness and tiers */
};

struct vt_ctl_request {
	enum vt_ctl_cmd cmd;
	char *vm;		/* status, stats, detach, policy; attach: name to give (optional) */
	char *qmp;		/* attach: by QMP socket ... */
	char *domain;		/* ... or by libvirt domain name (vtierd --libvirt-uri) */
	char **set;		/* attach, policy: KEY=VALUE (NULL-terminated, may be empty) */
	unsigned int nr_set;
};

/* Parse one request (without or with its trailing newline). */
bool vt_ctl_request_parse(const char *data, size_t len, struct vt_ctl_request *req,
			  GError **error);
void vt_ctl_request_clear(struct vt_ctl_request *req);
/* Serialise a request (vtierctl's side); returns a newline-terminated string. */
char *vt_ctl_request_to_json(const struct vt_ctl_request *req);
const char *vt_ctl_cmd_name(enum vt_ctl_cmd cmd);

#endif
