// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Telescope (Nair et al., USENIX ATC'24): DAMON-style regions, but every sample
 * tests the accessed bit of the highest page-table entry that fits the region
 * (bounded) or overshoots it by less than a per-level error (flex), so one
 * test covers up to 512 GiB.
 *
 * Splits follow the page table (Telescope's rule). A region seen accessed is
 * cut along the entries of the level below the one it is sampled at; a scan of
 * those entries, testing only entries wholly inside the region, tells which are
 * young, and the region is cut at every young/old change. The first and last
 * entry of every young run become regions of their own, because the edge of
 * the hot data may lie inside them; their children are cleared right away so
 * that the next window's scan of them measures that window alone. So each
 * window the edges of hot data descend one level: a 10 GiB hot range in 5 TiB
 * is found to the PMD in about as many windows as the table has levels, and to
 * the page one window later. At the leaf level the young entries of 5 ms are
 * too sparse to cut runs by, so only the span from the first to the last young
 * leaf is kept.
 *
 * Regions whose accesses were stable for a while, and leaf-level edges a cut
 * found exact, are re-examined every fourth window only; fresh regions (made
 * by the last split) do not merge before they were sampled for one window as
 * themselves.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "cover.h"
#include "region.h"

#define TELESCOPE_MAX_SPLIT_ENTRIES 4096
#define TELESCOPE_STABLE_AGE 8
#define TELESCOPE_STABLE_PERIOD 4
#define TELESCOPE_EDGE_PAGES 4
#define TELESCOPE_TEXTURE_RUNS 16
#define TELESCOPE_SWEEP_STRIDE 8
#define TELESCOPE_SWEEP_WHOLE_PMDS 4096
#define TELESCOPE_TEXTURE_MEAN 8
#define TELESCOPE_COLD_CHECKS 16

struct telescope {
	bool flex;
	GArray *regions;
	GArray *next;		/* scratch for splits */
	GArray *young;		/* uint64_t entry starts found by a split scan */
	GArray *runs;		/* struct vt_cover_span: young runs found by the sweep */
	GArray *probes;		/* struct vt_probe: the sweep's batch */
	struct vt_sampler sampler;
	uint64_t total;
	uint64_t split_checks;	/* checks spent on splits in the last window */
	bool absorb;		/* the split was near the cap: cold pieces join after the sweep */
	unsigned int joining;	/* cold pieces the split counted as joined */
};

static inline struct telescope *to_tel(struct vt_profiler *p)
{
	return p->priv;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/* Highest level with at least one whole entry in [start, end); how many. */
static unsigned int fit_level(const struct vt_access_source *src, uint64_t start, uint64_t end,
			      uint64_t *nr_full)
{
	for (unsigned int l = vt_top_level(src); l > src->leaf_level; l--) {
		uint64_t size = vt_level_size(l);
		uint64_t lo = align_up(start, size), hi = vt_entry_start(end, l);

		if (lo < hi && lo >= start) {
			*nr_full = (hi - lo) / size;
			return l;
		}
	}
	*nr_full = (vt_entry_start(end, src->leaf_level) - align_up(start, vt_level_size(src->leaf_level))) /
		   vt_level_size(src->leaf_level);
	return src->leaf_level;
}

struct pick_arg {
	const struct vt_profiler *p;
	bool flex;
};

/*
 * The level to sample at *@addr in @r: the highest whose entry fits (bounded)
 * or overshoots by less than the level's error (flex). A resolved region
 * (edges exact to the page, checked every window by check_edges()) with one
 * whole entry at the highest level that fits is sampled through that entry
 * only: *@addr moves into it. The sampler's check has just cleared it, so
 * each interval costs one check instead of a check and a clear of another
 * entry: 200 ranges of 4 MiB, each one PMD and two page-level ends, cost
 * ~70 checks a window each before, 40 now.
 *
 * A piece a split scan has just found cold (fresh, not warm) samples bounded
 * in its first window: nothing inside it was young, so an entry overshooting
 * it could only read the hot neighbour it was cut from, and it read hot
 * until the next scan (the 958 MiB beside huge-2m's 64 MiB range did, P
 * 0.74 for a window). Afterwards it is swept, or sampled as flex again.
 *
 * Nor does a lukewarm region (texture) overshoot: memory touched thinly
 * everywhere sets the bit of every entry above it, so the overshooting entry
 * read it young in every probe. vm-lukewarm's 6 MiB of thin kernel memory,
 * kept as pieces of 1.8-2 MiB, read hot at accesses 1.000 (18-36 region-windows
 * of 30 windows a seed, bounded's and flex's runs together, at seeds 1-10),
 * and flex settled in 8-15 windows, or never, at eight of the ten seeds.
 */
static unsigned int telescope_pick(const struct vt_region *r, uint64_t *addr, void *arg)
{
	const struct pick_arg *a = arg;
	const struct vt_access_source *src = a->p->src;
	uint64_t nr_full;
	unsigned int fit;

	if (r->fine)
		return src->leaf_level;
	if (r->resolved) {
		fit = fit_level(src, r->start, r->end, &nr_full);
		if (fit > src->leaf_level && nr_full == 1) {
			*addr = align_up(r->start, vt_level_size(fit));
			return fit;
		}
	}
	for (unsigned int l = vt_top_level(src); l > src->leaf_level; l--) {
		uint64_t size = vt_level_size(l), e = vt_entry_start(*addr, l);
		uint64_t lo = MAX(e, r->start), hi = MIN(e + size, r->end);
		double overshoot = 1.0 - (double)(hi - lo) / (double)size;

		if (e >= r->start && e + size <= r->end)
			return l;
		if (a->flex && !r->bounded_only && !r->texture && (r->warm || !r->fresh) &&
		    overshoot <= a->p->attrs.flex_error[l])
			return l;
	}
	return src->leaf_level;
}

static void collect_young(uint64_t entry_start, unsigned int level, void *arg)
{
	(void)level;
	g_array_append_val((GArray *)arg, entry_start);
}

/* Clear the children of a region that is one whole entry, for next window's scan. */
static void preclear_children(struct vt_profiler *p, const struct vt_region *r)
{
	uint64_t nr_full;
	unsigned int l = fit_level(p->src, r->start, r->end, &nr_full);

	if (nr_full == 1 && l > p->src->leaf_level)
		vt_source_scan(p->src, r->start, r->end, l - 1, l - 1, NULL, NULL);
}

/*
 * Clear the entries one level below the highest of @r, a young run the sweep
 * found, when there are at most TELESCOPE_MAX_SPLIT_ENTRIES of them and they
 * are above the leaf: the next window's split scans them (not the run's own
 * entries, which the sweep has just read young), so a run of a few PUDs is cut
 * along its PMDs one window after it was found instead of three (a PUD scan,
 * a cut at every PUD, then their PMD scans). Islands that moved by GiBs were
 * found in 7 windows, now 3-5. A run whose level below is the leaf is left as
 * it is (its split scans its own level, or the leaf when it is one entry,
 * reading the bits the leaf collected since it was last scanned): clearing
 * its pages as well, as preclear_children() did, made vm-lukewarm's flex
 * settle in 13 windows instead of 3 after its move, measured, not explained.
 */
static void preclear_run(struct vt_profiler *p, struct vt_region *r)
{
	uint64_t nr_full;
	unsigned int l = fit_level(p->src, r->start, r->end, &nr_full);

	if (l > p->src->leaf_level + 1 &&
	    nr_full * (vt_level_size(l) / vt_level_size(l - 1)) <= TELESCOPE_MAX_SPLIT_ENTRIES &&
	    vt_source_scan(p->src, align_up(r->start, vt_level_size(l - 1)),
			   vt_entry_start(r->end, l - 1), l - 1, l - 1, NULL, NULL) >= 0)
		r->precleared = true;
}

static void push_piece(GArray *out, const struct vt_region *parent, uint64_t start, uint64_t end,
		       bool warm)
{
	struct vt_region piece = *parent;

	if (start >= end)
		return;
	piece.start = start;
	piece.end = end;
	piece.fresh = true;
	piece.warm = warm;
	piece.resolved = false;
	piece.swept = false;
	piece.nr_thin = 0;
	piece.fine = false;
	piece.cold_cut = false;
	piece.joined = false;
	piece.precleared = false;
	piece.nr_prepared = 0;
	for (unsigned int k = 0; k < parent->nr_prepared; k++)
		if (parent->prepared[k].addr >= start && parent->prepared[k].addr < end)
			piece.prepared[piece.nr_prepared++] = parent->prepared[k];
	g_array_append_val(out, piece);
}

/*
 * A piece of @parent where its split scan, at level @s, found nothing young.
 * Trusted to be cold (absorb_cold()) unless some of its entries were cleared
 * shortly before the scan, which then reads them old however hot they are:
 * at the leaf level in a resolved region, the pages inside its edges, just
 * tested by check_edges() (absorbed, they ate hot ranges from their edges,
 * four pages a window); and any entry the sampler checked at the window's
 * last interval and found old, which says only that it was not touched in
 * the last few ms.
 */
static void push_cold(struct vt_profiler *p, GArray *out, const struct vt_region *parent,
		      unsigned int s, uint64_t start, uint64_t end)
{
	bool trusted = s > p->src->leaf_level || !parent->resolved;

	if (start >= end)
		return;
	for (unsigned int k = 0; k < parent->nr_checked && trusted; k++)
		trusted = parent->checked[k].level != s || parent->checked[k].addr < start ||
			  parent->checked[k].addr >= end;
	push_piece(out, parent, start, end, false);
	g_array_index(out, struct vt_region, out->len - 1).cold_cut = trusted;
}

static unsigned int count_runs(GArray *young, uint64_t size)
{
	unsigned int runs = 0;

	for (unsigned int i = 0; i < young->len; i++)
		if (!i || g_array_index(young, uint64_t, i) != g_array_index(young, uint64_t, i - 1) + size)
			runs++;
	return runs;
}

/*
 * Lukewarm texture: at least TELESCOPE_TEXTURE_RUNS runs of young entries,
 * short on average, yet at least half of the span young: gaps as short and
 * as many as the runs. A hot set makes a few long runs; scattered small hot
 * ranges make many short runs far apart.
 */
static bool is_texture(GArray *young, uint64_t size)
{
	unsigned int runs = count_runs(young, size);
	uint64_t span, first, last;

	if (runs < TELESCOPE_TEXTURE_RUNS)
		return false;
	first = g_array_index(young, uint64_t, 0);
	last = g_array_index(young, uint64_t, young->len - 1) + size;
	span = (last - first) / size;
	return young->len <= TELESCOPE_TEXTURE_MEAN * runs && 4 * young->len >= span;
}

static void count_young(uint64_t entry_start, unsigned int level, void *arg)
{
	(void)entry_start;
	(void)level;
	(*(uint64_t *)arg)++;
}

/*
 * Many small hot ranges make the same scattered runs of young entries as
 * lukewarm memory, but their entries are young all through, not in a few
 * pages. So before a region is taken for lukewarm, the children of up to
 * VT_REGION_THIN_PROBES of its young level-@s entries, spread over them, are
 * cleared (thin_prepare(), into @piece, the region kept as it is) and tested
 * one window later (thin_below()): lukewarm when fewer than half of them
 * were young, by the scoring rule.
 */
static void thin_prepare(struct vt_profiler *p, GArray *young, unsigned int s,
			 struct vt_region *piece)
{
	unsigned int n = MIN(young->len, VT_REGION_THIN_PROBES);

	for (unsigned int k = 0; k < n; k++) {
		uint64_t e = g_array_index(young, uint64_t, (uint64_t)k * young->len / n);

		vt_source_scan(p->src, e, e + vt_level_size(s), s - 1, s - 1, NULL, NULL);
		piece->thin[k] = e;
	}
	piece->nr_thin = n;
	piece->thin_level = s;
}

static bool thin_below(struct vt_profiler *p, const struct vt_region *r)
{
	unsigned int s = r->thin_level;
	uint64_t size = vt_level_size(s), nr_young = 0, nr_children = 0;

	for (unsigned int k = 0; k < r->nr_thin; k++) {
		if (vt_source_scan(p->src, r->thin[k], r->thin[k] + size, s - 1, s - 1, count_young,
				   &nr_young) < 0)
			return false;
		nr_children += size / vt_level_size(s - 1);
	}
	return 2 * nr_young < nr_children;
}

/*
 * Is @r known lukewarm for a scan at level @s? Only at or below the level
 * whose entries were found scattered: above it they read hot all through,
 * and a region whose page-level edges were scattered (a hot island touched
 * ~5 times a page a second) is cut along its PMDs as usual, or, once the
 * island moved, the PMDs it left read hot in it for ever.
 */
static bool textured(const struct vt_region *r, unsigned int s)
{
	return r->texture && s <= r->texture_level;
}

/*
 * Append the piece [@start, @end) of a young run of @r found at level @s.
 * Each of its level-@s entries read young, but an entry reads young when any
 * page in it was touched: cold memory up to two entries long can lie between
 * two partly hot entries, unseen at this level, and a resolved neighbour would
 * carry it into a union that is not examined again. So, as the paper cuts a
 * region along the level below the one it is sampled at, a piece of several
 * entries whose children fit in one split scan is cut at every entry, each
 * with its children cleared, to be examined one level finer next window.
 * Larger pieces stay whole: what they can hide is two entries in many.
 * Returns whether the piece was cut.
 */
static bool push_run(struct vt_profiler *p, GArray *out, const struct vt_region *r,
		     unsigned int s, uint64_t start, uint64_t end, bool descend)
{
	uint64_t size = vt_level_size(s), lo = align_up(start, size), hi = vt_entry_start(end, s);
	uint64_t cut = start;

	if (!descend || s == p->src->leaf_level || hi <= lo || (hi - lo) / size < 2 ||
	    (hi - lo) / vt_level_size(s - 1) > TELESCOPE_MAX_SPLIT_ENTRIES) {
		push_piece(out, r, start, end, true);
		return false;
	}
	for (uint64_t e = lo + size; e <= hi; e += size) {
		uint64_t piece_end = e == hi ? end : e;

		push_piece(out, r, cut, piece_end, true);
		preclear_children(p, &g_array_index(out, struct vt_region, out->len - 1));
		cut = piece_end;
	}
	return true;
}

/*
 * Cut @r along the young runs found among its whole level-@s entries
 * [@lo, @hi) and append the pieces to @out. The partial ends of @r (finer than
 * level @s) go with the run next to them. The first and last entry of a young
 * run become pieces of their own where the run borders colder memory: an old
 * run inside @r, or a colder neighbour region (@left_colder, @right_colder).
 * With @descend (@r is new or changed), runs are cut finer (push_run()).
 * Without @peel (near the region cap), no edge entries are peeled: a young
 * run is one piece and its cold surround another, the two cuts that tell
 * most bytes; the edges descend once the regions are there. When all 150
 * islands of islands-moved moved at once, their edge pieces (four or five
 * regions an island) filled the cap, and the moved ends waited up to ten
 * windows for room.
 */
static void cut_runs(struct vt_profiler *p, const struct vt_region *r, unsigned int s,
		     uint64_t lo, uint64_t hi, GArray *young, bool left_colder, bool right_colder,
		     bool descend, bool peel, GArray *out)
{
	uint64_t size = vt_level_size(s);
	unsigned int before = out->len;
	uint64_t cut = r->start;	/* start of the piece being built */
	uint64_t edges[2 * TELESCOPE_MAX_SPLIT_ENTRIES];
	unsigned int nr_edges = 0;
	bool texture, leaf, thin, whole;

	leaf = s == p->src->leaf_level;
	/* at the leaf, the scan itself tells lukewarm (thin) from hot: in its young span */
	thin = leaf && 2 * young->len < (g_array_index(young, uint64_t, young->len - 1) + size -
					 g_array_index(young, uint64_t, 0)) / size;
	texture = leaf ? !thin && (textured(r, s) || is_texture(young, size)) :
		  textured(r, s) || (r->nr_thin && is_texture(young, size));
	if (texture && !leaf && !textured(r, s)) {
		texture = thin_below(p, r);
	} else if (!texture && !leaf && !r->nr_thin && is_texture(young, size)) {
		/* lukewarm or many small hot ranges: tell next window */
		g_array_append_val(out, *r);
		g_array_index(out, struct vt_region, before).warm = true;
		thin_prepare(p, young, s, &g_array_index(out, struct vt_region, before));
		return;
	}
	if (leaf || texture) {
		/*
		 * At the leaf, the young entries of one window are too sparse to
		 * cut runs by. Above it, young entries scattered all over and not
		 * in runs mean memory touched thinly everywhere (lukewarm): it
		 * reads hot at the level above and cold at this one, so cutting it
		 * finer would cost checks and report it cold. Either way, keep the
		 * span from the first to the last young entry, and descend no
		 * further; lukewarm memory that reads hot as it is sampled now is
		 * not even trimmed, or it would lose the level that resolves it.
		 * At the leaf, a young span of which fewer than half the pages
		 * were young is not kept whole nor resolved but sampled at the
		 * page (fine): through the entry above, or a flex overshoot, it
		 * would read up to 512 times hotter than it is (6 MiB of a real
		 * guest's kernel memory beside its hot set did).
		 */
		uint64_t first = g_array_index(young, uint64_t, 0);
		uint64_t last = g_array_index(young, uint64_t, young->len - 1) + size;
		unsigned int mid;

		whole = texture && r->accesses >= VT_REGION_HOT;
		if (first == lo || whole)
			first = r->start;
		if (last == hi || whole)
			last = r->end;
		if (first == r->start && last == r->end) {
			g_array_append_val(out, *r);
			mid = out->len - 1;
		} else {
			push_cold(p, out, r, s, r->start, first);
			mid = out->len;
			push_piece(out, r, first, last, true);
			push_cold(p, out, r, s, last, r->end);
		}
		g_array_index(out, struct vt_region, mid).warm = true;
		g_array_index(out, struct vt_region, mid).resolved = !texture && !thin &&
								     first == r->start && last == r->end;
		g_array_index(out, struct vt_region, mid).texture = texture;
		g_array_index(out, struct vt_region, mid).texture_level = s;
		g_array_index(out, struct vt_region, mid).nr_thin = 0;
		g_array_index(out, struct vt_region, mid).fine = thin;
		return;
	}
	for (unsigned int i = 0; i < young->len;) {
		uint64_t run_start = g_array_index(young, uint64_t, i);
		uint64_t run_end = run_start + size;
		bool peel_left = peel && (run_start > lo || left_colder);
		bool peel_right = run_end < hi || right_colder;
		unsigned int j = i + 1;

		while (j < young->len && g_array_index(young, uint64_t, j) == run_end) {
			run_end += size;
			j++;
		}
		peel_right = peel && (run_end < hi || right_colder);
		if (run_start > lo) {	/* the old run before this one */
			push_cold(p, out, r, s, cut, run_start);
			cut = run_start;
		}
		if (peel_left && run_end - run_start > size) {
			push_piece(out, r, cut, run_start + size, true);
			edges[nr_edges++] = cut;
			cut = run_start + size;
		}
		if (peel_right && run_end - size > cut) {
			push_run(p, out, r, s, cut, run_end - size, descend);
			cut = run_end - size;
		}
		{
			uint64_t end = run_end == hi ? r->end : run_end;

			if (!push_run(p, out, r, s, cut, end, descend) &&
			    (peel_right || (peel_left && run_end - run_start == size)))
				edges[nr_edges++] = cut;
			cut = end;
		}
		i = j;
	}
	push_cold(p, out, r, s, cut, r->end);
	if (out->len == before + 1) {
		/* one piece: r itself, nothing learnt but that it is warm */
		g_array_index(out, struct vt_region, before) = *r;
		g_array_index(out, struct vt_region, before).warm = true;
		g_array_index(out, struct vt_region, before).nr_thin = 0;
		return;
	}
	/* edge pieces: clear their children so that next window's scan is exact */
	for (unsigned int i = before; i < out->len; i++) {
		struct vt_region *piece = &g_array_index(out, struct vt_region, i);

		for (unsigned int e = 0; e < nr_edges; e++)
			if (edges[e] == piece->start)
				preclear_children(p, piece);
	}
}

static gint cmp_u64(gconstpointer a, gconstpointer b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The entries the sampler checked at the window's last interval were cleared
 * at the instant of the scan, which reads them old: take the sampler's result
 * for them. Returns whether any entry is young. A scan reports its entries in
 * address order, so the few checked ones are merged in rather than the whole
 * list sorted again (a sort of up to 4096 entries cost a tenth of the
 * profiler's instructions in islands-moved).
 */
static bool add_checked(const struct vt_region *r, unsigned int s, uint64_t lo, uint64_t hi,
			GArray *young)
{
	uint64_t add[VT_REGION_MAX_PROBES], *y;
	unsigned int n = young->len, m = 0, out = 0;
	bool sorted = true;

	for (unsigned int k = 0; k < r->nr_checked; k++) {
		uint64_t e = vt_entry_start(r->checked[k].addr, s);

		if (r->checked[k].level == s && r->checked[k].result == VT_BIT_YOUNG &&
		    e >= lo && e < hi) {
			unsigned int j = m++;

			for (; j > 0 && add[j - 1] > e; j--)
				add[j] = add[j - 1];
			add[j] = e;
		}
	}
	if (m == 0)
		return n > 0;
	y = (uint64_t *)(void *)young->data;
	for (unsigned int i = 1; i < n && sorted; i++)
		sorted = y[i - 1] <= y[i];
	g_array_set_size(young, n + m);
	y = (uint64_t *)(void *)young->data;
	if (sorted) {
		/* merge from the back: each slot is written after it was read */
		for (unsigned int i = n, j = m, o = n + m; j > 0;)
			y[--o] = i > 0 && y[i - 1] > add[j - 1] ? y[--i] : add[--j];
	} else {
		memcpy(y + n, add, m * sizeof(*add));
		g_array_sort(young, cmp_u64);
	}
	for (unsigned int i = 0; i < young->len; i++)
		if (!out || y[out - 1] != y[i])
			y[out++] = y[i];
	g_array_set_size(young, out);
	return out > 0;
}

/* Is @n, a neighbour of @r, adjacent and colder by more than @thr? */
static bool colder(const struct vt_region *r, const struct vt_region *n, double thr)
{
	if (!n || (n->end != r->start && n->start != r->end))
		return false;
	return n->accesses < r->accesses - thr;
}

/*
 * Does @r read hot only through flex samples that overshoot it, no scan
 * having seen anything young inside? Then it does not rest: the next split
 * scan tells (and falls back to bounded sampling if nothing is inside).
 * A cold piece beside a hot range, cut while the region cap held splits
 * back, read hot through its PMD until it aged into rest, and then for up
 * to TELESCOPE_STABLE_PERIOD windows more (scattered-200 with flex: P 0.88
 * for four windows).
 */
static bool overshot(const struct vt_profiler *p, const struct vt_region *r)
{
	uint64_t nr_full;

	return r->accesses >= VT_REGION_HOT && !r->warm &&
	       r->level > fit_level(p->src, r->start, r->end, &nr_full);
}

struct split_candidate {
	unsigned int idx;
	double priority;
};

static gint by_priority(gconstpointer a, gconstpointer b)
{
	double x = ((const struct split_candidate *)a)->priority;
	double y = ((const struct split_candidate *)b)->priority;

	return x > y ? -1 : x < y;
}

/*
 * Resolved edges are remembered, not re-found: instead of a scan of the
 * region, TELESCOPE_EDGE_PAGES leaves on each side of each edge it shares
 * with a neighbour where nothing was seen are tested every window (their
 * bits were cleared by the last window's test). The edge holds while some
 * leaf inside was young and none outside; otherwise it moved, and the region
 * is examined as usual. Fills @moved (one flag per region).
 */
static void check_edges(struct vt_profiler *p, bool *moved)
{
	struct telescope *t = to_tel(p);
	unsigned int leaf = p->src->leaf_level, n = t->regions->len;
	uint64_t page = vt_level_size(leaf);
	g_autoptr(GArray) probes = g_array_new(FALSE, FALSE, sizeof(struct vt_probe));
	/* probes of region i's side s: [first[2i + s], first[2i + s + 1]), inside/outside pairs */
	g_autofree unsigned int *first = g_new0(unsigned int, 2 * n + 1);

	for (unsigned int i = 0; i < n; i++) {
		const struct vt_region *r = &g_array_index(t->regions, struct vt_region, i);

		for (unsigned int side = 0; side < 2; side++) {
			const struct vt_region *nb = side ? (i + 1 < n ? r + 1 : NULL) : (i ? r - 1 : NULL);
			uint64_t edge = side ? r->end : r->start;

			first[2 * i + side] = probes->len;
			if (!r->resolved || !nb || (side ? nb->start : nb->end) != edge ||
			    vt_region_seen(nb))
				continue;
			for (unsigned int k = 0; k < TELESCOPE_EDGE_PAGES; k++) {
				struct vt_probe in = { .addr = side ? edge - (k + 1) * page : edge + k * page,
						       .level = (uint8_t)leaf };
				struct vt_probe out = { .addr = side ? edge + k * page : edge - (k + 1) * page,
							.level = (uint8_t)leaf };

				if (in.addr < r->start || in.addr >= r->end ||
				    out.addr < nb->start || out.addr >= nb->end)
					break;
				g_array_append_val(probes, in);
				g_array_append_val(probes, out);
			}
		}
	}
	first[2 * n] = probes->len;
	if (vt_source_batch(p->src, (struct vt_probe *)(void *)probes->data, probes->len) < 0)
		return;
	for (unsigned int g = 0; g < 2 * n; g++) {
		bool inside = false, outside = false;

		if (first[g] == first[g + 1])
			continue;
		for (unsigned int j = first[g]; j < first[g + 1]; j += 2) {
			inside |= g_array_index(probes, struct vt_probe, j).result == VT_BIT_YOUNG;
			outside |= g_array_index(probes, struct vt_probe, j + 1).result == VT_BIT_YOUNG;
		}
		moved[g / 2] |= !inside || outside;
	}
}

/*
 * May @nb, a region where nothing was seen that no split touches this window
 * end, take in a cold piece cut from its neighbour? Not by its size: the
 * split counts on the answer before @nb takes in a piece on its other side.
 */
static bool can_absorb(const struct vt_region *nb)
{
	return !vt_region_seen(nb) && !nb->cold_cut && !nb->waited && !nb->nr_thin &&
	       !nb->resolved;
}

/*
 * Near the region cap, a piece a split scan found cold joins the cold region
 * beside it at once instead of living a window as a region of its own. Each
 * of 200 hot ranges descending from a cold start was cut into a cold piece on
 * each side, edge pieces and a middle: five regions a range, and scattered-200
 * met the region cap in its third window, which held the descent back for
 * seven windows. Done after the sweep, which has read the neighbour's cover
 * for the window (a fresh piece is not swept): a union left to be primed by
 * the next sweep, like a merge's, was blind for the window in which it took
 * the piece in, and a cold region beside a range re-cut window after window
 * took in pieces window after window and saw nothing there
 * (test_touched_once_near_cap). The union's cover is cleared at once
 * instead (prime_joined()). Away from the
 * cap nothing changes: a union unswept for a window, and regrown at every
 * re-examination, cost multi-phase +27 % checks and moved-half a window to
 * settle.
 */
static void absorb_cold(GArray *regions)
{
	unsigned int out = 0;

	for (unsigned int i = 0; i < regions->len; i++) {
		struct vt_region *r = &g_array_index(regions, struct vt_region, i);
		struct vt_region *prev = out ? &g_array_index(regions, struct vt_region, out - 1) : NULL;
		struct vt_region *next = i + 1 < regions->len ? r + 1 : NULL;

		if (r->cold_cut && prev && prev->end == r->start && can_absorb(prev)) {
			prev->end = r->end;
			prev->swept = false;
			prev->joined = true;
			continue;
		}
		if (r->cold_cut && next && next->start == r->end && can_absorb(next)) {
			next->start = r->start;
			next->swept = false;
			next->joined = true;
			continue;
		}
		if (out != i)
			g_array_index(regions, struct vt_region, out) = *r;
		out++;
	}
	g_array_set_size(regions, out);
}

/*
 * Clear the covers of the regions that took in a cold piece (absorb_cold()),
 * in one batch, what they read thrown away: the next sweep trusts them.
 */
static void prime_joined(struct vt_profiler *p)
{
	struct telescope *t = to_tel(p);
	struct vt_cover_plan plan;
	bool ok;

	g_array_set_size(t->probes, 0);
	vt_for_each_region(r, t->regions)
		if (r->joined)
			vt_cover_plan(p->src, r->start, r->end, VT_LEVEL_PMD, 1, false, p->windows,
				      &plan, t->probes);
	/* failed: left unswept, the next sweep primes them */
	ok = !t->probes->len || vt_source_batch(p->src, (struct vt_probe *)(void *)t->probes->data,
						t->probes->len) >= 0;
	vt_for_each_region(r, t->regions) {
		if (r->joined)
			r->swept = ok;
		r->joined = false;
	}
}

/*
 * Merge the cold regions vt_regions_merge() left alone (VT_REGION_JOIN_SWEPT):
 * after the sweep, which has read the covers of their parts, as absorb_cold()
 * joins cold pieces; prime_joined() clears the union's cover at once.
 */
static void join_swept(struct vt_profiler *p)
{
	struct telescope *t = to_tel(p);
	uint64_t limit = MAX(t->total / p->attrs.min_regions, vt_level_size(p->src->leaf_level));
	unsigned int out = 0;

	for (unsigned int i = 0; i < t->regions->len; i++) {
		struct vt_region *r = &g_array_index(t->regions, struct vt_region, i);
		struct vt_region *prev = out ? &g_array_index(t->regions, struct vt_region, out - 1) : NULL;

		if (prev && prev->end == r->start && (prev->swept || r->swept) &&
		    !vt_region_seen(prev) && !vt_region_seen(r) && !prev->fresh && !r->fresh &&
		    !prev->waited && !r->waited && !prev->nr_thin && !r->nr_thin &&
		    !prev->cold_cut && !r->cold_cut &&
		    vt_region_size(prev) + vt_region_size(r) >= VT_REGION_JOIN_SWEPT &&
		    vt_region_size(prev) + vt_region_size(r) <= limit) {
			double ls = (double)vt_region_size(prev), rs = (double)vt_region_size(r);

			prev->age = (unsigned int)((prev->age * ls + r->age * rs) / (ls + rs));
			prev->end = r->end;
			prev->texture = false;
			prev->bounded_only |= r->bounded_only;
			prev->joined = true;
			continue;
		}
		if (out != i)
			g_array_index(t->regions, struct vt_region, out) = *r;
		out++;
	}
	g_array_set_size(t->regions, out);
}

/*
 * Re-cut the regions after a window. Candidates are regions where accesses
 * were seen; under a budget (half of it for splits) they are served in order
 * of need, as MTM shares its budget: most first where accesses moved most,
 * then edges descending (fresh pieces), then cuts above the leaf level; a
 * region put off gains a rank per window it waited. One split always happens.
 */
static void telescope_split(struct vt_profiler *p)
{
	double thr = p->attrs.merge_threshold;
	struct telescope *t = to_tel(p);
	unsigned int leaf = p->src->leaf_level, n = t->regions->len;
	uint64_t split_budget = p->attrs.budget_checks ? p->attrs.budget_checks / 2 : UINT64_MAX;
	uint64_t used0 = vt_source_checks_total(p->src);
	g_autofree unsigned int *first = g_new0(unsigned int, n);
	g_autofree unsigned int *count = g_new0(unsigned int, n);
	g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(struct split_candidate));
	g_autofree bool *moved = g_new0(bool, n);
	g_autofree bool *news = g_new0(bool, n);	/* fresh or changed */
	g_autofree bool *below = g_new0(bool, n);	/* scan one level below (preclear_run()) */
	unsigned int total = n, joining = 0, nr_changed = 0;
	bool absorb, upheaval;

	check_edges(p, moved);

	/*
	 * When an eighth of the regions or more changed at once (the hot data
	 * moved), lukewarm-edged regions do not rest either: their samples
	 * read the part that moved out only as a few percent less (an island
	 * of 880 MiB that moved 41 MiB read 0.95), and it read hot in them
	 * until their next re-examination, up to TELESCOPE_STABLE_PERIOD
	 * windows later.
	 */
	for (unsigned int i = 0; i < n; i++) {
		const struct vt_region *r = &g_array_index(t->regions, struct vt_region, i);

		nr_changed += vt_region_seen(r) &&
			      (fabs(r->accesses - r->last_accesses) > 2 * thr || moved[i]);
	}
	upheaval = 8 * nr_changed >= n;

	for (unsigned int i = 0; i < n; i++) {
		struct vt_region *r = &g_array_index(t->regions, struct vt_region, i);
		struct split_candidate c = { .idx = i };
		uint64_t nr_full;

		/*
		 * A stable region is re-examined at once when its samples move
		 * by more than twice the merge threshold (page-level pieces
		 * flicker by less), otherwise every TELESCOPE_STABLE_PERIOD
		 * windows. A resolved region, only when its samples move or its
		 * edges did (check_edges()): they are known to the page.
		 */
		bool changed = fabs(r->accesses - r->last_accesses) > 2 * thr || moved[i] ||
			       (!r->resolved && !r->fine && (r->accesses > 0) != (r->last_accesses > 0));

		bool rest = !changed && !r->nr_thin && !overshot(p, r) && !(upheaval && r->texture) &&
			    (r->resolved || (r->age >= TELESCOPE_STABLE_AGE &&
					     p->windows % TELESCOPE_STABLE_PERIOD));

		if (vt_region_seen(r) && !rest) {
			c.priority = fabs(r->accesses - r->last_accesses) + (r->fresh ? 0.5 : 0) +
				     (fit_level(p->src, r->start, r->end, &nr_full) > leaf ? 0.25 : 0) +
				     r->waited;
			g_array_append_val(order, c);
		}
		news[i] = changed || r->fresh;
		below[i] = r->fresh && r->warm && r->precleared;
		r->precleared = false;
		r->fresh = false;
	}
	g_array_sort(order, by_priority);
	/*
	 * a cut makes up to 4 regions more a candidate: near the cap, cold
	 * pieces join, and runs are cut without their edge entries (cut_runs())
	 */
	absorb = n + 4 * order->len > p->attrs.max_regions;
	g_array_set_size(t->next, 0);	/* collects the pieces */
	for (unsigned int k = 0; k < order->len; k++) {
		unsigned int i = g_array_index(order, struct split_candidate, k).idx;
		struct vt_region *r = &g_array_index(t->regions, struct vt_region, i);
		uint64_t nr_full, size, lo, hi, used = vt_source_checks_total(p->src) - used0;
		unsigned int l, s, runs, before = t->next->len;

		/*
		 * A cut of one young run needs room for 4 more regions, or it
		 * is dropped after its scan (below): this close to the cap,
		 * stop before scanning. At the cap, scanning and dropping every
		 * candidate cost scattered-200 ~400k checks in its first six
		 * windows (257k in its third).
		 */
		if (total + 5 > p->attrs.max_regions)
			break;
		l = fit_level(p->src, r->start, r->end, &nr_full);
		s = (nr_full >= 2 && !below[i]) || l == leaf ? l : l - 1;
		size = vt_level_size(s);
		lo = align_up(r->start, size);
		hi = vt_entry_start(r->end, s);
		if (hi <= lo || (s == leaf && (hi - lo) / size < 2))
			continue;
		if (used && used + (hi - lo) / size > split_budget) {
			r->waited++;
			continue;
		}
		r->waited = 0;
		if ((hi - lo) / size > TELESCOPE_MAX_SPLIT_ENTRIES) {
			/* too wide to scan in one window: halve it along level-s entries */
			uint64_t mid = vt_entry_start(lo + (hi - lo) / 2, s);

			push_piece(t->next, r, r->start, mid, r->warm);
			push_piece(t->next, r, mid, r->end, r->warm);
		} else {
			g_array_set_size(t->young, 0);
			if (vt_source_scan(p->src, lo, hi, s, s, collect_young, t->young) < 0 ||
			    !add_checked(r, s, lo, hi, t->young)) {
				/*
				 * Nothing young inside: what the samples saw was
				 * outside the region (a flex overshoot) or is gone.
				 */
				if (r->accesses > 0 && r->level > l)
					r->bounded_only = true;
				r->warm = false;
				r->resolved = false;
				continue;
			}
			runs = count_runs(t->young, size);
			if (total + 4 * runs + 1 > p->attrs.max_regions)
				continue;
			/* push_run() makes up to 2 x 8 pieces of a run (512 children an entry) */
			cut_runs(p, r, s, lo, hi, t->young,
				 colder(r, i ? r - 1 : NULL, thr),
				 colder(r, i + 1 < n ? r + 1 : NULL, thr),
				 news[i] && total + 20 * runs + 1 <= p->attrs.max_regions, !absorb,
				 t->next);
		}
		first[i] = before;
		count[i] = t->next->len - before;
		total += count[i] - 1;
		/* cold ends that join a cold neighbour (absorb_cold()) are no regions */
		if (absorb && count[i] > 1 &&
		    g_array_index(t->next, struct vt_region, before).cold_cut && i && can_absorb(r - 1)) {
			total--;
			joining++;
		}
		if (absorb && count[i] > 1 &&
		    g_array_index(t->next, struct vt_region, t->next->len - 1).cold_cut &&
		    i + 1 < n && can_absorb(r + 1)) {
			total--;
			joining++;
		}
	}
	/* assemble in address order */
	GArray *out = g_array_sized_new(FALSE, FALSE, sizeof(struct vt_region), total);
	for (unsigned int i = 0; i < n; i++) {
		if (count[i])
			g_array_append_vals(out, &g_array_index(t->next, struct vt_region, first[i]),
					    count[i]);
		else
			g_array_append_val(out, g_array_index(t->regions, struct vt_region, i));
	}
	/* the cold pieces join their neighbour after the sweep (absorb_cold()) */
	t->absorb = absorb;
	t->joining = joining;
	g_array_free(t->regions, TRUE);
	t->regions = out;
}

/* Will @r be swept with its cover primed (tested at the last window end)? */
static bool sweep_primed(const struct vt_region *r)
{
	return !vt_region_seen(r) && !r->fresh && !r->waited && r->swept;
}

/*
 * A cover whose highest level is the PMD (a cold region with no whole PUD:
 * a gap between hot ranges less than a GiB or two apart) is all PMDs tested
 * whole, up to 511 a region; with hundreds of hot ranges those are most of
 * the sweep (scattered-200: ~19k of its 29k checks a window). Whole tests
 * of them are shared out, smallest covers first, up to
 * TELESCOPE_SWEEP_WHOLE_PMDS a window; larger ones are tested at the stride
 * like partial spans: a run of TELESCOPE_SWEEP_STRIDE PMDs or more is still
 * seen at once, a smaller one within as many windows. Returns the largest
 * PMD count tested whole (all of them below the share, as in a VM of a few
 * GiB, whose footprint has at most 512 PMDs per GiB).
 */
static uint64_t sweep_whole_limit(struct vt_profiler *p)
{
	struct telescope *t = to_tel(p);
	g_autoptr(GArray) counts = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	uint64_t sum = 0, limit = 0;

	vt_for_each_region(r, t->regions) {
		uint64_t nr_full;

		if (sweep_primed(r) &&
		    fit_level(p->src, r->start, r->end, &nr_full) == VT_LEVEL_PMD)
			g_array_append_val(counts, nr_full);
	}
	g_array_sort(counts, cmp_u64);
	for (unsigned int i = 0; i < counts->len; i++) {
		uint64_t c = g_array_index(counts, uint64_t, i);

		if (sum + c > TELESCOPE_SWEEP_WHOLE_PMDS)
			return limit;
		sum += c;
		limit = c;
	}
	return UINT64_MAX;
}

/*
 * The cold sweep. Regions where nothing was seen are not sampled; at every
 * window end the accessed bits of their cover (cover.h) are tested instead,
 * which tells whether anything in them was touched during the window,
 * wherever it lies: a cold region's sample lands on new hot data with the
 * odds of its bytes, so a 128 MiB range appearing in a 60 GiB region waited
 * tens of windows. Young runs of the cover become regions of their own,
 * fresh and warm, sampled from the next interval and split as usual; a run
 * of up to 8 entries above the PMD has the level below cleared for the next
 * window's split scan (preclear_run()).
 * A region not swept at the last window end (new, or grown by a merge) has
 * its cover cleared first, and what it reads is not trusted.
 */
static void telescope_sweep(struct vt_profiler *p)
{
	struct telescope *t = to_tel(p);
	unsigned int n = t->regions->len, total = n - MIN(t->joining, n);
	uint64_t whole_limit = sweep_whole_limit(p);
	GArray *out = g_array_sized_new(FALSE, FALSE, sizeof(struct vt_region), n);
	g_autofree struct vt_cover_plan *plans = g_new(struct vt_cover_plan, n);
	bool tested;

	/*
	 * The covers of all swept regions are tested in one batch: a source
	 * call of its own for each cost about as much CPU as the probes of a
	 * small cover (scattered-200: ~200 calls a window), and on a real VM
	 * each is an ioctl.
	 */
	g_array_set_size(t->probes, 0);
	for (unsigned int i = 0; i < n; i++) {
		const struct vt_region *r = &g_array_index(t->regions, struct vt_region, i);
		uint64_t nr_full;
		bool stride_top;

		if (vt_region_seen(r) || r->fresh || r->waited)
			continue;
		stride_top = r->swept && fit_level(p->src, r->start, r->end, &nr_full) == VT_LEVEL_PMD &&
			     nr_full > whole_limit;
		vt_cover_plan(p->src, r->start, r->end, VT_LEVEL_PMD,
			      r->swept ? TELESCOPE_SWEEP_STRIDE : 1, stride_top, p->windows, &plans[i],
			      t->probes);
	}
	tested = vt_source_batch(p->src, (struct vt_probe *)(void *)t->probes->data,
				 t->probes->len) >= 0;

	for (unsigned int i = 0; i < n; i++) {
		struct vt_region *r = &g_array_index(t->regions, struct vt_region, i);
		bool primed = r->swept;
		uint64_t cut = r->start;

		if (vt_region_seen(r) || r->fresh || r->waited) {
			r->swept = false;
			g_array_append_val(out, *r);
			continue;
		}
		g_array_set_size(t->runs, 0);
		r->swept = tested;
		if (tested)
			vt_cover_read(&plans[i], (const struct vt_probe *)(void *)t->probes->data, t->runs);
		if (!primed || !t->runs->len || total + 2 * t->runs->len > p->attrs.max_regions) {
			/*
			 * No room to cut: it stays swept (its cover was just
			 * cleared), and the next sweep finds the runs again. Taken
			 * for warm, it went to the split, whose scan of its whole
			 * entries did not see a run in a partial end (the 41 MiB
			 * an island moved into the gap beside it): it was
			 * found cold, re-primed and re-found for up to six
			 * windows.
			 */
			g_array_append_val(out, *r);
			continue;
		}
		for (unsigned int k = 0; k < t->runs->len; k++) {
			const struct vt_cover_span *run = &g_array_index(t->runs, struct vt_cover_span, k);
			struct vt_region *piece;

			if (run->start > cut) {
				push_piece(out, r, cut, run->start, false);
				piece = &g_array_index(out, struct vt_region, out->len - 1);
				piece->fresh = false;
				piece->swept = true;
			}
			push_piece(out, r, run->start, run->end, true);
			preclear_run(p, &g_array_index(out, struct vt_region, out->len - 1));
			cut = run->end;
			total += 2;
		}
		if (cut < r->end) {
			push_piece(out, r, cut, r->end, false);
			g_array_index(out, struct vt_region, out->len - 1).fresh = false;
			g_array_index(out, struct vt_region, out->len - 1).swept = true;
		}
	}
	g_array_free(t->regions, TRUE);
	t->regions = out;
	if (t->absorb)
		absorb_cold(t->regions);
	join_swept(p);
	prime_joined(p);
	vt_for_each_region(r, t->regions)
		r->cold_cut = false;
	t->absorb = false;
	t->joining = 0;
}

static int telescope_init(struct vt_profiler *p)
{
	struct telescope *t = g_new0(struct telescope, 1);

	t->flex = p->ops == &vt_telescope_flex_ops;
	t->regions = vt_regions_new();
	t->next = vt_regions_new();
	t->young = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	t->runs = g_array_new(FALSE, FALSE, sizeof(struct vt_cover_span));
	t->probes = g_array_new(FALSE, FALSE, sizeof(struct vt_probe));
	vt_sampler_init(&t->sampler);
	p->priv = t;
	return 0;
}

static int telescope_start(struct vt_profiler *p)
{
	struct telescope *t = to_tel(p);
	unsigned int top = vt_top_level(p->src);
	uint64_t align = vt_level_size(p->src->leaf_level);

	g_array_set_size(t->regions, 0);
	vt_regions_from_ranges(t->regions, p->ranges, p->nr_ranges, vt_level_size(top));
	t->total = vt_regions_total(t->regions);
	/* cut further at the highest level that still gives min_regions pieces */
	for (unsigned int l = top; l > p->src->leaf_level; l--) {
		if (t->total / vt_level_size(l) >= p->attrs.min_regions) {
			align = vt_level_size(l);
			break;
		}
	}
	vt_regions_split_evenly(t->regions, p->attrs.min_regions, align);
	vt_for_each_region(r, t->regions)
		preclear_children(p, r);
	return 0;
}

static int telescope_sample(struct vt_profiler *p)
{
	struct telescope *t = to_tel(p);
	struct pick_arg arg = { .p = p, .flex = t->flex };
	int ret = vt_sampler_check(&t->sampler, p->src, t->regions);

	if (ret < 0 || vt_profiler_last_sample(p))
		return ret;
	return vt_sampler_prepare(&t->sampler, p->src, t->regions, p->rng, telescope_pick, &arg);
}

/*
 * A warm region whose every check this window, at least
 * TELESCOPE_COLD_CHECKS of them, read old at its own highest level is taken
 * for cold, not scanned: the scan reads the entries of that level, and those
 * the samples did not clear hold bits set before the data moved away (the
 * place an island left read young, and was cut into pieces, up to hundreds
 * when all islands moved at once, and the region cap held back finding
 * where they went). Hot data in an entry in ten is missed by 16 checks once
 * in 5, by a window's 40 once in 70; the sweep, which watches a region where
 * nothing was seen, finds it at the next window end.
 */
static void cool_unseen(struct vt_profiler *p)
{
	struct telescope *t = to_tel(p);

	vt_for_each_region(r, t->regions) {
		uint64_t nr_full;

		if (r->warm && !r->nr_young && r->nr_checks >= TELESCOPE_COLD_CHECKS && !r->nr_thin &&
		    r->level > p->src->leaf_level &&
		    fit_level(p->src, r->start, r->end, &nr_full) == r->level) {
			r->warm = false;
			r->resolved = false;
		}
	}
}

static int telescope_window(struct vt_profiler *p, struct vt_snapshot *snap)
{
	struct telescope *t = to_tel(p);
	struct pick_arg arg = { .p = p, .flex = t->flex };
	double thr = p->attrs.merge_threshold;
	uint64_t before;

	cool_unseen(p);
	vt_regions_end_window(t->regions, thr);
	vt_regions_snapshot(t->regions, snap);
	/* zero apart: warm leaf-level edges must not hide inside cold regions */
	vt_regions_merge(t->regions, thr, MAX(t->total / p->attrs.min_regions,
					      vt_level_size(p->src->leaf_level)), true);
	before = vt_source_checks_total(p->src);
	telescope_split(p);
	telescope_sweep(p);
	t->split_checks = vt_source_checks_total(p->src) - before;
	vt_for_each_region(r, t->regions)
		r->level = 0;
	vt_sampler_budget(&t->sampler, t->regions, p->attrs.budget_checks, t->split_checks,
			  (unsigned int)(p->attrs.window_us / p->attrs.sample_us));
	return vt_sampler_prepare(&t->sampler, p->src, t->regions, p->rng, telescope_pick, &arg);
}

static void telescope_destroy(struct vt_profiler *p)
{
	struct telescope *t = to_tel(p);

	if (!t)
		return;
	g_array_free(t->regions, TRUE);
	g_array_free(t->next, TRUE);
	g_array_free(t->young, TRUE);
	g_array_free(t->runs, TRUE);
	g_array_free(t->probes, TRUE);
	vt_sampler_fini(&t->sampler);
	g_free(t);
}

/* Exposed for unit tests of the level picker. */
unsigned int vt_telescope_pick_level(const struct vt_profiler *p, const struct vt_region *r,
				     uint64_t *addr, bool flex);
unsigned int vt_telescope_pick_level(const struct vt_profiler *p, const struct vt_region *r,
				     uint64_t *addr, bool flex)
{
	struct pick_arg arg = { .p = p, .flex = flex };

	return telescope_pick(r, addr, &arg);
}

const struct vt_profiler_ops vt_telescope_bounded_ops = {
	.name = "telescope-bounded",
	.summary = "regions sampled at the highest page-table level that fits inside them",
	.init = telescope_init,
	.start = telescope_start,
	.sample = telescope_sample,
	.window = telescope_window,
	.destroy = telescope_destroy,
};

const struct vt_profiler_ops vt_telescope_flex_ops = {
	.name = "telescope-flex",
	.summary = "as bounded, but a level may overshoot its region by a per-level error",
	.init = telescope_init,
	.start = telescope_start,
	.sample = telescope_sample,
	.window = telescope_window,
	.destroy = telescope_destroy,
};
