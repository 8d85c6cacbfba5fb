/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Ethernet/IPv4/UDP headers for the AF_XDP transport, built and checked by
 * hand (the kernel's stack never sees these frames). Pure functions over
 * byte buffers: no I/O, no allocation, no logging.
 *
 * Received frames are refused unless they are Ethernet II + IPv4 without
 * options or fragmentation + UDP, to our port (and our address when bound to
 * one), from a unicast source with a non-zero port, with a correct IPv4 header
 * checksum and consistent IPv4/UDP lengths. The UDP checksum of a received
 * frame is not checked: on veth and other paths with checksum offload the
 * field holds only the pseudo-header's partial sum (CHECKSUM_PARTIAL), and
 * the payload's integrity is the protocol's keyed tag's job. Built frames
 * carry a full UDP checksum (a receiver that checks drops damage early).
 */
#ifndef VTIER_REMOTE_FRAME_H
#define VTIER_REMOTE_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define VT_RF_ETH_LEN 14u
#define VT_RF_IP_LEN 20u
#define VT_RF_UDP_LEN 8u
#define VT_RF_HDR_LEN (VT_RF_ETH_LEN + VT_RF_IP_LEN + VT_RF_UDP_LEN)	/* 42 */
/* The largest UDP payload (IPv4 total length is 16 bits) */
#define VT_RF_MAX_PAYLOAD (65535u - VT_RF_IP_LEN - VT_RF_UDP_LEN)

/* Why a frame was refused; VT_RF_OK (0) when it was not. */
enum vt_rf_verdict {
	VT_RF_OK = 0,
	VT_RF_TRUNCATED,	/* shorter than its headers or its IPv4 total length */
	VT_RF_NOT_IPV4,		/* ethertype is not 0x0800 (ARP, IPv6, VLAN-tagged, ...) */
	VT_RF_BAD_IHL,		/* IP version != 4 or IHL < 5 */
	VT_RF_IP_OPTIONS,	/* IHL > 5 */
	VT_RF_FRAGMENT,		/* MF set or a fragment offset */
	VT_RF_NOT_UDP,		/* IP protocol != 17 */
	VT_RF_BAD_CSUM,		/* IPv4 header checksum */
	VT_RF_BAD_LEN,		/* UDP length != IPv4 total length - 20, or < 8 */
	VT_RF_WRONG_ADDR,	/* destination is not our address (bound), or not unicast (any) */
	VT_RF_WRONG_PORT,	/* destination port is not ours */
	VT_RF_BAD_SOURCE,	/* source port 0, or source address in 0/8, 127/8, multicast, broadcast */
	VT_RF_NR
};

/* "truncated", "not-ipv4", ...: a stable word per verdict (stats, logs) */
const char *vt_rf_verdict_name(enum vt_rf_verdict v);

/* The two ends of one datagram. Addresses and ports in host byte order. */
struct vt_rf_peer {
	uint8_t peer_mac[6];
	uint8_t local_mac[6];
	uint32_t peer_addr;
	uint32_t local_addr;
	uint16_t peer_port;
	uint16_t local_port;
};

/*
 * Check @frame (@len bytes, Ethernet header first) against @local_addr
 * (0 = any) and @local_port. On VT_RF_OK: @peer filled from the frame (its
 * local_* from the destination fields), *payload_off and *payload_len say
 * where the UDP payload is (Ethernet padding after it is ignored).
 * Reads at most the first VT_RF_HDR_LEN bytes of @frame: a multi-buffer
 * frame passes its first buffer (>= 42 bytes) and its whole length.
 */
enum vt_rf_verdict vt_rf_parse(const uint8_t *frame, size_t len, uint32_t local_addr,
			       uint16_t local_port, struct vt_rf_peer *peer,
			       size_t *payload_off, size_t *payload_len);

/*
 * Write the 42 bytes of headers for a @payload_len-byte payload from
 * @peer->local_* to @peer->peer_* into @hdr; @payload (already in place
 * after the headers or elsewhere) is summed into the UDP checksum.
 * -EMSGSIZE when @payload_len > VT_RF_MAX_PAYLOAD.
 */
int vt_rf_build(uint8_t hdr[VT_RF_HDR_LEN], const struct vt_rf_peer *peer,
		const uint8_t *payload, size_t payload_len);

/*
 * The Internet checksum (RFC 1071): add @len bytes (big-endian 16-bit words;
 * only the last piece of a sum may have an odd length) to @sum, then fold to
 * 16 bits (not inverted).
 */
uint64_t vt_rf_csum_add(uint64_t sum, const uint8_t *p, size_t len);
uint16_t vt_rf_csum_fold(uint64_t sum);

#endif
