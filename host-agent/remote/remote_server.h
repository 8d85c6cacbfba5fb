/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The memory server's state, transport-independent (vtier-memd's core):
 * namespaces (one VM's pages each, reachable only through its access key),
 * their pages (opaque sealed blobs in this process's memory, nothing on
 * disk), the per-namespace and server caps (ENOSPC, never an eviction),
 * the anti-replay windows and reassembly. One entry point: "a datagram came
 * from PEER at NOW: here are the replies". Single-threaded by design (the
 * program's loop owns it); it reads no clock and logs nothing.
 */
#ifndef VTIER_REMOTE_SERVER_H
#define VTIER_REMOTE_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "remote_proto.h"
#include "remote_seal.h"

#define VT_RS_NS_CAP_DEFAULT (1ull << 30)
#define VT_RS_MAX_NS_DEFAULT 4096
#define VT_RS_NS_PER_ADDR_DEFAULT 256	/* namespaces one client address may create */
#define VT_RS_REASM_BYTES_DEFAULT (64ull << 20)
/* The client cap when none is given: 1/VT_RS_CLIENT_CAP_DIV of the server cap. */
#define VT_RS_CLIENT_CAP_DIV 2
/* What a page costs against the caps besides its blob: its entry and hash slot. */
#define VT_RS_PAGE_OVERHEAD 64

struct vt_rs_config {
	struct vt_seal_server_key key;	/* the HELLO box's key pair */
	uint64_t ns_cap_bytes;		/* per namespace; 0: VT_RS_NS_CAP_DEFAULT */
	uint64_t server_cap_bytes;	/* all namespaces; required (> 0) */
	/* all namespaces one client address created; 0: server cap / VT_RS_CLIENT_CAP_DIV */
	uint64_t client_cap_bytes;
	size_t frag_max;		/* 0: VT_RP_FRAG_DEFAULT; else FRAG_MIN..FRAG_LIMIT */
	unsigned int max_namespaces;	/* 0: VT_RS_MAX_NS_DEFAULT */
	unsigned int ns_per_addr;	/* created by one IPv4 address; 0: VT_RS_NS_PER_ADDR_DEFAULT */
	uint64_t reasm_max_bytes;	/* partial messages, all namespaces; 0: default */
};

/* Where a datagram came from and where its replies go (as the transport has it). */
struct vt_rs_peer {
	uint32_t addr;	/* IPv4, as the transport has it (vtier-memd's: host order) */
	uint16_t port;	/* likewise */
};

/* Called once per reply datagram, in order. */
typedef void (*vt_rs_emit_fn)(void *arg, const struct vt_rs_peer *peer, const uint8_t *dgram,
			      size_t len);

struct vt_rs;

/* NULL with @err (naming the bound, the value and what is accepted) on a bad config. */
struct vt_rs *vt_rs_new(const struct vt_rs_config *cfg, char *err, size_t err_len);
void vt_rs_free(struct vt_rs *rs);

/*
 * One datagram from @peer at monotonic time @now_ns: parsed, its tag
 * verified with its namespace's access key before its body is read, checked
 * against the replay window, reassembled, applied; replies go to @emit.
 * Returns VT_RP_OK (taken, or waiting for its other fragments) or why it was
 * dropped (also counted in the stats).
 */
enum vt_rp_reason vt_rs_input(struct vt_rs *rs, const struct vt_rs_peer *peer,
			      const uint8_t *dgram, size_t len, uint64_t now_ns,
			      vt_rs_emit_fn emit, void *arg);
/* Expires partial messages older than VT_RP_REASM_TIMEOUT_NS (call it every ~100 ms). */
void vt_rs_tick(struct vt_rs *rs, uint64_t now_ns);

struct vt_rs_stats {
	uint64_t rx;			/* datagrams given to vt_rs_input */
	uint64_t tx;			/* reply datagrams emitted */
	uint64_t drops[VT_RP_R_COUNT];	/* by reason: forged, replayed, unknown_ns, magic, ... */
	uint64_t expired;		/* partial messages expired */
	uint64_t over_cap;		/* pages refused ENOSPC (namespace, client or server cap) */
	uint64_t client_over_cap;	/* ... of them, those the client cap refused */
	uint64_t hello_ok;		/* HELLOs answered with the caps */
	uint64_t hello_refused;		/* HELLOs for a known namespace with another key */
	uint64_t resets;		/* HELLOs with VT_RP_HELLO_RESET: a namespace emptied */
	uint64_t byes;			/* HELLOs with VT_RP_HELLO_BYE: a namespace forgotten */
	uint64_t byes_unknown;		/* ... for a namespace not held (nothing done) */
	uint64_t ns_full;		/* HELLOs refused: max_namespaces reached */
	uint64_t ns_addr_full;		/* HELLOs refused: their address made ns_per_addr already */
	uint64_t namespaces, pages;
	uint64_t bytes;			/* charged: blobs + VT_RS_PAGE_OVERHEAD each */
	uint64_t ns_cap, server_cap, client_cap;
	uint64_t clients;		/* client addresses holding a namespace now */
	uint64_t reasm_bytes;		/* in partial messages now */
};
void vt_rs_get_stats(const struct vt_rs *rs, struct vt_rs_stats *out);

struct vt_rs_ns_stats {
	uint8_t ns[VT_RP_NS_BYTES];
	uint64_t pages, bytes, cap;
	uint64_t puts, gets, frees;	/* pages stored, served, freed */
	uint64_t drops[VT_RP_DROP_COUNT];	/* replayed, expired, malformed, over cap */
};
/* Calls @fn for each namespace (in no particular order). */
void vt_rs_foreach_ns(const struct vt_rs *rs,
		      void (*fn)(void *arg, const struct vt_rs_ns_stats *s), void *arg);

/*
 * One client address: the namespaces its HELLOs created and what they hold,
 * charged against the client cap. Kept while it has a namespace (its
 * counters go with its last one's BYE).
 */
struct vt_rs_client_stats {
	uint32_t addr;			/* IPv4, as vt_rs_input had it (struct vt_rs_peer) */
	uint64_t namespaces, pages, bytes, cap;
	uint64_t over_cap;		/* pages refused ENOSPC by the client cap */
};
/* Calls @fn for each client address holding a namespace (in no particular order). */
void vt_rs_foreach_client(const struct vt_rs *rs,
			  void (*fn)(void *arg, const struct vt_rs_client_stats *s), void *arg);

#endif /* VTIER_REMOTE_SERVER_H */
