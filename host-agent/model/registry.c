// SPDX-License-Identifier: GPL-2.0-or-later
#include "registry.h"

void vt_registry_log(const struct vt_registry *r, GLogLevelFlags level, const char *vm,
		     const char *fmt, ...)
{
	va_list ap;

	if (!r || !r->ops || !r->ops->logv)
		return;
	va_start(ap, fmt);
	r->ops->logv(r->opaque, level, vm, fmt, ap);
	va_end(ap);
}
