/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The remote tier's wire format (docs/reference/remote-protocol.md): the
 * datagram header, the ops and their bodies, fragmentation of a message
 * into datagrams and their reassembly. Pure functions over byte buffers:
 * no I/O, no clock read (times are the caller's), crypto only through
 * remote_seal.h. Every length is checked against its buffer before a byte
 * of it is read; every refusal has its own reason (enum vt_rp_reason).
 */
#ifndef VTIER_REMOTE_PROTO_H
#define VTIER_REMOTE_PROTO_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remote_seal.h"

#define VT_RP_MAGIC 0x4d525456u		/* "VTRM" as bytes on the wire */
#define VT_RP_VERSION 1
#define VT_RP_HDR_BYTES 48
#define VT_RP_TAG_BYTES VT_SEAL_TAG_BYTES
#define VT_RP_NS_BYTES VT_SEAL_NS_BYTES
#define VT_RP_MAX_FRAGS 8
#define VT_RP_FRAG_DEFAULT 1400		/* MTU 1500: 20 + 8 + 48 + 1400 + 16 */
#define VT_RP_FRAG_LIMIT 3968		/* one 4 KiB AF_XDP frame with Eth/IP/UDP */
#define VT_RP_FRAG_MIN 1024		/* smallest frag max: 8 hold one page's GET reply */
#define VT_RP_DGRAM_MAX (VT_RP_HDR_BYTES + VT_RP_FRAG_LIMIT + VT_RP_TAG_BYTES)
#define VT_RP_BODY_LIMIT (VT_RP_MAX_FRAGS * VT_RP_FRAG_LIMIT)
#define VT_RP_BLOB_MAX (4096 + 64)	/* a sealed page the server accepts */
#define VT_RP_BATCH_MAX 64		/* pages named in one PUT/GET/FREE */
#define VT_RP_REPLY 0x80		/* op of a reply: the request's | 0x80 */
#define VT_RP_REASM_SLOTS 16		/* messages in reassembly per namespace */
#define VT_RP_REASM_TIMEOUT_NS 1000000000ull

enum vt_rp_op {
	VT_RP_HELLO = 1,
	VT_RP_PUT = 2,
	VT_RP_GET = 3,
	VT_RP_FREE = 4,
	VT_RP_STAT = 5,
};

/* The header, little-endian on the wire; vt_rp_hdr_read/write convert. */
struct vt_rp_hdr {
	uint32_t magic;		/* VT_RP_MAGIC */
	uint8_t version;	/* VT_RP_VERSION */
	uint8_t op;		/* enum vt_rp_op, | VT_RP_REPLY in a reply */
	uint8_t frag;		/* this fragment's index, 0..nfrags-1 */
	uint8_t nfrags;		/* 1..VT_RP_MAX_FRAGS */
	uint8_t ns[VT_RP_NS_BYTES];	/* the namespace */
	uint64_t seq;		/* request number; a reply echoes it */
	uint32_t body_len;	/* bytes of the whole body */
	uint16_t frag_len;	/* bytes of body in this datagram */
	uint16_t status;	/* replies: 0 or an errno value; requests: 0 */
	uint32_t frag_off;	/* this fragment's offset in the body */
	uint32_t reserved;	/* 0 */
} __attribute__((packed));
static_assert(sizeof(struct vt_rp_hdr) == VT_RP_HDR_BYTES, "wire header is 48 bytes");
/* A GET reply (or PUT) of one page of the largest blob fits in a message at any frag max. */
static_assert(VT_RP_MAX_FRAGS * VT_RP_FRAG_MIN >= 2 + 12 + VT_RP_BLOB_MAX, "frag min");

/* Why a datagram, a fragment or a body was refused; 0 is "accepted". */
enum vt_rp_reason {
	VT_RP_OK = 0,
	VT_RP_R_SHORT,		/* shorter than header + tag */
	VT_RP_R_LONG,		/* longer than VT_RP_DGRAM_MAX */
	VT_RP_R_MAGIC,
	VT_RP_R_VERSION,
	VT_RP_R_OP,		/* unknown op, or a reply where a request is due (or back) */
	VT_RP_R_NFRAGS,		/* 0 or > VT_RP_MAX_FRAGS */
	VT_RP_R_FRAG,		/* frag >= nfrags */
	VT_RP_R_FRAG_LEN,	/* over the receiver's frag max; 0 unless the body is empty, in 1 */
	VT_RP_R_FRAG_OFF,	/* frag_off + frag_len > body_len */
	VT_RP_R_BODY_LEN,	/* body_len > nfrags * frag max, or one fragment not all of it */
	VT_RP_R_DGRAM_LEN,	/* datagram length != 48 + frag_len + 16 */
	VT_RP_R_RESERVED,	/* reserved != 0 */
	VT_RP_R_STATUS,		/* a request with a status */
	VT_RP_R_HELLO_FRAGS,	/* a HELLO in more than one fragment */
	VT_RP_R_FORGED,		/* the tag does not verify */
	VT_RP_R_SEQ,		/* a reply whose seq is not its request's */
	VT_RP_R_NS,		/* a reply for another namespace */
	VT_RP_R_REPLAYED,	/* seq at or below the window, or seen */
	VT_RP_R_FRAG_DUP,	/* this fragment index is already in */
	VT_RP_R_FRAG_OVERLAP,	/* its bytes overlap another fragment's */
	VT_RP_R_FRAG_MISMATCH,	/* op, nfrags or body_len differ from its message's */
	VT_RP_R_REASM_FULL,	/* VT_RP_REASM_SLOTS messages already in flight */
	VT_RP_R_BODY,		/* a body that does not decode */
	VT_RP_R_UNKNOWN_NS,	/* server: a request for a namespace it does not hold */
	VT_RP_R_COUNT
};

/* A short stable name of a reason ("magic", "frag_overlap", ...). */
const char *vt_rp_reason_name(enum vt_rp_reason r);

void vt_rp_hdr_read(const uint8_t *buf, struct vt_rp_hdr *h);
void vt_rp_hdr_write(const struct vt_rp_hdr *h, uint8_t *buf);

/* One datagram, checked: its header (host order) and its fragment of body. */
struct vt_rp_dgram {
	struct vt_rp_hdr hdr;
	const uint8_t *frag;	/* inside the datagram, hdr.frag_len bytes */
	const uint8_t *tag;	/* inside the datagram */
};

/*
 * Checks one datagram of @len bytes against the format and @frag_max (the
 * receiver's largest fragment, VT_RP_FRAG_MIN..VT_RP_FRAG_LIMIT): a reply
 * when @want_reply, else a request (status 0). Reads the header only once
 * @len covers it. The tag is not verified here (the key depends on the
 * namespace): see vt_rp_verify().
 */
enum vt_rp_reason vt_rp_parse(const uint8_t *buf, size_t len, size_t frag_max, bool want_reply,
			      struct vt_rp_dgram *out);
/* The datagram's tag against @access_key: VT_RP_OK or VT_RP_R_FORGED. */
enum vt_rp_reason vt_rp_verify(const uint8_t *buf, size_t len,
			       const uint8_t access_key[VT_SEAL_KEY_BYTES]);

/* A message's datagrams as built by vt_rp_encode(). */
struct vt_rp_dgrams {
	unsigned int n;
	size_t len[VT_RP_MAX_FRAGS];
	uint8_t buf[VT_RP_MAX_FRAGS][VT_RP_DGRAM_MAX];
};

/*
 * Cuts @body into datagrams of at most @frag_max body bytes, each with the
 * header of @op, @ns, @seq, @status and a tag by @access_key. -EINVAL for a
 * frag max out of range, -E2BIG for a body over VT_RP_MAX_FRAGS fragments.
 */
int vt_rp_encode(uint8_t op, const uint8_t ns[VT_RP_NS_BYTES], uint64_t seq, uint16_t status,
		 const uint8_t *body, size_t body_len, size_t frag_max,
		 const uint8_t access_key[VT_SEAL_KEY_BYTES], struct vt_rp_dgrams *out);

/* Anti-replay: the highest seq seen and a 1024-bit window below it. */
#define VT_RP_WINDOW_BITS 1024
struct vt_rp_window {
	bool started;
	uint64_t top;
	uint64_t bits[VT_RP_WINDOW_BITS / 64];	/* bit i: top - i seen */
};
/* Would @seq be accepted (not seen, not below the window)? */
bool vt_rp_window_check(const struct vt_rp_window *w, uint64_t seq);
/* Marks @seq seen; false (and nothing changed) if the check refuses it. */
bool vt_rp_window_mark(struct vt_rp_window *w, uint64_t seq);

/* Reassembly of fragmented messages, one table per namespace (or peer). */
struct vt_rp_reasm_slot {
	bool used;
	uint8_t op, nfrags, got;	/* got: bit per fragment index */
	uint64_t seq;
	uint32_t body_len, have;
	uint64_t deadline_ns;
	uint32_t off[VT_RP_MAX_FRAGS], len[VT_RP_MAX_FRAGS];
	uint8_t *body;			/* body_len bytes, malloc'd */
};
struct vt_rp_reasm {
	struct vt_rp_reasm_slot slot[VT_RP_REASM_SLOTS];
};

/* A whole message: its header's fields (frag ones meaningless) and body. */
struct vt_rp_msg {
	struct vt_rp_hdr hdr;
	const uint8_t *body;
	size_t len;
	uint8_t *owned;			/* free() this after use (NULL: body is the datagram's) */
};

/*
 * Adds a checked and verified datagram. Returns VT_RP_OK with *@done true
 * and @msg filled when the message is complete, VT_RP_OK with *@done false
 * while fragments are missing, or the reason it was refused (the message it
 * belongs to, if any, keeps its other fragments). Expires partial messages
 * older than VT_RP_REASM_TIMEOUT_NS first (added to *@expired).
 */
enum vt_rp_reason vt_rp_reasm_add(struct vt_rp_reasm *r, const struct vt_rp_dgram *d,
				  uint64_t now_ns, struct vt_rp_msg *msg, bool *done,
				  unsigned int *expired);
/* Drops partial messages whose deadline is before @now_ns; returns how many. */
unsigned int vt_rp_reasm_expire(struct vt_rp_reasm *r, uint64_t now_ns);
/* Is a message of @seq partly in? */
bool vt_rp_reasm_has(const struct vt_rp_reasm *r, uint64_t seq);
void vt_rp_reasm_clear(struct vt_rp_reasm *r);
void vt_rp_msg_release(struct vt_rp_msg *m);

/* ---- bodies (all little-endian; decoders return VT_RP_OK or VT_RP_R_BODY) ---- */

/* HELLO: crypto_box_seal(server pk, ns || access_key || flags u32). */
/*
 * Flag: drop every page this namespace holds (a client that took the server
 * for dead and re-created its copies elsewhere no longer knows them).
 */
#define VT_RP_HELLO_RESET 1u
/*
 * Flag: the client is gone for good (its VM ended): the server forgets the
 * namespace, its pages and all, and answers with nothing held; a namespace it
 * does not hold is not created. Other flag bits are refused.
 */
#define VT_RP_HELLO_BYE 2u
#define VT_RP_HELLO_FLAGS (VT_RP_HELLO_RESET | VT_RP_HELLO_BYE)
#define VT_RP_HELLO_PLAIN_BYTES (VT_RP_NS_BYTES + VT_SEAL_KEY_BYTES + 4)
#define VT_RP_HELLO_BYTES (VT_RP_HELLO_PLAIN_BYTES + VT_SEAL_BOX_OVERHEAD)
int vt_rp_hello_seal(const uint8_t server_pk[VT_SEAL_PK_BYTES], const uint8_t ns[VT_RP_NS_BYTES],
		     const uint8_t access_key[VT_SEAL_KEY_BYTES], uint32_t flags,
		     uint8_t out[VT_RP_HELLO_BYTES]);
enum vt_rp_reason vt_rp_hello_open(const struct vt_seal_server_key *key, const uint8_t *body,
				   size_t len, uint8_t ns[VT_RP_NS_BYTES],
				   uint8_t access_key[VT_SEAL_KEY_BYTES], uint32_t *flags);

/* HELLO reply: the namespace's cap and use, the server's free bytes. */
struct vt_rp_caps {
	uint64_t ns_cap, ns_used, server_free;
};
#define VT_RP_CAPS_BYTES 24
size_t vt_rp_caps_encode(const struct vt_rp_caps *c, uint8_t out[VT_RP_CAPS_BYTES]);
enum vt_rp_reason vt_rp_caps_decode(const uint8_t *body, size_t len, struct vt_rp_caps *c);

/* PUT: u16 n, n x {u64 page_id, u16 blob_len}, the blobs. */
struct vt_rp_put_item {
	uint64_t page_id;
	uint16_t blob_len;
	const uint8_t *blob;
};
/* Returns the body's length, or -E2BIG when it does not fit @cap / the bounds. */
long vt_rp_put_encode(const struct vt_rp_put_item *items, unsigned int n, uint8_t *out, size_t cap);
/* @items has room for VT_RP_BATCH_MAX; blobs point into @body. */
enum vt_rp_reason vt_rp_put_decode(const uint8_t *body, size_t len, struct vt_rp_put_item *items,
				   unsigned int *n);

/* GET and FREE requests: u16 n (1..VT_RP_BATCH_MAX), n x u64 page_id. */
long vt_rp_ids_encode(const uint64_t *ids, unsigned int n, uint8_t *out, size_t cap);
enum vt_rp_reason vt_rp_ids_decode(const uint8_t *body, size_t len, uint64_t *ids, unsigned int *n);

/* PUT and FREE replies: u16 n, n x u16 status. */
long vt_rp_status_encode(const uint16_t *status, unsigned int n, uint8_t *out, size_t cap);
enum vt_rp_reason vt_rp_status_decode(const uint8_t *body, size_t len, uint16_t *status,
				      unsigned int *n);

/* GET reply: u16 n, n x {u64 page_id, u16 status, u16 blob_len}, the blobs. */
struct vt_rp_get_item {
	uint64_t page_id;
	uint16_t status;
	uint16_t blob_len;	/* 0 unless status is 0 */
	const uint8_t *blob;
};
long vt_rp_get_reply_encode(const struct vt_rp_get_item *items, unsigned int n, uint8_t *out,
			    size_t cap);
/* How many bytes a GET reply of these items takes (to stop where it no longer fits). */
size_t vt_rp_get_reply_size(const struct vt_rp_get_item *items, unsigned int n);
enum vt_rp_reason vt_rp_get_reply_decode(const uint8_t *body, size_t len,
					 struct vt_rp_get_item *items, unsigned int *n);

/* STAT reply: the namespace's pages, bytes, cap, the server's free bytes, drops. */
enum vt_rp_stat_drop {
	VT_RP_DROP_REPLAYED,
	VT_RP_DROP_EXPIRED,
	VT_RP_DROP_MALFORMED,	/* tagged, then refused (fragments, body) */
	VT_RP_DROP_OVER_CAP,	/* pages refused ENOSPC */
	VT_RP_DROP_COUNT
};
struct vt_rp_stat {
	uint64_t pages, bytes, cap, server_free;
	uint64_t drops[VT_RP_DROP_COUNT];
};
#define VT_RP_STAT_BYTES (4 * 8 + 2 + VT_RP_DROP_COUNT * 8)
size_t vt_rp_stat_encode(const struct vt_rp_stat *s, uint8_t out[VT_RP_STAT_BYTES]);
/* Takes more drop counters than it knows (a newer server) and ignores them. */
enum vt_rp_reason vt_rp_stat_decode(const uint8_t *body, size_t len, struct vt_rp_stat *s);

/* ---- the client's side ---- */

/*
 * Checks a datagram that answers request @op / @seq of namespace @ns:
 * format (@frag_max: the server's, which it replies at), tag by
 * @access_key, the reply bit, op, ns and seq echoed. The caller
 * reassembles with vt_rp_reasm_add() (a table per server).
 */
enum vt_rp_reason vt_rp_reply_check(const uint8_t *buf, size_t len, size_t frag_max,
				    const uint8_t access_key[VT_SEAL_KEY_BYTES],
				    const uint8_t ns[VT_RP_NS_BYTES], uint8_t op, uint64_t seq,
				    struct vt_rp_dgram *out);

#endif /* VTIER_REMOTE_PROTO_H */
