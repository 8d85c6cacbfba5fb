// SPDX-License-Identifier: GPL-2.0-or-later
/* [remote.NAME] config groups (ctier_remote_spec.h). */
#include <arpa/inet.h>
#include <string.h>

#include "ctier_codec.h"
#include "ctier_remote_spec.h"
#include "remote_transport_opt.h"
#include "size.h"
#include "json_guard.h"
#include "tier_name.h"

#define SPEC_ERR(error, ...) \
	g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, __VA_ARGS__)

static bool parse_ipv4(const char *s, uint32_t *out)
{
	struct in_addr in;

	if (inet_pton(AF_INET, s, &in) != 1)
		return false;
	*out = ntohl(in.s_addr);
	return true;
}

/* "A.B.C.D:PORT/PUBKEYHEX" */
static bool parse_server(const char *group, const char *text, struct vt_rc_server *s,
			 GError **error)
{
	g_auto(GStrv) a = g_strsplit_set(text, ":/", 3);
	guint64 port;
	char shown[96];

	if (g_strv_length(a) != 3 || !parse_ipv4(g_strstrip(a[0]), &s->addr) ||
	    !g_ascii_string_to_unsigned(a[1], 10, 1, 65535, &port, NULL) ||
	    vt_seal_pk_parse(g_strstrip(a[2]), s->pk) < 0) {
		vt_text_printable(shown, sizeof(shown), text, strlen(text));
		SPEC_ERR(error, "[%s] servers: '%s' is not IPV4:PORT/PUBKEY (the key as "
			 "vtier-memd --show-key prints it)", group, shown);
		return false;
	}
	s->port = (uint16_t)port;
	return true;
}

static bool parse_servers(const char *group, const char *v, struct vt_rc_config *rc,
			  GError **error)
{
	g_auto(GStrv) list = g_strsplit(v, ",", -1);
	unsigned int n = 0;

	for (unsigned int i = 0; list[i]; i++) {
		g_strstrip(list[i]);
		if (!*list[i])
			continue;
		if (n == VT_RC_MAX_SERVERS) {
			SPEC_ERR(error, "[%s] servers: more than %d given", group, VT_RC_MAX_SERVERS);
			return false;
		}
		if (!parse_server(group, list[i], &rc->server[n], error))
			return false;
		n++;
	}
	if (n < 2) {
		SPEC_ERR(error, "[%s] servers: %u given, 2-%d accepted (each page is kept on two)",
			 group, n, VT_RC_MAX_SERVERS);
		return false;
	}
	rc->nr_servers = n;
	return true;
}

bool vt_remote_spec_resolve(struct vt_remote_spec *rs, const char *group,
			    const struct vt_ctier_spec *ctiers, unsigned int nr, GError **error)
{
	rs->local_tier = -1;
	if (!rs->local_copy[0])
		return true;
	for (unsigned int i = 0; i < nr; i++) {
		if (strcmp(ctiers[i].name, rs->local_copy) != 0)
			continue;
		if (ctiers[i].medium == VT_MEDIUM_REMOTE)
			break;
		rs->local = ctiers[i];
		rs->local_tier = (int)i;
		return true;
	}
	SPEC_ERR(error, "[%s] local_copy: '%s' is not a local compressed tier (the NAME of a "
		 "[ctier.NAME] group of this file accepted)", group, rs->local_copy);
	return false;
}

void vt_remote_spec_fix(struct vt_remote_spec *rs)
{
	rs->rc.transport.ifname = rs->ifname[0] ? rs->ifname : NULL;
	rs->rc.transport.xdp_prog = rs->xdp_prog[0] ? rs->xdp_prog : NULL;
}

bool vt_remote_spec_parse(GKeyFile *kf, const char *group, struct vt_ctier_spec *spec,
			  struct vt_remote_spec *rs, GError **error)
{
	g_auto(GStrv) keys = NULL;
	g_autoptr(GKeyFile) sub = g_key_file_new();
	g_autofree char *sub_group = NULL;
	bool has_servers = false;
	char afxdp_key[16] = "", afxdp_value[96] = "";	/* the first AF_XDP-only key given */

	memset(rs, 0, sizeof(*rs));
	rs->local_tier = -1;
	rs->rc.copies = 2;
	rs->rc.transport.mode = VT_RT_UDP;
	if (!g_str_has_prefix(group, "remote.") || !vt_tier_name_ok(group + 7)) {
		SPEC_ERR(error, "[%s]: a remote tier's group is remote.NAME, NAME "
			 VT_TIER_NAME_RULE, group);
		return false;
	}
	/* the compressed tier's keys, parsed as a [ctier.NAME] of their own */
	sub_group = g_strconcat("ctier.", group + 7, NULL);
	g_key_file_set_string(sub, sub_group, "pool", "zsmalloc");
	g_key_file_set_string(sub, sub_group, "medium", "node:0");
	g_key_file_set_string(sub, sub_group, "codec", "lz4");
	keys = g_key_file_get_keys(kf, group, NULL, error);
	if (!keys)
		return false;
	for (char **k = keys; *k; k++) {
		g_autofree char *v = vt_ctier_key_value(kf, group, *k, error);
		const char *accepted = NULL;
		char shown[96];
		int r;

		if (!v)
			return false;
		vt_text_printable(shown, sizeof(shown), v, strlen(v));
		/* the AF_XDP end's knobs: the parser vtier-memd's and vtier-bench's options share */
		r = vt_rt_opt_key(*k, v, &rs->rc.transport, &accepted);
		if (r < 0) {
			SPEC_ERR(error, "[%s] %s: '%s': %s accepted", group, *k, shown, accepted);
			return false;
		}
		if (r > 0) {
			if (!afxdp_key[0]) {
				g_strlcpy(afxdp_key, *k, sizeof(afxdp_key));
				g_strlcpy(afxdp_value, shown, sizeof(afxdp_value));
			}
		} else if (strcmp(*k, "servers") == 0) {
			if (!parse_servers(group, v, &rs->rc, error))
				return false;
			has_servers = true;
		} else if (strcmp(*k, "copies") == 0) {
			if (strcmp(v, "2") != 0 && strcmp(v, "1") != 0) {
				SPEC_ERR(error, "[%s] copies: '%s': 2 (two servers) or 1 (one server "
					 "and local_copy) accepted", group, shown);
				return false;
			}
			rs->rc.copies = v[0] == '1' ? 1 : 2;
		} else if (strcmp(*k, "local_copy") == 0) {
			if (!vt_tier_name_ok(v)) {
				SPEC_ERR(error, "[%s] local_copy: '%s': the NAME of a [ctier.NAME] "
					 "accepted, NAME " VT_TIER_NAME_RULE, group, shown);
				return false;
			}
			g_strlcpy(rs->local_copy, v, sizeof(rs->local_copy));
		} else if (strcmp(*k, "transport") == 0) {
			if (vt_rt_mode_parse(v, &rs->rc.transport.mode) < 0) {
				SPEC_ERR(error, "[%s] transport: '%s': udp, afxdp or auto accepted",
					 group, shown);
				return false;
			}
		} else if (strcmp(*k, "interface") == 0) {
			if (!*v || strlen(v) >= sizeof(rs->ifname) || strchr(v, '/')) {
				SPEC_ERR(error, "[%s] interface: '%s' is not an interface name", group,
					 shown);
				return false;
			}
			g_strlcpy(rs->ifname, v, sizeof(rs->ifname));
		} else if (strcmp(*k, "address") == 0) {
			if (!parse_ipv4(v, &rs->rc.transport.addr)) {
				SPEC_ERR(error, "[%s] address: '%s' is not an IPv4 address", group,
					 shown);
				return false;
			}
		} else if (strcmp(*k, "port") == 0) {
			guint64 port;

			if (!g_ascii_string_to_unsigned(v, 10, 1, 65535, &port, NULL)) {
				SPEC_ERR(error, "[%s] port: '%s': 1..65535 accepted", group, shown);
				return false;
			}
			rs->rc.transport.port = (uint16_t)port;
		} else if (strcmp(*k, "xdp_prog") == 0) {
			if (v[0] != '/' || strlen(v) >= sizeof(rs->xdp_prog)) {
				SPEC_ERR(error, "[%s] xdp_prog: '%s' is not an absolute path", group,
					 shown);
				return false;
			}
			g_strlcpy(rs->xdp_prog, v, sizeof(rs->xdp_prog));
		} else if (strcmp(*k, "codec") == 0 || strcmp(*k, "max_stored_pct") == 0 ||
			   strcmp(*k, "capacity") == 0 || strcmp(*k, "price_usd_per_gib") == 0) {
			g_key_file_set_string(sub, sub_group, *k, v);
		} else {
			SPEC_ERR(error, "[%s] %s: unknown key (servers, copies, local_copy, codec, "
				 "max_stored_pct, capacity, price_usd_per_gib, transport, interface, "
				 "address, port, xdp_prog, " VT_RT_OPT_KEYS ")", group, *k);
			return false;
		}
	}
	if (!has_servers) {
		SPEC_ERR(error, "[%s] servers: missing (IPV4:PORT/PUBKEY, ...: at least two)", group);
		return false;
	}
	if (rs->rc.copies == 1 && !rs->local_copy[0]) {
		SPEC_ERR(error, "[%s] copies: '1' needs local_copy = CTIER (a page on one server "
			 "alone would be lost with it)", group);
		return false;
	}
	if (rs->rc.copies == 2 && rs->local_copy[0]) {
		SPEC_ERR(error, "[%s] local_copy: '%s' only with copies = 1 (copies = 2 keeps the "
			 "second copy on a server)", group, rs->local_copy);
		return false;
	}
	if (rs->rc.transport.mode != VT_RT_UDP && !rs->rc.transport.port) {
		SPEC_ERR(error, "[%s] port: required with transport afxdp or auto (the client's own "
			 "UDP port, steered to its socket)", group);
		return false;
	}
	if (rs->rc.transport.mode == VT_RT_UDP && afxdp_key[0]) {
		SPEC_ERR(error, "[%s] %s: '%s': an AF_XDP option, accepted only with transport "
			 "afxdp or auto (transport is udp%s)", group, afxdp_key, afxdp_value,
			 g_key_file_has_key(kf, group, "transport", NULL) ? "" : ", the default");
		return false;
	}
	if (!vt_ctier_spec_parse(sub, sub_group, spec, error)) {
		/* its messages name [ctier.NAME]: say the group the operator wrote */
		if (error && *error)
			g_prefix_error(error, "[%s]: ", group);
		return false;
	}
	spec->medium = VT_MEDIUM_REMOTE;
	spec->node = -1;
	spec->dir[0] = '\0';
	vt_remote_spec_fix(rs);
	return true;
}
