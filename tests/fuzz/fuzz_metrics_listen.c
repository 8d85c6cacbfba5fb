// SPDX-License-Identifier: GPL-2.0-or-later
/* Fuzz target: vtierd --metrics-listen / [metrics] listen = ADDR:PORT. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "metrics_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = g_strndup((const char *)data, size);
	struct sockaddr_storage ss;
	GError *e = NULL;

	if (vt_metrics_listen_parse(text, &ss, &e)) {
		if (e || (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
			__builtin_trap();
	} else if (!e || !strstr(e->message, "ADDR:PORT")) {
		__builtin_trap();
	}
	g_clear_error(&e);
	g_free(text);
	return 0;
}
