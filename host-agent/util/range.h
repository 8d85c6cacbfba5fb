/* SPDX-License-Identifier: GPL-2.0-or-later */
/* An address range, [start, end): the one range type of the libraries. */
#ifndef VTIER_UTIL_RANGE_H
#define VTIER_UTIL_RANGE_H

#include <stdint.h>

struct vt_range {
	uint64_t start;
	uint64_t end;		/* exclusive */
};

#endif
