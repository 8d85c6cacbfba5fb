// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A VM's tier list: the host's NUMA tiers, then the compressed tiers of the
 * kind its engine chose (vtierd's pools or the host's zswap), and what a
 * policy's tiers= list allows of it. Read by the engine, migration and the
 * JSON views alike.
 */
#include <errno.h>
#include <string.h>

#include "vm.h"

unsigned int vt_vm_nr_tiers(const struct vt_vm *vm)
{
	return vm->nr_tiers ? vm->nr_tiers : vm->tiers.nr;
}

const char *vt_vm_tier_name(const struct vt_vm *vm, unsigned int t)
{
	if (t < vm->tiers.nr)
		return vm->tiers.tier[t].name;
	if (t >= vt_vm_nr_tiers(vm))
		return "?";
	return vm->ctier_kind == VT_CTIER_ZSWAP ? "zswap" : vm->host->ctier[t - vm->tiers.nr].name;
}

bool vt_vm_tiers_mask(const struct vt_vm *vm, const char *list, uint32_t *mask, GError **error)
{
	g_auto(GStrv) names = NULL;
	unsigned int nr = vt_vm_nr_tiers(vm);

	*mask = nr >= 32 ? UINT32_MAX : (1U << nr) - 1;
	if (!list[0])
		return true;
	*mask = 0;
	names = g_strsplit(list, ",", -1);
	for (unsigned int i = 0; names[i]; i++) {
		unsigned int t;

		for (t = 0; t < nr && strcmp(names[i], vt_vm_tier_name(vm, t)) != 0; t++)
			;
		if (t == nr) {
			g_autoptr(GString) have = g_string_new(NULL);

			for (t = 0; t < nr; t++)
				g_string_append_printf(have, "%s%s", t ? ", " : "",
						       vt_vm_tier_name(vm, t));
			g_set_error(error, VT_CORE_ERROR, ENOENT,
				    "tiers: this VM has no tier '%s' (it has: %s)", names[i], have->str);
			return false;
		}
		*mask |= 1U << t;
	}
	if (!(*mask & 1)) {
		g_set_error(error, VT_CORE_ERROR, EINVAL,
			    "tiers: the fastest tier '%s' must be in the list (faults bring pages back to it)",
			    vt_vm_tier_name(vm, 0));
		return false;
	}
	return true;
}

void vt_vm_tier_bytes(const struct vt_vm *vm, const struct vt_vm_stats *s, uint64_t *bytes)
{
	(void)vm;
	for (unsigned int t = 0; t < VT_MAX_TIERS; t++)
		bytes[t] = s->tier[t].resident_bytes;
}
