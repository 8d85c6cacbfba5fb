// SPDX-License-Identifier: GPL-2.0-or-later
/* Tier discovery from sysfs and the config file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json_member.h"
#include "json_guard.h"
#include "tiers.h"
#include "error_domain.h"
#include "sysfs.h"
#include "tier_name.h"

#define NODE_DIR "sys/devices/system/node"
#define TIER_DIR "sys/devices/virtual/memory_tiering"

bool vt_parse_nodelist(const char *text, int *nodes, unsigned int *nr)
{
	g_auto(GStrv) parts = NULL;
	g_autofree char *s = g_strstrip(g_strdup(text));

	*nr = 0;
	if (!*s)
		return true;
	parts = g_strsplit(s, ",", 0);
	for (unsigned int i = 0; parts[i]; i++) {
		char *dash = strchr(parts[i], '-');
		guint64 a, b;

		if (dash)
			*dash = '\0';
		if (!g_ascii_string_to_unsigned(parts[i], 10, 0, VT_MAX_NODES - 1, &a, NULL))
			return false;
		b = a;
		if (dash && !g_ascii_string_to_unsigned(dash + 1, 10, a, VT_MAX_NODES - 1, &b, NULL))
			return false;
		for (guint64 n = a; n <= b; n++) {
			for (unsigned int j = 0; j < *nr; j++)
				if (nodes[j] == (int)n)
					return false;
			if (*nr >= VT_MAX_NODES)
				return false;
			nodes[(*nr)++] = (int)n;
		}
	}
	return true;
}

/* "Node 0 MemTotal:  123 kB" from nodeN/meminfo. */
static uint64_t node_meminfo(const char *root, int node, const char *key)
{
	g_autofree char *text = vt_sysfs_read("%s/" NODE_DIR "/node%d/meminfo", root, node);
	g_autofree char *pat = g_strdup_printf(" %s:", key);
	const char *p = text ? strstr(text, pat) : NULL;
	guint64 kb;

	if (!p)
		return 0;
	p += strlen(pat);
	kb = g_ascii_strtoull(p, NULL, 10);
	return kb << 10;
}

static unsigned int node_latency(const char *root, int node)
{
	g_autofree char *lat = vt_sysfs_read("%s/" NODE_DIR "/node%d/access0/initiators/read_latency",
					     root, node);
	g_autofree char *dist = NULL;
	g_auto(GStrv) d = NULL;
	guint64 v;

	if (lat && g_ascii_string_to_unsigned(lat, 10, 1, 1000000, &v, NULL))
		return (unsigned int)v;
	/* no HMAT: 10 x the SLIT distance from node 0 (10 = local) */
	dist = vt_sysfs_read("%s/" NODE_DIR "/node%d/distance", root, node);
	if (!dist)
		return 100;
	d = g_strsplit(dist, " ", 0);
	if (d[0] && g_ascii_string_to_unsigned(d[0], 10, 1, 255, &v, NULL))
		return (unsigned int)v * 10;
	return 100;
}

static int cmp_tier(const void *a, const void *b)
{
	const struct vt_tier *x = a, *y = b;

	if (x->latency_ns != y->latency_ns)
		return x->latency_ns < y->latency_ns ? -1 : 1;
	return x->kernel_tier - y->kernel_tier;
}

static void map_nodes(struct vt_tiers *t)
{
	for (unsigned int i = 0; i < VT_MAX_NODES; i++)
		t->node_tier[i] = -1;
	for (unsigned int i = 0; i < t->nr; i++)
		for (unsigned int j = 0; j < t->tier[i].nr_nodes; j++)
			t->node_tier[t->tier[i].nodes[j]] = (int)i;
}

static void fill_node_facts(struct vt_tiers *t)
{
	for (unsigned int i = 0; i < t->nr; i++) {
		struct vt_tier *tr = &t->tier[i];
		unsigned int lat = 0;

		tr->capacity_bytes = 0;
		for (unsigned int j = 0; j < tr->nr_nodes; j++) {
			tr->capacity_bytes += node_meminfo(t->root, tr->nodes[j], "MemTotal");
			lat = MAX(lat, node_latency(t->root, tr->nodes[j]));
		}
		if (!tr->latency_ns)
			tr->latency_ns = lat;
	}
	vt_tiers_refresh(t);
}

static bool from_sysfs(struct vt_tiers *t, GError **error)
{
	g_autofree char *has_mem = vt_sysfs_read("%s/" NODE_DIR "/has_memory", t->root);
	g_autofree char *tdir = g_build_filename(t->root, TIER_DIR, NULL);
	int nodes[VT_MAX_NODES];
	unsigned int nr;
	GDir *dir;
	const char *name;

	if (!has_mem || !vt_parse_nodelist(has_mem, nodes, &nr) || nr == 0) {
		g_set_error(error, VT_CORE_ERROR, ENOENT,
			    "tiers: cannot read %s/" NODE_DIR "/has_memory (no NUMA sysfs?)", t->root);
		return false;
	}
	dir = g_dir_open(tdir, 0, NULL);
	if (dir) {
		while ((name = g_dir_read_name(dir)) && t->nr < VT_MAX_TIERS) {
			g_autofree char *list = NULL;
			struct vt_tier *tr;
			guint64 id;

			if (!g_str_has_prefix(name, "memory_tier") ||
			    !g_ascii_string_to_unsigned(name + 11, 10, 0, 100000, &id, NULL))
				continue;
			list = vt_sysfs_read("%s/" TIER_DIR "/%s/nodelist", t->root, name);
			tr = &t->tier[t->nr];
			memset(tr, 0, sizeof(*tr));
			if (!list || !vt_parse_nodelist(list, tr->nodes, &tr->nr_nodes)) {
				g_dir_close(dir);
				g_set_error(error, VT_CORE_ERROR, EPROTO,
					    "tiers: malformed %s/nodelist", name);
				return false;
			}
			if (!tr->nr_nodes)
				continue;
			tr->kernel_tier = (int)id;
			g_strlcpy(tr->source, "sysfs", sizeof(tr->source));
			t->nr++;
		}
		g_dir_close(dir);
	}
	if (t->nr == 0) {
		/* no memory_tiering: one tier per node with memory, by latency */
		for (unsigned int i = 0; i < nr && t->nr < VT_MAX_TIERS; i++) {
			struct vt_tier *tr = &t->tier[t->nr++];

			memset(tr, 0, sizeof(*tr));
			tr->nodes[0] = nodes[i];
			tr->nr_nodes = 1;
			tr->kernel_tier = -1;
			g_strlcpy(tr->source, "sysfs", sizeof(tr->source));
		}
	}
	fill_node_facts(t);
	qsort(t->tier, t->nr, sizeof(t->tier[0]), cmp_tier);
	map_nodes(t);	/* after the sort: node -> index of its tier, fastest = 0 */
	for (unsigned int i = 0; i < t->nr; i++) {
		/* default price table: DRAM 3 USD/GiB, each slower tier half the one above */
		t->tier[i].price_usd_gib = 3.0 / (double)(1u << i);
		if (i == 0)
			g_strlcpy(t->tier[i].name, "dram", sizeof(t->tier[i].name));
		else
			g_snprintf(t->tier[i].name, sizeof(t->tier[i].name), "tier%u", i);
	}
	return true;
}

bool vt_tier_name_valid(const char *name)
{
	return vt_tier_name_ok(name);
}

static bool from_config(struct vt_tiers *t, GKeyFile *config, GError **error)
{
	g_auto(GStrv) groups = g_key_file_get_groups(config, NULL);
	struct vt_tiers n = { .nr = 0 };
	bool seen[VT_MAX_NODES] = { false };

	g_strlcpy(n.root, t->root, sizeof(n.root));
	for (unsigned int i = 0; groups[i]; i++) {
		g_auto(GStrv) keys = NULL;
		struct vt_tier *tr;
		const char *name;

		/* [ctier.NAME]: compressed tiers (vt_ctier_spec_parse()); [policy]: VM
		 * defaults (vt_daemon_load_ctiers()); [host]: DRAM sharing
		 * (host_share_config.h); [libvirt], [metrics]: vtierd's */
		if (g_str_has_prefix(groups[i], "ctier.") || g_str_has_prefix(groups[i], "remote.") ||
		    strcmp(groups[i], "policy") == 0 || strcmp(groups[i], "host") == 0 ||
		    strcmp(groups[i], "libvirt") == 0 || strcmp(groups[i], "metrics") == 0)
			continue;
		if (!g_str_has_prefix(groups[i], "tier.")) {
			char shown[80];

			vt_text_printable(shown, sizeof(shown), groups[i], strlen(groups[i]));
			g_set_error(error, VT_CORE_ERROR, EINVAL,
				    "config: unknown group [%s] (known: [tier.NAME], [ctier.NAME], "
				    "[remote.NAME], [policy], [host], "
				    "[libvirt], [metrics]): "
				    "fix its spelling or remove it", shown);
			return false;
		}
		name = groups[i] + 5;
		if (!vt_tier_name_valid(name)) {
			char shown[80];

			vt_text_printable(shown, sizeof(shown), groups[i], strlen(groups[i]));
			g_set_error(error, VT_CORE_ERROR, EINVAL,
				    "config [%s]: bad tier name: use " VT_TIER_NAME_RULE, shown);
			return false;
		}
		if (n.nr >= VT_MAX_TIERS) {
			g_set_error(error, VT_CORE_ERROR, E2BIG, "config: more than %d tiers",
				    VT_MAX_TIERS);
			return false;
		}
		tr = &n.tier[n.nr++];
		g_strlcpy(tr->name, name, sizeof(tr->name));
		g_strlcpy(tr->source, "config", sizeof(tr->source));
		tr->kernel_tier = -1;
		tr->price_usd_gib = -1;
		keys = g_key_file_get_keys(config, groups[i], NULL, NULL);
		for (unsigned int k = 0; keys && keys[k]; k++) {
			g_autofree char *v = g_key_file_get_value(config, groups[i], keys[k], NULL);
			char *end = NULL;
			guint64 u;

			char shown[64];		/* the value or key, printable, for errors */

			if (!v)
				v = g_strdup("");
			vt_text_printable(shown, sizeof(shown), v, strlen(v));
			if (strcmp(keys[k], "nodes") == 0) {
				if (!vt_parse_nodelist(v, tr->nodes, &tr->nr_nodes) || !tr->nr_nodes) {
					g_set_error(error, VT_CORE_ERROR, EINVAL,
						    "config [%s] nodes: '%s' is not a node list like 1,2 "
						    "or 1-3", groups[i], shown);
					return false;
				}
			} else if (strcmp(keys[k], "latency_ns") == 0) {
				if (!g_ascii_string_to_unsigned(v, 10, 1, 1000000, &u, NULL)) {
					g_set_error(error, VT_CORE_ERROR, EINVAL,
						    "config [%s] latency_ns: '%s' is not 1..1000000",
						    groups[i], shown);
					return false;
				}
				tr->latency_ns = (unsigned int)u;
			} else if (strcmp(keys[k], "price_usd_per_gib") == 0) {
				tr->price_usd_gib = *v ? g_ascii_strtod(v, &end) : -1;
				if (!end || *end || !(tr->price_usd_gib >= 0 &&
						      tr->price_usd_gib <= 1e6)) {
					g_set_error(error, VT_CORE_ERROR, EINVAL,
						    "config [%s] price_usd_per_gib: '%s' is not a "
						    "number in 0..1e6", groups[i], shown);
					return false;
				}
			} else {
				vt_text_printable(shown, sizeof(shown), keys[k], strlen(keys[k]));
				g_set_error(error, VT_CORE_ERROR, EINVAL,
					    "config [%s]: unknown key '%s' (nodes, latency_ns, "
					    "price_usd_per_gib)", groups[i], shown);
				return false;
			}
		}
		if (!tr->nr_nodes) {
			g_set_error(error, VT_CORE_ERROR, EINVAL, "config [%s]: needs nodes=", groups[i]);
			return false;
		}
		for (unsigned int j = 0; j < tr->nr_nodes; j++) {
			g_autofree char *d = g_strdup_printf("%s/" NODE_DIR "/node%d", t->root,
							     tr->nodes[j]);

			if (seen[tr->nodes[j]]) {
				g_set_error(error, VT_CORE_ERROR, EINVAL,
					    "config [%s]: node %d is already in another tier",
					    groups[i], tr->nodes[j]);
				return false;
			}
			seen[tr->nodes[j]] = true;
			if (!g_file_test(d, G_FILE_TEST_IS_DIR)) {
				g_set_error(error, VT_CORE_ERROR, ENOENT,
					    "config [%s]: node %d does not exist on this host",
					    groups[i], tr->nodes[j]);
				return false;
			}
		}
	}
	if (n.nr == 0)
		return true;	/* no [tier.*] groups: keep what sysfs said */
	fill_node_facts(&n);
	map_nodes(&n);
	for (unsigned int i = 0; i < n.nr; i++)
		if (n.tier[i].price_usd_gib < 0)
			n.tier[i].price_usd_gib = 3.0 / (double)(1u << i);
	/* config order is the tier order, fastest first */
	*t = n;
	return true;
}

bool vt_tiers_discover(struct vt_tiers *t, const char *root, GKeyFile *config, GError **error)
{
	memset(t, 0, sizeof(*t));
	g_strlcpy(t->root, root ? root : "/", sizeof(t->root));
	if (!from_sysfs(t, error))
		return false;
	if (config && !from_config(t, config, error))
		return false;
	return true;
}

void vt_tiers_refresh(struct vt_tiers *t)
{
	for (unsigned int i = 0; i < t->nr; i++) {
		t->tier[i].free_bytes = 0;
		for (unsigned int j = 0; j < t->tier[i].nr_nodes; j++) {
			int node = t->tier[i].nodes[j];
			uint64_t free_bytes = node_meminfo(t->root, node, "MemFree");

			if (node >= 0 && node < VT_MAX_NODES)
				t->node_free_bytes[node] = free_bytes;
			t->tier[i].free_bytes += free_bytes;
		}
	}
}

int vt_tiers_roomiest_node(const struct vt_tiers *t, unsigned int tier)
{
	const struct vt_tier *tr = &t->tier[tier];
	uint64_t best = 0;
	int node = tr->nodes[0];

	for (unsigned int j = 0; j < tr->nr_nodes; j++)
		if (tr->nodes[j] >= 0 && tr->nodes[j] < VT_MAX_NODES &&
		    t->node_free_bytes[tr->nodes[j]] > best) {
			best = t->node_free_bytes[tr->nodes[j]];
			node = tr->nodes[j];
		}
	return node;
}

int vt_tiers_roomiest_node_in(const struct vt_tiers *t, unsigned int tier, uint64_t mask)
{
	const struct vt_tier *tr = &t->tier[tier];
	uint64_t best = 0;
	int node = -1;

	for (unsigned int j = 0; j < tr->nr_nodes; j++) {
		int n = tr->nodes[j];

		if (n < 0 || n >= VT_MAX_NODES || !(mask & (1ULL << n)))
			continue;
		if (node < 0 || t->node_free_bytes[n] > best) {
			best = t->node_free_bytes[n];
			node = n;
		}
	}
	return node;
}

uint64_t vt_tiers_node_mask(const struct vt_tiers *t, unsigned int tier)
{
	uint64_t mask = 0;

	for (unsigned int j = 0; tier < t->nr && j < t->tier[tier].nr_nodes; j++)
		if (t->tier[tier].nodes[j] >= 0 && t->tier[tier].nodes[j] < VT_MAX_NODES)
			mask |= 1ULL << t->tier[tier].nodes[j];
	return mask;
}

bool vt_parse_mems_allowed(const char *status, uint64_t *mask)
{
	static const char key[] = "Mems_allowed_list:";
	int nodes[VT_MAX_NODES];
	unsigned int nr = 0;
	const char *line = status;
	g_autofree char *list = NULL;

	/* the key at the start of a line */
	while (line && strncmp(line, key, sizeof(key) - 1) != 0) {
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	if (!line)
		return false;
	line += sizeof(key) - 1;
	list = g_strndup(line, strcspn(line, "\n"));
	if (!vt_parse_nodelist(list, nodes, &nr) || nr == 0)
		return false;
	*mask = 0;
	for (unsigned int i = 0; i < nr; i++)
		*mask |= 1ULL << nodes[i];
	return true;
}

int vt_tiers_of_node(const struct vt_tiers *t, int node)
{
	return node >= 0 && node < VT_MAX_NODES ? t->node_tier[node] : -1;
}

void vt_tiers_to_json(const struct vt_tiers *t, JsonBuilder *b)
{
	json_builder_begin_array(b);
	vt_tiers_members_to_json(t, b);
	json_builder_end_array(b);
}

void vt_tiers_members_to_json(const struct vt_tiers *t, JsonBuilder *b)
{
	for (unsigned int i = 0; i < t->nr; i++) {
		const struct vt_tier *tr = &t->tier[i];

		json_builder_begin_object(b);
		vt_json_add_str(b, "name", tr->name);
		vt_json_begin_arr(b, "nodes");
		for (unsigned int j = 0; j < tr->nr_nodes; j++)
			json_builder_add_int_value(b, tr->nodes[j]);
		json_builder_end_array(b);
		vt_json_add_int(b, "kernel_tier", tr->kernel_tier);
		vt_json_add_u64(b, "capacity_bytes", tr->capacity_bytes);
		vt_json_add_u64(b, "free_bytes", tr->free_bytes);
		vt_json_add_int(b, "latency_ns", tr->latency_ns);
		vt_json_add_dbl(b, "price_usd_per_gib", tr->price_usd_gib);
		vt_json_add_str(b, "source", tr->source);
		json_builder_end_object(b);
	}
}
