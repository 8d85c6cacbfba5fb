/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host's memory tiers, fastest first: discovered from sysfs
 * (memory_tiering, node distances, HMAT access0 attributes) and overridable
 * from the [tier.NAME] groups of the config file. Each tier has NUMA nodes, a
 * capacity, a latency class and a price.
 */
#ifndef VTIER_CORE_TIERS_H
#define VTIER_CORE_TIERS_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#define VT_MAX_NODES 64
#define VT_MAX_TIERS 8

struct vt_tier {
	char name[32];
	int nodes[VT_MAX_NODES];
	unsigned int nr_nodes;
	int kernel_tier;		/* memory_tierN, or -1 */
	uint64_t capacity_bytes;	/* MemTotal of its nodes */
	uint64_t free_bytes;		/* MemFree of its nodes, at the last refresh */
	unsigned int latency_ns;	/* HMAT read latency, else 10 x SLIT distance */
	double price_usd_gib;
	char source[16];		/* "sysfs" or "config" */
};

struct vt_tiers {
	struct vt_tier tier[VT_MAX_TIERS];
	unsigned int nr;
	int node_tier[VT_MAX_NODES];	/* node -> tier index, -1 when none */
	uint64_t node_free_bytes[VT_MAX_NODES];	/* MemFree per node, at the last refresh */
	char root[256];			/* sysfs root ("/" normally; a tree in tests) */
};

/* Discover from @root (e.g. "/"); apply @config groups [tier.NAME] when non-NULL. */
bool vt_tiers_discover(struct vt_tiers *t, const char *root, GKeyFile *config, GError **error);
/*
 * Re-read MemFree of every tier's nodes (one read of each node's meminfo):
 * the engine calls it once per window, everything else in the window uses
 * tier[].free_bytes and node_free_bytes[].
 */
void vt_tiers_refresh(struct vt_tiers *t);
/* The node of tier @t with the most free memory at the last refresh. */
int vt_tiers_roomiest_node(const struct vt_tiers *t, unsigned int tier);
/*
 * The same among the tier's nodes in @mask (bit n: node n; the first of them
 * when none has memory free); -1 when none of the tier's nodes is in @mask.
 */
int vt_tiers_roomiest_node_in(const struct vt_tiers *t, unsigned int tier, uint64_t mask);
/* Bit n for each node of tier @tier. */
uint64_t vt_tiers_node_mask(const struct vt_tiers *t, unsigned int tier);
/*
 * The nodes a process may allocate on (its cpuset's mems), as a mask, from
 * the text of its /proc/PID/status: the "Mems_allowed_list:" line. False
 * when there is no such line, or its list is not a node list of nodes
 * 0..VT_MAX_NODES-1, or empty.
 */
bool vt_parse_mems_allowed(const char *status, uint64_t *mask);
int vt_tiers_of_node(const struct vt_tiers *t, int node);
void vt_tiers_to_json(const struct vt_tiers *t, JsonBuilder *b);
/* The same objects, inside an array the caller opened (to add more tiers). */
void vt_tiers_members_to_json(const struct vt_tiers *t, JsonBuilder *b);
/*
 * A tier name safe in JSON replies, logs, STATS and comma-separated tier
 * lists: the one rule of util/tier_name.h, VT_TIER_NAME_RULE.
 */
bool vt_tier_name_valid(const char *name);
/* Parse a node list "0-2,5" into @nodes; false on malformed or > VT_MAX_NODES. */
bool vt_parse_nodelist(const char *text, int *nodes, unsigned int *nr);

#endif
