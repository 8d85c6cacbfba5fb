// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: the AF_XDP transport's frame parser (remote/remote_frame.c),
 * fed what the wire brings. The first byte picks the bound address (bit 0:
 * 10.77.0.1 or any); the rest is the frame. A frame accepted has its payload
 * inside it; the reply built from the parsed ends parses back on the other
 * side with the same payload.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "remote_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[VT_RF_HDR_LEN + 65536];
	struct vt_rf_peer p, q;
	size_t off, len, off2, len2;
	uint32_t local;
	enum vt_rf_verdict v;

	if (size < 1)
		return 0;
	local = data[0] & 1 ? 0x0a4d0001u : 0;
	v = vt_rf_parse(data + 1, size - 1, local, 7111, &p, &off, &len);
	if ((unsigned)v >= VT_RF_NR)
		__builtin_trap();
	if (v != VT_RF_OK)
		return 0;
	if (off + len > size - 1 || p.local_port != 7111 || (local && p.local_addr != local))
		__builtin_trap();
	memcpy(out + VT_RF_HDR_LEN, data + 1 + off, len);
	if (vt_rf_build(out, &p, out + VT_RF_HDR_LEN, len))
		__builtin_trap();
	if (vt_rf_parse(out, VT_RF_HDR_LEN + len, p.peer_addr, p.peer_port, &q, &off2, &len2) != VT_RF_OK ||
	    len2 != len || memcmp(out + off2, data + 1 + off, len) || q.peer_port != 7111 ||
	    q.peer_addr != p.local_addr)
		__builtin_trap();
	return 0;
}
