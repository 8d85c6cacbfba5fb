/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The figures of one VM's guest hint channel as the VM model keeps them
 * (filled by guestchan/'s reader, published with the window's stats).
 */
#ifndef VTIER_MODEL_HINT_STATS_H
#define VTIER_MODEL_HINT_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "guest_hints.h"

/* Cumulative figures of one VM's hint channel (vtierctl stats: "hints"). */
struct vt_hint_stats {
	bool attached;
	char error[160];		/* why the channel is not attached ("" when it is) */
	uint64_t refused;		/* times the VM's channel was closed because its region
					 * failed a read or write (its file shrunk): kept
					 * across attaches (engine/hint_stage.c) */
	uint64_t region_bytes;
	struct vt_ghint_stats ch;	/* records, accepted and rejected by reason */
	uint64_t polls;
	uint64_t ack_waits;		/* windows the ack waited for discards in progress */
	uint64_t discard_bytes;		/* FREE + INFLATE bytes handed to a discard */
	uint64_t discard_failed;	/* ... whose discard failed (not done: acknowledged anyway) */
	uint64_t observe_discard_bytes;	/* mode observe: bytes it would have discarded */
	uint64_t pageout_bytes;		/* of discard_bytes, anonymous RAM paged out instead */
	uint64_t cold_hint_bytes;	/* COLD bytes accepted */
	uint64_t cold_chunks;		/* chunks aged at once by COLD hints */
	uint64_t saved_bytes;		/* host memory the discards freed (the movers' count) */
	uint64_t cpu_ns;		/* the reader's CPU time, all windows */
	uint64_t cpu_ns_last;		/* ... in the last window */
	uint64_t cpu_capped;		/* windows that stopped reading at the CPU cap */
	uint64_t balloon_target_bytes;	/* what the host asks the guest to hold */
	uint64_t windows_attached;
};

#endif
