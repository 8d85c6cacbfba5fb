/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The remote tier's client: one VM's pages on memory servers (vtier-memd).
 * Each page is sealed here with the VM's page key (remote_seal.h) before it
 * leaves, so a server holds only ciphertext it cannot read or forge; the
 * client keeps, per page, the version it last stored and which servers
 * hold it, and opens only that version: a stale, swapped or forged copy is
 * refused and the next copy is tried.
 *
 * Never the only copy: with copies = 2 a put returns 0 only once two live
 * servers acknowledged the page; with fewer live servers than copies the
 * tier takes no new pages (-EAGAIN). A server that stops answering is down:
 * its copies are not counted (vt_rc_repair() re-creates them on a live
 * server) but stay named, so a server that was only unreachable is a copy
 * again when it answers; one that answers holding nothing of this VM's
 * (restarted) has its copies forgotten. Frees meant for a down server are
 * sent when it is back. A request is retried with a
 * new sequence number (the server's replay window never sees a number
 * twice) a bounded number of times, each try bounded: a call never waits
 * forever (at most the sum of its tries' timeouts per server asked: 188 ms
 * by default; where a server's replies are slow, its first try waits its
 * smoothed round trip + 4 x its variation instead, at most 64 ms, so at
 * most 6 x 64 ms).
 *
 * The calls block their caller (they poll the transport; where the client's
 * end is AF_XDP with busy_poll, they spin on its ring instead, yielding the
 * CPU between looks): they run on a mover's thread, never on a main loop.
 * Serialised inside (a mutex): one request in flight per client; batches
 * carry up to VT_RP_BATCH_MAX pages.
 * Library code: returns -errno, logs nothing above debug.
 */
#ifndef VTIER_REMOTE_CLIENT_H
#define VTIER_REMOTE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "latency_hist.h"
#include "remote_proto.h"
#include "remote_transport.h"

#define VT_RC_MAX_SERVERS 8
#define VT_RC_TIMEOUT_US_DEFAULT 4000	/* first try; doubles each retry, up to: */
#define VT_RC_TIMEOUT_US_RTO_MAX 64000	/* no try waits longer, however slow the path */
#define VT_RC_TRIES_DEFAULT 6		/* 4 + 8 + 16 + 32 + 64 + 64 = 188 ms at most per server */
#define VT_RC_DOWN_AFTER 3		/* requests in a row unanswered: the server is down */
#define VT_RC_PROBE_NS (500ull * 1000 * 1000)	/* a down server is probed (HELLO) this often */
#define VT_RC_PENDING_FREE_MAX 65536	/* frees kept per down server for its return */

struct vt_rc_server {
	uint32_t addr;			/* IPv4, host order */
	uint16_t port;			/* host order */
	uint8_t pk[VT_SEAL_PK_BYTES];	/* its public key (vtier-memd --show-key) */
};

struct vt_rc_config {
	struct vt_rc_server server[VT_RC_MAX_SERVERS];
	unsigned int nr_servers;
	unsigned int copies;		/* servers holding each page: 1..nr_servers, at most 2 */
	uint8_t vm_key[VT_SEAL_KEY_BYTES];	/* the VM's; never sent */
	struct vt_rt_config transport;	/* the client's own end (addr, port 0: any; mode) */
	size_t frag_max;		/* 0: VT_RP_FRAG_DEFAULT */
	unsigned int timeout_us;	/* 0: VT_RC_TIMEOUT_US_DEFAULT */
	unsigned int tries;		/* per server and request; 0: VT_RC_TRIES_DEFAULT */
};

struct vt_rc_page {
	uint64_t id;			/* the client's name for the page (any u64) */
	const void *data;		/* the bytes to keep (a compressed page), <= 4096 */
	size_t len;
};

enum vt_rc_state { VT_RC_UP, VT_RC_DOWN, VT_RC_REFUSED };

struct vt_rc_server_stats {
	enum vt_rc_state state;
	uint64_t requests, retries, timeouts, bad_replies, refused_pages;
	uint64_t lost, regained;	/* times marked down, and up again */
	uint64_t emptied;		/* times it came back holding nothing of ours (restarted) */
	uint64_t orphaned;		/* frees it missed beyond VT_RC_PENDING_FREE_MAX */
	uint64_t pages;			/* pages this client has there (down: as it had) */
	struct vt_latency_hist rtt;	/* request to its reply, ns */
};

struct vt_rc_stats {
	uint64_t pages;			/* pages stored (with at least one copy) */
	uint64_t under_copies;		/* pages with fewer copies than configured */
	uint64_t puts, gets, frees, get_fallbacks;	/* fallbacks: served by a later copy */
	uint64_t damaged;		/* copies that did not open (forged, stale, swapped) */
	uint64_t repaired;		/* copies re-created by vt_rc_repair() */
	uint64_t lost_pages;		/* pages whose every holder came back empty */
	unsigned int servers_up;
	struct vt_latency_hist get_ns;	/* vt_rc_get(), whole call */
};

struct vt_rc;

/* NULL with @err naming the bad field, its value and what is accepted. */
struct vt_rc *vt_rc_new(const struct vt_rc_config *cfg, char *err, size_t err_len);
void vt_rc_free(struct vt_rc *rc);
/* HELLO to every server: how many answered (0..nr_servers) or -errno. */
int vt_rc_connect(struct vt_rc *rc);
/*
 * Store @n (1..VT_RP_BATCH_MAX) pages on `copies` live servers each. 0 when
 * every page has all its copies acknowledged; else -errno (the first
 * failure: -EAGAIN fewer live servers than copies, -ENOSPC a server's cap,
 * -ETIMEDOUT) with @status[i] per page (0 or -errno). A page that failed is
 * not stored any more (vt_rc_get: -ENOENT): its copies, new and old, are
 * freed wherever they may be (a server that timed out may still take the
 * new one; the new one may have overwritten the old), now or, for a down
 * server, at its return.
 */
int vt_rc_put(struct vt_rc *rc, const struct vt_rc_page *pages, unsigned int n, int *status);
/*
 * The bytes of page @id into @buf: from the first copy that answers and
 * opens as this page's current version. -ENOENT: not stored; -EAGAIN: no
 * copy could be read but a holder did not answer (down, timed out): ask
 * again later, never serve anything else meanwhile; -EBADMSG: every holder
 * answered and no copy opens (forged, stale or lost there: it never will).
 */
int vt_rc_get(struct vt_rc *rc, uint64_t id, void *buf, size_t cap, size_t *len);
/*
 * Pages @ids[0..@n) (1..VT_RP_BATCH_MAX) into @bufs[i] (@cap bytes each),
 * their lengths in @lens[i] and 0 or -errno in @status[i] as vt_rc_get()
 * gives for one: one GET per server names all the pages it is asked for
 * (a server answers the first that fit one message; the rest are asked
 * again), each opened as its current version. A page the batch did not
 * bring (a copy damaged, its server down) is read as vt_rc_get() reads it,
 * from its other copy. Returns how many pages were read, or -EINVAL.
 */
int vt_rc_get_batch(struct vt_rc *rc, const uint64_t *ids, unsigned int n, void *const *bufs,
		    size_t cap, size_t *lens, int *status);
/*
 * The VM is gone for good: each server is asked to forget this namespace,
 * its pages and all (HELLO with VT_RP_HELLO_BYE, the usual tries), and every
 * page is forgotten here. How many servers confirmed (0..nr_servers): one
 * that did not keeps the copies, sealed with a key nobody holds any more,
 * until it restarts.
 */
int vt_rc_bye(struct vt_rc *rc);
/* Forget @n pages here and on their servers (a server down: when it is back). */
int vt_rc_free_pages(struct vt_rc *rc, const uint64_t *ids, unsigned int n);
/*
 * Re-create lost copies (a holder down) on live servers, up to @budget
 * pages; probes down servers first. Returns pages repaired or -errno.
 */
int vt_rc_repair(struct vt_rc *rc, unsigned int budget);
/*
 * A page known from elsewhere (the page store's index, after the agent
 * restarted): stored as @version on the servers of the bits of @holders.
 * 0, -EEXIST (known already), -EINVAL (version 0, no holder, a bit past the
 * servers).
 */
int vt_rc_adopt(struct vt_rc *rc, uint64_t id, uint32_t version, uint8_t holders);
/* What a put left: the page's version and holders (bit s: server s). 0 or -ENOENT. */
int vt_rc_page_state(struct vt_rc *rc, uint64_t id, uint32_t *version, uint8_t *holders);
unsigned int vt_rc_nr_servers(const struct vt_rc *rc);
void vt_rc_get_stats(struct vt_rc *rc, struct vt_rc_stats *st);
void vt_rc_server_stats(struct vt_rc *rc, unsigned int i, struct vt_rc_server_stats *st);
/* The client's own end: its transport's counters and mode ("udp", "afxdp-copy", ...) */
void vt_rc_transport_stats(struct vt_rc *rc, struct vt_rt_stats *st);
const char *vt_rc_state_name(enum vt_rc_state s);
/* "A.B.C.D:PORT" of @s into @buf (VT_RC_SERVER_NAME_LEN bytes suffice). */
#define VT_RC_SERVER_NAME_LEN 24
void vt_rc_server_name(const struct vt_rc_server *s, char *buf, size_t len);

#endif
