// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target of the memory server (host-agent/remote/remote_server.c):
 * datagrams from the network into vt_rs_input(). So that the fuzzer gets
 * past the tag check, the harness plays a client of a fixed test VM key:
 * it sends that client's HELLO first and, when a record's flags say so,
 * puts the client's namespace, a fresh seq and a valid tag on the mutated
 * datagram. The input:
 *   byte 0      bit 0: frag max 3968 (else 1400); bit 1: no HELLO first;
 *               bit 2: a hijacker's HELLO for the client's namespace too;
 *               bit 3: the namespace's owner says BYE after the records (the
 *               server must hold nothing then); bit 4: the client says BYE
 *               before them
 *   records     u16 length (LE), u8 flags, the datagram (cut at the input's end)
 *               flags bit 0: tag it with the test access key; bit 1: the
 *               test namespace and the current seq in its header (fragments
 *               of one message share it); bit 2: the seq advances first;
 *               bit 3: right magic, version and reserved; bits 4-7: time
 *               passing before it, in 200 ms steps
 * Every reply must be a well-formed reply, tagged with the client's key
 * when it answers the client's namespace; the caps always hold (the client
 * cap, below the namespace cap, binds first: the HELLOs' address is charged).
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "fuzz_dgram_records.h"
#include "remote_server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NS_CAP (16u << 10)
#define SERVER_CAP (24u << 10)
#define CLIENT_CAP (12u << 10)

struct harness {
	struct vt_seal_keys client, hijacker;
	/* Who holds the namespace (the first to HELLO it) and who was refused it. */
	const struct vt_seal_keys *owner, *other;
	size_t frag_max;
};

static void check_reply(void *arg, const struct vt_rs_peer *peer, const uint8_t *d, size_t len)
{
	const struct harness *h = arg;
	struct vt_rp_dgram dg;
	uint8_t *copy = malloc(len);

	(void)peer;
	memcpy(copy, d, len);
	assert(len <= VT_RP_HDR_BYTES + h->frag_max + VT_RP_TAG_BYTES);
	assert(vt_rp_parse(copy, len, h->frag_max, true, &dg) == VT_RP_OK);
	if (!memcmp(dg.hdr.ns, h->client.ns, VT_RP_NS_BYTES)) {
		const struct vt_seal_keys *k = dg.hdr.status == EACCES ? h->other : h->owner;

		assert(vt_rp_verify(copy, len, k->access_key) == VT_RP_OK);
	}
	free(copy);
}

/* Each address within the client cap; all of them hold what the server holds. */
static void check_client(void *arg, const struct vt_rs_client_stats *s)
{
	uint64_t *sum = arg;

	assert(s->cap == CLIENT_CAP && s->bytes <= CLIENT_CAP && s->namespaces > 0);
	*sum += s->bytes;
}

static void check_caps(const struct vt_rs *rs)
{
	struct vt_rs_stats st;
	uint64_t sum = 0;

	vt_rs_get_stats(rs, &st);
	vt_rs_foreach_client(rs, check_client, &sum);
	assert(st.bytes <= SERVER_CAP && sum == st.bytes);
}

static void send_hello(struct vt_rs *rs, struct harness *h, const struct vt_seal_keys *k,
		       const uint8_t pk[VT_SEAL_PK_BYTES], uint64_t seq, uint64_t now, uint32_t flags)
{
	static const struct vt_rs_peer peer = { 0x0100000a, 0x3412 };
	struct vt_rp_dgrams *d = malloc(sizeof(*d));
	uint8_t box[VT_RP_HELLO_BYTES];

	assert(vt_rp_hello_seal(pk, k->ns, k->access_key, flags, box) == 0);
	assert(vt_rp_encode(VT_RP_HELLO, k->ns, seq, 0, box, sizeof(box), h->frag_max,
			    k->access_key, d) == 1);
	vt_rs_input(rs, &peer, d->buf[0], d->len[0], now, check_reply, h);
	free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct vt_rs_peer peer = { 0x0200000a, 0x3412 };
	uint8_t vm_key[VT_SEAL_KEY_BYTES], seed[crypto_box_SEEDBYTES];
	struct vt_rs_config cfg = { .ns_cap_bytes = NS_CAP, .server_cap_bytes = SERVER_CAP,
				    .client_cap_bytes = CLIENT_CAP };
	uint64_t now = 1000000000ull, seq = 1700000000000000000ull;
	struct harness h = { 0 };
	struct vt_rs_stats st;
	uint8_t conf, flags, *d;
	struct vt_rs *rs;
	size_t len;

	if (size < 1)
		return 0;
	conf = data[0];
	data++;
	size--;
	/* Fixed keys: the same input does the same. */
	memset(seed, 0x5e, sizeof(seed));
	assert(vt_seal_init() == 0);
	crypto_box_seed_keypair(cfg.key.pk, cfg.key.sk, seed);
	memset(vm_key, 0x11, sizeof(vm_key));
	assert(vt_seal_derive(vm_key, &h.client) == 0);
	memset(vm_key, 0x22, sizeof(vm_key));
	assert(vt_seal_derive(vm_key, &h.hijacker) == 0);
	memcpy(h.hijacker.ns, h.client.ns, VT_RP_NS_BYTES);
	h.frag_max = conf & 1 ? VT_RP_FRAG_LIMIT : VT_RP_FRAG_DEFAULT;
	cfg.frag_max = h.frag_max;
	rs = vt_rs_new(&cfg, NULL, 0);
	assert(rs);
	/* Without the client's HELLO first, the hijacker's takes the namespace. */
	h.owner = conf & 2 && conf & 4 ? &h.hijacker : &h.client;
	h.other = h.owner == &h.client ? &h.hijacker : &h.client;
	if (!(conf & 2))
		send_hello(rs, &h, &h.client, cfg.key.pk, seq, now, 0);
	if (conf & 4)
		send_hello(rs, &h, &h.hijacker, cfg.key.pk, seq + 1, now, 0);
	if (conf & 16) {
		send_hello(rs, &h, &h.client, cfg.key.pk, seq + 2, now, VT_RP_HELLO_BYE);
		seq += 2;
	}

	while ((d = fuzz_next_dgram(&data, &size, &len, &flags))) {
		if (len >= VT_RP_HDR_BYTES) {
			struct vt_rp_hdr hdr;

			vt_rp_hdr_read(d, &hdr);
			if (flags & 4)
				seq++;
			if (flags & 2) {
				memcpy(hdr.ns, h.client.ns, VT_RP_NS_BYTES);
				hdr.seq = seq;
			}
			if (flags & 8) {
				hdr.magic = VT_RP_MAGIC;
				hdr.version = VT_RP_VERSION;
				hdr.reserved = 0;
			}
			vt_rp_hdr_write(&hdr, d);
		}
		if ((flags & 1) && len >= VT_RP_HDR_BYTES + VT_RP_TAG_BYTES)
			vt_seal_tag(h.client.access_key, d, len - VT_RP_TAG_BYTES,
				    d + len - VT_RP_TAG_BYTES);
		now += (uint64_t)(flags >> 4) * 200000000ull;
		vt_rs_input(rs, &peer, d, len, now, check_reply, &h);
		free(d);
		check_caps(rs);
	}
	if (conf & 8) {
		/* far past every seq the records used: the window takes it */
		send_hello(rs, &h, h.owner, cfg.key.pk, seq + (1ull << 32), now, VT_RP_HELLO_BYE);
		vt_rs_get_stats(rs, &st);
		assert(st.namespaces == 0 && st.pages == 0 && st.bytes == 0 && st.reasm_bytes == 0 &&
		       st.clients == 0);
	}
	vt_rs_tick(rs, now + 2 * VT_RP_REASM_TIMEOUT_NS);
	vt_rs_get_stats(rs, &st);
	assert(st.reasm_bytes == 0);
	vt_rs_free(rs);
	return 0;
}
