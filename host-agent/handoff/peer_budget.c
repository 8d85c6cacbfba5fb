// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-peer and host-wide budgets of what hand-offs make vtierd hold, and the
 * reserve for reconnects (peer_budget.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "ctier_prepared.h"
#include "handoff_peer.h"
#include "handoff_proto.h"
#include "json_member.h"
#include "ctier_medium.h"
#include "peer_budget.h"
#include "json_guard.h"
#include "size.h"
#include "vm_policy.h"

#define KIB 1024ull
#define GIB (1ull << 30)
#define TIB (1ull << 40)

/* The store's geometry (movers/ctier_store.c): what its index and blocks map. */
#define STORE_PAGE 4096ull
#define STORE_CHUNK_BYTES (2ull << 20)
#define STORE_HDR_BYTES 4096ull
#define STORE_BLOCK_BYTES (512ull * 16)	/* a chunk's entries */
/*
 * fds of a backend besides its pool files: the connection, its pidfd, the
 * memfd, the userfaultfd, the store's index and blocks, the mover's two
 * eventfds (one per thread).
 */
#define BACKEND_FDS 8u
#define BACKEND_THREADS 2u	/* the mover's: faults, and the orders */
/* A PREPARE: the connection, its pidfd, the memfd. */
#define PREPARE_FDS 3u
/* What vtierd holds besides hand-offs (control clients, QMP, DAMON, libvirt, metrics). */
#define FDS_OWN 256u

static const struct {
	const char *name, *key, *peer_opt, *host_opt;
} bounds[VT_BOUND_NR] = {
	[VT_BOUND_BACKENDS] = { "backends", "backends", "--max-peer-backends", "--max-backends" },
	[VT_BOUND_BYTES] = { "declared bytes", "declared_bytes", "--max-peer-bytes", "--max-bytes" },
	[VT_BOUND_FDS] = { "fds", "fds", "--max-peer-fds", "--max-fds" },
	[VT_BOUND_THREADS] = { "threads", "threads", "--max-peer-threads", "--max-threads" },
	[VT_BOUND_VA] = { "address space", "address_space", "--max-peer-va", "--max-va" },
	[VT_BOUND_PREPARES] = { "PREPAREs", "prepares", "--max-peer-prepares", "--max-prepares" },
	[VT_BOUND_PREPARE_BYTES] = { "prepared copies", "prepare_bytes",
				     "--max-peer-prepare-bytes", "--max-prepare-bytes" },
};

const char *vt_bound_option(enum vt_bound b, bool host)
{
	return (unsigned int)b < VT_BOUND_NR ? (host ? bounds[b].host_opt : bounds[b].peer_opt) :
					       "?";
}

const char *vt_bound_name(enum vt_bound b)
{
	return (unsigned int)b < VT_BOUND_NR ? bounds[b].name : "?";
}

const char *vt_bound_key(enum vt_bound b)
{
	return (unsigned int)b < VT_BOUND_NR ? bounds[b].key : "?";
}

static bool is_bytes(enum vt_bound b)
{
	return b == VT_BOUND_BYTES || b == VT_BOUND_VA || b == VT_BOUND_PREPARE_BYTES;
}

bool vt_budget_limit_parse(struct vt_budget_limits *l, enum vt_bound b, bool host,
			   const char *text, GError **error)
{
	g_autoptr(GError) e = NULL;
	char shown[64];
	guint64 v = 0;

	if ((unsigned int)b >= VT_BOUND_NR) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "no such bound %d", (int)b);
		return false;
	}
	vt_text_printable(shown, sizeof(shown), text ? text : "", text ? strlen(text) : 0);
	if (is_bytes(b) ? !vt_parse_size(text ? text : "", &v, &e) :
			  !g_ascii_string_to_unsigned(text ? text : "", 10, 0, 1000000000, &v, &e)) {
		g_set_error(error, VT_CORE_ERROR, EINVAL, "%s '%s': %s (%s; 0: no bound)",
			    vt_bound_option(b, host), shown, e->message,
			    is_bytes(b) ? "a size such as 4TiB" : "a count in 0..1000000000");
		return false;
	}
	(host ? l->host : l->peer)[b] = v;
	return true;
}

void vt_budget_limits_default(struct vt_budget_limits *l)
{
	memset(l, 0, sizeof(*l));
	/* a QEMU: a few backends (NUMA nodes, DIMMs), a 1 TiB VM with room to spare */
	l->peer[VT_BOUND_BACKENDS] = 64;
	l->peer[VT_BOUND_BYTES] = 4 * TIB;
	l->peer[VT_BOUND_FDS] = 1024;
	l->peer[VT_BOUND_THREADS] = 256;
	l->peer[VT_BOUND_VA] = 16 * TIB;	/* 4 TiB declared with 3 memory tiers (today's pools) */
	l->peer[VT_BOUND_PREPARES] = 16;
	l->peer[VT_BOUND_PREPARE_BYTES] = 16 * GIB;
	/* a host: a few hundred VMs of a few backends each */
	l->host[VT_BOUND_BACKENDS] = 4096;
	l->host[VT_BOUND_THREADS] = 4096;
	/* x86-64 user space is 128 TiB: a quarter left for everything else */
	l->host[VT_BOUND_VA] = 96 * TIB;
	l->host[VT_BOUND_PREPARES] = 256;
	l->host[VT_BOUND_PREPARE_BYTES] = 64 * GIB;
	l->reconnect_grace_s = 60;	/* QEMU retries every 5 s at most */
}

void vt_peer_id_fill(struct vt_peer_id *who, pid_t pid, uint64_t start_time, uid_t uid,
		     const char *cgroup)
{
	memset(who, 0, sizeof(*who));
	who->pid = pid;
	who->start_time = start_time;
	who->uid = uid;
	g_strlcpy(who->cgroup, cgroup ? cgroup : "", sizeof(who->cgroup));
}

/*
 * The address space a pool of @spec maps for a backend of @size bytes: a
 * memory medium's pool file mapped whole at the tier's capacity, or at the
 * backend's size without one (ctier_medium.c); a file medium maps nothing.
 * When pools map only what they hold, this is the bound on what they can
 * come to hold, still the right charge for a budget.
 */
static uint64_t pool_va(uint64_t size, const struct vt_ctier_spec *spec)
{
	if (spec->medium == VT_MEDIUM_FILE || spec->medium == VT_MEDIUM_REMOTE)
		return 0;	/* nothing mapped here */
	return (spec->capacity_bytes ? MIN(spec->capacity_bytes, size) : size) / STORE_PAGE *
	       STORE_PAGE;
}

/*
 * A memory medium maps its file in segments as it fills (movers/ctier_medium.h):
 * at most twice the bytes in use plus the first segment. The tiers of one
 * backend hold at most its @size bytes together (a page is in one tier, never
 * larger than the page), so their pools map at most 2 x @size + a first
 * segment each, and never more than their files.
 */
static uint64_t pools_va(uint64_t size, const struct vt_ctier_spec *specs, unsigned int nr)
{
	uint64_t files = 0, mem = 0;

	for (unsigned int i = 0; i < nr; i++) {
		files += pool_va(size, &specs[i]);
		mem += specs[i].medium == VT_MEDIUM_NODE ? 1 : 0;
	}
	return MIN(files, 2 * size + mem * VT_SEG0);
}

void vt_budget_backend_charge(uint64_t size, const struct vt_ctier_spec *specs,
			      const struct vt_remote_spec *remote, unsigned int nr,
			      struct vt_charge *out)
{
	uint64_t chunks = (size + STORE_CHUNK_BYTES - 1) / STORE_CHUNK_BYTES;

	memset(out, 0, sizeof(*out));
	out->v[VT_BOUND_BACKENDS] = 1;
	out->v[VT_BOUND_BYTES] = size;
	out->v[VT_BOUND_FDS] = BACKEND_FDS + nr;
	out->v[VT_BOUND_THREADS] = BACKEND_THREADS;
	out->v[VT_BOUND_VA] = STORE_HDR_BYTES + (chunks * 4 + STORE_PAGE - 1) / STORE_PAGE *
			      STORE_PAGE + chunks * STORE_BLOCK_BYTES;
	out->v[VT_BOUND_VA] += pools_va(size, specs, nr);
	for (unsigned int i = 0; remote && i < nr; i++) {
		struct vt_charge lc;

		if (specs[i].medium != VT_MEDIUM_REMOTE || !remote[i].local_copy[0])
			continue;
		/* the local copies' store: its index, blocks and pool file */
		vt_budget_backend_charge(size, &remote[i].local, NULL, 1, &lc);
		out->v[VT_BOUND_FDS] += 3;
		out->v[VT_BOUND_VA] += lc.v[VT_BOUND_VA];
	}
}

void vt_budget_prepare_charge(struct vt_charge *out)
{
	memset(out, 0, sizeof(*out));
	out->v[VT_BOUND_PREPARES] = 1;
	out->v[VT_BOUND_FDS] = PREPARE_FDS;
	out->v[VT_BOUND_THREADS] = 1;
}

struct peer {
	struct vt_peer_id who;
	struct vt_charge held;
	struct vt_prepared_quota *quota;	/* its PREPAREs' copies, while it holds any */
	uint64_t refused;
};

struct reserve {
	struct vt_charge c;
	pid_t pid;			/* 0: not known */
	uint64_t start_time;
	gint64 expires_us;		/* 0: until unreserved */
};

struct vt_budget {
	struct vt_budget_limits l;
	GHashTable *peers;		/* "pid-start" -> struct peer */
	GHashTable *reserve;		/* store key -> struct reserve */
	struct vt_charge held;		/* all peers */
	struct vt_charge reserved;	/* all reservations */
	uint64_t refused[VT_BOUND_NR];
	struct vt_prepared_quota *host_quota;
};

static void peer_free(gpointer data)
{
	struct peer *p = data;

	vt_prepared_quota_unref(p->quota);
	g_free(p);
}

struct vt_budget *vt_budget_new(const struct vt_budget_limits *l)
{
	struct vt_budget *bu = g_new0(struct vt_budget, 1);
	struct rlimit rl;

	bu->l = *l;
	if (!bu->l.host[VT_BOUND_FDS] && !getrlimit(RLIMIT_NOFILE, &rl) &&
	    rl.rlim_cur != RLIM_INFINITY)
		bu->l.host[VT_BOUND_FDS] = rl.rlim_cur > 2 * FDS_OWN ? rl.rlim_cur - FDS_OWN :
								       rl.rlim_cur / 2;
	bu->peers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, peer_free);
	bu->reserve = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	bu->host_quota = vt_prepared_quota_new(bu->l.host[VT_BOUND_PREPARE_BYTES]);
	return bu;
}

void vt_budget_free(struct vt_budget *bu)
{
	if (!bu)
		return;
	g_hash_table_destroy(bu->peers);
	g_hash_table_destroy(bu->reserve);
	vt_prepared_quota_unref(bu->host_quota);
	g_free(bu);
}

const struct vt_budget_limits *vt_budget_limits(const struct vt_budget *bu)
{
	return &bu->l;
}

static char *peer_key(const struct vt_peer_id *who)
{
	return g_strdup_printf("%d-%" G_GUINT64_FORMAT, (int)who->pid, who->start_time);
}

static struct peer *peer_get(struct vt_budget *bu, const struct vt_peer_id *who, bool create)
{
	g_autofree char *k = peer_key(who);
	struct peer *p = g_hash_table_lookup(bu->peers, k);

	if (!p && create) {
		p = g_new0(struct peer, 1);
		p->who = *who;
		g_hash_table_insert(bu->peers, g_steal_pointer(&k), p);
	}
	return p;
}

/* Forget a peer that holds nothing (its refusals were counted host-wide). */
static void peer_maybe_drop(struct vt_budget *bu, struct peer *p)
{
	g_autofree char *k = NULL;

	for (unsigned int i = 0; i < VT_BOUND_NR; i++)
		if (p->held.v[i])
			return;
	if (p->quota && vt_prepared_quota_used(p->quota))
		return;
	k = peer_key(&p->who);
	g_hash_table_remove(bu->peers, k);
}

static void add(struct vt_charge *to, const struct vt_charge *c, int sign)
{
	for (unsigned int i = 0; i < VT_BOUND_NR; i++)
		to->v[i] = sign > 0 ? to->v[i] + c->v[i] : to->v[i] - MIN(to->v[i], c->v[i]);
}

void vt_bound_format(enum vt_bound b, uint64_t v, char *out, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double x = (double)v;
	unsigned int u = 0;

	if (!is_bytes(b)) {
		snprintf(out, len, "%" G_GUINT64_FORMAT, v);
		return;
	}
	while (x >= 1024 && u < G_N_ELEMENTS(unit) - 1) {
		x /= 1024;
		u++;
	}
	snprintf(out, len, u ? "%.1f %s" : "%.0f %s", x, unit[u]);
}

static void expire(struct vt_budget *bu)
{
	gint64 now = g_get_monotonic_time();
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, bu->reserve);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct reserve *r = v;

		if (r->expires_us && now >= r->expires_us) {
			add(&bu->reserved, &r->c, -1);
			g_hash_table_iter_remove(&it);
		}
	}
}

int vt_budget_take(struct vt_budget *bu, const struct vt_peer_id *who, const char *key,
		   bool reconnect, const struct vt_charge *c, struct vt_budget_ticket *t,
		   char *msg, size_t msg_len)
{
	struct reserve *r;
	struct peer *p;

	memset(t, 0, sizeof(*t));
	t->who = *who;
	t->c = *c;
	expire(bu);
	r = key ? g_hash_table_lookup(bu->reserve, key) : NULL;
	if (reconnect && r && (!r->pid || (r->pid == who->pid && r->start_time == who->start_time))) {
		/* what was kept for it: no bound can refuse it */
		t->from_reserve = true;
		g_strlcpy(t->key, key, sizeof(t->key));
		t->reserved = r->c;
		t->owner_pid = r->pid;
		t->owner_start = r->start_time;
		t->expires_us = r->expires_us;
		add(&bu->reserved, &r->c, -1);
		g_hash_table_remove(bu->reserve, key);
		goto take;
	}
	p = peer_get(bu, who, false);
	for (unsigned int i = 0; i < VT_BOUND_NR; i++) {
		uint64_t mine = (p ? p->held.v[i] : 0) + c->v[i];
		char v1[32], v2[32];

		if (i == VT_BOUND_PREPARE_BYTES || !c->v[i] || !bu->l.peer[i] ||
		    mine <= bu->l.peer[i])
			continue;
		vt_bound_format(i, mine, v1, sizeof(v1));
		vt_bound_format(i, bu->l.peer[i], v2, sizeof(v2));
		snprintf(msg, msg_len, "%s would be %s, over this peer's bound of %s (%s)",
			 bounds[i].name, v1, v2, bounds[i].peer_opt);
		bu->refused[i]++;
		if (p)
			p->refused++;
		return -EDQUOT;
	}
	for (unsigned int i = 0; i < VT_BOUND_NR; i++) {
		uint64_t all = bu->held.v[i] + bu->reserved.v[i] + c->v[i];
		char v1[32], v2[32], v3[32];

		if (i == VT_BOUND_PREPARE_BYTES || !c->v[i] || !bu->l.host[i] ||
		    all <= bu->l.host[i])
			continue;
		vt_bound_format(i, all, v1, sizeof(v1));
		vt_bound_format(i, bu->reserved.v[i], v2, sizeof(v2));
		vt_bound_format(i, bu->l.host[i], v3, sizeof(v3));
		snprintf(msg, msg_len, "host %s would be %s (%s kept for reconnects), over its "
			 "bound of %s (%s)", bounds[i].name, v1, v2, v3, bounds[i].host_opt);
		bu->refused[i]++;
		if (p)
			p->refused++;
		return -EDQUOT;
	}
take:
	p = peer_get(bu, who, true);
	add(&p->held, c, 1);
	add(&bu->held, c, 1);
	t->taken = true;
	return 0;
}

void vt_budget_give(struct vt_budget *bu, struct vt_budget_ticket *t, bool restore)
{
	struct peer *p;

	if (!t || !t->taken)
		return;
	p = peer_get(bu, &t->who, false);
	if (p) {
		add(&p->held, &t->c, -1);
		peer_maybe_drop(bu, p);
	}
	add(&bu->held, &t->c, -1);
	if (restore && t->from_reserve && !g_hash_table_contains(bu->reserve, t->key)) {
		struct reserve *r = g_new0(struct reserve, 1);

		r->c = t->reserved;
		r->pid = t->owner_pid;
		r->start_time = t->owner_start;
		r->expires_us = t->expires_us;
		add(&bu->reserved, &r->c, 1);
		g_hash_table_insert(bu->reserve, g_strdup(t->key), r);
	}
	t->taken = false;
}

void vt_budget_reserve(struct vt_budget *bu, const char *key, pid_t pid, uint64_t start_time,
		       const struct vt_charge *c, unsigned int ttl_s)
{
	struct reserve *r = g_new0(struct reserve, 1);
	struct reserve *old = g_hash_table_lookup(bu->reserve, key);

	if (old)
		add(&bu->reserved, &old->c, -1);	/* replaced below */
	r->c = *c;
	r->pid = pid;
	r->start_time = start_time;
	r->expires_us = ttl_s ? g_get_monotonic_time() + (gint64)ttl_s * G_USEC_PER_SEC : 0;
	add(&bu->reserved, &r->c, 1);
	g_hash_table_insert(bu->reserve, g_strdup(key), r);
}

void vt_budget_unreserve(struct vt_budget *bu, const char *key, pid_t pid, uint64_t start_time)
{
	struct reserve *r = g_hash_table_lookup(bu->reserve, key);

	if (!r || (r->pid && (r->pid != pid || r->start_time != start_time)))
		return;
	add(&bu->reserved, &r->c, -1);
	g_hash_table_remove(bu->reserve, key);
}

bool vt_budget_reserved(struct vt_budget *bu, const char *key)
{
	expire(bu);
	return g_hash_table_contains(bu->reserve, key);
}

/*
 * A store directory's name as backend_key() in handoff/backend.c makes it:
 * "<32 hex>-<id>" (@pid 0) or "pidP-START-<id>"; its table key "<u>/<id>".
 */
static bool parse_store_name(const char *name, char *key, size_t key_len, pid_t *pid,
			     uint64_t *start)
{
	const char *id;
	char *end;

	*pid = 0;
	*start = 0;
	if (g_str_has_prefix(name, "pid")) {
		long long p = g_ascii_strtoll(name + 3, &end, 10);

		if (end == name + 3 || *end != '-' || p <= 0 || p > G_MAXINT32)
			return false;
		*start = g_ascii_strtoull(end + 1, &end, 10);
		if (*end != '-')
			return false;
		*pid = (pid_t)p;
		id = end + 1;
	} else {
		for (unsigned int i = 0; i < 32; i++)
			if (!g_ascii_isxdigit(name[i]) || g_ascii_isupper(name[i]))
				return false;
		if (name[32] != '-')
			return false;
		id = name + 33;
	}
	if (!vt_handoff_name_safe(id))
		return false;
	snprintf(key, key_len, "%.*s/%s", (int)(id - 1 - name), name, id);
	return true;
}

unsigned int vt_budget_reserve_store_root(struct vt_budget *bu, const char *store_root,
					  const struct vt_ctier_spec *specs,
					  const struct vt_remote_spec *remote, unsigned int nr)
{
	DIR *dir = opendir(store_root);
	struct dirent *de;
	unsigned int n = 0;

	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		g_autofree char *index = g_strdup_printf("%s/%s/index", store_root, de->d_name);
		uint64_t start, chunks = 0, t;
		struct vt_charge c;
		struct stat st;
		char key[128];
		pid_t pid;

		if (de->d_name[0] == '.' ||
		    !parse_store_name(de->d_name, key, sizeof(key), &pid, &start))
			continue;
		if (pid && (vt_proc_start_time(pid, &t) || t != start))
			continue;	/* its QEMU is gone: no reconnect will come */
		/* the index maps a header and a u32 per chunk, in whole pages */
		if (!stat(index, &st) && (uint64_t)st.st_size > STORE_HDR_BYTES)
			chunks = ((uint64_t)st.st_size - STORE_HDR_BYTES) / 4;
		vt_budget_backend_charge(chunks * STORE_CHUNK_BYTES, specs, remote, nr, &c);
		vt_budget_reserve(bu, key, pid, start, &c, bu->l.reconnect_grace_s);
		n++;
	}
	closedir(dir);
	return n;
}

struct vt_prepared_quota *vt_budget_peer_quota(struct vt_budget *bu, const struct vt_peer_id *who)
{
	struct peer *p = peer_get(bu, who, true);

	if (!p->quota)
		p->quota = vt_prepared_quota_new(bu->l.peer[VT_BOUND_PREPARE_BYTES]);
	return vt_prepared_quota_ref(p->quota);
}

struct vt_prepared_quota *vt_budget_host_quota(struct vt_budget *bu)
{
	return vt_prepared_quota_ref(bu->host_quota);
}

void vt_budget_peer_held(struct vt_budget *bu, const struct vt_peer_id *who, struct vt_charge *out)
{
	struct peer *p = peer_get(bu, who, false);

	memset(out, 0, sizeof(*out));
	if (p)
		*out = p->held;
	if (p && p->quota)
		out->v[VT_BOUND_PREPARE_BYTES] = vt_prepared_quota_used(p->quota);
}

void vt_budget_totals(struct vt_budget *bu, struct vt_charge *held, struct vt_charge *reserve,
		      uint64_t refused[VT_BOUND_NR])
{
	expire(bu);
	if (held) {
		*held = bu->held;
		held->v[VT_BOUND_PREPARE_BYTES] = vt_prepared_quota_used(bu->host_quota);
	}
	if (reserve)
		*reserve = bu->reserved;
	if (refused)
		memcpy(refused, bu->refused, sizeof(bu->refused));
}

void vt_budget_to_json(struct vt_budget *bu, JsonBuilder *j)
{
	struct vt_charge held, res;
	uint64_t refused[VT_BOUND_NR];
	GHashTableIter it;
	gpointer v;

	vt_budget_totals(bu, &held, &res, refused);
	json_builder_begin_object(j);
	vt_json_begin_obj(j, "bounds");
	for (unsigned int i = 0; i < VT_BOUND_NR; i++) {
		vt_json_begin_obj(j, bounds[i].key);
		vt_json_add_u64(j, "peer_bound", bu->l.peer[i]);
		vt_json_add_u64(j, "host_bound", bu->l.host[i]);
		vt_json_add_u64(j, "held", held.v[i]);
		vt_json_add_u64(j, "reserved", res.v[i]);
		vt_json_add_u64(j, "refused", refused[i]);
		json_builder_end_object(j);
	}
	json_builder_end_object(j);
	vt_json_add_u64(j, "reconnects_reserved", g_hash_table_size(bu->reserve));
	vt_json_begin_arr(j, "peers");
	g_hash_table_iter_init(&it, bu->peers);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct peer *p = v;

		json_builder_begin_object(j);
		vt_json_add_u64(j, "pid", (uint64_t)p->who.pid);
		vt_json_add_u64(j, "uid", (uint64_t)p->who.uid);
		vt_json_add_str(j, "cgroup", p->who.cgroup);
		for (unsigned int i = 0; i < VT_BOUND_NR; i++)
			vt_json_add_u64(j, bounds[i].key, i == VT_BOUND_PREPARE_BYTES ?
				       vt_prepared_quota_used(p->quota) : p->held.v[i]);
		vt_json_add_u64(j, "refused", p->refused);
		json_builder_end_object(j);
	}
	json_builder_end_array(j);
	json_builder_end_object(j);
}
