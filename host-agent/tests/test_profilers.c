// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Every profiler keeps the snapshot contract on a busy multi-phase workload;
 * Telescope's level picker at boundaries; the budget holds; and Telescope
 * finds a small hot set (a functional check, not a timing one).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "eval.h"
#include "region.h"
#include "sim_source.h"

#define GiB (1ULL << 30)
#define MiB (1ULL << 20)

unsigned int vt_telescope_pick_level(const struct vt_profiler *p, const struct vt_region *r,
				     uint64_t *addr, bool flex);

static const char *busy_spec =
	"{\"footprint\":\"6GiB+6MiB\",\"base\":\"2GiB+8KiB\",\"initial_bits\":\"young\",\"phases\":["
	"{\"duration_s\":2,\"access_rate\":2e6,\"hot\":["
	" {\"start\":\"1GiB+12KiB\",\"size\":\"300MiB\",\"pattern\":\"zipf\"},"
	" {\"start\":\"4GiB\",\"size\":\"64MiB\",\"pattern\":\"gaussian\"}]},"
	"{\"duration_s\":2,\"access_rate\":1e6,\"hot\":["
	" {\"start\":\"12KiB\",\"size\":\"2GiB\",\"weight\":2},"
	" {\"start\":\"5GiB+4KiB\",\"size\":\"4KiB\"}]},"
	"{\"duration_s\":2,\"access_rate\":0,\"hot\":[]}]}";

static void check_snapshot(const struct vt_snapshot *snap, const struct vt_range *map,
			   unsigned int levels, const char *who, unsigned int win)
{
	uint64_t expect = map->start;

	for (unsigned int i = 0; i < snap->regions->len; i++) {
		const struct vt_snapshot_region *r =
			&g_array_index(snap->regions, struct vt_snapshot_region, i);

		if (r->start != expect || r->end <= r->start || r->end > map->end ||
		    !(r->accesses >= 0 && r->accesses <= 1) || r->level >= levels)
			fail_msg("%s window %u region %u [%#" G_GINT64_MODIFIER "x, %#"
				 G_GINT64_MODIFIER "x) acc %f level %u breaks the contract", who, win, i,
				 r->start, r->end, r->accesses, r->level);
		expect = r->end;
	}
	if (expect != map->end)
		fail_msg("%s window %u: snapshot stops at %#" G_GINT64_MODIFIER "x", who, win, expect);
}

static void test_snapshot_contract(void **state)
{
	g_autoptr(vt_workload) w = vt_workload_from_json(busy_spec, -1, NULL);

	(void)state;
	assert_non_null(w);
	for (const char *const *name = vt_profiler_names(); *name; name++) {
		for (unsigned int exact = 0; exact < 2; exact++) {
			struct vt_access_source *src = exact ? vt_sim_exact_new(w, 5, NULL) : vt_sim_new(w, 5);
			struct vt_profiler_attrs attrs;
			struct vt_profiler *p;
			struct vt_snapshot snap;
			struct vt_range map;
			g_autoptr(GError) e = NULL;

			vt_profiler_attrs_default(&attrs);
			attrs.window_us = 100000;	/* 60 windows over the workload */
			p = vt_profiler_new(*name, src, &attrs, &e);
			assert_non_null(p);
			vt_source_mapped(src, &map, 1);
			assert_int_equal(vt_profiler_start(p), 0);
			vt_snapshot_init(&snap);
			for (unsigned int win = 0; win < 60; win++) {
				for (unsigned int s = 0; s < 20; s++) {
					vt_sim_advance(src, 5000000);
					assert_int_equal(vt_profiler_sample(p), 0);
				}
				assert_int_equal(vt_profiler_window(p, &snap), 0);
				assert_int_equal(snap.window, win);
				check_snapshot(&snap, &map, w->levels, *name, win);
				if (strcmp(*name, "damon-like") == 0 || g_str_has_prefix(*name, "telescope"))
					assert_true(snap.regions->len <= attrs.max_regions + 2);
			}
			vt_snapshot_clear(&snap);
			vt_profiler_free(p);
			vt_source_destroy(src);
		}
	}
}

static void test_level_picking(void **state)
{
	g_autoptr(vt_workload) w = vt_workload_builtin("subtb-10g", NULL);
	struct vt_access_source *src = vt_sim_new(w, 1);
	struct vt_profiler_attrs attrs;
	struct vt_profiler *p;
	static const struct {
		uint64_t start, end, addr;
		unsigned int bounded, flex;
	} cases[] = {
		/* region aligned to a PUD: the PUD */
		{ GiB, 3 * GiB, GiB, VT_LEVEL_PUD, VT_LEVEL_PUD },
		{ GiB, 3 * GiB, 3 * GiB - 4096, VT_LEVEL_PUD, VT_LEVEL_PUD },
		/* 4 KiB off a PUD boundary: bounded drops to the PTE there, flex keeps the PUD */
		{ GiB + 4096, 3 * GiB, GiB + 4096, VT_LEVEL_PTE, VT_LEVEL_PUD },
		{ GiB + 4096, 3 * GiB, GiB + 2 * MiB, VT_LEVEL_PMD, VT_LEVEL_PUD },
		{ GiB + 4096, 3 * GiB, 2 * GiB, VT_LEVEL_PUD, VT_LEVEL_PUD },
		/* overshoot 12% (< 15% at PUD) and 22% (> 15%) */
		{ GiB, GiB + 900 * MiB, GiB, VT_LEVEL_PMD, VT_LEVEL_PUD },
		{ GiB, GiB + 800 * MiB, GiB, VT_LEVEL_PMD, VT_LEVEL_PMD },
		/* PMD: overshoot exactly 25% is allowed, 29% is not */
		{ GiB + 512 * 1024, GiB + 2 * MiB, GiB + 512 * 1024, VT_LEVEL_PTE, VT_LEVEL_PMD },
		{ GiB + 600 * 1024, GiB + 2 * MiB, GiB + 600 * 1024, VT_LEVEL_PTE, VT_LEVEL_PTE },
		/* a single page */
		{ 5 * GiB, 5 * GiB + 4096, 5 * GiB, VT_LEVEL_PTE, VT_LEVEL_PTE },
	};
	(void)state;
	vt_profiler_attrs_default(&attrs);
	p = vt_profiler_new("telescope-flex", src, &attrs, NULL);
	for (unsigned int i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct vt_region r = { .start = cases[i].start, .end = cases[i].end };
		uint64_t ab = cases[i].addr, af = cases[i].addr;
		unsigned int b = vt_telescope_pick_level(p, &r, &ab, false);
		unsigned int f = vt_telescope_pick_level(p, &r, &af, true);

		if (b != cases[i].bounded || f != cases[i].flex)
			fail_msg("case %u: bounded %u flex %u, expected %u %u", i, b, f,
				 cases[i].bounded, cases[i].flex);
		assert_int_equal(ab, cases[i].addr);
		assert_int_equal(af, cases[i].addr);
	}
	/*
	 * A resolved region with one whole PMD (4 MiB at a page offset) is
	 * sampled through that PMD, wherever the address fell; with two, as usual.
	 */
	for (unsigned int flex = 0; flex < 2; flex++) {
		struct vt_region r = { .start = GiB + MiB + 4096, .end = GiB + 5 * MiB, .resolved = true };
		uint64_t addr = GiB + MiB + 8192;

		assert_int_equal(vt_telescope_pick_level(p, &r, &addr, flex), VT_LEVEL_PMD);
		assert_int_equal(addr, GiB + 2 * MiB);
		addr = GiB + 4 * MiB + 4096;
		assert_int_equal(vt_telescope_pick_level(p, &r, &addr, flex), VT_LEVEL_PMD);
		assert_int_equal(addr, GiB + 2 * MiB);
		r.end = GiB + 7 * MiB;
		addr = GiB + MiB + 8192;
		assert_int_equal(vt_telescope_pick_level(p, &r, &addr, false), VT_LEVEL_PTE);
		assert_int_equal(addr, GiB + MiB + 8192);
	}
	/* a piece just found cold by a split scan samples bounded in its first window */
	{
		struct vt_region r = { .start = GiB + 4096, .end = 3 * GiB, .fresh = true };
		uint64_t addr = GiB + 4096;

		assert_int_equal(vt_telescope_pick_level(p, &r, &addr, true), VT_LEVEL_PTE);
		r.warm = true;
		assert_int_equal(vt_telescope_pick_level(p, &r, &addr, true), VT_LEVEL_PUD);
	}
	/* a region whose overshoot misled it samples bounded */
	{
		struct vt_region r = { .start = GiB + 4096, .end = 3 * GiB, .bounded_only = true };
		uint64_t addr = GiB + 4096;

		assert_int_equal(vt_telescope_pick_level(p, &r, &addr, true), VT_LEVEL_PTE);
	}
	vt_profiler_free(p);
	vt_source_destroy(src);
}

struct run_result {
	double p, r;
	unsigned int first;	/* first window with P and R >= 0.9, from 1; 0 never */
	double mean_checks;
};

static struct run_result run_workload(const struct vt_workload *w, const char *profiler,
				      uint64_t budget, unsigned int windows)
{
	struct vt_access_source *src = vt_sim_new(w, 2);
	struct vt_profiler_attrs attrs;
	struct vt_profiler *p;
	struct vt_snapshot snap;
	struct run_result res = { 0 };
	uint64_t checks = 0;

	vt_profiler_attrs_default(&attrs);
	attrs.budget_checks = budget;
	p = vt_profiler_new(profiler, src, &attrs, NULL);
	vt_profiler_start(p);
	vt_snapshot_init(&snap);
	for (unsigned int win = 0; win < windows; win++) {
		struct vt_score sc;
		uint64_t before = vt_source_checks_total(src);

		for (unsigned int s = 0; s < 40; s++) {
			vt_sim_advance(src, 5000000);
			vt_profiler_sample(p);
		}
		vt_profiler_window(p, &snap);
		if (win >= 5)
			checks += vt_source_checks_total(src) - before;
		vt_score_snapshot(w, vt_workload_phase_at(w, vt_sim_now_ns(src) / 1e9 - 1e-9), &snap, &sc);
		if (!res.first && sc.precision >= 0.9 && sc.recall >= 0.9)
			res.first = win + 1;
		res.p = sc.precision;
		res.r = sc.recall;
	}
	res.mean_checks = (double)checks / (windows - 5);
	vt_snapshot_clear(&snap);
	vt_profiler_free(p);
	vt_source_destroy(src);
	return res;
}

static struct run_result run(const char *scenario, const char *profiler, uint64_t budget,
			     unsigned int windows)
{
	g_autoptr(vt_workload) w = vt_workload_builtin(scenario, NULL);

	return run_workload(w, profiler, budget, windows);
}

static struct run_result run_spec(const char *json, const char *profiler, unsigned int windows)
{
	g_autoptr(vt_workload) w = vt_workload_from_json(json, -1, NULL);

	assert_non_null(w);
	return run_workload(w, profiler, 0, windows);
}

static void test_telescope_finds_hot_set(void **state)
{
	static const char *const profilers[] = { "telescope-bounded", "telescope-flex" };

	(void)state;
	for (unsigned int i = 0; i < 2; i++) {
		struct run_result a = run("subtb-1g", profilers[i], 0, 20);
		struct run_result b = run("multi-phase", profilers[i], 0, 20);

		if (!a.first || a.first > 10 || a.p < 0.9 || a.r < 0.9 ||
		    !b.first || b.first > 10 || b.p < 0.95 || b.r < 0.95)
			fail_msg("%s: subtb-1g first %u P %.3f R %.3f; multi-phase first %u P %.3f R %.3f",
				 profilers[i], a.first, a.p, a.r, b.first, b.p, b.r);
	}
	/* and damon-like misses it at 5 TiB, as the paper reports */
	assert_true(run("multi-phase", "damon-like", 0, 20).r < 0.1);
}

/*
 * A large lukewarm range (each 2 MiB touched ~1.2 times per window, its
 * pages almost never in 5 ms) reads hot through its PUDs. It used to be cut
 * along its scattered young PMDs, the pieces cut again to the page, merged
 * and cut again: ~70k checks per window for nothing, and the pieces read
 * cold. Now it is kept whole at the level that reads it hot.
 */
static void test_lukewarm_kept_coarse(void **state)
{
	static const char *spec =
		"{\"footprint\":\"256GiB\",\"phases\":[{\"duration_s\":8,\"access_rate\":5e7,"
		"\"hot\":[{\"start\":\"100GiB+5MiB+12KiB\",\"size\":\"32GiB\",\"weight\":1},"
		"{\"start\":\"132GiB+5MiB+12KiB\",\"size\":\"16MiB\",\"weight\":499}]}]}";
	static const char *const profilers[] = { "telescope-bounded", "telescope-flex" };

	(void)state;
	for (unsigned int i = 0; i < 2; i++) {
		struct run_result res = run_spec(spec, profilers[i], 40);

		if (res.r < 0.95 || res.p < 0.95 || res.mean_checks > 6000)
			fail_msg("%s: P %.3f R %.3f, %.0f checks per window (at most 6000)",
				 profilers[i], res.p, res.r, res.mean_checks);
	}
}

/*
 * New hot data next to a known hot range, or far from it, is found within a
 * few windows however long the cold memory around it stayed cold: a 1 GiB
 * range sliding up 128 MiB every 2 s (drift.json in small), and then a jump
 * far away. Before the cold sweep, a cold region's samples found the new
 * 128 MiB with the odds of its bytes (~0.1 % per sample): recall fell 5 %
 * per step and never came back. Recall within 5 windows for both variants;
 * precision too for bounded (flex samples the shrunk range through a PUD
 * that still reads young, and sees the cooled 128 MiB only when the region
 * is re-examined, up to 8 windows).
 */
static void test_discovery_bounded(void **state)
{
	static const char *spec =
		"{\"footprint\":\"512GiB\",\"phases\":["
		"{\"duration_s\":2,\"access_rate\":5e7,\"hot\":[{\"start\":\"100GiB+3MiB+12KiB\",\"size\":\"1GiB\"}]},"
		"{\"duration_s\":2,\"access_rate\":5e7,\"hot\":[{\"start\":\"100GiB+131MiB+12KiB\",\"size\":\"1GiB\"}]},"
		"{\"duration_s\":2,\"access_rate\":5e7,\"hot\":[{\"start\":\"100GiB+259MiB+12KiB\",\"size\":\"1GiB\"}]},"
		"{\"duration_s\":2,\"access_rate\":5e7,\"hot\":[{\"start\":\"300GiB+5MiB\",\"size\":\"256MiB\"}]}]}";
	static const char *const profilers[] = { "telescope-bounded", "telescope-flex" };
	g_autoptr(vt_workload) w = vt_workload_from_json(spec, -1, NULL);

	(void)state;
	assert_non_null(w);
	for (unsigned int i = 0; i < 2; i++) {
		struct vt_access_source *src = vt_sim_new(w, 1);
		struct vt_profiler_attrs attrs;
		struct vt_profiler *p;
		struct vt_snapshot snap;
		int settled[4] = { -1, -1, -1, -1 }, since[4] = { 0 };

		vt_profiler_attrs_default(&attrs);
		p = vt_profiler_new(profilers[i], src, &attrs, NULL);
		vt_profiler_start(p);
		vt_snapshot_init(&snap);
		for (unsigned int win = 0; win < 40; win++) {
			unsigned int ph;
			struct vt_score sc;

			for (unsigned int s = 0; s < 40; s++) {
				vt_sim_advance(src, 5000000);
				vt_profiler_sample(p);
			}
			vt_profiler_window(p, &snap);
			ph = vt_workload_phase_at(w, vt_sim_now_ns(src) / 1e9 - 1e-9);
			if (!since[ph])
				since[ph] = (int)win;
			vt_score_snapshot(w, ph, &snap, &sc);
			if ((i == 1 || sc.precision >= 0.95) && sc.recall >= 0.95) {
				if (settled[ph] < 0)
					settled[ph] = (int)win - since[ph] + 1;
			} else {
				settled[ph] = -1;
			}
		}
		for (unsigned int ph = 1; ph < 4; ph++)
			if (settled[ph] < 0 || settled[ph] > 5)
				fail_msg("%s phase %u: settled after %d windows (at most 5)", profilers[i],
					 ph + 1, settled[ph]);
		vt_snapshot_clear(&snap);
		vt_profiler_free(p);
		vt_source_destroy(src);
	}
}

/* After each window of run_capped(): the snapshot of window @win (0 first). */
typedef void (*capped_window_fn)(const struct vt_workload *w, const struct vt_snapshot *snap,
				 unsigned int win, void *arg);

/*
 * @profiler over @w under a cap of 250 regions, @windows windows of 40
 * samples 5 ms apart; the cap holds after every window.
 */
static void run_capped(const struct vt_workload *w, const char *profiler, unsigned int windows,
		       capped_window_fn fn, void *arg)
{
	struct vt_access_source *src = vt_sim_new(w, 1);
	struct vt_profiler_attrs attrs;
	struct vt_profiler *p;
	struct vt_snapshot snap;

	vt_profiler_attrs_default(&attrs);
	attrs.max_regions = 250;
	p = vt_profiler_new(profiler, src, &attrs, NULL);
	assert_non_null(p);
	vt_profiler_start(p);
	vt_snapshot_init(&snap);
	for (unsigned int win = 0; win < windows; win++) {
		for (unsigned int s = 0; s < 40; s++) {
			vt_sim_advance(src, 5000000);
			vt_profiler_sample(p);
		}
		vt_profiler_window(p, &snap);
		assert_true(snap.regions->len <= attrs.max_regions + 2);
		fn(w, &snap, win, arg);
	}
	vt_snapshot_clear(&snap);
	vt_profiler_free(p);
	vt_source_destroy(src);
}

/* 50 hot ranges of 4 MiB, 5 GiB apart, each a few pages off a PMD boundary, @shift_kib later */
static void append_ranges(GString *spec, unsigned int shift_kib)
{
	for (unsigned int k = 0; k < 50; k++)
		g_string_append_printf(spec, "%s{\"start\":\"%uMiB+%uKiB\",\"size\":\"4MiB\"}",
				       k ? "," : "", 5120 * k + 1000 + 34 * k,
				       4 * (1 + 37 * k % 500) + shift_kib);
}

/* the window after which P and R stayed >= 0.95 (1 first), or -1 */
static void track_settled(const struct vt_workload *w, const struct vt_snapshot *snap,
			  unsigned int win, void *arg)
{
	int *settled = arg;
	struct vt_score sc;

	vt_score_snapshot(w, 0, snap, &sc);
	if (sc.precision < 0.95 || sc.recall < 0.95)
		*settled = -1;
	else if (*settled < 0)
		*settled = (int)win + 1;
}

/* Both Telescopes over @json under the cap: @fn's count of windows to settle is 1-5. */
static void expect_settled(const char *json, unsigned int windows, capped_window_fn fn)
{
	static const char *const profilers[] = { "telescope-bounded", "telescope-flex" };
	g_autoptr(vt_workload) w = vt_workload_from_json(json, -1, NULL);

	assert_non_null(w);
	for (unsigned int i = 0; i < 2; i++) {
		int settled = -1;

		run_capped(w, profilers[i], windows, fn, &settled);
		if (settled < 0 || settled > 5)
			fail_msg("%s: settled after %d windows (at most 5)", profilers[i], settled);
	}
}

/*
 * Many small hot ranges from a cold start: each descending range is cut into
 * a cold piece on each side, edge pieces and a middle, five regions a range.
 * With 50 ranges under a cap of 250 regions (scattered-200 under 1000) the
 * cap held the descent back and it settled after ~10 windows; cold pieces
 * now join their cold neighbours near the cap, and it settles within 5.
 */
static void test_many_ranges_settle(void **state)
{
	g_autoptr(GString) spec = g_string_new("{\"footprint\":\"256GiB\",\"phases\":["
					       "{\"duration_s\":4,\"access_rate\":2e7,\"hot\":[");

	(void)state;
	append_ranges(spec, 0);
	g_string_append(spec, "]}]}");
	expect_settled(spec->str, 12, track_settled);
}

#define ONCE_ADDR ((5120ULL * 20 + 1000 + 34 * 20 + 2560) * MiB)

/* windows 11-13: the gap's region (~5 GiB) cut down around ONCE_ADDR: the sweep saw it */
static void track_once(const struct vt_workload *w, const struct vt_snapshot *snap,
		       unsigned int win, void *arg)
{
	bool *seen = arg;

	(void)w;
	for (unsigned int k = 0; win >= 11 && win <= 13 && k < snap->regions->len; k++) {
		const struct vt_snapshot_region *r =
			&g_array_index(snap->regions, struct vt_snapshot_region, k);

		*seen |= r->start <= ONCE_ADDR && r->end > ONCE_ADDR && r->end - r->start <= GiB;
	}
}

/*
 * Near the cap, cold pieces of ranges re-cut window after window join the
 * cold region between them (absorb_cold()). That region must still see a
 * chunk touched in one window only: 50 ranges that drift every window, and
 * a 2 MiB chunk in the middle of one gap written during one window. Joined
 * before the sweep, the union's sweep was a priming one whose reads were
 * thrown away: the gap took in pieces window after window and never saw it.
 */
static void test_touched_once_near_cap(void **state)
{
	static const char *const profilers[] = { "telescope-bounded", "telescope-flex" };
	g_autoptr(GString) spec = g_string_new("{\"footprint\":\"256GiB\",\"phases\":[");
	g_autoptr(vt_workload) w = NULL;

	(void)state;
	for (unsigned int ph = 0; ph < 16; ph++) {
		g_string_append_printf(spec, "%s{\"duration_s\":0.2,\"access_rate\":2e7,\"hot\":[",
				       ph ? "," : "");
		append_ranges(spec, 64 * ph);
		if (ph == 10)
			g_string_append_printf(spec, ",{\"start\":\"%llu\",\"size\":\"2MiB\","
					       "\"weight\":8}", ONCE_ADDR);
		g_string_append(spec, "]}");
	}
	g_string_append(spec, "]}");
	w = vt_workload_from_json(spec->str, -1, NULL);
	assert_non_null(w);
	for (unsigned int i = 0; i < 2; i++) {
		bool seen = false;

		run_capped(w, profilers[i], 16, track_once, &seen);
		if (!seen)
			fail_msg("%s: the chunk touched in window 10 was not seen by the sweep", profilers[i]);
	}
}

/* 40 islands of 3-300 MiB in 1 TiB, no end on a 2 MiB boundary, moved by @shift_kib */
static void append_islands(GString *spec, unsigned int shift_kib)
{
	for (unsigned int k = 0; k < 40; k++)
		g_string_append_printf(spec, "%s{\"start\":\"%uMiB+%uKiB\",\"size\":\"%uMiB+%uKiB\"}",
				       k ? "," : "", 25600 * k + 700 + 13 * k,
				       4 * (1 + 53 * k % 500) + shift_kib, 3 + 97 * k % 300,
				       4 * (1 + 29 * k % 250));
}

/* the window after which P and R stayed >= 0.95 since the move at window 15 */
static void track_moved(const struct vt_workload *w, const struct vt_snapshot *snap,
			unsigned int win, void *arg)
{
	int *settled = arg;
	struct vt_score sc;

	if (win < 15)
		return;
	vt_score_snapshot(w, 1, snap, &sc);
	if (sc.precision < 0.95 || sc.recall < 0.95)
		*settled = -1;
	else if (*settled < 0)
		*settled = (int)win - 15 + 1;
}

/*
 * Issue 33: all islands move at once by an unaligned distance, under the
 * region cap (40 islands, 250 regions: as islands-moved's 150 under 1000).
 * Their edge pieces filled the cap, the moved ends found by the sweep had no
 * room, and the split looking at them instead saw nothing in their partial
 * ends: telescope-bounded had not settled 15 windows after the move (and
 * went 3 regions over the cap). Now within 5.
 */
static void test_moved_islands_settle(void **state)
{
	g_autoptr(GString) spec = g_string_new("{\"footprint\":\"1TiB\",\"phases\":["
					       "{\"duration_s\":3,\"access_rate\":5e7,\"hot\":[");

	(void)state;
	append_islands(spec, 0);
	g_string_append(spec, "]},{\"duration_s\":3,\"access_rate\":5e7,\"hot\":[");
	append_islands(spec, 41 * 1024 + 292);
	g_string_append(spec, "]}]}");
	expect_settled(spec->str, 30, track_moved);
}

static void test_budget_holds(void **state)
{
	struct run_result tight = run("multi-phase", "telescope-bounded", 1500, 40);

	/*
	 * Since the cold sweep the free run costs ~1000 checks per window here,
	 * below this budget: the budget must hold, not save. (A budget below a
	 * workload's sweep and edge checks is not held: docs/telemetry.md.)
	 */
	(void)state;
	assert_true(tight.mean_checks <= 1500 * 1.1);
	assert_true(tight.p >= 0.9 && tight.r >= 0.9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snapshot_contract),
		cmocka_unit_test(test_level_picking),
		cmocka_unit_test(test_telescope_finds_hot_set),
		cmocka_unit_test(test_budget_holds),
		cmocka_unit_test(test_lukewarm_kept_coarse),
		cmocka_unit_test(test_discovery_bounded),
		cmocka_unit_test(test_many_ranges_settle),
		cmocka_unit_test(test_touched_once_near_cap),
		cmocka_unit_test(test_moved_islands_settle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
