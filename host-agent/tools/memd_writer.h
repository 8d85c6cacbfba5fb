/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vtier-memd's files: the stats JSON (--stats-file) and the Prometheus
 * textfile (--metrics-file), rendered from snapshots and written by a thread
 * of their own, whole and renamed into place, so the serving thread's
 * requests wait for the snapshot's copy only, never for a render or a disk.
 */
#ifndef VTIER_TOOLS_MEMD_WRITER_H
#define VTIER_TOOLS_MEMD_WRITER_H

#include "memd_snapshot.h"

struct vt_memd_writer;

/* A writer of those of the files not NULL (both NULL: it writes nothing). */
struct vt_memd_writer *vt_memd_writer_start(const char *stats_file, const char *metrics_file);
/*
 * Hands @snap over (the writer frees it), with the writer's own write times
 * filled in; one handed over before and not yet written is dropped for it.
 */
void vt_memd_writer_post(struct vt_memd_writer *w, struct vt_memd_snapshot *snap);
/* Writes the last one handed over, then ends the thread and frees @w; NULL: nothing. */
void vt_memd_writer_stop(struct vt_memd_writer *w);

/* The counters as one JSON object (the stats file, and the log on SIGUSR1 and at exit). */
char *vt_memd_stats_json(const struct vt_memd_snapshot *snap);

#endif
