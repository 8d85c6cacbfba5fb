// SPDX-License-Identifier: GPL-2.0-or-later
/* Ethernet/IPv4/UDP headers of the AF_XDP transport (remote_frame.h). */
#include "remote_frame.h"

#include <errno.h>
#include <string.h>

#define ETH_P_IPV4 0x0800u
#define IPPROTO_UDP_NR 17u
#define IP_MF 0x2000u
#define IP_DF 0x4000u
#define IP_OFFMASK 0x1fffu

static const char *const verdict_names[VT_RF_NR] = {
	[VT_RF_OK] = "ok",
	[VT_RF_TRUNCATED] = "truncated",
	[VT_RF_NOT_IPV4] = "not-ipv4",
	[VT_RF_BAD_IHL] = "bad-ihl",
	[VT_RF_IP_OPTIONS] = "ip-options",
	[VT_RF_FRAGMENT] = "fragment",
	[VT_RF_NOT_UDP] = "not-udp",
	[VT_RF_BAD_CSUM] = "bad-ip-checksum",
	[VT_RF_BAD_LEN] = "bad-length",
	[VT_RF_WRONG_ADDR] = "wrong-address",
	[VT_RF_WRONG_PORT] = "wrong-port",
	[VT_RF_BAD_SOURCE] = "bad-source",
};

const char *vt_rf_verdict_name(enum vt_rf_verdict v)
{
	return (unsigned)v < VT_RF_NR ? verdict_names[v] : "unknown";
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

uint64_t vt_rf_csum_add(uint64_t sum, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

uint16_t vt_rf_csum_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* Sources a reply must never go to: 0/8, loopback 127/8 (martian on a wire), multicast, broadcast */
static int bad_source(uint32_t a)
{
	return (a >> 24) == 0 || (a >> 24) == 127 || (a >> 28) == 0xe || a == 0xffffffffu;
}

enum vt_rf_verdict vt_rf_parse(const uint8_t *frame, size_t len, uint32_t local_addr,
			       uint16_t local_port, struct vt_rf_peer *peer,
			       size_t *payload_off, size_t *payload_len)
{
	const uint8_t *ip = frame + VT_RF_ETH_LEN, *udp;
	unsigned ihl, tot, flags, ulen;
	uint32_t dst, src;
	uint16_t sport, dport;

	if (len < VT_RF_ETH_LEN)
		return VT_RF_TRUNCATED;
	if (get16(frame + 12) != ETH_P_IPV4)
		return VT_RF_NOT_IPV4;
	if (len < VT_RF_ETH_LEN + VT_RF_IP_LEN)
		return VT_RF_TRUNCATED;
	ihl = ip[0] & 0xfu;
	if ((ip[0] >> 4) != 4 || ihl < 5)
		return VT_RF_BAD_IHL;
	if (ihl > 5)
		return VT_RF_IP_OPTIONS;
	tot = get16(ip + 2);
	if (tot < VT_RF_IP_LEN + VT_RF_UDP_LEN)
		return VT_RF_BAD_LEN;
	if (VT_RF_ETH_LEN + (size_t)tot > len)
		return VT_RF_TRUNCATED;
	flags = get16(ip + 6);
	if (flags & (IP_MF | IP_OFFMASK))
		return VT_RF_FRAGMENT;
	if (ip[9] != IPPROTO_UDP_NR)
		return VT_RF_NOT_UDP;
	if (vt_rf_csum_fold(vt_rf_csum_add(0, ip, VT_RF_IP_LEN)) != 0xffff)
		return VT_RF_BAD_CSUM;
	udp = ip + VT_RF_IP_LEN;
	ulen = get16(udp + 4);
	if (ulen != tot - VT_RF_IP_LEN)
		return VT_RF_BAD_LEN;
	src = get32(ip + 12);
	dst = get32(ip + 16);
	sport = get16(udp);
	dport = get16(udp + 2);
	/* bound to any: still never a broadcast or multicast one (a reply would leave from it) */
	if (local_addr ? dst != local_addr : bad_source(dst))
		return VT_RF_WRONG_ADDR;
	if (dport != local_port)
		return VT_RF_WRONG_PORT;
	if (sport == 0 || bad_source(src))
		return VT_RF_BAD_SOURCE;
	memcpy(peer->local_mac, frame, 6);
	memcpy(peer->peer_mac, frame + 6, 6);
	peer->peer_addr = src;
	peer->local_addr = dst;
	peer->peer_port = sport;
	peer->local_port = dport;
	*payload_off = VT_RF_HDR_LEN;
	*payload_len = ulen - VT_RF_UDP_LEN;
	return VT_RF_OK;
}

int vt_rf_build(uint8_t hdr[VT_RF_HDR_LEN], const struct vt_rf_peer *peer,
		const uint8_t *payload, size_t payload_len)
{
	uint8_t *ip = hdr + VT_RF_ETH_LEN, *udp = ip + VT_RF_IP_LEN;
	uint8_t pseudo[12];
	uint16_t ulen, csum;
	uint64_t sum;

	if (payload_len > VT_RF_MAX_PAYLOAD)
		return -EMSGSIZE;
	ulen = (uint16_t)(payload_len + VT_RF_UDP_LEN);
	memcpy(hdr, peer->peer_mac, 6);
	memcpy(hdr + 6, peer->local_mac, 6);
	put16(hdr + 12, ETH_P_IPV4);

	ip[0] = 0x45;
	ip[1] = 0;
	put16(ip + 2, (uint16_t)(ulen + VT_RF_IP_LEN));
	put16(ip + 4, 0);		/* id: DF is set, never fragmented (RFC 6864) */
	put16(ip + 6, IP_DF);
	ip[8] = 64;
	ip[9] = IPPROTO_UDP_NR;
	put16(ip + 10, 0);
	put32(ip + 12, peer->local_addr);
	put32(ip + 16, peer->peer_addr);
	put16(ip + 10, (uint16_t)~vt_rf_csum_fold(vt_rf_csum_add(0, ip, VT_RF_IP_LEN)));

	put16(udp, peer->local_port);
	put16(udp + 2, peer->peer_port);
	put16(udp + 4, ulen);
	put16(udp + 6, 0);
	memcpy(pseudo, ip + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_UDP_NR;
	put16(pseudo + 10, ulen);
	sum = vt_rf_csum_add(0, pseudo, sizeof(pseudo));
	sum = vt_rf_csum_add(sum, udp, VT_RF_UDP_LEN);
	sum = vt_rf_csum_add(sum, payload, payload_len);
	csum = (uint16_t)~vt_rf_csum_fold(sum);
	put16(udp + 6, csum ? csum : 0xffff);	/* 0 would mean "no checksum" */
	return 0;
}
