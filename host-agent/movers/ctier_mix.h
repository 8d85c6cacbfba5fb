/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Page contents like a guest's, for the ctier tests and vtier-bench ctier:
 * zero pages, same-filled pages, text and binaries read from /usr, random
 * bytes, mixed by weight. Page i's content depends on (seed, i) only, so a
 * test can check a page it never kept.
 */
#ifndef VTIER_MOVERS_CTIER_MIX_H
#define VTIER_MOVERS_CTIER_MIX_H

#include <stddef.h>
#include <stdint.h>

enum vt_mix_kind { VT_MIX_ZERO, VT_MIX_SAME, VT_MIX_TEXT, VT_MIX_BINARY, VT_MIX_RANDOM,
		   VT_MIX_NR };

struct vt_mix {
	unsigned int weight[VT_MIX_NR];
	uint64_t seed;
	uint8_t *text, *bin;		/* whole pages of files under /usr */
	size_t text_pages, bin_pages;
};

/*
 * @spec: "zero=W,same=W,text=W,binary=W,random=W" (any subset; weights are
 * relative), NULL for the default mix. 0, -EINVAL (@why says what), -ENOENT
 * (no text or binaries found under /usr).
 */
int vt_mix_init(struct vt_mix *m, const char *spec, uint64_t seed, char *why, size_t why_len);
void vt_mix_free(struct vt_mix *m);
/* Fill @page (4096 bytes) with page @i of the mix; returns its kind. */
enum vt_mix_kind vt_mix_page(const struct vt_mix *m, uint64_t i, void *page);
/* Page @i as if it were of kind @kind. */
void vt_mix_fill(const struct vt_mix *m, enum vt_mix_kind kind, uint64_t i, void *page);
const char *vt_mix_kind_name(enum vt_mix_kind kind);

#endif
