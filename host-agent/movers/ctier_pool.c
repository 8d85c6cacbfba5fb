// SPDX-License-Identifier: GPL-2.0-or-later
/* The pool ops registry and the page allocator the pools share. */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "ctier_pool.h"

static const struct vt_pool_ops *const pools[] = {
	[VT_POOL_ZSMALLOC] = &vt_pool_zsmalloc_ops,
	[VT_POOL_ZBUD] = &vt_pool_zbud_ops,
};

int vt_pool_grow(void **arr, uint64_t *cap, uint64_t need, size_t elem)
{
	uint64_t n = *cap ? *cap : 64;
	void *p;

	if (need < *cap)
		return 0;
	while (n <= need)
		n *= 2;
	p = g_try_realloc(*arr, n * elem);
	if (!p)
		return -ENOMEM;
	memset((char *)p + *cap * elem, 0, (n - *cap) * elem);
	*arr = p;
	*cap = n;
	return 0;
}

int vt_pool_init(struct vt_pool *p, enum vt_pool_kind kind, struct vt_medium *medium)
{
	memset(p, 0, sizeof(*p));
	if ((unsigned int)kind >= G_N_ELEMENTS(pools))
		return -EINVAL;
	p->ops = pools[kind];
	p->medium = medium;
	p->pages.nr = MIN(medium->size / VT_POOL_PAGE, (uint64_t)UINT32_MAX - 1);
	return p->ops->init(p);
}

void vt_pool_fini(struct vt_pool *p)
{
	if (!p->ops)
		return;
	p->ops->fini(p);
	g_free(p->pages.used);
	memset(p, 0, sizeof(*p));
}

uint64_t vt_pool_metadata_bytes(struct vt_pool *p)
{
	return p->ops->metadata_bytes(p) + p->pages.words * sizeof(uint64_t);
}

static bool page_used(const struct vt_pool_pages *pp, uint64_t i)
{
	return i / 64 < pp->words && (pp->used[i / 64] >> (i % 64)) & 1;
}

static int mark(struct vt_pool *p, uint64_t first, unsigned int n, bool used)
{
	struct vt_pool_pages *pp = &p->pages;
	int r = vt_pool_grow((void **)&pp->used, &pp->words, (first + n - 1) / 64,
			     sizeof(uint64_t));

	if (r < 0)
		return r;
	for (uint64_t i = first; i < first + n; i++) {
		if (used)
			pp->used[i / 64] |= 1ULL << (i % 64);
		else
			pp->used[i / 64] &= ~(1ULL << (i % 64));
	}
	pp->in_use = used ? pp->in_use + n : pp->in_use - n;
	return 0;
}

int vt_pool_pages_alloc(struct vt_pool *p, unsigned int n, uint64_t *first)
{
	struct vt_pool_pages *pp = &p->pages;
	uint64_t i = pp->hint, run = 0;
	int r;

	/* next fit from the lowest possibly free page: pools stay dense */
	while (run < n) {
		if (i >= pp->nr)
			return -ENOSPC;
		if (!run && i % 64 == 0 && i / 64 < pp->words && pp->used[i / 64] == ~0ULL) {
			i += 64;
			continue;
		}
		run = page_used(pp, i) ? 0 : run + 1;
		i++;
	}
	*first = i - n;
	r = vt_medium_commit(p->medium, *first * VT_POOL_PAGE, (uint64_t)n * VT_POOL_PAGE);
	if (r < 0)
		return r;
	r = mark(p, *first, n, true);
	if (r < 0)
		return r;
	if (*first == pp->hint)
		pp->hint = *first + n;
	return 0;
}

int vt_pool_pages_claim(struct vt_pool *p, uint64_t first, unsigned int n)
{
	if (first + n > p->pages.nr || first + n < first)
		return -EUCLEAN;
	for (uint64_t i = first; i < first + n; i++)
		if (page_used(&p->pages, i))
			return -EUCLEAN;
	return mark(p, first, n, true);
}

void vt_pool_pages_free(struct vt_pool *p, uint64_t first, unsigned int n)
{
	mark(p, first, n, false);
	vt_medium_release(p->medium, first * VT_POOL_PAGE, (uint64_t)n * VT_POOL_PAGE);
	p->pages.hint = MIN(p->pages.hint, first);
}
