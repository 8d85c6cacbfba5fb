// SPDX-License-Identifier: GPL-2.0-or-later
/* A VM's hotness history: address bins x windows, its JSON form and back. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "json_member.h"
#include "heatmap.h"
#include "vm_policy.h"

static uint64_t count_bins(const struct vt_heatmap_range *r, unsigned int n, uint64_t b)
{
	uint64_t count = 0;

	for (unsigned int i = 0; i < n; i++)
		count += (r[i].addr + r[i].len - 1) / b - r[i].addr / b + 1;
	return count;
}

int vt_heatmap_layout(struct vt_heatmap *h, const char *space, const struct vt_heatmap_range *ranges,
		      unsigned int n, const char *const *names, unsigned int nr_tiers)
{
	g_autofree struct vt_heatmap_bin *bins = NULL;
	unsigned int nr = 0;
	uint64_t b = VT_HEATMAP_MIN_BIN;
	bool same;

	if (n == 0 || n > VT_HEATMAP_MAX_BINS || nr_tiers > VT_MAX_TIERS || !space ||
	    strlen(space) >= sizeof(h->space))
		return -EINVAL;
	for (unsigned int i = 0; i < n; i++) {
		if (ranges[i].len == 0 || ranges[i].addr + ranges[i].len < ranges[i].addr ||
		    ranges[i].hva + ranges[i].len < ranges[i].hva)
			return -EINVAL;
		if (i && ranges[i].addr < ranges[i - 1].addr + ranges[i - 1].len)
			return -EINVAL;
	}
	for (unsigned int t = 0; t < nr_tiers; t++)
		if (!names[t] || strlen(names[t]) >= sizeof(h->tier_name[0]))
			return -EINVAL;
	/* each range has at least one bin, so this ends by 2^63 */
	while (count_bins(ranges, n, b) > VT_HEATMAP_MAX_BINS)
		b <<= 1;
	bins = g_new0(struct vt_heatmap_bin, VT_HEATMAP_MAX_BINS);
	for (unsigned int i = 0; i < n; i++) {
		uint64_t end = ranges[i].addr + ranges[i].len;

		for (uint64_t a = ranges[i].addr; a < end;) {
			uint64_t e = MIN(end, (a / b + 1) * b);

			if (e <= a)	/* the last bin of the address space */
				e = end;
			bins[nr++] = (struct vt_heatmap_bin){ a, e, ranges[i].hva + (a - ranges[i].addr) };
			a = e;
		}
	}
	same = h->nr_bins == nr && h->bin_bytes == b && strcmp(h->space, space) == 0 &&
	       h->nr_tiers == nr_tiers && memcmp(h->bin, bins, nr * sizeof(*bins)) == 0;
	for (unsigned int t = 0; same && t < nr_tiers; t++)
		same = strcmp(h->tier_name[t], names[t]) == 0;
	if (same)
		return 0;
	memset(h, 0, sizeof(*h));
	g_strlcpy(h->space, space, sizeof(h->space));
	h->bin_bytes = b;
	h->nr_bins = nr;
	memcpy(h->bin, bins, nr * sizeof(*bins));
	h->nr_tiers = nr_tiers;
	for (unsigned int t = 0; t < nr_tiers; t++)
		g_strlcpy(h->tier_name[t], names[t], sizeof(h->tier_name[t]));
	return 1;
}

unsigned int vt_heatmap_col_index(const struct vt_heatmap *h, unsigned int k)
{
	return (h->next + 2 * VT_HEATMAP_WINDOWS - 1 - k) % VT_HEATMAP_WINDOWS;
}

static gint cmp_bin_hva(gconstpointer a, gconstpointer b, gpointer data)
{
	const struct vt_heatmap *h = data;
	uint64_t x = h->bin[*(const unsigned int *)a].hva;
	uint64_t y = h->bin[*(const unsigned int *)b].hva;

	return x < y ? -1 : x > y;
}

void vt_heatmap_acc_reset(struct vt_heatmap_acc *a, const struct vt_heatmap *h)
{
	unsigned int n = h->nr_bins;

	memset(a->weight, 0, sizeof(a->weight));
	memset(a->bytes, 0, sizeof(a->bytes));
	memset(a->max, 0, sizeof(a->max));
	memset(a->tier_bytes, 0, sizeof(a->tier_bytes));
	for (unsigned int i = 0; i < n; i++)
		a->by_hva[i] = i;
	g_qsort_with_data(a->by_hva, (gint)n, sizeof(a->by_hva[0]), cmp_bin_hva, (gpointer)h);
	a->nr = n;
	a->primed = false;
}

/*
 * Over the bins chunk [@hva, @hva_end) overlaps: add its bytes (@bytes), its
 * hotness @ema (when >= 0) and move its bytes from tier @from to tier @to
 * (-1: none).
 */
static void acc_add(struct vt_heatmap_acc *a, const struct vt_heatmap *h, uint64_t hva,
		    uint64_t hva_end, bool bytes, double ema, int from, int to)
{
	unsigned int lo = 0, hi = a->nr;
	/* every bin is at most bin_bytes long: one that overlaps starts after this */
	uint64_t from_hva = hva > h->bin_bytes ? hva - h->bin_bytes : 0;

	if (from >= (int)h->nr_tiers)
		from = -1;
	if (to >= (int)h->nr_tiers)
		to = -1;
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (h->bin[a->by_hva[mid]].hva <= from_hva)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (unsigned int k = lo; k < a->nr; k++) {
		unsigned int i = a->by_hva[k];
		const struct vt_heatmap_bin *bn = &h->bin[i];
		uint64_t s, e;

		if (bn->hva >= hva_end)
			break;
		s = MAX(hva, bn->hva);
		e = MIN(hva_end, bn->hva + (bn->end - bn->start));
		if (e <= s)
			continue;
		if (bytes)
			a->bytes[i] += (double)(e - s);
		if (ema >= 0) {
			a->weight[i] += ema * (double)(e - s);
			a->max[i] = MAX(a->max[i], ema);
		}
		if (from >= 0)
			a->tier_bytes[i][from] -= MIN(a->tier_bytes[i][from], e - s);
		if (to >= 0)
			a->tier_bytes[i][to] += e - s;
	}
}

static double clamp_ema(double ema)
{
	if (!(ema >= 0))
		ema = 0;	/* NaN too */
	return MIN(ema, 1.0);
}

void vt_heatmap_acc_chunk(struct vt_heatmap_acc *a, const struct vt_heatmap *h, uint64_t hva,
			  uint64_t hva_end, double ema, int tier)
{
	acc_add(a, h, hva, hva_end, true, clamp_ema(ema), -1, tier);
}

void vt_heatmap_acc_hot_clear(struct vt_heatmap_acc *a)
{
	memset(a->weight, 0, sizeof(a->weight));
	memset(a->max, 0, sizeof(a->max));
}

void vt_heatmap_acc_hot(struct vt_heatmap_acc *a, const struct vt_heatmap *h, uint64_t hva,
			uint64_t hva_end, double ema)
{
	acc_add(a, h, hva, hva_end, false, clamp_ema(ema), -1, -1);
}

void vt_heatmap_acc_retier(struct vt_heatmap_acc *a, const struct vt_heatmap *h, uint64_t hva,
			   uint64_t hva_end, int from, int to)
{
	acc_add(a, h, hva, hva_end, false, -1, from, to);
}

static uint16_t quantise(double v)
{
	return (uint16_t)lround(CLAMP(v, 0.0, 1.0) * VT_HEATMAP_SCALE);
}

void vt_heatmap_push(struct vt_heatmap *h, const struct vt_heatmap_acc *a, gint64 now_us,
		     uint64_t window)
{
	struct vt_heatmap_col *c = &h->col[h->next];

	memset(c, 0, sizeof(*c));
	c->at_us = now_us;
	c->window = window;
	for (unsigned int i = 0; i < h->nr_bins && i < a->nr; i++) {
		uint64_t best = 0;

		c->mean[i] = a->bytes[i] > 0 ? quantise(a->weight[i] / a->bytes[i]) : 0;
		c->max[i] = quantise(a->max[i]);
		c->tier[i] = VT_HEATMAP_NO_TIER;
		/* the tier with most of the bin's present bytes; the faster on a tie */
		for (unsigned int t = 0; t < h->nr_tiers; t++)
			if (a->tier_bytes[i][t] > best) {
				best = a->tier_bytes[i][t];
				c->tier[i] = (int8_t)t;
			}
	}
	for (unsigned int i = a->nr; i < h->nr_bins; i++)
		c->tier[i] = VT_HEATMAP_NO_TIER;
	h->next = (h->next + 1) % VT_HEATMAP_WINDOWS;
	h->len = MIN(h->len + 1, (unsigned int)VT_HEATMAP_WINDOWS);
}

void vt_heatmap_to_json(const struct vt_heatmap *h, const char *name, uint64_t window_ms,
			gint64 now_us, JsonBuilder *b)
{
	json_builder_begin_object(b);
	vt_json_add_str(b, "name", name);
	vt_json_add_str(b, "space", h->space);
	vt_json_add_u64(b, "bin_bytes", h->bin_bytes);
	vt_json_add_u64(b, "window_ms", window_ms);
	vt_json_add_u64(b, "hot_scale", VT_HEATMAP_SCALE);
	vt_json_begin_arr(b, "tiers");
	for (unsigned int t = 0; t < h->nr_tiers; t++)
		json_builder_add_string_value(b, h->tier_name[t]);
	json_builder_end_array(b);
	vt_json_begin_arr(b, "bins");
	for (unsigned int i = 0; i < h->nr_bins; i++) {
		json_builder_begin_object(b);
		vt_json_add_u64(b, "start", h->bin[i].start);
		vt_json_add_u64(b, "end", h->bin[i].end);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	/* oldest first: column k of windows[] is cells[k] */
	vt_json_begin_arr(b, "windows");
	for (unsigned int k = h->len; k-- > 0;) {
		const struct vt_heatmap_col *c = &h->col[vt_heatmap_col_index(h, k)];

		json_builder_begin_object(b);
		vt_json_add_u64(b, "window", c->window);
		vt_json_add_u64(b, "age_ms", (uint64_t)MAX(now_us - c->at_us, 0) / 1000);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	vt_json_begin_arr(b, "cells");
	for (unsigned int k = h->len; k-- > 0;) {
		const struct vt_heatmap_col *c = &h->col[vt_heatmap_col_index(h, k)];

		json_builder_begin_object(b);
		vt_json_begin_arr(b, "mean");
		for (unsigned int i = 0; i < h->nr_bins; i++)
			json_builder_add_int_value(b, c->mean[i]);
		json_builder_end_array(b);
		vt_json_begin_arr(b, "max");
		for (unsigned int i = 0; i < h->nr_bins; i++)
			json_builder_add_int_value(b, c->max[i]);
		json_builder_end_array(b);
		vt_json_begin_arr(b, "tier");
		for (unsigned int i = 0; i < h->nr_bins; i++)
			json_builder_add_int_value(b, c->tier[i]);
		json_builder_end_array(b);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	json_builder_end_object(b);
}

#define BAD(...) do { \
	g_set_error(error, VT_CORE_ERROR, EINVAL, "heatmap: " __VA_ARGS__); \
	return false; \
} while (0)

static bool get_int(JsonObject *o, const char *k, gint64 min, gint64 max, gint64 *v)
{
	JsonNode *n = o ? json_object_get_member(o, k) : NULL;

	if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64)
		return false;
	*v = json_node_get_int(n);
	return *v >= min && *v <= max;
}

static JsonArray *get_array(JsonObject *o, const char *k, unsigned int max)
{
	JsonNode *n = json_object_get_member(o, k);
	JsonArray *a = n && JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;

	return a && json_array_get_length(a) <= max ? a : NULL;
}

static bool get_ints(JsonObject *o, const char *k, unsigned int n, gint64 min, gint64 max,
		     gint64 *out)
{
	JsonArray *a = get_array(o, k, n);

	if (!a || json_array_get_length(a) != n)
		return false;
	for (unsigned int i = 0; i < n; i++) {
		JsonNode *e = json_array_get_element(a, i);

		if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_INT64)
			return false;
		out[i] = json_node_get_int(e);
		if (out[i] < min || out[i] > max)
			return false;
	}
	return true;
}

bool vt_heatmap_from_json(JsonNode *result, struct vt_heatmap *h, char *name, size_t name_len,
			  GError **error)
{
	JsonObject *o = result && JSON_NODE_HOLDS_OBJECT(result) ? json_node_get_object(result) : NULL;
	JsonArray *tiers, *bins, *wins, *cells;
	gint64 v, vals[VT_HEATMAP_MAX_BINS];
	const char *s;

	memset(h, 0, sizeof(*h));
	if (!o)
		BAD("the result is not an object");
	s = json_object_get_string_member_with_default(o, "name", NULL);
	if (!s || !vt_ctl_name_valid(s))
		BAD("'name' is not a VM name");
	if (name)
		g_strlcpy(name, s, name_len);
	s = json_object_get_string_member_with_default(o, "space", NULL);
	if (!s || (strcmp(s, "gpa") != 0 && strcmp(s, "ram-offset") != 0))
		BAD("'space' must be \"gpa\" or \"ram-offset\"");
	g_strlcpy(h->space, s, sizeof(h->space));
	if (!get_int(o, "hot_scale", VT_HEATMAP_SCALE, VT_HEATMAP_SCALE, &v))
		BAD("'hot_scale' must be %d", VT_HEATMAP_SCALE);
	/* 0 only for a map without bins (a VM without RAM ranges yet) */
	if (!get_int(o, "bin_bytes", 0, G_MAXINT64, &v) || (v & (v - 1)) != 0 ||
	    (v && v < (gint64)VT_HEATMAP_MIN_BIN))
		BAD("'bin_bytes' must be a power of two of at least 2 MiB");
	h->bin_bytes = (uint64_t)v;
	tiers = get_array(o, "tiers", VT_MAX_TIERS);
	if (!tiers)
		BAD("'tiers' must be an array of at most %d names", VT_MAX_TIERS);
	h->nr_tiers = json_array_get_length(tiers);
	for (unsigned int t = 0; t < h->nr_tiers; t++) {
		JsonNode *e = json_array_get_element(tiers, t);

		if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_STRING ||
		    !*json_node_get_string(e) ||
		    strlen(json_node_get_string(e)) >= sizeof(h->tier_name[t]))
			BAD("tier %u: a name of 1..31 bytes", t);
		g_strlcpy(h->tier_name[t], json_node_get_string(e), sizeof(h->tier_name[t]));
	}
	bins = get_array(o, "bins", VT_HEATMAP_MAX_BINS);
	if (!bins)
		BAD("'bins' must be an array of at most %d bins", VT_HEATMAP_MAX_BINS);
	h->nr_bins = json_array_get_length(bins);
	if (h->nr_bins && !h->bin_bytes)
		BAD("'bin_bytes' must be a power of two of at least 2 MiB");
	for (unsigned int i = 0; i < h->nr_bins; i++) {
		JsonNode *e = json_array_get_element(bins, i);
		JsonObject *bo = JSON_NODE_HOLDS_OBJECT(e) ? json_node_get_object(e) : NULL;
		gint64 st, en;

		if (!get_int(bo, "start", 0, G_MAXINT64, &st) || !get_int(bo, "end", 0, G_MAXINT64, &en) ||
		    en <= st || (uint64_t)(en - st) > h->bin_bytes ||
		    (i && (uint64_t)st < h->bin[i - 1].end))
			BAD("bin %u: start < end, at most bin_bytes, after the bin before", i);
		h->bin[i] = (struct vt_heatmap_bin){ (uint64_t)st, (uint64_t)en, 0 };
	}
	wins = get_array(o, "windows", VT_HEATMAP_WINDOWS);
	cells = get_array(o, "cells", VT_HEATMAP_WINDOWS);
	if (!wins || !cells || json_array_get_length(wins) != json_array_get_length(cells))
		BAD("'windows' and 'cells' must be arrays of one length, at most %d",
		    VT_HEATMAP_WINDOWS);
	h->len = json_array_get_length(wins);
	h->next = h->len % VT_HEATMAP_WINDOWS;
	for (unsigned int k = 0; k < h->len; k++) {
		struct vt_heatmap_col *c = &h->col[k];
		JsonNode *w = json_array_get_element(wins, k), *ce = json_array_get_element(cells, k);
		JsonObject *wo = JSON_NODE_HOLDS_OBJECT(w) ? json_node_get_object(w) : NULL;
		JsonObject *co = JSON_NODE_HOLDS_OBJECT(ce) ? json_node_get_object(ce) : NULL;
		gint64 age;

		if (!get_int(wo, "window", 0, G_MAXINT64, &v) ||
		    !get_int(wo, "age_ms", 0, G_MAXINT64 / 1000, &age))
			BAD("window %u: needs 'window' and 'age_ms' (integers >= 0)", k);
		if (k && (uint64_t)v <= h->col[k - 1].window)
			BAD("window %u: windows must be in increasing order", k);
		c->window = (uint64_t)v;
		c->at_us = -age * 1000;
		if (!co)
			BAD("cells %u: not an object", k);
		if (!get_ints(co, "mean", h->nr_bins, 0, VT_HEATMAP_SCALE, vals))
			BAD("cells %u: 'mean' must be %u integers 0..%d", k, h->nr_bins,
			    VT_HEATMAP_SCALE);
		for (unsigned int i = 0; i < h->nr_bins; i++)
			c->mean[i] = (uint16_t)vals[i];
		if (!get_ints(co, "max", h->nr_bins, 0, VT_HEATMAP_SCALE, vals))
			BAD("cells %u: 'max' must be %u integers 0..%d", k, h->nr_bins,
			    VT_HEATMAP_SCALE);
		for (unsigned int i = 0; i < h->nr_bins; i++)
			c->max[i] = (uint16_t)vals[i];
		if (!get_ints(co, "tier", h->nr_bins, VT_HEATMAP_NO_TIER, (gint64)h->nr_tiers - 1, vals))
			BAD("cells %u: 'tier' must be %u tier indices (-1: none)", k, h->nr_bins);
		for (unsigned int i = 0; i < h->nr_bins; i++)
			c->tier[i] = (int8_t)vals[i];
	}
	return true;
}
