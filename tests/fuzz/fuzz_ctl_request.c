// SPDX-License-Identifier: GPL-2.0-or-later
/* Fuzz target: control requests, then the whole dispatcher with no VM attached. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ctl_proto.h"
#include "daemon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vt_daemon *d;
	struct vt_ctl_request req;
	GError *error = NULL;
	bool ok = vt_ctl_request_parse((const char *)data, size, &req, &error);
	char *reply;

	if (ok == !!error)
		__builtin_trap();
	if (ok) {
		/* what parses serialises and parses again to the same request */
		char *text = vt_ctl_request_to_json(&req);
		struct vt_ctl_request again;

		if (!vt_ctl_request_parse(text, strlen(text), &again, NULL) || again.cmd != req.cmd ||
		    again.nr_set != req.nr_set || g_strcmp0(again.vm, req.vm) != 0)
			__builtin_trap();
		vt_ctl_request_clear(&again);
		g_free(text);
		vt_ctl_request_clear(&req);
	}
	g_clear_error(&error);
	if (!d) {
		struct vt_tiers tiers = { .nr = 0 };

		d = vt_daemon_new(&tiers, NULL);
		d->qmp_timeout_ms = 10;
	}
	/* attach would connect to paths from the input: the dispatcher without it */
	if (!memmem(data, size, "attach", 6)) {
		reply = vt_daemon_handle(d, (const char *)data, size);
		if (!reply || !g_str_has_suffix(reply, "\n"))
			__builtin_trap();
		g_free(reply);
	}
	return 0;
}
