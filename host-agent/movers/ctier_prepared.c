// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A destination's copies made during precopy (ctier_prepared.h).
 *
 * One struct chunk per planned 2 MiB: the tier, which pages have a copy and
 * where each copy is in the chunk's arena. The thread appends to a chunk's
 * arena and publishes a page's copy by its bit; readers come only after the
 * thread is joined.
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
};

struct vt_prepared {
	int memfd;
	uint64_t fd_offset, size;
	struct vt_ctier_spec specs[VT_CTIER_MAX];
	unsigned int nr_specs;
	GHashTable *chunks;		/* chunk index -> struct chunk */
	GArray *order;			/* chunk indexes, sorted before the thread starts */
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

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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
	p->order = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	g_mutex_init(&p->lock);
	return p;
}

int vt_prepared_plan(struct vt_prepared *p, uint64_t offset, uint64_t len, unsigned int tier)
{
	uint64_t first, last;

	if (!p || (p->thread && !p->planning) || tier >= p->nr_specs || !len || offset >= p->size ||
	    len > p->size - offset)
		return -EINVAL;
	first = offset / VT_PREPARED_CHUNK_BYTES;
	last = (offset + len - 1) / VT_PREPARED_CHUNK_BYTES;
	for (uint64_t i = first; i <= last; i++) {
		struct chunk *c = g_hash_table_lookup(p->chunks, &i);

		if (!c) {
			c = g_new0(struct chunk, 1);
			c->index = i;
			g_hash_table_insert(p->chunks, &c->index, c);
			g_array_append_val(p->order, i);
		}
		c->tier = tier;
	}
	return 0;
}

static int cmp_u64(gconstpointer a, gconstpointer b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
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
		uint64_t t0 = now_ns(), word;
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
			p->st.ns += now_ns() - t0;
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
			p->st.ns += now_ns() - t0;
			g_mutex_unlock(&p->lock);
			continue;
		}
		if (c->used + (size_t)n > c->cap) {
			c->cap = MAX(c->cap * 2, MAX(c->used + (size_t)n, 64 * 1024));
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
		p->st.ns += now_ns() - t0;
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

static gpointer prepared_thread(gpointer data)
{
	struct vt_prepared *p = data;
	void *ctx[VT_CTIER_MAX] = { 0 };
	g_autofree uint8_t *buf = g_malloc(PAGE);

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
	g_array_sort(p->order, cmp_u64);
	g_mutex_lock(&p->lock);
	p->st.chunks = p->order->len;
	p->planning = false;
	g_mutex_unlock(&p->lock);
	while (!g_atomic_int_get(&p->stop)) {
		unsigned int looked = 0, kept = 0, k;

		for (k = 0; k < p->order->len && !g_atomic_int_get(&p->stop); k++) {
			uint64_t i = g_array_index(p->order, uint64_t, k);
			struct chunk *c = g_hash_table_lookup(p->chunks, &i);

			looked += copy_chunk(p, c, ctx, buf);
			if (!chunk_done(p, c))	/* a chunk read whole is not looked at again */
				g_array_index(p->order, uint64_t, kept++) = i;
		}
		for (; k < p->order->len; k++)
			g_array_index(p->order, uint64_t, kept++) = g_array_index(p->order, uint64_t, k);
		g_array_set_size(p->order, kept);
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
		g_mutex_unlock(&p->lock);
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
	g_hash_table_destroy(p->chunks);
	g_array_free(p->order, TRUE);
	g_mutex_clear(&p->lock);
	g_free(p);
}
