// SPDX-License-Identifier: GPL-2.0-or-later
/* Control socket: server in the glib main loop, and a blocking client. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib-unix.h>

#include "control_socket.h"

G_DEFINE_QUARK(vt-control-error-quark, vt_control_error)

#define CLIENT_TIMEOUT_MS 5000
#define ACCEPT_BACKOFF_MS 100
/* The largest reply queued for one client (a list of hundreds of VMs fits). */
#define MAX_REPLY (16u << 20)

struct vt_control_server {
	int fd;
	guint watch;		/* 0 while accept() is paused */
	guint backoff;
	char *path;
	vt_control_handler fn;
	void *arg;
	unsigned int refused;
	unsigned int dropped;
	unsigned int accept_pauses;
	bool pause_reported;
	int timeout_ms;
	size_t max_reply;
	vt_control_notify notify;
	void *notify_arg;
	struct client *current;	/* the client whose request the handler is running */
	GList *clients;		/* every connection until its reply is out or it is dropped */
};

struct client {
	struct vt_control_server *s;
	int fd;
	guint watch;
	guint out_watch;
	guint timer;
	GString *buf;
	char *out;		/* the reply, written as the client reads */
	size_t out_len;
	size_t out_off;
	bool deferred;		/* the handler answers later (vt_control_defer) */
	void (*gone)(void *arg);
	void *gone_arg;
};

__attribute__((format(printf, 2, 3)))
static void server_notify(struct vt_control_server *s, const char *fmt, ...)
{
	g_autofree char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_debug("control: %s", msg);
	if (s->notify)
		s->notify(msg, s->notify_arg);
}

static void client_free(struct client *c)
{
	c->s->clients = g_list_remove(c->s->clients, c);
	if (c->deferred && c->gone)
		c->gone(c->gone_arg);
	if (c->watch)
		g_source_remove(c->watch);
	if (c->out_watch)
		g_source_remove(c->out_watch);
	if (c->timer)
		g_source_remove(c->timer);
	close(c->fd);
	g_string_free(c->buf, TRUE);
	g_free(c->out);
	g_free(c);
}

/* Write what the client takes now; true when the reply is out (or cannot go). */
static bool client_flush(struct client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return false;
		if (n <= 0)
			return true;	/* the client is gone: nothing more to do */
		c->out_off += (size_t)n;
	}
	return true;
}

static gboolean client_out_cb(gint fd, GIOCondition cond, gpointer data)
{
	struct client *c = data;

	(void)fd;
	(void)cond;
	if (!client_flush(c))
		return G_SOURCE_CONTINUE;
	c->out_watch = 0;
	client_free(c);
	return G_SOURCE_REMOVE;
}

/*
 * Queue @reply (taken) and write what the socket takes; the rest goes out as
 * the client reads, within the client's deadline. Never blocks: a client
 * that reads nothing costs only its own connection. Frees @c when done.
 */
static void client_reply(struct client *c, char *reply)
{
	c->out_len = strlen(reply);
	if (c->out_len > c->s->max_reply) {
		c->s->dropped++;
		server_notify(c->s, "control reply of %zu bytes over the %zu-byte cap: sent an error "
			      "instead", c->out_len, c->s->max_reply);
		g_free(reply);
		reply = g_strdup_printf("{\"ok\":false,\"error\":\"reply larger than %zu bytes: ask "
					"for less (one VM's status instead of list)\",\"errno\":7}\n",
					c->s->max_reply);
		c->out_len = strlen(reply);
	}
	c->out = reply;
	if (client_flush(c)) {
		client_free(c);
		return;
	}
	c->out_watch = g_unix_fd_add(c->fd, G_IO_OUT | G_IO_ERR | G_IO_HUP, client_out_cb, c);
}

static gboolean client_timeout_cb(gpointer data)
{
	struct client *c = data;

	c->timer = 0;
	if (c->out) {
		c->s->dropped++;
		server_notify(c->s, "control client read %zu of %zu reply bytes in %d ms: "
			      "disconnected", c->out_off, c->out_len, c->s->timeout_ms);
	}
	client_free(c);
	return G_SOURCE_REMOVE;
}

static gboolean client_cb(gint fd, GIOCondition cond, gpointer data)
{
	struct client *c = data;
	char tmp[4096];
	ssize_t n;
	char *nl;

	(void)cond;
	n = recv(fd, tmp, sizeof(tmp), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return G_SOURCE_CONTINUE;
	if (n <= 0) {
		c->watch = 0;
		client_free(c);
		return G_SOURCE_REMOVE;
	}
	g_string_append_len(c->buf, tmp, n);
	nl = memchr(c->buf->str, '\n', c->buf->len);
	if (!nl && c->buf->len <= VT_CONTROL_MAX_REQUEST)
		return G_SOURCE_CONTINUE;
	c->watch = 0;		/* one request per connection: no more reading */
	if (!nl) {
		client_reply(c, g_strdup("{\"ok\":false,\"error\":\"request larger than 65536 "
					 "bytes\",\"errno\":7}\n"));
	} else {
		char *reply;

		c->s->current = c;
		reply = c->s->fn(c->buf->str, (size_t)(nl - c->buf->str), c->s->arg);
		c->s->current = NULL;
		if (reply)
			client_reply(c, reply);
		else if (!c->deferred)
			client_reply(c, g_strdup("{\"ok\":false,\"error\":\"vtierd had no reply: "
						 "report this bug\",\"errno\":5}\n"));
	}
	return G_SOURCE_REMOVE;
}

struct vt_control_deferred *vt_control_defer(struct vt_control_server *s, int timeout_ms,
					     void (*gone)(void *arg), void *arg)
{
	struct client *c = s->current;

	if (!c || c->deferred)
		return NULL;
	c->deferred = true;
	c->gone = gone;
	c->gone_arg = arg;
	if (c->timer)
		g_source_remove(c->timer);
	c->timer = g_timeout_add((guint)timeout_ms, client_timeout_cb, c);
	return (struct vt_control_deferred *)c;
}

void vt_control_deferred_reply(struct vt_control_deferred *d, char *reply)
{
	struct client *c = (struct client *)d;

	c->deferred = false;	/* answered: @gone is not owed */
	client_reply(c, reply);
}

static gboolean accept_cb(gint fd, GIOCondition cond, gpointer data);

static gboolean accept_resume_cb(gpointer data)
{
	struct vt_control_server *s = data;

	s->backoff = 0;
	s->watch = g_unix_fd_add(s->fd, G_IO_IN, accept_cb, s);
	return G_SOURCE_REMOVE;
}

static gboolean accept_cb(gint fd, GIOCondition cond, gpointer data)
{
	struct vt_control_server *s = data;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct client *c;
	int cfd;

	(void)cond;
	cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0) {
		int err = errno;

		if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM)
			return G_SOURCE_CONTINUE;
		/* the socket stays readable: stop watching it for a while, or spin */
		s->accept_pauses++;
		if (!s->pause_reported)
			server_notify(s, "control socket: accept: %s: not accepting for %d ms; raise "
				      "the fd limit (LimitNOFILE)", g_strerror(err), ACCEPT_BACKOFF_MS);
		s->pause_reported = true;
		s->watch = 0;
		s->backoff = g_timeout_add(ACCEPT_BACKOFF_MS, accept_resume_cb, s);
		return G_SOURCE_REMOVE;
	}
	s->pause_reported = false;
	/* credentials first: nothing from a stranger is parsed */
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    (cred.uid != 0 && cred.uid != geteuid())) {
		static const char msg[] = "{\"ok\":false,\"error\":\"permission denied: vtierd "
					  "serves root and its own user only\",\"errno\":1}\n";

		s->refused++;
		if (send(cfd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			(void)0;
		close(cfd);
		return G_SOURCE_CONTINUE;
	}
	c = g_new0(struct client, 1);
	c->s = s;
	c->fd = cfd;
	c->buf = g_string_new(NULL);
	c->watch = g_unix_fd_add(cfd, G_IO_IN | G_IO_HUP | G_IO_ERR, client_cb, c);
	c->timer = g_timeout_add((guint)s->timeout_ms, client_timeout_cb, c);
	s->clients = g_list_prepend(s->clients, c);
	return G_SOURCE_CONTINUE;
}

static bool someone_listens(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool yes;

	if (fd < 0)
		return false;
	yes = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	close(fd);
	return yes;
}

struct vt_control_server *vt_control_server_new(const char *path, vt_control_handler fn,
						void *arg, GError **error)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	g_autofree char *dir = g_path_get_dirname(path);
	struct vt_control_server *s;
	struct stat st;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		g_set_error(error, VT_CONTROL_ERROR, ENAMETOOLONG, "control socket path too long: %s",
			    path);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	if (g_mkdir_with_parents(dir, 0700) < 0 || stat(dir, &st) < 0) {
		g_set_error(error, VT_CONTROL_ERROR, errno, "cannot create %s: %s", dir,
			    g_strerror(errno));
		return NULL;
	}
	if ((st.st_mode & 0077) || st.st_uid != geteuid()) {
		g_set_error(error, VT_CONTROL_ERROR, EPERM,
			    "%s must be owned by uid %d with mode 0700 (is %o, uid %d): fix it or "
			    "choose another --socket", dir, (int)geteuid(), st.st_mode & 07777,
			    (int)st.st_uid);
		return NULL;
	}
	if (someone_listens(&sa)) {
		g_set_error(error, VT_CONTROL_ERROR, EADDRINUSE,
			    "another vtierd is already serving %s", path);
		return NULL;
	}
	unlink(path);	/* stale socket of a dead vtierd */
	s = g_new0(struct vt_control_server, 1);
	s->fn = fn;
	s->arg = arg;
	s->timeout_ms = CLIENT_TIMEOUT_MS;
	s->max_reply = MAX_REPLY;
	s->path = g_strdup(path);
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(path, 0600) < 0 || listen(s->fd, 64) < 0) {
		g_set_error(error, VT_CONTROL_ERROR, errno, "control socket %s: %s", path,
			    g_strerror(errno));
		if (s->fd >= 0)
			close(s->fd);
		g_free(s->path);
		g_free(s);
		return NULL;
	}
	s->watch = g_unix_fd_add(s->fd, G_IO_IN, accept_cb, s);
	return s;
}

unsigned int vt_control_server_refused(const struct vt_control_server *s)
{
	return s->refused;
}

unsigned int vt_control_server_dropped(const struct vt_control_server *s)
{
	return s->dropped;
}

unsigned int vt_control_server_accept_pauses(const struct vt_control_server *s)
{
	return s->accept_pauses;
}

void vt_control_server_set_notify(struct vt_control_server *s, vt_control_notify fn, void *arg)
{
	s->notify = fn;
	s->notify_arg = arg;
}

void vt_control_server_set_limits(struct vt_control_server *s, int timeout_ms, size_t max_reply)
{
	s->timeout_ms = timeout_ms;
	s->max_reply = max_reply;
}

void vt_control_server_free(struct vt_control_server *s)
{
	if (!s)
		return;
	/* clients go with the server: a deferred reply's @gone runs now, not later on freed memory */
	while (s->clients)
		client_free(s->clients->data);
	if (s->watch)
		g_source_remove(s->watch);
	if (s->backoff)
		g_source_remove(s->backoff);
	close(s->fd);
	unlink(s->path);
	g_free(s->path);
	g_free(s);
}

char *vt_control_call(const char *path, const char *request, int timeout_ms, GError **error)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	g_autoptr(GString) buf = g_string_new(NULL);
	gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
	size_t len = strlen(request), off = 0;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		g_set_error(error, VT_CONTROL_ERROR, ENAMETOOLONG, "socket path too long: %s", path);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	/* non-blocking: a vtierd that stopped accepting (backlog full) fails the
	 * connect at once instead of holding the caller past its deadline */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		g_set_error(error, VT_CONTROL_ERROR, e, "cannot reach vtierd at %s: %s%s", path,
			    g_strerror(e), e == ENOENT || e == ECONNREFUSED ?
			    " (is vtierd running? start it with: vtierd, or systemctl start vtierd)" :
			    e == EAGAIN ? " (vtierd is not accepting connections: hung?)" : "");
		return NULL;
	}
	while (off < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		gint64 left = (deadline - g_get_monotonic_time()) / 1000;
		ssize_t n;

		if (left <= 0) {
			g_set_error(error, VT_CONTROL_ERROR, ETIMEDOUT, "vtierd did not take the "
				    "request within %d ms", timeout_ms);
			close(fd);
			return NULL;
		}
		n = send(fd, request + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
			if (errno == EAGAIN)
				poll(&pfd, 1, (int)left);
			continue;
		}
		if (n < 0) {
			g_set_error(error, VT_CONTROL_ERROR, errno, "send: %s", g_strerror(errno));
			close(fd);
			return NULL;
		}
		off += (size_t)n;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		gint64 left = (deadline - g_get_monotonic_time()) / 1000;
		char tmp[65536];
		ssize_t n;

		if (left <= 0) {
			g_set_error(error, VT_CONTROL_ERROR, ETIMEDOUT, "vtierd did not answer within %d ms",
				    timeout_ms);
			close(fd);
			return NULL;
		}
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		n = recv(fd, tmp, sizeof(tmp), 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		g_string_append_len(buf, tmp, n);
		if (memchr(tmp, '\n', (size_t)n))
			break;
	}
	close(fd);
	if (!buf->len || buf->str[buf->len - 1] != '\n') {
		g_set_error(error, VT_CONTROL_ERROR, EPROTO, "vtierd closed the connection without a "
			    "complete reply");
		return NULL;
	}
	g_string_truncate(buf, buf->len - 1);
	return g_string_free(g_steal_pointer(&buf), FALSE);
}
