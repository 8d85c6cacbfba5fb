// SPDX-License-Identifier: GPL-2.0-or-later
/* VM discovery: memory backends over QMP, their RAM blocks' HVAs, checked against maps. */
#include <errno.h>
#include <string.h>

#include "json_member.h"
#include "procmaps.h"
#include "vm.h"

static void discover_gpa(struct vt_qmp *qmp, GArray *ram, GArray *gpa_map)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonNode) args = NULL, ret = NULL;
	g_autoptr(GArray) ranges = g_array_new(FALSE, TRUE, sizeof(struct vt_gpa_range));

	json_builder_begin_object(b);
	vt_json_add_str(b, "command-line", "info mtree -f");
	json_builder_end_object(b);
	args = json_builder_get_root(b);
	if (!vt_qmp_execute(qmp, "human-monitor-command", args, &ret, NULL) ||
	    !JSON_NODE_HOLDS_VALUE(ret) || json_node_get_value_type(ret) != G_TYPE_STRING ||
	    !vt_qmp_parse_mtree(json_node_get_string(ret), ranges, NULL))
		return;
	for (unsigned int i = 0; i < ranges->len; i++) {
		const struct vt_gpa_range *g = &g_array_index(ranges, struct vt_gpa_range, i);

		for (unsigned int j = 0; j < ram->len; j++) {
			const struct vt_vm_ram *r = &g_array_index(ram, struct vt_vm_ram, j);
			struct vt_gpa_map m = { g->gpa, g->len, r->hva + g->offset };

			/* only ranges wholly inside a backend's RAM block */
			if (strcmp(g->region, r->backend) == 0 && g->offset + g->len <= r->size)
				g_array_append_val(gpa_map, m);
		}
	}
}

bool vt_vm_discover(struct vt_qmp *qmp, pid_t pid, GArray *ram, GArray *gpa_map, GError **error)
{
	g_autoptr(GArray) memdevs = g_array_new(FALSE, TRUE, sizeof(struct vt_memdev));
	g_autoptr(GArray) blocks = g_array_new(FALSE, TRUE, sizeof(struct vt_ramblock));
	g_autoptr(GArray) maps = g_array_new(FALSE, TRUE, sizeof(struct vt_mapping));
	g_autoptr(JsonNode) ret = NULL, objs = NULL, rb = NULL;
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonNode) args = NULL;
	JsonObject *o;
	JsonNode *text;

	if (!vt_qmp_execute(qmp, "query-memdev", NULL, &ret, error) ||
	    !vt_qmp_parse_memdev(ret, memdevs, error))
		return false;
	if (memdevs->len == 0) {
		g_set_error(error, VT_CORE_ERROR, ENOENT,
			    "the VM has no memory backend objects: start QEMU with -machine "
			    "memory-backend=ID -object memory-backend-ram|memfd|file,id=ID,...");
		return false;
	}
	json_builder_begin_object(b);
	vt_json_add_str(b, "path", "/objects");
	json_builder_end_object(b);
	args = json_builder_get_root(b);
	if (!vt_qmp_execute(qmp, "qom-list", args, &objs, error) ||
	    !vt_qmp_parse_objects(objs, memdevs, error))
		return false;
	if (!vt_qmp_execute(qmp, "x-query-ramblock", NULL, &rb, error))
		return false;
	o = JSON_NODE_HOLDS_OBJECT(rb) ? json_node_get_object(rb) : NULL;
	text = o ? json_object_get_member(o, "human-readable-text") : NULL;
	if (!text || !JSON_NODE_HOLDS_VALUE(text) || json_node_get_value_type(text) != G_TYPE_STRING) {
		g_set_error(error, VT_CORE_ERROR, EPROTO, "x-query-ramblock: no human-readable-text");
		return false;
	}
	if (!vt_qmp_parse_ramblocks(json_node_get_string(text), blocks, error))
		return false;
	if (!vt_procmaps_read(pid, maps, error))
		return false;
	for (unsigned int i = 0; i < memdevs->len; i++) {
		const struct vt_memdev *m = &g_array_index(memdevs, struct vt_memdev, i);
		const struct vt_ramblock *blk = NULL;
		const struct vt_mapping *map;
		struct vt_vm_ram r = { 0 };
		bool of_device = false;

		for (unsigned int j = 0; j < blocks->len; j++) {
			const char *name = g_array_index(blocks, struct vt_ramblock, j).name;
			size_t n = strlen(name), k = strlen(m->id);

			if (strcmp(name, m->id) == 0)
				blk = &g_array_index(blocks, struct vt_ramblock, j);
			/* "DEVICE/ID": a device's memory (ivshmem's BAR: a guest hint region) */
			else if (n > k && name[n - k - 1] == '/' && strcmp(name + n - k, m->id) == 0)
				of_device = true;
		}
		if (!blk && of_device)
			continue;	/* not guest RAM: never tiered */
		if (!blk) {
			g_set_error(error, VT_CORE_ERROR, ENOENT,
				    "memory backend '%s' has no RAM block (not used by the guest?)",
				    m->id);
			return false;
		}
		if (blk->used != m->size) {
			g_set_error(error, VT_CORE_ERROR, EPROTO,
				    "memory backend '%s': RAM block is %" G_GUINT64_FORMAT
				    " bytes, backend %" G_GUINT64_FORMAT, m->id, (guint64)blk->used,
				    (guint64)m->size);
			return false;
		}
		map = vt_procmaps_find(maps, blk->hva, blk->hva + blk->used);
		if (!map) {
			g_set_error(error, VT_CORE_ERROR, ENOENT,
				    "memory backend '%s': no single mapping of pid %d holds "
				    "0x%" G_GINT64_MODIFIER "x+0x%" G_GINT64_MODIFIER "x", m->id, (int)pid,
				    (guint64)blk->hva, (guint64)blk->used);
			return false;
		}
		g_strlcpy(r.backend, m->id, sizeof(r.backend));
		g_strlcpy(r.type, m->type, sizeof(r.type));
		g_strlcpy(r.policy, m->policy, sizeof(r.policy));
		g_strlcpy(r.mapping, map->path, sizeof(r.mapping));
		r.size = blk->used;
		r.hva = blk->hva;
		r.page_size = blk->page_size;
		r.share = m->share;
		r.thp = !m->share && !*map->path && blk->page_size == 4096;
		g_array_append_val(ram, r);
	}
	if (gpa_map)
		discover_gpa(qmp, ram, gpa_map);
	return true;
}
