/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Errors as a negative errno plus a one-line reason in a caller's buffer,
 * for the checkers of peer input that return both.
 */
#ifndef VTIER_UTIL_ERRBUF_H
#define VTIER_UTIL_ERRBUF_H

#include <stddef.h>

/* Format the reason into @err (when not NULL) and return @ret. */
__attribute__((format(printf, 4, 5)))
int vt_err_set(int ret, char *err, size_t err_len, const char *fmt, ...);

#endif /* VTIER_UTIL_ERRBUF_H */
