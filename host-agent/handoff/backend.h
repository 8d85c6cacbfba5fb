/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A memory backend QEMU handed to vtierd (tier-agent=): who it belongs to,
 * its page store and the mover thread that serves its faults.
 *
 * Identity comes from the kernel, never from the HELLO alone: the peer's
 * SO_PEERCRED pid must be the HELLO's qemu_pid, and a store is keyed by the
 * VM uuid + backend id and owned by one QEMU process (pid + start time). A
 * HELLO that would take over another live process's backend is refused; a
 * RECONNECT gets back exactly its own store, and without its store it is
 * refused rather than served zeros (docs/abi-handoff.md, "Agent stores").
 */
#ifndef VTIER_CORE_BACKEND_H
#define VTIER_CORE_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "ctier.h"
#include "ctier_mover.h"
#include "handoff_server.h"
#include "host_config.h"
#include "registry.h"
#include "peer_budget.h"
#include "profile_format.h"

struct vt_vm;

/*
 * The hand-offs the registry holds (main loop; daemon/ owns one and
 * implements reg): the live backends, the stores being opened, the orphaned
 * stores, the memfds being PREPAREd and what peers are charged.
 */
struct vt_handoffs {
	const struct vt_host_config *host;
	const struct vt_registry *reg;
	GHashTable *backends;		/* key -> struct vt_backend *, live hand-offs */
	GHashTable *opening;		/* key -> HELLOs whose store is being opened (backend.c) */
	GPtrArray *orphans;		/* stores kept after their hand-off ended (backend.c) */
	struct vt_budget *budget;	/* what hand-off peers hold, the reconnects' reserve */
	GHashTable *preparing;		/* "dev:ino" of memfds being PREPAREd (backend_prepare.c) */
	guint orphan_timer;
	struct vt_handoff_server *handoff;
	GThreadPool *removals;		/* stores removed for good (store_removal.c) */
};

struct vt_backend {
	char key[128];			/* "<uuid>/<backend id>": the table key */
	char id[VTIER_HANDOFF_ID_LEN];
	char vm_name[VTIER_HANDOFF_ID_LEN];
	uint8_t uuid[16];
	pid_t pid;
	uint64_t start_time;		/* of the QEMU process, /proc/PID/stat */
	uint64_t hva;
	uint64_t size;
	uint64_t page_size;
	uint64_t generation;
	uint32_t flags;			/* the HELLO's */
	/*
	 * An early hand-off (VTIER_HELLO_F_PRECOPY): the incoming migration still
	 * writes guest RAM, the guest does not run yet; until MIGRATION ARRIVED.
	 * Main loop writes, under lock.
	 */
	bool precopy;
	/*
	 * ARRIVED ended the precopy and the plan has not been swept since: what
	 * the migration wrote after the precopy's last sweep of a chunk (its
	 * last iterations, the pages it sent again) is still in DRAM. Main loop
	 * sets, the VM's worker clears, under lock.
	 */
	bool arrived_sweep;
	GArray *ranges;			/* struct vtier_handoff_range */
	char store_dir[512];
	struct vt_store *store;
	struct vt_ctier_mover *mover;
	struct vt_handoff_conn *conn;
	struct vt_vm *vm;
	uint64_t reconciled;		/* store entries dropped at HELLO: the memfd had the page */
	uint64_t stored_at_hello;
	int failed_err;			/* set by the mover thread (atomic) */
	/* remote tiers' servers: lost / regained / emptied as last logged (main loop) */
	struct {
		uint64_t lost, regained, emptied;
	} remote_seen[VT_CTIER_MAX][VT_RC_MAX_SERVERS];
	/* the VM's TCO report last sent to QEMU (main loop), sent again while the VM is busy */
	bool have_tco;
	struct vtier_handoff_tco tco;
	struct vtier_handoff_tco_tier tco_tiers[VTIER_HANDOFF_TIERS_MAX];
	/* ... and its migration block, the same way */
	bool have_migration;
	struct vtier_handoff_migration_stats migration;
	struct vt_handoffs *d;
	/* what it is charged (handoff/peer_budget.h): from its HELLO until its hand-off ends */
	struct vt_budget_ticket ticket;
	/*
	 * The profile an incoming migration brought (migration/migration.h): checked
	 * by the store job, under lock from then on, kept until a window of the
	 * VM used it. profile points into profile_buf.
	 */
	uint8_t *profile_buf;
	size_t profile_len;
	/* QEMU's zero map (VTIER_HELLO_F_ZERO_MAP), mapped shared; NULL: none */
	uint64_t *zero_map;
	size_t zero_map_bytes;
	/*
	 * ... and its send map (VTIER_HELLO_F_SEND_MAP), the same way; vtierd
	 * sets no bit in it yet, and answers MIGRATION SEND_END with 0 pages
	 */
	uint64_t *send_map;
	size_t send_map_bytes;
	struct vt_profile profile;
	char profile_why[VT_PROFILE_ERR_LEN];	/* why it was refused, "" if not */
	bool profile_counted;		/* in the VM's stats already */
	/*
	 * The daemon's table holds one reference; a VM's worker takes one per
	 * window. store and mover are closed on the main loop under lock when
	 * the hand-off ends; a worker reaches them only through the functions
	 * below, which take the lock and find them gone.
	 */
	int refs;
	GMutex lock;
};

struct vt_backend *vt_backend_ref(struct vt_backend *b);

/*
 * A destination's PREPARE (backend_prepare.c). When QEMU offers the early
 * hand-off and a profile can be used here (and not --precopy-placement=copy):
 * true, @memfd closed, nothing kept: the HELLO proper comes at once and the
 * VM's windows evict the profile's cold chunks as they arrive. Otherwise
 * false: the cold chunks of the source's profile copied from @memfd (taken)
 * as the migration brings them, held by @conn until its HELLO proper.
 */
bool vt_backend_prepare(struct vt_handoffs *d, struct vt_handoff_conn *conn,
			const struct vt_handoff_hello *hello, int memfd);
/*
 * The HELLO proper (@h, its @memfd) on @conn: the copies, asked to stop, if
 * they are of this very backend (else freed); NULL when none.
 */
struct vt_prepared *vt_backend_prepared_take(struct vt_handoff_conn *conn,
					     const struct vtier_handoff_hello *h, int memfd);
/* @conn closed before its HELLO proper: its copies go. */
void vt_backend_prepared_drop(struct vt_handoff_conn *conn);
void vt_backend_unref(struct vt_backend *b);
/* References to @vm's backends now (free the array when done). */
GPtrArray *vt_vm_backends_ref(struct vt_vm *vm);
/*
 * Queue for the mover: evict [@offset, +@len) into compressed tier @tier, or
 * fetch (@tier < 0). -EAGAIN when the mover has VT_BACKEND_BACKLOG_MAX orders
 * waiting already: the policy asks again next window rather than pile up.
 * vt_backend_queue_bulk(): an eviction known ahead (a migration profile's
 * placement), taken in spans (vt_ctier_mover_evict_bulk()); queued up to
 * VT_BACKEND_BULK_BACKLOG_MAX orders, so that a plan goes out in one window.
 */
#define VT_BACKEND_BACKLOG_MAX 16
#define VT_BACKEND_BULK_BACKLOG_MAX 4096
/* Orders queued in the backend's mover and not done yet (0 without a mover). */
unsigned int vt_backend_backlog(struct vt_backend *b);
int vt_backend_queue(struct vt_backend *b, uint64_t offset, uint64_t len, int tier);
int vt_backend_queue_bulk(struct vt_backend *b, uint64_t offset, uint64_t len, unsigned int tier);
/*
 * An outgoing migration: what its reads fill into the memfd (zeros, stored
 * pages read through) is punched again once read, sooner past @bound bytes
 * held (or not, @on false): vt_ctier_mover_track_reads().
 */
void vt_backend_track_reads(struct vt_backend *b, bool on, uint64_t bound);
uint64_t vt_backend_reads_held(struct vt_backend *b);

/*
 * Guest hints (engine/hint_stage.c): queue the discard of [@offset, +@len) of the
 * backend (movers/ctier_mover.h), discards not done yet, and cancelling the
 * queued ones (waits for the one in progress). Without a mover (the hand-off
 * ended): -ENOTCONN, 0 pending, nothing to cancel.
 */
int vt_backend_discard(struct vt_backend *b, uint64_t offset, uint64_t len);
unsigned int vt_backend_discards_pending(struct vt_backend *b);
void vt_backend_discard_cancel(struct vt_backend *b);
/* Host memory the discards freed: memfd bytes that held data + stored copies dropped. */
uint64_t vt_backend_discarded_bytes(struct vt_backend *b);

/*
 * The hand-off server's callbacks: handoff_server.h, opaque = the daemon.
 * A HELLO that passes the quick checks is answered once its store is open
 * and reconciled on a job thread (VT_HANDOFF_HELLO_PENDING).
 */
extern const struct vt_handoff_ops vt_backend_handoff_ops;
/* Teardown, after the hand-off server is gone: wait for the stores being opened, drop them. */
void vt_backend_cancel_openings(struct vt_handoffs *d);

/* The backend of @backends holding QEMU address @hva, or NULL. */
struct vt_backend *vt_backend_of_hva(GPtrArray *backends, uint64_t hva);
/* Where @hva of @b is stored: compressed tier index, or -1. */
int vt_backend_tier_of(struct vt_backend *b, uint64_t hva);

/*
 * Add @b's figures per compressed tier (stored and compressed bytes, store
 * faults) to @meas[@nr] and its fault latencies to @hist[@nr] (the VM's
 * worker merges its backends, then takes the p50: model/tier_model.h).
 */
struct vt_ctier_measured;
void vt_backend_ctier_measure(struct vt_backend *b, struct vt_ctier_measured *meas,
			      struct vt_latency_hist *hist, unsigned int nr);

/*
 * Figures of the store and the mover, what the backend is charged and the
 * host's hand-off budget, for vtierctl stats (main loop).
 */
void vt_backend_stats_to_json(struct vt_backend *b, JsonBuilder *j);
/* Main loop: a log line for each remote server lost or regained since the last call. */
void vt_backend_remote_watch(struct vt_backend *b);
/* A STATS report to QEMU (query-memory-tiers). 0 or -errno. */
int vt_backend_send_stats(struct vt_backend *b);

/*
 * The store in @dir is removed for good (its QEMU exited). With a remote tier
 * configured, renamed out of the way now and removed on the removals' thread
 * after the memory servers were asked to forget its pages; else removed now.
 * Main loop. vt_store_removals_start (once the host's configuration is read)
 * starts that thread and resumes removals a kill cut short;
 * vt_store_removals_finish waits for those queued (at exit).
 */
void vt_store_remove(struct vt_handoffs *d, const char *dir);
void vt_store_removals_start(struct vt_handoffs *d);
void vt_store_removals_finish(struct vt_handoffs *d);

#endif
