// SPDX-License-Identifier: GPL-2.0-or-later
/* Prometheus text exposition of a VM's figures (metrics_text.h); the format: util/prom_text.h. */
#include <stdarg.h>
#include <string.h>

#include "metrics_text.h"
#include "prom_text.h"

bool vt_prom_number(JsonNode *n, double *out)
{
	GType t = n && JSON_NODE_HOLDS_VALUE(n) ? json_node_get_value_type(n) : G_TYPE_INVALID;

	if (t == G_TYPE_INT64)
		*out = (double)json_node_get_int(n);
	else if (t == G_TYPE_DOUBLE)
		*out = json_node_get_double(n);
	else
		return false;
	return true;
}

/* name{domain="",uuid=""[,key="value"]...} value; @...: key, value pairs, NULL-ended. */
void vt_prom_sample(GString *out, const char *name, const struct vt_metrics_vm *v, double value,
		   ...)
{
	bool first = true;
	const char *k;
	va_list ap;

	g_string_append(out, name);
	if (v) {
		vt_prom_label(out, &first, "domain", v->domain);
		vt_prom_label(out, &first, "uuid", v->uuid);
	}
	va_start(ap, value);
	while ((k = va_arg(ap, const char *)))
		vt_prom_label(out, &first, k, va_arg(ap, const char *));
	va_end(ap);
	vt_prom_value(out, first, value);
}

JsonArray *vt_prom_array(JsonObject *o, const char *name)
{
	JsonNode *n = o ? json_object_get_member(o, name) : NULL;

	return n && JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
}

JsonObject *vt_prom_object(JsonObject *o, const char *name)
{
	JsonNode *n = o ? json_object_get_member(o, name) : NULL;

	return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

double vt_prom_num(JsonObject *o, const char *name)
{
	double v = 0;

	vt_prom_number(o ? json_object_get_member(o, name) : NULL, &v);
	return v;
}

const char *vt_prom_str(JsonObject *o, const char *name)
{
	return json_object_get_string_member_with_default(o, name, "");
}

