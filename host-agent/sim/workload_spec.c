// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Workload spec files (JSON) and the built-in scenarios, which are themselves
 * specs. The format is documented in docs/telemetry.md; unknown keys are errors
 * so that a typo never silently changes a scenario.
 */
#include <string.h>

#include <json-glib/json-glib.h>

#include "json_guard.h"
#include "workload.h"

#define SPEC_ERR(error, ...) \
	g_set_error(error, VT_WORKLOAD_ERROR, VT_WORKLOAD_ERROR_PARSE, __VA_ARGS__)

static bool node_size(JsonNode *node, const char *what, uint64_t *out, GError **error)
{
	if (JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_STRING)
		return vt_parse_size(json_node_get_string(node), out, error);
	if (JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_INT64 &&
	    json_node_get_int(node) >= 0) {
		*out = (uint64_t)json_node_get_int(node);
		return true;
	}
	SPEC_ERR(error, "%s: expected a size (\"10GiB\" or a non-negative integer)", what);
	return false;
}

static bool node_number(JsonNode *node, const char *what, double *out, GError **error)
{
	GType type = JSON_NODE_HOLDS_VALUE(node) ? json_node_get_value_type(node) : G_TYPE_INVALID;

	if (type == G_TYPE_DOUBLE || type == G_TYPE_INT64) {
		*out = json_node_get_double(node);
		return true;
	}
	SPEC_ERR(error, "%s: expected a number", what);
	return false;
}

static bool check_keys(JsonObject *obj, const char *what, const char *const *allowed, GError **error)
{
	g_autoptr(GList) members = json_object_get_members(obj);

	for (GList *l = members; l; l = l->next) {
		if (!g_strv_contains(allowed, l->data)) {
			SPEC_ERR(error, "%s: unknown key '%s'", what, (const char *)l->data);
			return false;
		}
	}
	return true;
}

static JsonNode *member(JsonObject *obj, const char *key)
{
	return json_object_has_member(obj, key) ? json_object_get_member(obj, key) : NULL;
}

/* The parameter each pattern takes (struct vt_hot_range.param). */
static const struct {
	const char *key;
	enum vt_pattern pattern;
	const char *pattern_name;
} pattern_params[] = {
	{ "sigma", VT_PATTERN_GAUSSIAN, "gaussian" },
	{ "exponent", VT_PATTERN_ZIPF, "zipf" },
};

static bool parse_range(struct vt_workload *w, JsonNode *node, unsigned int pi, unsigned int ri,
			struct vt_hot_range *r, GError **error)
{
	static const char *const keys[] = { "start", "size", "weight", "pattern", "sigma",
					     "exponent", "scored", NULL };
	g_autofree char *what = g_strdup_printf("phases[%u].hot[%u]", pi, ri);
	JsonObject *obj;
	JsonNode *n;
	uint64_t offset;

	if (!JSON_NODE_HOLDS_OBJECT(node)) {
		SPEC_ERR(error, "%s: expected an object", what);
		return false;
	}
	obj = json_node_get_object(node);
	if (!check_keys(obj, what, keys, error))
		return false;
	if (!(n = member(obj, "start")) || !node_size(n, what, &offset, error) ||
	    !(n = member(obj, "size")) || !node_size(n, what, &r->size, error)) {
		if (error && !*error)
			SPEC_ERR(error, "%s: 'start' and 'size' are required", what);
		return false;
	}
	if (offset > UINT64_MAX - w->base) {
		SPEC_ERR(error, "%s: start out of range", what);
		return false;
	}
	r->start = w->base + offset;
	r->weight = 1;
	if ((n = member(obj, "weight")) && !node_number(n, what, &r->weight, error))
		return false;
	if ((n = member(obj, "scored"))) {
		if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN) {
			SPEC_ERR(error, "%s: 'scored' must be true or false", what);
			return false;
		}
		r->unscored = !json_node_get_boolean(n);
	}
	r->pattern = VT_PATTERN_UNIFORM;
	if ((n = member(obj, "pattern"))) {
		const char *name = JSON_NODE_HOLDS_VALUE(n) &&
				   json_node_get_value_type(n) == G_TYPE_STRING ?
				   json_node_get_string(n) : "";

		if (strcmp(name, "uniform") == 0) {
			r->pattern = VT_PATTERN_UNIFORM;
		} else if (strcmp(name, "gaussian") == 0) {
			r->pattern = VT_PATTERN_GAUSSIAN;
			r->param = 1.0 / 6;
		} else if (strcmp(name, "zipf") == 0) {
			r->pattern = VT_PATTERN_ZIPF;
			r->param = 1.0;
		} else {
			SPEC_ERR(error, "%s: pattern must be \"uniform\", \"gaussian\" or \"zipf\"",
				 what);
			return false;
		}
	}
	for (unsigned int i = 0; i < G_N_ELEMENTS(pattern_params); i++) {
		if (!(n = member(obj, pattern_params[i].key)))
			continue;
		if (r->pattern != pattern_params[i].pattern) {
			SPEC_ERR(error, "%s: '%s' applies to the %s pattern only", what,
				 pattern_params[i].key, pattern_params[i].pattern_name);
			return false;
		}
		if (!node_number(n, what, &r->param, error))
			return false;
	}
	return true;
}

static bool parse_phase(struct vt_workload *w, JsonNode *node, unsigned int pi,
			struct vt_phase *p, GError **error)
{
	static const char *const keys[] = { "name", "duration_s", "access_rate", "hot", NULL };
	g_autofree char *what = g_strdup_printf("phases[%u]", pi);
	JsonObject *obj;
	JsonArray *hot;
	JsonNode *n;

	if (!JSON_NODE_HOLDS_OBJECT(node)) {
		SPEC_ERR(error, "%s: expected an object", what);
		return false;
	}
	obj = json_node_get_object(node);
	if (!check_keys(obj, what, keys, error))
		return false;
	if ((n = member(obj, "name")) && JSON_NODE_HOLDS_VALUE(n) &&
	    json_node_get_value_type(n) == G_TYPE_STRING)
		p->name = g_strdup(json_node_get_string(n));
	else
		p->name = g_strdup_printf("phase %u", pi + 1);
	if (!(n = member(obj, "duration_s")) || !node_number(n, "duration_s", &p->duration_s, error) ||
	    !(n = member(obj, "access_rate")) || !node_number(n, "access_rate", &p->access_rate, error)) {
		if (error && !*error)
			SPEC_ERR(error, "%s: 'duration_s' and 'access_rate' are required", what);
		return false;
	}
	if (!(n = member(obj, "hot")) || !JSON_NODE_HOLDS_ARRAY(n)) {
		SPEC_ERR(error, "%s: 'hot' must be an array of ranges", what);
		return false;
	}
	hot = json_node_get_array(n);
	p->nr_ranges = json_array_get_length(hot);
	if (p->nr_ranges > 4096) {
		SPEC_ERR(error, "%s: at most 4096 hot ranges", what);
		return false;
	}
	p->ranges = g_new0(struct vt_hot_range, p->nr_ranges);
	for (unsigned int i = 0; i < p->nr_ranges; i++)
		if (!parse_range(w, json_array_get_element(hot, i), pi, i, &p->ranges[i], error))
			return false;
	return true;
}

struct vt_workload *vt_workload_from_json(const char *data, gssize len, GError **error)
{
	static const char *const keys[] = { "name", "footprint", "base", "page_size", "levels",
					     "initial_bits", "phases", NULL };
	g_autoptr(JsonParser) parser = json_parser_new();
	g_autoptr(vt_workload) w = g_new0(struct vt_workload, 1);
	g_autoptr(GError) local = NULL;
	JsonObject *obj;
	JsonArray *phases;
	JsonNode *root, *n;
	uint64_t page = 4096;
	char err[96];

	if (vt_json_check_depth(data, len < 0 ? strlen(data) : (size_t)len, VT_JSON_MAX_DEPTH,
				err, sizeof(err))) {
		SPEC_ERR(error, "%s: flatten the spec", err);
		return NULL;
	}
	if (!json_parser_load_from_data(parser, data, len, &local)) {
		SPEC_ERR(error, "not valid JSON: %s", local->message);
		return NULL;
	}
	root = json_parser_get_root(parser);
	if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
		SPEC_ERR(error, "a workload spec must be a JSON object");
		return NULL;
	}
	obj = json_node_get_object(root);
	if (!check_keys(obj, "spec", keys, error))
		return NULL;
	if ((n = member(obj, "name")) && JSON_NODE_HOLDS_VALUE(n) &&
	    json_node_get_value_type(n) == G_TYPE_STRING)
		w->name = g_strdup(json_node_get_string(n));
	else
		w->name = g_strdup("custom");
	if (!(n = member(obj, "footprint"))) {
		SPEC_ERR(error, "spec: 'footprint' is required");
		return NULL;
	}
	if (!node_size(n, "footprint", &w->footprint, error))
		return NULL;
	if ((n = member(obj, "base")) && !node_size(n, "base", &w->base, error))
		return NULL;
	if ((n = member(obj, "page_size")) && !node_size(n, "page_size", &page, error))
		return NULL;
	if (page != 4096 && page != (2u << 20)) {
		SPEC_ERR(error, "page_size must be 4KiB or 2MiB");
		return NULL;
	}
	w->page_shift = page == 4096 ? 12 : 21;
	w->levels = 4;
	if ((n = member(obj, "levels"))) {
		if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64) {
			SPEC_ERR(error, "levels: expected 4 or 5");
			return NULL;
		}
		w->levels = (unsigned int)CLAMP(json_node_get_int(n), 0, 100);
	}
	if ((n = member(obj, "initial_bits"))) {
		const char *v = JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING ?
				json_node_get_string(n) : "";

		if (strcmp(v, "young") && strcmp(v, "old")) {
			SPEC_ERR(error, "initial_bits must be \"young\" or \"old\"");
			return NULL;
		}
		w->initially_young = strcmp(v, "young") == 0;
	}
	if (!(n = member(obj, "phases")) || !JSON_NODE_HOLDS_ARRAY(n)) {
		SPEC_ERR(error, "spec: 'phases' must be an array");
		return NULL;
	}
	phases = json_node_get_array(n);
	w->nr_phases = json_array_get_length(phases);
	if (w->nr_phases > 1024) {
		SPEC_ERR(error, "spec: at most 1024 phases");
		return NULL;
	}
	w->phases = g_new0(struct vt_phase, w->nr_phases);
	for (unsigned int i = 0; i < w->nr_phases; i++)
		if (!parse_phase(w, json_array_get_element(phases, i), i, &w->phases[i], error))
			return NULL;
	if (!vt_workload_validate(w, error))
		return NULL;
	return g_steal_pointer(&w);
}

struct vt_workload *vt_workload_load(const char *path, GError **error)
{
	g_autofree char *data = NULL;
	gsize len;
	struct vt_workload *w;
	g_autoptr(GError) local = NULL;

	if (!g_file_get_contents(path, &data, &len, error))
		return NULL;
	w = vt_workload_from_json(data, (gssize)len, &local);
	if (!w)
		g_set_error(error, local->domain, local->code, "%s: %s", path, local->message);
	return w;
}

/*
 * Built-in scenarios. multi-phase and subtb reproduce the Telescope paper
 * (ATC'24, Sec. 6): random loads into 10 GiB hot ranges of a 5 TiB heap, and
 * heaps of 1, 10 and 100 GiB with 10% hot. Hot ranges start off entry
 * boundaries (+3 MiB +12 KiB) so that edges must be found at the leaf level.
 */
static const struct {
	const char *name;
	const char *json;
} builtins[] = {
	{ "multi-phase", "{\"name\":\"multi-phase\",\"footprint\":\"5TiB\",\"phases\":["
	  "{\"name\":\"one range\",\"duration_s\":80,\"access_rate\":5e7,"
	  " \"hot\":[{\"start\":\"1TiB+3MiB+12KiB\",\"size\":\"10GiB\"}]},"
	  "{\"name\":\"another range\",\"duration_s\":80,\"access_rate\":5e7,"
	  " \"hot\":[{\"start\":\"3TiB+517GiB+1MiB+8KiB\",\"size\":\"10GiB\"}]},"
	  "{\"name\":\"two ranges\",\"duration_s\":80,\"access_rate\":5e7,"
	  " \"hot\":[{\"start\":\"700GiB+4KiB\",\"size\":\"10GiB\"},"
	  "          {\"start\":\"4TiB+100GiB+5MiB\",\"size\":\"10GiB\"}]}]}" },
	{ "multi-phase-5l", "{\"name\":\"multi-phase-5l\",\"footprint\":\"64TiB\",\"levels\":5,"
	  "\"phases\":["
	  "{\"name\":\"one range\",\"duration_s\":80,\"access_rate\":5e7,"
	  " \"hot\":[{\"start\":\"10TiB+3MiB+12KiB\",\"size\":\"10GiB\"}]},"
	  "{\"name\":\"another range\",\"duration_s\":80,\"access_rate\":5e7,"
	  " \"hot\":[{\"start\":\"47TiB+517GiB+1MiB+8KiB\",\"size\":\"10GiB\"}]},"
	  "{\"name\":\"two ranges\",\"duration_s\":80,\"access_rate\":5e7,"
	  " \"hot\":[{\"start\":\"3TiB+700GiB+4KiB\",\"size\":\"10GiB\"},"
	  "          {\"start\":\"60TiB+5MiB\",\"size\":\"10GiB\"}]}]}" },
	{ "subtb-1g", "{\"name\":\"subtb-1g\",\"footprint\":\"1GiB\",\"phases\":["
	  "{\"duration_s\":20,\"access_rate\":5e7,"
	  " \"hot\":[{\"start\":\"379MiB+12KiB\",\"size\":\"102400KiB\"}]}]}" },
	{ "subtb-10g", "{\"name\":\"subtb-10g\",\"footprint\":\"10GiB\",\"phases\":["
	  "{\"duration_s\":20,\"access_rate\":5e7,"
	  " \"hot\":[{\"start\":\"3GiB+700MiB+12KiB\",\"size\":\"1GiB\"}]}]}" },
	{ "subtb-100g", "{\"name\":\"subtb-100g\",\"footprint\":\"100GiB\",\"phases\":["
	  "{\"duration_s\":20,\"access_rate\":5e7,"
	  " \"hot\":[{\"start\":\"37GiB+3MiB+12KiB\",\"size\":\"10GiB\"}]}]}" },
};

const char *const *vt_workload_builtin_names(void)
{
	static const char *names[G_N_ELEMENTS(builtins) + 1];

	for (unsigned int i = 0; i < G_N_ELEMENTS(builtins); i++)
		names[i] = builtins[i].name;
	return names;
}

const char *vt_workload_builtin_json(const char *name)
{
	for (unsigned int i = 0; i < G_N_ELEMENTS(builtins); i++)
		if (strcmp(builtins[i].name, name) == 0)
			return builtins[i].json;
	return NULL;
}

struct vt_workload *vt_workload_builtin(const char *name, GError **error)
{
	const char *json = vt_workload_builtin_json(name);

	if (!json) {
		g_autofree char *list = g_strjoinv(", ", (char **)vt_workload_builtin_names());

		g_set_error(error, VT_WORKLOAD_ERROR, VT_WORKLOAD_ERROR_UNKNOWN,
			    "unknown scenario '%s' (built-in: %s)", name, list);
		return NULL;
	}
	return vt_workload_from_json(json, -1, error);
}
