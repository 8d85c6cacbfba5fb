/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A copy of vtier-memd's counters at one moment: the server's, the
 * transport's, per namespace and per client address. The serving thread
 * takes it (a copy, no text) and hands it to the thread that renders the
 * stats JSON and the metrics and writes the files, so requests wait for the
 * copy only.
 */
#ifndef VTIER_TOOLS_MEMD_SNAPSHOT_H
#define VTIER_TOOLS_MEMD_SNAPSHOT_H

#include <stdint.h>

#include <glib.h>

#include "remote_server.h"
#include "remote_transport.h"

struct vt_memd_snapshot {
	struct vt_rs_stats s;
	struct vt_rt_stats t;
	GArray *ns;			/* struct vt_rs_ns_stats */
	GArray *clients;		/* struct vt_rs_client_stats */
	/* the program's own, filled in by it */
	uint64_t tx_lost;		/* replies the transport did not take */
	double start_time;		/* Unix seconds */
	double uptime;			/* seconds, monotonic */
	uint64_t take_ns, take_max_ns;	/* the serving thread's copies: the last before this, the most */
	uint64_t write_ns, write_max_ns;	/* the writer's render and write: the last, the most */
};

/* The counters of @rs and @rt now (g_free with vt_memd_snapshot_free). */
struct vt_memd_snapshot *vt_memd_snapshot_take(const struct vt_rs *rs, const struct vt_rt *rt);
void vt_memd_snapshot_free(struct vt_memd_snapshot *snap);

#endif
