/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control socket server: a unix stream socket (mode 0600) in a directory
 * of mode 0700, one request per connection. The peer's credentials are checked
 * (root or vtierd's own uid) before a byte is read.
 */
#ifndef VTIER_IFACE_CONTROL_SOCKET_H
#define VTIER_IFACE_CONTROL_SOCKET_H

#include <stdbool.h>

#include <glib.h>

#define VT_CONTROL_SOCKET_DEFAULT "/run/vtier/vtierd.sock"
/* The longest request line the server reads, newline included. */
#define VT_CONTROL_MAX_REQUEST 65536

/* Errors of the server and the client: errno codes. */
#define VT_CONTROL_ERROR (vt_control_error_quark())
GQuark vt_control_error_quark(void);

/* Returns the newline-terminated reply to @data (one request, no newline). */
typedef char *(*vt_control_handler)(const char *data, size_t len, void *arg);

struct vt_control_server;

/* Fails with EADDRINUSE when another vtierd answers on @path. */
struct vt_control_server *vt_control_server_new(const char *path, vt_control_handler fn,
						void *arg, GError **error);
void vt_control_server_free(struct vt_control_server *s);
/* Connections refused for their credentials so far. */
unsigned int vt_control_server_refused(const struct vt_control_server *s);
/* Clients dropped for not reading their reply in time, or for an oversized reply. */
unsigned int vt_control_server_dropped(const struct vt_control_server *s);
/* Times accept() failed for lack of fds and the server paused accepting (100 ms). */
unsigned int vt_control_server_accept_pauses(const struct vt_control_server *s);

/*
 * Something the operator should see: a client dropped (read nothing within
 * its deadline, reply over the cap), or accept() out of fds (once per burst).
 * One line; the caller logs it (the library logs at debug only).
 */
typedef void (*vt_control_notify)(const char *msg, void *arg);
void vt_control_server_set_notify(struct vt_control_server *s, vt_control_notify fn, void *arg);
/*
 * Replies never block the loop: each is queued and written as its client
 * reads. @timeout_ms bounds a connection from accept to the reply's last
 * byte (5000); a reply over @max_reply bytes (16 MiB) becomes an error reply.
 */
void vt_control_server_set_limits(struct vt_control_server *s, int timeout_ms, size_t max_reply);

/*
 * Answering later, for requests that wait on a peer (an attach waiting for
 * vt_qmp_connect_async()). Called from inside the handler, which then
 * returns NULL; the client waits up to @timeout_ms (instead of the usual
 * deadline) for vt_control_deferred_reply(@d, reply), which takes the
 * newline-terminated reply. If the client goes first (its deadline, or
 * the server is freed), @gone(@arg) runs instead: cancel the work. @d is invalid after
 * either. NULL outside a handler or when already deferred.
 */
struct vt_control_deferred;
struct vt_control_deferred *vt_control_defer(struct vt_control_server *s, int timeout_ms,
					     void (*gone)(void *arg), void *arg);
void vt_control_deferred_reply(struct vt_control_deferred *d, char *reply);

/* Client: send @request, return the reply (without its newline) or NULL. */
char *vt_control_call(const char *path, const char *request, int timeout_ms, GError **error);

#endif
