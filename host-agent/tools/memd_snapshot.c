// SPDX-License-Identifier: GPL-2.0-or-later
/* A copy of vtier-memd's counters (memd_snapshot.h). */
#include "memd_snapshot.h"

static void add_ns(void *arg, const struct vt_rs_ns_stats *s)
{
	g_array_append_vals(arg, s, 1);
}

static void add_client(void *arg, const struct vt_rs_client_stats *s)
{
	g_array_append_vals(arg, s, 1);
}

struct vt_memd_snapshot *vt_memd_snapshot_take(const struct vt_rs *rs, const struct vt_rt *rt)
{
	struct vt_memd_snapshot *snap = g_new0(struct vt_memd_snapshot, 1);

	vt_rs_get_stats(rs, &snap->s);
	vt_rt_stats(rt, &snap->t);
	snap->ns = g_array_sized_new(FALSE, FALSE, sizeof(struct vt_rs_ns_stats),
				     (guint)snap->s.namespaces);
	snap->clients = g_array_sized_new(FALSE, FALSE, sizeof(struct vt_rs_client_stats),
					  (guint)snap->s.clients);
	vt_rs_foreach_ns(rs, add_ns, snap->ns);
	vt_rs_foreach_client(rs, add_client, snap->clients);
	return snap;
}

void vt_memd_snapshot_free(struct vt_memd_snapshot *snap)
{
	if (!snap)
		return;
	g_array_free(snap->ns, TRUE);
	g_array_free(snap->clients, TRUE);
	g_free(snap);
}
