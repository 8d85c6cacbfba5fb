/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Prometheus endpoint: GET/HEAD /metrics over HTTP, served by
 * libmicrohttpd on a thread of its own. The text is built on the caller's
 * main loop (the thread-default context of vt_metrics_http_new): the HTTP
 * thread suspends the request, the loop builds, the request resumes. A
 * slow or silent client costs its own connection a timeout (10 s), nothing
 * else; at most 64 connections at once.
 */
#ifndef VTIER_IFACE_METRICS_HTTP_H
#define VTIER_IFACE_METRICS_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

struct vt_metrics_http;

/* On the main loop: the exposition text, g_malloc'd. */
typedef char *(*vt_metrics_build_fn)(void *arg);

/*
 * Listen on @listen: "ADDR:PORT" ("127.0.0.1:9477", "[::1]:9477",
 * "0.0.0.0:9477"; port 0 picks one). NULL (@error) when the address is
 * malformed or taken.
 */
struct vt_metrics_http *vt_metrics_http_new(const char *listen, vt_metrics_build_fn build,
					    void *arg, GError **error);
uint16_t vt_metrics_http_port(const struct vt_metrics_http *m);
/* The address of @listen ("ADDR:PORT", as vt_metrics_http_new takes it); @ss: a sockaddr_in(6). */
struct sockaddr_storage;
bool vt_metrics_listen_parse(const char *listen, struct sockaddr_storage *ss, GError **error);
/* On the main loop. Requests in flight get 503. NULL is a no-op. */
void vt_metrics_http_free(struct vt_metrics_http *m);

#endif
