/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What hand-off peers make vtierd hold, charged to the QEMU process that
 * asked (pid + start time, as the kernel names it at accept), within
 * per-peer bounds and host-wide bounds; and a reserve that keeps what a
 * reconnect of an existing store needs (a backend whose hand-off ended while
 * its QEMU runs, a store found at vtierd's start) out of every other peer's
 * reach: a new hand-off is refused when it would eat into the reserve, a
 * RECONNECT of a reserved store takes its reservation and is never refused
 * for a bound.
 *
 * Main loop only (no lock); no file-scope state. A refusal's message names
 * the bound, the value it would reach, the bound's value and its vtierd
 * option; the caller names the peer.
 */
#ifndef VTIER_CORE_PEER_BUDGET_H
#define VTIER_CORE_PEER_BUDGET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "ctier.h"
#include "ctier_remote_spec.h"

enum vt_bound {
	VT_BOUND_BACKENDS,	/* hand-offs held: accepted, or their store being opened */
	VT_BOUND_BYTES,		/* their declared bytes */
	VT_BOUND_FDS,		/* fds held for them (vt_budget_backend_charge) */
	VT_BOUND_THREADS,	/* threads held for them */
	VT_BOUND_VA,		/* address space mapped for them */
	VT_BOUND_PREPARES,	/* PREPAREs held (a destination's copies during precopy) */
	VT_BOUND_PREPARE_BYTES,	/* memory of their copies: not refused, copies not made */
	VT_BOUND_NR
};

struct vt_charge {
	uint64_t v[VT_BOUND_NR];
};

struct vt_budget_limits {
	uint64_t peer[VT_BOUND_NR];	/* per QEMU process; 0: no bound */
	uint64_t host[VT_BOUND_NR];	/* all peers and the reserve together; 0: no bound */
	unsigned int reconnect_grace_s;	/* a store found at start stays reserved this long */
};

/*
 * Defaults for a real host: a 1 TiB VM (several backends, a few compressed
 * tiers) fits one peer's bounds, a few hundred VMs fit the host's.
 * host[VT_BOUND_FDS] is 0 here: vt_budget_new() takes it from RLIMIT_NOFILE.
 */
void vt_budget_limits_default(struct vt_budget_limits *l);
/* The vtierd option of bound @b for a peer (@host false) or the host: "--max-peer-bytes". */
const char *vt_bound_option(enum vt_bound b, bool host);
/*
 * Set bound @b of a peer (@host false) or of the host from @text as its
 * option takes it: a size for bytes ("4TiB", util/size.h), else a count
 * (decimal, up to 1000000000); "0": no bound (the host's fds: from
 * RLIMIT_NOFILE). False with @error naming the option, the value and what is
 * accepted.
 */
bool vt_budget_limit_parse(struct vt_budget_limits *l, enum vt_bound b, bool host,
			   const char *text, GError **error);
/* @v as a value of bound @b: "17.0 TiB" for bytes, "65" for a count. */
void vt_bound_format(enum vt_bound b, uint64_t v, char *out, size_t len);
/* Its name in messages and JSON: "declared bytes", "declared_bytes". */
const char *vt_bound_name(enum vt_bound b);
const char *vt_bound_key(enum vt_bound b);

/* The peer as the kernel names it (and its cgroup, from /proc/PID/cgroup at accept). */
struct vt_peer_id {
	pid_t pid;
	uint64_t start_time;
	uid_t uid;
	char cgroup[160];	/* "" if unknown */
};

/*
 * @who for the process the kernel named: @pid, @start_time, @uid, and the
 * cgroup the hand-off server read at accept (NULL or "": unknown).
 */
void vt_peer_id_fill(struct vt_peer_id *who, pid_t pid, uint64_t start_time, uid_t uid,
		     const char *cgroup);

/*
 * What a backend of @size bytes with the compressed tiers @specs[@nr] makes
 * vtierd hold: 1 backend, @size bytes, its fds (the connection and its
 * pidfd, memfd, userfaultfd, the store's index and blocks, a pool file per
 * tier, the mover's eventfd), 1 thread (its mover) and the address space
 * its store may map (index + the blocks' reservation + the memory-medium
 * tiers' pools, mapped as they fill: at most 2 x @size between them).
 * @remote (NULL: none; else one per spec): a remote tier's local copies
 * (local_copy) are a store of their own, charged as one more store of
 * @size with the local tier alone (its index, blocks and pool).
 */
void vt_budget_backend_charge(uint64_t size, const struct vt_ctier_spec *specs,
			      const struct vt_remote_spec *remote, unsigned int nr,
			      struct vt_charge *out);
/* What a PREPARE holds: 1 prepare, its connection, pidfd and memfd, 1 thread. */
void vt_budget_prepare_charge(struct vt_charge *out);

struct vt_budget;

struct vt_budget *vt_budget_new(const struct vt_budget_limits *l);
void vt_budget_free(struct vt_budget *bu);
const struct vt_budget_limits *vt_budget_limits(const struct vt_budget *bu);

/* What vt_budget_take() did, for vt_budget_give(): kept by the caller. */
struct vt_budget_ticket {
	struct vt_peer_id who;
	struct vt_charge c;
	bool taken;
	bool from_reserve;		/* a RECONNECT that took its store's reservation */
	char key[128];
	struct vt_charge reserved;	/* that reservation, put back if the hand-off fails */
	uint64_t owner_start;
	pid_t owner_pid;
	gint64 expires_us;
};

/*
 * Charge @c to @who. A @reconnect of store @key reserved for @who (or for a
 * process not known yet) takes its reservation: 0 whatever the bounds.
 * Otherwise every bound is checked, the peer's first (its held + @c), then
 * the host's (all held + the reserve + @c): -EDQUOT with @msg naming the
 * first bound passed, e.g. "declared bytes would be 17.0 TiB, over this
 * peer's bound of 4.0 TiB (--max-peer-bytes)". 0: @t holds the charge.
 * VT_BOUND_PREPARE_BYTES is not checked here (quotas: vt_budget_peer_quota).
 */
int vt_budget_take(struct vt_budget *bu, const struct vt_peer_id *who, const char *key,
		   bool reconnect, const struct vt_charge *c, struct vt_budget_ticket *t,
		   char *msg, size_t msg_len);
/*
 * Give back what @t holds (nothing if it holds nothing); @restore: the
 * hand-off failed, a reservation it took is put back.
 */
void vt_budget_give(struct vt_budget *bu, struct vt_budget_ticket *t, bool restore);

/*
 * Keep @c for the reconnect of store @key by process @pid/@start_time (0:
 * not known; any RECONNECT of @key may take it, and the hand-off gives it
 * back if it fails), until vt_budget_unreserve() or, if @ttl_s, that many
 * seconds. A second reservation of @key replaces the first.
 */
void vt_budget_reserve(struct vt_budget *bu, const char *key, pid_t pid, uint64_t start_time,
		       const struct vt_charge *c, unsigned int ttl_s);
/* Drop the reservation of @key if it is for @pid/@start_time, or for a process not known. */
void vt_budget_unreserve(struct vt_budget *bu, const char *key, pid_t pid, uint64_t start_time);
bool vt_budget_reserved(struct vt_budget *bu, const char *key);

/*
 * Reserve the stores found under @store_root (directories named as
 * handoff/backend.c names them: "<32 hex uuid>-<id>" or "pidP-START-<id>", the
 * latter only while that process lives) for reconnect_grace_s, each sized
 * by its index file (vt_budget_backend_charge() of the size it can hold,
 * with @specs). The number reserved.
 */
unsigned int vt_budget_reserve_store_root(struct vt_budget *bu, const char *store_root,
					  const struct vt_ctier_spec *specs,
					  const struct vt_remote_spec *remote, unsigned int nr);

/*
 * The shared bound on the copies' memory of @who's PREPAREs and of the
 * host's (movers/ctier_prepared.h): referenced for the caller.
 */
struct vt_prepared_quota *vt_budget_peer_quota(struct vt_budget *bu, const struct vt_peer_id *who);
struct vt_prepared_quota *vt_budget_host_quota(struct vt_budget *bu);

/* What @who holds now (zeros if nothing). */
void vt_budget_peer_held(struct vt_budget *bu, const struct vt_peer_id *who, struct vt_charge *out);
/* All peers', the reserve's, and the refusals per bound so far. */
void vt_budget_totals(struct vt_budget *bu, struct vt_charge *held, struct vt_charge *reserve,
		      uint64_t refused[VT_BOUND_NR]);
/* The bounds, what is held and reserved, refusals per bound, peers: for vtierctl. */
void vt_budget_to_json(struct vt_budget *bu, JsonBuilder *j);

#endif
