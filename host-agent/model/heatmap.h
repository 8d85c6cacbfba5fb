/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A VM's hotness history for `vtierctl heatmap` (docs/vtierd.md): guest-physical
 * address bins x the last VT_HEATMAP_WINDOWS windows, each cell the mean and
 * the max EMA hotness of the chunks in the bin and the tier most of the bin's
 * present bytes are on. Fixed size whatever the guest's RAM: the bins scale
 * with it (a power of two of bytes, at least 2 MiB, at most
 * VT_HEATMAP_MAX_BINS of them; a bin never spans a hole between RAM ranges).
 *
 * The VM's worker accumulates a window's chunks into a vt_heatmap_acc (its
 * own) and pushes the column into the vt_heatmap under the VM's lock; a
 * reader copies the vt_heatmap under that lock. The JSON form (docs/abi-control.md)
 * parses back into the same struct, which the SVG writer draws.
 */
#ifndef VTIER_CORE_HEATMAP_H
#define VTIER_CORE_HEATMAP_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "tiers.h"

#define VT_HEATMAP_MAX_BINS 256
#define VT_HEATMAP_WINDOWS 240
#define VT_HEATMAP_MIN_BIN (2ULL << 20)
#define VT_HEATMAP_SCALE 65535		/* hotness 0..1 is kept as 0..VT_HEATMAP_SCALE */
#define VT_HEATMAP_NO_TIER (-1)		/* no present page in the bin */

/* A RAM range: addresses [addr, addr + len) of the map, at [hva, hva + len) in QEMU. */
struct vt_heatmap_range {
	uint64_t addr;
	uint64_t len;
	uint64_t hva;
};

struct vt_heatmap_bin {
	uint64_t start;			/* map address (guest-physical, or RAM offset) */
	uint64_t end;
	uint64_t hva;			/* of start */
};

struct vt_heatmap_col {
	gint64 at_us;			/* monotonic time the window ended */
	uint64_t window;		/* the VM's window count then */
	uint16_t mean[VT_HEATMAP_MAX_BINS];	/* byte-weighted mean EMA x VT_HEATMAP_SCALE */
	uint16_t max[VT_HEATMAP_MAX_BINS];	/* hottest chunk's EMA x VT_HEATMAP_SCALE */
	int8_t tier[VT_HEATMAP_MAX_BINS];	/* tier index, or VT_HEATMAP_NO_TIER */
};

struct vt_heatmap {
	char space[16];			/* "gpa", or "ram-offset" without a gpa map */
	uint64_t bin_bytes;
	unsigned int nr_bins;
	struct vt_heatmap_bin bin[VT_HEATMAP_MAX_BINS];	/* sorted by start */
	unsigned int nr_tiers;
	char tier_name[VT_MAX_TIERS][32];
	/* ring of columns: the oldest is (next + N - len) % N */
	unsigned int next, len;
	struct vt_heatmap_col col[VT_HEATMAP_WINDOWS];
};

/* One window's sums per bin: the worker's alone. */
struct vt_heatmap_acc {
	double weight[VT_HEATMAP_MAX_BINS];	/* sum of EMA x bytes */
	double bytes[VT_HEATMAP_MAX_BINS];
	double max[VT_HEATMAP_MAX_BINS];
	uint64_t tier_bytes[VT_HEATMAP_MAX_BINS][VT_MAX_TIERS];
	unsigned int by_hva[VT_HEATMAP_MAX_BINS];	/* bin indices sorted by hva */
	unsigned int nr;			/* bins when by_hva was built */
	bool primed;				/* holds every chunk's bytes and tier (vm_heatmap.c) */
};

/*
 * Lay the bins over @ranges (sorted by addr, not overlapping) in @space, with
 * the tiers @names[0..@nr_tiers). Keeps the columns when nothing changed,
 * else starts afresh. 1 when it changed, 0 when not, -EINVAL (h unchanged)
 * for ranges empty, unsorted or overlapping, or more than VT_MAX_TIERS tiers.
 */
int vt_heatmap_layout(struct vt_heatmap *h, const char *space, const struct vt_heatmap_range *ranges,
		      unsigned int n, const char *const *names, unsigned int nr_tiers);
/* The index of the column @k windows ago (0: newest); @k < h->len. */
unsigned int vt_heatmap_col_index(const struct vt_heatmap *h, unsigned int k);

void vt_heatmap_acc_reset(struct vt_heatmap_acc *a, const struct vt_heatmap *h);
/* A chunk at QEMU [@hva, @hva_end) with EMA @ema (0..1) on @tier (-1: none present). */
void vt_heatmap_acc_chunk(struct vt_heatmap_acc *a, const struct vt_heatmap *h, uint64_t hva,
			  uint64_t hva_end, double ema, int tier);
/*
 * Kept from window to window instead (bytes and tiers change only where a
 * chunk changed tier): the hotness cleared, a chunk's hotness added, a
 * chunk's bytes moved from tier @from to tier @to (-1: none present).
 */
void vt_heatmap_acc_hot_clear(struct vt_heatmap_acc *a);
void vt_heatmap_acc_hot(struct vt_heatmap_acc *a, const struct vt_heatmap *h, uint64_t hva,
			uint64_t hva_end, double ema);
void vt_heatmap_acc_retier(struct vt_heatmap_acc *a, const struct vt_heatmap *h, uint64_t hva,
			   uint64_t hva_end, int from, int to);
/* The window's column from @a, ended at @now_us as the VM's window @window. */
void vt_heatmap_push(struct vt_heatmap *h, const struct vt_heatmap_acc *a, gint64 now_us,
		     uint64_t window);

/* The `heatmap` reply (docs/abi-control.md); ages against @now_us. */
void vt_heatmap_to_json(const struct vt_heatmap *h, const char *name, uint64_t window_ms,
			gint64 now_us, JsonBuilder *b);
/*
 * Parse that reply's result back, every member checked; columns' at_us are
 * -age_ms x 1000 (so "now" is 0). False with -EINVAL in @error.
 */
bool vt_heatmap_from_json(JsonNode *result, struct vt_heatmap *h, char *name, size_t name_len,
			  GError **error);

/* The SVG (docs/vtierd.md): colour = mean (or @use_max: max) hotness. */
struct vt_heatmap_svg_opts {
	const char *title;
	gint64 now_us;
	bool use_max;
};
/* Fails (-ENODATA) for a map without columns or bins: nothing to draw. */
int vt_heatmap_svg(const struct vt_heatmap *h, const struct vt_heatmap_svg_opts *o, GString *out);
/*
 * Write @data to @path through a temporary file in its directory and a
 * rename; refuses (-EEXIST) to replace anything that is not a regular file.
 */
int vt_heatmap_write_file(const char *path, const char *data, size_t len, GError **error);

#endif
