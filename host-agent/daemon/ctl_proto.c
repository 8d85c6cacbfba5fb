// SPDX-License-Identifier: GPL-2.0-or-later
/* Control protocol requests: strict parsing and serialisation. */
#include <errno.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "json_member.h"
#include "json_guard.h"
#include "ctl_proto.h"
#include "qmp_client.h"
#include "vm_policy.h"

static const char *const cmd_names[] = {
	[VT_CTL_LIST] = "list",
	[VT_CTL_ATTACH] = "attach",
	[VT_CTL_DETACH] = "detach",
	[VT_CTL_STATUS] = "status",
	[VT_CTL_STATS] = "stats",
	[VT_CTL_POLICY] = "policy",
	[VT_CTL_TIERS] = "tiers",
	[VT_CTL_PING] = "ping",
	[VT_CTL_DEMOTE] = "demote",
	[VT_CTL_REPORT] = "report",
	[VT_CTL_HEATMAP] = "heatmap",
};

const char *vt_ctl_cmd_name(enum vt_ctl_cmd cmd)
{
	return (unsigned int)cmd < G_N_ELEMENTS(cmd_names) ? cmd_names[cmd] : "?";
}

void vt_ctl_request_clear(struct vt_ctl_request *req)
{
	g_clear_pointer(&req->vm, g_free);
	g_clear_pointer(&req->qmp, g_free);
	g_clear_pointer(&req->domain, g_free);
	g_clear_pointer(&req->set, g_strfreev);
	req->nr_set = 0;
}

static bool get_string(JsonObject *obj, const char *key, size_t max, char **out, GError **error)
{
	JsonNode *n = json_object_get_member(obj, key);
	const char *s;

	if (!n)
		return true;
	if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "request: '%s' must be a string", key);
		return false;
	}
	s = json_node_get_string(n);
	/* json-glib takes octal escapes ("\233"): what they make need not be UTF-8 */
	if (!g_utf8_validate(s, -1, NULL)) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "request: '%s' is not UTF-8", key);
		return false;
	}
	if (!*s || strlen(s) > max) {
		g_set_error(error, VT_CORE_ERROR, EINVAL,
			    "request: '%s' must be 1..%zu characters", key, max);
		return false;
	}
	*out = g_strdup(s);
	return true;
}

static bool get_set(JsonObject *obj, struct vt_ctl_request *req, GError **error)
{
	JsonNode *n = json_object_get_member(obj, "set");
	JsonArray *a;
	unsigned int len;

	req->set = g_new0(char *, 1);
	if (!n)
		return true;
	if (!JSON_NODE_HOLDS_ARRAY(n)) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "request: 'set' must be an array of strings");
		return false;
	}
	a = json_node_get_array(n);
	len = json_array_get_length(a);
	if (len > VT_CTL_MAX_ASSIGN) {
		g_set_error(error, VT_CORE_ERROR, E2BIG, "request: more than %d policy assignments",
			    VT_CTL_MAX_ASSIGN);
		return false;
	}
	g_free(req->set);
	req->set = g_new0(char *, len + 1);
	for (unsigned int i = 0; i < len; i++) {
		JsonNode *e = json_array_get_element(a, i);
		const char *s;

		if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_STRING) {
			g_set_error(error, VT_CORE_ERROR, EINVAL,
				    "request: 'set' element %u is not a string", i);
			return false;
		}
		s = json_node_get_string(e);
		if (!g_utf8_validate(s, -1, NULL)) {
			g_set_error(error, VT_CORE_ERROR, EINVAL,
				    "request: 'set' element %u is not UTF-8", i);
			return false;
		}
		if (strlen(s) > 256 || !strchr(s, '=')) {
			g_set_error(error, VT_CORE_ERROR, EINVAL,
				    "request: 'set' element %u is not KEY=VALUE (max 256 characters)", i);
			return false;
		}
		req->set[i] = g_strdup(s);
		req->nr_set = i + 1;
	}
	return true;
}

static bool check_members(JsonObject *obj, const char *const *allowed, GError **error)
{
	g_autoptr(GList) members = json_object_get_members(obj);

	for (GList *l = members; l; l = l->next) {
		bool ok = false;

		for (const char *const *a = allowed; *a; a++)
			ok |= strcmp(*a, l->data) == 0;
		if (!ok) {
			g_set_error(error, VT_CORE_ERROR, EINVAL, "request: unknown member '%s'",
				    (const char *)l->data);
			return false;
		}
	}
	return true;
}

/* libvirt takes any UTF-8 but '/'; names go into logs: no control characters either. */
static bool domain_name_valid(const char *s)
{
	if (!g_utf8_validate(s, -1, NULL))
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f || *s == '/')
			return false;
	return true;
}

bool vt_ctl_request_parse(const char *data, size_t len, struct vt_ctl_request *req,
			  GError **error)
{
	static const char *const allowed[] = { "v", "cmd", "vm", "qmp", "domain", "set", NULL };
	g_autoptr(JsonParser) parser = json_parser_new();
	g_autoptr(GError) e = NULL;
	JsonObject *obj;
	JsonNode *root, *v;
	g_autofree char *cmd = NULL;
	bool need_vm, ok = false;
	char depth_err[96];

	memset(req, 0, sizeof(*req));
	if (len > VT_CTL_MAX_REQUEST) {
		g_set_error(error, VT_CORE_ERROR, E2BIG, "request larger than %d bytes",
			    VT_CTL_MAX_REQUEST);
		return false;
	}
	if (len && data[len - 1] == '\n')
		len--;
	if (memchr(data, '\0', len) || memchr(data, '\n', len)) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "request: NUL or newline inside the request");
		return false;
	}
	if (!vt_json_single_object(data, len)) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "request must be one JSON object");
		return false;
	}
	if (vt_json_check_depth(data, len, VT_JSON_MAX_DEPTH, depth_err, sizeof(depth_err))) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "request: %s", depth_err);
		return false;
	}
	if (!json_parser_load_from_data(parser, data, (gssize)len, &e)) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "request is not JSON: %s", e->message);
		return false;
	}
	root = json_parser_get_root(parser);
	if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "request must be a JSON object");
		return false;
	}
	obj = json_node_get_object(root);
	if (!check_members(obj, allowed, error))
		goto out;
	v = json_object_get_member(obj, "v");
	if (!v || !JSON_NODE_HOLDS_VALUE(v) || json_node_get_value_type(v) != G_TYPE_INT64 ||
	    json_node_get_int(v) != VT_CTL_VERSION) {
		g_set_error(error, VT_CORE_ERROR, EPROTO,
			    "request: protocol version 'v' must be %d", VT_CTL_VERSION);
		goto out;
	}
	if (!get_string(obj, "cmd", 32, &cmd, error))
		goto out;
	if (!cmd) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "request: missing 'cmd'");
		goto out;
	}
	req->cmd = (enum vt_ctl_cmd)G_N_ELEMENTS(cmd_names);
	for (unsigned int i = 0; i < G_N_ELEMENTS(cmd_names); i++)
		if (strcmp(cmd, cmd_names[i]) == 0)
			req->cmd = (enum vt_ctl_cmd)i;
	if ((unsigned int)req->cmd == G_N_ELEMENTS(cmd_names)) {
		g_set_error(error, VT_CORE_ERROR, EINVAL,
			    "request: unknown command '%s' (list, attach, detach, status, stats, "
			    "policy, tiers, ping, demote, report, heatmap)", cmd);
		goto out;
	}
	if (!get_string(obj, "vm", VT_CTL_MAX_NAME - 1, &req->vm, error) ||
	    !get_string(obj, "qmp", VT_CTL_MAX_PATH, &req->qmp, error) ||
	    !get_string(obj, "domain", VT_CTL_MAX_DOMAIN, &req->domain, error) ||
	    !get_set(obj, req, error))
		goto out;
	if (req->vm && !vt_ctl_name_valid(req->vm)) {
		char shown[4 * VT_CTL_MAX_NAME];

		vt_text_printable(shown, sizeof(shown), req->vm, strlen(req->vm));
		g_set_error(error, VT_CORE_ERROR, EINVAL, "request: VM name '%s' is not "
			    "[A-Za-z0-9._-]{1,63} starting with a letter, a digit or '_'", shown);
		goto out;
	}
	need_vm = req->cmd == VT_CTL_DETACH || req->cmd == VT_CTL_STATUS ||
		  req->cmd == VT_CTL_STATS || req->cmd == VT_CTL_POLICY || req->cmd == VT_CTL_DEMOTE ||
		  req->cmd == VT_CTL_HEATMAP;
	if (need_vm && !req->vm) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "%s: needs 'vm'", cmd);
		goto out;
	}
	if (req->cmd == VT_CTL_ATTACH && !req->qmp == !req->domain) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "attach: needs 'qmp' (the QMP socket path) "
			    "or 'domain' (a libvirt domain's name), one of them");
		goto out;
	}
	if (req->domain && !domain_name_valid(req->domain)) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "attach: 'domain' is not a libvirt "
			    "domain name (UTF-8, no '/', no control characters)");
		goto out;
	}
	if (req->domain && req->cmd != VT_CTL_ATTACH) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "%s: 'domain' only goes with attach", cmd);
		goto out;
	}
	if (req->cmd == VT_CTL_ATTACH && req->qmp && req->qmp[0] != '/') {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "attach: 'qmp' must be an absolute path");
		goto out;
	}
	if (req->qmp && req->cmd != VT_CTL_ATTACH) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "%s: 'qmp' only goes with attach", cmd);
		goto out;
	}
	if (req->nr_set && req->cmd != VT_CTL_ATTACH && req->cmd != VT_CTL_POLICY &&
	    req->cmd != VT_CTL_DEMOTE) {
		g_set_error(error, VT_CORE_ERROR, EINVAL,
			    "%s: 'set' only goes with attach, policy and demote", cmd);
		goto out;
	}
	ok = true;
out:
	if (!ok)
		vt_ctl_request_clear(req);
	return ok;
}

char *vt_ctl_request_to_json(const struct vt_ctl_request *req)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonGenerator) gen = json_generator_new();
	g_autoptr(JsonNode) root = NULL;
	g_autofree char *text = NULL;

	json_builder_begin_object(b);
	vt_json_add_int(b, "v", VT_CTL_VERSION);
	vt_json_add_str(b, "cmd", vt_ctl_cmd_name(req->cmd));
	if (req->vm) {
		vt_json_add_str(b, "vm", req->vm);
	}
	if (req->qmp) {
		vt_json_add_str(b, "qmp", req->qmp);
	}
	if (req->domain) {
		vt_json_add_str(b, "domain", req->domain);
	}
	if (req->nr_set) {
		vt_json_begin_arr(b, "set");
		for (unsigned int i = 0; i < req->nr_set; i++)
			json_builder_add_string_value(b, req->set[i]);
		json_builder_end_array(b);
	}
	json_builder_end_object(b);
	root = json_builder_get_root(b);
	json_generator_set_root(gen, root);
	text = json_generator_to_data(gen, NULL);
	return g_strconcat(text, "\n", NULL);
}
