/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vtier-memd's Prometheus series (docs/remote.md "Stats and metrics"): the
 * server's and the transport's counters, per namespace and per client
 * address, as the text a node_exporter textfile collector reads. Only
 * renders: vtier-memd writes it (--metrics-file).
 */
#ifndef VTIER_TOOLS_MEMD_METRICS_H
#define VTIER_TOOLS_MEMD_METRICS_H

#include <stdint.h>

#include "remote_server.h"
#include "remote_transport.h"

struct vt_memd_metrics {
	const struct vt_rs *rs;
	const struct vt_rt *rt;
	uint64_t tx_lost;		/* replies the transport did not take */
	double start_time;		/* Unix seconds */
	double uptime;			/* seconds, monotonic */
	/* the serving thread's time in the files' last write (render, write, rename), and the most */
	double write_seconds, write_max_seconds;
	const char *version;
};

/* The text of every series (g_free). */
char *vt_memd_metrics_text(const struct vt_memd_metrics *in);

#endif
