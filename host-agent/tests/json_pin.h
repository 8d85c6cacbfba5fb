/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A JSON view pinned: the SHA-256 of its text as the daemon writes it, or of
 * its shape (every member name in order and each value's type) where the
 * values are the run's own (times, pids, paths). A view written another way
 * must give the same bytes; on a mismatch the text (or shape) is printed.
 */
#ifndef VTIER_TESTS_JSON_PIN_H
#define VTIER_TESTS_JSON_PIN_H

#include <glib.h>
#include <json-glib/json-glib.h>

/* The builder's root as text (JsonGenerator's defaults, as the replies). */
static inline char *json_pin_text(JsonBuilder *b)
{
	g_autoptr(JsonGenerator) g = json_generator_new();
	g_autoptr(JsonNode) root = json_builder_get_root(b);

	json_generator_set_root(g, root);
	return json_generator_to_data(g, NULL);
}

static inline void json_pin_shape_of(JsonNode *n, GString *out);

static inline void json_pin_member(JsonObject *o, const char *name, JsonNode *n, gpointer out)
{
	(void)o;
	g_string_append_printf(out, "%s:", name);
	json_pin_shape_of(n, out);
	g_string_append_c(out, ',');
}

static inline void json_pin_element(JsonArray *a, guint i, JsonNode *n, gpointer out)
{
	(void)a;
	(void)i;
	json_pin_shape_of(n, out);
	g_string_append_c(out, ',');
}

/* {name:shape,...} [shape,...] i d s b n: member names in order, value types. */
static inline void json_pin_shape_of(JsonNode *n, GString *out)
{
	switch (json_node_get_node_type(n)) {
	case JSON_NODE_OBJECT:
		g_string_append_c(out, '{');
		json_object_foreach_member(json_node_get_object(n), json_pin_member, out);
		g_string_append_c(out, '}');
		break;
	case JSON_NODE_ARRAY:
		g_string_append_c(out, '[');
		json_array_foreach_element(json_node_get_array(n), json_pin_element, out);
		g_string_append_c(out, ']');
		break;
	case JSON_NODE_NULL:
		g_string_append_c(out, 'n');
		break;
	default: {
		GType t = json_node_get_value_type(n);

		g_string_append_c(out, t == G_TYPE_INT64 ? 'i' : t == G_TYPE_DOUBLE ? 'd' :
				  t == G_TYPE_BOOLEAN ? 'b' : t == G_TYPE_STRING ? 's' : '?');
	}
	}
}

/* The shape of the builder's root. */
static inline char *json_pin_shape(JsonBuilder *b)
{
	g_autoptr(JsonNode) root = json_builder_get_root(b);
	GString *out = g_string_new(NULL);

	json_pin_shape_of(root, out);
	return g_string_free(out, FALSE);
}

/* True when @s hashes to @sha256; prints @what and @s when it does not. */
static inline gboolean json_pin_matches(const char *what, const char *s, const char *sha256)
{
	g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, s, -1);

	if (!g_strcmp0(sum, sha256))
		return TRUE;
	g_printerr("%s: sha256 %s, pinned %s, of:\n%s\n", what, sum, sha256, s);
	return FALSE;
}

#endif
