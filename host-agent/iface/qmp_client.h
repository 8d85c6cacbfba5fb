/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A small synchronous QMP client (every call has a deadline) and the parsers
 * for the replies vtierd relies on. The peer is untrusted: a socket that does
 * not greet like QEMU, or replies of the wrong shape, are errors with a reason.
 */
#ifndef VTIER_IFACE_QMP_CLIENT_H
#define VTIER_IFACE_QMP_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "json_guard.h"	/* vt_json_single_object(), vt_json_check_depth() */

#define VT_QMP_MAX_LINE (1 << 20)

struct vt_qmp;

struct vt_memdev {
	char id[64];
	char type[48];		/* memory-backend-ram / -memfd / -file (from qom-list), or "" */
	uint64_t size;
	char policy[16];	/* default, preferred, bind, interleave */
	bool share;
};

struct vt_ramblock {
	char name[128];
	uint64_t page_size;
	uint64_t offset;
	uint64_t used;
	uint64_t total;
	uint64_t hva;
	bool readonly;
};

/* One guest-physical range of RAM as `info mtree -f` shows it. */
struct vt_gpa_range {
	uint64_t gpa;
	uint64_t len;
	char region[128];	/* memory region (= backend id for guest RAM) */
	uint64_t offset;	/* offset of @gpa inside the region */
};

/* Connect, check the greeting is QEMU's, negotiate capabilities. */
struct vt_qmp *vt_qmp_connect(const char *path, int timeout_ms, GError **error);
void vt_qmp_free(struct vt_qmp *q);

/*
 * The same, without blocking the main loop: connect now (errors that are
 * known at once, like ENOENT or ECONNREFUSED, are returned here with NULL),
 * then read the greeting, check it, negotiate capabilities as the socket
 * becomes ready on @ctx (NULL: the default context), within @timeout_ms.
 * @cb runs once on @ctx: with the connected client (the callee owns it) and
 * NULL, or with NULL and an error (the callee owns it; ETIMEDOUT for a
 * silent peer, EPROTO for one that is not QEMU). Returns a handle for
 * vt_qmp_connect_cancel(), valid until @cb runs.
 */
typedef void (*vt_qmp_connect_cb)(struct vt_qmp *q, GError *error, void *user);
struct vt_qmp_connecting;
struct vt_qmp_connecting *vt_qmp_connect_async(const char *path, int timeout_ms, GMainContext *ctx,
					       vt_qmp_connect_cb cb, void *user, GError **error);
/* Stop a connect in progress; its callback never runs. */
void vt_qmp_connect_cancel(struct vt_qmp_connecting *op);
/* The peer's pid (SO_PEERCRED), i.e. the QEMU process. */
pid_t vt_qmp_peer_pid(const struct vt_qmp *q);
int vt_qmp_fd(const struct vt_qmp *q);
const char *vt_qmp_version(const struct vt_qmp *q);
/* Execute @cmd with @args (may be NULL, not consumed); the "return" member is in @ret. */
bool vt_qmp_execute(struct vt_qmp *q, const char *cmd, JsonNode *args, JsonNode **ret,
		    GError **error);
/* What a QMP "MIGRATION" event says of the VM's migration (data.status). */
enum vt_qmp_migration {
	VT_QMP_MIGRATION_NONE,		/* not a MIGRATION event */
	VT_QMP_MIGRATION_ACTIVE,	/* setup, active, wait-unplug, pre-switchover, device */
	VT_QMP_MIGRATION_COMPLETED,	/* completed */
	VT_QMP_MIGRATION_FAILED,	/* failed, cancelled */
	VT_QMP_MIGRATION_OTHER,		/* any other status (postcopy, colo, cancelling ...) */
};

/* A MigrationStatus (QAPI) as vtierd follows it: never NONE. */
enum vt_qmp_migration vt_qmp_migration_of(const char *status);

struct vt_qmp_event {
	char name[64];			/* the event's name, printable */
	enum vt_qmp_migration migration;
};

/*
 * One message of the peer (a line): 1 an event, in @ev; 0 not an event (a
 * reply nobody waits for); -1 an error (not one JSON object, too deep, an
 * event without a name, a MIGRATION event without a string status).
 */
int vt_qmp_parse_event(const char *line, size_t len, struct vt_qmp_event *ev, GError **error);

/*
 * Read what the peer sent without waiting, and call @fn for each event in
 * it, in order (a message cut by the read waits for its end). False when
 * the peer is gone or sent something that is not QMP (the VM is lost).
 */
typedef void (*vt_qmp_event_fn)(const struct vt_qmp_event *ev, void *user);
bool vt_qmp_read_events(struct vt_qmp *q, vt_qmp_event_fn fn, void *user, GError **error);


/* Parsers (also used by the fuzz target). */
bool vt_qmp_parse_greeting(const char *line, size_t len, char **version, GError **error);
bool vt_qmp_parse_memdev(JsonNode *ret, GArray *out, GError **error);
bool vt_qmp_parse_objects(JsonNode *ret, GArray *memdevs, GError **error);
bool vt_qmp_parse_ramblocks(const char *text, GArray *out, GError **error);
/* The RAM ranges of the first flat view rooted at "system" or "memory" (HMP "info mtree -f"). */
bool vt_qmp_parse_mtree(const char *text, GArray *out, GError **error);

#define VT_QMP_ERROR (vt_qmp_error_quark())
GQuark vt_qmp_error_quark(void);

#endif
