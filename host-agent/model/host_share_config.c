// SPDX-License-Identifier: GPL-2.0-or-later
/* [host]: the DRAM budget of host-wide sharing, its step and dead band. */
#include <errno.h>
#include <string.h>

#include "error_domain.h"
#include "host_share_config.h"
#include "json_guard.h"
#include "size.h"

#define MIB (1ULL << 20)
#define SIZE_MIN (2 * MIB)
#define SIZE_MAX_BYTES (1ULL << 50)

static const char *const host_keys[] = { "dram_budget", "share_step", "share_deadband", "share_hold",
					   NULL };

/* A size of [host] @key in SIZE_MIN..1 PiB; @what names it in the message. */
static bool host_size(const char *key, const char *what, const char *text, uint64_t *out,
		      GError **error)
{
	g_autoptr(GError) e = NULL;
	char shown[96];

	vt_text_printable(shown, sizeof(shown), text, strlen(text));
	if (!vt_parse_size(text, out, &e)) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "[host] %s: %s%s", key, what, e->message);
		return false;
	}
	if (*out < SIZE_MIN || *out > SIZE_MAX_BYTES) {
		g_set_error(error, VT_CORE_ERROR, ERANGE,
			    "[host] %s: %s'%s' is out of range 2MiB..1PiB", key, what, shown);
		return false;
	}
	return true;
}

/* "0:12G,1:4G": each NODE:SIZE, a node once. */
static bool per_node(const char *text, struct vt_host_share_config *c, GError **error)
{
	g_auto(GStrv) items = g_strsplit(text, ",", -1);

	for (unsigned int i = 0; items[i]; i++) {
		const char *colon = strchr(items[i], ':');
		g_autofree char *node_text = NULL;
		g_autofree char *what = NULL;
		char shown[96];
		guint64 node;

		vt_text_printable(shown, sizeof(shown), items[i], strlen(items[i]));
		if (!colon) {
			g_set_error(error, VT_CORE_ERROR, EINVAL,
				    "[host] dram_budget: '%s' is not NODE:SIZE (a budget per "
				    "node is NODE:SIZE,NODE:SIZE,...; one for the host is SIZE)",
				    shown);
			return false;
		}
		node_text = g_strstrip(g_strndup(items[i], (gsize)(colon - items[i])));
		if (!g_ascii_string_to_unsigned(node_text, 10, 0, VT_MAX_NODES - 1, &node, NULL)) {
			g_set_error(error, VT_CORE_ERROR, EINVAL,
				    "[host] dram_budget: '%s': the node is not a number in 0..%d",
				    shown, VT_MAX_NODES - 1);
			return false;
		}
		for (unsigned int j = 0; j < c->nr_nodes; j++)
			if (c->node[j] == (int)node) {
				g_set_error(error, VT_CORE_ERROR, EINVAL,
					    "[host] dram_budget: node %u named twice",
					    (unsigned int)node);
				return false;
			}
		what = g_strdup_printf("node %u: ", (unsigned int)node);
		if (!host_size("dram_budget", what, colon + 1, &c->node_budget[c->nr_nodes], error))
			return false;
		c->node[c->nr_nodes++] = (int)node;
		c->budget += c->node_budget[c->nr_nodes - 1];
	}
	return true;
}

bool vt_host_share_config_parse(GKeyFile *config, struct vt_host_share_config *out,
				GError **error)
{
	struct vt_host_share_config c = { 0 };
	g_auto(GStrv) keys = NULL;
	g_autofree char *budget = NULL, *step = NULL, *deadband = NULL, *hold = NULL;

	*out = c;
	if (!config || !g_key_file_has_group(config, "host"))
		return true;
	keys = g_key_file_get_keys(config, "host", NULL, NULL);
	for (unsigned int i = 0; keys && keys[i]; i++)
		if (!g_strv_contains(host_keys, keys[i])) {
			char shown[96];

			vt_text_printable(shown, sizeof(shown), keys[i], strlen(keys[i]));
			g_set_error(error, VT_CORE_ERROR, EINVAL,
				    "[host]: unknown key '%s' (dram_budget, share_step, "
				    "share_deadband, share_hold)", shown);
			return false;
		}
	budget = g_key_file_get_value(config, "host", "dram_budget", NULL);
	step = g_key_file_get_value(config, "host", "share_step", NULL);
	deadband = g_key_file_get_value(config, "host", "share_deadband", NULL);
	hold = g_key_file_get_value(config, "host", "share_hold", NULL);
	if (!budget) {
		if (step || deadband || hold) {
			g_set_error(error, VT_CORE_ERROR, EINVAL,
				    "[host]: %s without dram_budget: set dram_budget = SIZE or "
				    "NODE:SIZE,... (or remove [host]: no sharing)",
				    step ? "share_step" : deadband ? "share_deadband" : "share_hold");
			return false;
		}
		return true;	/* an empty [host]: off */
	}
	if (strchr(budget, ':') ? !per_node(budget, &c, error) :
	    !host_size("dram_budget", "", budget, &c.budget, error))
		return false;
	c.step = MIN(c.budget / 16, VT_SHARE_STEP_MAX_DEFAULT) & ~(SIZE_MIN - 1);
	c.step = MAX(c.step, SIZE_MIN);
	if (step && !host_size("share_step", "", step, &c.step, error))
		return false;
	c.deadband = MIN(VT_SHARE_DEADBAND_DEFAULT, c.step);
	if (deadband) {
		if (strcmp(deadband, "0") == 0)
			c.deadband = 0;
		else if (!host_size("share_deadband", "", deadband, &c.deadband, error))
			return false;
	}
	c.hold = VT_SHARE_HOLD_DEFAULT;
	if (hold) {
		guint64 v;

		if (!g_ascii_string_to_unsigned(hold, 10, 0, VT_SHARE_HOLD_MAX, &v, NULL)) {
			char shown[96];

			vt_text_printable(shown, sizeof(shown), hold, strlen(hold));
			g_set_error(error, VT_CORE_ERROR, EINVAL,
				    "[host] share_hold: '%s' is not a number of windows from 0 to %u "
				    "(0: no hold)", shown, VT_SHARE_HOLD_MAX);
			return false;
		}
		c.hold = (uint32_t)v;
	}
	if (c.deadband > c.step) {
		g_set_error(error, VT_CORE_ERROR, EINVAL,
			    "[host] share_deadband (%" G_GUINT64_FORMAT ") must not exceed "
			    "share_step (%" G_GUINT64_FORMAT ")", (guint64)c.deadband,
			    (guint64)c.step);
		return false;
	}
	c.on = true;
	*out = c;
	return true;
}

bool vt_host_share_config_check_nodes(const struct vt_host_share_config *c,
				      const struct vt_tiers *tiers, GError **error)
{
	for (unsigned int i = 0; c->on && i < c->nr_nodes; i++) {
		int n = c->node[i];
		int t = n >= 0 && n < VT_MAX_NODES ? tiers->node_tier[n] : -1;

		if (t != 0) {
			GString *dram = g_string_new(NULL);

			for (unsigned int j = 0; tiers->nr && j < tiers->tier[0].nr_nodes; j++)
				g_string_append_printf(dram, "%s%d", j ? "," : "",
						       tiers->tier[0].nodes[j]);
			if (t < 0)
				g_set_error(error, VT_CORE_ERROR, EINVAL,
					    "[host] dram_budget: node %d is not a memory node of "
					    "this host's tiers (DRAM nodes: %s)", n,
					    dram->len ? dram->str : "none");
			else
				g_set_error(error, VT_CORE_ERROR, EINVAL,
					    "[host] dram_budget: node %d is on tier %s, not a DRAM "
					    "node (the fastest tier, %s: nodes %s)", n,
					    tiers->tier[t].name, tiers->tier[0].name, dram->str);
			g_string_free(dram, TRUE);
			return false;
		}
	}
	return true;
}
