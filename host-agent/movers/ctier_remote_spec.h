/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * [remote.NAME] config groups: remote tiers, a compressed page kept on
 * memory servers (vtier-memd) with `copies` of it (docs/remote.md). The tier
 * is a compressed tier whose medium is VT_MEDIUM_REMOTE (its spec: codec,
 * max_stored_pct, capacity); its servers and transport are the client's
 * configuration, handed to vt_store_remote_attach().
 */
#ifndef VTIER_MOVERS_CTIER_REMOTE_SPEC_H
#define VTIER_MOVERS_CTIER_REMOTE_SPEC_H

#include <stdbool.h>

#include <glib.h>

#include "ctier.h"
#include "remote_client.h"

struct vt_remote_spec {
	struct vt_rc_config rc;		/* rc.transport's strings point into this struct */
	char ifname[16];
	char xdp_prog[256];
	/*
	 * copies = 1: each page on one server AND in a local compressed tier
	 * (`local_copy = CTIER`), kept with that tier's spec in a store of its
	 * own beside the backend's (ctier_store_remote.c). Empty: copies = 2.
	 */
	char local_copy[VT_CTIER_NAME_LEN];
	struct vt_ctier_spec local;	/* the named tier's spec, by vt_remote_spec_resolve() */
	int local_tier;			/* its index among the compressed tiers, or -1 */
};

/*
 * Parse group @group ("remote.NAME") of @kf:
 *   servers = IPV4:PORT/PUBKEYHEX, ...   (2..8; vtier-memd --show-key)
 *   copies = 2                          (each page on two servers: never one copy)
 *   copies = 1, local_copy = CTIER      (one server and a copy in [ctier.CTIER])
 *   codec = lz4 | zstd[:LEVEL] | deflate[:1-9]   (default lz4; levels: ctier.h)
 *   max_stored_pct = 10..100, capacity = SIZE, price_usd_per_gib = 0..1e6
 *   transport = udp | afxdp | auto      (the client's end; default udp)
 *   interface = IF, address = IPV4, port = N, xdp_prog = PATH   (afxdp, auto)
 *   xdp_bind = auto|copy|zerocopy, need_wakeup = yes|no, busy_poll = yes|no,
 *   xdp_skb = yes|no   (afxdp, auto only: refused with udp; vt_rt_opt_key())
 * Errors name the group, the key, the value and what is accepted. After a
 * copy of @rs, call vt_remote_spec_fix() on the copy.
 */
bool vt_remote_spec_parse(GKeyFile *kf, const char *group, struct vt_ctier_spec *spec,
			  struct vt_remote_spec *rs, GError **error);
/*
 * Once every group is parsed: @rs's local_copy (if any) names one of
 * @ctiers[@nr] that is a local compressed tier (not remote), whose spec is
 * copied into rs->local. Errors name the group, the key, the value and
 * what is accepted.
 */
bool vt_remote_spec_resolve(struct vt_remote_spec *rs, const char *group,
			    const struct vt_ctier_spec *ctiers, unsigned int nr, GError **error);
/* Point rs->rc.transport's strings at @rs's own (after a copy). */
void vt_remote_spec_fix(struct vt_remote_spec *rs);

#endif
