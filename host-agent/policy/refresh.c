// SPDX-License-Identifier: GPL-2.0-or-later
/* Which chunks' residency to re-read per window: the moved ones and a round-robin slice. */
#include "refresh.h"

struct vt_refresh *vt_refresh_new(unsigned int nr_chunks, unsigned int slice)
{
	struct vt_refresh *r = g_new0(struct vt_refresh, 1);

	r->nr_chunks = nr_chunks;
	r->slice = MAX(slice, 1u);
	r->all = true;
	r->moved = g_array_new(FALSE, FALSE, sizeof(unsigned int));
	r->waiting = g_array_new(FALSE, FALSE, sizeof(unsigned int));
	r->queued = g_new0(guint8, MAX(nr_chunks, 1u));
	return r;
}

void vt_refresh_free(struct vt_refresh *r)
{
	if (!r)
		return;
	g_array_free(r->moved, TRUE);
	g_array_free(r->waiting, TRUE);
	g_free(r->queued);
	g_free(r);
}

void vt_refresh_all(struct vt_refresh *r)
{
	r->all = true;
}

void vt_refresh_moved(struct vt_refresh *r, unsigned int i)
{
	if (i >= r->nr_chunks || r->queued[i])
		return;
	r->queued[i] = 1;
	g_array_append_val(r->moved, i);
}

void vt_refresh_wait(struct vt_refresh *r, unsigned int i)
{
	if (i >= r->nr_chunks || r->queued[i])
		return;
	r->queued[i] = 2;
	g_array_append_val(r->waiting, i);
}

void vt_refresh_plan(struct vt_refresh *r, vt_refresh_done_fn done, void *opaque, GArray *out)
{
	unsigned int n = MIN(r->slice, r->nr_chunks), kept = 0;

	/* waiting chunks whose mover is done join the moved ones */
	for (unsigned int k = 0; k < r->waiting->len; k++) {
		unsigned int i = g_array_index(r->waiting, unsigned int, k);

		if (done(i, opaque)) {
			r->queued[i] = 1;
			g_array_append_val(r->moved, i);
		} else {
			g_array_index(r->waiting, unsigned int, kept++) = i;
		}
	}
	g_array_set_size(r->waiting, kept);
	g_array_set_size(out, 0);
	if (r->all) {
		g_array_set_size(out, r->nr_chunks);
		for (unsigned int i = 0; i < r->nr_chunks; i++)
			g_array_index(out, unsigned int, i) = i;
		r->all = false;
		n = 0;	/* the round robin goes on from where it was */
	} else {
		g_array_append_vals(out, r->moved->data, r->moved->len);
	}
	/*
	 * The slice skips a chunk read already for its move (its turn counts as
	 * done) and, in a full read, every chunk; a waiting chunk is read in its
	 * turn all the same (its mover may never get to it).
	 */
	for (unsigned int k = 0; k < n; k++) {
		unsigned int i = r->cursor;

		r->cursor = r->cursor + 1 < r->nr_chunks ? r->cursor + 1 : 0;
		if (r->queued[i] != 1)
			g_array_append_val(out, i);
	}
	for (unsigned int k = 0; k < r->moved->len; k++)
		r->queued[g_array_index(r->moved, unsigned int, k)] = 0;
	g_array_set_size(r->moved, 0);
}

unsigned int vt_refresh_windows(const struct vt_refresh *r)
{
	return (r->nr_chunks + r->slice - 1) / r->slice;
}
