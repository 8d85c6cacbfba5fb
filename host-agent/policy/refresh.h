/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which chunks' residency the engine re-reads in a window, so that a window
 * costs a constant plus the moves made, not the VM's size:
 *   - every chunk, once, in the first window of a new MTM state or after
 *     vt_refresh_all();
 *   - the chunks the movers were given orders for (their outcome), in the
 *     next window, or for a mover that works on its own thread, in the first
 *     window that finds it done;
 *   - the next @slice chunks of a round robin over all of them, so that a
 *     change nobody ordered (host swap or zswap, faults from a compressed
 *     tier, kernel NUMA balancing) is seen within vt_refresh_windows().
 * Chunks are MTM chunk indices; knows no pages, processes or tiers.
 */
#ifndef VTIER_POLICY_REFRESH_H
#define VTIER_POLICY_REFRESH_H

#include <stdbool.h>

#include <glib.h>

struct vt_refresh {
	unsigned int nr_chunks;
	unsigned int slice;		/* chunks of the round robin per window (>= 1) */
	unsigned int cursor;		/* the round robin's next chunk */
	bool all;			/* the next plan is every chunk */
	GArray *moved;			/* unsigned int: chunks to re-read next window */
	GArray *waiting;		/* unsigned int: chunks to re-read once their mover is done */
	guint8 *queued;			/* per chunk: in moved (1) or waiting (2) */
};

/* A plan over @nr_chunks chunks, @slice of the round robin per window; its first plan is all. */
struct vt_refresh *vt_refresh_new(unsigned int nr_chunks, unsigned int slice);
void vt_refresh_free(struct vt_refresh *r);
/* The next plan is every chunk again (the VM's engine restarted: tiers or policy changed). */
void vt_refresh_all(struct vt_refresh *r);
/* The movers were given an order for chunk @i: re-read it in the next plan. */
void vt_refresh_moved(struct vt_refresh *r, unsigned int i);
/* Chunk @i's order was queued to a mover: re-read it in the first plan that finds it done. */
void vt_refresh_wait(struct vt_refresh *r, unsigned int i);
/* Has the mover carried out what was queued for chunk @i? (for vt_refresh_plan) */
typedef bool (*vt_refresh_done_fn)(unsigned int i, void *opaque);
/*
 * This window's chunks into @out (unsigned int, emptied first), each once:
 * all of them when due, else the moved ones, the waiting ones @done says are
 * done, then the round robin's slice. Called once per window; it advances
 * the round robin.
 */
void vt_refresh_plan(struct vt_refresh *r, vt_refresh_done_fn done, void *opaque, GArray *out);
/* Windows after which every chunk has been re-read at least once: ceil(nr_chunks / slice). */
unsigned int vt_refresh_windows(const struct vt_refresh *r);

#endif
