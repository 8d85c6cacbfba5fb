// SPDX-License-Identifier: GPL-2.0-or-later
/* A datagram end's command-line options (remote_transport_opt.h). */
#include "remote_transport_opt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum { O_MODE, O_IF, O_BIND, O_NO_WAKEUP, O_BUSY, O_SKB, O_PROG };

static const char *const opt_name[VT_RT_OPT_N] = {
	[O_MODE] = "transport", [O_IF] = "interface", [O_BIND] = "xdp-bind",
	[O_NO_WAKEUP] = "no-need-wakeup", [O_BUSY] = "busy-poll", [O_SKB] = "xdp-skb",
	[O_PROG] = "xdp-prog",
};

const GOptionEntry *vt_rt_opt_entries(struct vt_rt_opt *o, const char *prefix,
				      const char *mode_default)
{
	memset(o, 0, sizeof(*o));
	g_strlcpy(o->prefix, prefix, sizeof(o->prefix));
	for (unsigned int i = 0; i < VT_RT_OPT_N; i++)
		snprintf(o->names[i], sizeof(o->names[i]), "%s%s", prefix, opt_name[i]);
	snprintf(o->mode_help, sizeof(o->mode_help),
		 "auto (AF_XDP, else UDP), afxdp, udp (default %s)", mode_default);
	o->entries[O_MODE] = (GOptionEntry){ o->names[O_MODE], 0, 0, G_OPTION_ARG_STRING,
					     &o->mode, o->mode_help, "MODE" };
	o->entries[O_IF] = (GOptionEntry){ o->names[O_IF], prefix[0] ? 0 : 'i', 0,
					   G_OPTION_ARG_STRING, &o->ifname,
					   "AF_XDP: the interface (default: the one holding the "
					   "address)", "IFNAME" };
	o->entries[O_BIND] = (GOptionEntry){ o->names[O_BIND], 0, 0, G_OPTION_ARG_STRING, &o->bind,
					     "AF_XDP bind: auto (the default), copy, zerocopy",
					     "MODE" };
	o->entries[O_NO_WAKEUP] = (GOptionEntry){ o->names[O_NO_WAKEUP], 0, 0, G_OPTION_ARG_NONE,
						   &o->no_need_wakeup,
						   "AF_XDP: without the need_wakeup flag", NULL };
	o->entries[O_BUSY] = (GOptionEntry){ o->names[O_BUSY], 0, 0, G_OPTION_ARG_NONE,
					     &o->busy_poll,
					     "AF_XDP: preferred busy polling on the socket, and the "
					     "waiting end spins (takes a core) instead of sleeping",
					     NULL };
	o->entries[O_SKB] = (GOptionEntry){ o->names[O_SKB], 0, 0, G_OPTION_ARG_NONE, &o->skb_mode,
					    "AF_XDP: attach the XDP program in generic (skb) mode",
					    NULL };
	o->entries[O_PROG] = (GOptionEntry){ o->names[O_PROG], 0, 0, G_OPTION_ARG_FILENAME,
					     &o->xdp_prog, "AF_XDP: the steering XDP program, "
					     "memd_steer.bpf.o (vtier-memd: the installed one by "
					     "default)", "PATH" };
	return o->entries;
}

bool vt_rt_opt_apply(const struct vt_rt_opt *o, struct vt_rt_config *cfg, GError **e)
{
	if (o->mode && vt_rt_mode_parse(o->mode, &cfg->mode) < 0) {
		g_set_error(e, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--%s '%s': "
			    "expected " VT_RT_MODE_ACCEPTED, o->names[O_MODE], o->mode);
		return false;
	}
	if (o->bind && vt_rt_bind_parse(o->bind, &cfg->bind) < 0) {
		g_set_error(e, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--%s '%s': "
			    "expected " VT_RT_BIND_ACCEPTED, o->names[O_BIND], o->bind);
		return false;
	}
	if (o->ifname)
		cfg->ifname = o->ifname;
	if (o->xdp_prog)
		cfg->xdp_prog = o->xdp_prog;
	cfg->no_need_wakeup |= o->no_need_wakeup;
	cfg->busy_poll |= o->busy_poll;
	cfg->skb_mode |= o->skb_mode;
	return true;
}

bool vt_rt_opt_given(const struct vt_rt_opt *o, const char **which)
{
	const bool given[VT_RT_OPT_N] = {
		[O_MODE] = o->mode, [O_IF] = o->ifname, [O_BIND] = o->bind,
		[O_NO_WAKEUP] = o->no_need_wakeup, [O_BUSY] = o->busy_poll,
		[O_SKB] = o->skb_mode, [O_PROG] = o->xdp_prog,
	};

	for (unsigned int i = 0; i < VT_RT_OPT_N; i++)
		if (given[i]) {
			*which = o->names[i];
			return true;
		}
	return false;
}

static int yes_no(const char *value, bool *out)
{
	if (!strcmp(value, "yes"))
		*out = true;
	else if (!strcmp(value, "no"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

int vt_rt_opt_key(const char *key, const char *value, struct vt_rt_config *cfg,
		  const char **accepted)
{
	bool on;

	if (!strcmp(key, "xdp_bind")) {
		*accepted = VT_RT_BIND_ACCEPTED;
		return vt_rt_bind_parse(value, &cfg->bind) < 0 ? -EINVAL : 1;
	}
	if (strcmp(key, "need_wakeup") && strcmp(key, "busy_poll") && strcmp(key, "xdp_skb"))
		return 0;
	*accepted = VT_RT_YESNO_ACCEPTED;
	if (yes_no(value, &on) < 0)
		return -EINVAL;
	if (!strcmp(key, "need_wakeup"))
		cfg->no_need_wakeup = !on;
	else if (!strcmp(key, "busy_poll"))
		cfg->busy_poll = on;
	else
		cfg->skb_mode = on;
	return 1;
}

void vt_rt_opt_clear(struct vt_rt_opt *o)
{
	g_clear_pointer(&o->mode, g_free);
	g_clear_pointer(&o->ifname, g_free);
	g_clear_pointer(&o->bind, g_free);
	g_clear_pointer(&o->xdp_prog, g_free);
}
