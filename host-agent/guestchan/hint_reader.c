// SPDX-License-Identifier: GPL-2.0-or-later
/* A VM's guest hint reader: see hint_reader.h and docs/abi-guest.md. */
#include "hint_reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"

#define MAX_RAM_PIECES 64

struct vt_hint_reader {
	struct vt_ghint_chan *ch;
	size_t region_bytes;
	/*
	 * Records read whose ack waits: a discard of theirs is queued and not
	 * done. While set, nothing more is read and nothing is acknowledged.
	 */
	bool unacked;
	const struct vt_hint_env *env;	/* during a window: for the contradiction check */
	/*
	 * Per chunk of env->mtm, bit u: accepted COLD hints covered its u-th
	 * 64th, until the chunk ages or is seen hot. A range the guest reports
	 * again (it walks its frames each poll) covers nothing more.
	 */
	uint64_t *cold_units;
	unsigned int n_cold;
	const struct vt_mtm *cold_mtm;
	struct vt_hint_stats st;
	struct vt_ghint out[VT_HINT_BATCH];
};

/* The map piece holding [@gpa, +@len) (the channel checked it is inside one), or NULL. */
static const struct vt_hint_map *piece_of(const struct vt_hint_env *env, uint64_t gpa,
					  uint64_t len)
{
	for (size_t i = 0; i < env->n_map; i++) {
		const struct vt_hint_map *m = &env->map[i];

		if (gpa >= m->gpa && len <= m->len && gpa - m->gpa <= m->len - len)
			return m;
	}
	return NULL;
}

/* Index of the first chunk that ends after @hva (chunks sorted, not overlapping). */
static unsigned int first_chunk(const struct vt_mtm *m, uint64_t hva)
{
	unsigned int lo = 0, hi = m->chunks->len;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (g_array_index(m->chunks, struct vt_mtm_chunk, mid).end <= hva)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Each chunk @c (index @i) of @m that overlaps [@from, @to). */
#define for_each_chunk_in(m, i, c, from, to)						\
	for (i = first_chunk(m, from);							\
	     i < (m)->chunks->len &&							\
	     ((c) = &g_array_index((m)->chunks, struct vt_mtm_chunk, i))->start < (to);	\
	     i++)

/* The channel asks for each COLD record that passed its checks: does the host see it hot? */
static bool contradicts(void *opaque, const struct vt_ghint *h)
{
	struct vt_hint_reader *r = opaque;
	const struct vt_hint_env *env = r->env;
	const struct vt_hint_map *m;
	struct vt_mtm_chunk *c;
	uint64_t hva;
	unsigned int i;

	if (h->kind != VTIER_GUEST_COLD || !env || !env->mtm)
		return false;
	m = piece_of(env, h->gpa, h->size_bytes);
	if (!m)
		return false;
	hva = m->hva + (h->gpa - m->gpa);
	for_each_chunk_in(env->mtm, i, c, hva, hva + h->size_bytes)
		if (c->ema >= env->hot_threshold)
			return true;
	return false;
}

int vt_hint_reader_open(struct vt_hint_reader **out, int fd, size_t size,
			const struct vt_hint_map *map, size_t n_map,
			const struct vt_ghint_limits *lim, uint64_t now_ns, char *err, size_t err_len)
{
	struct vt_ghint_ram ram[MAX_RAM_PIECES];
	struct vt_hint_reader *r;
	int ret;

	*out = NULL;
	if (n_map > MAX_RAM_PIECES)
		return vt_err_set(-EINVAL, err, err_len, "guest RAM in %zu pieces: at most %d",
				  n_map, MAX_RAM_PIECES);
	for (size_t i = 0; i < n_map; i++)
		ram[i] = (struct vt_ghint_ram){ map[i].gpa, map[i].len };
	r = calloc(1, sizeof(*r));
	if (!r)
		return vt_err_set(-ENOMEM, err, err_len, "out of memory");
	ret = vt_ghint_attach(&r->ch, fd, size, ram, n_map, lim,
			      VTIER_GUEST_HOST_FREE | VTIER_GUEST_HOST_COLD | VTIER_GUEST_HOST_RECLAIM,
			      now_ns, err, err_len);
	if (ret) {
		free(r);
		return ret;
	}
	vt_ghint_set_contradicts(r->ch, contradicts, r);
	r->region_bytes = size;
	*out = r;
	return 0;
}

/* FREE or INFLATE: discard the range now or queue it; the ack waits for a queued one. */
static void act_discard(struct vt_hint_reader *r, const struct vt_hint_env *env,
			const struct vt_ghint *h)
{
	const struct vt_hint_map *m = piece_of(env, h->gpa, h->size_bytes);
	int ret;

	if (!env->act) {
		r->st.observe_discard_bytes += h->size_bytes;
		return;
	}
	r->st.discard_bytes += h->size_bytes;
	ret = m ? env->discard(env->opaque, m->hva + (h->gpa - m->gpa), h->size_bytes) : -ERANGE;
	if (ret == 1)
		r->unacked = true;
	else if (ret < 0)
		r->st.discard_failed++;	/* not discarded: acknowledging it is still safe */
}

#define COLD_UNITS 64

/* The 64ths of @c that [@s, @e) (inside @c) covers whole, as bits. */
static uint64_t units_covered(const struct vt_mtm_chunk *c, uint64_t s, uint64_t e)
{
	uint64_t len = c->end - c->start, unit = (len + COLD_UNITS - 1) / COLD_UNITS;
	uint64_t first = (s - c->start + unit - 1) / unit;
	uint64_t last = e == c->end ? COLD_UNITS : (e - c->start) / unit;

	if (first >= last)
		return 0;
	return (last - first == COLD_UNITS ? UINT64_MAX : ((1ull << (last - first)) - 1)) << first;
}

/* COLD: mark the parts of each chunk of the range it covers. */
static void note_cold(struct vt_hint_reader *r, const struct vt_hint_env *env,
		      const struct vt_ghint *h)
{
	const struct vt_hint_map *m = piece_of(env, h->gpa, h->size_bytes);
	struct vt_mtm_chunk *c;
	uint64_t hva;
	unsigned int i;

	r->st.cold_hint_bytes += h->size_bytes;
	if (!m || !r->cold_units)
		return;
	hva = m->hva + (h->gpa - m->gpa);
	for_each_chunk_in(env->mtm, i, c, hva, hva + h->size_bytes)
		r->cold_units[i] |= units_covered(c, MAX(c->start, hva),
						  MIN(c->end, hva + h->size_bytes));
}

/*
 * Chunks the guest's COLD hints cover at least half of, and that the host
 * does not see hot, are due for the waterfall now instead of after
 * cold_age windows of telemetry: demoted earlier, never promoted. A chunk
 * already that old is left as it is (and not counted).
 */
static void age_cold_chunks(struct vt_hint_reader *r, const struct vt_hint_env *env)
{
	for (unsigned int i = 0; r->cold_units && i < r->n_cold; i++) {
		struct vt_mtm_chunk *c = &g_array_index(env->mtm->chunks, struct vt_mtm_chunk, i);
		uint32_t age;

		if (!r->cold_units[i])
			continue;
		if (c->ema >= env->hot_threshold) {
			r->cold_units[i] = 0;	/* the host sees it hot: the hint is void */
			continue;
		}
		if (__builtin_popcountll(r->cold_units[i]) * 2 < COLD_UNITS)
			continue;
		r->cold_units[i] = 0;
		age = vt_mtm_cold_windows(env->mtm, c);
		if (c->tier >= 0 && age < env->cold_age) {
			c->cold_windows += env->cold_age - age;	/* an idle chunk's age counts on */
			r->st.cold_chunks++;
		}
	}
}

/* The per-chunk COLD tally follows the placement's chunks (rebuilt on a RAM or chunk change). */
static void cold_track(struct vt_hint_reader *r, const struct vt_hint_env *env)
{
	unsigned int n = env->mtm ? env->mtm->chunks->len : 0;

	if (env->mtm == r->cold_mtm && n == r->n_cold)
		return;
	free(r->cold_units);
	r->cold_units = n ? calloc(n, sizeof(*r->cold_units)) : NULL;
	r->n_cold = r->cold_units ? n : 0;
	r->cold_mtm = env->mtm;
}

void vt_hint_reader_window(struct vt_hint_reader *r, const struct vt_hint_env *env)
{
	uint64_t t0 = env->cpu_ns(), spent = 0;

	r->st.windows_attached++;
	if (r->unacked) {
		if (env->pending(env->opaque)) {
			r->st.ack_waits++;	/* the guest waits a window more */
			goto out;
		}
		vt_ghint_commit(r->ch);
		r->unacked = false;
	}
	cold_track(r, env);
	r->env = env;
	for (int p = 0; p < VT_HINT_POLLS_PER_WINDOW; p++) {
		uint64_t before = vt_ghint_stats(r->ch)->records;
		size_t n = vt_ghint_poll(r->ch, r->out, VT_HINT_BATCH, env->now_ns);

		r->st.polls++;
		for (size_t i = 0; i < n; i++) {
			const struct vt_ghint *h = &r->out[i];

			if (h->kind == VTIER_GUEST_FREE || h->kind == VTIER_GUEST_INFLATE)
				act_discard(r, env, h);
			else if (h->kind == VTIER_GUEST_COLD)
				note_cold(r, env, h);
		}
		if (vt_ghint_stats(r->ch)->records - before < VT_HINT_BATCH)
			break;		/* the ring is empty, or a cap held the rest back */
		spent = env->cpu_ns() - t0;
		if (spent >= env->cpu_budget_ns) {
			r->st.cpu_capped++;
			break;
		}
	}
	r->env = NULL;
	if (env->mtm)
		age_cold_chunks(r, env);
	if (!r->unacked)
		vt_ghint_commit(r->ch);
out:
	spent = env->cpu_ns() - t0;
	r->st.cpu_ns_last = spent;
	r->st.cpu_ns += spent;
}

bool vt_hint_reader_try_ack(struct vt_hint_reader *r, const struct vt_hint_env *env)
{
	if (r->unacked && !env->pending(env->opaque)) {
		vt_ghint_commit(r->ch);
		r->unacked = false;
	}
	return !r->unacked;
}

void vt_hint_reader_set_balloon(struct vt_hint_reader *r, uint64_t bytes)
{
	r->st.balloon_target_bytes = bytes / VTIER_GUEST_PAGE_SIZE * VTIER_GUEST_PAGE_SIZE;
	vt_ghint_set_balloon_target(r->ch, bytes / VTIER_GUEST_PAGE_SIZE);
}

void vt_hint_reader_close(struct vt_hint_reader *r, const struct vt_hint_env *env)
{
	if (!r)
		return;
	/* nothing may be discarded once the guest has its ack */
	if (r->unacked && env && env->cancel)
		env->cancel(env->opaque);
	vt_ghint_detach(r->ch);
	free(r->cold_units);
	free(r);
}

int vt_hint_reader_error(const struct vt_hint_reader *r, char *err, size_t err_len)
{
	return vt_ghint_error(r->ch, err, err_len);
}

void vt_hint_reader_stats(const struct vt_hint_reader *r, struct vt_hint_stats *out)
{
	*out = r->st;
	out->attached = true;
	out->region_bytes = r->region_bytes;
	out->ch = *vt_ghint_stats(r->ch);
}
