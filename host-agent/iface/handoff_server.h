/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The agent's end of the QEMU hand-off socket: listens on a unix socket,
 * accepts one connection per memory backend of each QEMU, receives the HELLO
 * with the memfd and the userfaultfd, answers it, and relays POLICY and
 * MIGRATION to the agent; sends STATS and PROFILE back. Runs on a glib main
 * context. A QEMU whose agent died reconnects by itself and sends a new
 * HELLO (VTIER_HELLO_F_RECONNECT) with the same fds: to the server that is
 * just a new connection.
 *
 * Library code: returns negative errno, logs nothing above g_debug.
 */
#ifndef VTIER_IFACE_HANDOFF_SERVER_H
#define VTIER_IFACE_HANDOFF_SERVER_H

#include <stdbool.h>
#include <sys/types.h>

#include <glib.h>

#include "handoff_proto.h"

struct vt_handoff_server;
struct vt_handoff_conn;

/* From ops->hello: the reply comes later, by vt_handoff_conn_hello_done(). */
#define VT_HANDOFF_HELLO_PENDING 1

/*
 * What the agent does with the messages of one connection. Every callback
 * runs on the server's main context; @opaque is the server's.
 */
struct vt_handoff_ops {
	/*
	 * A checked HELLO arrived (once per connection). @memfd and @uffd now
	 * belong to the callee, whatever it returns: close them when done.
	 * Return 0 to accept, or a negative errno to refuse with a reason in
	 * @msg (VTIER_HANDOFF_MESSAGE_LEN bytes); a refused connection closes.
	 * Or return VT_HANDOFF_HELLO_PENDING to answer later (slow work such as
	 * opening a store, done off the main loop), with
	 * vt_handoff_conn_hello_done(): until then the connection stays open
	 * without a HELLO deadline, and if it closes meanwhile ops->dropped runs
	 * (not ops->closed) while @conn stays valid for that call.
	 */
	int (*hello)(struct vt_handoff_conn *conn, const struct vt_handoff_hello *hello,
		     int memfd, int uffd, char *msg, void *opaque);
	/*
	 * Optional: a checked PREPARE arrived (a destination's early HELLO with
	 * VTIER_HELLO_F_PREPARE, before the HELLO proper on the same connection):
	 * @memfd (read it, never write or punch it) now belongs to the callee.
	 * The connection has no HELLO deadline from now on, but guest RAM must
	 * keep arriving: the server keeps a dup of the memfd and closes the
	 * connection (ops->dropped, "no guest RAM arrived") when its allocated
	 * bytes (st_blocks) did not grow for prepare_idle_ms, until the HELLO
	 * proper. A PREPARE stays pending: it counts in max_pending and the
	 * peer's max_peer_pending, and may be displaced by a peer below its
	 * share; if it closes before its HELLO is accepted, ops->dropped runs. The callee may keep what it
	 * prepares with vt_handoff_conn_set_user() until the HELLO (ops->hello
	 * finds it there) or ops->dropped. Return true to take QEMU's offer of
	 * an early hand-off (VTIER_HELLO_F_EARLY in the PREPARE): the server
	 * then answers with VTIER_HELLO_REPLY_F_EARLY and the HELLO proper
	 * (VTIER_HELLO_F_PRECOPY) follows at once; false (or no offer): no reply.
	 */
	bool (*prepare)(struct vt_handoff_conn *conn, const struct vt_handoff_hello *hello,
			int memfd, void *opaque);
	/*
	 * A checked POLICY arrived (policy->min with VTIER_POLICY_F_DRAM_MIN);
	 * return 0 or a negative errno with @msg.
	 */
	int (*policy)(struct vt_handoff_conn *conn, const struct vt_handoff_policy *policy,
		      char *msg, void *opaque);
	/*
	 * The backend's guest-physical ranges changed (checked to lie inside the
	 * backend of the HELLO); @ranges is the complete new list. Optional.
	 */
	void (*ranges)(struct vt_handoff_conn *conn, const struct vtier_handoff_range *ranges,
		       uint32_t n_ranges, void *opaque);
	/*
	 * QEMU says a live migration of this VM started or ended, or (SEND_END)
	 * finished its last pass over RAM and waits for SENT, which the agent
	 * sends with vt_handoff_conn_send_sent(), now or later. Optional.
	 */
	void (*migration)(struct vt_handoff_conn *conn, enum vtier_migration_event event,
			  void *opaque);
	/*
	 * The connection is gone: QEMU closed it, broke the protocol, or the
	 * server is being freed; @why says which in one line. @conn is freed
	 * when this returns. Not called for connections that never sent a
	 * valid HELLO.
	 */
	void (*closed)(struct vt_handoff_conn *conn, const char *why, void *opaque);
	/*
	 * Optional, for the agent's log: a connection that was never accepted
	 * was dropped (HELLO refused, checks failed, no HELLO in time, limits,
	 * protocol error), @why in one line; @conn is freed when this returns.
	 * Also called with @conn NULL, once per burst, when accept() fails for
	 * lack of fds (the server then stops accepting for accept_backoff_ms).
	 */
	void (*dropped)(struct vt_handoff_conn *conn, const char *why, void *opaque);
};

/*
 * What one peer may cost the agent. A peer over a limit loses its own
 * connection (with a reason), never delays another. A peer is the process
 * the kernel names at accept (SO_PEERCRED pid + start time); peers are
 * grouped by uid + cgroup (libvirt gives each VM a scope of its own) to
 * share max_pending out: when it is full, a newcomer whose group (or,
 * within its own group, whose process) holds at least two fewer pending
 * connections than the one holding the most displaces that one's oldest
 * (no HELLO yet or PREPARE-held; never one whose HELLO the agent is
 * answering); otherwise it is refused. Every refusal names the bound, its
 * value and the peer (pid, uid, cgroup).
 */
struct vt_handoff_limits {
	unsigned int hello_timeout_ms;	/* from accept to a complete HELLO (5000) */
	unsigned int idle_timeout_ms;	/* a partial message with no new byte (5000) */
	unsigned int send_timeout_ms;	/* queued output that QEMU does not read (10000) */
	unsigned int max_pending;	/* connections without an accepted HELLO, all peers (64) */
	size_t max_buffered_bytes;	/* partial input of all connections (64 MiB) */
	size_t max_output_bytes;	/* queued output per connection (16 MiB) */
	unsigned int accept_backoff_ms;	/* pause accepting after EMFILE with no reserve (100) */
	unsigned int max_peer_conns;	/* open connections of one process (64) */
	unsigned int max_peer_pending;	/* ... without an accepted HELLO, PREPAREs included (16) */
	unsigned int prepare_idle_ms;	/* a PREPARE's memfd must grow this often (30000; 0 never) */
	unsigned int reserve_hello_ms;	/* a HELLO on the fd reserve within (1000) */
};

void vt_handoff_limits_default(struct vt_handoff_limits *limits);
/* Applies to connections from now on (timers of existing ones at their next event). */
void vt_handoff_server_set_limits(struct vt_handoff_server *srv,
				  const struct vt_handoff_limits *limits);
/* Connections dropped before acceptance, and accept() pauses, so far. */
unsigned int vt_handoff_server_dropped(const struct vt_handoff_server *srv);
unsigned int vt_handoff_server_accept_pauses(const struct vt_handoff_server *srv);

/* Counters since the server started, for the agent's stats and metrics. */
struct vt_handoff_server_stats {
	unsigned int dropped;		/* closed before an accepted HELLO, every reason below too */
	unsigned int accept_pauses;	/* accept() stopped: fd limit (backoff or reserve) */
	unsigned int no_credentials;	/* at accept: SO_PEERCRED failed */
	unsigned int refused_peer_conns;	/* at accept: max_peer_conns */
	unsigned int refused_peer_pending;	/* at accept: max_peer_pending */
	unsigned int refused_full;	/* at accept: max_pending full, the peer holding its share */
	unsigned int displaced;		/* pending connections closed for a peer below its share */
	unsigned int hello_timeouts;	/* no complete HELLO within hello_timeout_ms */
	unsigned int prepare_idle;	/* PREPAREs closed: no guest RAM for prepare_idle_ms */
	unsigned int out_of_fds;	/* a message's fds not received: agent at RLIMIT_NOFILE */
	unsigned int reserve_accepts;	/* connections accepted on the fd reserve */
	unsigned int reserve_refused;	/* on the reserve: its peer's last one sent no HELLO */
	unsigned int fd_reserve_refused;	/* new hand-offs refused by set_fd_reserve() */
};
void vt_handoff_server_get_stats(const struct vt_handoff_server *srv,
				 struct vt_handoff_server_stats *stats);

/*
 * Out of fds: the server holds a few spare fds and closes them when accept()
 * fails with EMFILE, so that one connection at a time is accepted, its HELLO
 * (with fds) received and answered: checked and passed to ops->hello, or
 * refused with -EMFILE saying the agent is out of fds (RLIMIT_NOFILE); no
 * other connection is accepted until that one is answered or gone (a HELLO
 * within reserve_hello_ms). A peer whose reserve connection sent no HELLO
 * has its next one on the reserve refused at once.
 *
 * To keep fds for the reconnects of stores that exist: from now on a HELLO
 * or PREPARE without VTIER_HELLO_F_RECONNECT is refused (-EMFILE, reason
 * naming the numbers) while fewer than @fds fds are free (0: no check).
 * RECONNECT is the peer's word: ops->hello must refuse one that names no
 * existing store when vt_handoff_fds_free() is below the reserve.
 */
void vt_handoff_server_set_fd_reserve(struct vt_handoff_server *srv, unsigned int fds);
/* Fds this process may still open (RLIMIT_NOFILE minus open ones; LONG_MAX unlimited). */
long vt_handoff_fds_free(void);
/* Connections without an accepted HELLO now (PREPARE-held and answering ones included). */
unsigned int vt_handoff_server_pending(const struct vt_handoff_server *srv);
/* Payload bytes held by partial messages of all connections now. */
size_t vt_handoff_server_buffered_bytes(const struct vt_handoff_server *srv);

/*
 * Listen on @path (a stale socket file there is replaced) and serve on
 * @ctx (NULL: the default context). Returns 0 or a negative errno.
 */
int vt_handoff_server_new(const char *path, GMainContext *ctx, const struct vt_handoff_ops *ops,
			  void *opaque, struct vt_handoff_server **out);
/* Close every connection (calling ops->closed), stop listening, unlink. */
void vt_handoff_server_free(struct vt_handoff_server *srv);

/*
 * Sends never block: a message is queued (bounded by max_output_bytes) and
 * written as QEMU reads. 0 once queued; -ENOBUFS when the queue is full, and
 * then the connection closes on the next main loop iteration (ops->closed
 * says why); -ENOTCONN on a closed or closing connection.
 *
 * Send a STATS report; @tiers has stats->n_tiers entries, stats->flags is
 * set by the call. 0, or -EINVAL for a report QEMU would refuse (too many
 * tiers, an unnamed one), -ENOTCONN before the hand-off, -errno.
 */
int vt_handoff_conn_send_stats(struct vt_handoff_conn *conn, const struct vtier_handoff_stats *stats,
			       const struct vtier_handoff_tier *tiers);
/* The same with per-tier figures (VTIER_STATS_F_TIER_V2). */
int vt_handoff_conn_send_stats_v2(struct vt_handoff_conn *conn,
				  const struct vtier_handoff_stats *stats,
				  const struct vtier_handoff_tier_v2 *tiers);
/*
 * The same with the VM's memory TCO report after the tiers (VTIER_STATS_F_TCO):
 * @tco and its tco->n_tiers @tco_tiers; then the VM's migration block
 * (VTIER_STATS_F_MIGRATION): @mig. -EINVAL if their figures do not add up.
 * @tco or @mig NULL sends the report without that block.
 */
int vt_handoff_conn_send_stats_tco(struct vt_handoff_conn *conn,
				   const struct vtier_handoff_stats *stats,
				   const struct vtier_handoff_tier_v2 *tiers,
				   const struct vtier_handoff_tco *tco,
				   const struct vtier_handoff_tco_tier *tco_tiers,
				   const struct vtier_handoff_migration_stats *mig);
/*
 * Send the agent's hotness profile (1..VTIER_HANDOFF_PROFILE_MAX bytes), or
 * with @size 0 the answer that there is none (-EOPNOTSUPP unless the HELLO
 * said VTIER_HELLO_F_NO_PROFILE).
 */
int vt_handoff_conn_send_profile(struct vt_handoff_conn *conn, const void *profile, size_t size);
/*
 * In ops->hello: one of the HELLO's maps, @fd_index VTIER_HANDOFF_FD_ZERO_MAP
 * (VTIER_HELLO_F_ZERO_MAP) or VTIER_HANDOFF_FD_SEND_MAP (VTIER_HELLO_F_SEND_MAP),
 * checked by vt_handoff_check_map(), now the caller's to close; -1 without
 * one (or once taken, or for another index). Not taken, it is closed with
 * the connection.
 */
int vt_handoff_conn_take_map(struct vt_handoff_conn *conn, unsigned int fd_index);
/*
 * Answer the MIGRATION SEND_END that reached ops->migration (now or later,
 * from the server's context) with SENT, its seq echoed: @status 0 when every
 * page the agent marked in the send map reached the destination's agent,
 * else a negative errno and @msg; @pages delivered. Never blocks. 0 once
 * queued, -EINVAL when no SEND_END waits for an answer, or as sends above.
 * Without ops->migration the server answers -EOPNOTSUPP itself.
 */
int vt_handoff_conn_send_sent(struct vt_handoff_conn *conn, int status, uint64_t pages,
			      const char *msg);
/*
 * Answer a HELLO that ops->hello left pending, on the server's context:
 * @status 0 accepts (ops->closed is owed from now on), a negative errno
 * refuses with @msg and closes. Returns 0 once answered, -ENOTCONN when
 * the connection closed meanwhile (nothing was sent; ops->dropped has run;
 * the agent undoes its work), -EINVAL when no HELLO was pending. Either way
 * @conn is not the agent's to use afterwards unless it was accepted.
 */
int vt_handoff_conn_hello_done(struct vt_handoff_conn *conn, int status, const char *msg);
/* Closed or closing: a pending HELLO's answer would go nowhere. */
bool vt_handoff_conn_closed(const struct vt_handoff_conn *conn);
/* Close the connection now; ops->closed runs with @why. */
void vt_handoff_conn_close(struct vt_handoff_conn *conn, const char *why);

/*
 * The peer by what the kernel says, read at accept (SO_PEERCRED): its pid
 * (a HELLO with another qemu_pid is refused), uid, a pidfd owned by the
 * connection (-1 if pidfd_open is unavailable; valid until ops->closed
 * returns: dup it to keep it), and its start time (/proc/PID/stat field 22,
 * 0 if unknown). Together, pid + start time (or the pidfd) identify the
 * QEMU process even after its pid is recycled.
 */
pid_t vt_handoff_conn_peer_pid(const struct vt_handoff_conn *conn);
uid_t vt_handoff_conn_peer_uid(const struct vt_handoff_conn *conn);
int vt_handoff_conn_peer_pidfd(const struct vt_handoff_conn *conn);
uint64_t vt_handoff_conn_peer_start_time(const struct vt_handoff_conn *conn);
/* Its cgroup (/proc/PID/cgroup at accept, kernel text: sanitise to show), NULL unknown. */
const char *vt_handoff_conn_peer_cgroup(const struct vt_handoff_conn *conn);

/*
 * The backend id and VM name of the HELLO; "" before it. The backend id is
 * vt_handoff_name_safe(); the VM name is display text with every byte that
 * is not printable ASCII replaced by '?'.
 */
const char *vt_handoff_conn_backend_id(const struct vt_handoff_conn *conn);
const char *vt_handoff_conn_vm_name(const struct vt_handoff_conn *conn);
/* A pointer the agent attaches to the connection (NULL by default). */
void vt_handoff_conn_set_user(struct vt_handoff_conn *conn, void *user);
void *vt_handoff_conn_get_user(const struct vt_handoff_conn *conn);

#endif /* VTIER_IFACE_HANDOFF_SERVER_H */
