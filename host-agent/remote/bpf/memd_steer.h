/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What memd_steer.bpf.c is set up with: its .rodata, written by
 * remote_xsk.c before the program is loaded (both include this file).
 */
#ifndef VTIER_REMOTE_MEMD_STEER_H
#define VTIER_REMOTE_MEMD_STEER_H

struct memd_steer_cfg {
	__u32 addr_be;	/* IPv4 destination to steer, network order; 0 = any */
	__u16 port_be;	/* UDP destination port to steer, network order */
	__u16 pad;
};

#endif
