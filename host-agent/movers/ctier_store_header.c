// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The page store's header (ctier_store_int.h): the store's id, its owner
 * slots, the checks at reopen and the upgrade of a version-1 store.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "ctier_store_int.h"

static uint32_t owner_crc(const struct hdr_owner *o)
{
	return crc(o, offsetof(struct hdr_owner, crc));
}

bool cts_ident_ok(const struct hdr_ident *id)
{
	return id->crc == crc(id->store_id, sizeof(id->store_id));
}

int cts_new_store_id(struct hdr_ident *id)
{
	uint8_t b[16];

	for (size_t got = 0; got < sizeof(b);) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got += (size_t)n;
	}
	id->crc = 0;
	atomic_thread_fence(memory_order_release);
	memcpy(id->store_id, b, sizeof(b));
	id->pad = 0;
	atomic_thread_fence(memory_order_release);
	id->crc = crc(id->store_id, sizeof(id->store_id));
	return 0;
}

/*
 * A store written before stores had an id (version 1, file pools named by
 * uuid and backend crc): give it an id (its own crc: a torn one is made
 * again), then rename each file pool to its name by that id, so that it is
 * this store's alone from now on. The version word stays 1 (changing it
 * would tear the header's crc): a valid id says the renames began, and a
 * reopen finishes any left. 0, or -EUCLEAN when a pool file is under
 * neither name.
 */
static int upgrade_v1(struct vt_store *s, char *why, size_t wl)
{
	struct store_hdr *h = s->hdr;
	int r;

	if (!cts_ident_ok(&h->ident)) {
		r = cts_new_store_id(&h->ident);
		if (r < 0)
			return cts_fail(why, wl, r, "%s: no store id: getrandom: %s", s->dir,
					g_strerror(-r));
	}
	for (unsigned int k = 0; k < VT_CTIER_MAX; k++) {
		char old[512], path[512];

		if (h->tier[k].used != TIER_USED || !cts_rec_ok(&h->tier[k]) ||
		    h->tier[k].spec.medium != VT_MEDIUM_FILE)
			continue;
		cts_pool_path(s->dir, h, k, path, sizeof(path));
		if (access(path, F_OK) == 0)
			continue;
		cts_legacy_pool_path(h, k, old, sizeof(old));
		if (rename(old, path) < 0)
			return cts_fail(why, wl, -EUCLEAN, "tier %s: pool file %s: %s (renaming it to "
					"%s)", h->tier[k].spec.name, old, g_strerror(errno), path);
		g_debug("ctier: %s: version-1 pool %s renamed %s", s->dir, old, path);
	}
	return 0;
}

int cts_check_header(struct vt_store *s, const struct vt_store_key *key, char *why,
			size_t wl)
{
	struct store_hdr *h = s->hdr;

	if (!memcmp(h->magic, "\0\0\0\0\0\0\0\0", 8))
		return cts_fail(why, wl, -ENOENT, "%s: the store was never finished", s->dir);
	if (memcmp(h->magic, HDR_MAGIC, 8) || (h->version != HDR_VERSION && h->version != 1) ||
	    h->hdr_bytes != HDR_BYTES || h->crc != crc(h, offsetof(struct store_hdr, crc)) ||
	    (h->version == HDR_VERSION && !cts_ident_ok(&h->ident)))
		return cts_fail(why, wl, -EUCLEAN, "%s: bad header (magic, version, checksum or "
				"store id)", s->dir);
	if (memcmp(h->key.vm_uuid, key->vm_uuid, 16) ||
	    strncmp(h->key.backend_id, key->backend_id, sizeof(key->backend_id)) ||
	    h->key.size_bytes != key->size_bytes || h->key.page_size != key->page_size)
		return cts_fail(why, wl, -ESTALE, "%s: the store belongs to another backend "
				"(%.64s, %llu bytes)", s->dir, h->key.backend_id,
				(unsigned long long)h->key.size_bytes);
	if (h->nr_chunks != s->nr_chunks || h->chunk_pages != CHUNK_PAGES ||
	    h->entry_bytes != sizeof(struct entry) || s->idx_map_bytes != s->idx_bytes)
		return cts_fail(why, wl, -EUCLEAN, "%s: bad header geometry", s->dir);
	if (h->version == 1) {
		int r = upgrade_v1(s, why, wl);

		if (r < 0)
			return r;
	}
	for (unsigned int k = 0; k < VT_CTIER_MAX; k++) {
		struct hdr_tier *t = &h->tier[k];
		int r;

		if (t->used != TIER_USED) {
			if (cts_rec_ok(t) && t->spec.medium == VT_MEDIUM_FILE) {
				/* added or removed when a kill came: a file left is ours */
				char path[512];

				cts_pool_path(s->dir, h, k, path, sizeof(path));
				unlink(path);
			}
			continue;
		}
		if (!cts_rec_ok(t)) {
			/* a record torn while being added: no entry can name it */
			g_debug("ctier: %s: tier record %u is torn; ignored", s->dir, k);
			t->used = 0;
			continue;
		}
		r = cts_tier_open(s, k, false, why, wl);
		if (r < 0)
			return r;
	}
	return 0;
}

void cts_write_header(struct vt_store *s, const struct vt_store_key *key,
			 const struct hdr_ident *id)
{
	struct store_hdr *h = s->hdr;

	memset(h, 0, sizeof(*h));
	memcpy(h->key.vm_uuid, key->vm_uuid, 16);
	memcpy(h->key.backend_id, key->backend_id,
	       strnlen(key->backend_id, sizeof(h->key.backend_id) - 1));
	h->key.size_bytes = key->size_bytes;
	h->key.page_size = key->page_size;
	memcpy(&h->ident, id, sizeof(*id));
	h->version = HDR_VERSION;
	h->hdr_bytes = HDR_BYTES;
	h->nr_chunks = s->nr_chunks;
	h->chunk_pages = CHUNK_PAGES;
	h->entry_bytes = sizeof(struct entry);
	h->crc = crc(h, offsetof(struct store_hdr, crc));
	/* the magic last: a create torn before it reopens as "never finished" */
	memcpy(h->magic, HDR_MAGIC, 8);
	h->crc = crc(h, offsetof(struct store_hdr, crc));
	h->owner[0].seq = 1;
	h->owner[0].crc = owner_crc(&h->owner[0]);
}

static const struct hdr_owner *owner_cur(const struct store_hdr *h)
{
	const struct hdr_owner *a = &h->owner[0], *b = &h->owner[1];
	bool va = a->seq && a->crc == owner_crc(a), vb = b->seq && b->crc == owner_crc(b);

	if (va && vb)
		return a->seq > b->seq ? a : b;
	return va ? a : vb ? b : NULL;
}

int vt_store_get_owner(struct vt_store *s, struct vt_store_owner *owner)
{
	const struct hdr_owner *o;

	pthread_mutex_lock(&s->lock);
	o = owner_cur(s->hdr);
	if (o)
		*owner = o->o;
	else
		memset(owner, 0, sizeof(*owner));
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* The slot not holding the current owner is rewritten: a torn write keeps the old one. */
int vt_store_set_owner(struct vt_store *s, const struct vt_store_owner *owner)
{
	const struct hdr_owner *cur;
	struct hdr_owner *next;

	pthread_mutex_lock(&s->lock);
	cur = owner_cur(s->hdr);
	next = cur == &s->hdr->owner[0] ? &s->hdr->owner[1] : &s->hdr->owner[0];
	next->crc = 0;
	next->seq = 0;
	atomic_thread_fence(memory_order_release);
	next->o = *owner;
	next->pad = 0;
	next->seq = (cur ? cur->seq : 0) + 1;
	atomic_thread_fence(memory_order_release);
	next->crc = owner_crc(next);
	pthread_mutex_unlock(&s->lock);
	return 0;
}
