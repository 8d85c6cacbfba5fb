// SPDX-License-Identifier: GPL-2.0-or-later
/* Pages a compressed tier refused, remembered by content (ctier_refused.h). */
#include <glib.h>

#include "ctier_refused.h"

struct slot {
	uint64_t key;		/* page + 1 (0: empty) */
	uint32_t crc;
	uint32_t tier;
};

struct vt_refused {
	uint64_t mask;
	struct slot *slot;
};

struct vt_refused *vt_refused_new(uint64_t slots)
{
	struct vt_refused *r = g_new0(struct vt_refused, 1);
	uint64_t n = 64;

	while (n < slots && n < (1ull << 40))
		n <<= 1;
	r->mask = n - 1;
	r->slot = g_new0(struct slot, n);
	return r;
}

void vt_refused_free(struct vt_refused *r)
{
	if (!r)
		return;
	g_free(r->slot);
	g_free(r);
}

uint64_t vt_refused_bytes(const struct vt_refused *r)
{
	return r ? (r->mask + 1) * sizeof(struct slot) : 0;
}

void vt_refused_add(struct vt_refused *r, uint64_t page, unsigned int tier, uint32_t crc)
{
	struct slot *s = &r->slot[page & r->mask];

	s->key = page + 1;
	s->crc = crc;
	s->tier = tier;
}

bool vt_refused_has(const struct vt_refused *r, uint64_t page, unsigned int tier, uint32_t crc)
{
	const struct slot *s = &r->slot[page & r->mask];

	return s->key == page + 1 && s->tier == tier && s->crc == crc;
}

void vt_refused_forget(struct vt_refused *r, uint64_t page)
{
	struct slot *s = &r->slot[page & r->mask];

	if (s->key == page + 1)
		s->key = 0;
}
