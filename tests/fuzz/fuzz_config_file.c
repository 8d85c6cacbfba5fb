// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: vtierd's config file as a whole ([tier.NAME] over this host's
 * sysfs, [ctier.NAME], [policy], [host], [libvirt], [metrics]) through the function
 * vtierd starts from, then freed. What loads holds only valid tiers and
 * policy; what is refused says why in UTF-8.
 */
#include <stddef.h>
#include <stdint.h>

#include "config_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GKeyFile *config = NULL;
	GError *e = NULL;
	struct vt_daemon *d = vt_daemon_from_config((const char *)data, size, "/", NULL, &config, &e);

	if (!d == !e)
		__builtin_trap();
	if (d) {
		const struct vt_host_config *h = &d->host;

		if (!config || h->tiers.nr == 0 || h->tiers.nr > VT_MAX_TIERS ||
		    h->nr_ctier > VT_CTIER_MAX || h->tiers.nr + h->nr_ctier > VT_MAX_TIERS ||
		    !vt_vm_policy_check(&d->defaults, NULL))
			__builtin_trap();
		if (h->share.on && (h->share.budget < (2 << 20) || h->share.step < (2 << 20) ||
				    h->share.deadband > h->share.step ||
				    h->share.nr_nodes > VT_MAX_NODES ||
				    !vt_host_share_config_check_nodes(&h->share, &h->tiers, NULL)))
			__builtin_trap();
		if (!h->share.on && (h->share.budget || h->share.nr_nodes))
			__builtin_trap();
		for (unsigned int i = 0; i < h->tiers.nr; i++)
			if (!vt_tier_name_valid(h->tiers.tier[i].name))
				__builtin_trap();
		for (unsigned int i = 0; i < h->nr_ctier; i++)
			if (!vt_tier_name_valid(h->ctier[i].name))
				__builtin_trap();
		vt_daemon_free(d);
		g_key_file_free(config);
	} else if (config || !g_utf8_validate(e->message, -1, NULL)) {
		__builtin_trap();
	}
	g_clear_error(&e);
	return 0;
}
