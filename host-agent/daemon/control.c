// SPDX-License-Identifier: GPL-2.0-or-later
/* Control request dispatch: each request's handler, its reply, deferred replies. */
#include <errno.h>
#include <string.h>

#include "json_member.h"
#include "size.h"
#include "backend.h"
#include "ctl_proto.h"
#include "daemon.h"
#include "vm_json.h"
#include "vm_worker.h"

static int set_policy(struct vt_daemon *d, struct vt_vm *vm, const struct vt_vm_policy *base,
		      char *const *set, unsigned int n, struct vt_vm_policy *out, bool defer,
		      GError **error);
static char *finish(JsonBuilder *b);
static char *reply_error(const GError *e);

/*
 * A policy request waiting for the VM's worker to apply it: the control
 * reply goes out once the worker took it (or the engine refused it), without
 * the main loop waiting.
 */
struct policy_wait {
	struct vt_control_deferred *reply;	/* NULL once the client is gone */
	struct vt_vm_policy policy;
};

static void policy_client_gone(void *arg)
{
	((struct policy_wait *)arg)->reply = NULL;
}

static void policy_applied(void *arg, const char *error)
{
	struct policy_wait *w = arg;
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(GError) e = NULL;

	if (!w->reply) {
		g_free(w);
		return;
	}
	if (error) {
		g_set_error(&e, VT_CORE_ERROR, EINVAL, "policy refused, the old one stays: %s",
			    error);
		vt_control_deferred_reply(w->reply, reply_error(e));
		g_free(w);
		return;
	}
	json_builder_begin_object(b);
	vt_json_add_bool(b, "ok", true);
	vt_json_key(b, "result");
	vt_vm_policy_to_json(&w->policy, b);
	json_builder_end_object(b);
	vt_control_deferred_reply(w->reply, finish(b));
	g_free(w);
}

/*
 * An attach request waiting for its VM: answered with the status object,
 * or an error, once the attach is done; a client that gave up (its
 * deadline) abandons the attach, and nothing of it stays.
 */
struct attach_wait {
	struct vt_control_deferred *reply;	/* NULL once the client is gone */
	struct attach_op *op;			/* until the attach is done */
};

/* Connect + query-name + four discovery queries, each with its deadline, and a margin. */
static int attach_reply_timeout_ms(const struct vt_daemon *d)
{
	return d->qmp_timeout_ms * 6 + 1000;
}

static void attach_client_gone(void *arg)
{
	struct attach_wait *w = arg;

	w->reply = NULL;
	if (w->op)
		vt_daemon_attach_abandon(w->op);	/* may run attach_replied, which frees @w */
}

static void attach_replied(struct vt_vm *vm, const GError *error, void *arg)
{
	struct attach_wait *w = arg;
	g_autoptr(JsonBuilder) b = NULL;

	w->op = NULL;
	if (!w->reply) {
		g_free(w);
		return;
	}
	if (error) {
		vt_control_deferred_reply(w->reply, reply_error(error));
		g_free(w);
		return;
	}
	b = json_builder_new();
	json_builder_begin_object(b);
	vt_json_add_bool(b, "ok", true);
	vt_json_key(b, "result");
	vt_vm_status_to_json(vm, b);
	json_builder_end_object(b);
	vt_control_deferred_reply(w->reply, finish(b));
	g_free(w);
}

bool vt_daemon_set_policy(struct vt_daemon *d, struct vt_vm *vm, char *const *set, unsigned int n,
			  struct vt_vm_policy *out, GError **error)
{
	return set_policy(d, vm, NULL, set, n, out, false, error) >= 0;
}

bool vt_daemon_reset_policy(struct vt_daemon *d, struct vt_vm *vm, char *const *set,
			    unsigned int n, GError **error)
{
	return set_policy(d, vm, &d->defaults, set, n, NULL, false, error) >= 0;
}

/*
 * @set over @base (NULL: the VM's policy now); no assignment over a base is
 * the base itself. -1 refused (@error), 0 done or posted, 1 posted and the
 * control reply deferred.
 */
static int set_policy(struct vt_daemon *d, struct vt_vm *vm, const struct vt_vm_policy *base,
		      char *const *set, unsigned int n, struct vt_vm_policy *out, bool defer,
		      GError **error)
{
	struct vt_vm_policy old, p;
	struct policy_wait *w;
	uint32_t mask;
	bool ok;

	g_mutex_lock(&vm->lock);
	old = vm->policy;
	g_mutex_unlock(&vm->lock);
	p = base ? *base : old;
	if ((n || !base) && !vt_vm_policy_apply(&p, set, n, error))
		return -1;
	/* refused here, in the reply (QMP's policy-status too), not only by the worker */
	g_mutex_lock(&vm->lock);
	ok = vt_vm_tiers_mask(vm, p.tiers, &mask, error);
	g_mutex_unlock(&vm->lock);
	if (!ok)
		return -1;
	/* the VMs' dram_min must fit the host's budget: refused here, naming them */
	if (p.dram_min_bytes != old.dram_min_bytes &&
	    !vt_host_share_check_policy(&d->share, vm, &p, error))
		return -1;
	if (out)
		*out = p;
	if (memcmp(&old, &p, sizeof(old)) == 0)
		return 0;
	/* the worker takes it, restarting the engine unless only live keys
	 * changed (vt_vm_policy_live()); a refusal there keeps the old policy
	 * and says why in the log and in vtierctl status (policy_refused) */
	w = defer && d->ctl ? g_new0(struct policy_wait, 1) : NULL;
	if (w) {
		w->policy = p;
		w->reply = vt_control_defer(d->ctl, 15000, policy_client_gone, w);
		if (!w->reply) {
			g_free(w);
			w = NULL;
		}
	}
	vt_vm_worker_post_policy(vm, &p, w ? policy_applied : NULL, w);
	return w ? 1 : 0;
}

bool vt_demote_args_parse(char *const *set, unsigned int n, const char **tier, uint64_t *gpa,
			  uint64_t *len, GError **error)
{
	bool len_set = false;

	*tier = NULL;
	*gpa = 0;
	*len = UINT64_MAX;
	for (unsigned int i = 0; i < n; i++) {
		const char *eq = strchr(set[i], '=');
		g_autofree char *key = eq ? g_strndup(set[i], (gsize)(eq - set[i])) : NULL;
		g_autoptr(GError) e = NULL;

		if (!eq) {
			g_set_error(error, VT_CORE_ERROR, EINVAL, "'%s' is not KEY=VALUE "
				    "(tier=NAME gpa=SIZE len=SIZE)", set[i]);
			return false;
		}
		if (strcmp(key, "tier") == 0) {
			*tier = eq + 1;
		} else if (strcmp(key, "gpa") == 0 || strcmp(key, "len") == 0) {
			/* the one size grammar (util/size.h): no negative, no wrap */
			if (!vt_parse_size(eq + 1, key[0] == 'g' ? gpa : len, &e)) {
				g_set_error(error, VT_CORE_ERROR, EINVAL, "%s: %s", key, e->message);
				return false;
			}
			len_set |= key[0] == 'l';
		} else {
			g_set_error(error, VT_CORE_ERROR, EINVAL, "unknown key '%s' (tier, gpa, len)", key);
			return false;
		}
	}
	if (len_set && *len > UINT64_MAX - *gpa) {
		g_set_error(error, VT_CORE_ERROR, ERANGE, "gpa=%" G_GUINT64_FORMAT " len=%"
			    G_GUINT64_FORMAT " ends beyond 2^64: lower len", (guint64)*gpa,
			    (guint64)*len);
		return false;
	}
	return true;
}

/*
 * vtierctl demote VM tier=NAME [gpa=ADDR len=SIZE]: queue the range (default
 * all guest RAM) to the backends' movers; queued, not done, when it returns.
 */
static bool demote(struct vt_daemon *d, struct vt_vm *vm, char *const *set, unsigned int n,
		   JsonBuilder *b, GError **error)
{
	const char *tier = NULL;
	uint64_t gpa = 0, len = UINT64_MAX, queued = 0;
	int t = -1;

	if (!vt_demote_args_parse(set, n, &tier, &gpa, &len, error))
		return false;
	for (unsigned int i = 0; tier && i < d->host.nr_ctier; i++)
		if (strcmp(d->host.ctier[i].name, tier) == 0)
			t = (int)i;
	if (t < 0) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "needs tier=NAME of a compressed tier "
			    "(vtierctl tiers)");
		return false;
	}
	if (!vm->backends->len) {
		g_set_error(error, VT_CORE_ERROR, EOPNOTSUPP, "%s's QEMU did not hand its RAM over "
			    "(tier-agent=)", vm->name);
		return false;
	}
	for (unsigned int i = 0; i < vm->backends->len; i++) {
		struct vt_backend *bk = g_ptr_array_index(vm->backends, i);

		for (unsigned int k = 0; k < bk->ranges->len; k++) {
			const struct vtier_handoff_range *r =
				&g_array_index(bk->ranges, struct vtier_handoff_range, k);
			uint64_t s0 = MAX(r->gpa, gpa);
			uint64_t e0 = MIN(r->gpa + r->size, len > UINT64_MAX - gpa ? UINT64_MAX :
					  gpa + len);

			s0 = (s0 + 4095) & ~4095ULL;
			e0 &= ~4095ULL;
			if (e0 <= s0)
				continue;
			if (vt_backend_queue(bk, r->offset + (s0 - r->gpa), e0 - s0, t) == 0)
				queued += e0 - s0;
		}
	}
	json_builder_begin_object(b);
	vt_json_add_str(b, "tier", tier);
	vt_json_add_u64(b, "queued_bytes", queued);
	json_builder_end_object(b);
	return true;
}

static char *finish(JsonBuilder *b)
{
	g_autoptr(JsonGenerator) gen = json_generator_new();
	g_autoptr(JsonNode) root = json_builder_get_root(b);
	g_autofree char *text = NULL;

	json_generator_set_root(gen, root);
	text = json_generator_to_data(gen, NULL);
	return g_strconcat(text, "\n", NULL);
}

static char *reply_error(const GError *e)
{
	g_autoptr(JsonBuilder) b = json_builder_new();

	json_builder_begin_object(b);
	vt_json_add_bool(b, "ok", false);
	vt_json_add_str(b, "error", e->message);
	vt_json_add_int(b, "errno", e->code);
	json_builder_end_object(b);
	return finish(b);
}

/*
 * An attach request judged before anything is connected or created (its VM
 * name and path already checked by ctl_proto.c): its policy words valid over
 * the daemon's defaults (by QMP), --domain only with libvirt and without
 * --name. Touches no file: a daemon without a control server (the fuzzer's)
 * stops right after it; a name or socket already taken is refused by
 * vt_daemon_attach_start() before it connects.
 */
static bool attach_judge(struct vt_daemon *d, const struct vt_ctl_request *req, GError **error)
{
	struct vt_vm_policy p = d->defaults;

	if (req->domain && !d->libvirt) {
		g_set_error(error, VT_CORE_ERROR, EOPNOTSUPP, "attach --domain: vtierd does not "
			    "talk to libvirt (start it with --libvirt-uri, or [libvirt] uri = in its "
			    "config)");
		return false;
	}
	if (req->domain && req->vm) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "attach --domain: the VM takes the "
			    "domain's name; no --name");
		return false;
	}
	/* by QMP the VM starts from the defaults (--domain: from its metadata, libvirt_domains.c) */
	return req->domain || !req->nr_set || vt_vm_policy_apply(&p, req->set, req->nr_set, error);
}

static gint cmp_vm_name(gconstpointer a, gconstpointer b)
{
	return strcmp(((const struct vt_vm *)a)->name, ((const struct vt_vm *)b)->name);
}

char *vt_daemon_handle(struct vt_daemon *d, const char *data, size_t len)
{
	struct vt_ctl_request req;
	g_autoptr(GError) e = NULL;
	g_autoptr(JsonBuilder) b = json_builder_new();
	struct vt_vm *vm = NULL;
	char *reply;
	int ret;

	if (!vt_ctl_request_parse(data, len, &req, &e))
		return reply_error(e);
	/* demote's words are judged before its VM: a bad gpa= is named as such */
	if (req.cmd == VT_CTL_DEMOTE) {
		const char *tier;
		uint64_t gpa, dlen;

		if (!vt_demote_args_parse(req.set, req.nr_set, &tier, &gpa, &dlen, &e))
			goto err;
	}
	if (req.vm && req.cmd != VT_CTL_ATTACH) {
		vm = g_hash_table_lookup(d->vms, req.vm);
		if (!vm) {
			g_set_error(&e, VT_CORE_ERROR, ENOENT, "no VM named '%s' is attached (see "
				    "vtierctl list)", req.vm);
			goto err;
		}
	}
	json_builder_begin_object(b);
	vt_json_add_bool(b, "ok", true);
	vt_json_key(b, "result");
	switch (req.cmd) {
	case VT_CTL_PING:
		json_builder_add_string_value(b, "pong");
		break;
	case VT_CTL_LIST: {
		g_autoptr(GList) vms = g_list_sort(g_hash_table_get_values(d->vms), cmp_vm_name);

		json_builder_begin_array(b);
		for (GList *l = vms; l; l = l->next)
			vt_vm_status_to_json(l->data, b);
		json_builder_end_array(b);
		break;
	}
	case VT_CTL_ATTACH: {
		struct attach_wait *w;

		if (!attach_judge(d, &req, &e))
			goto err;
		if (!d->ctl) {
			g_set_error(&e, VT_CORE_ERROR, EOPNOTSUPP, "attach: answered later, and this "
				    "daemon has no control server to answer on");
			goto err;
		}
		w = g_new0(struct attach_wait, 1);
		if (req.domain) {
			/* looked up on a job; the attach that follows cannot be abandoned */
			if (!d->libvirt_ops->attach_domain(d->libvirt, req.domain, req.set,
							   req.nr_set, attach_replied, w, &e)) {
				g_free(w);
				goto err;
			}
		} else {
			w->op = vt_daemon_attach_start(d, req.qmp, req.vm, req.set, req.nr_set,
					     attach_replied, w, &e);
			if (!w->op) {
				g_free(w);
				goto err;
			}
		}
		/* the attach's callback never runs before the handler returns */
		w->reply = vt_control_defer(d->ctl, attach_reply_timeout_ms(d), attach_client_gone, w);
		vt_ctl_request_clear(&req);
		return NULL;
	}
	case VT_CTL_DETACH:
		if (!vt_daemon_detach(d, req.vm, "on request", &e))
			goto err;
		json_builder_add_string_value(b, req.vm);
		break;
	case VT_CTL_STATUS:
		vt_vm_status_to_json(vm, b);
		break;
	case VT_CTL_STATS:
		vt_vm_stats_to_json(vm, &d->host.tiers, b);
		break;
	case VT_CTL_REPORT:
		/* from what each worker published at its last window: never waits on a VM */
		if (vm) {
			vt_vm_report_to_json(vm, b);
		} else {
			g_autoptr(GList) vms = g_list_sort(g_hash_table_get_values(d->vms),
							   cmp_vm_name);

			json_builder_begin_array(b);
			for (GList *l = vms; l; l = l->next)
				vt_vm_report_to_json(l->data, b);
			json_builder_end_array(b);
		}
		break;
	case VT_CTL_HEATMAP:
		/* a copy of what the worker pushed at its windows: never waits on it */
		vt_vm_heatmap_to_json(vm, b);
		break;
	case VT_CTL_POLICY: {
		struct vt_vm_policy p;

		g_mutex_lock(&vm->lock);
		p = vm->policy;
		g_mutex_unlock(&vm->lock);
		ret = req.nr_set ? set_policy(d, vm, NULL, req.set, req.nr_set, &p, true, &e) : 0;
		if (ret < 0)
			goto err;
		if (ret > 0) {
			/* answered once the worker applied it (policy_applied) */
			vt_ctl_request_clear(&req);
			return NULL;
		}
		vt_vm_policy_to_json(&p, b);
		break;
	}
	case VT_CTL_DEMOTE:
		if (!demote(d, vm, req.set, req.nr_set, b, &e))
			goto err;
		break;
	case VT_CTL_TIERS: {
		struct vt_tiers now = d->host.tiers;	/* the host config stays as at start */

		vt_tiers_refresh(&now);
		json_builder_begin_array(b);
		vt_tiers_members_to_json(&now, b);
		/* the compressed tiers come after the NUMA tiers in placement order */
		for (unsigned int i = 0; i < d->host.nr_ctier; i++) {
			char desc[128];

			vt_ctier_spec_describe(&d->host.ctier[i], desc, sizeof(desc));
			json_builder_begin_object(b);
			vt_json_add_str(b, "name", d->host.ctier[i].name);
			vt_json_add_str(b, "kind", "compressed");
			vt_json_begin_arr(b, "nodes");
			if (d->host.ctier[i].medium == VT_MEDIUM_NODE)
				json_builder_add_int_value(b, d->host.ctier[i].node);
			json_builder_end_array(b);
			vt_json_add_u64(b, "capacity_bytes", d->host.ctier[i].capacity_bytes);
			vt_json_add_str(b, "source", desc);
			if (d->host.ctier[i].medium == VT_MEDIUM_REMOTE) {
				const struct vt_rc_config *rc = &d->host.remote[i].rc;

				/* a page's copies live on these (each VM's state: vtierctl stats) */
				vt_json_add_u64(b, "copies", rc->copies);
				vt_json_begin_arr(b, "servers");
				for (unsigned int k = 0; k < rc->nr_servers; k++) {
					char name[VT_RC_SERVER_NAME_LEN];

					vt_rc_server_name(&rc->server[k], name, sizeof(name));
					json_builder_add_string_value(b, name);
				}
				json_builder_end_array(b);
			}
			json_builder_end_object(b);
		}
		if (d->host.nr_ctier) {
			/* stock QEMU's compressed tier, where the host has one */
			json_builder_begin_object(b);
			vt_json_add_str(b, "name", "zswap");
			vt_json_add_str(b, "kind", "compressed");
			vt_json_begin_arr(b, "nodes");
			json_builder_end_array(b);
			vt_json_add_str(b, "source", d->host.zswap_ok ? "host zswap (VMs without "
					"a hand-off)" : d->host.zswap_why);
			json_builder_end_object(b);
		}
		json_builder_end_array(b);
		break;
	}
	}
	json_builder_end_object(b);
	vt_ctl_request_clear(&req);
	return finish(b);
err:
	vt_ctl_request_clear(&req);
	reply = reply_error(e);
	return reply;
}
