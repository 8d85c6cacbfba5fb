/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vtier-memd's Prometheus series (docs/remote.md "Stats and metrics"): the
 * server's and the transport's counters, per namespace and per client
 * address, as the text a node_exporter textfile collector reads. Only
 * renders, from a snapshot: vtier-memd's writer thread writes it
 * (--metrics-file).
 */
#ifndef VTIER_TOOLS_MEMD_METRICS_H
#define VTIER_TOOLS_MEMD_METRICS_H

#include "memd_snapshot.h"

/* The text of every series (g_free); @version: vtier-memd's. */
char *vt_memd_metrics_text(const struct vt_memd_snapshot *snap, const char *version);

#endif
