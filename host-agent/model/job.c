// SPDX-License-Identifier: GPL-2.0-or-later
/* Work on a thread, its outcome back on the main loop (job.h). */
#include <errno.h>

#include "job.h"
#include "vm_policy.h"

struct vt_job {
	GThread *thread;
	GMainContext *ctx;
	GSource *done_src;	/* attached by the thread once @run returned */
	void (*run)(void *arg);
	void (*done)(void *arg);
	void *arg;
};

static void job_free(struct vt_job *j)
{
	g_source_destroy(j->done_src);
	g_source_unref(j->done_src);
	g_main_context_unref(j->ctx);
	g_free(j);
}

static gboolean job_done(gpointer data)
{
	struct vt_job *j = data;

	/* the thread attached us as its last act: this join does not wait */
	g_thread_join(j->thread);
	j->done(j->arg);
	job_free(j);
	return G_SOURCE_REMOVE;
}

static gpointer job_thread(gpointer data)
{
	struct vt_job *j = data;

	j->run(j->arg);
	g_source_attach(j->done_src, j->ctx);
	return NULL;
}

struct vt_job *vt_job_start(const char *name, void (*run)(void *arg), void (*done)(void *arg),
			    void *arg, GError **error)
{
	struct vt_job *j = g_new0(struct vt_job, 1);
	g_autoptr(GError) e = NULL;

	j->ctx = g_main_context_ref_thread_default();
	j->run = run;
	j->done = done;
	j->arg = arg;
	j->done_src = g_idle_source_new();
	g_source_set_callback(j->done_src, job_done, j, NULL);
	j->thread = g_thread_try_new(name, job_thread, j, &e);
	if (!j->thread) {
		g_set_error(error, VT_CORE_ERROR, EAGAIN, "no thread for %s: %s", name, e->message);
		job_free(j);
		return NULL;
	}
	return j;
}

void vt_job_cancel(struct vt_job *j)
{
	if (!j)
		return;
	g_thread_join(j->thread);
	job_free(j);
}
