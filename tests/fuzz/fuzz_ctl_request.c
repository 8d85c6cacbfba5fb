// SPDX-License-Identifier: GPL-2.0-or-later
/* Fuzz target: control requests, then the whole dispatcher (attach too) with no VM attached. */
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
	bool ok_attach;

	if (ok == !!error)
		__builtin_trap();
	ok_attach = ok && req.cmd == VT_CTL_ATTACH;
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
	/*
	 * attach too: this daemon has no control server, so an attach is judged
	 * (policy words, --domain rules) and then refused before it connects to
	 * the path it names; it never answers ok
	 */
	reply = vt_daemon_handle(d, (const char *)data, size);
	if (!reply || !g_str_has_suffix(reply, "\n"))
		__builtin_trap();
	if (d->attaching->len || g_hash_table_size(d->vms) ||
	    (ok_attach && !g_str_has_prefix(reply, "{\"ok\":false")))
		__builtin_trap();
	g_free(reply);
	return 0;
}
