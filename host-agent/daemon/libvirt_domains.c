// SPDX-License-Identifier: GPL-2.0-or-later
/* Attach by libvirt domain: connection, events, policy from <metadata>. */
#include <errno.h>
#include <string.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "ctl_proto.h"
#include "job.h"
#include "json_guard.h"
#include "libvirt_domains.h"
#include "libvirt_event.h"
#include "libvirt_xml.h"

#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 30000

struct vt_libvirt {
	struct vt_daemon *d;
	char *uri;
	enum vt_libvirt_attach attach;
	virConnectPtr conn;		/* the loop's; NULL while not connected */
	int cb_lifecycle, cb_metadata;	/* -1: none */
	bool connecting;
	bool warned;			/* a failed connect was logged: the next ones at debug */
	guint retry_timer;
	unsigned int backoff_ms;
	GPtrArray *jobs;		/* struct lv_op *, on their job threads */
	bool dying;			/* freed with calls in flight: the last op frees it */
};

enum lv_op_kind {
	LV_CONNECT,	/* open, keepalive, callbacks, the running domains' XML */
	LV_FETCH,	/* one domain's live XML, by uuid or name */
	LV_CLOSE,	/* callbacks off, connection closed */
};

/* Why a domain's XML was fetched: what its absence of policy means. */
enum lv_why {
	LV_WHY_LISTED,		/* running at connect, or just started */
	LV_WHY_METADATA,	/* its vtier metadata changed */
	LV_WHY_REQUEST,		/* vtierctl attach --domain */
};

struct lv_op {
	struct vt_libvirt *lv;
	enum lv_op_kind kind;
	enum lv_why why;
	struct vt_job *job;
	gint ran;			/* op_run returned (atomic): the job ends at once */
	virConnectPtr conn;		/* a reference of the op's own */
	char *domain;			/* LV_FETCH: uuid, or name for a request */
	GPtrArray *seen;		/* results: struct lv_seen *, parsed on the job */
	char *error;
	int cb_lifecycle, cb_metadata;
	/* LV_WHY_REQUEST */
	char **set;
	unsigned int nr_set;
	vt_daemon_attach_cb cb;
	void *cb_arg;
};

/*
 * A domain's XML as the job parsed it (off the loop: a document can be up to
 * 1 MiB), with libvirt's own uuid of it for when the XML is refused.
 */
struct lv_seen {
	char uuid[VIR_UUID_STRING_BUFLEN];
	char *name;			/* libvirt's name of it */
	struct vt_libvirt_domain dom;
	char *error;			/* the XML refused: why */
};

static void seen_free(gpointer p)
{
	struct lv_seen *s = p;

	vt_libvirt_domain_clear(&s->dom);
	g_free(s->name);
	g_free(s->error);
	g_free(s);
}

static void lv_connect(struct vt_libvirt *lv);

static const char *lv_error(void)
{
	const char *m = virGetLastErrorMessage();

	return m && *m ? m : "unknown libvirt error";
}

static void op_free(struct lv_op *op)
{
	if (op->conn)
		virConnectClose(op->conn);
	g_free(op->domain);
	if (op->seen)
		g_ptr_array_free(op->seen, TRUE);
	g_free(op->error);
	g_strfreev(op->set);
	g_free(op);
}

static void op_run(void *arg);
static void op_done(void *arg);

static bool op_start(struct vt_libvirt *lv, struct lv_op *op, GError **error)
{
	op->lv = lv;
	op->seen = g_ptr_array_new_with_free_func(seen_free);
	op->job = vt_job_start("vtier-libvirt", op_run, op_done, op, error);
	if (!op->job) {
		op_free(op);
		return false;
	}
	g_ptr_array_add(lv->jobs, op);
	return true;
}

/* On the job: the domain's live XML, read and checked here, never on the loop. */
static void fetch_xml(struct lv_op *op, virDomainPtr dom)
{
	char *xml = virDomainGetXMLDesc(dom, 0);
	g_autoptr(GError) e = NULL;
	struct lv_seen *s;

	if (!xml) {
		if (!op->error)
			op->error = g_strdup(lv_error());
		return;
	}
	s = g_new0(struct lv_seen, 1);
	if (virDomainGetUUIDString(dom, s->uuid) < 0)	/* local: no call to libvirtd */
		s->uuid[0] = '\0';
	s->name = g_strdup(virDomainGetName(dom));	/* local too */
	if (!vt_libvirt_domain_parse(xml, strlen(xml), vt_vm_policy_keys(), &s->dom, &e))
		s->error = g_strdup(e->message);
	free(xml);
	g_ptr_array_add(op->seen, s);
}

static void lifecycle_cb(virConnectPtr conn, virDomainPtr dom, int event, int detail, void *opaque);
static void metadata_cb(virConnectPtr conn, virDomainPtr dom, int type, const char *nsuri,
			void *opaque);
static void closed_cb(virConnectPtr conn, int reason, void *opaque);

/* Our callbacks off @conn: events are calls to libvirtd, the close callback is local. */
static void drop_callbacks(virConnectPtr conn, int cb_lifecycle, int cb_metadata)
{
	virConnectUnregisterCloseCallback(conn, closed_cb);
	if (cb_lifecycle >= 0)
		virConnectDomainEventDeregisterAny(conn, cb_lifecycle);
	if (cb_metadata >= 0)
		virConnectDomainEventDeregisterAny(conn, cb_metadata);
}

/* On the job's thread: every call here may wait on libvirtd. */
static void op_run(void *arg)
{
	struct lv_op *op = arg;
	virDomainPtr *doms = NULL, dom;
	int n;

	switch (op->kind) {
	case LV_CONNECT:
		op->conn = virConnectOpen(op->lv->uri);
		if (!op->conn) {
			op->error = g_strdup(lv_error());
			return;
		}
		/* a hung libvirtd closes the connection after 5 s x 3 unanswered probes */
		virConnectSetKeepAlive(op->conn, 5, 3);
		virConnectRegisterCloseCallback(op->conn, closed_cb, op->lv, NULL);
		op->cb_lifecycle = virConnectDomainEventRegisterAny(op->conn, NULL,
				VIR_DOMAIN_EVENT_ID_LIFECYCLE, VIR_DOMAIN_EVENT_CALLBACK(lifecycle_cb),
				op->lv, NULL);
		op->cb_metadata = virConnectDomainEventRegisterAny(op->conn, NULL,
				VIR_DOMAIN_EVENT_ID_METADATA_CHANGE,
				VIR_DOMAIN_EVENT_CALLBACK(metadata_cb), op->lv, NULL);
		if (op->cb_lifecycle < 0 || op->cb_metadata < 0) {
			op->error = g_strdup_printf("domain events: %s", lv_error());
			return;
		}
		n = virConnectListAllDomains(op->conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
		if (n < 0) {
			op->error = g_strdup_printf("listing domains: %s", lv_error());
			return;
		}
		for (int i = 0; i < n; i++) {
			fetch_xml(op, doms[i]);
			virDomainFree(doms[i]);
		}
		g_clear_pointer(&op->error, g_free);	/* a domain gone meanwhile is no error */
		free(doms);
		break;
	case LV_FETCH:
		dom = op->why == LV_WHY_REQUEST ? virDomainLookupByName(op->conn, op->domain) :
		      virDomainLookupByUUIDString(op->conn, op->domain);
		if (!dom) {
			op->error = g_strdup(lv_error());
			return;
		}
		if (virDomainIsActive(dom) == 1)
			fetch_xml(op, dom);
		else
			op->error = g_strdup("the domain is not running");
		virDomainFree(dom);
		break;
	case LV_CLOSE:
		drop_callbacks(op->conn, op->cb_lifecycle, op->cb_metadata);
		break;
	}
	/* the last reference's close is a call to libvirtd: here, not on the loop */
	if (op->kind != LV_CONNECT)
		g_clear_pointer(&op->conn, virConnectClose);
	g_atomic_int_set(&op->ran, 1);
}

static struct vt_vm *vm_of_domain(struct vt_daemon *d, const char *uuid)
{
	GHashTableIter it;
	gpointer v;

	if (!uuid[0])
		return NULL;
	g_hash_table_iter_init(&it, d->vms);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct vt_vm *vm = v;

		if (strcmp(vm->domain_uuid, uuid) == 0)
			return vm;
	}
	return NULL;
}

/* A domain's name as logs show it (libvirt takes any UTF-8 but '/'). */
static const char *shown(char *buf, size_t len, const char *name)
{
	return vt_text_printable(buf, len, name, strlen(name));
}

/* An attach of a domain, until its outcome. */
struct lv_attach {
	struct vt_daemon *d;
	char uuid[37];
	char *name;
	vt_daemon_attach_cb cb;		/* a vtierctl request's, or NULL */
	void *cb_arg;
};

static void domain_attached(struct vt_vm *vm, const GError *error, void *arg)
{
	struct lv_attach *a = arg;
	char n[128];

	if (vm) {
		g_mutex_lock(&vm->lock);
		g_strlcpy(vm->domain_uuid, a->uuid, sizeof(vm->domain_uuid));
		g_strlcpy(vm->domain_name, a->name, sizeof(vm->domain_name));
		g_mutex_unlock(&vm->lock);
		vt_daemon_log(a->d, G_LOG_LEVEL_MESSAGE, vm->name, "libvirt domain '%s' (%s)",
			      shown(n, sizeof(n), a->name), a->uuid);
	} else if (!a->cb) {
		vt_daemon_log(a->d, G_LOG_LEVEL_WARNING, NULL, "libvirt domain '%s': not "
			      "attached: %s", shown(n, sizeof(n), a->name), error->message);
	}
	if (a->cb)
		a->cb(vm, error, a->cb_arg);
	g_free(a->name);
	g_free(a);
}

/* The metadata's policy over the defaults (and a request's over that): the whole policy. */
static char **policy_set(const struct vt_libvirt_domain *dom, char *const *extra,
			 unsigned int nr_extra, unsigned int *nr)
{
	GPtrArray *set = g_ptr_array_new();

	for (unsigned int i = 0; i < dom->policy->len; i++)
		g_ptr_array_add(set, g_strdup(g_ptr_array_index(dom->policy, i)));
	for (unsigned int i = 0; i < nr_extra; i++)
		g_ptr_array_add(set, g_strdup(extra[i]));
	*nr = set->len;
	g_ptr_array_add(set, NULL);
	return (char **)g_ptr_array_free(set, FALSE);
}

/* A policy the VM cannot take: said in the log and in vtierctl status; the old one stays. */
static void policy_refused(struct vt_daemon *d, struct vt_vm *vm, const char *why)
{
	g_mutex_lock(&vm->lock);
	g_snprintf(vm->policy_refused, sizeof(vm->policy_refused), "libvirt metadata: the old "
		   "one stays: %s", why);
	g_mutex_unlock(&vm->lock);
	vt_daemon_log(d, G_LOG_LEVEL_WARNING, vm->name, "libvirt metadata policy refused, the "
		      "old one stays: %s", why);
}

/* Back on the loop with a domain's parsed XML: attach it, change its policy, or leave it. */
static void domain_seen(struct vt_libvirt *lv, struct lv_seen *seen, struct lv_op *op)
{
	struct vt_daemon *d = lv->d;
	struct vt_libvirt_domain *dom_p = &seen->dom, dom;
	g_autoptr(GError) e = NULL;
	g_auto(GStrv) set = NULL;
	struct lv_attach *a;
	struct vt_vm *vm;
	unsigned int nr;
	char n[128];

	/* the domain is the loop's from here (cleared below), the op keeps an empty one */
	dom = *dom_p;
	memset(dom_p, 0, sizeof(*dom_p));
	if (seen->error) {
		g_set_error_literal(&e, VT_CORE_ERROR, EINVAL, seen->error);
		/* libvirt's uuid of the domain, even when the XML lost it */
		vm = vm_of_domain(d, dom.uuid[0] ? dom.uuid : seen->uuid);
		if (vm)
			policy_refused(d, vm, e->message);
		else
			vt_daemon_log_about(d, G_LOG_LEVEL_WARNING, NULL, seen->uuid, "libvirt "
					    "domain '%s': not attached: %s", shown(n, sizeof(n),
					    dom.name ? dom.name : seen->name ? seen->name : "?"),
					    e->message);
		goto fail;
	}
	vm = vm_of_domain(d, dom.uuid);
	if (vm) {
		if (!dom.has_policy && lv->attach == VT_LIBVIRT_ATTACH_POLICY &&
		    op->why == LV_WHY_METADATA) {
			vt_daemon_detach(d, vm->name, "its libvirt domain's vtier policy was removed",
					 NULL);
		} else if (op->why == LV_WHY_METADATA) {
			/* the metadata is the whole policy: what it leaves out is the default */
			set = policy_set(&dom, NULL, 0, &nr);
			if (!vt_daemon_reset_policy(d, vm, set, nr, &e))
				policy_refused(d, vm, e->message);
			else
				vt_daemon_log(d, G_LOG_LEVEL_MESSAGE, vm->name, "policy from libvirt "
					      "metadata applied (%u setting(s))", nr);
		} else if (op->why == LV_WHY_REQUEST) {
			g_set_error(&e, VT_CORE_ERROR, EEXIST, "domain '%s' is already attached as "
				    "'%s'", shown(n, sizeof(n), dom.name), vm->name);
			goto fail;
		}
		vt_libvirt_domain_clear(&dom);
		return;
	}
	if (!dom.has_policy && lv->attach == VT_LIBVIRT_ATTACH_POLICY && op->why != LV_WHY_REQUEST) {
		vt_daemon_log(d, G_LOG_LEVEL_DEBUG, NULL, "libvirt domain '%s': no vtier policy, "
			      "not attached", shown(n, sizeof(n), dom.name));
		vt_libvirt_domain_clear(&dom);
		return;
	}
	if (!dom.qmp_path) {
		g_set_error(&e, VT_CORE_ERROR, EOPNOTSUPP, "libvirt domain '%s' has no QMP socket "
			    "for vtierd: add <qemu:arg value='-qmp'/><qemu:arg value='unix:/var/lib/"
			    "libvirt/qemu/vtier-NAME.qmp,server=on,wait=off'/> to its "
			    "<qemu:commandline> (docs/libvirt.md)", shown(n, sizeof(n), dom.name));
		vt_daemon_log_about(d, G_LOG_LEVEL_WARNING, NULL, seen->uuid, "%s", e->message);
		goto fail;
	}
	/* a start event and a listing may race: one attach is enough, and says so itself */
	if (op->why != LV_WHY_REQUEST && vt_daemon_qmp_taken(d, dom.qmp_path)) {
		vt_libvirt_domain_clear(&dom);
		return;
	}
	set = policy_set(&dom, op->set, op->nr_set, &nr);
	a = g_new0(struct lv_attach, 1);
	a->d = d;
	g_strlcpy(a->uuid, dom.uuid, sizeof(a->uuid));
	a->name = g_strdup(dom.name);
	a->cb = op->cb;
	a->cb_arg = op->cb_arg;
	if (!vt_daemon_attach(d, dom.qmp_path, vt_ctl_name_valid(dom.name) ? dom.name : NULL,
			      set, nr, domain_attached, a, &e)) {
		g_free(a->name);
		g_free(a);
		vt_daemon_log_about(d, G_LOG_LEVEL_WARNING, NULL, seen->uuid, "libvirt domain "
				    "'%s': not attached: %s", shown(n, sizeof(n), dom.name),
				    e->message);
		goto fail;
	}
	op->cb = NULL;	/* the attach answers the request */
	vt_libvirt_domain_clear(&dom);
	return;
fail:
	vt_libvirt_domain_clear(&dom);
	if (op->cb) {
		op->cb(NULL, e, op->cb_arg);
		op->cb = NULL;
	}
}

/* VMs of domains that stopped while vtierd did not hear (libvirtd was away). */
static void detach_stale(struct vt_libvirt *lv, GPtrArray *seen)
{
	g_autoptr(GPtrArray) gone = g_ptr_array_new_with_free_func(g_free);
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, lv->d->vms);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct vt_vm *vm = v;
		bool running = false;

		/* by libvirt's uuid of each running domain, whatever its XML said */
		for (unsigned int i = 0; vm->domain_uuid[0] && i < seen->len && !running; i++)
			running = !g_ascii_strcasecmp(((struct lv_seen *)
						       g_ptr_array_index(seen, i))->uuid,
						      vm->domain_uuid);
		if (vm->domain_uuid[0] && !running)
			g_ptr_array_add(gone, g_strdup(vm->name));
	}
	for (unsigned int i = 0; i < gone->len; i++)
		vt_daemon_detach(lv->d, g_ptr_array_index(gone, i), "its libvirt domain is no "
				 "longer running", NULL);
}

static gboolean retry_cb(gpointer data)
{
	struct vt_libvirt *lv = data;

	lv->retry_timer = 0;
	lv_connect(lv);
	return G_SOURCE_REMOVE;
}

static void schedule_retry(struct vt_libvirt *lv)
{
	if (lv->retry_timer)
		return;
	lv->retry_timer = g_timeout_add(lv->backoff_ms, retry_cb, lv);
	lv->backoff_ms = MIN(lv->backoff_ms * 2, BACKOFF_MAX_MS);
}

/* Callbacks off and the connection closed, off the loop; the op holds the reference. */
static void close_conn(struct vt_libvirt *lv, virConnectPtr conn, int cb_lifecycle,
		       int cb_metadata)
{
	struct lv_op *op = g_new0(struct lv_op, 1);

	op->kind = LV_CLOSE;
	op->conn = conn;
	op->cb_lifecycle = cb_lifecycle;
	op->cb_metadata = cb_metadata;
	if (!op_start(lv, op, NULL))
		vt_daemon_log(lv->d, G_LOG_LEVEL_WARNING, NULL, "libvirt: no thread to close the "
			      "old connection: it stays open");
}

static void connect_done(struct vt_libvirt *lv, struct lv_op *op)
{
	lv->connecting = false;
	if (!op->error && !virConnectIsAlive(op->conn))
		op->error = g_strdup("the connection closed at once");
	if (op->error) {
		vt_daemon_log(lv->d, lv->warned ? G_LOG_LEVEL_DEBUG : G_LOG_LEVEL_WARNING, NULL,
			      "libvirt %s: %s (retrying in %u s, then less often)", lv->uri,
			      op->error, lv->backoff_ms / 1000);
		lv->warned = true;
		if (op->conn) {
			close_conn(lv, g_steal_pointer(&op->conn), op->cb_lifecycle,
				   op->cb_metadata);
		}
		schedule_retry(lv);
		return;
	}
	lv->conn = g_steal_pointer(&op->conn);
	lv->cb_lifecycle = op->cb_lifecycle;
	lv->cb_metadata = op->cb_metadata;
	lv->warned = false;
	lv->backoff_ms = BACKOFF_FIRST_MS;
	vt_daemon_log(lv->d, G_LOG_LEVEL_MESSAGE, NULL, "libvirt %s: connected, %u running "
		      "domain(s), attaching %s", lv->uri, op->seen->len,
		      lv->attach == VT_LIBVIRT_ATTACH_ALL ? "all of them" :
		      "those with a vtier policy");
	detach_stale(lv, op->seen);
	for (unsigned int i = 0; i < op->seen->len; i++)
		domain_seen(lv, g_ptr_array_index(op->seen, i), op);
}

static void lv_release(struct vt_libvirt *lv)
{
	g_ptr_array_free(lv->jobs, TRUE);
	g_free(lv->uri);
	g_free(lv);
}

static void op_done(void *arg)
{
	struct lv_op *op = arg;
	struct vt_libvirt *lv = op->lv;
	g_autoptr(GError) e = NULL;
	char n[128];

	g_ptr_array_remove(lv->jobs, op);
	if (lv->dying) {
		/* vt_libvirt_free gave up waiting for this one: nothing to decide any more */
		op_free(op);
		if (!lv->jobs->len)
			lv_release(lv);
		return;
	}
	switch (op->kind) {
	case LV_CONNECT:
		connect_done(lv, op);
		break;
	case LV_FETCH:
		if (op->error) {
			vt_daemon_log(lv->d, op->cb ? G_LOG_LEVEL_DEBUG : G_LOG_LEVEL_MESSAGE, NULL,
				      "libvirt domain %s: %s", shown(n, sizeof(n), op->domain),
				      op->error);
			if (op->cb) {
				g_set_error(&e, VT_CORE_ERROR, ENOENT, "libvirt domain '%s': %s",
					    shown(n, sizeof(n), op->domain), op->error);
				op->cb(NULL, e, op->cb_arg);
			}
		} else if (op->seen->len) {
			domain_seen(lv, g_ptr_array_index(op->seen, 0), op);
		}
		break;
	case LV_CLOSE:
		break;
	}
	op_free(op);
}

static void fetch(struct vt_libvirt *lv, virConnectPtr conn, const char *domain, enum lv_why why)
{
	struct lv_op *op = g_new0(struct lv_op, 1);
	g_autoptr(GError) e = NULL;

	op->kind = LV_FETCH;
	op->why = why;
	op->conn = conn;
	virConnectRef(conn);
	op->domain = g_strdup(domain);
	if (!op_start(lv, op, &e))
		vt_daemon_log(lv->d, G_LOG_LEVEL_WARNING, NULL, "libvirt domain %s: %s", domain,
			      e->message);
}

static void lifecycle_cb(virConnectPtr conn, virDomainPtr dom, int event, int detail, void *opaque)
{
	struct vt_libvirt *lv = opaque;
	char uuid[VIR_UUID_STRING_BUFLEN];
	struct vt_vm *vm;

	if (lv->dying || virDomainGetUUIDString(dom, uuid) < 0)	/* local: no call to libvirtd */
		return;
	if (event == VIR_DOMAIN_EVENT_STARTED) {
		fetch(lv, conn, uuid, LV_WHY_LISTED);
	} else if (event == VIR_DOMAIN_EVENT_STOPPED) {
		vm = vm_of_domain(lv->d, uuid);
		if (vm) {
			g_autofree char *why = g_strdup_printf("its libvirt domain stopped (%s)",
				detail == VIR_DOMAIN_EVENT_STOPPED_MIGRATED ? "migrated away" :
				detail == VIR_DOMAIN_EVENT_STOPPED_CRASHED ? "crashed" :
				detail == VIR_DOMAIN_EVENT_STOPPED_DESTROYED ? "destroyed" :
				detail == VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN ? "shut down" : "stopped");

			vt_daemon_detach(lv->d, vm->name, why, NULL);
		}
	}
}

static void metadata_cb(virConnectPtr conn, virDomainPtr dom, int type, const char *nsuri,
			void *opaque)
{
	struct vt_libvirt *lv = opaque;
	char uuid[VIR_UUID_STRING_BUFLEN];

	if (lv->dying || type != VIR_DOMAIN_METADATA_ELEMENT || !nsuri ||
	    strcmp(nsuri, VT_LIBVIRT_POLICY_NS) ||
	    virDomainGetUUIDString(dom, uuid) < 0)
		return;
	fetch(lv, conn, uuid, LV_WHY_METADATA);
}

static void closed_cb(virConnectPtr conn, int reason, void *opaque)
{
	struct vt_libvirt *lv = opaque;

	if (lv->dying || conn != lv->conn)
		return;		/* connect_done sees it is not alive */
	vt_daemon_log(lv->d, G_LOG_LEVEL_WARNING, NULL, "libvirt %s: connection closed (%s); "
		      "attached VMs stay, reconnecting", lv->uri,
		      reason == VIR_CONNECT_CLOSE_REASON_EOF ? "libvirtd went away" :
		      reason == VIR_CONNECT_CLOSE_REASON_KEEPALIVE ? "libvirtd stopped answering" :
		      reason == VIR_CONNECT_CLOSE_REASON_ERROR ? "socket error" : "closed");
	lv->conn = NULL;
	close_conn(lv, conn, lv->cb_lifecycle, lv->cb_metadata);
	lv->cb_lifecycle = lv->cb_metadata = -1;
	lv->backoff_ms = BACKOFF_FIRST_MS;
	schedule_retry(lv);
}

static void lv_connect(struct vt_libvirt *lv)
{
	struct lv_op *op;
	g_autoptr(GError) e = NULL;

	if (lv->conn || lv->connecting)
		return;
	op = g_new0(struct lv_op, 1);
	op->kind = LV_CONNECT;
	op->cb_lifecycle = op->cb_metadata = -1;
	lv->connecting = true;
	if (!op_start(lv, op, &e)) {
		lv->connecting = false;
		vt_daemon_log(lv->d, G_LOG_LEVEL_WARNING, NULL, "libvirt: %s", e->message);
		schedule_retry(lv);
	}
}

/* libvirt prints every error to stderr by default; vtierd logs what it handles. */
static void quiet(void *opaque, virErrorPtr error)
{
	(void)opaque;
	g_debug("libvirt: %s", error && error->message ? error->message : "?");
}

static const struct vt_daemon_libvirt_ops daemon_libvirt_ops = {
	.free = vt_libvirt_free,
	.attach_domain = vt_libvirt_attach_domain,
};

struct vt_libvirt *vt_libvirt_new(struct vt_daemon *d, const char *uri,
				  enum vt_libvirt_attach attach)
{
	struct vt_libvirt *lv = g_new0(struct vt_libvirt, 1);

	virSetErrorFunc(NULL, quiet);
	vt_libvirt_xml_init();		/* here, before any job parses */
	vt_libvirt_event_register();
	lv->d = d;
	lv->uri = g_strdup(uri ? uri : VT_LIBVIRT_URI_DEFAULT);
	lv->attach = attach;
	lv->cb_lifecycle = lv->cb_metadata = -1;
	lv->backoff_ms = BACKOFF_FIRST_MS;
	lv->jobs = g_ptr_array_new();
	d->libvirt = lv;
	d->libvirt_ops = &daemon_libvirt_ops;
	lv_connect(lv);
	return lv;
}

/*
 * Teardown waits this long for calls in flight (a hung libvirtd answers
 * nothing, and its keepalive takes 15 s), then leaves them to the exit.
 */
#define TEARDOWN_WAIT_US (2 * G_USEC_PER_SEC)

void vt_libvirt_free(struct vt_libvirt *lv)
{
	gint64 deadline = g_get_monotonic_time() + TEARDOWN_WAIT_US;
	bool all_ran;

	if (!lv)
		return;
	if (lv->retry_timer)
		g_source_remove(lv->retry_timer);
	if (lv->d->libvirt == lv)
		lv->d->libvirt = NULL;
	/* callbacks off and the connection closed, like any close: on a job */
	if (lv->conn) {
		close_conn(lv, lv->conn, lv->cb_lifecycle, lv->cb_metadata);
		lv->conn = NULL;
	}
	do {
		all_ran = true;
		for (unsigned int i = 0; i < lv->jobs->len; i++)
			all_ran &= g_atomic_int_get(&((struct lv_op *)
						      g_ptr_array_index(lv->jobs, i))->ran) != 0;
		if (!all_ran)
			g_usleep(10000);
	} while (!all_ran && g_get_monotonic_time() < deadline);
	for (unsigned int i = 0; i < lv->jobs->len;) {
		struct lv_op *op = g_ptr_array_index(lv->jobs, i);

		if (!g_atomic_int_get(&op->ran)) {
			i++;
			continue;
		}
		g_ptr_array_remove_index(lv->jobs, i);
		vt_job_cancel(op->job);		/* its run returned: no wait */
		if (op->kind == LV_CONNECT && op->conn) {
			/* connected just now: closed here, bounded by the keepalive it has */
			drop_callbacks(op->conn, op->cb_lifecycle, op->cb_metadata);
		}
		op_free(op);
	}
	if (lv->jobs->len) {
		vt_daemon_log(lv->d, G_LOG_LEVEL_WARNING, NULL, "libvirt %s: %u call(s) still "
			      "waiting on libvirtd after %d s: not waiting longer", lv->uri,
			      lv->jobs->len, (int)(TEARDOWN_WAIT_US / G_USEC_PER_SEC));
		lv->dying = true;	/* the last of them frees lv, if the loop runs again */
		return;
	}
	lv_release(lv);
}

bool vt_libvirt_attach_domain(struct vt_libvirt *lv, const char *name, char *const *set,
			      unsigned int nr_set, vt_daemon_attach_cb cb, void *arg,
			      GError **error)
{
	struct lv_op *op;

	if (!lv->conn) {
		g_set_error(error, VT_CORE_ERROR, ENOTCONN, "attach --domain: vtierd is not "
			    "connected to libvirt (%s) right now: see vtierd's log", lv->uri);
		return false;
	}
	op = g_new0(struct lv_op, 1);
	op->kind = LV_FETCH;
	op->why = LV_WHY_REQUEST;
	op->conn = lv->conn;
	virConnectRef(lv->conn);
	op->domain = g_strdup(name);
	op->set = g_new0(char *, nr_set + 1);
	for (unsigned int i = 0; i < nr_set; i++)
		op->set[i] = g_strdup(set[i]);
	op->nr_set = nr_set;
	op->cb = cb;
	op->cb_arg = arg;
	return op_start(lv, op, error);
}

bool vt_libvirt_connected(const struct vt_libvirt *lv)
{
	return lv && lv->conn;
}

const char *vt_libvirt_uri(const struct vt_libvirt *lv)
{
	return lv->uri;
}

bool vt_libvirt_attach_parse(const char *text, enum vt_libvirt_attach *out, GError **error)
{
	if (strcmp(text, "policy") == 0) {
		*out = VT_LIBVIRT_ATTACH_POLICY;
	} else if (strcmp(text, "all") == 0) {
		*out = VT_LIBVIRT_ATTACH_ALL;
	} else {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "libvirt attach: '%s' is not policy or all",
			    text);
		return false;
	}
	return true;
}
