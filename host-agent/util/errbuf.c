// SPDX-License-Identifier: GPL-2.0-or-later
/* Error reasons in caller buffers. See errbuf.h. */
#include <stdarg.h>
#include <stdio.h>

#include "errbuf.h"

int vt_err_set(int ret, char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	if (err && err_len) {
		va_start(ap, fmt);
		vsnprintf(err, err_len, fmt, ap);
		va_end(ap);
	}
	return ret;
}
