/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libvirt's client event loop on glib's default main context (libvirt_event.c).
 * Call once before the first virConnectOpen; libvirt's callbacks (domain
 * events, close callbacks, keepalive) then run on the thread that runs the
 * default context's loop: vtierd's main loop.
 */
#ifndef VTIER_IFACE_LIBVIRT_EVENT_H
#define VTIER_IFACE_LIBVIRT_EVENT_H

void vt_libvirt_event_register(void);

#endif
