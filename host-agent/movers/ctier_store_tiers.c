// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The page store's tier slots (ctier_store_int.h): their records, pool
 * files and codecs, and the slot each configured spec gets.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctier_store_int.h"

/* A spec with padding and string tails zeroed: records compare with memcmp. */
static void spec_norm(struct vt_ctier_spec *out, const struct vt_ctier_spec *in)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->name, in->name, strnlen(in->name, sizeof(out->name) - 1));
	out->codec = in->codec;
	out->level = in->level;
	out->pool = in->pool;
	out->medium = in->medium;
	out->node = in->medium == VT_MEDIUM_NODE ? in->node : -1;
	if (in->medium == VT_MEDIUM_REMOTE)
		out->pool = VT_POOL_ZSMALLOC;	/* no pool: one value, so records compare */
	if (in->medium == VT_MEDIUM_FILE)
		memcpy(out->dir, in->dir, strnlen(in->dir, sizeof(out->dir) - 1));
	out->max_stored_pct = in->max_stored_pct;
	out->capacity_bytes = in->capacity_bytes;
}

bool cts_spec_ok(const struct vt_ctier_spec *s)
{
	const struct vt_codec_ops *c = vt_codec_get(s->codec);

	return c && vt_codec_level_ok(c, s->level) &&
	       (s->pool == VT_POOL_ZSMALLOC || s->pool == VT_POOL_ZBUD) &&
	       ((s->medium == VT_MEDIUM_NODE && s->node >= 0) ||
		(s->medium == VT_MEDIUM_FILE && s->dir[0] == '/') ||
		(s->medium == VT_MEDIUM_REMOTE && !s->dir[0])) &&
	       s->max_stored_pct >= 10 && s->max_stored_pct <= 100 && s->name[0];
}

static uint32_t tier_crc(const struct hdr_tier *t)
{
	struct hdr_tier c = *t;

	c.used = TIER_USED;
	c.crc = 0;
	return crc(&c, sizeof(c));
}

static void hex16(const uint8_t *b, char out[33])
{
	for (unsigned int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/*
 * The pool file of slot @slot: in the store directory for a node medium;
 * for a file medium, in the spec's directory, named by the store's own id
 * (no other store can have that name: it is never another's to open,
 * truncate or unlink). The header's ident must be valid.
 */
void cts_pool_path(const char *dir, const struct store_hdr *h, unsigned int slot, char *buf,
		      size_t len)
{
	const struct vt_ctier_spec *spec = &h->tier[slot].spec;
	char id[33];

	if (spec->medium == VT_MEDIUM_NODE) {
		snprintf(buf, len, "%s/pool-%u", dir, slot);
		return;
	}
	hex16(h->ident.store_id, id);
	snprintf(buf, len, "%s/vtier-s%s-%u.pool", spec->dir, id, slot);
}

/* A version-1 store's name of that file: shared by stores of the same uuid and backend crc. */
void cts_legacy_pool_path(const struct store_hdr *h, unsigned int slot, char *buf, size_t len)
{
	char uuid[33];

	hex16(h->key.vm_uuid, uuid);
	snprintf(buf, len, "%s/vtier-%s-%08x-%u.pool", h->tier[slot].spec.dir, uuid,
		 crc(h->key.backend_id, strnlen(h->key.backend_id, sizeof(h->key.backend_id))),
		 slot);
}

void cts_tier_close(struct tier *t)
{
	if (t->spare) {
		for (unsigned int i = 0; i < t->spare->len; i++)
			t->codec->ctx_free(t->spare->pdata[i]);
		g_ptr_array_free(t->spare, TRUE);
	}
	if (tier_remote(t))
		cts_remote_close(t);
	vt_pool_fini(&t->pool);
	if (t->medium_open)
		vt_medium_close(&t->medium);
	if (t->codec && t->ctx)
		t->codec->ctx_free(t->ctx);
	memset(t, 0, sizeof(*t));
}

/* Open slot @slot's pool (@create: a fresh file) and codec. */
int cts_tier_open(struct vt_store *s, unsigned int slot, bool create, char *why, size_t wl)
{
	struct tier *t = &s->tier[slot];
	const struct hdr_tier *rec = &s->hdr->tier[slot];
	char path[512];
	int r;

	memset(t, 0, sizeof(*t));
	t->spec = rec->spec;
	t->codec = vt_codec_get(t->spec.codec);
	t->spare = g_ptr_array_new();
	t->ctx = t->codec->ctx_new(t->spec.level);
	if (!t->ctx)
		return cts_fail(why, wl, -ENOMEM, "tier %s: no memory for its codec", t->spec.name);
	if (tier_remote(t)) {
		/* no pool: the servers hold the bytes, the client comes at attach */
		g_mutex_init(&t->rput);
		t->drops = g_array_new(FALSE, FALSE, sizeof(uint64_t));
		t->max_bytes = t->spec.max_stored_pct * PAGE / 100;
		g_strlcpy(t->st.name, t->spec.name, sizeof(t->st.name));
		g_strlcpy(t->medium.map.placement, "remote", sizeof(t->medium.map.placement));
		t->live = true;
		return 0;
	}
	cts_pool_path(s->dir, s->hdr, slot, path, sizeof(path));
	r = vt_medium_open(&t->medium, path, t->spec.medium, t->spec.node, rec->pool_bytes, create);
	if (r == -EEXIST) {
		/* ours (the name carries this store's id): left by a kill before its record */
		g_debug("ctier: %s: a pool file of this store left by a crash; replaced", path);
		unlink(path);
		r = vt_medium_open(&t->medium, path, t->spec.medium, t->spec.node,
				   rec->pool_bytes, create);
	}
	if (r < 0) {
		cts_tier_close(t);
		return cts_fail(why, wl, !create && r == -ENOENT ? -EUCLEAN : r, "tier %s: pool file "
				"%s: %s", rec->spec.name, path, g_strerror(-r));
	}
	t->medium_open = true;
	if (!create && t->medium.size != rec->pool_bytes) {
		uint64_t size = t->medium.size;

		cts_tier_close(t);
		return cts_fail(why, wl, -EUCLEAN, "tier %s: pool file %s is %llu bytes, the header "
				"says %llu", rec->spec.name, path, (unsigned long long)size,
				(unsigned long long)rec->pool_bytes);
	}
	r = vt_pool_init(&t->pool, t->spec.pool, &t->medium);
	if (r < 0) {
		cts_tier_close(t);
		return cts_fail(why, wl, r, "tier %s: pool: %s", rec->spec.name, g_strerror(-r));
	}
	t->max_bytes = t->spec.max_stored_pct * PAGE / 100;
	g_strlcpy(t->st.name, t->spec.name, sizeof(t->st.name));
	t->live = true;
	return 0;
}

/* Write tier record @slot for @spec (used word last), create its pool. */
static int tier_add(struct vt_store *s, unsigned int slot, const struct vt_ctier_spec *spec,
		    char *why, size_t wl)
{
	struct hdr_tier *rec = &s->hdr->tier[slot];
	uint64_t bytes = spec->capacity_bytes ? spec->capacity_bytes : s->nr_pages * PAGE;
	int r;

	atomic_store_explicit((_Atomic uint32_t *)&rec->used, 0, memory_order_release);
	memset(rec, 0, sizeof(*rec));
	spec_norm(&rec->spec, spec);
	rec->pool_bytes = bytes / PAGE * PAGE;
	if (!rec->pool_bytes)
		return cts_fail(why, wl, -EINVAL, "tier %s: capacity below one page", spec->name);
	rec->crc = tier_crc(rec);
	/*
	 * The pool file first: a tier that cannot open (no such node, no such
	 * directory) leaves no record that would make the next open fail.
	 */
	r = cts_tier_open(s, slot, true, why, wl);
	if (r < 0) {
		memset(rec, 0, sizeof(*rec));
		return r;
	}
	/* a record torn before this store is ignored on reopen (no entry names it yet) */
	atomic_store_explicit((_Atomic uint32_t *)&rec->used, TIER_USED, memory_order_release);
	return 0;
}

/* Forget slot @slot: record first, then the pool file. */
static void tier_remove(struct vt_store *s, unsigned int slot)
{
	char path[512];

	cts_pool_path(s->dir, s->hdr, slot, path, sizeof(path));
	cts_tier_close(&s->tier[slot]);
	atomic_store_explicit((_Atomic uint32_t *)&s->hdr->tier[slot].used, 0,
			      memory_order_release);
	unlink(path);
}

/* Slots for @specs: the same (name, spec) keeps its slot; others get a new one. */
int cts_map_tiers(struct vt_store *s, const struct vt_ctier_spec *specs, unsigned int nr,
		     char *why, size_t wl)
{
	bool wanted[VT_CTIER_MAX] = { false };
	int api = 0, r;

	for (unsigned int i = 0; i < nr; i++) {
		struct vt_ctier_spec n;

		spec_norm(&n, &specs[i]);
		s->api_slot[i] = -1;
		for (unsigned int k = 0; k < VT_CTIER_MAX; k++)
			if (s->tier[k].live && !wanted[k] &&
			    memcmp(&s->hdr->tier[k].spec, &n, sizeof(n)) == 0) {
				s->api_slot[i] = (int)k;
				wanted[k] = true;
				break;
			}
	}
	/* slots of tiers no longer configured and without pages go */
	for (unsigned int k = 0; k < VT_CTIER_MAX; k++)
		if (s->tier[k].live && !wanted[k] && !s->tier[k].st.pages)
			tier_remove(s, k);
	for (unsigned int i = 0; i < nr; i++) {
		unsigned int k;

		if (s->api_slot[i] >= 0)
			continue;
		for (k = 0; k < VT_CTIER_MAX && (s->tier[k].live || s->hdr->tier[k].used); k++)
			;
		if (k == VT_CTIER_MAX)
			return cts_fail(why, wl, -ENOSPC, "tier %s: the store already has %u tiers "
					"holding pages", specs[i].name, VT_CTIER_MAX);
		r = tier_add(s, k, &specs[i], why, wl);
		if (r < 0)
			return r;
		s->api_slot[i] = (int)k;
		wanted[k] = true;
	}
	for (unsigned int i = 0; i < nr; i++)
		s->tier[s->api_slot[i]].api = api++;
	/* tiers kept readable for their pages: indices from @nr on */
	for (unsigned int k = 0; k < VT_CTIER_MAX; k++)
		if (s->tier[k].live && !wanted[k]) {
			s->tier[k].api = api;
			s->api_slot[api++] = (int)k;
		}
	s->nr_api = (unsigned int)api;
	s->nr_specs = nr;
	return 0;
}

/* A tier record whose crc (taken as if used) and spec hold. */
bool cts_rec_ok(const struct hdr_tier *t)
{
	return t->crc == tier_crc(t) && cts_spec_ok(&t->spec) && t->pool_bytes &&
	       !(t->pool_bytes % PAGE) && memchr(t->spec.dir, 0, sizeof(t->spec.dir));
}
