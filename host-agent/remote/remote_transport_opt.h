/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A datagram end's command-line options, one set for every program that
 * opens a transport (vtier-memd: the server's end; vtier-bench remote: the
 * client's): PREFIX + transport, interface, xdp-bind, no-need-wakeup,
 * busy-poll, xdp-skb, xdp-prog, parsed with GOption into a vt_rt_config;
 * and the AF_XDP ones as a config file's keys (vtierd's [remote.NAME]:
 * xdp_bind, need_wakeup, busy_poll, xdp_skb), the same values behind them.
 */
#ifndef VTIER_REMOTE_TRANSPORT_OPT_H
#define VTIER_REMOTE_TRANSPORT_OPT_H

#include <stdbool.h>

#include <glib.h>

#include "remote_transport.h"

#define VT_RT_OPT_N 7

struct vt_rt_opt {
	char *mode, *ifname, *bind, *xdp_prog;	/* the options' strings (g_free'd by clear) */
	gboolean no_need_wakeup, busy_poll, skb_mode;
	char prefix[24];
	char names[VT_RT_OPT_N][40];
	char mode_help[96];
	GOptionEntry entries[VT_RT_OPT_N + 1];
};

/*
 * The entries of options named @prefix + "transport", ... ("" for a server:
 * --transport, --interface (-i), ...; "client-" for a client's own end),
 * @mode_default the mode named as default in --help: add them to a context
 * (g_option_context_add_main_entries) or to the tool's own entry table.
 */
const GOptionEntry *vt_rt_opt_entries(struct vt_rt_opt *o, const char *prefix,
				      const char *mode_default);
/*
 * The parsed options into @cfg (mode, ifname, bind, xdp_prog, need_wakeup,
 * busy_poll, skb_mode; what was not given stays as @cfg has it). False with
 * @e naming the option, its value and what is accepted.
 */
bool vt_rt_opt_apply(const struct vt_rt_opt *o, struct vt_rt_config *cfg, GError **e);
/* Whether any of the options was given (an end that takes none may refuse them) */
bool vt_rt_opt_given(const struct vt_rt_opt *o, const char **which);
void vt_rt_opt_clear(struct vt_rt_opt *o);

/* What each option accepts, as error messages say it */
#define VT_RT_MODE_ACCEPTED "auto, afxdp or udp"
#define VT_RT_BIND_ACCEPTED "auto, copy or zerocopy"
#define VT_RT_YESNO_ACCEPTED "yes or no"
/* The config keys vt_rt_opt_key() takes, for a parser's "unknown key" message */
#define VT_RT_OPT_KEYS "xdp_bind, need_wakeup, busy_poll, xdp_skb"

/*
 * One of an AF_XDP end's options given as a config key: xdp_bind =
 * auto|copy|zerocopy (--xdp-bind), need_wakeup = yes|no (no: --no-need-wakeup),
 * busy_poll = yes|no (--busy-poll), xdp_skb = yes|no (--xdp-skb). 1: @key
 * is one of them, its value taken into @cfg; 0: it is not one of them
 * (nothing done); -EINVAL: @value is not accepted, *@accepted set to what is.
 */
int vt_rt_opt_key(const char *key, const char *value, struct vt_rt_config *cfg,
		  const char **accepted);
/* g_auto(vt_rt_opt_auto) o = { 0 }: the strings freed at the scope's end */
typedef struct vt_rt_opt vt_rt_opt_auto;
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vt_rt_opt_auto, vt_rt_opt_clear)

#endif
