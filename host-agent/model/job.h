/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A piece of slow work (QMP round trips, a store's file I/O) on a thread of
 * its own, its result handed back on the main loop. The main loop never
 * waits for a job, except vt_job_cancel() when the daemon goes away.
 */
#ifndef VTIER_CORE_JOB_H
#define VTIER_CORE_JOB_H

#include <glib.h>

struct vt_job;

/*
 * @run(@arg) runs on the job's thread; then @done(@arg) runs on the
 * caller's thread-default main context (that of vt_job_start), and the job
 * is freed. NULL (@error set) when no thread can be had.
 */
struct vt_job *vt_job_start(const char *name, void (*run)(void *arg), void (*done)(void *arg),
			    void *arg, GError **error);
/*
 * Wait for @run to return and drop the job: @done never runs (the caller
 * cleans @arg up). Blocks: for teardown only, after making @run quick
 * (e.g. shutting down the socket it waits on). NULL is a no-op.
 */
void vt_job_cancel(struct vt_job *job);

#endif
