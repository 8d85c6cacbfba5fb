// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The memory server's state (remote_server.h). Namespaces and pages live in
 * GHashTables whose hashes are keyed SipHash of the ids (the ids are the
 * peers' choice), computed once and kept in the entry.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "errbuf.h"
#include "remote_server.h"

struct rs_page {
	uint64_t hash;		/* first: the table's hash reads it */
	uint64_t id;
	uint16_t len;
	uint8_t blob[];
};

/* A client address: what its namespaces hold, against the client cap. */
struct rs_client {
	struct vt_rs_client_stats st;	/* .namespaces: those it created, alive */
};

struct rs_ns {
	uint64_t hash;		/* first, as in rs_page */
	uint8_t id[VT_RP_NS_BYTES];
	uint8_t access_key[VT_SEAL_KEY_BYTES];
	GHashTable *pages;	/* struct rs_page * (key and value) */
	struct vt_rp_window window;
	struct vt_rp_reasm reasm;
	uint64_t reasm_bytes;
	struct rs_client *client;	/* whose HELLO made it: its share, its bytes */
	struct vt_rs_ns_stats st;
};

struct vt_rs {
	struct vt_rs_config cfg;
	uint8_t hash_key[VT_SEAL_HASH_KEY_BYTES];
	GHashTable *ns;		/* struct rs_ns * (key and value) */
	GHashTable *per_addr;	/* IPv4 (vt_rs_peer.addr) -> struct rs_client * (freed with it) */
	uint64_t used;		/* charged bytes, all namespaces */
	struct vt_rs_stats st;
	uint8_t body[VT_RP_BODY_LIMIT];	/* a reply being built */
	struct vt_rp_dgrams out;		/* its datagrams */
};

static guint entry_hash(gconstpointer p)
{
	return (guint)*(const uint64_t *)p;
}

static gboolean page_equal(gconstpointer a, gconstpointer b)
{
	return ((const struct rs_page *)a)->id == ((const struct rs_page *)b)->id;
}

static gboolean ns_equal(gconstpointer a, gconstpointer b)
{
	return memcmp(((const struct rs_ns *)a)->id, ((const struct rs_ns *)b)->id,
		      VT_RP_NS_BYTES) == 0;
}

static uint64_t page_charge(uint16_t len)
{
	return (uint64_t)len + VT_RS_PAGE_OVERHEAD;
}

static void ns_free(gpointer p)
{
	struct rs_ns *ns = p;

	g_hash_table_destroy(ns->pages);
	vt_rp_reasm_clear(&ns->reasm);
	memset(ns->access_key, 0, sizeof(ns->access_key));
	g_free(ns);
}

struct vt_rs *vt_rs_new(const struct vt_rs_config *cfg, char *err, size_t err_len)
{
	struct vt_rs *rs;

	if (cfg->server_cap_bytes == 0) {
		vt_err_set(-EINVAL, err, err_len,
			   "server cap 0 (accepted: a size in bytes above 0)");
		return NULL;
	}
	if (cfg->frag_max && (cfg->frag_max < VT_RP_FRAG_MIN || cfg->frag_max > VT_RP_FRAG_LIMIT)) {
		vt_err_set(-EINVAL, err, err_len, "frag max %zu (accepted: %u..%u)", cfg->frag_max,
			   VT_RP_FRAG_MIN, VT_RP_FRAG_LIMIT);
		return NULL;
	}
	rs = g_new0(struct vt_rs, 1);
	rs->cfg = *cfg;
	if (!rs->cfg.ns_cap_bytes)
		rs->cfg.ns_cap_bytes = VT_RS_NS_CAP_DEFAULT;
	if (!rs->cfg.frag_max)
		rs->cfg.frag_max = VT_RP_FRAG_DEFAULT;
	if (!rs->cfg.max_namespaces)
		rs->cfg.max_namespaces = VT_RS_MAX_NS_DEFAULT;
	if (!rs->cfg.client_cap_bytes)
		rs->cfg.client_cap_bytes = MAX(rs->cfg.server_cap_bytes / VT_RS_CLIENT_CAP_DIV, 1);
	if (!rs->cfg.ns_per_addr)
		rs->cfg.ns_per_addr = VT_RS_NS_PER_ADDR_DEFAULT;
	if (!rs->cfg.reasm_max_bytes)
		rs->cfg.reasm_max_bytes = VT_RS_REASM_BYTES_DEFAULT;
	if (vt_seal_random(rs->hash_key, sizeof(rs->hash_key))) {
		vt_err_set(-EIO, err, err_len, "libsodium did not start");
		g_free(rs);
		return NULL;
	}
	rs->ns = g_hash_table_new_full(entry_hash, ns_equal, NULL, ns_free);
	rs->per_addr = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	rs->st.server_cap = rs->cfg.server_cap_bytes;
	rs->st.client_cap = rs->cfg.client_cap_bytes;
	rs->st.ns_cap = rs->cfg.ns_cap_bytes;
	return rs;
}

void vt_rs_free(struct vt_rs *rs)
{
	if (!rs)
		return;
	g_hash_table_destroy(rs->ns);
	g_hash_table_destroy(rs->per_addr);
	memset(&rs->cfg.key, 0, sizeof(rs->cfg.key));
	g_free(rs);
}

static struct rs_ns *ns_find(struct vt_rs *rs, const uint8_t id[VT_RP_NS_BYTES])
{
	struct rs_ns key;

	key.hash = vt_seal_hash(rs->hash_key, id, VT_RP_NS_BYTES);
	memcpy(key.id, id, VT_RP_NS_BYTES);
	return g_hash_table_lookup(rs->ns, &key);
}

static struct rs_page *page_find(struct vt_rs *rs, struct rs_ns *ns, uint64_t id)
{
	struct rs_page key;

	key.hash = vt_seal_hash(rs->hash_key, &id, sizeof(id));
	key.id = id;
	return g_hash_table_lookup(ns->pages, &key);
}

static uint64_t server_free(const struct vt_rs *rs)
{
	return rs->used < rs->cfg.server_cap_bytes ? rs->cfg.server_cap_bytes - rs->used : 0;
}

/* What @ns's client may still store here: the server's room within its own cap. */
static uint64_t room_for(const struct vt_rs *rs, const struct rs_ns *ns)
{
	uint64_t mine = 0;

	if (ns && ns->client->st.bytes < rs->cfg.client_cap_bytes)
		mine = rs->cfg.client_cap_bytes - ns->client->st.bytes;
	return ns ? MIN(server_free(rs), mine) : server_free(rs);
}

/* @pages pages of @bytes (charged) come to @ns (negative: leave it), its client and the server. */
static void charge(struct vt_rs *rs, struct rs_ns *ns, int64_t pages, int64_t bytes)
{
	ns->st.pages += (uint64_t)pages;
	ns->st.bytes += (uint64_t)bytes;
	ns->client->st.pages += (uint64_t)pages;
	ns->client->st.bytes += (uint64_t)bytes;
	rs->st.pages += (uint64_t)pages;
	rs->used += (uint64_t)bytes;
}

/* Encodes a reply to @req and hands its datagrams to @emit. */
static void reply(struct vt_rs *rs, const struct vt_rs_peer *peer, const struct vt_rp_hdr *req,
		  const uint8_t access_key[VT_SEAL_KEY_BYTES], uint16_t status, size_t body_len,
		  vt_rs_emit_fn emit, void *arg)
{
	/* Bodies are built within 8 fragments (GET stops there): this cannot fail. */
	if (vt_rp_encode(req->op | VT_RP_REPLY, req->ns, req->seq, status, rs->body, body_len,
			 rs->cfg.frag_max, access_key, &rs->out) < 0)
		return;
	for (unsigned int i = 0; i < rs->out.n; i++) {
		emit(arg, peer, rs->out.buf[i], rs->out.len[i]);
		rs->st.tx++;
	}
}

static enum vt_rp_reason drop(struct vt_rs *rs, struct rs_ns *ns, enum vt_rp_reason r)
{
	rs->st.drops[r]++;
	if (ns) {
		if (r == VT_RP_R_REPLAYED)
			ns->st.drops[VT_RP_DROP_REPLAYED]++;
		else if (r != VT_RP_R_FORGED)
			ns->st.drops[VT_RP_DROP_MALFORMED]++;
	}
	return r;
}

static size_t caps_body(struct vt_rs *rs, const struct rs_ns *ns)
{
	struct vt_rp_caps c = {
		.ns_cap = rs->cfg.ns_cap_bytes, .ns_used = ns ? ns->st.bytes : 0,
		.server_free = room_for(rs, ns),
	};

	return vt_rp_caps_encode(&c, rs->body);
}

/*
 * Every page of @ns freed, the server's counts with them: a RESET (a client
 * that took us for dead forgot what it kept here) or a BYE.
 */
static void ns_empty(struct vt_rs *rs, struct rs_ns *ns)
{
	ns->st.frees += ns->st.pages;
	charge(rs, ns, -(int64_t)ns->st.pages, -(int64_t)ns->st.bytes);
	g_hash_table_remove_all(ns->pages);
}

/* A BYE: the namespace, its pages and partial messages gone; its creator's share back. */
static void ns_forget(struct vt_rs *rs, struct rs_ns *ns)
{
	struct rs_client *cl = ns->client;

	ns_empty(rs, ns);
	rs->st.reasm_bytes -= ns->reasm_bytes;
	g_hash_table_remove(rs->ns, ns);	/* frees it */
	if (--cl->st.namespaces == 0)
		g_hash_table_remove(rs->per_addr, GUINT_TO_POINTER(cl->st.addr));	/* frees it */
	rs->st.byes++;
}

static enum vt_rp_reason do_hello(struct vt_rs *rs, const struct vt_rs_peer *peer,
				  const uint8_t *buf, size_t len, const struct vt_rp_dgram *d,
				  vt_rs_emit_fn emit, void *arg)
{
	uint8_t id[VT_RP_NS_BYTES], key[VT_SEAL_KEY_BYTES];
	struct rs_ns *ns;
	uint32_t flags;

	/* The box is all the body (one fragment): it authenticates itself. */
	if (vt_rp_hello_open(&rs->cfg.key, d->frag, d->hdr.frag_len, id, key, &flags) != VT_RP_OK)
		return drop(rs, NULL, VT_RP_R_FORGED);
	if (vt_rp_verify(buf, len, key) != VT_RP_OK)
		return drop(rs, NULL, VT_RP_R_FORGED);
	if (memcmp(id, d->hdr.ns, VT_RP_NS_BYTES))
		return drop(rs, NULL, VT_RP_R_NS);
	if (flags & ~VT_RP_HELLO_FLAGS)
		return drop(rs, NULL, VT_RP_R_BODY);
	ns = ns_find(rs, id);
	if (ns && !vt_seal_key_equal(ns->access_key, key)) {
		/* Someone else's namespace: refused, told with the asker's own key. */
		rs->st.hello_refused++;
		reply(rs, peer, &d->hdr, key, EACCES, 0, emit, arg);
		return VT_RP_OK;
	}
	if (ns) {
		if (!vt_rp_window_mark(&ns->window, d->hdr.seq))
			return drop(rs, ns, VT_RP_R_REPLAYED);
		if (flags & VT_RP_HELLO_BYE) {
			ns_forget(rs, ns);
			ns = NULL;
		} else if (flags & VT_RP_HELLO_RESET) {
			ns_empty(rs, ns);
			rs->st.resets++;
		}
	} else if (flags & VT_RP_HELLO_BYE) {
		/* nothing held (a BYE sent again, or a server restarted since): not made */
		rs->st.byes_unknown++;
	} else {
		gpointer who = GUINT_TO_POINTER(peer->addr);
		struct rs_client *cl = g_hash_table_lookup(rs->per_addr, who);

		if (g_hash_table_size(rs->ns) >= rs->cfg.max_namespaces) {
			rs->st.ns_full++;
			reply(rs, peer, &d->hdr, key, ENOSPC, 0, emit, arg);
			return VT_RP_OK;
		}
		/* one host (or one rogue) cannot take every namespace: its own share */
		if (cl && cl->st.namespaces >= rs->cfg.ns_per_addr) {
			rs->st.ns_addr_full++;
			reply(rs, peer, &d->hdr, key, ENOSPC, 0, emit, arg);
			return VT_RP_OK;
		}
		if (!cl) {
			cl = g_new0(struct rs_client, 1);
			cl->st.addr = peer->addr;
			g_hash_table_insert(rs->per_addr, who, cl);
		}
		cl->st.namespaces++;
		ns = g_new0(struct rs_ns, 1);
		ns->client = cl;
		ns->hash = vt_seal_hash(rs->hash_key, id, VT_RP_NS_BYTES);
		memcpy(ns->id, id, VT_RP_NS_BYTES);
		memcpy(ns->st.ns, id, VT_RP_NS_BYTES);
		memcpy(ns->access_key, key, VT_SEAL_KEY_BYTES);
		ns->pages = g_hash_table_new_full(entry_hash, page_equal, NULL, g_free);
		vt_rp_window_mark(&ns->window, d->hdr.seq);
		g_hash_table_add(rs->ns, ns);
	}
	rs->st.hello_ok++;
	reply(rs, peer, &d->hdr, key, 0, caps_body(rs, ns), emit, arg);
	memset(key, 0, sizeof(key));
	return VT_RP_OK;
}

static uint16_t put_one(struct vt_rs *rs, struct rs_ns *ns, const struct vt_rp_put_item *it)
{
	struct rs_page *old, *pg;
	uint64_t new_charge, old_charge, more;

	if (it->blob_len > VT_RP_BLOB_MAX)
		return E2BIG;
	if (it->blob_len == 0)
		return EINVAL;
	old = page_find(rs, ns, it->page_id);
	new_charge = page_charge(it->blob_len);
	old_charge = old ? page_charge(old->len) : 0;
	more = new_charge > old_charge ? new_charge - old_charge : 0;
	if (more && (ns->st.bytes + more > rs->cfg.ns_cap_bytes ||
		     ns->client->st.bytes + more > rs->cfg.client_cap_bytes ||
		     rs->used + more > rs->cfg.server_cap_bytes)) {
		/* the client cap's own count: the namespace's and the server's allowed it */
		if (ns->st.bytes + more <= rs->cfg.ns_cap_bytes &&
		    rs->used + more <= rs->cfg.server_cap_bytes) {
			rs->st.client_over_cap++;
			ns->client->st.over_cap++;
		}
		rs->st.over_cap++;
		ns->st.drops[VT_RP_DROP_OVER_CAP]++;
		return ENOSPC;
	}
	pg = g_try_malloc(sizeof(*pg) + it->blob_len);
	if (!pg)
		return ENOMEM;
	pg->hash = vt_seal_hash(rs->hash_key, &it->page_id, sizeof(it->page_id));
	pg->id = it->page_id;
	pg->len = it->blob_len;
	memcpy(pg->blob, it->blob, it->blob_len);
	if (old)
		charge(rs, ns, -1, -(int64_t)old_charge);
	g_hash_table_replace(ns->pages, pg, pg);	/* frees the old entry */
	charge(rs, ns, 1, (int64_t)new_charge);
	ns->st.puts++;
	return 0;
}

static size_t do_put(struct vt_rs *rs, struct rs_ns *ns, const struct vt_rp_msg *m)
{
	struct vt_rp_put_item items[VT_RP_BATCH_MAX];
	uint16_t status[VT_RP_BATCH_MAX];
	unsigned int n;

	if (vt_rp_put_decode(m->body, m->len, items, &n) != VT_RP_OK)
		return SIZE_MAX;
	for (unsigned int i = 0; i < n; i++)
		status[i] = put_one(rs, ns, &items[i]);
	return (size_t)vt_rp_status_encode(status, n, rs->body, sizeof(rs->body));
}

static size_t do_get(struct vt_rs *rs, struct rs_ns *ns, const struct vt_rp_msg *m)
{
	struct vt_rp_get_item items[VT_RP_BATCH_MAX];
	uint64_t ids[VT_RP_BATCH_MAX];
	size_t room = VT_RP_MAX_FRAGS * rs->cfg.frag_max, size = 2;
	unsigned int n, k;

	if (vt_rp_ids_decode(m->body, m->len, ids, &n) != VT_RP_OK)
		return SIZE_MAX;
	/* As many as fit in VT_RP_MAX_FRAGS fragments; the client asks again for the rest. */
	for (k = 0; k < n; k++) {
		struct rs_page *pg = page_find(rs, ns, ids[k]);

		items[k] = (struct vt_rp_get_item) { .page_id = ids[k], .status = ENOENT };
		if (pg) {
			items[k].status = 0;
			items[k].blob_len = pg->len;
			items[k].blob = pg->blob;
		}
		if (size + 12 + items[k].blob_len > room)
			break;
		size += 12 + items[k].blob_len;
		if (pg)
			ns->st.gets++;
	}
	return (size_t)vt_rp_get_reply_encode(items, k, rs->body, sizeof(rs->body));
}

static size_t do_free(struct vt_rs *rs, struct rs_ns *ns, const struct vt_rp_msg *m)
{
	uint64_t ids[VT_RP_BATCH_MAX];
	uint16_t status[VT_RP_BATCH_MAX];
	unsigned int n;

	if (vt_rp_ids_decode(m->body, m->len, ids, &n) != VT_RP_OK)
		return SIZE_MAX;
	for (unsigned int i = 0; i < n; i++) {
		struct rs_page *pg = page_find(rs, ns, ids[i]);

		status[i] = pg ? 0 : ENOENT;
		if (!pg)
			continue;
		charge(rs, ns, -1, -(int64_t)page_charge(pg->len));
		ns->st.frees++;
		g_hash_table_remove(ns->pages, pg);
	}
	return (size_t)vt_rp_status_encode(status, n, rs->body, sizeof(rs->body));
}

static size_t do_stat(struct vt_rs *rs, struct rs_ns *ns, const struct vt_rp_msg *m)
{
	struct vt_rp_stat s = {
		.pages = ns->st.pages, .bytes = ns->st.bytes, .cap = rs->cfg.ns_cap_bytes,
		.server_free = room_for(rs, ns),
	};

	if (m->len != 0)
		return SIZE_MAX;
	memcpy(s.drops, ns->st.drops, sizeof(s.drops));
	return vt_rp_stat_encode(&s, rs->body);
}

static void apply(struct vt_rs *rs, struct rs_ns *ns, const struct vt_rs_peer *peer,
		  const struct vt_rp_msg *m, vt_rs_emit_fn emit, void *arg)
{
	size_t len = SIZE_MAX;

	switch (m->hdr.op) {
	case VT_RP_PUT:
		len = do_put(rs, ns, m);
		break;
	case VT_RP_GET:
		len = do_get(rs, ns, m);
		break;
	case VT_RP_FREE:
		len = do_free(rs, ns, m);
		break;
	case VT_RP_STAT:
		len = do_stat(rs, ns, m);
		break;
	}
	if (len == SIZE_MAX) {
		/* Tagged by its owner but not decodable: said, so it does not wait. */
		drop(rs, ns, VT_RP_R_BODY);
		reply(rs, peer, &m->hdr, ns->access_key, EINVAL, 0, emit, arg);
		return;
	}
	reply(rs, peer, &m->hdr, ns->access_key, 0, len, emit, arg);
}

static uint64_t reasm_bytes(const struct rs_ns *ns)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < VT_RP_REASM_SLOTS; i++)
		if (ns->reasm.slot[i].used)
			n += ns->reasm.slot[i].body_len;
	return n;
}

/* After the namespace's table changed: the server's count of partial bytes follows. */
static void reasm_account(struct vt_rs *rs, struct rs_ns *ns, unsigned int expired)
{
	uint64_t now = reasm_bytes(ns);

	rs->st.reasm_bytes = rs->st.reasm_bytes - ns->reasm_bytes + now;
	ns->reasm_bytes = now;
	rs->st.expired += expired;
	ns->st.drops[VT_RP_DROP_EXPIRED] += expired;
}

enum vt_rp_reason vt_rs_input(struct vt_rs *rs, const struct vt_rs_peer *peer,
			      const uint8_t *dgram, size_t len, uint64_t now_ns,
			      vt_rs_emit_fn emit, void *arg)
{
	unsigned int expired = 0;
	struct vt_rp_dgram d;
	struct vt_rp_msg m;
	enum vt_rp_reason r;
	struct rs_ns *ns;
	bool done;

	rs->st.rx++;
	r = vt_rp_parse(dgram, len, rs->cfg.frag_max, false, &d);
	if (r != VT_RP_OK)
		return drop(rs, NULL, r);
	if (d.hdr.op == VT_RP_HELLO)
		return do_hello(rs, peer, dgram, len, &d, emit, arg);
	ns = ns_find(rs, d.hdr.ns);
	if (!ns)
		return drop(rs, NULL, VT_RP_R_UNKNOWN_NS);
	/* Nothing of the body is read before the tag holds. */
	if (vt_rp_verify(dgram, len, ns->access_key) != VT_RP_OK)
		return drop(rs, NULL, VT_RP_R_FORGED);
	if (!vt_rp_window_check(&ns->window, d.hdr.seq))
		return drop(rs, ns, VT_RP_R_REPLAYED);
	if (d.hdr.nfrags > 1 && !vt_rp_reasm_has(&ns->reasm, d.hdr.seq) &&
	    rs->st.reasm_bytes + d.hdr.body_len > rs->cfg.reasm_max_bytes)
		return drop(rs, ns, VT_RP_R_REASM_FULL);
	r = vt_rp_reasm_add(&ns->reasm, &d, now_ns, &m, &done, &expired);
	reasm_account(rs, ns, expired);
	if (r != VT_RP_OK)
		return drop(rs, ns, r);
	if (!done)
		return VT_RP_OK;
	/* Complete and authentic: its seq is spent now, whatever its body says. */
	vt_rp_window_mark(&ns->window, m.hdr.seq);
	apply(rs, ns, peer, &m, emit, arg);
	vt_rp_msg_release(&m);
	return VT_RP_OK;
}

void vt_rs_tick(struct vt_rs *rs, uint64_t now_ns)
{
	GHashTableIter it;
	gpointer p;

	g_hash_table_iter_init(&it, rs->ns);
	while (g_hash_table_iter_next(&it, &p, NULL)) {
		struct rs_ns *ns = p;

		reasm_account(rs, ns, vt_rp_reasm_expire(&ns->reasm, now_ns));
	}
}

void vt_rs_get_stats(const struct vt_rs *rs, struct vt_rs_stats *out)
{
	*out = rs->st;
	out->namespaces = g_hash_table_size(rs->ns);
	out->clients = g_hash_table_size(rs->per_addr);
	out->bytes = rs->used;
}

void vt_rs_foreach_client(const struct vt_rs *rs,
			  void (*fn)(void *arg, const struct vt_rs_client_stats *s), void *arg)
{
	GHashTableIter it;
	gpointer p;

	g_hash_table_iter_init(&it, rs->per_addr);
	while (g_hash_table_iter_next(&it, NULL, &p)) {
		struct vt_rs_client_stats s = ((const struct rs_client *)p)->st;

		s.cap = rs->cfg.client_cap_bytes;
		fn(arg, &s);
	}
}

void vt_rs_foreach_ns(const struct vt_rs *rs,
		      void (*fn)(void *arg, const struct vt_rs_ns_stats *s), void *arg)
{
	GHashTableIter it;
	gpointer p;

	g_hash_table_iter_init(&it, rs->ns);
	while (g_hash_table_iter_next(&it, &p, NULL)) {
		struct rs_ns *ns = p;
		struct vt_rs_ns_stats s = ns->st;

		s.cap = rs->cfg.ns_cap_bytes;
		fn(arg, &s);
	}
}
