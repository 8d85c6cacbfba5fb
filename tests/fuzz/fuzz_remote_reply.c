// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target of the client's side of the remote tier's wire
 * (host-agent/remote/remote_proto.c): reply datagrams from a memory server
 * through vt_rp_reply_check(), reassembly and the reply body decoders. The
 * input:
 *   byte 0      the request's op (low 3 bits, 1..5) and frag max 3968 (bit 3)
 *   records     u16 length (LE), u8 flags, the datagram (cut at the input's end)
 *               flags bit 0: tag it with the test access key; bit 1: the
 *               test namespace and the request's seq in its header; bits
 *               4-7: time passing before it, in 200 ms steps
 * Every accepted message must decode inside its body or be refused.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_dgram_records.h"
#include "remote_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEQ 1700000000000000123ull

static void inside(const uint8_t *p, size_t len, const uint8_t *body, size_t blen)
{
	assert(p >= body && len <= blen && (size_t)(p - body) <= blen - len);
}

static void decode(uint8_t op, const struct vt_rp_msg *m)
{
	struct vt_rp_get_item items[VT_RP_BATCH_MAX];
	uint16_t st[VT_RP_BATCH_MAX];
	struct vt_rp_caps caps;
	struct vt_rp_stat stat;
	unsigned int n;

	switch (op) {
	case VT_RP_HELLO:
		vt_rp_caps_decode(m->body, m->len, &caps);
		break;
	case VT_RP_PUT:
	case VT_RP_FREE:
		if (vt_rp_status_decode(m->body, m->len, st, &n) == VT_RP_OK)
			assert(n <= VT_RP_BATCH_MAX);
		break;
	case VT_RP_GET:
		if (vt_rp_get_reply_decode(m->body, m->len, items, &n) != VT_RP_OK)
			break;
		assert(n <= VT_RP_BATCH_MAX);
		for (unsigned int i = 0; i < n; i++) {
			assert(items[i].blob_len <= VT_RP_BLOB_MAX);
			assert(!items[i].status || !items[i].blob_len);
			inside(items[i].blob, items[i].blob_len, m->body, m->len);
		}
		break;
	case VT_RP_STAT:
		vt_rp_stat_decode(m->body, m->len, &stat);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t vm_key[VT_SEAL_KEY_BYTES];
	struct vt_rp_reasm r = { 0 };
	struct vt_seal_keys k;
	uint64_t now = 1000000000ull;
	unsigned int expired = 0;
	size_t frag_max, len;
	uint8_t op, flags, *d;

	if (size < 1)
		return 0;
	op = (uint8_t)(data[0] % 5 + 1);
	frag_max = data[0] & 8 ? VT_RP_FRAG_LIMIT : VT_RP_FRAG_DEFAULT;
	data++;
	size--;
	memset(vm_key, 0x11, sizeof(vm_key));
	assert(vt_seal_derive(vm_key, &k) == 0);
	while ((d = fuzz_next_dgram(&data, &size, &len, &flags))) {
		struct vt_rp_dgram dg;
		struct vt_rp_msg m;
		bool done;

		if ((flags & 2) && len >= VT_RP_HDR_BYTES) {
			struct vt_rp_hdr hdr;

			vt_rp_hdr_read(d, &hdr);
			memcpy(hdr.ns, k.ns, VT_RP_NS_BYTES);
			hdr.seq = SEQ;
			vt_rp_hdr_write(&hdr, d);
		}
		if ((flags & 1) && len >= VT_RP_HDR_BYTES + VT_RP_TAG_BYTES)
			vt_seal_tag(k.access_key, d, len - VT_RP_TAG_BYTES, d + len - VT_RP_TAG_BYTES);
		now += (uint64_t)(flags >> 4) * 200000000ull;
		if (vt_rp_reply_check(d, len, frag_max, k.access_key, k.ns, op, SEQ, &dg) ==
		    VT_RP_OK) {
			inside(dg.frag, dg.hdr.frag_len, d, len);
			if (vt_rp_reasm_add(&r, &dg, now, &m, &done, &expired) == VT_RP_OK && done) {
				assert(m.hdr.op == (op | VT_RP_REPLY) && m.hdr.seq == SEQ);
				decode(op, &m);
				vt_rp_msg_release(&m);
			}
		}
		free(d);
	}
	vt_rp_reasm_clear(&r);
	return 0;
}
