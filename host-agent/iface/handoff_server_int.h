// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The hand-off server's own structures, shared by its three files only:
 * handoff_accept.c (listen, accept), handoff_admit.c (peer accounting, fd
 * reserve, admission), handoff_conn.c (one connection's state machine).
 * Not for use outside iface/handoff_*.c.
 */
#ifndef VTIER_IFACE_HANDOFF_SERVER_INT_H
#define VTIER_IFACE_HANDOFF_SERVER_INT_H

#include <glib.h>

#include "handoff_peer.h"
#include "handoff_server.h"

/* More than a HELLO carries: extra fds are a protocol error, not a leak. */
#define CONN_MAX_FDS (VTIER_HANDOFF_SEND_MAP_NFDS + 1)
/* A HELLO's bitmaps (zero map, send map): fds VTIER_HANDOFF_FD_ZERO_MAP on. */
#define CONN_MAPS (VTIER_HANDOFF_SEND_MAP_NFDS - VTIER_HANDOFF_FD_ZERO_MAP)
/* A payload buffer starts this small and doubles as bytes arrive. */
#define PAYLOAD_FIRST_ALLOC (64u << 10)
/* Bytes read from one connection per wakeup: a flooding peer cannot starve others. */
#define READ_BUDGET (1u << 20)
/* An output buffer larger than this is freed once drained. */
#define OUT_KEEP (64u << 10)
/*
 * Fds held in reserve (/dev/null) and closed when accept() fails for lack of
 * fds: the connection then accepted has room for its socket, pidfd, a read
 * of /proc, the HELLO's four fds (memfd, userfaultfd, zero map, send map)
 * and the check of its mapping.
 */
#define SPARE_FDS 8
/* A peer as refusals name it: "pid P uid U cgroup C". */
#define PEER_TEXT_LEN 288

/* What one process (pid + start time) holds now. */
struct peer_acct {
	char *key;
	struct group_acct *group;
	unsigned int conns;	/* open connections */
	unsigned int pending;	/* ... of which without an accepted HELLO */
};

/* What one uid + cgroup (a VM's scope under libvirt) holds now. */
struct group_acct {
	char *key;
	unsigned int procs;	/* struct peer_acct pointing here */
	unsigned int pending;
};

struct vt_handoff_server {
	char *path;
	int fd;
	GMainContext *ctx;
	GSource *src;		/* the listening socket; NULL while accept() is paused */
	GSource *backoff;	/* resumes accepting after EMFILE/ENFILE */
	const struct vt_handoff_ops *ops;
	void *opaque;
	GList *conns;		/* newest first */
	struct vt_handoff_limits limits;
	unsigned int n_pending;	/* connections without an accepted HELLO */
	size_t buffered;	/* payload bytes allocated by partial messages */
	struct vt_handoff_server_stats stats;
	bool pause_reported;	/* once per burst of accept() failures */
	GHashTable *peers;	/* "pid:start time" -> struct peer_acct */
	GHashTable *groups;	/* "uid:cgroup" -> struct group_acct */
	int spare[SPARE_FDS];	/* the fd reserve for accept() at the fd limit */
	unsigned int n_spare;
	struct vt_handoff_conn *reserve_conn;	/* accepted on the reserve, not yet answered */
	pid_t reserve_waster;	/* the last peer whose reserve connection sent no HELLO */
	uint64_t reserve_waster_start;
	unsigned int fd_reserve;	/* fds kept free for RECONNECTs (set_fd_reserve) */
	bool freeing;
};

struct vt_handoff_conn {
	struct vt_handoff_server *srv;
	int refs;
	int fd;
	GSource *src;
	bool accepted;		/* HELLO accepted: ops->closed owed */
	bool hello_pending;	/* the agent answers later: vt_handoff_conn_hello_done() */
	bool prepared;		/* a PREPARE came: the HELLO proper follows, no deadline */
	uint32_t hello_seq;
	bool dead;
	bool on_reserve;	/* accepted on the fd reserve, HELLO not yet answered */
	bool hello_seen;	/* a complete HELLO or PREPARE arrived */
	bool closing;		/* closes at the next timer dispatch */
	bool flush_first;	/* ... once the output queue drained */
	char close_why[VT_HANDOFF_ERR_LEN];
	struct vt_handoff_peer peer;
	struct peer_acct *acct;	/* what the peer holds, this connection included */
	GSource *timer;		/* deadlines and deferred close (ready time) */
	gint64 hello_deadline;
	gint64 last_rx;
	gint64 last_tx;
	int prep_fd;		/* a PREPARE's memfd (dup): guest RAM must keep arriving */
	int maps[CONN_MAPS];	/* the HELLO's checked maps until ops->hello takes them; -1 */
	uint64_t prep_blocks;	/* its st_blocks at the last check */
	gint64 prep_check;	/* next check: no growth since the last one closes */
	GByteArray *out;	/* queued output, from out_off */
	size_t out_off;
	GSource *out_src;	/* G_IO_OUT watch while output is queued */
	char backend_id[VTIER_HANDOFF_ID_LEN];
	char vm_name[VTIER_HANDOFF_ID_LEN];
	uint64_t size_bytes;	/* of the backend, from the HELLO */
	bool no_profile_ok;	/* the HELLO said NO_PROFILE: an empty PROFILE is understood */
	bool send_end_pending;	/* a MIGRATION SEND_END awaits vt_handoff_conn_send_sent() */
	uint32_t send_end_seq;	/* ... its seq, which the SENT echoes */
	void *user;
	uint32_t seq;

	/* the message being received */
	struct vtier_handoff_hdr hdr;
	size_t hdr_got;
	uint8_t *payload;
	size_t payload_cap;
	size_t payload_got;
	int fds[CONN_MAX_FDS];
	unsigned int nfds;
	bool fds_lost;
	bool fds_starved;	/* fds sent, not installed: the agent is out of fds */
};


/* handoff_admit.c */
unsigned long long vt_hs_fd_limit(void);
struct peer_acct *vt_hs_acct_get(struct vt_handoff_server *srv, const struct vt_handoff_peer *p,
				 bool create);
void vt_hs_acct_put(struct vt_handoff_server *srv, struct peer_acct *a);
void vt_hs_spare_refill(struct vt_handoff_server *srv);
void vt_hs_spare_release(struct vt_handoff_server *srv);
int vt_hs_fd_reserve_check(struct vt_handoff_conn *c, const struct vtier_handoff_hello *h,
			   char *text, size_t len);
unsigned int *vt_hs_admit(struct vt_handoff_server *srv, const struct vt_handoff_peer *p,
			  bool on_reserve, char *why, size_t why_len);

/* handoff_conn.c */
void vt_hs_destroy_source(GSource **src);
void vt_hs_conn_watch(struct vt_handoff_conn *c);

/* handoff_accept.c */
void vt_hs_listen(struct vt_handoff_server *srv);

#endif /* VTIER_IFACE_HANDOFF_SERVER_INT_H */
