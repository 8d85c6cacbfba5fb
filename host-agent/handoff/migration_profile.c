// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The migration profile from a VM's MTM state (source) and back into a
 * fresh one (destination), with the placement plan the profile implies.
 */
#include <errno.h>
#include <string.h>

#include "migration_profile.h"

/* The largest power of two that divides @bytes, as a shift (chunk sizes are 2 MiB multiples). */
static unsigned int shift_of(uint64_t bytes)
{
	unsigned int s = 0;

	while (s < 63 && !(bytes & (1ull << s)))
		s++;
	return s;
}

/* What the profile says of one of its chunks, summed over the MTM chunks it covers. */
struct chunk_sum {
	double ema_bytes;
	uint64_t bytes;
	uint64_t tier_bytes[VTIER_PROFILE_TIERS_MAX];
	uint32_t cold;
	unsigned int size_class;
};

static unsigned int size_class(const struct vt_profile_source *src, const struct vt_mtm_chunk *c)
{
	for (unsigned int t = 0; t < src->n_tiers; t++)
		if (src->tiers[t].kind == VTIER_PROFILE_TIER_COMPRESSED && ((c->refused >> t) & 1))
			return VTIER_PROFILE_SIZE_INCOMPRESSIBLE;
	if (c->tier >= 0 && (unsigned int)c->tier < src->n_tiers &&
	    src->tiers[c->tier].kind == VTIER_PROFILE_TIER_COMPRESSED && src->ratio &&
	    src->ratio[c->tier] >= 1) {
		unsigned int eighths = (unsigned int)(8.0 / src->ratio[c->tier] + 0.999);

		return CLAMP(eighths, 1u, VTIER_PROFILE_SIZE_EIGHTHS);
	}
	return VTIER_PROFILE_SIZE_UNKNOWN;
}

int vt_migration_profile_write(const struct vt_profile_source *src, uint8_t **out, size_t *len)
{
	const struct vt_mtm *m = src->mtm;
	unsigned int shift, min_shift = MIN(shift_of(m->chunk_bytes), VTIER_PROFILE_SHIFT_MAX);
	uint64_t chunk;
	uint32_t n;
	uint8_t *buf;
	int ret;

	shift = vt_profile_shift_for(src->size, src->n_tiers, min_shift);
	if (!shift)
		return -EINVAL;
	*len = vt_profile_v2_bytes(src->size, src->n_tiers, shift);
	buf = g_malloc(*len);
	ret = vt_profile_v2_init(buf, src->size, shift, src->tiers, src->n_tiers, src->windows);
	if (ret) {
		g_free(buf);
		return ret;
	}
	chunk = 1ull << shift;
	n = (uint32_t)((src->size + chunk - 1) / chunk);
	for (uint32_t j = 0; j < n; j++) {
		uint64_t s = src->hva + j * chunk, e = src->hva + MIN((j + 1) * chunk, src->size);
		struct chunk_sum sum = { .cold = UINT32_MAX };
		struct vt_profile_chunk pc = { .tier = -1 };
		int i = vt_mtm_chunk_at(m, s);
		uint64_t best = 0;

		for (; i >= 0 && (unsigned int)i < m->chunks->len; i++) {
			const struct vt_mtm_chunk *c =
				&g_array_index(m->chunks, struct vt_mtm_chunk, (unsigned int)i);
			uint64_t lo = MAX(s, c->start), hi = MIN(e, c->end);

			if (c->start >= e)
				break;
			if (hi <= lo)
				continue;
			sum.bytes += hi - lo;
			sum.ema_bytes += c->ema * (double)(hi - lo);
			if (c->tier >= 0 && (unsigned int)c->tier < src->n_tiers)
				sum.tier_bytes[c->tier] += hi - lo;
			sum.cold = MIN(sum.cold, vt_mtm_cold_windows(m, c));
			sum.size_class = MAX(sum.size_class, size_class(src, c));
		}
		if (!sum.bytes)
			continue;	/* not in the MTM state (not RAM it profiles): no hint */
		pc.ema = sum.ema_bytes / (double)sum.bytes;
		pc.cold_windows = sum.cold;
		pc.size_class = sum.size_class;
		for (unsigned int t = 0; t < src->n_tiers; t++)
			if (sum.tier_bytes[t] > best) {
				best = sum.tier_bytes[t];
				pc.tier = (int)t;
			}
		vt_profile_v2_set(buf, j, &pc);
	}
	*out = buf;
	return 0;
}

void vt_migration_profile_map_tiers(const struct vt_profile *p, const struct vt_profile_tier *ours,
				    unsigned int n_ours, int *map)
{
	for (unsigned int t = 0; t < p->n_tiers; t++) {
		const struct vt_profile_tier *pt = &p->tiers[t];
		unsigned int rank = 0, seen = 0;
		int last = -1, slowest_numa = -1;

		map[t] = -1;
		for (unsigned int u = 0; u < n_ours && map[t] < 0; u++)
			if (ours[u].kind == pt->kind &&
			    strncmp(ours[u].name, pt->name, VTIER_PROFILE_TIER_NAME_LEN - 1) == 0)
				map[t] = (int)u;
		if (map[t] >= 0)
			continue;
		for (unsigned int k = 0; k < t; k++)
			rank += p->tiers[k].kind == pt->kind;
		for (unsigned int u = 0; u < n_ours; u++) {
			if (ours[u].kind == VTIER_PROFILE_TIER_NUMA)
				slowest_numa = (int)u;
			if (ours[u].kind != pt->kind)
				continue;
			last = (int)u;
			if (seen++ == rank)
				map[t] = (int)u;
		}
		if (map[t] < 0)
			map[t] = last >= 0 ? last : pt->kind == VTIER_PROFILE_TIER_COMPRESSED ?
				 slowest_numa : -1;
	}
}

unsigned int vt_migration_profile_seed(struct vt_mtm *m, uint64_t hva, const struct vt_profile *p,
				       const int *map, unsigned int first_ctier, GArray *plan)
{
	uint32_t ctiers = 0;
	unsigned int seeded = 0;

	for (unsigned int t = first_ctier; t < m->nr_tiers && t < 32; t++)
		ctiers |= 1U << t;
	for (unsigned int i = 0; i < m->chunks->len; i++) {
		const struct vt_mtm_chunk *c = &g_array_index(m->chunks, struct vt_mtm_chunk, i);
		uint64_t tier_bytes[VTIER_PROFILE_TIERS_MAX + 1] = { 0 };
		uint64_t lo, hi, bytes = 0, best = 0;
		double ema_bytes = 0;
		uint32_t cold = UINT32_MAX, refused = 0;
		int tier = -1;

		if (c->end <= hva || c->start >= hva + p->size_bytes)
			continue;
		lo = MAX(c->start, hva) - hva;
		hi = MIN(c->end, hva + p->size_bytes) - hva;
		for (uint64_t j = lo >> p->chunk_shift; j < p->n_chunks && (j << p->chunk_shift) < hi;
		     j++) {
			uint64_t s = MAX(lo, j << p->chunk_shift);
			uint64_t e = MIN(hi, (j + 1) << p->chunk_shift);
			struct vt_profile_chunk pc;

			vt_profile_chunk(p, (uint32_t)j, &pc);
			bytes += e - s;
			ema_bytes += pc.ema * (double)(e - s);
			cold = MIN(cold, pc.cold_windows);
			if (pc.size_class == VTIER_PROFILE_SIZE_INCOMPRESSIBLE)
				refused = ctiers;
			if (pc.tier >= 0)
				tier_bytes[pc.tier] += e - s;
		}
		if (!bytes)
			continue;
		vt_mtm_seed(m, i, ema_bytes / (double)bytes, cold, refused);
		seeded++;
		for (unsigned int t = 0; t < p->n_tiers; t++)
			if (tier_bytes[t] > best) {
				best = tier_bytes[t];
				tier = map[t];
			}
		/* tier 0 is MTM's to fill, within the destination's allowance: the EMA says who */
		if (tier > 0 && (unsigned int)tier < m->nr_tiers && !((refused >> tier) & 1))
			g_array_append_val(plan, ((struct vt_seed_order){ i, tier }));
	}
	return seeded;
}

unsigned int vt_migration_profile_place(struct vt_mtm *m, GArray *plan, uint32_t allowed,
					uint64_t *room, GArray *orders,
					struct vt_mtm_window_stats *ws)
{
	unsigned int kept = 0, added = 0;

	vt_mtm_mark_ordered(m, orders);
	for (unsigned int k = 0; k < plan->len; k++) {
		struct vt_seed_order so = g_array_index(plan, struct vt_seed_order, k);
		const struct vt_mtm_chunk *c;
		uint64_t len;

		if (so.chunk >= m->chunks->len)
			continue;
		c = &g_array_index(m->chunks, struct vt_mtm_chunk, so.chunk);
		len = c->end - c->start;
		/* there, nothing of it present, or the tier did not take it: done */
		if (c->tier == so.tier || c->tier < 0 || ((c->refused >> so.tier) & 1))
			continue;
		g_array_index(plan, struct vt_seed_order, kept++) = so;
		if (vt_mtm_ordered(m, so.chunk) || c->sent_to >= 0 || !((allowed >> so.tier) & 1) ||
		    room[so.tier] < len)
			continue;
		g_array_append_val(orders, ((struct vt_mtm_order){
			.chunk = so.chunk, .from_tier = c->tier, .to_tier = so.tier,
			.promote = so.tier < c->tier, .bulk = true }));
		room[so.tier] -= len;
		added++;
		if (so.tier < c->tier)
			ws->promote_bytes += len;
		else
			ws->demote_bytes += len;
	}
	g_array_set_size(plan, kept);
	return added;
}

unsigned int vt_migration_profile_at_handoff(const struct vt_mtm *m, const GArray *plan,
					     unsigned int from, unsigned int first_ctier,
					     uint32_t allowed, uint64_t start, uint64_t end,
					     uint64_t *room, GArray *out)
{
	unsigned int n = 0;

	for (unsigned int k = from; k < plan->len; k++) {
		struct vt_seed_order so = g_array_index(plan, struct vt_seed_order, k);
		const struct vt_mtm_chunk *c;

		if (so.chunk >= m->chunks->len || so.tier < (int)first_ctier ||
		    (unsigned int)so.tier >= m->nr_tiers || so.tier >= 32 ||
		    !((allowed >> so.tier) & 1))
			continue;
		c = &g_array_index(m->chunks, struct vt_mtm_chunk, so.chunk);
		if (c->start < start || c->end > end || room[so.tier] < c->end - c->start)
			continue;
		room[so.tier] -= c->end - c->start;
		g_array_append_val(out, ((struct vt_mtm_order){
			.chunk = so.chunk, .from_tier = -1, .to_tier = so.tier, .bulk = true }));
		n++;
	}
	return n;
}

unsigned int vt_migration_keep_plan(const struct vt_mtm *m, unsigned int first_ctier,
				    GArray *keep)
{
	g_array_set_size(keep, 0);
	for (unsigned int i = 0; i < m->chunks->len; i++) {
		const struct vt_mtm_chunk *c = &g_array_index(m->chunks, struct vt_mtm_chunk, i);

		if (c->tier >= (int)first_ctier && c->ema < VT_MTM_COLD)
			g_array_append_val(keep, ((struct vt_seed_order){ i, c->tier }));
	}
	return keep->len;
}

unsigned int vt_migration_reevict(struct vt_mtm *m, GArray *keep, uint64_t budget,
				  uint64_t *room, GArray *orders, struct vt_mtm_window_stats *ws)
{
	unsigned int kept = 0, added = 0;
	uint64_t used = 0;

	vt_mtm_mark_ordered(m, orders);
	for (unsigned int k = 0; k < keep->len; k++) {
		struct vt_seed_order so = g_array_index(keep, struct vt_seed_order, k);
		const struct vt_mtm_chunk *c;
		uint64_t len;

		if (so.chunk >= m->chunks->len)
			continue;
		c = &g_array_index(m->chunks, struct vt_mtm_chunk, so.chunk);
		if (c->ema >= VT_MTM_COLD)
			continue;	/* the guest uses it: MTM's from now on */
		g_array_index(keep, struct vt_seed_order, kept++) = so;
		len = c->end - c->start;
		if (!c->samples[0] || vt_mtm_ordered(m, so.chunk) || c->sent_to >= 0 ||
		    ((c->refused >> so.tier) & 1) || used + len > budget || room[so.tier] < len)
			continue;
		g_array_append_val(orders, ((struct vt_mtm_order){
			.chunk = so.chunk, .from_tier = 0, .to_tier = so.tier, .promote = false }));
		room[so.tier] -= len;
		used += len;
		added++;
		ws->demote_bytes += len;
	}
	g_array_set_size(keep, kept);
	return added;
}
