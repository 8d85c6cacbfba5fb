// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Two objects per pool page, after Linux's zbud: the first object starts at
 * the page's start, the last ends at its end, both rounded up to 64-byte
 * chunks. Pages holding one object sit on an unbuddied list by free chunks;
 * an allocation takes the first page with enough free chunks, else a new page.
 * Simple and predictable (a page frees as soon as both objects go), at most
 * 2:1 however well pages compress.
 *
 * Handle: pool page << 1 | side (0 first, 1 last).
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "ctier_pool.h"

#define CHUNK 64U
#define NCHUNKS (VT_POOL_PAGE / CHUNK)

struct zbud_page {
	uint8_t chunks[2];		/* per side; 0 free */
	uint32_t next, prev;		/* unbuddied list, page + 1; 0 none */
};

struct zbud_pool {
	uint32_t unbuddied[NCHUNKS];	/* by free chunks: first page + 1 */
	struct zbud_page *pg;
	uint64_t pg_cap;
};

static unsigned int chunks_of(uint32_t len)
{
	return (len + CHUNK - 1) / CHUNK;
}

static int zbud_init(struct vt_pool *p)
{
	p->priv = g_try_new0(struct zbud_pool, 1);
	return p->priv ? 0 : -ENOMEM;
}

static void zbud_fini(struct vt_pool *p)
{
	struct zbud_pool *zb = p->priv;

	if (!zb)
		return;
	g_free(zb->pg);
	g_free(zb);
	p->priv = NULL;
}

static unsigned int free_chunks(const struct zbud_page *pg)
{
	return NCHUNKS - pg->chunks[0] - pg->chunks[1];
}

/* On the list of its free chunks when exactly one side is used. */
static void list_del(struct zbud_pool *zb, uint64_t page)
{
	struct zbud_page *pg = &zb->pg[page];

	if (!(pg->chunks[0] || pg->chunks[1]) || (pg->chunks[0] && pg->chunks[1]))
		return;
	if (pg->prev)
		zb->pg[pg->prev - 1].next = pg->next;
	else
		zb->unbuddied[free_chunks(pg)] = pg->next;
	if (pg->next)
		zb->pg[pg->next - 1].prev = pg->prev;
	pg->next = pg->prev = 0;
}

static void list_add(struct zbud_pool *zb, uint64_t page)
{
	struct zbud_page *pg = &zb->pg[page];
	unsigned int f = free_chunks(pg);

	if (!(pg->chunks[0] || pg->chunks[1]) || (pg->chunks[0] && pg->chunks[1]) || f == 0)
		return;
	pg->prev = 0;
	pg->next = zb->unbuddied[f];
	if (pg->next)
		zb->pg[pg->next - 1].prev = (uint32_t)page + 1;
	zb->unbuddied[f] = (uint32_t)page + 1;
}

static int zbud_alloc(struct vt_pool *p, uint32_t len, uint64_t *handle)
{
	struct zbud_pool *zb = p->priv;
	unsigned int c = chunks_of(len);
	uint64_t page;
	int side, r;

	if (len == 0 || len > VT_POOL_PAGE)
		return -EINVAL;
	for (unsigned int f = c; f < NCHUNKS; f++) {
		if (!zb->unbuddied[f])
			continue;
		page = zb->unbuddied[f] - 1;
		list_del(zb, page);
		side = zb->pg[page].chunks[0] ? 1 : 0;
		zb->pg[page].chunks[side] = (uint8_t)c;
		*handle = page << 1 | (uint64_t)side;
		return 0;
	}
	r = vt_pool_pages_alloc(p, 1, &page);
	if (r < 0)
		return r;
	if (vt_pool_grow((void **)&zb->pg, &zb->pg_cap, page, sizeof(*zb->pg))) {
		vt_pool_pages_free(p, page, 1);
		return -ENOMEM;
	}
	zb->pg[page].chunks[0] = (uint8_t)c;
	list_add(zb, page);
	*handle = page << 1;
	return 0;
}

static struct zbud_page *lookup(struct zbud_pool *zb, uint64_t handle, uint32_t len)
{
	uint64_t page = handle >> 1;

	if (len == 0 || len > VT_POOL_PAGE || page >= zb->pg_cap ||
	    zb->pg[page].chunks[handle & 1] != chunks_of(len))
		return NULL;
	return &zb->pg[page];
}

static void zbud_free(struct vt_pool *p, uint64_t handle, uint32_t len)
{
	struct zbud_pool *zb = p->priv;
	struct zbud_page *pg = lookup(zb, handle, len);
	uint64_t page = handle >> 1;

	if (!pg)
		return;
	list_del(zb, page);
	pg->chunks[handle & 1] = 0;
	if (pg->chunks[0] || pg->chunks[1])
		list_add(zb, page);
	else
		vt_pool_pages_free(p, page, 1);
}

static int zbud_claim(struct vt_pool *p, uint64_t handle, uint32_t len)
{
	struct zbud_pool *zb = p->priv;
	uint64_t page = handle >> 1;
	unsigned int side = handle & 1, c = chunks_of(len);
	struct zbud_page *pg;

	if (len == 0 || len > VT_POOL_PAGE || page >= p->pages.nr)
		return -EUCLEAN;
	if (vt_pool_grow((void **)&zb->pg, &zb->pg_cap, page, sizeof(*zb->pg)))
		return -ENOMEM;
	pg = &zb->pg[page];
	if (pg->chunks[side] || free_chunks(pg) < c)
		return -EUCLEAN;
	if (!pg->chunks[0] && !pg->chunks[1] && vt_pool_pages_claim(p, page, 1) < 0)
		return -EUCLEAN;
	list_del(zb, page);
	pg->chunks[side] = (uint8_t)c;
	list_add(zb, page);
	return 0;
}

static int zbud_locate(struct vt_pool *p, uint64_t handle, uint32_t len, uint64_t *off)
{
	struct zbud_pool *zb = p->priv;
	uint64_t page = handle >> 1;

	if (!lookup(zb, handle, len))
		return -EUCLEAN;
	*off = page * VT_POOL_PAGE;
	if (handle & 1)
		*off += VT_POOL_PAGE - chunks_of(len) * CHUNK;
	return 0;
}

static uint64_t zbud_metadata_bytes(struct vt_pool *p)
{
	struct zbud_pool *zb = p->priv;

	return sizeof(*zb) + zb->pg_cap * sizeof(*zb->pg);
}

const struct vt_pool_ops vt_pool_zbud_ops = {
	.name = "zbud",
	.init = zbud_init,
	.fini = zbud_fini,
	.claim = zbud_claim,
	.alloc = zbud_alloc,
	.free = zbud_free,
	.locate = zbud_locate,
	.metadata_bytes = zbud_metadata_bytes,
};
