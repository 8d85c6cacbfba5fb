/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vtierd's libvirt client (docs/libvirt.md): attach running domains whose
 * <metadata> holds a vtier:policy (or every domain, attach=all), follow
 * their start and stop, apply a policy changed with virsh metadata --live,
 * and survive libvirtd's restarts, all by libvirt's events on the main loop
 * (iface/libvirt_event.c). Every libvirt call that waits on libvirtd runs on
 * a job (model/job.h); the loop only decides. A domain is attached through the
 * "-qmp unix:PATH" socket of its <qemu:commandline>: libvirt keeps its own
 * monitor to itself.
 */
#ifndef VTIER_CORE_LIBVIRT_DOMAINS_H
#define VTIER_CORE_LIBVIRT_DOMAINS_H

#include <stdbool.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "daemon.h"

#define VT_LIBVIRT_URI_DEFAULT "qemu:///system"

struct vt_libvirt;

/* Which running domains vtierd attaches by itself. */
enum vt_libvirt_attach {
	VT_LIBVIRT_ATTACH_POLICY,	/* those with a vtier:policy in their metadata */
	VT_LIBVIRT_ATTACH_ALL,		/* every one with a -qmp unix: socket */
};

/*
 * Connect to @uri now (on a job) and again after every loss, with a backoff
 * of 1 s doubling to 30 s; never fails: a libvirtd that is not there yet is
 * waited for. Sets d->libvirt.
 */
struct vt_libvirt *vt_libvirt_new(struct vt_daemon *d, const char *uri,
				  enum vt_libvirt_attach attach);
/*
 * Teardown: closes the connection and waits up to 2 s for the calls in
 * flight; a hung libvirtd's are left to the process's exit (logged). NULL
 * is a no-op.
 */
void vt_libvirt_free(struct vt_libvirt *lv);
/*
 * vtierctl attach --domain NAME: look the running domain up and attach it
 * with its metadata's policy, then @set over it; @cb runs once, later, on
 * the main loop (as vt_daemon_attach's). False (@error) when not connected.
 */
bool vt_libvirt_attach_domain(struct vt_libvirt *lv, const char *name, char *const *set,
			      unsigned int nr_set, vt_daemon_attach_cb cb, void *arg,
			      GError **error);
/* "connected", "connecting" or "disconnected: WHY" and the URI, for status and metrics. */
bool vt_libvirt_connected(const struct vt_libvirt *lv);
const char *vt_libvirt_uri(const struct vt_libvirt *lv);
/* vtierd's config [libvirt] attach = policy|all. */
bool vt_libvirt_attach_parse(const char *text, enum vt_libvirt_attach *out, GError **error);

#endif
