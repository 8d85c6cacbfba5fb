// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Put, get and drop of one page of the page store (ctier.h).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "ctier_store_int.h"
#include "thread_ns.h"

enum vt_store_kind vt_store_classify(const void *data, uint64_t *word)
{
	const uint64_t *w = data;

	for (unsigned int i = 1; i < PAGE / sizeof(*w); i++)
		if (w[i] != w[0])
			return VT_STORE_COMPRESSED;
	*word = w[0];
	return w[0] ? VT_STORE_SAME : VT_STORE_ZERO;
}

static struct tier *tier_of_api(struct vt_store *s, unsigned int tier)
{
	if (tier >= s->nr_api || s->api_slot[tier] < 0)
		return NULL;
	return &s->tier[s->api_slot[tier]];
}

/* A codec context for one put, outside the lock: a spare one, or a new one. */
static void *ctx_take(struct vt_store *s, struct tier *t)
{
	void *ctx = NULL;

	pthread_mutex_lock(&s->lock);
	if (t->spare->len)
		ctx = g_ptr_array_steal_index_fast(t->spare, t->spare->len - 1);
	pthread_mutex_unlock(&s->lock);
	return ctx ? ctx : t->codec->ctx_new(t->spec.level);
}

static bool valid_at(struct vt_store *s, uint64_t page)
{
	struct entry *e = entry_of(s, page);

	return e && atomic_load_explicit(&e->state, memory_order_acquire) & ST_VALID;
}

static bool valid_at_locked(struct vt_store *s, uint64_t page)
{
	bool v;

	pthread_mutex_lock(&s->lock);
	v = valid_at(s, page);
	pthread_mutex_unlock(&s->lock);
	return v;
}

/*
 * @copy (@copy_len bytes): what @t's codec made of @data earlier, maybe
 * from another version of the page. True when it decompresses to @data
 * byte for byte and fits the tier: then it is stored as it is.
 */
static bool copy_matches(struct tier *t, void *ctx, const void *data, const void *copy,
			 uint32_t copy_len)
{
	uint8_t out[PAGE];

	return copy_len && copy_len <= t->max_bytes &&
	       t->codec->decompress(ctx, copy, copy_len, out, PAGE) == (int)PAGE &&
	       memcmp(out, data, PAGE) == 0;
}

int vt_store_put(struct vt_store *s, uint64_t page, unsigned int tier, const void *data)
{
	return vt_store_put_copy(s, page, tier, data, NULL, 0, NULL);
}

/* One put between its preparation (outside the lock) and its commit. */
struct put_job {
	uint64_t page;
	struct tier *t;
	int kind, r, slot;
	uint64_t word, handle, ns;
	uint32_t len, sum;
	void *ctx;
	bool remote;			/* its copies go to the servers before the commit */
	const void *data;		/* the page (a remote job's local copy) */
	uint8_t cbuf[2 * PAGE];
};

/*
 * Classify, compress and checksum @data outside the lock (a fault
 * thread's get never waits for a compression). 0: ready to commit (j->r
 * carries a compression failure, turned into E2BIG by the commit); or the
 * put's result when it ends here.
 */
static int put_prepare(struct vt_store *s, struct put_job *j, uint64_t page, unsigned int tier,
		       const void *data, const void *copy, uint32_t copy_len, bool *used)
{
	struct tier *t;
	int r = 0;

	memset(j, 0, offsetof(struct put_job, cbuf));
	j->page = page;
	j->data = data;
	if (used)
		*used = false;
	if (!s || !data || page >= s->nr_pages)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	t = tier_of_api(s, tier);
	/* tiers kept only for their pages take no new ones */
	if (!t || tier >= s->nr_specs)
		r = -EINVAL;
	else if (valid_at(s, page))
		r = -EEXIST;
	pthread_mutex_unlock(&s->lock);
	if (r < 0)
		return r;
	j->t = t;
	j->kind = vt_store_classify(data, &j->word);
	j->sum = crc(data, PAGE);
	j->slot = (int)(t - s->tier);
	if (j->kind == VT_STORE_COMPRESSED) {
		uint64_t t0;
		bool refused;

		/* refused before with this very content: it would be again */
		pthread_mutex_lock(&s->lock);
		refused = vt_refused_has(s->refused, page, (unsigned int)j->slot, j->sum);
		if (refused) {
			t->st.puts++;
			t->st.rejected_e2big++;
			t->st.rejected_memo++;
		}
		pthread_mutex_unlock(&s->lock);
		if (refused)
			return -E2BIG;
		j->ctx = ctx_take(s, t);
		if (!j->ctx)
			return -ENOMEM;
		t0 = vt_now_ns();
		if (copy && copy_matches(t, j->ctx, data, copy, copy_len)) {
			memcpy(j->cbuf, copy, copy_len);
			r = (int)copy_len;
			if (used)
				*used = true;
		} else {
			r = t->codec->compress(j->ctx, data, PAGE, j->cbuf, t->max_bytes);
		}
		j->ns = vt_now_ns() - t0;
		j->len = r > 0 ? (uint32_t)r : 0;
		j->r = r;
	}
	j->remote = tier_remote(t) && j->kind == VT_STORE_COMPRESSED && r > 0 &&
		    j->len <= t->max_bytes;
	return 0;
}

/* A remote job's local copy, when its servers did not take it. */
static void local_undo(struct vt_store *s, struct tier *t, uint64_t page)
{
	pthread_mutex_lock(&s->lock);
	if (t->lc)
		vt_store_drop(t->lc, page);
	pthread_mutex_unlock(&s->lock);
}

/* A job that ends before its commit: its context back, its put counted. */
static void put_abandon(struct vt_store *s, struct put_job *j)
{
	pthread_mutex_lock(&s->lock);
	j->t->st.puts++;
	if (j->ctx)
		g_ptr_array_add(j->t->spare, j->ctx);
	pthread_mutex_unlock(&s->lock);
}

/*
 * The pool and the index change under the lock: the entry is valid only
 * once everything it names is in place. A remote job's copies are on the
 * servers already, their location in j->handle.
 */
static int put_commit(struct vt_store *s, struct put_job *j)
{
	struct tier *t = j->t;
	struct entry *e;
	uint64_t page = j->page, off = 0, word = j->word;
	bool allocated = false;
	int r;

	pthread_mutex_lock(&s->lock);
	t->st.puts++;
	t->st.compress_ns += j->ns;
	if (j->ctx)
		g_ptr_array_add(t->spare, j->ctx);
	if (j->kind == VT_STORE_COMPRESSED && (j->r < 0 || j->len > t->max_bytes)) {
		t->st.rejected_e2big++;
		vt_refused_add(s->refused, page, (unsigned int)j->slot, j->sum);
		r = -E2BIG;
		goto out;
	}
	vt_refused_forget(s->refused, page);
	if (valid_at(s, page)) {
		r = -EEXIST;		/* another thread put it meanwhile */
		goto out;
	}
	r = cts_entry_make(s, page, &e);
	if (r < 0)
		goto out;
	if (j->remote) {
		word = j->handle;
	} else if (j->kind == VT_STORE_COMPRESSED) {
		uint64_t handle = 0;

		r = t->pool.ops->alloc(&t->pool, j->len, &handle);
		allocated = r == 0;
		if (!r)
			r = t->pool.ops->locate(&t->pool, handle, j->len, &off);
		if (!r)
			r = vt_medium_write(&t->medium, off, j->cbuf, j->len);
		if (r < 0) {
			if (allocated)
				t->pool.ops->free(&t->pool, handle, j->len);
			if (!s->live[page / CHUNK_PAGES])
				cts_block_release(s, page / CHUNK_PAGES);
			goto out;
		}
		word = handle;
	}
	e->crc = j->sum;
	e->loc = word;
	/* the entry is valid only once everything it names is in place */
	atomic_store_explicit(&e->state, ST_VALID | (uint32_t)j->kind << ST_KIND_SHIFT |
			      (uint32_t)j->slot << ST_SLOT_SHIFT | ST_MAGIC | j->len,
			      memory_order_release);
	s->live[page / CHUNK_PAGES]++;
	count(t, (unsigned int)j->kind, j->len, 1);
	r = 0;
out:
	if (j->remote && r < 0)
		cts_remote_dropped(t, page);	/* stored there, named nowhere here */
	pthread_mutex_unlock(&s->lock);
	return r;
}

int vt_store_put_copy(struct vt_store *s, uint64_t page, unsigned int tier, const void *data,
		      const void *copy, uint32_t copy_len, bool *used)
{
	struct put_job job, *j = &job;	/* on the stack, as the compressed bytes were */
	int r = put_prepare(s, j, page, tier, data, copy, copy_len, used);

	if (r < 0)
		return r;
	if (j->remote) {
		/*
		 * the copies on the servers, then the entry, under the tier's
		 * rput: a second put of the page sees the first one's entry
		 */
		g_mutex_lock(&j->t->rput);
		r = valid_at_locked(s, page) ? -EEXIST :
		    cts_remote_local_put(s, j->t, page, data, j->cbuf, j->len);
		if (!r) {
			r = cts_remote_put(s, j->t, &j->page, (const uint8_t *)j->cbuf, &j->len, 1,
					   sizeof(j->cbuf), &j->handle, &j->r);
			if (!r)
				r = j->r;
			if (r < 0)
				local_undo(s, j->t, page);
		}
		if (r < 0)
			put_abandon(s, j);
		else
			r = put_commit(s, j);
		g_mutex_unlock(&j->t->rput);
	} else {
		r = put_commit(s, j);
	}
	return r;
}

/* @enc against tier @t: 0 when it can be committed as it is. */
static int encoded_check(const struct tier *t, const struct vt_store_encoded *enc)
{
	switch (enc->kind) {
	case VT_STORE_ZERO:
		return enc->word || enc->len ? -EINVAL : 0;
	case VT_STORE_SAME:
		return !enc->word || enc->len ? -EINVAL : 0;
	case VT_STORE_COMPRESSED:
		if (!enc->len || enc->len > PAGE)
			return -EINVAL;
		return enc->codec != t->spec.codec || enc->len > t->max_bytes ? -EOPNOTSUPP : 0;
	}
	return -EINVAL;
}

int vt_store_put_encoded(struct vt_store *s, uint64_t page, unsigned int tier,
			 const struct vt_store_encoded *enc, const void *bytes)
{
	struct put_job job, *j = &job;
	struct tier *t;
	int r = 0;

	memset(j, 0, offsetof(struct put_job, cbuf));
	if (!s || !enc || page >= s->nr_pages || (enc->kind == VT_STORE_COMPRESSED && !bytes))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	t = tier_of_api(s, tier);
	/* tiers kept only for their pages take no new ones */
	if (!t || tier >= s->nr_specs)
		r = -EINVAL;
	else if (tier_remote(t))
		r = -EOPNOTSUPP;
	else
		r = encoded_check(t, enc);
	if (!r && valid_at(s, page))
		r = -EEXIST;
	pthread_mutex_unlock(&s->lock);
	if (r < 0)
		return r;
	j->page = page;
	j->t = t;
	j->kind = (int)enc->kind;
	j->word = enc->word;
	j->sum = enc->crc;
	j->slot = (int)(t - s->tier);
	if (enc->kind == VT_STORE_COMPRESSED) {
		memcpy(j->cbuf, bytes, enc->len);
		j->len = enc->len;
		j->r = (int)enc->len;
	}
	return put_commit(s, j);
}

int vt_store_put_batch(struct vt_store *s, const uint64_t *pages, unsigned int tier,
		       const void *const *data, unsigned int n, int *status)
{
	struct put_job *jobs;
	unsigned int stored = 0, nr = 0;
	uint64_t rpages[VT_STORE_BATCH_MAX], locs[VT_STORE_BATCH_MAX];
	uint32_t lens[VT_STORE_BATCH_MAX];
	int rst[VT_STORE_BATCH_MAX];
	unsigned int ridx[VT_STORE_BATCH_MAX];
	uint8_t *rbuf;
	struct tier *t = NULL;

	if (n > VT_STORE_BATCH_MAX)
		return -EINVAL;
	jobs = g_new(struct put_job, n);
	rbuf = g_malloc((size_t)n * 2 * PAGE);
	for (unsigned int i = 0; i < n; i++) {
		status[i] = put_prepare(s, &jobs[i], pages[i], tier, data[i], NULL, 0, NULL);
		if (status[i] < 0)
			continue;
		if (!jobs[i].remote) {
			status[i] = put_commit(s, &jobs[i]);
			continue;
		}
		t = jobs[i].t;
		status[i] = 1;	/* to the servers */
	}
	if (t) {
		/* the remote ones: one request per server for the whole batch */
		g_mutex_lock(&t->rput);
		for (unsigned int i = 0; i < n; i++) {
			if (status[i] != 1)
				continue;
			status[i] = valid_at_locked(s, pages[i]) ? -EEXIST :
				    cts_remote_local_put(s, t, pages[i], data[i], jobs[i].cbuf,
							 jobs[i].len);
			if (status[i] < 0) {
				put_abandon(s, &jobs[i]);
				continue;
			}
			ridx[nr] = i;
			rpages[nr] = pages[i];
			lens[nr] = jobs[i].len;
			memcpy(rbuf + (size_t)nr * 2 * PAGE, jobs[i].cbuf, jobs[i].len);
			nr++;
		}
		if (nr) {
			int r = cts_remote_put(s, t, rpages, rbuf, lens, nr, 2 * PAGE, locs, rst);

			for (unsigned int k = 0; k < nr; k++) {
				struct put_job *j = &jobs[ridx[k]];

				if (r < 0 && !rst[k])
					rst[k] = r;
				if (rst[k] < 0) {
					local_undo(s, t, rpages[k]);
					put_abandon(s, j);
					status[ridx[k]] = rst[k];
					continue;
				}
				j->handle = locs[k];
				status[ridx[k]] = put_commit(s, j);
			}
		}
		g_mutex_unlock(&t->rput);
	}
	for (unsigned int i = 0; i < n; i++)
		stored += status[i] == 0;
	g_free(rbuf);
	g_free(jobs);
	return (int)stored;
}

/* The valid entry of @page and its tier, or NULL. Under the lock. */
static struct entry *lookup(struct vt_store *s, uint64_t page, uint32_t *state,
			    struct tier **t)
{
	struct entry *e;
	unsigned int slot;

	if (page >= s->nr_pages)
		return NULL;
	e = entry_of(s, page);
	if (!e)
		return NULL;
	*state = atomic_load_explicit(&e->state, memory_order_acquire);
	slot = (*state >> ST_SLOT_SHIFT) & 15;
	if (!(*state & ST_VALID) || slot >= VT_CTIER_MAX || !s->tier[slot].live)
		return NULL;
	*t = &s->tier[slot];
	return e;
}

static int fill(struct vt_store *s, struct tier *t, const struct entry *e, uint32_t st,
		void *out)
{
	unsigned int kind = (st >> ST_KIND_SHIFT) & 3;
	uint32_t len = st & ST_LEN_MASK;
	const void *src;
	uint64_t off, t0;
	int n;

	if (kind == VT_STORE_ZERO || kind == VT_STORE_SAME) {
		uint64_t *w = out;

		for (unsigned int i = 0; i < PAGE / sizeof(*w); i++)
			w[i] = e->loc;
		return 0;
	}
	if (kind != VT_STORE_COMPRESSED || t->pool.ops->locate(&t->pool, e->loc, len, &off) < 0)
		return -EBADMSG;
	src = vt_medium_read(&t->medium, off, len, s->rbuf);
	if (!src)
		return -EBADMSG;
	t0 = vt_now_ns();
	n = t->codec->decompress(t->ctx, src, len, out, PAGE);
	t->st.decompress_ns += vt_now_ns() - t0;
	return n == (int)PAGE ? 0 : -EBADMSG;
}

/*
 * A remote page (the store's lock held, dropped while the servers are
 * asked): fetched, then decompressed under the lock if its entry did not
 * change meanwhile (else -EAGAIN with *@changed: ask again).
 */
static int fill_remote(struct vt_store *s, struct tier *t, uint64_t page, struct entry *e,
		       uint32_t st, void *out, bool *changed)
{
	uint8_t cbuf[2 * PAGE];
	uint64_t loc = e->loc, t0;
	uint32_t len = 0, now = 0;
	struct tier *t2 = NULL;
	int r, n;

	pthread_mutex_unlock(&s->lock);
	r = cts_remote_fetch(s, t, page, cbuf, sizeof(cbuf), &len);
	pthread_mutex_lock(&s->lock);
	e = lookup(s, page, &now, &t2);
	*changed = !e || now != st || e->loc != loc || t2 != t;
	if (*changed)
		return -EAGAIN;
	if (r < 0)
		return r;
	if (len != (st & ST_LEN_MASK))
		return -EBADMSG;
	t0 = vt_now_ns();
	n = t->codec->decompress(t->ctx, cbuf, len, out, PAGE);
	t->st.decompress_ns += vt_now_ns() - t0;
	return n == (int)PAGE ? 0 : -EBADMSG;
}

static int store_get(struct vt_store *s, uint64_t page, void *out, bool count_bad)
{
	struct tier *t = NULL;
	struct entry *e;
	uint32_t st = 0;
	int r;

	if (!s || !out)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	e = lookup(s, page, &st, &t);
	if (!e) {
		r = -ENOENT;
		goto out;
	}
	t->st.gets++;
	if (tier_remote(t) && ((st >> ST_KIND_SHIFT) & 3) == VT_STORE_COMPRESSED) {
		bool changed = false;

		r = fill_remote(s, t, page, e, st, out, &changed);
		if (changed)
			goto out;	/* -EAGAIN: ask again */
		e = lookup(s, page, &st, &t);	/* unchanged, maybe in a block mapped anew */
		if (!r && crc(out, PAGE) != e->crc)
			r = -EBADMSG;
		/* a server silent or lost, or its copy bad: the local copy, checked */
		if (r < 0 && cts_remote_local_get(t, page, e->crc, out) == 0)
			r = 0;
		if (r == -EAGAIN)
			goto out;	/* the servers may still answer: not a bad copy */
	} else {
		r = fill(s, t, e, st, out);
	}
	if (!r && crc(out, PAGE) != e->crc)
		r = -EBADMSG;
	if (r < 0) {
		t->st.bad_checksum += count_bad;
		memset(out, 0, PAGE);
	}
out:
	pthread_mutex_unlock(&s->lock);
	return r;
}

int vt_store_get(struct vt_store *s, uint64_t page, void *out)
{
	return store_get(s, page, out, true);
}

int vt_store_get_ahead(struct vt_store *s, uint64_t page, void *out)
{
	return store_get(s, page, out, false);
}

int vt_store_get_encoded(struct vt_store *s, uint64_t page, struct vt_store_encoded *enc,
			 void *out)
{
	struct tier *t = NULL;
	struct entry *e;
	uint32_t st = 0, len;
	const void *src;
	uint64_t off;
	int r = 0;

	if (!s || !enc || !out)
		return -EINVAL;
	memset(enc, 0, sizeof(*enc));
	pthread_mutex_lock(&s->lock);
	e = lookup(s, page, &st, &t);
	if (!e) {
		r = -ENOENT;
		goto out;
	}
	enc->kind = (st >> ST_KIND_SHIFT) & 3;
	enc->crc = e->crc;
	len = st & ST_LEN_MASK;
	if (enc->kind == VT_STORE_ZERO || enc->kind == VT_STORE_SAME) {
		enc->word = e->loc;
		goto out;
	}
	if (enc->kind != VT_STORE_COMPRESSED || !len || len > PAGE) {
		r = -EBADMSG;
	} else if (tier_remote(t)) {
		r = -EOPNOTSUPP;
	} else if (t->pool.ops->locate(&t->pool, e->loc, len, &off) < 0 ||
		   !(src = vt_medium_read(&t->medium, off, len, s->rbuf))) {
		r = -EBADMSG;
	} else {
		memcpy(out, src, len);
		enc->codec = t->spec.codec;
		enc->len = len;
	}
out:
	pthread_mutex_unlock(&s->lock);
	return r;
}

int vt_store_drop(struct vt_store *s, uint64_t page)
{
	struct tier *t = NULL;
	struct entry *e;
	uint32_t st = 0;
	uint64_t c = page / CHUNK_PAGES;

	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	e = lookup(s, page, &st, &t);
	if (!e) {
		pthread_mutex_unlock(&s->lock);
		return -ENOENT;
	}
	/* the entry goes first: a kill now leaves a free slot, never a shared one */
	atomic_store_explicit(&e->state, 0, memory_order_release);
	if (((st >> ST_KIND_SHIFT) & 3) == VT_STORE_COMPRESSED && tier_remote(t))
		cts_remote_dropped(t, page);
	else if (((st >> ST_KIND_SHIFT) & 3) == VT_STORE_COMPRESSED)
		t->pool.ops->free(&t->pool, e->loc, st & ST_LEN_MASK);
	count(t, (st >> ST_KIND_SHIFT) & 3, st & ST_LEN_MASK, -1);
	if (s->live[c] && !--s->live[c])
		cts_block_release(s, c);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int vt_store_tier_of(struct vt_store *s, uint64_t page)
{
	struct tier *t = NULL;
	uint32_t st;
	int r;

	pthread_mutex_lock(&s->lock);
	r = lookup(s, page, &st, &t) ? t->api : -ENOENT;
	pthread_mutex_unlock(&s->lock);
	return r;
}

bool vt_store_tier_remote(struct vt_store *s, int tier)
{
	struct tier *t;
	bool r;

	if (!s || tier < 0)
		return false;
	pthread_mutex_lock(&s->lock);
	t = tier_of_api(s, (unsigned int)tier);
	r = t && tier_remote(t);
	pthread_mutex_unlock(&s->lock);
	return r;
}

int vt_store_crc_of(struct vt_store *s, uint64_t page, uint32_t *crc)
{
	struct tier *t = NULL;
	struct entry *e;
	uint32_t st;
	int r = -ENOENT;

	pthread_mutex_lock(&s->lock);
	e = lookup(s, page, &st, &t);
	if (e) {
		*crc = e->crc;
		r = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}
