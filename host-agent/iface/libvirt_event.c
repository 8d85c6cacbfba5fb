// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libvirt's event loop is glib's default main context: libvirt's sockets
 * and timers become GSources there (virEventRegisterImpl), so its domain
 * events, close callbacks and keepalives run on vtierd's main loop, next to
 * everything else, and never on a thread of their own. libvirt may add,
 * change and remove handles from any thread (a job's virConnectOpen): the
 * tables are under a lock, never held while a callback runs.
 */
#include <libvirt/libvirt.h>

#include <glib-unix.h>

#include "libvirt_event.h"

struct lv_watch {
	int id;
	int fd;			/* -1 for a timer */
	int events;		/* handle: VIR_EVENT_HANDLE_*; timer: interval ms (-1 off) */
	union {
		virEventHandleCallback handle_cb;
		virEventTimeoutCallback timeout_cb;
	};
	void *opaque;
	virFreeCallback ff;
	GSource *src;		/* NULL while disabled */
};

static GMutex lock;
static GHashTable *watches;	/* id -> struct lv_watch *, handles and timers alike */
static int next_id = 1;

static GIOCondition to_cond(int events)
{
	return (events & VIR_EVENT_HANDLE_READABLE ? G_IO_IN : 0) |
	       (events & VIR_EVENT_HANDLE_WRITABLE ? G_IO_OUT : 0) |
	       (events & VIR_EVENT_HANDLE_ERROR ? G_IO_ERR : 0) |
	       (events & VIR_EVENT_HANDLE_HANGUP ? G_IO_HUP : 0);
}

static gboolean handle_ready(gint fd, GIOCondition cond, gpointer data)
{
	struct lv_watch *w = data;
	int events = (cond & G_IO_IN ? VIR_EVENT_HANDLE_READABLE : 0) |
		     (cond & G_IO_OUT ? VIR_EVENT_HANDLE_WRITABLE : 0) |
		     (cond & G_IO_ERR ? VIR_EVENT_HANDLE_ERROR : 0) |
		     (cond & G_IO_HUP ? VIR_EVENT_HANDLE_HANGUP : 0);

	/* @w lives until the idle after its removal: safe even if cb removes it */
	w->handle_cb(w->id, fd, events, w->opaque);
	return G_SOURCE_CONTINUE;
}

static gboolean timer_fired(gpointer data)
{
	struct lv_watch *w = data;

	w->timeout_cb(w->id, w->opaque);
	return G_SOURCE_CONTINUE;
}

/* (Re)arm @w's source for its current events or interval. Under the lock. */
static void rearm(struct lv_watch *w)
{
	if (w->src) {
		g_source_destroy(w->src);
		g_source_unref(w->src);
		w->src = NULL;
	}
	if (w->fd >= 0 && w->events) {
		w->src = g_unix_fd_source_new(w->fd, to_cond(w->events));
		g_source_set_callback(w->src, G_SOURCE_FUNC(handle_ready), w, NULL);
	} else if (w->fd < 0 && w->events >= 0) {
		w->src = g_timeout_source_new((guint)w->events);
		g_source_set_callback(w->src, timer_fired, w, NULL);
	}
	if (w->src) {
		g_source_set_name(w->src, w->fd >= 0 ? "libvirt-handle" : "libvirt-timer");
		g_source_attach(w->src, NULL);
	}
}

static int add(int fd, int events, void *cb, void *opaque, virFreeCallback ff)
{
	struct lv_watch *w = g_new0(struct lv_watch, 1);
	int id;

	w->fd = fd;
	w->events = events;
	if (fd >= 0)
		w->handle_cb = (virEventHandleCallback)cb;
	else
		w->timeout_cb = (virEventTimeoutCallback)cb;
	w->opaque = opaque;
	w->ff = ff;
	g_mutex_lock(&lock);
	id = w->id = next_id++;
	g_hash_table_insert(watches, GINT_TO_POINTER(id), w);
	rearm(w);
	g_mutex_unlock(&lock);
	return id;
}

static void update(int id, int events)
{
	struct lv_watch *w;

	g_mutex_lock(&lock);
	w = g_hash_table_lookup(watches, GINT_TO_POINTER(id));
	if (w && w->events != events) {
		w->events = events;
		rearm(w);
	}
	g_mutex_unlock(&lock);
}

/* libvirt's free callback may take its own locks: never from inside remove. */
static gboolean release(gpointer data)
{
	struct lv_watch *w = data;

	if (w->ff)
		w->ff(w->opaque);
	g_free(w);
	return G_SOURCE_REMOVE;
}

static int remove_watch(int id)
{
	struct lv_watch *w;

	g_mutex_lock(&lock);
	w = g_hash_table_lookup(watches, GINT_TO_POINTER(id));
	if (w) {
		g_hash_table_remove(watches, GINT_TO_POINTER(id));
		w->events = w->fd >= 0 ? 0 : -1;
		rearm(w);
	}
	g_mutex_unlock(&lock);
	if (!w)
		return -1;
	g_idle_add_full(G_PRIORITY_DEFAULT, release, w, NULL);
	return 0;
}

static int add_handle(int fd, int events, virEventHandleCallback cb, void *opaque,
		      virFreeCallback ff)
{
	return fd < 0 ? -1 : add(fd, events, (void *)cb, opaque, ff);
}

static int add_timeout(int interval_ms, virEventTimeoutCallback cb, void *opaque,
		       virFreeCallback ff)
{
	return add(-1, interval_ms, (void *)cb, opaque, ff);
}

static gpointer register_once(gpointer unused)
{
	(void)unused;
	watches = g_hash_table_new(g_direct_hash, g_direct_equal);
	virEventRegisterImpl(add_handle, update, remove_watch, add_timeout, update, remove_watch);
	return NULL;
}

void vt_libvirt_event_register(void)
{
	static GOnce once = G_ONCE_INIT;

	g_once(&once, register_once, NULL);
}
