// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Whole-table scans once per window. `scan` skips every subtree whose entry is
 * old (MGLRU's walk with non-leaf young bits, "MGLRU-TS" in the Telescope
 * paper); `linear` tests every leaf. Both report young leaves: the snapshot is
 * the runs of young leaves (accesses 1) and the gaps between them (0).
 */

#include "profiler.h"

struct scanner {
	struct vt_snapshot *snap;	/* being filled */
	uint64_t run_start, run_end;	/* current run of young leaves */
	uint64_t covered;		/* end of what the snapshot covers so far */
};

static void add_region(struct scanner *s, uint64_t start, uint64_t end, double accesses,
		       unsigned int level)
{
	struct vt_snapshot_region r = {
		.start = start, .end = end, .accesses = accesses, .level = level,
	};

	if (start < end)
		g_array_append_val(s->snap->regions, r);
}

static void on_young(uint64_t entry_start, unsigned int level, void *arg)
{
	struct scanner *s = arg;

	if (entry_start == s->run_end) {
		s->run_end += vt_level_size(level);
		return;
	}
	if (s->run_end > s->run_start) {
		add_region(s, s->covered, s->run_start, 0, level);
		add_region(s, s->run_start, s->run_end, 1, level);
		s->covered = s->run_end;
	}
	s->run_start = entry_start;
	s->run_end = entry_start + vt_level_size(level);
}

static int scanner_init(struct vt_profiler *p)
{
	p->priv = g_new0(struct scanner, 1);
	return 0;
}

static int scanner_start(struct vt_profiler *p)
{
	(void)p;	/* nothing to build: every window walks p->ranges */
	return 0;
}

static int scanner_window(struct vt_profiler *p, struct vt_snapshot *snap)
{
	struct scanner *s = p->priv;
	unsigned int leaf = p->src->leaf_level;
	unsigned int skip_from = p->ops == &vt_linear_ops ? leaf : vt_top_level(p->src);

	s->snap = snap;
	for (size_t i = 0; i < p->nr_ranges; i++) {
		long ret;

		s->covered = p->ranges[i].start;
		s->run_start = s->run_end = 0;
		ret = vt_source_scan(p->src, p->ranges[i].start, p->ranges[i].end, leaf, skip_from,
				     on_young, s);
		if (ret < 0)
			return (int)ret;
		if (s->run_end > s->run_start) {
			add_region(s, s->covered, s->run_start, 0, leaf);
			add_region(s, s->run_start, s->run_end, 1, leaf);
			s->covered = s->run_end;
		}
		add_region(s, s->covered, p->ranges[i].end, 0, leaf);
	}
	return 0;
}

static void scanner_destroy(struct vt_profiler *p)
{
	g_free(p->priv);
}

const struct vt_profiler_ops vt_scan_ops = {
	.name = "scan",
	.summary = "full-table scan each window, skipping subtrees whose entry is old",
	.init = scanner_init,
	.start = scanner_start,
	.window = scanner_window,
	.destroy = scanner_destroy,
};

const struct vt_profiler_ops vt_linear_ops = {
	.name = "linear",
	.summary = "tests every leaf every window",
	.init = scanner_init,
	.start = scanner_start,
	.window = scanner_window,
	.destroy = scanner_destroy,
};
