// SPDX-License-Identifier: GPL-2.0-or-later
/* Per-VM policy keys: defaults, parsing with reasons, JSON. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_member.h"
#include "json_guard.h"
#include "profiler.h"
#include "tiers.h"
#include "vm_policy.h"
#include "size.h"
#include "host_share.h"
#include "tier_name.h"

#define MIB (1ULL << 20)

static const char *const keys[] = {
	"mode", "dram_limit", "dram_max", "dram_min", "weight", "dram_share", "budget", "window_ms", "sample_ms", "hot_threshold",
	"thrash_windows", "thrash_step", "move_hold", "chunk", "profiler", "tdp_flush", "ctier_age_windows", "placement",
	"tco_alpha", "tiers", "hints", "balloon", "migration_extra", NULL,
};

const char *const *vt_vm_policy_keys(void)
{
	return keys;
}

void vt_vm_policy_default(struct vt_vm_policy *p)
{
	*p = (struct vt_vm_policy){
		.mode = VT_MODE_AUTO,
		.dram_limit_bytes = 0,
		.dram_share = 1.0,
		.weight = VT_SHARE_WEIGHT_DEFAULT,
		.budget_bytes = 128 * MIB,
		.window_ms = 1000,
		.sample_ms = 20,
		.hot_threshold = 0.05,
		.thrash_windows = 4,
		.thrash_step = 0.2,
		.chunk_bytes = 2 * MIB,
		.ctier_age_windows = 3,
		.placement = VT_PLACEMENT_WATERFALL,
		.tco_alpha = 0.5,
	};
	g_strlcpy(p->profiler, "auto", sizeof(p->profiler));
}

/* The names of each enum key's values, in the enum's order (0, 1, ...). */
static const char *const mode_names[] = { "off", "observe", "auto" };
static const char *const placement_names[] = { "waterfall", "tco" };
static const char *const tdp_flush_names[] = { "never", "window" };

static const char *choice_name(const char *const *names, unsigned int n, unsigned int v)
{
	return v < n ? names[v] : "?";
}

const char *vt_mode_name(enum vt_mode mode)
{
	return choice_name(mode_names, G_N_ELEMENTS(mode_names), mode);
}

const char *vt_placement_name(enum vt_placement placement)
{
	return choice_name(placement_names, G_N_ELEMENTS(placement_names), placement);
}

const char *vt_policy_tdp_flush_name(enum vt_policy_tdp_flush flush)
{
	return choice_name(tdp_flush_names, G_N_ELEMENTS(tdp_flush_names), flush);
}

/* @value as the index of one of @names, or an error listing them. */
static bool parse_choice(const char *key, const char *value, const char *const *names,
			 unsigned int n, unsigned int *out, GError **error)
{
	g_autoptr(GString) all = g_string_new(NULL);

	for (unsigned int i = 0; i < n; i++) {
		if (strcmp(value, names[i]) == 0) {
			*out = i;
			return true;
		}
		g_string_append_printf(all, "%s%s", i ? ", " : "", names[i]);
	}
	g_set_error(error, VT_CORE_ERROR, EINVAL, "%s: '%s' is not one of %s", key, value,
		    all->str);
	return false;
}

static bool parse_u64(const char *key, const char *value, uint64_t min, uint64_t max,
		      uint64_t *out, GError **error)
{
	guint64 v;

	if (!g_ascii_string_to_unsigned(value, 10, min, max, &v, NULL)) {
		g_set_error(error, VT_CORE_ERROR, EINVAL,
			    "%s: '%s' is not a whole number in %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT,
			    key, value, (guint64)min, (guint64)max);
		return false;
	}
	*out = v;
	return true;
}

static bool parse_fraction(const char *key, const char *value, double min, double max,
			   double *out, GError **error)
{
	char *end = NULL;
	double v;

	errno = 0;
	v = *value ? g_ascii_strtod(value, &end) : NAN;
	if (!*value || errno || *end || !isfinite(v) || v < min || v > max) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "%s: '%s' is not a number in %g..%g",
			    key, value, min, max);
		return false;
	}
	*out = v;
	return true;
}

/*
 * A size in min..max; a refusal quotes the range in the unit the user typed
 * ("balloon: '1KiB' is out of range 4KiB..1099511627776KiB") and @also, what
 * else the key takes ("none lifts the limit"), when there is such a word.
 */
static bool parse_bytes(const char *key, const char *value, uint64_t min, uint64_t max,
			const char *also, uint64_t *out, GError **error)
{
	g_autoptr(GError) e = NULL;
	uint64_t v;

	if (!vt_parse_size(value, &v, &e)) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "%s: %s%s%s", key, e->message,
			    also ? "; " : "", also ? also : "");
		return false;
	}
	if (v < min || v > max) {
		g_autofree char *lo = vt_size_in_units_of(min, value);
		g_autofree char *hi = vt_size_in_units_of(max, value);

		g_set_error(error, VT_CORE_ERROR, ERANGE, "%s: '%s' is out of range %s..%s%s%s",
			    key, value, lo, hi, also ? "; " : "", also ? also : "");
		return false;
	}
	*out = v;
	return true;
}

/*
 * Constraints between keys: judged on the whole policy once every key of a
 * request is applied, never key by key (else "sample_ms=5000 window_ms=10000"
 * fails while the other order passes).
 */
bool vt_vm_policy_check(const struct vt_vm_policy *p, GError **error)
{
	if (p->sample_ms > p->window_ms) {
		g_set_error(error, VT_CORE_ERROR, EINVAL,
			    "sample_ms (%" G_GUINT64_FORMAT ") must not exceed window_ms (%"
			    G_GUINT64_FORMAT "): lower sample_ms or raise window_ms",
			    (guint64)p->sample_ms, (guint64)p->window_ms);
		return false;
	}
	if (p->dram_limit_bytes && p->dram_min_bytes > p->dram_limit_bytes) {
		g_set_error(error, VT_CORE_ERROR, EINVAL,
			    "dram_min (%" G_GUINT64_FORMAT ") must not exceed dram_max (%"
			    G_GUINT64_FORMAT "): lower dram_min or raise dram_max (none lifts it)",
			    (guint64)p->dram_min_bytes, (guint64)p->dram_limit_bytes);
		return false;
	}
	if (p->balloon_bytes && !p->hints) {
		g_set_error(error, VT_CORE_ERROR, EINVAL,
			    "balloon: asks the guest through its hint channel: set hints=on too");
		return false;
	}
	return true;
}

/*
 * tiers=NAME,NAME,...: tier names by the rule of the config groups
 * (util/tier_name.h; at most VT_MAX_TIERS, no repeats), or "all". Whether
 * the host has them is the engine's check: tiers come and go with nodes.
 */
static bool parse_tiers(const char *value, char *out, size_t len, GError **error)
{
	g_auto(GStrv) names = NULL;
	guint n;

	if (strcmp(value, "all") == 0 || !value[0]) {
		out[0] = '\0';
		return true;
	}
	if (strlen(value) >= len) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "tiers: list longer than %zu characters",
			    len - 1);
		return false;
	}
	names = g_strsplit(value, ",", -1);
	n = g_strv_length(names);
	if (n > VT_MAX_TIERS) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "tiers: more than %d names",
			    VT_MAX_TIERS);
		return false;
	}
	for (guint i = 0; i < n; i++) {
		const char *c = names[i];

		if (!c[0]) {
			g_set_error(error, VT_CORE_ERROR, EINVAL,
				    "tiers: empty name in '%s' (NAME,NAME,... or all)", value);
			return false;
		}
		if (!vt_tier_name_ok(c)) {
			char shown[64];

			vt_text_printable(shown, sizeof(shown), c, strlen(c));
			g_set_error(error, VT_CORE_ERROR, EINVAL,
				    "tiers: '%s' is not a tier name (" VT_TIER_NAME_RULE ")", shown);
			return false;
		}
		for (guint j = 0; j < i; j++)
			if (strcmp(names[i], names[j]) == 0) {
				g_set_error(error, VT_CORE_ERROR, EINVAL,
					    "tiers: '%s' named twice", names[i]);
				return false;
			}
	}
	g_strlcpy(out, value, len);
	return true;
}

/* @s for a message: printable ASCII as is, any other byte as \xNN (at most 64 bytes). */
static char *escaped(const char *s)
{
	GString *out = g_string_new(NULL);

	for (size_t i = 0; s[i] && i < 64; i++)
		if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\')
			g_string_append_c(out, s[i]);
		else
			g_string_append_printf(out, "\\x%02x", (unsigned char)s[i]);
	return g_string_free(out, FALSE);
}

/*
 * A key or value that is not printable ASCII (a pasted no-break space, a
 * control character): refused naming the key and the value, bytes escaped.
 */
static void not_printable(const char *key, const char *value, GError **error)
{
	g_autofree char *k = escaped(key);
	g_autofree char *v = escaped(value);
	bool nbsp = strstr(key, "\xc2\xa0") || strstr(value, "\xc2\xa0");

	g_set_error(error, VT_CORE_ERROR, EINVAL,
		    "%s%s: '%s' is not printable ASCII%s: retype it", vt_text_is_printable(key) ?
		    "" : "policy: key ", k, v, nbsp ? " (\\xc2\\xa0 is a no-break space)" : "");
}

/* One key, checked on its own; cross-key constraints are the caller's. */
static bool set_one(struct vt_vm_policy *p, const char *key, const char *value, GError **error)
{
	struct vt_vm_policy n = *p;
	unsigned int c;

	if (!key || !value) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "policy: missing key or value");
		return false;
	}
	/* errors quote them, and replies and logs carry errors */
	if (!vt_text_is_printable(key) || !vt_text_is_printable(value)) {
		not_printable(key, value, error);
		return false;
	}
	if (strcmp(key, "mode") == 0) {
		if (!parse_choice(key, value, mode_names, G_N_ELEMENTS(mode_names), &c, error))
			return false;
		n.mode = (enum vt_mode)c;
	} else if (strcmp(key, "dram_limit") == 0 || strcmp(key, "dram_max") == 0) {
		if (strcmp(value, "none") == 0)
			n.dram_limit_bytes = 0;
		else if (!parse_bytes(key, value, 2 * MIB, 1ULL << 50, "none lifts the limit",
				      &n.dram_limit_bytes, error))
			return false;
	} else if (strcmp(key, "dram_min") == 0) {
		if (strcmp(value, "0") == 0 || strcmp(value, "none") == 0)
			n.dram_min_bytes = 0;
		else if (!parse_bytes(key, value, 2 * MIB, 1ULL << 50, "0 or none: no min",
				      &n.dram_min_bytes, error))
			return false;
	} else if (strcmp(key, "weight") == 0) {
		uint64_t v;

		if (!parse_u64(key, value, VT_SHARE_WEIGHT_MIN, VT_SHARE_WEIGHT_MAX, &v, error))
			return false;
		n.weight = (unsigned int)v;
	} else if (strcmp(key, "dram_share") == 0) {
		if (!parse_fraction(key, value, 0, 1, &n.dram_share, error))
			return false;
	} else if (strcmp(key, "budget") == 0) {
		if (!parse_bytes(key, value, 2 * MIB, 1ULL << 40, NULL, &n.budget_bytes, error))
			return false;
	} else if (strcmp(key, "migration_extra") == 0) {
		if (strcmp(value, "none") == 0)
			n.migration_extra_bytes = 0;
		else if (!parse_bytes(key, value, 2 * MIB, 1ULL << 50, "none: no extra",
				      &n.migration_extra_bytes, error))
			return false;
	} else if (strcmp(key, "window_ms") == 0) {
		if (!parse_u64(key, value, VT_WINDOW_MS_MIN, 600000, &n.window_ms, error))
			return false;
	} else if (strcmp(key, "sample_ms") == 0) {
		if (!parse_u64(key, value, 1, 10000, &n.sample_ms, error))
			return false;
	} else if (strcmp(key, "hot_threshold") == 0) {
		if (!parse_fraction(key, value, 0, 1, &n.hot_threshold, error))
			return false;
	} else if (strcmp(key, "thrash_windows") == 0) {
		uint64_t v;

		if (!parse_u64(key, value, 0, 1000, &v, error))
			return false;
		n.thrash_windows = (unsigned int)v;
	} else if (strcmp(key, "move_hold") == 0) {
		uint64_t v;

		if (!parse_u64(key, value, 0, 1000, &v, error))
			return false;
		n.move_hold = (unsigned int)v;
	} else if (strcmp(key, "ctier_age_windows") == 0) {
		uint64_t v;

		if (!parse_u64(key, value, 0, 1000, &v, error))
			return false;
		n.ctier_age_windows = (unsigned int)v;
	} else if (strcmp(key, "placement") == 0) {
		if (!parse_choice(key, value, placement_names, G_N_ELEMENTS(placement_names), &c,
				  error))
			return false;
		n.placement = (enum vt_placement)c;
	} else if (strcmp(key, "tdp_flush") == 0) {
		if (!parse_choice(key, value, tdp_flush_names, G_N_ELEMENTS(tdp_flush_names), &c,
				  error))
			return false;
		n.tdp_flush = (enum vt_policy_tdp_flush)c;
	} else if (strcmp(key, "tco_alpha") == 0) {
		if (!parse_fraction(key, value, 0, 1, &n.tco_alpha, error))
			return false;
	} else if (strcmp(key, "hints") == 0) {
		if (strcmp(value, "on") == 0)
			n.hints = true;
		else if (strcmp(value, "off") == 0)
			n.hints = false;
		else {
			g_set_error(error, VT_CORE_ERROR, EINVAL, "hints: '%s' is not on or off", value);
			return false;
		}
	} else if (strcmp(key, "balloon") == 0) {
		if (strcmp(value, "0") == 0 || strcmp(value, "none") == 0)
			n.balloon_bytes = 0;
		else if (!parse_bytes(key, value, 4096, 1ULL << 50, "0 or none: no balloon",
				      &n.balloon_bytes, error))
			return false;
	} else if (strcmp(key, "thrash_step") == 0) {
		if (!parse_fraction(key, value, 0, 1, &n.thrash_step, error))
			return false;
	} else if (strcmp(key, "chunk") == 0) {
		if (!parse_bytes(key, value, 2 * MIB, 1ULL << 30, "a multiple of 2MiB",
			       &n.chunk_bytes, error))
			return false;
		if (n.chunk_bytes % (2 * MIB)) {
			g_set_error(error, VT_CORE_ERROR, EINVAL,
				    "chunk: '%s' is not a multiple of 2 MiB", value);
			return false;
		}
	} else if (strcmp(key, "tiers") == 0) {
		if (!parse_tiers(value, n.tiers, sizeof(n.tiers), error))
			return false;
	} else if (strcmp(key, "profiler") == 0) {
		if (strcmp(value, "auto") != 0 && strcmp(value, "damon-kernel") != 0 &&
		    !vt_profiler_lookup(value)) {
			g_autofree char *list = g_strjoinv(", ", (char **)vt_profiler_names());

			g_set_error(error, VT_CORE_ERROR, EINVAL,
				    "profiler: unknown '%s' (auto, damon-kernel or one of: %s)", value, list);
			return false;
		}
		if (strlen(value) >= sizeof(n.profiler)) {
			g_set_error(error, VT_CORE_ERROR, EINVAL, "profiler: name too long");
			return false;
		}
		g_strlcpy(n.profiler, value, sizeof(n.profiler));
	} else {
		g_autofree char *list = g_strjoinv(", ", (char **)keys);

		g_set_error(error, VT_CORE_ERROR, EINVAL, "unknown policy key '%s' (known: %s)", key,
			    list);
		return false;
	}
	*p = n;
	return true;
}

bool vt_vm_policy_set(struct vt_vm_policy *p, const char *key, const char *value, GError **error)
{
	struct vt_vm_policy n = *p;

	if (!set_one(&n, key, value, error) || !vt_vm_policy_check(&n, error))
		return false;
	*p = n;
	return true;
}

/*
 * dram_max is dram_limit's other name: one field. Both in one request are
 * taken when they say the same, else refused naming both.
 */
static bool same_limit(const char *key_a, const char *value_a, const char *key_b,
		       const char *value_b, uint64_t bytes_b, GError **error)
{
	struct vt_vm_policy a;

	vt_vm_policy_default(&a);
	if (set_one(&a, key_a, value_a, NULL) && a.dram_limit_bytes == bytes_b)
		return true;
	g_set_error(error, VT_CORE_ERROR, EINVAL,
		    "%s: '%s' and %s: '%s' differ: dram_max and dram_limit are one key "
		    "(two names), give one", key_a, value_a, key_b, value_b);
	return false;
}

bool vt_vm_policy_apply(struct vt_vm_policy *p, char *const *assignments, unsigned int n,
			GError **error)
{
	struct vt_vm_policy tmp = *p;
	const char *max_key = NULL, *max_value = NULL;	/* dram_limit or dram_max, as given */

	if (n == 0) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "policy: no KEY=VALUE given");
		return false;
	}
	for (unsigned int i = 0; i < n; i++) {
		const char *eq = assignments[i] ? strchr(assignments[i], '=') : NULL;
		g_autofree char *key = NULL;

		if (!eq || eq == assignments[i]) {
			char shown[64];

			g_set_error(error, VT_CORE_ERROR, EINVAL, "policy: '%s' is not KEY=VALUE",
				    assignments[i] ? vt_text_printable(shown, sizeof(shown), assignments[i],
								       strlen(assignments[i])) : "(null)");
			return false;
		}
		key = g_strndup(assignments[i], (gsize)(eq - assignments[i]));
		if (!set_one(&tmp, key, eq + 1, error))
			return false;
		if (strcmp(key, "dram_limit") && strcmp(key, "dram_max"))
			continue;
		if (!max_key || strcmp(max_key, key) == 0) {
			max_key = strcmp(key, "dram_max") ? "dram_limit" : "dram_max";
			max_value = eq + 1;
		} else if (!same_limit(max_key, max_value, key, eq + 1, tmp.dram_limit_bytes, error)) {
			return false;
		}
	}
	if (!vt_vm_policy_check(&tmp, error))
		return false;
	*p = tmp;
	return true;
}

uint64_t vt_vm_policy_dram_allowance(const struct vt_vm_policy *p, uint64_t ram_bytes)
{
	uint64_t share = (uint64_t)((double)ram_bytes * p->dram_share);

	if (p->dram_limit_bytes && p->dram_limit_bytes < share)
		return p->dram_limit_bytes;
	return share;
}

bool vt_vm_policy_live(const struct vt_vm_policy *a, const struct vt_vm_policy *b)
{
	struct vt_vm_policy x = *a;

	/*
	 * @b's live keys, and its strings (compared as strings: bytes past the
	 * end may differ), over a copy of @a; whatever else differs, a key added
	 * later among it, restarts the engine.
	 */
	if (strcmp(a->profiler, b->profiler) != 0 || strcmp(a->tiers, b->tiers) != 0)
		return false;
	memcpy(x.profiler, b->profiler, sizeof(x.profiler));
	memcpy(x.tiers, b->tiers, sizeof(x.tiers));
	x.dram_limit_bytes = b->dram_limit_bytes;
	x.dram_min_bytes = b->dram_min_bytes;
	x.weight = b->weight;
	x.dram_share = b->dram_share;
	x.budget_bytes = b->budget_bytes;
	x.hot_threshold = b->hot_threshold;
	x.thrash_windows = b->thrash_windows;
	x.thrash_step = b->thrash_step;
	x.move_hold = b->move_hold;
	x.ctier_age_windows = b->ctier_age_windows;
	x.placement = b->placement;
	x.tco_alpha = b->tco_alpha;
	x.balloon_bytes = b->balloon_bytes;
	x.migration_extra_bytes = b->migration_extra_bytes;
	return memcmp(&x, b, sizeof(x)) == 0;
}

void vt_vm_policy_to_json(const struct vt_vm_policy *p, JsonBuilder *b)
{
	json_builder_begin_object(b);
	vt_json_add_str(b, "mode", vt_mode_name(p->mode));
	vt_json_add_u64(b, "dram_limit", p->dram_limit_bytes);
	vt_json_add_u64(b, "dram_max", p->dram_limit_bytes);
	vt_json_add_u64(b, "dram_min", p->dram_min_bytes);
	vt_json_add_int(b, "weight", p->weight);
	vt_json_add_dbl(b, "dram_share", p->dram_share);
	vt_json_add_u64(b, "budget", p->budget_bytes);
	vt_json_add_u64(b, "window_ms", p->window_ms);
	vt_json_add_u64(b, "sample_ms", p->sample_ms);
	vt_json_add_dbl(b, "hot_threshold", p->hot_threshold);
	vt_json_add_int(b, "thrash_windows", p->thrash_windows);
	vt_json_add_int(b, "ctier_age_windows", p->ctier_age_windows);
	vt_json_add_dbl(b, "thrash_step", p->thrash_step);
	vt_json_add_int(b, "move_hold", p->move_hold);
	vt_json_add_u64(b, "chunk", p->chunk_bytes);
	vt_json_add_str(b, "profiler", p->profiler);
	vt_json_add_str(b, "tdp_flush", vt_policy_tdp_flush_name(p->tdp_flush));
	vt_json_add_str(b, "placement", vt_placement_name(p->placement));
	vt_json_add_dbl(b, "tco_alpha", p->tco_alpha);
	vt_json_add_str(b, "tiers", p->tiers[0] ? p->tiers : "all");
	vt_json_add_str(b, "hints", p->hints ? "on" : "off");
	vt_json_add_u64(b, "balloon", p->balloon_bytes);
	vt_json_add_u64(b, "migration_extra", p->migration_extra_bytes);
	json_builder_end_object(b);
}

bool vt_ctl_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n >= VT_CTL_MAX_NAME || name[0] == '-' || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!g_ascii_isalnum(name[i]) && !strchr("._-", name[i]))
			return false;
	return true;
}
