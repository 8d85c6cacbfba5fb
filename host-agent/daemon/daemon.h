/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's state: attached VMs by name, the host's tiers, and the
 * dispatcher of control requests. Events worth an operator's attention go to
 * the log function the program sets (library code does not log).
 */
#ifndef VTIER_CORE_DAEMON_H
#define VTIER_CORE_DAEMON_H

#include <glib.h>

#include "control_socket.h"
#include "ctier.h"
#include "backend.h"
#include "host_share_stage.h"
#include "handoff_server.h"
#include "host_config.h"
#include "peer_budget.h"
#include "tiers.h"
#include "vm.h"

struct vt_backend;
struct vt_libvirt;
struct vt_daemon_libvirt_ops;

typedef void (*vt_log_fn)(GLogLevelFlags level, const char *vm, const char *message);

struct vt_daemon {
	GHashTable *vms;		/* name -> struct vt_vm * */
	struct vt_host_config host;	/* filled at start, then read-only */
	struct vt_registry reg;		/* the ops below call: this daemon's (daemon.c) */
	struct vt_handoffs ho;		/* QEMU's hand-offs (backend.c) */
	struct vt_vm_policy defaults;
	vt_log_fn log;
	struct vt_ratelimits *log_limits;	/* vt_daemon_log's, per (format, VM) */
	unsigned int next_id;
	uint64_t next_serial;
	int qmp_timeout_ms;
	struct vt_control_server *ctl;	/* for deferred replies (NULL: answer at once) */
	GPtrArray *attaching;		/* struct attach_op *: attaches in progress (daemon.c) */
	guint stats_timer;
	struct vt_host_share_stage share;	/* the host's DRAM sharing, on the main loop */
	struct vt_libvirt *libvirt;	/* attach by libvirt domain (NULL: off) */
	const struct vt_daemon_libvirt_ops *libvirt_ops;	/* set with libvirt */
	bool exiting;			/* vt_daemon_free: VMs' engines stop before it returns */
	/* the host's TLB shootdowns, read by the VMs' windows at most every 50 ms */
	struct vt_tlb_host tlb_host;
};

struct vt_daemon *vt_daemon_new(const struct vt_tiers *tiers, vt_log_fn log);
void vt_daemon_free(struct vt_daemon *d);
/* Handle one request; returns the newline-terminated JSON reply. */
char *vt_daemon_handle(struct vt_daemon *d, const char *data, size_t len);

/*
 * demote's KEY=VALUE words: tier=NAME, gpa= and len= in the one size grammar
 * (util/size.h); a negative, overflowing or wrapping (gpa + len) value is
 * refused naming the key. Defaults: gpa 0, len UINT64_MAX (all RAM).
 */
bool vt_demote_args_parse(char *const *set, unsigned int n, const char **tier, uint64_t *gpa,
			  uint64_t *len, GError **error);
/* The engine found the VM gone or broken: log and detach it. */
void vt_daemon_vm_failed(struct vt_daemon *d, struct vt_vm *vm);
/*
 * Attach the VM of QMP socket @qmp_path (@name NULL: QEMU's -name, else
 * vmN; "KEY=VALUE" policy assignments in @set) without blocking the main
 * loop. False (@error) for what is known at once: already attached or
 * being attached (EEXIST), a bad policy, a socket that refuses the connect.
 * Otherwise @cb (may be NULL) runs once, later, on the main loop: with the
 * attached VM, or NULL and why (ETIMEDOUT: QEMU did not answer; EPROTO: not
 * QEMU; EEXIST: the same QEMU got attached meanwhile; ECANCELED,
 * ESHUTDOWN). A failed attach leaves nothing behind.
 */
typedef void (*vt_daemon_attach_cb)(struct vt_vm *vm, const GError *error, void *arg);
bool vt_daemon_attach(struct vt_daemon *d, const char *qmp_path, const char *name,
		      char *const *set, unsigned int nr_set, vt_daemon_attach_cb cb, void *arg,
		      GError **error);
/* Inside daemon/ (control.c): vt_daemon_attach, returning the attach in progress. */
struct attach_op;
struct attach_op *vt_daemon_attach_start(struct vt_daemon *d, const char *qmp_path,
					 const char *name, char *const *set, unsigned int nr_set,
					 vt_daemon_attach_cb cb, void *arg, GError **error);
/* Stop an attach in progress; its callback runs with ECANCELED (at once, or when its job returns). */
void vt_daemon_attach_abandon(struct attach_op *op);
/*
 * What the daemon calls of libvirt_domains.c, which sets d->libvirt and this
 * table together (vt_libvirt_new): the daemon does not call it by name, so
 * that libvirt_domains.c, which attaches and detaches through the daemon,
 * sits above it.
 */
struct vt_daemon_libvirt_ops {
	void (*free)(struct vt_libvirt *lv);
	bool (*attach_domain)(struct vt_libvirt *lv, const char *name, char *const *set,
			      unsigned int nr_set, vt_daemon_attach_cb cb, void *arg,
			      GError **error);
};
/* Is the VM of QMP socket @qmp_path attached, or being attached? */
bool vt_daemon_qmp_taken(struct vt_daemon *d, const char *qmp_path);
/* The [ctier.NAME] groups of @config (NULL: none), in file order, and [policy] (VM defaults). */
bool vt_daemon_load_ctiers(struct vt_daemon *d, GKeyFile *config, GError **error);
/*
 * The bounds of what hand-off peers may make vtierd hold (handoff/peer_budget.h),
 * before vt_daemon_listen_handoff() (what was charged is forgotten).
 */
void vt_daemon_set_budget(struct vt_daemon *d, const struct vt_budget_limits *l);
/*
 * Serve hand-offs on @path (stores under d->store_root): the stores found
 * there are reserved for their reconnects first.
 */
bool vt_daemon_listen_handoff(struct vt_daemon *d, const char *path, GError **error);
/* Tie an accepted hand-off to its VM (by QEMU pid), creating the VM if none is attached. */
bool vt_daemon_adopt_backend(struct vt_daemon *d, struct vt_backend *b, GError **error);
/* The hand-off of @b ended: untie it; a VM attached only by hand-offs goes with its last. */
void vt_daemon_backend_gone(struct vt_daemon *d, struct vt_vm *vm, struct vt_backend *b);
/* A backend came, went or moved: the VM's engine restarts on its RAM and tiers. */
void vt_daemon_backend_ranges_changed(struct vt_daemon *d, struct vt_vm *vm);
/*
 * Apply "KEY=VALUE" assignments to @vm's policy (all or nothing) and hand it
 * to its worker (vt_vm_worker_post_policy()); @out (may be NULL) gets the new
 * policy.
 */
bool vt_daemon_set_policy(struct vt_daemon *d, struct vt_vm *vm, char *const *set, unsigned int n,
			  struct vt_vm_policy *out, GError **error);
/*
 * The same, over the daemon's default policy rather than the VM's current
 * one: @set is the whole policy (a libvirt domain's metadata).
 */
bool vt_daemon_reset_policy(struct vt_daemon *d, struct vt_vm *vm, char *const *set,
			    unsigned int n, GError **error);
/*
 * A line for the operator about @vm (NULL: the daemon). Anything but a debug
 * line is rate-limited per (@fmt's address, @vm): 10 at once, then 1 a
 * second; the next line that goes out is preceded by "(N similar messages
 * suppressed)". Peers can trigger most lines; the limit keeps a flood of them
 * from drowning the log, and the per-VM key keeps one VM's from silencing
 * another's. Thread-safe.
 */
void vt_daemon_log(struct vt_daemon *d, GLogLevelFlags level, const char *vm, const char *fmt,
		   ...) G_GNUC_PRINTF(4, 5);
/*
 * The same, limited per (@fmt, @vm, @subject): for lines about one of many
 * things the operator configured (a libvirt domain), so that one's flood does
 * not hold back another's first lines. @subject is not printed.
 */
void vt_daemon_log_about(struct vt_daemon *d, GLogLevelFlags level, const char *vm,
			 const char *subject, const char *fmt, ...) G_GNUC_PRINTF(5, 6);
bool vt_daemon_detach(struct vt_daemon *d, const char *name, const char *why, GError **error);

#endif
