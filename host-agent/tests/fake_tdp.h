/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The tests' vtier_tdp.ko: with ioctl() wrapped (-Wl,--wrap=ioctl), a fake
 * module that keeps include/vtier/tdp.h's contract answers the tdp source.
 * Its VM's NPT maps [2 MiB, 4 MiB) with one 2 MiB leaf, accessed, and
 * everything else with 4 KiB leaves, of which 0x401000 is accessed (the
 * testbed's L1 with THP=always: 476 4 KiB and 172 2 MiB leaves). A version 2
 * SAMPLE or SCAN that carries VTIER_TDP_FLUSH_TLB reports 1000 ns of flush.
 */
#ifndef VTIER_TESTS_FAKE_TDP_H
#define VTIER_TESTS_FAKE_TDP_H

#include <stdbool.h>
#include <stdint.h>

#define HUGE_GPA 0x200000ULL

/* Every feature of a version 2 module. */
#define V2_FEATURES (VTIER_TDP_F_UPPER_ACCESSED | VTIER_TDP_F_SAMPLE | VTIER_TDP_F_SCAN | \
		     VTIER_TDP_F_HUGE_LEAVES | VTIER_TDP_F_FLUSH_TLB | VTIER_TDP_F_ROOT_COOKIE)

extern bool fake_active;		/* else every ioctl is the real one */
extern bool fake_v1;			/* a version 1 module: refuses version 2 and the v2 sizes */
extern uint64_t fake_features;
extern uint32_t last_flags;		/* flags of the last SAMPLE or SCAN */
extern unsigned long last_req;
extern uint64_t fake_cookies[8];	/* root cookie of SAMPLE/SCAN call i (then the last) */
extern unsigned int fake_calls;
extern unsigned int fake_flushes;	/* calls that carried VTIER_TDP_FLUSH_TLB */

struct vt_access_source;

/*
 * A tdp source attached to the fake module with @features (fake_active set:
 * the caller clears it when done); NULL when the attach failed.
 */
struct vt_access_source *fake_source(uint64_t features);

#endif
