// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The AF_XDP transport's Ethernet/IPv4/UDP headers (remote/remote_frame.c):
 * what is built parses back, its checksums verify, and every malformed or
 * misaddressed frame is refused with its own verdict.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "remote_frame.h"

#define LOCAL 0x0a4d0001u	/* 10.77.0.1 */
#define PEER 0x0a4d0002u	/* 10.77.0.2 */
#define PORT 7111
#define PPORT 40000

static const struct vt_rf_peer reply_to = {
	.peer_mac = { 0x02, 0, 0, 0, 0, 2 }, .local_mac = { 0x02, 0, 0, 0, 0, 1 },
	.peer_addr = PEER, .local_addr = LOCAL, .peer_port = PPORT, .local_port = PORT,
};

/* A frame as the peer sends it to us: @len payload bytes after the headers */
static size_t request(uint8_t *f, size_t len)
{
	struct vt_rf_peer from = {
		.peer_mac = { 0x02, 0, 0, 0, 0, 1 }, .local_mac = { 0x02, 0, 0, 0, 0, 2 },
		.peer_addr = LOCAL, .local_addr = PEER, .peer_port = PORT, .local_port = PPORT,
	};
	size_t i;

	for (i = 0; i < len; i++)
		f[VT_RF_HDR_LEN + i] = (uint8_t)(i * 7 + 3);
	assert_int_equal(vt_rf_build(f, &from, f + VT_RF_HDR_LEN, len), 0);
	return VT_RF_HDR_LEN + len;
}

static enum vt_rf_verdict parse_at(const uint8_t *f, size_t len, uint32_t local)
{
	struct vt_rf_peer p;
	size_t off, plen;

	return vt_rf_parse(f, len, local, PORT, &p, &off, &plen);
}

static enum vt_rf_verdict parse(const uint8_t *f, size_t len)
{
	return parse_at(f, len, LOCAL);
}

/* recompute the IPv4 header checksum after an edit, so only the edit is judged */
static void fix_ip_csum(uint8_t *f)
{
	uint8_t *ip = f + VT_RF_ETH_LEN;
	uint16_t c;

	ip[10] = ip[11] = 0;
	c = (uint16_t)~vt_rf_csum_fold(vt_rf_csum_add(0, ip, (size_t)(ip[0] & 0xf) * 4));
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
}

static void test_round_trip(void **state)
{
	static const size_t sizes[] = { 0, 1, 63, 64, 1400, 1471, 3968, 4054, 8192 };
	static uint8_t f[VT_RF_HDR_LEN + 8192 + 64];
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = request(f, sizes[i]), off = 0, plen = 0, j;
		struct vt_rf_peer p;
		uint8_t pseudo[12];
		uint64_t sum;

		assert_int_equal(vt_rf_parse(f, n, LOCAL, PORT, &p, &off, &plen), VT_RF_OK);
		assert_int_equal(off, VT_RF_HDR_LEN);
		assert_int_equal(plen, sizes[i]);
		for (j = 0; j < plen; j++)
			assert_int_equal(f[off + j], (uint8_t)(j * 7 + 3));
		/* the ends as the reply needs them: the request's source is our peer */
		assert_memory_equal(&p, &reply_to, sizeof(p));
		/* any address (0) takes it too; Ethernet padding after the datagram is ignored */
		assert_int_equal(vt_rf_parse(f, n + 17, 0, PORT, &p, &off, &plen), VT_RF_OK);
		assert_int_equal(plen, sizes[i]);
		/* the UDP checksum as a receiver checks it: pseudo-header + UDP header + payload */
		memcpy(pseudo, f + VT_RF_ETH_LEN + 12, 8);
		pseudo[8] = 0;
		pseudo[9] = 17;
		memcpy(pseudo + 10, f + VT_RF_ETH_LEN + VT_RF_IP_LEN + 4, 2);
		sum = vt_rf_csum_add(0, pseudo, sizeof(pseudo));
		sum = vt_rf_csum_add(sum, f + VT_RF_ETH_LEN + VT_RF_IP_LEN, VT_RF_UDP_LEN + plen);
		assert_int_equal(vt_rf_csum_fold(sum), 0xffff);
		assert_false(f[40] == 0 && f[41] == 0);	/* 0 would say "no checksum" */
		/* DF set, TTL 64, no fragment offset */
		assert_int_equal(f[VT_RF_ETH_LEN + 6], 0x40);
		assert_int_equal(f[VT_RF_ETH_LEN + 7], 0);
		assert_int_equal(f[VT_RF_ETH_LEN + 8], 64);
	}
	assert_int_equal(vt_rf_build(f, &reply_to, f, VT_RF_MAX_PAYLOAD + 1), -EMSGSIZE);
}

/* A known header, its checksum worked out by hand (and by Python's struct) */
static void test_known_checksum(void **state)
{
	/* 45 00 00 1c 00 00 40 00 40 11 csum 0a 4d 00 02 0a 4d 00 01: 28 bytes, DF, TTL 64, UDP */
	static uint8_t f[VT_RF_HDR_LEN];
	struct vt_rf_peer from = {
		.peer_addr = LOCAL, .local_addr = PEER, .peer_port = PORT, .local_port = PPORT,
	};

	(void)state;
	assert_int_equal(vt_rf_build(f, &from, NULL, 0), 0);
	/* 0x4500+0x001c+0x4000+0x4011+0x0a4d+0x0002+0x0a4d+0x0001 = 0xd9ca -> ~ = 0x2635 */
	assert_int_equal(f[VT_RF_ETH_LEN + 10], 0x26);
	assert_int_equal(f[VT_RF_ETH_LEN + 11], 0x35);
	/* the UDP header: ports, length 8, and a checksum over the pseudo-header alone:
	 * 0x0a4d+0x0002+0x0a4d+0x0001+0x0011+0x0008 (pseudo) + 0x9c40+0x1bc7+0x0008 (UDP)
	 * = 0xccc5 -> ~ = 0x333a */
	assert_int_equal(f[VT_RF_ETH_LEN + VT_RF_IP_LEN + 6], 0x33);
	assert_int_equal(f[VT_RF_ETH_LEN + VT_RF_IP_LEN + 7], 0x3a);
}

static void test_refusals(void **state)
{
	static uint8_t f[VT_RF_HDR_LEN + 256], g[VT_RF_HDR_LEN + 256];
	size_t n = request(f, 100), l;
	uint8_t *ip = f + VT_RF_ETH_LEN, *udp = ip + VT_RF_IP_LEN;

	(void)state;
	/* every prefix of a good frame is refused */
	for (l = 0; l < n; l++) {
		enum vt_rf_verdict v = parse(f, l);

		assert_true(v == VT_RF_TRUNCATED);
	}
	assert_int_equal(parse(f, n), VT_RF_OK);

#define EDIT_AT(local, stmt, want)                         \
	do {                                               \
		memcpy(g, f, n);                           \
		ip = g + VT_RF_ETH_LEN;                    \
		udp = ip + VT_RF_IP_LEN;                   \
		stmt;                                      \
		assert_int_equal(parse_at(g, n, local), want); \
	} while (0)
#define EDIT(stmt, want) EDIT_AT(LOCAL, stmt, want)
#define EDIT_ANY(stmt, want) EDIT_AT(0, stmt, want)
	(void)udp;
	/* not IPv4: ARP, IPv6, an 802.1Q tag */
	EDIT((g[12] = 0x08, g[13] = 0x06), VT_RF_NOT_IPV4);
	EDIT((g[12] = 0x86, g[13] = 0xdd), VT_RF_NOT_IPV4);
	EDIT((g[12] = 0x81, g[13] = 0x00), VT_RF_NOT_IPV4);
	/* IHL and version */
	EDIT((ip[0] = 0x44, fix_ip_csum(g)), VT_RF_BAD_IHL);
	EDIT((ip[0] = 0x40), VT_RF_BAD_IHL);
	EDIT((ip[0] = 0x65), VT_RF_BAD_IHL);
	EDIT((ip[0] = 0x46, fix_ip_csum(g)), VT_RF_IP_OPTIONS);
	EDIT((ip[0] = 0x4f), VT_RF_IP_OPTIONS);
	/* fragments: more-fragments, an offset, both; DF alone is fine */
	EDIT((ip[6] = 0x20, fix_ip_csum(g)), VT_RF_FRAGMENT);
	EDIT((ip[6] = 0x00, ip[7] = 0x01, fix_ip_csum(g)), VT_RF_FRAGMENT);
	EDIT((ip[6] = 0x3f, ip[7] = 0xff, fix_ip_csum(g)), VT_RF_FRAGMENT);
	EDIT((ip[6] = 0x00, fix_ip_csum(g)), VT_RF_OK);
	/* not UDP */
	EDIT((ip[9] = 6, fix_ip_csum(g)), VT_RF_NOT_UDP);
	EDIT((ip[9] = 1, fix_ip_csum(g)), VT_RF_NOT_UDP);
	/* the IPv4 header checksum: any flipped bit of the header */
	for (l = 0; l < VT_RF_IP_LEN * 8; l++) {
		/* version/IHL and total length have verdicts of their own before the checksum */
		if (l < 8 || (l >= 16 && l < 32) || (l >= 48 && l < 64) || (l >= 72 && l < 80))
			continue;
		EDIT(ip[l / 8] ^= (uint8_t)(1u << (l % 8)), VT_RF_BAD_CSUM);
	}
	/* lengths: IPv4 total longer than the frame, shorter than its headers; UDP's own */
	EDIT((ip[2] = 0x01, ip[3] = 0x00, fix_ip_csum(g)), VT_RF_TRUNCATED);
	EDIT((ip[2] = 0, ip[3] = 27, fix_ip_csum(g)), VT_RF_BAD_LEN);
	EDIT((udp[4] = 0, udp[5] = 7), VT_RF_BAD_LEN);
	EDIT((udp[5] = (uint8_t)(udp[5] + 1)), VT_RF_BAD_LEN);
	EDIT((udp[5] = (uint8_t)(udp[5] - 1)), VT_RF_BAD_LEN);
	/* not ours: another port, another address */
	EDIT((udp[2] = 0, udp[3] = 53), VT_RF_WRONG_PORT);
	EDIT((ip[19] = 9, fix_ip_csum(g)), VT_RF_WRONG_ADDR);
	/* bound to any: any unicast address is ours, a broadcast or multicast one never */
	EDIT_ANY((ip[19] = 9, fix_ip_csum(g)), VT_RF_OK);
	EDIT_ANY((ip[16] = ip[17] = ip[18] = ip[19] = 255, fix_ip_csum(g)), VT_RF_WRONG_ADDR);
	EDIT_ANY((ip[16] = 239, fix_ip_csum(g)), VT_RF_WRONG_ADDR);
	/* sources a reply must never go to */
	EDIT((udp[0] = 0, udp[1] = 0), VT_RF_BAD_SOURCE);
	EDIT((ip[12] = 127, fix_ip_csum(g)), VT_RF_BAD_SOURCE);
	EDIT((ip[12] = 0, fix_ip_csum(g)), VT_RF_BAD_SOURCE);
	EDIT((ip[12] = 224, fix_ip_csum(g)), VT_RF_BAD_SOURCE);
	EDIT((ip[12] = ip[13] = ip[14] = ip[15] = 255, fix_ip_csum(g)), VT_RF_BAD_SOURCE);
#undef EDIT_ANY
#undef EDIT
#undef EDIT_AT
}

static void test_verdict_names(void **state)
{
	unsigned i, j;

	(void)state;
	for (i = 0; i < VT_RF_NR; i++) {
		assert_non_null(vt_rf_verdict_name(i));
		assert_string_not_equal(vt_rf_verdict_name(i), "unknown");
		for (j = 0; j < i; j++)
			assert_string_not_equal(vt_rf_verdict_name(i), vt_rf_verdict_name(j));
	}
	assert_string_equal(vt_rf_verdict_name(VT_RF_NR), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_known_checksum),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_verdict_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
