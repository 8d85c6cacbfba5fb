// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: the [ctier.NAME] and [remote.NAME] config groups (compressed
 * tiers, remote tiers). Every group goes through both parsers.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ctier.h"
#include "ctier_codec.h"
#include "ctier_remote_spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GKeyFile *k = g_key_file_new();
	gchar **groups;

	if (!g_key_file_load_from_data(k, (const char *)data, size, G_KEY_FILE_NONE, NULL)) {
		g_key_file_free(k);
		return 0;
	}
	groups = g_key_file_get_groups(k, NULL);
	for (gchar **g = groups; *g; g++) {
		struct vt_ctier_spec s;
		struct vt_remote_spec rs;
		GError *e = NULL;
		char buf[400];

		if (vt_ctier_spec_parse(k, *g, &s, &e)) {
			/* a parsed spec is within every documented range */
			if (!s.name[0] || strlen(s.name) >= sizeof(s.name) ||
			    s.max_stored_pct < 10 || s.max_stored_pct > 100 ||
			    (s.codec == VT_CODEC_ZSTD && (s.level < VT_ZSTD_MIN_LEVEL || !s.level ||
							  s.level > VT_ZSTD_MAX_LEVEL)) ||
			    (s.codec == VT_CODEC_DEFLATE && (s.level < 1 || s.level > 9)) ||
			    (s.codec == VT_CODEC_LZ4 && s.level) ||
			    (s.medium == VT_MEDIUM_FILE && s.dir[0] != '/') ||
			    (s.medium == VT_MEDIUM_NODE && s.node < 0))
				__builtin_trap();
			vt_ctier_spec_describe(&s, buf, sizeof(buf));
			if (!buf[0] || e)
				__builtin_trap();
		} else if (!e) {
			__builtin_trap();
		}
		g_clear_error(&e);
		if (vt_remote_spec_parse(k, *g, &s, &rs, &e)) {
			if (s.medium != VT_MEDIUM_REMOTE || rs.rc.copies != 2 ||
			    rs.rc.nr_servers < 2 || rs.rc.nr_servers > VT_RC_MAX_SERVERS ||
			    (rs.rc.transport.mode != VT_RT_UDP && !rs.rc.transport.port) ||
			    /* the AF_XDP knobs are refused on a UDP end */
			    (rs.rc.transport.mode == VT_RT_UDP &&
			     (rs.rc.transport.bind != VT_RT_BIND_AUTO || rs.rc.transport.busy_poll ||
			      rs.rc.transport.no_need_wakeup || rs.rc.transport.skb_mode)) || e)
				__builtin_trap();
			for (unsigned int i = 0; i < rs.rc.nr_servers; i++)
				if (!rs.rc.server[i].port)
					__builtin_trap();
		} else if (!e) {
			__builtin_trap();
		}
		g_clear_error(&e);
	}
	g_strfreev(groups);
	g_key_file_free(k);
	return 0;
}
