/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The remote tier's datagram transports: one contract, two backends.
 * AF_XDP through libxdp (remote_xsk.c: our XDP program steers the port's
 * IPv4/UDP to an XSK per queue, everything else passes to the kernel) and a
 * kernel UDP socket (remote_udp.c: recvmmsg/sendmmsg). vt_rt_open() picks
 * one by mode; in "auto" it falls back to UDP when AF_XDP cannot be set up
 * and keeps the reason (the program logs it once; the stats show it).
 *
 * A datagram is its two ends (vt_rf_peer: IPv4 address + UDP port, and for
 * AF_XDP both MACs, from the request's Ethernet header; a reply reuses its
 * request's peer) and a payload. recv copies payloads into the caller's
 * buffers (the caller never holds a UMEM frame); send takes payloads and
 * builds the headers. Single-threaded: one owner per handle; no logging.
 */
#ifndef VTIER_REMOTE_TRANSPORT_H
#define VTIER_REMOTE_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remote_frame.h"

enum vt_rt_mode { VT_RT_AUTO = 0, VT_RT_AFXDP, VT_RT_UDP };
/* AF_XDP bind: let the kernel pick (zero-copy if the driver has it), or force one */
enum vt_rt_bind { VT_RT_BIND_AUTO = 0, VT_RT_BIND_COPY, VT_RT_BIND_ZEROCOPY };

/* Where AF_XDP servers lock the interfaces they steer (remote_xsk.c) */
#define VT_RT_LOCK_DIR_DEFAULT "/run/vtier-memd"

/* The largest payload either transport moves (one UDP datagram of a jumbo link) */
#define VT_RT_MAX_PAYLOAD 8192u

struct vt_rt_config {
	enum vt_rt_mode mode;
	const char *ifname;	/* AF_XDP: the interface; NULL: the one holding @addr */
	uint32_t addr;		/* IPv4, host order; 0 = any (UDP: INADDR_ANY; AF_XDP: any of ours) */
	uint16_t port;		/* UDP port, host order; 0 only in mode udp (an ephemeral port) */
	/* AF_XDP only */
	const char *xdp_prog;	/* path of memd_steer.bpf.o */
	const char *lock_dir;	/* the interfaces' steering locks; NULL: VT_RT_LOCK_DIR_DEFAULT */
	enum vt_rt_bind bind;
	bool no_need_wakeup;	/* need_wakeup is on unless this is set */
	bool busy_poll;		/* SO_PREFER_BUSY_POLL + SO_BUSY_POLL + SO_BUSY_POLL_BUDGET */
	unsigned busy_poll_us;	/* 0: 20 */
	unsigned busy_poll_budget; /* 0: 64 */
	unsigned ring_size;	/* per queue, a power of two 64..16384; 0: 2048 */
	bool skb_mode;		/* attach the XDP program in skb (generic) mode only */
};

struct vt_rt_dgram {
	struct vt_rf_peer peer;	/* recv: filled; send: whom to send to, from which address */
	uint32_t queue;		/* recv: the rx queue it came on; send: the queue to send on (AF_XDP) */
	uint8_t *buf;		/* recv: the caller's buffer; send: the payload */
	size_t cap;		/* recv: @buf's size */
	size_t len;		/* recv: payload bytes; send: payload bytes */
};

struct vt_rt_stats {
	uint64_t rx, tx;
	uint64_t rx_dropped;		/* every datagram lost on receive, the reasons below summed */
	uint64_t rx_refused[VT_RF_NR];	/* headers refused by reason (vt_rf_verdict_name) */
	uint64_t rx_too_big;		/* payload larger than the caller's buffer */
	uint64_t rx_kernel_dropped;	/* AF_XDP: XDP_STATISTICS rx_dropped + rx_ring_full + fill ring empty */
	uint64_t tx_busy;		/* datagrams not sent: tx ring full, no frame free, EAGAIN */
	uint64_t tx_refused;		/* datagrams refused: payload too large, bad peer */
	uint64_t tx_unresolved;		/* AF_XDP: lost while the kernel resolved the peer's MAC */
	const char *mode;		/* "afxdp-copy", "afxdp-zerocopy", "udp" */
	unsigned queues;		/* AF_XDP: XSKs (one per rx queue); UDP: 1 */
	bool need_wakeup;
	bool busy_poll;
	bool xdp_native;		/* AF_XDP: program attached in native (driver) mode */
	char fallback[192];		/* why AF_XDP was not used in auto mode, or "" */
};

struct vt_rt;

struct vt_rt_ops {
	const char *name;
	/* 0 or -errno with @reason (a sentence naming what failed) filled */
	int (*open)(const struct vt_rt_config *cfg, struct vt_rt **out, char *reason, size_t reason_len);
	/* Up to @n datagrams into @d[]; returns how many (0: none ready) or -errno. Never blocks. */
	int (*recv_batch)(struct vt_rt *rt, struct vt_rt_dgram *d, unsigned n);
	/* Queue @d[0..n); returns how many were taken (the rest: tx_busy) or -errno. Never blocks. */
	int (*send_batch)(struct vt_rt *rt, const struct vt_rt_dgram *d, unsigned n);
	/* Pollable for POLLIN when datagrams may be ready */
	int (*fd)(const struct vt_rt *rt);
	void (*stats)(const struct vt_rt *rt, struct vt_rt_stats *st);
	void (*close)(struct vt_rt *rt);
};

/* Every backend's handle starts with this */
struct vt_rt {
	const struct vt_rt_ops *ops;
	char fallback[192];
};

extern const struct vt_rt_ops vt_rt_udp_ops;
extern const struct vt_rt_ops vt_rt_xsk_ops;

/*
 * Open a transport by @cfg->mode: AF_XDP, UDP, or AF_XDP then UDP (auto:
 * the AF_XDP failure is kept in the stats' fallback). 0 or -errno with
 * @reason filled ("AF_XDP on veth0: ...: Operation not permitted").
 */
int vt_rt_open(const struct vt_rt_config *cfg, struct vt_rt **out, char *reason, size_t reason_len);
int vt_rt_recv(struct vt_rt *rt, struct vt_rt_dgram *d, unsigned n);
int vt_rt_send(struct vt_rt *rt, const struct vt_rt_dgram *d, unsigned n);
int vt_rt_fd(const struct vt_rt *rt);
void vt_rt_stats(const struct vt_rt *rt, struct vt_rt_stats *st);
/* NULL is a no-op */
void vt_rt_close(struct vt_rt *rt);

/* "auto" | "afxdp" | "udp" -> mode; -EINVAL otherwise */
int vt_rt_mode_parse(const char *s, enum vt_rt_mode *mode);
/* "auto" | "copy" | "zerocopy" -> bind; -EINVAL otherwise */
int vt_rt_bind_parse(const char *s, enum vt_rt_bind *bind);

#endif
