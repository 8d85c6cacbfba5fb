// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Size-class pool, after Linux's zsmalloc: objects are rounded up to a
 * multiple of 32 bytes (128 classes up to a page) and packed back to back in
 * zspages of 1..4 contiguous pool pages, the page count per class chosen to
 * waste least (as get_pages_per_zspage() does). Objects may straddle pool
 * pages within their zspage: the medium is flat.
 *
 * Handle: first pool page of the zspage << 12 | object index. The class
 * comes from the object's length, so a handle and a length give the offset.
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "ctier_pool.h"

#define CLASS_DELTA 32U
#define NR_CLASSES (VT_POOL_PAGE / CLASS_DELTA)
#define MAX_ZSPAGE_PAGES 4U
#define IDX_BITS 12

struct zspage {
	uint64_t first;			/* first pool page */
	struct zspage *next, *prev;	/* in its class's list of zspages with room */
	uint16_t cls, inuse;
	uint64_t used[];		/* object bitmap */
};

struct size_class {
	uint32_t size;
	uint16_t pages, objs;
	struct zspage *partial;
};

struct zs_pool {
	struct size_class cls[NR_CLASSES];
	struct zspage **by_page;	/* first page -> zspage */
	uint64_t by_page_cap;
	uint64_t desc_bytes;
};

static unsigned int class_of(uint32_t len)
{
	return (len + CLASS_DELTA - 1) / CLASS_DELTA - 1;
}

static size_t zspage_bytes(const struct size_class *c)
{
	return sizeof(struct zspage) + (c->objs + 63U) / 64 * sizeof(uint64_t);
}

static int zs_init(struct vt_pool *p)
{
	struct zs_pool *zs = g_try_new0(struct zs_pool, 1);

	if (!zs)
		return -ENOMEM;
	for (unsigned int i = 0; i < NR_CLASSES; i++) {
		struct size_class *c = &zs->cls[i];
		unsigned int best_waste = UINT32_MAX;

		c->size = (i + 1) * CLASS_DELTA;
		for (unsigned int k = 1; k <= MAX_ZSPAGE_PAGES; k++) {
			unsigned int bytes = k * VT_POOL_PAGE, waste = bytes % c->size;

			/* waste per page, compared without division */
			if (waste * MAX_ZSPAGE_PAGES / k < best_waste) {
				best_waste = waste * MAX_ZSPAGE_PAGES / k;
				c->pages = (uint16_t)k;
				c->objs = (uint16_t)(bytes / c->size);
			}
		}
	}
	p->priv = zs;
	return 0;
}

static void zs_fini(struct vt_pool *p)
{
	struct zs_pool *zs = p->priv;

	if (!zs)
		return;
	for (uint64_t i = 0; i < zs->by_page_cap; i++)
		g_free(zs->by_page[i]);
	g_free(zs->by_page);
	g_free(zs);
	p->priv = NULL;
}

static void list_add(struct size_class *c, struct zspage *z)
{
	z->prev = NULL;
	z->next = c->partial;
	if (c->partial)
		c->partial->prev = z;
	c->partial = z;
}

static void list_del(struct size_class *c, struct zspage *z)
{
	if (z->prev)
		z->prev->next = z->next;
	else
		c->partial = z->next;
	if (z->next)
		z->next->prev = z->prev;
	z->next = z->prev = NULL;
}

static void set_obj(struct size_class *c, struct zspage *z, unsigned int idx)
{
	z->used[idx / 64] |= 1ULL << (idx % 64);
	if (++z->inuse == c->objs)
		list_del(c, z);
}

/* A new, empty zspage of class @cls at @first (pages already taken). */
static struct zspage *zspage_new(struct vt_pool *p, unsigned int cls, uint64_t first)
{
	struct zs_pool *zs = p->priv;
	struct size_class *c = &zs->cls[cls];
	struct zspage *z;

	if (vt_pool_grow((void **)&zs->by_page, &zs->by_page_cap, first, sizeof(*zs->by_page)))
		return NULL;
	z = g_try_malloc0(zspage_bytes(c));
	if (!z)
		return NULL;
	z->first = first;
	z->cls = (uint16_t)cls;
	zs->by_page[first] = z;
	zs->desc_bytes += zspage_bytes(c);
	list_add(c, z);
	return z;
}

static int zs_alloc(struct vt_pool *p, uint32_t len, uint64_t *handle)
{
	struct zs_pool *zs = p->priv;
	unsigned int cls = class_of(len), idx = 0;
	struct size_class *c;
	struct zspage *z;

	if (len == 0 || len > VT_POOL_PAGE)
		return -EINVAL;
	c = &zs->cls[cls];
	z = c->partial;
	if (!z) {
		uint64_t first;
		int r = vt_pool_pages_alloc(p, c->pages, &first);

		if (r < 0)
			return r;
		z = zspage_new(p, cls, first);
		if (!z) {
			vt_pool_pages_free(p, first, c->pages);
			return -ENOMEM;
		}
	}
	while (z->used[idx / 64] == ~0ULL)
		idx += 64;
	while ((z->used[idx / 64] >> (idx % 64)) & 1)
		idx++;
	set_obj(c, z, idx);
	*handle = z->first << IDX_BITS | idx;
	return 0;
}

/* The live zspage and class of (@handle, @len), or NULL. */
static struct zspage *lookup(struct zs_pool *zs, uint64_t handle, uint32_t len,
			     unsigned int *idx)
{
	uint64_t first = handle >> IDX_BITS;
	struct zspage *z;

	*idx = handle & ((1U << IDX_BITS) - 1);
	if (len == 0 || len > VT_POOL_PAGE || first >= zs->by_page_cap)
		return NULL;
	z = zs->by_page[first];
	if (!z || z->cls != class_of(len) || *idx >= zs->cls[z->cls].objs ||
	    !((z->used[*idx / 64] >> (*idx % 64)) & 1))
		return NULL;
	return z;
}

static void zs_free(struct vt_pool *p, uint64_t handle, uint32_t len)
{
	struct zs_pool *zs = p->priv;
	unsigned int idx;
	struct zspage *z = lookup(zs, handle, len, &idx);
	struct size_class *c;

	if (!z)
		return;
	c = &zs->cls[z->cls];
	if (z->inuse == c->objs)
		list_add(c, z);
	z->used[idx / 64] &= ~(1ULL << (idx % 64));
	if (--z->inuse)
		return;
	list_del(c, z);
	zs->by_page[z->first] = NULL;
	zs->desc_bytes -= zspage_bytes(c);
	vt_pool_pages_free(p, z->first, c->pages);
	g_free(z);
}

static int zs_claim(struct vt_pool *p, uint64_t handle, uint32_t len)
{
	struct zs_pool *zs = p->priv;
	uint64_t first = handle >> IDX_BITS;
	unsigned int idx = handle & ((1U << IDX_BITS) - 1), cls;
	struct zspage *z = NULL;

	if (len == 0 || len > VT_POOL_PAGE)
		return -EUCLEAN;
	cls = class_of(len);
	if (idx >= zs->cls[cls].objs)
		return -EUCLEAN;
	if (first < zs->by_page_cap)
		z = zs->by_page[first];
	if (!z) {
		if (vt_pool_pages_claim(p, first, zs->cls[cls].pages) < 0)
			return -EUCLEAN;
		z = zspage_new(p, cls, first);
		if (!z)
			return -ENOMEM;
	}
	if (z->cls != cls || (z->used[idx / 64] >> (idx % 64)) & 1)
		return -EUCLEAN;
	set_obj(&zs->cls[cls], z, idx);
	return 0;
}

static int zs_locate(struct vt_pool *p, uint64_t handle, uint32_t len, uint64_t *off)
{
	struct zs_pool *zs = p->priv;
	unsigned int idx;
	struct zspage *z = lookup(zs, handle, len, &idx);

	if (!z)
		return -EUCLEAN;
	*off = z->first * VT_POOL_PAGE + (uint64_t)idx * zs->cls[z->cls].size;
	return 0;
}

static uint64_t zs_metadata_bytes(struct vt_pool *p)
{
	struct zs_pool *zs = p->priv;

	return sizeof(*zs) + zs->by_page_cap * sizeof(*zs->by_page) + zs->desc_bytes;
}

const struct vt_pool_ops vt_pool_zsmalloc_ops = {
	.name = "zsmalloc",
	.init = zs_init,
	.fini = zs_fini,
	.claim = zs_claim,
	.alloc = zs_alloc,
	.free = zs_free,
	.locate = zs_locate,
	.metadata_bytes = zs_metadata_bytes,
};
