/* SPDX-License-Identifier: GPL-2.0-or-later */
/* An address range, [start, end): the one range type of the libraries. */
#ifndef VTIER_UTIL_RANGE_H
#define VTIER_UTIL_RANGE_H

#include <stdint.h>

struct vt_range {
	uint64_t start;
	uint64_t end;		/* exclusive */
};

/*
 * policy/mtm.h's former twin of the same shape; core/ still spells it so
 * until its restructuring replaces the name (then this goes).
 */
#define vt_range64 vt_range

#endif
