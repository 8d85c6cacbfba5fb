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

static void release_freed(struct vt_pool *p);

void vt_pool_fini(struct vt_pool *p)
{
	if (!p->ops)
		return;
	p->ops->fini(p);
	if (p->pages.nr_freed)
		release_freed(p);
	g_free(p->pages.used);
	g_free(p->pages.freed);
	memset(p, 0, sizeof(*p));
}

uint64_t vt_pool_metadata_bytes(struct vt_pool *p)
{
	return p->ops->metadata_bytes(p) + (p->pages.words + p->pages.freed_cap) * sizeof(uint64_t);
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

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Punch out the freed pages that are still free, as runs. */
static void release_freed(struct vt_pool *p)
{
	struct vt_pool_pages *pp = &p->pages;
	uint64_t start = 0, len = 0;

	qsort(pp->freed, pp->nr_freed, sizeof(*pp->freed), cmp_u64);
	for (uint64_t i = 0; i <= pp->nr_freed; i++) {
		uint64_t pg = i < pp->nr_freed ? pp->freed[i] : UINT64_MAX;

		if (pg != UINT64_MAX && page_used(pp, pg))
			continue;	/* taken again meanwhile */
		if (len && pg == start + len)
			len++;
		else if (len && pg == start + len - 1)
			continue;	/* freed twice: as one */
		else {
			if (len)
				vt_medium_release(p->medium, start * VT_POOL_PAGE, len * VT_POOL_PAGE);
			start = pg;
			len = 1;
		}
	}
	pp->nr_freed = 0;
}

void vt_pool_pages_free(struct vt_pool *p, uint64_t first, unsigned int n)
{
	struct vt_pool_pages *pp = &p->pages;

	mark(p, first, n, false);
	pp->hint = MIN(pp->hint, first);
	if (vt_pool_grow((void **)&pp->freed, &pp->freed_cap, pp->nr_freed + n - 1,
			 sizeof(*pp->freed)) < 0) {
		vt_medium_release(p->medium, first * VT_POOL_PAGE, (uint64_t)n * VT_POOL_PAGE);
		return;
	}
	for (unsigned int i = 0; i < n; i++)
		pp->freed[pp->nr_freed++] = first + i;
	if (pp->nr_freed >= VT_POOL_RELEASE_BATCH)
		release_freed(p);
}

uint64_t vt_pool_pages_end(const struct vt_pool *p)
{
	const struct vt_pool_pages *pp = &p->pages;

	for (uint64_t w = pp->words; w-- > 0;)
		if (pp->used[w])
			return w * 64 + 64 - (uint64_t)__builtin_clzll(pp->used[w]);
	return 0;
}

void vt_pool_trim(struct vt_pool *p)
{
	struct vt_pool_pages *pp = &p->pages;
	uint64_t i = 0;

	pp->nr_freed = 0;
	while (i < pp->nr) {
		uint64_t start;

		while (i < pp->nr && page_used(pp, i))
			i++;
		start = i;
		/* past the bitmap every page is free */
		while (i < pp->nr && !page_used(pp, i))
			i = i / 64 >= pp->words ? pp->nr : i + 1;
		if (i > start)
			vt_medium_release(p->medium, start * VT_POOL_PAGE, (i - start) * VT_POOL_PAGE);
	}
}
