// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A destination's copies made during precopy (ctier_prepared.h).
 *
 * The plan is a sorted list of runs of chunks, each for one tier (a profile
 * read in address order gives one run per change of tier, an all-cold one a
 * single run), so a plan costs what the profile says, not what the backend
 * declares. A struct chunk (the tier, which pages have a copy and where each
 * copy is in the chunk's arena) exists only for a planned 2 MiB in which the
 * memfd was found to hold data (SEEK_DATA): a sparse memfd of any declared
 * size costs the records of its data. The thread appends to a chunk's arena
 * and publishes a page's copy by its bit; readers come only after the thread
 * is joined. Arenas are charged to the quotas (a peer's, the host's) before
 * they grow: a copy that would pass a quota is not made (capped).
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctier_codec.h"
#include "ctier_prepared.h"
#include "thread_ns.h"

#define PAGE 4096u
#define CHUNK_PAGES ((unsigned int)(VT_PREPARED_CHUNK_BYTES / PAGE))
#define WORDS (CHUNK_PAGES / 64)

struct chunk {
	uint64_t index;			/* chunk number in the backend */
	unsigned int tier;
	uint64_t copied[WORDS];		/* pages with a copy */
	uint64_t looked[WORDS];		/* pages read once (copied, zero or refused) */
	uint32_t off[CHUNK_PAGES];	/* copy of page i at arena + off[i] */
	uint16_t len[CHUNK_PAGES];
	uint8_t *arena;
	size_t used, cap;
	bool done;			/* every page read once */
};

/* Chunks [first, end) planned for @tier. */
struct run {
	uint64_t first, end;
	unsigned int tier;
};

struct vt_prepared_quota {
	int refs;
	uint64_t cap;			/* 0: no bound */
	uint64_t used;			/* atomic */
};

#define QUOTAS_MAX 2

struct vt_prepared {
	int memfd;
	uint64_t fd_offset, size;
	struct vt_ctier_spec specs[VT_CTIER_MAX];
	unsigned int nr_specs;
	GHashTable *chunks;		/* chunk index -> struct chunk, chunks with data only */
	GArray *runs;			/* struct run: sorted, disjoint */
	struct vt_prepared_quota *quota[QUOTAS_MAX];
	unsigned int nr_quota;
	uint64_t charged;		/* arena bytes charged to the quotas */
	GThread *thread;
	bool planning;			/* the thread runs the plan callback */
	vt_prepared_plan_fn plan;
	void *plan_arg;
	GDestroyNotify plan_free;
	unsigned int idle_ms;
	int stop;			/* atomic */
	GMutex lock;			/* stats, tier bytes */
	uint64_t tier_bytes[VT_CTIER_MAX];
	uint64_t bytes;
	struct vt_prepared_stats st;
};

struct vt_prepared_quota *vt_prepared_quota_new(uint64_t cap)
{
	struct vt_prepared_quota *q = g_new0(struct vt_prepared_quota, 1);

	q->refs = 1;
	q->cap = cap;
	return q;
}

struct vt_prepared_quota *vt_prepared_quota_ref(struct vt_prepared_quota *q)
{
	g_atomic_int_inc(&q->refs);
	return q;
}

void vt_prepared_quota_unref(struct vt_prepared_quota *q)
{
	if (q && g_atomic_int_dec_and_test(&q->refs))
		g_free(q);
}

uint64_t vt_prepared_quota_used(const struct vt_prepared_quota *q)
{
	return q ? __atomic_load_n(&q->used, __ATOMIC_RELAXED) : 0;
}

/* Charge @n bytes to every quota of @p, or none (false) if one would pass its cap. */
static bool quota_take(struct vt_prepared *p, uint64_t n)
{
	unsigned int i;

	for (i = 0; i < p->nr_quota; i++) {
		struct vt_prepared_quota *q = p->quota[i];
		uint64_t was = __atomic_fetch_add(&q->used, n, __ATOMIC_RELAXED);

		if (q->cap && was + n > q->cap) {
			__atomic_fetch_sub(&q->used, n, __ATOMIC_RELAXED);
			break;
		}
	}
	if (i == p->nr_quota) {
		p->charged += n;
		return true;
	}
	while (i--)
		__atomic_fetch_sub(&p->quota[i]->used, n, __ATOMIC_RELAXED);
	return false;
}

static void quota_give(struct vt_prepared *p, uint64_t n)
{
	for (unsigned int i = 0; i < p->nr_quota; i++)
		__atomic_fetch_sub(&p->quota[i]->used, n, __ATOMIC_RELAXED);
	p->charged -= n;
}

static void chunk_free(gpointer data)
{
	struct chunk *c = data;

	g_free(c->arena);
	g_free(c);
}

struct vt_prepared *vt_prepared_new(int memfd, uint64_t fd_offset, uint64_t size,
				    const struct vt_ctier_spec *specs, unsigned int nr_specs)
{
	struct vt_prepared *p;

	if (memfd < 0 || !size || size % PAGE || fd_offset % PAGE || !nr_specs ||
	    nr_specs > VT_CTIER_MAX || fd_offset > UINT64_MAX - size) {
		if (memfd >= 0)
			close(memfd);
		return NULL;
	}
	p = g_new0(struct vt_prepared, 1);
	p->memfd = memfd;
	p->fd_offset = fd_offset;
	p->size = size;
	memcpy(p->specs, specs, nr_specs * sizeof(*specs));
	p->nr_specs = nr_specs;
	p->chunks = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, chunk_free);
	p->runs = g_array_new(FALSE, FALSE, sizeof(struct run));
	g_mutex_init(&p->lock);
	return p;
}

int vt_prepared_add_quota(struct vt_prepared *p, struct vt_prepared_quota *q)
{
	if (!p || !q || p->thread || p->nr_quota == QUOTAS_MAX)
		return -EINVAL;
	p->quota[p->nr_quota++] = vt_prepared_quota_ref(q);
	return 0;
}

/* The first run of @p that ends after chunk @i (runs->len if none). */
static unsigned int run_after(const struct vt_prepared *p, uint64_t i)
{
	unsigned int lo = 0, hi = p->runs->len;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (g_array_index(p->runs, struct run, mid).end <= i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Plan chunks [@first, @end) for @tier: what overlaps is replaced, neighbours of its tier joined. */
static void runs_set(struct vt_prepared *p, uint64_t first, uint64_t end, unsigned int tier)
{
	struct run nr = { first, end, tier };
	unsigned int k = run_after(p, first), j = k;

	/* a run that starts before @first keeps its head; one that ends after @end its tail */
	while (j < p->runs->len && g_array_index(p->runs, struct run, j).first < end)
		j++;
	if (k < j) {
		struct run head = g_array_index(p->runs, struct run, k);
		struct run tail = g_array_index(p->runs, struct run, j - 1);

		g_array_remove_range(p->runs, k, j - k);
		if (tail.end > end) {
			tail.first = end;
			g_array_insert_val(p->runs, k, tail);
		}
		if (head.first < first) {
			head.end = first;
			g_array_insert_val(p->runs, k, head);
			k++;
		}
	}
	/* join the neighbours of the same tier that touch it */
	if (k > 0) {
		struct run *l = &g_array_index(p->runs, struct run, k - 1);

		if (l->end == first && l->tier == tier) {
			nr.first = l->first;
			g_array_remove_index(p->runs, --k);
		}
	}
	if (k < p->runs->len) {
		struct run *r = &g_array_index(p->runs, struct run, k);

		if (r->first == end && r->tier == tier) {
			nr.end = r->end;
			g_array_remove_index(p->runs, k);
		}
	}
	g_array_insert_val(p->runs, k, nr);
}

int vt_prepared_plan(struct vt_prepared *p, uint64_t offset, uint64_t len, unsigned int tier)
{
	uint64_t first, last;

	if (!p || (p->thread && !p->planning) || tier >= p->nr_specs || !len || offset >= p->size ||
	    len > p->size - offset)
		return -EINVAL;
	first = offset / VT_PREPARED_CHUNK_BYTES;
	last = (offset + len - 1) / VT_PREPARED_CHUNK_BYTES;
	g_mutex_lock(&p->lock);
	runs_set(p, first, last + 1, tier);
	g_mutex_unlock(&p->lock);
	return 0;
}

static bool has(const uint64_t *bits, unsigned int i)
{
	return bits[i / 64] >> (i % 64) & 1;
}

static void set(uint64_t *bits, unsigned int i)
{
	bits[i / 64] |= 1ull << (i % 64);
}

/* The pages of chunk @c present in the memfd and not looked at yet, into @present. */
static unsigned int present_pages(struct vt_prepared *p, const struct chunk *c, uint64_t *present)
{
	uint64_t base = c->index * VT_PREPARED_CHUNK_BYTES;
	uint64_t end = MIN(base + VT_PREPARED_CHUNK_BYTES, p->size);
	unsigned int n = 0;

	memset(present, 0, WORDS * sizeof(*present));
	for (uint64_t at = base; at < end;) {
		off_t data = lseek(p->memfd, (off_t)(p->fd_offset + at), SEEK_DATA), hole;

		if (data < 0)
			break;	/* ENXIO: no data after @at */
		if ((uint64_t)data >= p->fd_offset + end)
			break;
		hole = lseek(p->memfd, data, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > p->fd_offset + end)
			hole = (off_t)(p->fd_offset + end);
		for (uint64_t o = (uint64_t)data - p->fd_offset; o < (uint64_t)hole - p->fd_offset;
		     o += PAGE) {
			unsigned int i = (unsigned int)((o - base) / PAGE);

			if (!has(c->looked, i)) {
				set(present, i);
				n++;
			}
		}
		at = (uint64_t)hole - p->fd_offset;
	}
	return n;
}

/* Copy what arrived in chunk @c; the number of pages looked at. */
static unsigned int copy_chunk(struct vt_prepared *p, struct chunk *c, void *ctx[VT_CTIER_MAX],
			       uint8_t *buf)
{
	const struct vt_ctier_spec *spec = &p->specs[c->tier];
	const struct vt_codec_ops *codec = vt_codec_get(spec->codec);
	uint64_t present[WORDS], base = c->index * VT_PREPARED_CHUNK_BYTES;
	uint32_t cap = spec->max_stored_pct * PAGE / 100;
	unsigned int looked = 0;
	uint8_t out[2 * PAGE];

	if (!present_pages(p, c, present))
		return 0;
	if (!ctx[c->tier])
		ctx[c->tier] = codec->ctx_new(spec->level);
	if (!ctx[c->tier])
		return 0;
	for (unsigned int i = 0; i < CHUNK_PAGES && !g_atomic_int_get(&p->stop); i++) {
		uint64_t t0 = vt_now_ns(), word;
		ssize_t got;
		int n;

		if (!has(present, i))
			continue;
		got = pread(p->memfd, buf, PAGE, (off_t)(p->fd_offset + base + (uint64_t)i * PAGE));
		if (got != (ssize_t)PAGE)
			continue;	/* truncated under us: a hint lost, nothing else */
		set(c->looked, i);
		looked++;
		if (vt_store_classify(buf, &word) != VT_STORE_COMPRESSED) {
			g_mutex_lock(&p->lock);
			p->st.zero++;
			p->st.ns += vt_now_ns() - t0;
			g_mutex_unlock(&p->lock);
			continue;
		}
		g_mutex_lock(&p->lock);
		if (spec->capacity_bytes && p->tier_bytes[c->tier] >= spec->capacity_bytes) {
			p->st.full++;
			g_mutex_unlock(&p->lock);
			continue;
		}
		g_mutex_unlock(&p->lock);
		n = codec->compress(ctx[c->tier], buf, PAGE, out, cap);
		if (n <= 0 || (uint32_t)n > cap) {
			g_mutex_lock(&p->lock);
			p->st.refused++;
			p->st.ns += vt_now_ns() - t0;
			g_mutex_unlock(&p->lock);
			continue;
		}
		if (c->used + (size_t)n > c->cap) {
			size_t grown = MAX(c->cap * 2, MAX(c->used + (size_t)n, 64 * 1024));

			if (!quota_take(p, grown - c->cap)) {
				g_mutex_lock(&p->lock);
				p->st.capped++;
				p->st.ns += vt_now_ns() - t0;
				g_mutex_unlock(&p->lock);
				continue;
			}
			c->cap = grown;
			c->arena = g_realloc(c->arena, c->cap);
		}
		memcpy(c->arena + c->used, out, (size_t)n);
		c->off[i] = (uint32_t)c->used;
		c->len[i] = (uint16_t)n;
		c->used += (size_t)n;
		set(c->copied, i);
		g_mutex_lock(&p->lock);
		p->tier_bytes[c->tier] += (uint64_t)n;
		p->bytes += (uint64_t)n;
		p->st.pages++;
		p->st.bytes += (uint64_t)n;
		p->st.ns += vt_now_ns() - t0;
		g_mutex_unlock(&p->lock);
	}
	return looked;
}

/* Has every page of chunk @c been read once? */
static bool chunk_done(const struct vt_prepared *p, const struct chunk *c)
{
	uint64_t base = c->index * VT_PREPARED_CHUNK_BYTES;
	unsigned int n = (unsigned int)(MIN(VT_PREPARED_CHUNK_BYTES, p->size - base) / PAGE);

	for (unsigned int i = 0; i < n; i++)
		if (!has(c->looked, i))
			return false;
	return true;
}

/*
 * The first chunk from chunk @i on, inside the runs from *@k on, where the
 * memfd holds data (*@k then its run), or UINT64_MAX: holes cost one lseek.
 */
static uint64_t next_data_chunk(struct vt_prepared *p, uint64_t i, unsigned int *k)
{
	while (*k < p->runs->len) {
		const struct run *r = &g_array_index(p->runs, struct run, *k);
		off_t data;
		uint64_t c;

		if (i < r->first)
			i = r->first;
		if (i >= r->end) {
			(*k)++;
			continue;
		}
		data = lseek(p->memfd, (off_t)(p->fd_offset + i * VT_PREPARED_CHUNK_BYTES), SEEK_DATA);
		if (data < 0 || (uint64_t)data - p->fd_offset >= p->size)
			return UINT64_MAX;	/* ENXIO: no data after it */
		c = ((uint64_t)data - p->fd_offset) / VT_PREPARED_CHUNK_BYTES;
		if (c < r->end)
			return c;
		i = c;
		*k = run_after(p, c);
	}
	return UINT64_MAX;
}

/* One pass over the planned chunks that hold data; the number of pages looked at. */
static unsigned int copy_pass(struct vt_prepared *p, void *ctx[VT_CTIER_MAX], uint8_t *buf)
{
	unsigned int looked = 0, k = 0;

	for (uint64_t i = 0; !g_atomic_int_get(&p->stop);) {
		uint64_t ci = next_data_chunk(p, i, &k);
		struct chunk *c;

		if (ci == UINT64_MAX)
			break;
		c = g_hash_table_lookup(p->chunks, &ci);
		if (!c) {
			c = g_new0(struct chunk, 1);
			c->index = ci;
			c->tier = g_array_index(p->runs, struct run, k).tier;
			g_mutex_lock(&p->lock);
			g_hash_table_insert(p->chunks, &c->index, c);
			p->st.records++;
			g_mutex_unlock(&p->lock);
		}
		if (!c->done) {
			looked += copy_chunk(p, c, ctx, buf);
			c->done = chunk_done(p, c);	/* a chunk read whole is not read again */
		}
		i = ci + 1;
	}
	return looked;
}

static gpointer prepared_thread(gpointer data)
{
	struct vt_prepared *p = data;
	void *ctx[VT_CTIER_MAX] = { 0 };
	g_autofree uint8_t *buf = g_malloc(PAGE);
	uint64_t planned = 0;

	/*
	 * Only on CPU nobody else wants: the incoming migration and the host's
	 * VMs come first, and a copy not made costs only its compression later.
	 */
	if (sched_setscheduler(0, SCHED_IDLE, &(struct sched_param){ 0 }))
		g_debug("prepare: SCHED_IDLE: %s", g_strerror(errno));
	if (p->plan) {
		p->plan(p, p->plan_arg);
		if (p->plan_free)
			p->plan_free(p->plan_arg);
		p->plan_arg = NULL;
	}
	for (unsigned int k = 0; k < p->runs->len; k++)
		planned += g_array_index(p->runs, struct run, k).end -
			   g_array_index(p->runs, struct run, k).first;
	g_mutex_lock(&p->lock);
	p->st.chunks = planned;
	p->planning = false;
	g_mutex_unlock(&p->lock);
	while (!g_atomic_int_get(&p->stop)) {
		unsigned int looked = copy_pass(p, ctx, buf);

		g_mutex_lock(&p->lock);
		p->st.rounds++;
		g_mutex_unlock(&p->lock);
		/* nothing new arrived: wait a little (a stop ends the wait early enough) */
		for (unsigned int w = 0; !looked && w < p->idle_ms && !g_atomic_int_get(&p->stop);
		     w += 10)
			g_usleep(10000);
	}
	for (unsigned int t = 0; t < VT_CTIER_MAX; t++)
		if (ctx[t])
			vt_codec_get(p->specs[t].codec)->ctx_free(ctx[t]);
	return NULL;
}

int vt_prepared_start(struct vt_prepared *p, unsigned int idle_ms, vt_prepared_plan_fn plan,
		      void *arg, GDestroyNotify free_arg)
{
	if (!p || p->thread) {
		if (arg && free_arg)
			free_arg(arg);
		return -EINVAL;
	}
	p->idle_ms = MAX(idle_ms, 10u);
	p->plan = plan;
	p->plan_arg = arg;
	p->plan_free = free_arg;
	p->planning = plan != NULL;
	p->thread = g_thread_try_new("vtier-prepare", prepared_thread, p, NULL);
	if (!p->thread) {
		p->planning = false;
		if (arg && free_arg)
			free_arg(arg);
		return -EAGAIN;
	}
	return 0;
}

void vt_prepared_request_stop(struct vt_prepared *p)
{
	if (p)
		g_atomic_int_set(&p->stop, 1);
}

void vt_prepared_stop(struct vt_prepared *p)
{
	if (!p || !p->thread)
		return;
	g_atomic_int_set(&p->stop, 1);
	g_thread_join(p->thread);
	p->thread = NULL;
}

const void *vt_prepared_copy(const struct vt_prepared *p, uint64_t page, unsigned int tier,
			     uint32_t *len)
{
	uint64_t i = page / CHUNK_PAGES;
	const struct chunk *c;

	if (!p || p->thread || page >= p->size / PAGE)
		return NULL;
	c = g_hash_table_lookup(p->chunks, &i);
	if (!c || c->tier != tier || !has(c->copied, (unsigned int)(page % CHUNK_PAGES)))
		return NULL;
	*len = c->len[page % CHUNK_PAGES];
	return c->arena + c->off[page % CHUNK_PAGES];
}

void vt_prepared_release(struct vt_prepared *p, uint64_t offset, uint64_t len)
{
	uint64_t first, end;

	if (!p || p->thread || !len)
		return;
	first = (offset + VT_PREPARED_CHUNK_BYTES - 1) / VT_PREPARED_CHUNK_BYTES;
	end = (offset + len) / VT_PREPARED_CHUNK_BYTES;
	if (offset + len >= p->size)
		end = (p->size + VT_PREPARED_CHUNK_BYTES - 1) / VT_PREPARED_CHUNK_BYTES;
	for (uint64_t i = first; i < end; i++) {
		struct chunk *c = g_hash_table_lookup(p->chunks, &i);

		if (!c)
			continue;
		g_mutex_lock(&p->lock);
		p->bytes -= c->used;
		p->tier_bytes[c->tier] -= c->used;
		p->st.records--;
		g_mutex_unlock(&p->lock);
		quota_give(p, c->cap);
		g_hash_table_remove(p->chunks, &i);
	}
}

uint64_t vt_prepared_bytes(const struct vt_prepared *p)
{
	uint64_t b;

	if (!p)
		return 0;
	g_mutex_lock((GMutex *)&p->lock);
	b = p->bytes;
	g_mutex_unlock((GMutex *)&p->lock);
	return b;
}

uint64_t vt_prepared_state_bytes(const struct vt_prepared *p)
{
	uint64_t b;

	if (!p)
		return 0;
	g_mutex_lock((GMutex *)&p->lock);
	/* a hash table entry: hash, key and value pointers, a bucket's share */
	b = sizeof(*p) + (uint64_t)p->runs->len * sizeof(struct run) +
	    p->st.records * (sizeof(struct chunk) + 4 * sizeof(void *));
	g_mutex_unlock((GMutex *)&p->lock);
	return b;
}

void vt_prepared_get_stats(struct vt_prepared *p, struct vt_prepared_stats *out)
{
	g_mutex_lock(&p->lock);
	*out = p->st;
	g_mutex_unlock(&p->lock);
}

void vt_prepared_free(struct vt_prepared *p)
{
	if (!p)
		return;
	vt_prepared_stop(p);
	close(p->memfd);
	quota_give(p, p->charged);
	for (unsigned int i = 0; i < p->nr_quota; i++)
		vt_prepared_quota_unref(p->quota[i]);
	g_hash_table_destroy(p->chunks);
	g_array_free(p->runs, TRUE);
	g_mutex_clear(&p->lock);
	g_free(p);
}
