// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The page store's remote tiers (ctier.h: VT_MEDIUM_REMOTE): a compressed
 * page kept on memory servers through the remote tier's client
 * (remote/remote_client.h), which seals it with the store's key and keeps
 * `copies` of it. The index entry is the truth here as for every tier: its
 * location is the page's version and holders, written once the servers
 * acknowledged the copies (a put is durable when it returns, as for a local
 * pool) and handed to a new client at attach, so kill -9 of the agent loses
 * nothing. The page's id on the servers is its page number in the backend.
 *
 * Locks: the network is never waited on under the store's lock (a fault's
 * get of another tier must not wait for a server). Order: a tier's rput,
 * then the client's own lock, then the store's lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctier_store_int.h"
#include "remote_client.h"
#include "thread_ns.h"

#define LOC_VERSION(loc) ((uint32_t)(loc))
#define LOC_HOLDERS(loc) ((uint8_t)((loc) >> 32))
#define DROPS_BATCH 64u		/* frees sent together */

void cts_remote_close(struct tier *t)
{
	/*
	 * No network here (a close may run on a main loop): frees not sent yet
	 * are dropped; such a copy is replaced when the page is stored there
	 * again, and otherwise held against the VM's namespace cap until the
	 * server restarts.
	 */
	vt_rc_free(t->rc);
	t->rc = NULL;
	vt_store_close(t->lc);
	t->lc = NULL;
	g_free(t->snap);
	g_free(t->snap_srv);
	g_free(t->snap_rt);
	t->snap = NULL;
	t->snap_srv = NULL;
	t->snap_rt = NULL;
	if (t->drops)
		g_array_free(t->drops, TRUE);
	t->drops = NULL;
	g_mutex_clear(&t->rput);
}

bool cts_remote_loc_ok(const struct tier *t, uint64_t loc)
{
	(void)t;
	return LOC_VERSION(loc) && LOC_HOLDERS(loc) && !(loc >> 40);
}

/* The remote key of the store in @dir: 0, -ENOENT (none made yet) or -errno. */
static int read_key(const char *dir, uint8_t key[VT_SEAL_KEY_BYTES], char *why, size_t wl)
{
	char path[512];
	struct stat st;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, REMOTE_KEY_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT :
		       cts_fail(why, wl, -errno, "%s: %s", path, g_strerror(errno));
	n = read(fd, key, VT_SEAL_KEY_BYTES);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != VT_SEAL_KEY_BYTES ||
	    n != VT_SEAL_KEY_BYTES) {
		close(fd);
		return cts_fail(why, wl, -EUCLEAN, "%s: not a key of %u bytes", path,
				VT_SEAL_KEY_BYTES);
	}
	close(fd);
	return 0;
}

/* The store's remote key: read, or made at first use (O_EXCL, 0600). */
static int remote_key(struct vt_store *s, uint8_t key[VT_SEAL_KEY_BYTES], char *why, size_t wl)
{
	char path[512];
	int fd;
	ssize_t n;
	int r = read_key(s->dir, key, why, wl);

	if (r != -ENOENT)
		return r;
	snprintf(path, sizeof(path), "%s/%s", s->dir, REMOTE_KEY_FILE);
	if (getrandom(key, VT_SEAL_KEY_BYTES, 0) != VT_SEAL_KEY_BYTES)
		return cts_fail(why, wl, -EIO, "getrandom: %s", g_strerror(errno));
	/* a key file torn by a kill is refused above: the store names no remote page yet */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return cts_fail(why, wl, -errno, "%s: %s", path, g_strerror(errno));
	n = write(fd, key, VT_SEAL_KEY_BYTES);
	if (n != VT_SEAL_KEY_BYTES || fsync(fd) < 0) {
		int e = n < 0 ? errno : EIO;

		close(fd);
		unlink(path);
		return cts_fail(why, wl, -e, "%s: %s", path, g_strerror(e));
	}
	close(fd);
	return 0;
}

/* A client of @c, whose vm_key holds the store's key: wiped once the client has it. */
static struct vt_rc *keyed_client(struct vt_rc_config *c, char *why, size_t why_len)
{
	struct vt_rc *rc = vt_rc_new(c, why, why_len);

	memset(c->vm_key, 0, sizeof(c->vm_key));
	return rc;
}

int vt_store_remote_forget(const char *dir, const struct vt_rc_config *cfg, unsigned int *asked,
			   char *why, size_t why_len)
{
	struct vt_rc_config c = *cfg;
	struct vt_rc *rc;
	int r;

	*asked = 0;
	if (why && why_len)
		why[0] = 0;
	r = read_key(dir, c.vm_key, why, why_len);
	if (r == -ENOENT)
		return 0;	/* it never used a remote tier: nothing out there */
	if (r < 0)
		return r;
	rc = keyed_client(&c, why, why_len);
	if (!rc)
		return -EINVAL;
	*asked = vt_rc_nr_servers(rc);
	r = vt_rc_bye(rc);
	vt_rc_free(rc);
	return r;
}

/*
 * Remote tier @t's local copies: the store in DIR/lcopy-NAME, reopened or
 * made; those the index does not name as a page of @t with their content
 * (a kill between the local put and the remote entry, or a drop cut short)
 * dropped. Before anyone puts on the tier.
 */
static int local_open(struct vt_store *s, struct tier *t, const struct vt_ctier_spec *local,
		      struct vt_store **out, char *why, size_t wl)
{
	char dir[512];
	struct vt_store *lc = NULL;
	unsigned int slot = (unsigned int)(t - s->tier);
	uint64_t stale = 0;
	int r;

	snprintf(dir, sizeof(dir), "%s/%s%s", s->dir, LCOPY_PREFIX, t->spec.name);
	r = vt_store_open(dir, &s->hdr->key, local, 1, false, &lc, why, wl);
	if (r == -ENOENT)
		r = vt_store_open(dir, &s->hdr->key, local, 1, true, &lc, why, wl);
	if (r < 0) {
		char inner[256];

		g_strlcpy(inner, why ? why : "", sizeof(inner));
		return cts_fail(why, wl, r, "local copies %s: %s", dir, inner);
	}
	for (uint64_t p = vt_store_next(lc, 0); p != UINT64_MAX; p = vt_store_next(lc, p + 1)) {
		struct entry *e;
		uint32_t st, want = 0, have = 1;

		pthread_mutex_lock(&s->lock);
		e = p < s->nr_pages ? entry_of(s, p) : NULL;
		st = e ? atomic_load_explicit(&e->state, memory_order_acquire) : 0;
		want = e ? e->crc : 0;
		pthread_mutex_unlock(&s->lock);
		if ((st & ST_VALID) && ((st >> ST_SLOT_SHIFT) & 15) == slot &&
		    ((st >> ST_KIND_SHIFT) & 3) == VT_STORE_COMPRESSED &&
		    vt_store_crc_of(lc, p, &have) == 0 && have == want)
			continue;
		vt_store_drop(lc, p);
		stale++;
	}
	if (stale)
		g_debug("ctier: remote tier %s: %" G_GUINT64_FORMAT " local copies no page names "
			"dropped", t->spec.name, stale);
	*out = lc;
	return 0;
}

int cts_remote_local_put(struct vt_store *s, struct tier *t, uint64_t page, const void *data,
			 const void *cbuf, uint32_t len)
{
	struct vt_store *lc;
	int r;

	pthread_mutex_lock(&s->lock);
	lc = t->lc;
	pthread_mutex_unlock(&s->lock);
	if (!lc)
		return 0;
	r = vt_store_put_copy(lc, page, 0, data, cbuf, len, NULL);
	if (r == -EEXIST) {
		/* the index names no page here (checked under rput): a stale copy */
		vt_store_drop(lc, page);
		r = vt_store_put_copy(lc, page, 0, data, cbuf, len, NULL);
	}
	return r == 0 || r == -E2BIG || r == -ENOSPC ? r : -EIO;
}

int cts_remote_local_get(struct tier *t, uint64_t page, uint32_t want, void *out)
{
	int r;

	if (!t->lc)
		return -ENOENT;
	r = vt_store_get(t->lc, page, out);
	if (!r && crc(out, PAGE) != want)
		r = -EBADMSG;	/* another content than the index names */
	if (!r)
		t->lc_reads++;
	else
		memset(out, 0, PAGE);
	return r;
}

int vt_store_remote_attach(struct vt_store *s, unsigned int tier, const struct vt_rc_config *cfg,
			   const struct vt_ctier_spec *local_copy, char *why, size_t why_len)
{
	struct vt_rc_config c = *cfg;
	struct vt_store *lc = NULL;
	struct vt_rc *rc;
	struct tier *t;
	uint64_t adopted = 0;
	int r;

	pthread_mutex_lock(&s->lock);
	t = tier < s->nr_api && s->api_slot[tier] >= 0 ? &s->tier[s->api_slot[tier]] : NULL;
	r = !t || !tier_remote(t) ? -EINVAL : t->rc ? -EALREADY : 0;
	pthread_mutex_unlock(&s->lock);
	if (r < 0)
		return cts_fail(why, why_len, r, "tier %u: %s", tier,
				r == -EINVAL ? "not a remote tier" : "attached already");
	if (local_copy && cfg->copies != 1)
		return cts_fail(why, why_len, -EINVAL, "tier %u: a local copy with copies = %u "
				"(1 accepted)", tier, cfg->copies);
	if (!local_copy && cfg->copies < 2)
		return cts_fail(why, why_len, -EINVAL, "tier %u: copies = %u without a local copy "
				"(a page on one server alone would be lost with it)", tier,
				cfg->copies);
	r = remote_key(s, c.vm_key, why, why_len);
	if (r < 0)
		return r;
	if (local_copy) {
		r = local_open(s, t, local_copy, &lc, why, why_len);
		if (r < 0)
			return r;
	}
	rc = keyed_client(&c, why, why_len);
	if (!rc) {
		vt_store_close(lc);
		return -EINVAL;
	}
	/* servers that do not answer now are probed again by the tick */
	vt_rc_connect(rc);
	/* nobody puts on the tier before it is attached: the index holds still */
	for (uint64_t p = vt_store_next(s, 0); p != UINT64_MAX; p = vt_store_next(s, p + 1)) {
		struct entry *e;
		uint32_t st;
		uint64_t loc;

		pthread_mutex_lock(&s->lock);
		e = entry_of(s, p);
		st = e ? atomic_load_explicit(&e->state, memory_order_acquire) : 0;
		loc = e ? e->loc : 0;
		pthread_mutex_unlock(&s->lock);
		if (!(st & ST_VALID) || ((st >> ST_SLOT_SHIFT) & 15) != (unsigned int)(t - s->tier) ||
		    ((st >> ST_KIND_SHIFT) & 3) != VT_STORE_COMPRESSED)
			continue;
		/* holders past this configuration's servers: its list was shortened */
		if (vt_rc_adopt(rc, p, LOC_VERSION(loc),
				LOC_HOLDERS(loc) & (uint8_t)((1u << vt_rc_nr_servers(rc)) - 1)) == 0)
			adopted++;
	}
	pthread_mutex_lock(&s->lock);
	t->lc = lc;
	t->rc = rc;
	t->copies = cfg->copies;
	pthread_mutex_unlock(&s->lock);
	g_debug("ctier: remote tier %s: %" G_GUINT64_FORMAT " stored pages adopted", t->spec.name,
		adopted);
	return 0;
}

/* Send the queued frees (under t->rput). */
static void flush_drops(struct vt_store *s, struct tier *t)
{
	uint64_t ids[DROPS_BATCH];
	unsigned int n;

	for (;;) {
		pthread_mutex_lock(&s->lock);
		n = MIN(t->drops->len, DROPS_BATCH);
		if (n) {
			memcpy(ids, t->drops->data, n * sizeof(uint64_t));
			g_array_remove_range(t->drops, 0, n);
		}
		pthread_mutex_unlock(&s->lock);
		if (!n)
			return;
		vt_rc_free_pages(t->rc, ids, n);
	}
}

static struct vt_rc *client_of(struct vt_store *s, struct tier *t)
{
	struct vt_rc *rc;

	pthread_mutex_lock(&s->lock);
	rc = t->rc;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int cts_remote_put(struct vt_store *s, struct tier *t, const uint64_t *pages,
		   const uint8_t *cbufs, const uint32_t *lens, unsigned int n, size_t stride,
		   uint64_t *locs, int *status)
{
	struct vt_rc_page pg[VT_STORE_BATCH_MAX];
	struct vt_rc *rc = client_of(s, t);
	struct vt_rc_stats st;
	int r = 0;

	if (n > VT_STORE_BATCH_MAX)
		return -EINVAL;
	if (!rc)
		r = -EAGAIN;
	if (!r) {
		/* a free of these pages still queued must not reach their new copies */
		flush_drops(s, t);
		vt_rc_get_stats(rc, &st);
		/* no new page until every page has its copies again (or its local copy holds) */
		if (st.under_copies && !t->lc)
			r = -EAGAIN;
	}
	if (r) {
		for (unsigned int i = 0; i < n; i++)
			status[i] = r;
		return r;
	}
	for (unsigned int i = 0; i < n; i++)
		pg[i] = (struct vt_rc_page){ .id = pages[i], .data = cbufs + i * stride,
					     .len = lens[i] };
	vt_rc_put(rc, pg, n, status);
	for (unsigned int i = 0; i < n; i++) {
		uint32_t version = 0;
		uint8_t holders = 0;

		if (!status[i])
			status[i] = vt_rc_page_state(rc, pages[i], &version, &holders);
		if (status[i] < 0) {
			r = status[i];
			status[i] = r == -ENOSPC ? -ENOSPC :
				    r == -EAGAIN || r == -ETIMEDOUT ? -EAGAIN : -EIO;
			continue;
		}
		locs[i] = (uint64_t)holders << 32 | version;
	}
	return 0;
}

int cts_remote_fetch(struct vt_store *s, struct tier *t, uint64_t page, void *cbuf,
		     size_t cap, uint32_t *len)
{
	struct vt_rc *rc = client_of(s, t);
	size_t clen = 0;
	int r;

	if (!rc)
		return -EAGAIN;
	r = vt_rc_get(rc, page, cbuf, cap, &clen);
	if (r == -EAGAIN)
		return -EAGAIN;
	if (r < 0)
		return -EBADMSG;	/* no copy opens as this page: it never will */
	*len = (uint32_t)clen;
	return 0;
}

void cts_remote_dropped(struct tier *t, uint64_t page)
{
	if (t->rc)
		g_array_append_val(t->drops, page);
	if (t->lc)
		vt_store_drop(t->lc, page);
}

/* The client's figures, copied where the main loop reads them without waiting. */
static void snapshot(struct vt_store *s, struct tier *t, struct vt_rc *rc)
{
	struct vt_rc_stats st;
	struct vt_rc_server_stats srv[VT_RC_MAX_SERVERS];
	struct vt_rt_stats rt;
	unsigned int n = vt_rc_nr_servers(rc);

	vt_rc_get_stats(rc, &st);
	for (unsigned int i = 0; i < n; i++)
		vt_rc_server_stats(rc, i, &srv[i]);
	vt_rc_transport_stats(rc, &rt);
	pthread_mutex_lock(&s->lock);
	if (!t->snap) {
		t->snap = g_new0(struct vt_rc_stats, 1);
		t->snap_srv = g_new0(struct vt_rc_server_stats, VT_RC_MAX_SERVERS);
		t->snap_rt = g_new0(struct vt_rt_stats, 1);
	}
	*t->snap = st;
	*t->snap_rt = rt;
	memcpy(t->snap_srv, srv, n * sizeof(srv[0]));
	t->snap_nr = n;
	pthread_mutex_unlock(&s->lock);
}

int vt_store_remote_tick(struct vt_store *s, unsigned int budget)
{
	int done = 0;
	bool any = false;

	for (unsigned int k = 0; k < VT_CTIER_MAX; k++) {
		struct tier *t = &s->tier[k];
		struct vt_rc *rc;
		int r;

		pthread_mutex_lock(&s->lock);
		any |= t->live && tier_remote(t);
		rc = t->live && tier_remote(t) ? t->rc : NULL;
		pthread_mutex_unlock(&s->lock);
		if (!rc)
			continue;
		g_mutex_lock(&t->rput);
		flush_drops(s, t);
		g_mutex_unlock(&t->rput);
		r = vt_rc_repair(rc, budget);
		if (r > 0)
			done += r;
		snapshot(s, t, rc);
	}
	return any ? done : -ENOENT;
}

int vt_store_remote_stats(struct vt_store *s, unsigned int tier, struct vt_rc_stats *st,
			  struct vt_rc_server_stats *srv, unsigned int nr)
{
	struct tier *t;
	int n = -ENOENT;

	pthread_mutex_lock(&s->lock);
	t = tier < s->nr_api && s->api_slot[tier] >= 0 ? &s->tier[s->api_slot[tier]] : NULL;
	if (t && tier_remote(t) && t->snap) {
		*st = *t->snap;
		memcpy(srv, t->snap_srv, MIN(nr, t->snap_nr) * sizeof(*srv));
		n = (int)t->snap_nr;
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

int vt_store_remote_transport(struct vt_store *s, unsigned int tier, struct vt_rt_stats *st)
{
	struct tier *t;
	int r = -ENOENT;

	pthread_mutex_lock(&s->lock);
	t = tier < s->nr_api && s->api_slot[tier] >= 0 ? &s->tier[s->api_slot[tier]] : NULL;
	if (t && tier_remote(t) && t->snap_rt) {
		*st = *t->snap_rt;
		r = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}
