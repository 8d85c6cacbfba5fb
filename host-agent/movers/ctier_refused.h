/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Pages a compressed tier refused, remembered by content: a bounded memo that
 * spares recompressing a page that did not compress enough the last time and
 * has not changed since. Cold but incompressible memory (encrypted or already
 * compressed data) is offered to the store window after window; without the
 * memo each offer costs a full compression (docs/ctier.md, "Refused pages").
 *
 * Direct-mapped on the page index, like a cache: an entry holds (page, tier,
 * CRC-32C of the content); a newer refusal of another page with the same
 * slot replaces it, which costs at most one more compression later. A page
 * whose content changed (a different CRC) is compressed again. 16 bytes per
 * slot; callers lock.
 */
#ifndef VTIER_CTIER_REFUSED_H
#define VTIER_CTIER_REFUSED_H

#include <stdbool.h>
#include <stdint.h>

struct vt_refused;

/* A memo of @slots entries (rounded up to a power of two, at least 64). */
struct vt_refused *vt_refused_new(uint64_t slots);
void vt_refused_free(struct vt_refused *r);
/* Bytes it holds: for the agent's metadata figures. */
uint64_t vt_refused_bytes(const struct vt_refused *r);

/* Remember that @tier refused @page with content CRC @crc. */
void vt_refused_add(struct vt_refused *r, uint64_t page, unsigned int tier, uint32_t crc);
/* Did @tier refuse @page with exactly this content? */
bool vt_refused_has(const struct vt_refused *r, uint64_t page, unsigned int tier, uint32_t crc);
/* Forget @page (stored, dropped or rewritten). */
void vt_refused_forget(struct vt_refused *r, uint64_t page);

#endif
