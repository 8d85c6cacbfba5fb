/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A VM's guest hint reader: what vtierd does with the hints of one VM each
 * window, on the VM's worker (docs/abi-guest.md, "The agent's side"):
 *   FREE, INFLATE  discard the range (its hva pieces), when the policy moves
 *                  memory (mode auto); in observe mode only counted
 *   COLD           chunks that hints cover at least half of, and that host
 *                  telemetry does not see hot, age at once to the waterfall's
 *                  age: they are demoted earlier; a COLD range over a chunk the
 *                  host sees hot is refused as contradicted
 *   DEFLATE, HOT   counted; nothing is ever promoted or pinned on a hint
 * and it acknowledges what it read only once every discard it asked for is
 * done: a discard queued to a hand-off's mover thread holds the ack back to
 * a later window, never the worker. Knows no VM, no file, no mover: the
 * caller gives the VM's RAM map, chunks and a discard callback.
 */
#ifndef VTIER_CORE_HINT_READER_H
#define VTIER_CORE_HINT_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest_hints.h"
#include "hint_stats.h"
#include "mtm.h"

#define VT_HINT_BATCH 256		/* records per vt_ghint_poll() */
#define VT_HINT_POLLS_PER_WINDOW 16	/* at most 4096 records read per window */

/* A guest-physical range of RAM and QEMU's address of it (model/vm.h's vt_gpa_map). */
struct vt_hint_map {
	uint64_t gpa;
	uint64_t len;
	uint64_t hva;
};

/* What one window of the reader needs from its VM. */
struct vt_hint_env {
	const struct vt_hint_map *map;	/* sorted by gpa, no overlap */
	size_t n_map;
	struct vt_mtm *mtm;		/* chunks by hva; NULL: COLD hints are only counted */
	double hot_threshold;		/* a chunk EMA at or above it is hot: COLD contradicted */
	unsigned int cold_age;		/* the waterfall's age; 0: no waterfall, COLD only counted */
	bool act;			/* discard (mode auto), else only count */
	uint64_t cpu_budget_ns;		/* reading stops past it (checked between batches) */
	uint64_t (*cpu_ns)(void);	/* the thread's CPU clock (vt_thread_ns) */
	uint64_t now_ns;		/* for the channel's rate caps */
	/*
	 * Discard QEMU's [@hva, +@len): 1 queued (done later: the ack waits for
	 * pending() == 0), 0 done now, -errno not done. For FREE and INFLATE
	 * ranges not acknowledged yet, only.
	 */
	int (*discard)(void *opaque, uint64_t hva, uint64_t len);
	unsigned int (*pending)(void *opaque);	/* discards queued and not done */
	void (*cancel)(void *opaque);		/* drop them, wait for the one in progress */
	void *opaque;
};

struct vt_hint_reader;

/*
 * Attach to the region of @size bytes in the file @fd (read and written with
 * pread/pwrite, iface/guest_hints.h) for a VM with RAM @map[@n_map] (at most
 * 64 pieces): FREE, COLD and RECLAIM hints wanted. 0 or -errno with @err set.
 */
int vt_hint_reader_open(struct vt_hint_reader **out, int fd, size_t size,
			const struct vt_hint_map *map, size_t n_map,
			const struct vt_ghint_limits *lim, uint64_t now_ns, char *err, size_t err_len);
/*
 * One window: acknowledge what the last window read if its discards are
 * done, else wait; then read, check and act on new records within the caps
 * and acknowledge them unless a discard is in progress.
 */
void vt_hint_reader_window(struct vt_hint_reader *r, const struct vt_hint_env *env);
/*
 * After a window that queued discards: acknowledge now if they are done.
 * True when nothing waits for an ack any more.
 */
bool vt_hint_reader_try_ack(struct vt_hint_reader *r, const struct vt_hint_env *env);
/* Ask the guest to hold @bytes in its balloon (rounded down to 4 KiB pages). */
void vt_hint_reader_set_balloon(struct vt_hint_reader *r, uint64_t bytes);
/*
 * Leave: cancel discards still queued (@env's cancel: required once a
 * discard may have been queued), then acknowledge every record and clear the
 * host's flags. NULL is fine.
 */
void vt_hint_reader_close(struct vt_hint_reader *r, const struct vt_hint_env *env);
/*
 * 0, or the -errno with which the region's file failed (-ESTALE: shrunk
 * under the reader) and @err saying so: the reader acts on nothing more;
 * close it (the guest's unacknowledged records stay unacknowledged).
 */
int vt_hint_reader_error(const struct vt_hint_reader *r, char *err, size_t err_len);
/* Its figures (the channel's included). */
void vt_hint_reader_stats(const struct vt_hint_reader *r, struct vt_hint_stats *out);

#endif
