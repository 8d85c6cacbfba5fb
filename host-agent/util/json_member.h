/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One named member of the JSON object a JsonBuilder is in: the replies' bricks. */
#ifndef VTIER_UTIL_JSON_MEMBER_H
#define VTIER_UTIL_JSON_MEMBER_H

#include <stdbool.h>
#include <stdint.h>

#include <json-glib/json-glib.h>

static inline void vt_json_add_u64(JsonBuilder *b, const char *k, uint64_t v)
{
	json_builder_set_member_name(b, k);
	json_builder_add_int_value(b, (gint64)v);
}

static inline void vt_json_add_int(JsonBuilder *b, const char *k, int64_t v)
{
	json_builder_set_member_name(b, k);
	json_builder_add_int_value(b, v);
}

static inline void vt_json_add_dbl(JsonBuilder *b, const char *k, double v)
{
	json_builder_set_member_name(b, k);
	json_builder_add_double_value(b, v);
}

static inline void vt_json_add_str(JsonBuilder *b, const char *k, const char *v)
{
	json_builder_set_member_name(b, k);
	json_builder_add_string_value(b, v);
}

static inline void vt_json_add_bool(JsonBuilder *b, const char *k, bool v)
{
	json_builder_set_member_name(b, k);
	json_builder_add_boolean_value(b, v);
}

/* Member @k, an object: the members that follow are its own until json_builder_end_object(). */
static inline void vt_json_begin_obj(JsonBuilder *b, const char *k)
{
	json_builder_set_member_name(b, k);
	json_builder_begin_object(b);
}

/* Member @k, an array: the values that follow are its own until json_builder_end_array(). */
static inline void vt_json_begin_arr(JsonBuilder *b, const char *k)
{
	json_builder_set_member_name(b, k);
	json_builder_begin_array(b);
}

/* Member @k, whose value the next call writes (another view's *_to_json). */
static inline void vt_json_key(JsonBuilder *b, const char *k)
{
	json_builder_set_member_name(b, k);
}

#endif
