// SPDX-License-Identifier: GPL-2.0-or-later
/* The remote tier's client (remote_client.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <glib.h>

#include "remote_client.h"
#include "thread_ns.h"

struct srv {
	struct vt_rc_server cfg;
	enum vt_rc_state state;
	unsigned int fails;		/* requests in a row unanswered */
	uint64_t next_probe_ns;
	/*
	 * ids whose FREE it did not get (down, or the request timed out): sent
	 * when it answers; an id stored there again leaves the set first, so
	 * a late FREE never takes a new copy
	 */
	GHashTable *pending_free;
	uint64_t srtt_ns, rttvar_ns;	/* smoothed round trip and its variation (RFC 6298) */
	struct vt_rp_reasm reasm;
	struct vt_rc_server_stats st;
};

/* What the client knows of one page. */
struct rc_page {
	uint32_t version;
	uint8_t holders;		/* bit s: server s acknowledged this version */
};

struct vt_rc {
	GMutex lock;
	struct vt_rc_config cfg;
	struct vt_seal_keys keys;
	struct vt_rt *rt;
	bool busy_poll;			/* the transport busy-polls: wait for replies by spinning */
	struct srv srv[VT_RC_MAX_SERVERS];
	GHashTable *pages;		/* u64 id -> struct rc_page */
	uint64_t seq;
	struct vt_rc_stats st;
	struct vt_rp_dgrams out;
	uint8_t rx[VT_RP_DGRAM_MAX];
	uint8_t body[VT_RP_BODY_LIMIT];
	uint8_t blob[VT_RP_MAX_FRAGS * VT_RP_FRAG_LIMIT];
};

void vt_rc_server_name(const struct vt_rc_server *s, char *buf, size_t len)
{
	struct in_addr a = { .s_addr = htonl(s->addr) };
	char ip[INET_ADDRSTRLEN] = "?";

	inet_ntop(AF_INET, &a, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, s->port);
}

const char *vt_rc_state_name(enum vt_rc_state s)
{
	return s == VT_RC_UP ? "up" : s == VT_RC_DOWN ? "down" : "refused";
}

static size_t frag_max(const struct vt_rc *rc)
{
	return rc->cfg.frag_max ? rc->cfg.frag_max : VT_RP_FRAG_DEFAULT;
}

struct vt_rc *vt_rc_new(const struct vt_rc_config *cfg, char *err, size_t err_len)
{
	struct vt_rc *rc;
	char reason[256] = "";

	if (cfg->nr_servers < 1 || cfg->nr_servers > VT_RC_MAX_SERVERS) {
		g_snprintf(err, err_len, "servers: %u given, 1-%d accepted", cfg->nr_servers,
			   VT_RC_MAX_SERVERS);
		return NULL;
	}
	if (cfg->copies < 1 || cfg->copies > 2 || cfg->copies > cfg->nr_servers) {
		g_snprintf(err, err_len, "copies = %u: 1 or 2, and at most the %u server(s) given",
			   cfg->copies, cfg->nr_servers);
		return NULL;
	}
	if (cfg->frag_max && (cfg->frag_max < VT_RP_FRAG_MIN || cfg->frag_max > VT_RP_FRAG_LIMIT)) {
		g_snprintf(err, err_len, "frag_max = %zu: %d-%d accepted", cfg->frag_max,
			   VT_RP_FRAG_MIN, VT_RP_FRAG_LIMIT);
		return NULL;
	}
	for (unsigned int i = 0; i < cfg->nr_servers; i++)
		for (unsigned int j = 0; j < i; j++)
			if (cfg->server[i].addr == cfg->server[j].addr &&
			    cfg->server[i].port == cfg->server[j].port) {
				g_snprintf(err, err_len, "servers: server %u is server %u again "
					   "(two copies on one server are one copy)", i, j);
				return NULL;
			}
	if (vt_seal_init() < 0) {
		g_snprintf(err, err_len, "libsodium did not initialise");
		return NULL;
	}
	rc = g_new0(struct vt_rc, 1);
	rc->cfg = *cfg;
	if (!rc->cfg.timeout_us)
		rc->cfg.timeout_us = VT_RC_TIMEOUT_US_DEFAULT;
	if (!rc->cfg.tries)
		rc->cfg.tries = VT_RC_TRIES_DEFAULT;
	if (vt_seal_derive(cfg->vm_key, &rc->keys) < 0 ||
	    vt_rt_open(&cfg->transport, &rc->rt, reason, sizeof(reason)) < 0) {
		g_snprintf(err, err_len, "%s", reason[0] ? reason : "key derivation failed");
		vt_rc_free(rc);
		return NULL;
	}
	{
		struct vt_rt_stats ts;

		vt_rt_stats(rc->rt, &ts);
		rc->busy_poll = ts.busy_poll;
	}
	g_mutex_init(&rc->lock);
	rc->pages = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	/* above any number an earlier run of this VM's client used (the replay windows) */
	rc->seq = (uint64_t)g_get_real_time() * 1000;
	for (unsigned int i = 0; i < cfg->nr_servers; i++) {
		rc->srv[i].cfg = cfg->server[i];
		rc->srv[i].state = VT_RC_DOWN;	/* until its HELLO is answered */
		rc->srv[i].pending_free = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
								NULL);
	}
	return rc;
}

void vt_rc_free(struct vt_rc *rc)
{
	if (!rc)
		return;
	for (unsigned int i = 0; i < VT_RC_MAX_SERVERS; i++) {
		vt_rp_reasm_clear(&rc->srv[i].reasm);
		if (rc->srv[i].pending_free)
			g_hash_table_destroy(rc->srv[i].pending_free);
	}
	vt_rt_close(rc->rt);
	if (rc->pages) {
		g_hash_table_destroy(rc->pages);
		g_mutex_clear(&rc->lock);
	}
	memset(&rc->keys, 0, sizeof(rc->keys));
	memset(rc->cfg.vm_key, 0, sizeof(rc->cfg.vm_key));
	g_free(rc);
}

static void server_failed(struct srv *s)
{
	s->st.timeouts++;
	if (++s->fails < VT_RC_DOWN_AFTER || s->state != VT_RC_UP)
		return;
	s->state = VT_RC_DOWN;
	s->st.lost++;
	s->next_probe_ns = vt_now_ns() + VT_RC_PROBE_NS;
	/*
	 * Its copies stay named: a page counts only its live holders' copies
	 * (vt_rc_repair() re-creates the others elsewhere), but a server that
	 * was only unreachable (a partition, a busy link) comes back with them,
	 * and they are the last resort while no other copy answers. One that
	 * comes back empty (restarted) is found at its HELLO (emptied()).
	 */
}

/* Forget every copy @s was named for: it came back without them. */
static void emptied(struct vt_rc *rc, struct srv *s)
{
	GHashTableIter it;
	gpointer v;
	uint8_t bit = (uint8_t)(1u << (s - rc->srv));

	g_hash_table_iter_init(&it, rc->pages);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct rc_page *p = v;

		p->holders &= (uint8_t)~bit;
		if (!p->holders) {
			/* its only copies were there: nothing can bring it back */
			g_hash_table_iter_remove(&it);
			rc->st.pages--;
			rc->st.lost_pages++;
		}
	}
	s->st.pages = 0;
	s->st.emptied++;
	g_hash_table_remove_all(s->pending_free);
}

/*
 * One request to @s and its reply, retried with a new number each time.
 * VT_RP_OK with @msg (release it) or -errno: -ETIMEDOUT after the last try,
 * -EMSGSIZE a body over the bounds, a reply status as -status.
 */
static int request(struct vt_rc *rc, struct srv *s, uint8_t op, const uint8_t *body,
		   size_t body_len, struct vt_rp_msg *msg)
{
	/*
	 * The first try waits the configured timeout, or longer where this
	 * server's replies take longer (srtt + 4 rttvar, as TCP's RTO): a slow
	 * path is not retried into duplicates. Each retry doubles it, up to
	 * VT_RC_TIMEOUT_US_RTO_MAX, so that a path slower than the first tries
	 * is answered at all (and its round trip learnt).
	 */
	unsigned int timeout_us = (unsigned int)MIN(MAX((uint64_t)rc->cfg.timeout_us,
						    (s->srtt_ns + 4 * s->rttvar_ns) / 1000),
						(uint64_t)VT_RC_TIMEOUT_US_RTO_MAX);

	s->st.requests++;
	for (unsigned int t = 0; t < rc->cfg.tries;
	     t++, timeout_us = MIN(timeout_us * 2, MAX(VT_RC_TIMEOUT_US_RTO_MAX, rc->cfg.timeout_us))) {
		uint64_t seq = ++rc->seq, start = vt_now_ns();
		uint64_t deadline = start + (uint64_t)timeout_us * 1000;
		struct vt_rt_dgram d[VT_RP_MAX_FRAGS];
		int r;

		if (t)
			s->st.retries++;
		r = vt_rp_encode(op, rc->keys.ns, seq, 0, body, body_len, frag_max(rc),
				 rc->keys.access_key, &rc->out);
		if (r < 0)
			return r;
		for (unsigned int f = 0; f < rc->out.n; f++)
			d[f] = (struct vt_rt_dgram){
				.peer = { .peer_addr = s->cfg.addr, .peer_port = s->cfg.port },
				.buf = rc->out.buf[f], .len = rc->out.len[f] };
		if (vt_rt_send(rc->rt, d, rc->out.n) < (int)rc->out.n)
			continue;	/* the rest were not taken: this try is lost */
		for (uint64_t now = vt_now_ns(); now < deadline; now = vt_now_ns()) {
			struct pollfd pfd = { .fd = vt_rt_fd(rc->rt), .events = POLLIN };
			struct vt_rt_dgram in = { .buf = rc->rx, .cap = sizeof(rc->rx) };
			struct vt_rp_dgram dg;
			bool done = false;
			unsigned int expired = 0;
			int wait_ms = (int)((deadline - now + 999999) / 1000000);

			if (vt_rt_recv(rc->rt, &in, 1) != 1) {
				/*
				 * busy-poll: the ring is asked again (each recv on a
				 * busy-polling XSK runs the device's NAPI poll from
				 * here) until the deadline, never a sleep; between
				 * looks the CPU goes to whatever else is runnable on
				 * it (the server, a softirq thread, a vCPU): a spin
				 * that kept it timed tries out at 4 ms on 2 cores
				 */
				if (rc->busy_poll)
					sched_yield();
				else if (poll(&pfd, 1, wait_ms) < 0 && errno != EINTR)
					return -errno;
				continue;
			}
			if (in.peer.peer_addr != s->cfg.addr || in.peer.peer_port != s->cfg.port ||
			    vt_rp_reply_check(in.buf, in.len, VT_RP_FRAG_LIMIT, rc->keys.access_key,
					      rc->keys.ns, op, seq, &dg) != VT_RP_OK) {
				/* another server's late reply, an old try's, or forged */
				s->st.bad_replies++;
				continue;
			}
			if (vt_rp_reasm_add(&s->reasm, &dg, now, msg, &done, &expired) != VT_RP_OK ||
			    !done)
				continue;
			vt_latency_add(&s->st.rtt, vt_now_ns() - start);
			{
				/* each try has its own number: no doubt which one this answers */
				uint64_t rtt = vt_now_ns() - start;
				uint64_t dev = rtt > s->srtt_ns ? rtt - s->srtt_ns : s->srtt_ns - rtt;

				if (!s->srtt_ns) {
					s->srtt_ns = rtt;
					s->rttvar_ns = rtt / 2;
				} else {
					s->rttvar_ns = (3 * s->rttvar_ns + dev) / 4;
					s->srtt_ns = (7 * s->srtt_ns + rtt) / 8;
				}
			}
			s->fails = 0;
			if (msg->hdr.status) {
				int st = msg->hdr.status;

				vt_rp_msg_release(msg);
				return -st;
			}
			return 0;
		}
		vt_rp_reasm_clear(&s->reasm);
	}
	server_failed(s);
	return -ETIMEDOUT;
}

static int free_on(struct vt_rc *rc, struct srv *s, const uint64_t *ids, unsigned int n);

/* The frees @s missed, sent while it answers (those that time out wait again). */
static void flush_pending(struct vt_rc *rc, struct srv *s)
{
	while (g_hash_table_size(s->pending_free) && s->state == VT_RC_UP) {
		uint64_t ids[VT_RP_BATCH_MAX];
		unsigned int n = 0;
		GHashTableIter it;
		gpointer k;

		g_hash_table_iter_init(&it, s->pending_free);
		while (n < VT_RP_BATCH_MAX && g_hash_table_iter_next(&it, &k, NULL)) {
			ids[n++] = *(uint64_t *)k;
			g_hash_table_iter_remove(&it);
		}
		if (free_on(rc, s, ids, n) == -ETIMEDOUT)
			break;	/* pending again: they wait for its next answer */
	}
}

/*
 * HELLO to @s; @reset: the server drops what it holds of this namespace.
 * A server that answers holding nothing of ours while we name copies on it
 * lost them (it restarted): they are forgotten. The frees it missed while
 * it was down are sent before anything else reaches it.
 */
static int hello(struct vt_rc *rc, struct srv *s, bool reset)
{
	uint8_t box[VT_RP_HELLO_BYTES];
	struct vt_rp_caps caps;
	struct vt_rp_msg msg;
	int r;

	if (vt_rp_hello_seal(s->cfg.pk, rc->keys.ns, rc->keys.access_key,
			     reset ? VT_RP_HELLO_RESET : 0, box) < 0)
		return -EINVAL;
	r = request(rc, s, VT_RP_HELLO, box, sizeof(box), &msg);
	if (r == -EACCES) {
		s->state = VT_RC_REFUSED;	/* another key holds this namespace there */
		return r;
	}
	if (r)
		return r;
	r = vt_rp_caps_decode(msg.body, msg.len, &caps) == VT_RP_OK ? 0 : -EBADMSG;
	vt_rp_msg_release(&msg);
	if (r)
		return r;
	if (s->state == VT_RC_DOWN && s->st.lost)
		s->st.regained++;
	s->state = VT_RC_UP;
	s->fails = 0;
	if (!caps.ns_used && s->st.pages)
		emptied(rc, s);
	flush_pending(rc, s);
	return 0;
}

int vt_rc_connect(struct vt_rc *rc)
{
	int up = 0;

	g_mutex_lock(&rc->lock);
	for (unsigned int i = 0; i < rc->cfg.nr_servers; i++)
		up += hello(rc, &rc->srv[i], false) == 0;
	g_mutex_unlock(&rc->lock);
	return up;
}

int vt_rc_bye(struct vt_rc *rc)
{
	int done = 0;

	g_mutex_lock(&rc->lock);
	for (unsigned int i = 0; i < rc->cfg.nr_servers; i++) {
		struct srv *s = &rc->srv[i];
		uint8_t box[VT_RP_HELLO_BYTES];
		struct vt_rp_msg msg;

		/* a server taken for dead is asked too: it may only have been slow */
		if (vt_rp_hello_seal(s->cfg.pk, rc->keys.ns, rc->keys.access_key, VT_RP_HELLO_BYE,
				     box) == 0 &&
		    request(rc, s, VT_RP_HELLO, box, sizeof(box), &msg) == 0) {
			vt_rp_msg_release(&msg);
			done++;
		}
		g_hash_table_remove_all(s->pending_free);
		s->st.pages = 0;
	}
	g_hash_table_remove_all(rc->pages);
	rc->st.pages = 0;
	g_mutex_unlock(&rc->lock);
	return done;
}

static uint8_t up_mask(const struct vt_rc *rc)
{
	uint8_t m = 0;

	for (unsigned int i = 0; i < rc->cfg.nr_servers; i++)
		if (rc->srv[i].state == VT_RC_UP)
			m |= (uint8_t)(1u << i);
	return m;
}

/* The live servers a page goes to: `copies` of them, from its id's turn on. */
static uint8_t choose(const struct vt_rc *rc, uint64_t id)
{
	uint8_t up = up_mask(rc), got = 0;
	unsigned int n = rc->cfg.nr_servers, want = rc->cfg.copies;

	for (unsigned int k = 0, s = (unsigned int)(id % n); k < n && want; k++, s = (s + 1) % n)
		if (up & (1u << s)) {
			got |= (uint8_t)(1u << s);
			want--;
		}
	return want ? 0 : got;
}

/* Frees for @s to send later: at most VT_RC_PENDING_FREE_MAX (beyond: orphaned). */
static void pend(struct srv *s, const uint64_t *ids, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		if (g_hash_table_size(s->pending_free) >= VT_RC_PENDING_FREE_MAX) {
			s->st.orphaned += n - i;
			return;
		}
		g_hash_table_add(s->pending_free, g_memdup2(&ids[i], sizeof(ids[i])));
	}
}

/*
 * FREE @n ids on @s; when it is down or does not answer, they wait for its
 * next answer (at most VT_RC_PENDING_FREE_MAX: beyond, a copy stays there,
 * counted orphaned, until the same id is stored there again). 0 or -errno.
 */
static int free_on(struct vt_rc *rc, struct srv *s, const uint64_t *ids, unsigned int n)
{
	struct vt_rp_msg msg;
	long len;
	int r;

	if (s->state != VT_RC_UP) {
		pend(s, ids, n);
		return 0;
	}
	len = vt_rp_ids_encode(ids, n, rc->body, sizeof(rc->body));
	r = len < 0 ? (int)len : request(rc, s, VT_RP_FREE, rc->body, (size_t)len, &msg);
	if (!r)
		vt_rp_msg_release(&msg);
	if (r == -ETIMEDOUT)
		pend(s, ids, n);
	return r;
}

/* @id is stored on @s again: a FREE of it still to send would take the new copy. */
static void unpend(struct srv *s, uint64_t id)
{
	g_hash_table_remove(s->pending_free, &id);
}

/* The first live server in @id's turn that is not in @avoid (its bit), or 0. */
static uint8_t next_server(const struct vt_rc *rc, uint64_t id, uint8_t avoid)
{
	uint8_t up = up_mask(rc) & (uint8_t)~avoid;
	unsigned int n = rc->cfg.nr_servers;

	for (unsigned int k = 0, s = (unsigned int)(id % n); k < n; k++, s = (s + 1) % n)
		if (up & (1u << s))
			return (uint8_t)(1u << s);
	return 0;
}

/* PUT @items (sealed blobs) on @s: per item 0 or -errno into @res. */
static int put_on(struct vt_rc *rc, struct srv *s, const struct vt_rp_put_item *items,
		  unsigned int n, int *res)
{
	size_t room = frag_max(rc) * VT_RP_MAX_FRAGS;
	long len = vt_rp_put_encode(items, n, rc->body, MIN(room, sizeof(rc->body)));
	uint16_t status[VT_RP_BATCH_MAX];
	struct vt_rp_msg msg;
	unsigned int got = 0;
	int r;

	if (len == -E2BIG && n > 1) {
		/* the batch is larger than one message: in halves */
		unsigned int h = n / 2;

		r = put_on(rc, s, items, h, res);
		if (r == -ETIMEDOUT)
			goto all;
		return put_on(rc, s, items + h, n - h, res + h) ?: r;
	}
	if (len < 0) {
		r = (int)len;
		goto all;
	}
	r = request(rc, s, VT_RP_PUT, rc->body, (size_t)len, &msg);
	if (r)
		goto all;
	if (vt_rp_status_decode(msg.body, msg.len, status, &got) != VT_RP_OK || got != n) {
		vt_rp_msg_release(&msg);
		s->st.bad_replies++;
		r = -EBADMSG;
		goto all;
	}
	vt_rp_msg_release(&msg);
	r = 0;
	for (unsigned int i = 0; i < n; i++) {
		res[i] = -(int)status[i];
		if (status[i]) {
			s->st.refused_pages++;
			r = r ?: res[i];
		}
	}
	return r;
all:
	for (unsigned int i = 0; i < n; i++)
		res[i] = r;
	return r;
}

int vt_rc_put(struct vt_rc *rc, const struct vt_rc_page *pages, unsigned int n, int *status)
{
	struct vt_rp_put_item items[VT_RP_BATCH_MAX];
	uint32_t version[VT_RP_BATCH_MAX];
	uint8_t to[VT_RP_BATCH_MAX], acked[VT_RP_BATCH_MAX];
	uint64_t stale[VT_RC_MAX_SERVERS][VT_RP_BATCH_MAX];
	unsigned int nstale[VT_RC_MAX_SERVERS] = { 0 };
	uint8_t *blobs;
	int ret = 0;

	if (n < 1 || n > VT_RP_BATCH_MAX)
		return -EINVAL;
	g_mutex_lock(&rc->lock);
	blobs = g_malloc((size_t)n * VT_RP_BLOB_MAX);
	for (unsigned int i = 0; i < n; i++) {
		struct rc_page *p = g_hash_table_lookup(rc->pages, &pages[i].id);
		size_t blen = 0;

		status[i] = 0;
		acked[i] = 0;
		version[i] = p ? p->version + 1 : 1;
		to[i] = choose(rc, pages[i].id);
		if (!to[i])
			status[i] = -EAGAIN;	/* fewer live servers than copies */
		else if (pages[i].len > 4096 ||
			 vt_seal_page(rc->keys.page_key, rc->keys.ns, pages[i].id, version[i],
				      pages[i].data, pages[i].len, blobs + i * VT_RP_BLOB_MAX,
				      VT_RP_BLOB_MAX, &blen) < 0)
			status[i] = -EINVAL;
		items[i] = (struct vt_rp_put_item){ .page_id = pages[i].id,
						    .blob_len = (uint16_t)blen,
						    .blob = blobs + i * VT_RP_BLOB_MAX };
		for (unsigned int si = 0; si < rc->cfg.nr_servers && !status[i]; si++)
			if (to[i] & (1u << si))
				unpend(&rc->srv[si], pages[i].id);
	}
	for (unsigned int si = 0; si < rc->cfg.nr_servers; si++) {
		struct vt_rp_put_item sub[VT_RP_BATCH_MAX];
		unsigned int idx[VT_RP_BATCH_MAX], m = 0;
		int res[VT_RP_BATCH_MAX];

		for (unsigned int i = 0; i < n; i++)
			if (!status[i] && (to[i] & (1u << si))) {
				idx[m] = i;
				sub[m++] = items[i];
			}
		if (!m)
			continue;
		put_on(rc, &rc->srv[si], sub, m, res);
		for (unsigned int k = 0; k < m; k++)
			if (!res[k])
				acked[idx[k]] |= (uint8_t)(1u << si);
			else if (!status[idx[k]])
				status[idx[k]] = res[k];
	}
	for (unsigned int i = 0; i < n; i++) {
		struct rc_page *p = g_hash_table_lookup(rc->pages, &pages[i].id);

		if (!status[i] && acked[i] == to[i]) {
			if (!p) {
				uint64_t *key = g_new(uint64_t, 1);

				*key = pages[i].id;
				p = g_new0(struct rc_page, 1);
				g_hash_table_insert(rc->pages, key, p);
				rc->st.pages++;
			}
			for (unsigned int si = 0; si < rc->cfg.nr_servers; si++) {
				uint8_t bit = (uint8_t)(1u << si);

				rc->srv[si].st.pages += !!(to[i] & bit) - !!(p->holders & bit);
				/* the old version on a server the new one did not go to */
				if ((p->holders & bit) && !(to[i] & bit))
					stale[si][nstale[si]++] = pages[i].id;
			}
			p->version = version[i];
			p->holders = to[i];
			rc->st.puts++;
			continue;
		}
		ret = ret ?: (status[i] ? status[i] : -EIO);
		if (!status[i])
			status[i] = -EIO;
		/*
		 * Not stored: freed wherever it may be. The servers that took
		 * the new version hold a copy nobody names, one that timed out
		 * may take it late, and an old version may have been overwritten
		 * by the new one (no version of a failed page is trusted).
		 */
		{
			uint8_t where = to[i] | (p ? p->holders : 0);

			for (unsigned int si = 0; si < rc->cfg.nr_servers; si++) {
				if (!(where & (1u << si)))
					continue;
				stale[si][nstale[si]++] = pages[i].id;
				if (p && (p->holders & (1u << si)))
					rc->srv[si].st.pages--;
			}
		}
		if (p) {
			g_hash_table_remove(rc->pages, &pages[i].id);
			rc->st.pages--;
		}
	}
	g_free(blobs);
	/* best effort: a copy left behind only holds that server's cap until it is freed */
	for (unsigned int si = 0; si < rc->cfg.nr_servers; si++)
		if (nstale[si])
			free_on(rc, &rc->srv[si], stale[si], nstale[si]);
	g_mutex_unlock(&rc->lock);
	return ret;
}

/* The sealed blob of @id from @s into @blob: its length, or -errno. */
static long fetch_blob(struct vt_rc *rc, struct srv *s, uint64_t id, uint8_t *blob, size_t cap)
{
	struct vt_rp_get_item item;
	struct vt_rp_msg msg;
	unsigned int n = 0;
	long len = vt_rp_ids_encode(&id, 1, rc->body, sizeof(rc->body));
	int r;

	if (len < 0)
		return len;
	r = request(rc, s, VT_RP_GET, rc->body, (size_t)len, &msg);
	if (r)
		return r;
	if (vt_rp_get_reply_decode(msg.body, msg.len, &item, &n) != VT_RP_OK || n != 1 ||
	    item.page_id != id) {
		vt_rp_msg_release(&msg);
		s->st.bad_replies++;
		return -EBADMSG;
	}
	if (item.status || item.blob_len > cap) {
		vt_rp_msg_release(&msg);
		return item.status ? -(long)item.status : -EBADMSG;
	}
	memcpy(blob, item.blob, item.blob_len);
	vt_rp_msg_release(&msg);
	return item.blob_len;
}

/*
 * vt_rc_get() under the lock: from the first copy that opens; -EAGAIN while
 * a holder did not answer (down, timed out, a reply that did not check), so
 * its copy may still come; -EBADMSG when every holder answered and none had
 * a copy that opens (nothing will ever bring this version back).
 */
static int get_locked(struct vt_rc *rc, struct rc_page *p, uint64_t id, void *buf, size_t cap,
		      size_t *len)
{
	bool first = true, waiting = false;

	for (unsigned int si = 0; si < rc->cfg.nr_servers && p; si++) {
		struct srv *s = &rc->srv[si];
		long blen;

		if (!(p->holders & (1u << si)))
			continue;
		if (s->state != VT_RC_UP) {
			waiting = true;
			continue;
		}
		blen = fetch_blob(rc, s, id, rc->blob, sizeof(rc->blob));
		if (blen >= 0 && vt_seal_page_open(rc->keys.page_key, rc->keys.ns, id, p->version,
						   rc->blob, (size_t)blen, buf, cap, len) == 0) {
			rc->st.gets++;
			rc->st.get_fallbacks += !first;
			return 0;
		}
		if (blen >= 0 || blen == -ENOENT)
			rc->st.damaged++;	/* a copy that is not this page's current one */
		else
			waiting = true;
		first = false;
	}
	return waiting ? -EAGAIN : -EBADMSG;
}

int vt_rc_get(struct vt_rc *rc, uint64_t id, void *buf, size_t cap, size_t *len)
{
	uint64_t start = vt_now_ns();
	struct rc_page *p;
	int ret;

	g_mutex_lock(&rc->lock);
	p = g_hash_table_lookup(rc->pages, &id);
	if (!p) {
		g_mutex_unlock(&rc->lock);
		return -ENOENT;
	}
	ret = get_locked(rc, p, id, buf, cap, len);
	vt_latency_add(&rc->st.get_ns, vt_now_ns() - start);
	g_mutex_unlock(&rc->lock);
	return ret;
}

/*
 * GET of the pages @idx[0..@m) of a batch from @s, asked again from the
 * first the server left out until all came back; each opened into its
 * buffer (status 0). Stops at the first failed request or bad reply: those
 * left keep status -EAGAIN for the single-page path.
 */
static void get_batch_on(struct vt_rc *rc, struct srv *s, const uint64_t *ids,
			 const unsigned int *idx, unsigned int m, const uint32_t *version,
			 void *const *bufs, size_t cap, size_t *lens, int *status)
{
	while (m) {
		struct vt_rp_get_item items[VT_RP_BATCH_MAX];
		uint64_t want[VT_RP_BATCH_MAX];
		struct vt_rp_msg msg;
		unsigned int got = 0;
		long len;

		for (unsigned int k = 0; k < m; k++)
			want[k] = ids[idx[k]];
		len = vt_rp_ids_encode(want, m, rc->body, sizeof(rc->body));
		if (len < 0 || request(rc, s, VT_RP_GET, rc->body, (size_t)len, &msg))
			return;
		if (vt_rp_get_reply_decode(msg.body, msg.len, items, &got) != VT_RP_OK ||
		    !got || got > m) {
			vt_rp_msg_release(&msg);
			s->st.bad_replies++;
			return;
		}
		for (unsigned int k = 0; k < got; k++) {
			unsigned int i = idx[k];

			if (items[k].page_id != want[k]) {
				s->st.bad_replies++;
				continue;
			}
			if (!items[k].status &&
			    vt_seal_page_open(rc->keys.page_key, rc->keys.ns, ids[i], version[i],
					      items[k].blob, items[k].blob_len, bufs[i], cap,
					      &lens[i]) == 0) {
				status[i] = 0;
				rc->st.gets++;
			} else if (!items[k].status || items[k].status == ENOENT) {
				rc->st.damaged++;
			}
		}
		vt_rp_msg_release(&msg);
		idx += got;
		m -= got;
	}
}

int vt_rc_get_batch(struct vt_rc *rc, const uint64_t *ids, unsigned int n, void *const *bufs,
		    size_t cap, size_t *lens, int *status)
{
	uint32_t version[VT_RP_BATCH_MAX];
	uint8_t from[VT_RP_BATCH_MAX];
	int read = 0;

	if (n < 1 || n > VT_RP_BATCH_MAX)
		return -EINVAL;
	g_mutex_lock(&rc->lock);
	for (unsigned int i = 0; i < n; i++) {
		struct rc_page *p = g_hash_table_lookup(rc->pages, &ids[i]);

		status[i] = p ? -EAGAIN : -ENOENT;
		version[i] = p ? p->version : 0;
		from[i] = p ? next_server(rc, ids[i], (uint8_t)~p->holders) : 0;
	}
	for (unsigned int si = 0; si < rc->cfg.nr_servers; si++) {
		unsigned int idx[VT_RP_BATCH_MAX], m = 0;

		for (unsigned int i = 0; i < n; i++)
			if (from[i] & (1u << si))
				idx[m++] = i;
		if (m)
			get_batch_on(rc, &rc->srv[si], ids, idx, m, version, bufs, cap, lens,
				     status);
	}
	for (unsigned int i = 0; i < n; i++) {
		struct rc_page *p = g_hash_table_lookup(rc->pages, &ids[i]);

		if (status[i] == -EAGAIN && p) {
			/* the batch did not bring it: its copies one by one */
			status[i] = get_locked(rc, p, ids[i], bufs[i], cap, &lens[i]);
		}
		read += !status[i];
	}
	g_mutex_unlock(&rc->lock);
	return read;
}

int vt_rc_free_pages(struct vt_rc *rc, const uint64_t *ids, unsigned int n)
{
	int ret = 0;

	if (n > VT_RP_BATCH_MAX)
		return -EINVAL;
	g_mutex_lock(&rc->lock);
	for (unsigned int si = 0; si < rc->cfg.nr_servers; si++) {
		struct srv *s = &rc->srv[si];
		uint64_t sub[VT_RP_BATCH_MAX];
		unsigned int m = 0;
		int r;

		for (unsigned int i = 0; i < n; i++) {
			struct rc_page *p = g_hash_table_lookup(rc->pages, &ids[i]);

			if (p && (p->holders & (1u << si)))
				sub[m++] = ids[i];
		}
		if (!m)
			continue;
		r = free_on(rc, s, sub, m);
		ret = ret ?: r;	/* left on the server: its cap is charged until then */
	}
	for (unsigned int i = 0; i < n; i++) {
		struct rc_page *p = g_hash_table_lookup(rc->pages, &ids[i]);

		if (!p)
			continue;
		for (unsigned int si = 0; si < rc->cfg.nr_servers; si++)
			if (p->holders & (1u << si))
				rc->srv[si].st.pages--;
		g_hash_table_remove(rc->pages, &ids[i]);
		rc->st.pages--;
		rc->st.frees++;
	}
	g_mutex_unlock(&rc->lock);
	return ret;
}

int vt_rc_repair(struct vt_rc *rc, unsigned int budget)
{
	GHashTableIter it;
	gpointer k, v;
	uint64_t now = vt_now_ns();
	int repaired = 0;

	g_mutex_lock(&rc->lock);
	/* a server back: what it still holds is ours again (hello()) */
	for (unsigned int si = 0; si < rc->cfg.nr_servers; si++) {
		struct srv *s = &rc->srv[si];

		if (s->state == VT_RC_DOWN && now >= s->next_probe_ns) {
			if (hello(rc, s, false) < 0)
				s->next_probe_ns = vt_now_ns() + VT_RC_PROBE_NS;
		} else if (s->state == VT_RC_UP) {
			flush_pending(rc, s);	/* frees whose request timed out */
		}
	}
	rc->st.under_copies = 0;
	g_hash_table_iter_init(&it, rc->pages);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		struct rc_page *p = v;
		uint64_t id = *(uint64_t *)k;
		uint8_t have = p->holders & up_mask(rc), to;
		struct vt_rp_put_item item;
		long blen = -EIO;
		int res;

		if ((unsigned int)__builtin_popcount(have) >= rc->cfg.copies)
			continue;
		if (!budget) {
			rc->st.under_copies++;
			continue;
		}
		/* one more live server than it is on now, the blob carried over as it is */
		to = next_server(rc, id, have);
		for (unsigned int si = 0; si < rc->cfg.nr_servers && blen < 0 && to; si++)
			if (have & (1u << si))
				blen = fetch_blob(rc, &rc->srv[si], id, rc->blob, sizeof(rc->blob));
		if (blen < 0 || !to) {
			rc->st.under_copies++;
			continue;
		}
		item = (struct vt_rp_put_item){ .page_id = id, .blob_len = (uint16_t)blen,
						.blob = rc->blob };
		unpend(&rc->srv[__builtin_ctz(to)], id);
		put_on(rc, &rc->srv[__builtin_ctz(to)], &item, 1, &res);
		if (res) {
			rc->st.under_copies++;
			continue;
		}
		p->holders |= to;
		rc->srv[__builtin_ctz(to)].st.pages++;
		rc->st.repaired++;
		repaired++;
		budget--;
		if ((unsigned int)__builtin_popcount(p->holders & up_mask(rc)) < rc->cfg.copies)
			rc->st.under_copies++;
	}
	g_mutex_unlock(&rc->lock);
	return repaired;
}

void vt_rc_get_stats(struct vt_rc *rc, struct vt_rc_stats *st)
{
	g_mutex_lock(&rc->lock);
	*st = rc->st;
	st->servers_up = (unsigned int)__builtin_popcount(up_mask(rc));
	g_mutex_unlock(&rc->lock);
}

void vt_rc_server_stats(struct vt_rc *rc, unsigned int i, struct vt_rc_server_stats *st)
{
	g_mutex_lock(&rc->lock);
	*st = rc->srv[i].st;
	st->state = rc->srv[i].state;
	g_mutex_unlock(&rc->lock);
}

int vt_rc_adopt(struct vt_rc *rc, uint64_t id, uint32_t version, uint8_t holders)
{
	uint8_t known = (uint8_t)((1u << rc->cfg.nr_servers) - 1);
	struct rc_page *p;
	uint64_t *key;

	if (!version || !holders || (holders & ~known))
		return -EINVAL;
	g_mutex_lock(&rc->lock);
	if (g_hash_table_lookup(rc->pages, &id)) {
		g_mutex_unlock(&rc->lock);
		return -EEXIST;
	}
	key = g_new(uint64_t, 1);
	*key = id;
	p = g_new0(struct rc_page, 1);
	p->version = version;
	p->holders = holders;
	g_hash_table_insert(rc->pages, key, p);
	rc->st.pages++;
	for (unsigned int si = 0; si < rc->cfg.nr_servers; si++)
		rc->srv[si].st.pages += !!(holders & (1u << si));
	g_mutex_unlock(&rc->lock);
	return 0;
}

int vt_rc_page_state(struct vt_rc *rc, uint64_t id, uint32_t *version, uint8_t *holders)
{
	struct rc_page *p;
	int r = -ENOENT;

	g_mutex_lock(&rc->lock);
	p = g_hash_table_lookup(rc->pages, &id);
	if (p) {
		*version = p->version;
		*holders = p->holders;
		r = 0;
	}
	g_mutex_unlock(&rc->lock);
	return r;
}

unsigned int vt_rc_nr_servers(const struct vt_rc *rc)
{
	return rc->cfg.nr_servers;
}

void vt_rc_transport_stats(struct vt_rc *rc, struct vt_rt_stats *st)
{
	g_mutex_lock(&rc->lock);
	vt_rt_stats(rc->rt, st);
	g_mutex_unlock(&rc->lock);
}
