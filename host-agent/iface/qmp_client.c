// SPDX-License-Identifier: GPL-2.0-or-later
/* Synchronous QMP client with deadlines, and strict parsers for its replies. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib-unix.h>

#include "json_guard.h"
#include "json_member.h"
#include "qmp_client.h"

G_DEFINE_QUARK(vt-qmp-error-quark, vt_qmp_error)

struct vt_qmp {
	int fd;
	pid_t pid;
	int timeout_ms;
	GString *buf;
	char *version;
	unsigned int next_id;
};

pid_t vt_qmp_peer_pid(const struct vt_qmp *q)
{
	return q->pid;
}

int vt_qmp_fd(const struct vt_qmp *q)
{
	return q->fd;
}

const char *vt_qmp_version(const struct vt_qmp *q)
{
	return q->version;
}

void vt_qmp_free(struct vt_qmp *q)
{
	if (!q)
		return;
	if (q->fd >= 0)
		close(q->fd);
	g_string_free(q->buf, TRUE);
	g_free(q->version);
	g_free(q);
}

/* Next line into @line (without newline); waits until @deadline (monotonic us). */
static bool read_line(struct vt_qmp *q, gint64 deadline, GString *line, GError **error)
{
	for (;;) {
		char *nl = memchr(q->buf->str, '\n', q->buf->len);
		char tmp[65536];
		struct pollfd pfd = { .fd = q->fd, .events = POLLIN };
		gint64 left;
		ssize_t n;
		int r;

		if (nl) {
			g_string_assign(line, "");
			g_string_append_len(line, q->buf->str, nl - q->buf->str);
			g_string_erase(q->buf, 0, nl - q->buf->str + 1);
			return true;
		}
		if (q->buf->len > VT_QMP_MAX_LINE) {
			g_set_error(error, VT_QMP_ERROR, E2BIG, "QMP: line longer than %d bytes",
				    VT_QMP_MAX_LINE);
			return false;
		}
		left = (deadline - g_get_monotonic_time()) / 1000;
		if (left <= 0) {
			g_set_error(error, VT_QMP_ERROR, ETIMEDOUT, "QMP: no answer within %d ms",
				    q->timeout_ms);
			return false;
		}
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			g_set_error(error, VT_QMP_ERROR, errno, "QMP: poll: %s", g_strerror(errno));
			return false;
		}
		if (r == 0)
			continue;
		n = recv(q->fd, tmp, sizeof(tmp), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			g_set_error(error, VT_QMP_ERROR, errno, "QMP: read: %s", g_strerror(errno));
			return false;
		}
		if (n == 0) {
			g_set_error(error, VT_QMP_ERROR, ECONNRESET, "QMP: peer closed the connection");
			return false;
		}
		g_string_append_len(q->buf, tmp, n);
	}
}

static bool write_all(struct vt_qmp *q, const char *data, size_t len, GError **error)
{
	while (len) {
		ssize_t n = send(q->fd, data, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			g_set_error(error, VT_QMP_ERROR, errno, "QMP: write: %s", g_strerror(errno));
			return false;
		}
		data += n;
		len -= (size_t)n;
	}
	return true;
}

static JsonNode *parse_object(const char *data, size_t len, GError **error)
{
	g_autoptr(JsonParser) parser = json_parser_new();
	g_autoptr(GError) e = NULL;
	char err[96];
	JsonNode *root;

	if (memchr(data, '\0', len)) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "QMP: NUL byte in a message");
		return NULL;
	}
	if (!vt_json_single_object(data, len)) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "QMP: message is not one JSON object");
		return NULL;
	}
	if (vt_json_check_depth(data, len, VT_JSON_MAX_DEPTH, err, sizeof(err))) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "QMP: %s: not a QEMU peer", err);
		return NULL;
	}
	if (!json_parser_load_from_data(parser, data, (gssize)len, &e)) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "QMP: not JSON: %s", e->message);
		return NULL;
	}
	root = json_parser_get_root(parser);
	if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "QMP: message is not a JSON object");
		return NULL;
	}
	return json_node_copy(root);
}

static JsonObject *get_object(JsonObject *o, const char *key)
{
	JsonNode *n = o ? json_object_get_member(o, key) : NULL;

	return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

static bool get_int(JsonObject *o, const char *key, gint64 *out)
{
	JsonNode *n = o ? json_object_get_member(o, key) : NULL;

	if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64)
		return false;
	*out = json_node_get_int(n);
	return true;
}

/* A string member, NULL when absent, not a string or not UTF-8: json-glib takes
 * octal escapes ("\233") that make bytes no JSON text may hold, and what QEMU
 * says reaches replies and logs. */
static const char *get_str(JsonObject *o, const char *key)
{
	JsonNode *n = o ? json_object_get_member(o, key) : NULL;
	const char *s;

	if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
		return NULL;
	s = json_node_get_string(n);
	return s && g_utf8_validate(s, -1, NULL) ? s : NULL;
}

bool vt_qmp_parse_greeting(const char *line, size_t len, char **version, GError **error)
{
	g_autoptr(JsonNode) root = parse_object(line, len, error);
	JsonObject *qmp, *ver, *qemu;
	gint64 major, minor, micro;

	if (!root)
		return false;
	qmp = get_object(json_node_get_object(root), "QMP");
	ver = get_object(qmp, "version");
	qemu = get_object(ver, "qemu");
	if (!qemu || !get_int(qemu, "major", &major) || !get_int(qemu, "minor", &minor) ||
	    !get_int(qemu, "micro", &micro) || major < 0 || minor < 0 || micro < 0) {
		g_set_error(error, VT_QMP_ERROR, EPROTO,
			    "not a QEMU QMP socket: the greeting has no QMP.version.qemu");
		return false;
	}
	if (major < 6) {
		g_set_error(error, VT_QMP_ERROR, ENOTSUP,
			    "QEMU %" G_GINT64_FORMAT ".%" G_GINT64_FORMAT " is too old (need >= 6.0 "
			    "for x-query-ramblock)", major, minor);
		return false;
	}
	*version = g_strdup_printf("%" G_GINT64_FORMAT ".%" G_GINT64_FORMAT ".%" G_GINT64_FORMAT,
				   major, minor, micro);
	return true;
}

/*
 * Connect to @path and learn the peer's pid: the first steps of both
 * connects. A unix connect() completes at once or fails (EAGAIN: the
 * backlog is full), also on a non-blocking socket.
 */
static struct vt_qmp *qmp_open(const char *path, int timeout_ms, int sock_flags, GError **error)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	struct vt_qmp *q;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		g_set_error(error, VT_QMP_ERROR, ENAMETOOLONG, "QMP socket path too long: %s", path);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	q = g_new0(struct vt_qmp, 1);
	q->buf = g_string_new(NULL);
	q->timeout_ms = timeout_ms;
	q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | sock_flags, 0);
	if (q->fd < 0 || connect(q->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		g_set_error(error, VT_QMP_ERROR, e, "cannot connect to QMP socket %s: %s%s", path,
			    g_strerror(e), e == EAGAIN ? " (its backlog is full: QEMU is stuck)" : "");
		vt_qmp_free(q);
		return NULL;
	}
	if (getsockopt(q->fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.pid <= 0) {
		g_set_error(error, VT_QMP_ERROR, errno ? errno : ESRCH,
			    "%s: cannot learn the peer's pid (SO_PEERCRED)", path);
		vt_qmp_free(q);
		return NULL;
	}
	q->pid = cred.pid;
	return q;
}

struct vt_qmp *vt_qmp_connect(const char *path, int timeout_ms, GError **error)
{
	g_autoptr(GString) line = g_string_new(NULL);
	struct vt_qmp *q;
	gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;

	q = qmp_open(path, timeout_ms, 0, error);
	if (!q)
		return NULL;
	if (!read_line(q, deadline, line, error)) {
		g_prefix_error(error, "%s: no QMP greeting (not a QEMU QMP socket, or QEMU is "
			       "stuck): ", path);
		goto fail;
	}
	if (!vt_qmp_parse_greeting(line->str, line->len, &q->version, error)) {
		if (error && *error && !strstr((*error)->message, "not a QEMU"))
			g_prefix_error(error, "not a QEMU QMP socket: ");
		g_prefix_error(error, "%s: ", path);
		goto fail;
	}
	if (!vt_qmp_execute(q, "qmp_capabilities", NULL, NULL, error)) {
		g_prefix_error(error, "%s: ", path);
		goto fail;
	}
	return q;
fail:
	vt_qmp_free(q);
	return NULL;
}

/*
 * One line the peer sent while we wait for the reply to @cmd (@id): 0 an
 * event (keep waiting), 1 the reply (its "return" in @ret), -1 an error.
 * Peer text in errors is made printable.
 */
static int check_reply(const char *data, size_t len, const char *cmd, const char *id,
		       JsonNode **ret, GError **error)
{
	g_autoptr(JsonNode) msg = parse_object(data, len, error);
	JsonObject *o, *err;
	JsonNode *r;
	const char *rid;

	if (!msg)
		return -1;
	o = json_node_get_object(msg);
	if (json_object_has_member(o, "event"))
		return 0;
	rid = get_str(o, "id");
	if (!rid || strcmp(rid, id) != 0) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "QMP %s: reply with unexpected id", cmd);
		return -1;
	}
	err = get_object(o, "error");
	if (err) {
		const char *desc = get_str(err, "desc");
		char shown[200];

		vt_text_printable(shown, sizeof(shown), desc ? desc : "error without description",
				  desc ? strlen(desc) : 24);
		g_set_error(error, VT_QMP_ERROR, EREMOTEIO, "QMP %s: %s", cmd, shown);
		return -1;
	}
	r = json_object_get_member(o, "return");
	if (!r) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "QMP %s: reply without 'return'", cmd);
		return -1;
	}
	if (ret)
		*ret = json_node_copy(r);
	return 1;
}

bool vt_qmp_execute(struct vt_qmp *q, const char *cmd, JsonNode *args, JsonNode **ret,
		    GError **error)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonGenerator) gen = json_generator_new();
	g_autoptr(JsonNode) req = NULL;
	g_autoptr(GString) line = g_string_new(NULL);
	g_autofree char *text = NULL;
	g_autofree char *id = g_strdup_printf("vtier-%u", ++q->next_id);
	gint64 deadline = g_get_monotonic_time() + (gint64)q->timeout_ms * 1000;

	json_builder_begin_object(b);
	vt_json_add_str(b, "execute", cmd);
	if (args) {
		vt_json_key(b, "arguments");
		json_builder_add_value(b, json_node_copy(args));
	}
	vt_json_add_str(b, "id", id);
	json_builder_end_object(b);
	req = json_builder_get_root(b);
	json_generator_set_root(gen, req);
	text = json_generator_to_data(gen, NULL);
	if (!write_all(q, text, strlen(text), error) || !write_all(q, "\n", 1, error))
		return false;
	for (;;) {
		int r;

		if (!read_line(q, deadline, line, error))
			return false;
		r = check_reply(line->str, line->len, cmd, id, ret, error);
		if (r)
			return r > 0;
	}
}

enum vt_qmp_migration vt_qmp_migration_of(const char *status)
{
	static const struct {
		const char *status;
		enum vt_qmp_migration m;
	} statuses[] = {
		{ "setup", VT_QMP_MIGRATION_ACTIVE }, { "active", VT_QMP_MIGRATION_ACTIVE },
		{ "wait-unplug", VT_QMP_MIGRATION_ACTIVE },
		{ "pre-switchover", VT_QMP_MIGRATION_ACTIVE }, { "device", VT_QMP_MIGRATION_ACTIVE },
		{ "completed", VT_QMP_MIGRATION_COMPLETED }, { "failed", VT_QMP_MIGRATION_FAILED },
		{ "cancelled", VT_QMP_MIGRATION_FAILED },
	};

	for (unsigned int i = 0; i < G_N_ELEMENTS(statuses); i++)
		if (!strcmp(status, statuses[i].status))
			return statuses[i].m;
	return VT_QMP_MIGRATION_OTHER;
}

int vt_qmp_parse_event(const char *line, size_t len, struct vt_qmp_event *ev, GError **error)
{
	g_autoptr(JsonNode) root = NULL;
	JsonObject *o;
	const char *name, *status;

	/* QMP ends its lines with CRLF */
	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	root = parse_object(line, len, error);
	if (!root)
		return -1;
	o = json_node_get_object(root);
	if (!json_object_has_member(o, "event"))
		return 0;
	name = get_str(o, "event");
	if (!name || !*name) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "QMP: event without a name");
		return -1;
	}
	vt_text_printable(ev->name, sizeof(ev->name), name, strlen(name));
	ev->migration = VT_QMP_MIGRATION_NONE;
	if (strcmp(name, "MIGRATION") != 0)
		return 1;
	status = get_str(get_object(o, "data"), "status");
	if (!status) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "QMP: MIGRATION event without a status");
		return -1;
	}
	ev->migration = vt_qmp_migration_of(status);
	return 1;
}

bool vt_qmp_read_events(struct vt_qmp *q, vt_qmp_event_fn fn, void *user, GError **error)
{
	char tmp[65536];
	int gone = 0;

	/* what is there now, and what the peer sent before it went: in order */
	while (!gone) {
		ssize_t n = recv(q->fd, tmp, sizeof(tmp), MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			gone = n == 0 ? ECONNRESET : errno;
			break;
		}
		g_string_append_len(q->buf, tmp, n);
		if (q->buf->len > VT_QMP_MAX_LINE && !memchr(q->buf->str, '\n', q->buf->len)) {
			g_set_error(error, VT_QMP_ERROR, E2BIG, "QMP: line longer than %d bytes",
				    VT_QMP_MAX_LINE);
			return false;
		}
	}
	for (;;) {
		char *nl = memchr(q->buf->str, '\n', q->buf->len);
		struct vt_qmp_event ev;
		int r;

		if (!nl)
			break;
		r = vt_qmp_parse_event(q->buf->str, (size_t)(nl - q->buf->str), &ev, error);
		g_string_erase(q->buf, 0, nl - q->buf->str + 1);
		if (r < 0)
			return false;
		if (r > 0 && fn)
			fn(&ev, user);
	}
	if (gone)
		g_set_error(error, VT_QMP_ERROR, gone, "QMP connection lost: %s",
			    gone == ECONNRESET ? "QEMU closed it" : g_strerror(gone));
	return !gone;
}

bool vt_qmp_parse_memdev(JsonNode *ret, GArray *out, GError **error)
{
	JsonArray *a;

	if (!ret || !JSON_NODE_HOLDS_ARRAY(ret)) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "query-memdev: return is not an array");
		return false;
	}
	a = json_node_get_array(ret);
	if (json_array_get_length(a) > 256) {
		g_set_error(error, VT_QMP_ERROR, E2BIG, "query-memdev: more than 256 backends");
		return false;
	}
	for (unsigned int i = 0; i < json_array_get_length(a); i++) {
		JsonNode *e = json_array_get_element(a, i);
		JsonObject *o = JSON_NODE_HOLDS_OBJECT(e) ? json_node_get_object(e) : NULL;
		struct vt_memdev m = { 0 };
		const char *id = get_str(o, "id"), *policy = get_str(o, "policy");
		JsonNode *share = o ? json_object_get_member(o, "share") : NULL;
		gint64 size;

		if (!o || !get_int(o, "size", &size) || size <= 0 || !policy) {
			g_set_error(error, VT_QMP_ERROR, EPROTO,
				    "query-memdev: element %u lacks size or policy", i);
			return false;
		}
		/* ids end up in replies and logs: QEMU's own are [A-Za-z][A-Za-z0-9_.-]* */
		if (!id || !*id || strlen(id) >= sizeof(m.id) || !vt_text_is_printable(id) ||
		    !vt_text_is_printable(policy)) {
			g_set_error(error, VT_QMP_ERROR, EPROTO,
				    "query-memdev: element %u has no usable id", i);
			return false;
		}
		g_strlcpy(m.id, id, sizeof(m.id));
		g_strlcpy(m.policy, policy, sizeof(m.policy));
		m.size = (uint64_t)size;
		m.share = share && JSON_NODE_HOLDS_VALUE(share) &&
			  json_node_get_value_type(share) == G_TYPE_BOOLEAN &&
			  json_node_get_boolean(share);
		g_array_append_val(out, m);
	}
	return true;
}

/* qom-list /objects: fill in each memdev's type from "child<TYPE>". */
bool vt_qmp_parse_objects(JsonNode *ret, GArray *memdevs, GError **error)
{
	JsonArray *a;

	if (!ret || !JSON_NODE_HOLDS_ARRAY(ret)) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "qom-list: return is not an array");
		return false;
	}
	a = json_node_get_array(ret);
	for (unsigned int i = 0; i < json_array_get_length(a); i++) {
		JsonNode *e = json_array_get_element(a, i);
		JsonObject *o = JSON_NODE_HOLDS_OBJECT(e) ? json_node_get_object(e) : NULL;
		const char *name = get_str(o, "name"), *type = get_str(o, "type");
		size_t tl;

		if (!name || !type) {
			g_set_error(error, VT_QMP_ERROR, EPROTO, "qom-list: element %u lacks name/type",
				    i);
			return false;
		}
		tl = strlen(type);
		if (!g_str_has_prefix(type, "child<") || type[tl - 1] != '>')
			continue;
		for (unsigned int j = 0; j < memdevs->len; j++) {
			struct vt_memdev *m = &g_array_index(memdevs, struct vt_memdev, j);

			if (strcmp(m->id, name) == 0 && tl - 7 < sizeof(m->type)) {
				memcpy(m->type, type + 6, tl - 7);
				m->type[tl - 7] = '\0';
			}
		}
	}
	return true;
}

static bool parse_hex(const char *s, uint64_t *out)
{
	guint64 v;

	if (!g_str_has_prefix(s, "0x") || !g_ascii_string_to_unsigned(s + 2, 16, 0, G_MAXUINT64,
								      &v, NULL))
		return false;
	*out = v;
	return true;
}

static bool parse_psize(const char *num, const char *unit, uint64_t *out)
{
	guint64 v;
	unsigned int shift;

	if (!g_ascii_string_to_unsigned(num, 10, 1, 1023, &v, NULL))
		return false;
	if (strcmp(unit, "KiB") == 0)
		shift = 10;
	else if (strcmp(unit, "MiB") == 0)
		shift = 20;
	else if (strcmp(unit, "GiB") == 0)
		shift = 30;
	else
		return false;
	*out = v << shift;
	return true;
}

/*
 * x-query-ramblock (HMP "info ramblock") text:
 *   Block Name    PSize  Offset  Used  Total  HVA  RO
 *          ram    4 KiB  0x...   0x... 0x...  0x... rw
 */
bool vt_qmp_parse_ramblocks(const char *text, GArray *out, GError **error)
{
	g_auto(GStrv) lines = NULL;
	bool header = false;

	if (!text || strlen(text) > VT_QMP_MAX_LINE) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "x-query-ramblock: no text");
		return false;
	}
	lines = g_strsplit(text, "\n", 4096);
	for (unsigned int i = 0; lines[i]; i++) {
		g_auto(GStrv) f = NULL;
		g_autoptr(GPtrArray) w = g_ptr_array_new();
		struct vt_ramblock rb = { 0 };

		g_strstrip(lines[i]);
		if (!*lines[i])
			continue;
		if (g_str_has_prefix(lines[i], "Block Name")) {
			if (!strstr(lines[i], "HVA")) {
				g_set_error(error, VT_QMP_ERROR, ENOTSUP,
					    "x-query-ramblock: this QEMU does not report HVA");
				return false;
			}
			header = true;
			continue;
		}
		if (!header) {
			g_set_error(error, VT_QMP_ERROR, EPROTO, "x-query-ramblock: no header line");
			return false;
		}
		f = g_strsplit_set(lines[i], " \t", 64);
		for (unsigned int j = 0; f[j]; j++)
			if (*f[j])
				g_ptr_array_add(w, f[j]);
		/* name psize unit offset used total hva ro */
		if (w->len != 8 || strlen(w->pdata[0]) >= sizeof(rb.name) ||
		    !vt_text_is_printable(w->pdata[0]) ||
		    !parse_psize(w->pdata[1], w->pdata[2], &rb.page_size) ||
		    !parse_hex(w->pdata[3], &rb.offset) || !parse_hex(w->pdata[4], &rb.used) ||
		    !parse_hex(w->pdata[5], &rb.total) || !parse_hex(w->pdata[6], &rb.hva) ||
		    (strcmp(w->pdata[7], "rw") != 0 && strcmp(w->pdata[7], "ro") != 0) ||
		    rb.used > rb.total || rb.hva + rb.used < rb.hva) {
			char shown[81];

			g_set_error(error, VT_QMP_ERROR, EPROTO,
				    "x-query-ramblock: malformed line %u: '%s'", i + 1,
				    vt_text_printable(shown, sizeof(shown), lines[i], strlen(lines[i])));
			return false;
		}
		g_strlcpy(rb.name, w->pdata[0], sizeof(rb.name));
		rb.readonly = strcmp(w->pdata[7], "ro") == 0;
		g_array_append_val(out, rb);
		if (out->len > 4096) {
			g_set_error(error, VT_QMP_ERROR, E2BIG, "x-query-ramblock: too many blocks");
			return false;
		}
	}
	if (!header) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "x-query-ramblock: no header line");
		return false;
	}
	return true;
}

/*
 * "info mtree -f": FlatView blocks; in the one with "Root memory region: memory",
 *   0000000000100000-000000003fffffff (prio 0, ram): ram @0000000000100000 KVM
 */
bool vt_qmp_parse_mtree(const char *text, GArray *out, GError **error)
{
	g_auto(GStrv) lines = NULL;
	bool in_memory = false, seen = false;

	if (!text || strlen(text) > 4 * VT_QMP_MAX_LINE) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "info mtree: no text");
		return false;
	}
	lines = g_strsplit(text, "\n", 200000);
	for (unsigned int i = 0; lines[i]; i++) {
		char *l = g_strstrip(lines[i]), *dash, *ram, *name, *at;
		struct vt_gpa_range r = { 0 };
		uint64_t end;

		if (g_str_has_prefix(l, "FlatView")) {
			if (seen)
				break;	/* the first flat view of "memory" is the one */
			in_memory = false;
			continue;
		}
		if (g_str_has_prefix(l, "Root memory region:")) {
			const char *root = l + 19 + strspn(l + 19, " ");

			/* "system" (address_space_memory), or "memory" (the SMM view under TCG) */
			in_memory = strcmp(root, "system") == 0 || strcmp(root, "memory") == 0;
			seen |= in_memory;
			continue;
		}
		if (!in_memory || !(ram = strstr(l, ", ram):")))
			continue;
		dash = strchr(l, '-');
		/* "START-END (prio ": both 16 hex digits, and ", ram):" after them */
		if (!dash || dash - l != 16 || strlen(dash) < 17 + 7 ||
		    strncmp(dash + 17, " (prio ", 7) != 0 || ram < dash + 17 + 7) {
			char shown[81];

			g_set_error(error, VT_QMP_ERROR, EPROTO, "info mtree: malformed line %u: '%s'",
				    i + 1, vt_text_printable(shown, sizeof(shown), l, strlen(l)));
			return false;
		}
		*dash = '\0';
		dash[17] = '\0';
		name = ram + 7;
		name += strspn(name, " ");
		at = strstr(name, " @");
		{
			g_autofree char *a = g_strconcat("0x", l, NULL);
			g_autofree char *b = g_strconcat("0x", dash + 1, NULL);

			if (!parse_hex(a, &r.gpa) || !parse_hex(b, &end) || end < r.gpa ||
			    end == G_MAXUINT64) {
				g_set_error(error, VT_QMP_ERROR, EPROTO, "info mtree: bad range on line %u",
					    i + 1);
				return false;
			}
		}
		r.len = end - r.gpa + 1;
		if (at) {
			g_autofree char *o = NULL;
			char *sp;

			*at = '\0';
			o = g_strconcat("0x", at + 2, NULL);
			sp = strchr(o, ' ');
			if (sp)
				*sp = '\0';
			if (!parse_hex(o, &r.offset) || r.offset + r.len < r.offset) {
				g_set_error(error, VT_QMP_ERROR, EPROTO, "info mtree: bad offset on line %u",
					    i + 1);
				return false;
			}
		} else {
			char *sp = strchr(name, ' ');

			if (sp)
				*sp = '\0';
		}
		if (!*name || strlen(name) >= sizeof(r.region) || !vt_text_is_printable(name)) {
			g_set_error(error, VT_QMP_ERROR, EPROTO, "info mtree: bad region name on line %u",
				    i + 1);
			return false;
		}
		g_strlcpy(r.region, name, sizeof(r.region));
		g_array_append_val(out, r);
		if (out->len > 65536) {
			g_set_error(error, VT_QMP_ERROR, E2BIG, "info mtree: too many ranges");
			return false;
		}
	}
	if (!seen) {
		g_set_error(error, VT_QMP_ERROR, EPROTO, "info mtree: no flat view of 'system' or 'memory'");
		return false;
	}
	return true;
}

/*
 * Asynchronous connect: the same steps as vt_qmp_connect(), each one run
 * when the socket is ready, on @ctx; a deadline timer ends it.
 */
enum connect_step { STEP_GREETING, STEP_CAPABILITIES };

struct vt_qmp_connecting {
	struct vt_qmp *q;
	char *path;
	enum connect_step step;
	GSource *io;
	GSource *timer;
	vt_qmp_connect_cb cb;
	void *user;
};

static void connecting_free(struct vt_qmp_connecting *op)
{
	if (op->io) {
		g_source_destroy(op->io);
		g_source_unref(op->io);
	}
	if (op->timer) {
		g_source_destroy(op->timer);
		g_source_unref(op->timer);
	}
	vt_qmp_free(op->q);
	g_free(op->path);
	g_free(op);
}

/* Hand the result to the callback (from the main loop) and free @op. */
static void connecting_done(struct vt_qmp_connecting *op, GError *error)
{
	struct vt_qmp *q = NULL;

	if (!error) {
		q = g_steal_pointer(&op->q);
		/* the synchronous calls that follow poll with deadlines on a blocking fd */
		fcntl(q->fd, F_SETFL, fcntl(q->fd, F_GETFL) & ~O_NONBLOCK);
	} else {
		g_prefix_error(&error, "%s: ", op->path);
	}
	op->cb(q, error, op->user);
	connecting_free(op);
}

static gboolean connecting_timeout(gpointer data)
{
	struct vt_qmp_connecting *op = data;
	GError *e = g_error_new(VT_QMP_ERROR, ETIMEDOUT, "no %s within %d ms (not a QEMU QMP "
				"socket, or QEMU is stuck)", op->step == STEP_GREETING ?
				"QMP greeting" : "answer to qmp_capabilities", op->q->timeout_ms);

	connecting_done(op, e);
	return G_SOURCE_REMOVE;
}

/* Take one complete line out of q->buf, if there is one. */
static bool take_line(struct vt_qmp *q, GString *line)
{
	char *nl = memchr(q->buf->str, '\n', q->buf->len);

	if (!nl)
		return false;
	g_string_assign(line, "");
	g_string_append_len(line, q->buf->str, nl - q->buf->str);
	g_string_erase(q->buf, 0, nl - q->buf->str + 1);
	return true;
}

static gboolean connecting_ready(gint fd, GIOCondition cond, gpointer data)
{
	struct vt_qmp_connecting *op = data;
	struct vt_qmp *q = op->q;
	g_autoptr(GString) line = g_string_new(NULL);
	GError *e = NULL;
	char tmp[65536];
	ssize_t n;

	(void)cond;
	n = recv(fd, tmp, sizeof(tmp), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return G_SOURCE_CONTINUE;
	if (n <= 0) {
		e = g_error_new(VT_QMP_ERROR, n ? errno : ECONNRESET, "QMP: %s",
				n ? g_strerror(errno) : "peer closed the connection");
		goto done;
	}
	g_string_append_len(q->buf, tmp, n);
	while (take_line(q, line)) {
		if (op->step == STEP_GREETING) {
			static const char caps[] = "{\"execute\":\"qmp_capabilities\",\"id\":\"vtier-1\"}\n";

			if (!vt_qmp_parse_greeting(line->str, line->len, &q->version, &e)) {
				if (!strstr(e->message, "not a QEMU"))
					g_prefix_error(&e, "not a QEMU QMP socket: ");
				goto done;
			}
			/* a fresh socket's buffer takes these few bytes whole */
			if (send(fd, caps, sizeof(caps) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) !=
			    (ssize_t)sizeof(caps) - 1) {
				e = g_error_new(VT_QMP_ERROR, errno ? errno : EIO, "QMP: write: %s",
						g_strerror(errno));
				goto done;
			}
			q->next_id = 1;
			op->step = STEP_CAPABILITIES;
		} else {
			int r = check_reply(line->str, line->len, "qmp_capabilities", "vtier-1", NULL,
					    &e);

			if (r)
				goto done;	/* replied (e NULL) or failed */
		}
	}
	if (q->buf->len > VT_QMP_MAX_LINE) {
		e = g_error_new(VT_QMP_ERROR, E2BIG, "QMP: line longer than %d bytes", VT_QMP_MAX_LINE);
		goto done;
	}
	return G_SOURCE_CONTINUE;
done:
	g_source_unref(op->io);
	op->io = NULL;		/* returning REMOVE destroys it */
	connecting_done(op, e);
	return G_SOURCE_REMOVE;
}

struct vt_qmp_connecting *vt_qmp_connect_async(const char *path, int timeout_ms, GMainContext *ctx,
					       vt_qmp_connect_cb cb, void *user, GError **error)
{
	struct vt_qmp_connecting *op;
	struct vt_qmp *q = qmp_open(path, timeout_ms, SOCK_NONBLOCK, error);

	if (!q)
		return NULL;
	op = g_new0(struct vt_qmp_connecting, 1);
	op->q = q;
	op->path = g_strdup(path);
	op->cb = cb;
	op->user = user;
	op->io = g_unix_fd_source_new(q->fd, G_IO_IN | G_IO_HUP | G_IO_ERR);
	g_source_set_callback(op->io, G_SOURCE_FUNC(connecting_ready), op, NULL);
	g_source_attach(op->io, ctx);
	op->timer = g_timeout_source_new((guint)timeout_ms);
	g_source_set_callback(op->timer, connecting_timeout, op, NULL);
	g_source_attach(op->timer, ctx);
	return op;
}

void vt_qmp_connect_cancel(struct vt_qmp_connecting *op)
{
	if (op)
		connecting_free(op);
}
