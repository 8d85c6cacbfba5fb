// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-memd's XDP program: IPv4/UDP to the configured port (and address,
 * when bound to one) is redirected to the AF_XDP socket of the rx queue it
 * came on; everything else (ARP, ICMP, other ports, IPv4 with options or
 * fragments, IPv6) passes to the kernel. A queue without an XSK passes too
 * (bpf_redirect_map's fallback action). Attached through libxdp's dispatcher,
 * so other programs on the interface keep running (XDP_PASS chains on).
 * Frags-aware: only the headers, in the first buffer, are read; an MTU above
 * one page's worth stays allowed while the program is attached.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <xdp/xdp_helpers.h>

#include "memd_steer.h"

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

/* set by remote_xsk.c before load; the verifier sees constants */
const volatile struct memd_steer_cfg steer_cfg = { 0 };

SEC("xdp.frags")
int memd_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;

	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	if (ip->frag_off & bpf_htons(0x3fff))	/* MF or an offset */
		return XDP_PASS;
	if (steer_cfg.addr_be && ip->daddr != steer_cfg.addr_be)
		return XDP_PASS;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end || udp->dest != steer_cfg.port_be)
		return XDP_PASS;
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
/* libxdp's dispatcher: run before most programs, chain on XDP_PASS */
struct {
	__uint(priority, 20);
	__uint(XDP_PASS, 1);
} XDP_RUN_CONFIG(memd_steer);
