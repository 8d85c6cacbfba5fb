// SPDX-License-Identifier: GPL-2.0-or-later
/* The transport picked by mode, AF_XDP falling back to UDP (remote_transport.h). */
#include "remote_transport.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int vt_rt_open(const struct vt_rt_config *cfg, struct vt_rt **out, char *reason, size_t reason_len)
{
	char why[sizeof((*out)->fallback)];
	int r;

	*out = NULL;
	if (reason_len)
		reason[0] = '\0';
	/* a client's UDP socket may let the kernel pick its port; a server's may not */
	if (cfg->port == 0 && cfg->mode != VT_RT_UDP) {
		snprintf(reason, reason_len, "port 0: AF_XDP needs a port, 1..65535 (only a UDP "
			 "client's socket may take 0: the kernel's choice)");
		return -EINVAL;
	}
	switch (cfg->mode) {
	case VT_RT_UDP:
		return vt_rt_udp_ops.open(cfg, out, reason, reason_len);
	case VT_RT_AFXDP:
		return vt_rt_xsk_ops.open(cfg, out, reason, reason_len);
	case VT_RT_AUTO:
		r = vt_rt_xsk_ops.open(cfg, out, why, sizeof(why));
		if (r == 0)
			return 0;
		r = vt_rt_udp_ops.open(cfg, out, reason, reason_len);
		if (r == 0)
			snprintf((*out)->fallback, sizeof((*out)->fallback), "%s", why);
		return r;
	}
	snprintf(reason, reason_len, "mode %d: accepted auto, afxdp, udp", (int)cfg->mode);
	return -EINVAL;
}

int vt_rt_recv(struct vt_rt *rt, struct vt_rt_dgram *d, unsigned n)
{
	return rt->ops->recv_batch(rt, d, n);
}

int vt_rt_send(struct vt_rt *rt, const struct vt_rt_dgram *d, unsigned n)
{
	return rt->ops->send_batch(rt, d, n);
}

int vt_rt_fd(const struct vt_rt *rt)
{
	return rt->ops->fd(rt);
}

void vt_rt_stats(const struct vt_rt *rt, struct vt_rt_stats *st)
{
	memset(st, 0, sizeof(*st));
	rt->ops->stats(rt, st);
	snprintf(st->fallback, sizeof(st->fallback), "%s", rt->fallback);
}

void vt_rt_close(struct vt_rt *rt)
{
	if (rt)
		rt->ops->close(rt);
}

int vt_rt_mode_parse(const char *s, enum vt_rt_mode *mode)
{
	if (!strcmp(s, "auto"))
		*mode = VT_RT_AUTO;
	else if (!strcmp(s, "afxdp"))
		*mode = VT_RT_AFXDP;
	else if (!strcmp(s, "udp"))
		*mode = VT_RT_UDP;
	else
		return -EINVAL;
	return 0;
}

int vt_rt_bind_parse(const char *s, enum vt_rt_bind *bind)
{
	if (!strcmp(s, "auto"))
		*bind = VT_RT_BIND_AUTO;
	else if (!strcmp(s, "copy"))
		*bind = VT_RT_BIND_COPY;
	else if (!strcmp(s, "zerocopy"))
		*bind = VT_RT_BIND_ZEROCOPY;
	else
		return -EINVAL;
	return 0;
}
