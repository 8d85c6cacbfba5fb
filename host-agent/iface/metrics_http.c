// SPDX-License-Identifier: GPL-2.0-or-later
/* The Prometheus endpoint: libmicrohttpd's thread, the text built on the main loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "metrics_http.h"

#define METRICS_ERROR (g_quark_from_static_string("vt-metrics-http-error"))
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct vt_metrics_http {
	struct MHD_Daemon *mhd;
	GMainContext *ctx;		/* where the text is built */
	vt_metrics_build_fn build;
	void *arg;
	GMutex lock;			/* pending, closing: the HTTP thread and the loop */
	GPtrArray *pending;		/* struct scrape *, suspended, their text being built */
	bool closing;
	uint16_t port;
};

/* One request to /metrics: suspended until the loop has built its text. */
struct scrape {
	struct vt_metrics_http *m;
	struct MHD_Connection *conn;
	GSource *src;			/* the loop's build, until it ran */
	char *text;
	unsigned int status;
};

static enum MHD_Result respond(struct MHD_Connection *c, unsigned int status, const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text,
								 MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* Under m->lock: the answer is in; the HTTP thread sends it. */
static void scrape_ready(struct scrape *sc, unsigned int status, char *text)
{
	sc->status = status;
	sc->text = text;
	if (sc->src) {
		g_source_destroy(sc->src);
		g_source_unref(sc->src);
		sc->src = NULL;
	}
	g_ptr_array_remove(sc->m->pending, sc);
	MHD_resume_connection(sc->conn);
}

/* On the main loop. */
static gboolean build_cb(gpointer data)
{
	struct scrape *sc = data;
	struct vt_metrics_http *m = sc->m;
	char *text = m->build(m->arg);

	g_mutex_lock(&m->lock);
	scrape_ready(sc, MHD_HTTP_OK, text);
	g_mutex_unlock(&m->lock);
	return G_SOURCE_REMOVE;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	struct vt_metrics_http *m = cls;
	struct scrape *sc = *req_cls;

	(void)version;
	(void)upload_data;
	if (sc)
		return respond(c, sc->status, sc->text);
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return respond(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (*upload_data_size)
		return respond(c, MHD_HTTP_BAD_REQUEST, "no body\n");
	if (strcmp(url, "/metrics") != 0)
		return respond(c, MHD_HTTP_NOT_FOUND, "vtierd's metrics are at /metrics\n");
	g_mutex_lock(&m->lock);
	if (m->closing) {
		g_mutex_unlock(&m->lock);
		return respond(c, MHD_HTTP_SERVICE_UNAVAILABLE, "vtierd is stopping\n");
	}
	sc = g_new0(struct scrape, 1);
	sc->m = m;
	sc->conn = c;
	*req_cls = sc;
	MHD_suspend_connection(c);
	sc->src = g_idle_source_new();
	g_source_set_callback(sc->src, build_cb, sc, NULL);
	g_source_set_name(sc->src, "vtier-metrics");
	g_ptr_array_add(m->pending, sc);
	g_source_attach(sc->src, m->ctx);
	g_mutex_unlock(&m->lock);
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct scrape *sc = *req_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (!sc)
		return;
	g_free(sc->text);
	g_free(sc);
	*req_cls = NULL;
}

/* "ADDR:PORT", "[ADDR6]:PORT" */
bool vt_metrics_listen_parse(const char *listen, struct sockaddr_storage *ss, GError **error)
{
	g_autofree char *host = NULL;
	const char *colon, *port;
	guint64 p;

	memset(ss, 0, sizeof(*ss));
	if (listen[0] == '[') {
		const char *end = strchr(listen, ']');

		if (!end || end[1] != ':')
			goto bad;
		host = g_strndup(listen + 1, (gsize)(end - listen - 1));
		port = end + 2;
	} else {
		colon = strrchr(listen, ':');
		if (!colon)
			goto bad;
		host = g_strndup(listen, (gsize)(colon - listen));
		port = colon + 1;
	}
	if (!g_ascii_string_to_unsigned(port, 10, 0, 65535, &p, NULL))
		goto bad;
	/* a name, not an address: say so rather than "not ADDR:PORT" */
	for (const char *c = host; !strchr(host, ':') && *c; c++)
		if (g_ascii_isalpha(*c)) {
			g_set_error(error, METRICS_ERROR, EINVAL, "metrics listen address '%s' is not "
				    "ADDR:PORT: host names are not resolved, give an IP address (127.0.0.1:%s, "
				    "[::1]:%s, 0.0.0.0:%s)", listen, port, port, port);
			return false;
		}
	if (strchr(host, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)p);
		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			goto bad;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)p);
		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			goto bad;
	}
	return true;
bad:
	g_set_error(error, METRICS_ERROR, EINVAL, "metrics listen address '%s' is not ADDR:PORT "
		    "(127.0.0.1:9477, [::1]:9477, 0.0.0.0:9477)", listen);
	return false;
}

struct vt_metrics_http *vt_metrics_http_new(const char *listen, vt_metrics_build_fn build,
					    void *arg, GError **error)
{
	struct vt_metrics_http *m;
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	bool v6;

	if (!vt_metrics_listen_parse(listen, &ss, error))
		return NULL;
	v6 = ss.ss_family == AF_INET6;
	m = g_new0(struct vt_metrics_http, 1);
	m->ctx = g_main_context_ref_thread_default();
	m->build = build;
	m->arg = arg;
	m->pending = g_ptr_array_new();
	g_mutex_init(&m->lock);
	m->mhd = MHD_start_daemon(MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD |
				  MHD_ALLOW_SUSPEND_RESUME | (v6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL,
				  on_request, m,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)64,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, m,
				  MHD_OPTION_END);
	if (!m->mhd) {
		g_set_error(error, METRICS_ERROR, EADDRINUSE, "metrics: cannot listen on %s (in use, "
			    "or not an address of this host)", listen);
		g_ptr_array_free(m->pending, TRUE);
		g_main_context_unref(m->ctx);
		g_free(m);
		return NULL;
	}
	info = MHD_get_daemon_info(m->mhd, MHD_DAEMON_INFO_BIND_PORT);
	m->port = info ? info->port : 0;
	return m;
}

uint16_t vt_metrics_http_port(const struct vt_metrics_http *m)
{
	return m->port;
}

void vt_metrics_http_free(struct vt_metrics_http *m)
{
	if (!m)
		return;
	g_mutex_lock(&m->lock);
	m->closing = true;
	while (m->pending->len)
		scrape_ready(g_ptr_array_index(m->pending, 0), MHD_HTTP_SERVICE_UNAVAILABLE,
			     g_strdup("vtierd is stopping\n"));
	g_mutex_unlock(&m->lock);
	MHD_stop_daemon(m->mhd);
	g_ptr_array_free(m->pending, TRUE);
	g_mutex_clear(&m->lock);
	g_main_context_unref(m->ctx);
	g_free(m);
}
