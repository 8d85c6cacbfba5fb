// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The page store of one guest memory backend: index, identity, crash safety
 * and stats. Codecs, pools and media are behind their own ops (ctier_codec.h,
 * ctier_pool.h, ctier_medium.h).
 *
 * On-disk layout (all files in the store directory, tmpfs, MAP_SHARED;
 * integers native-endian: a store never leaves its host):
 *
 *   index   [header, 4 KiB][chunk table: u32 per 2 MiB chunk of the backend]
 *           header: magic "VTCTIER1", version, key, geometry, crc32c of those;
 *           two owner slots {seq, owner, crc32c}, the valid one with the
 *           higher seq wins; VT_CTIER_MAX tier records {used, crc32c, spec,
 *           pool size}, a slot per (name, spec) the store has seen; the
 *           store id {16 random bytes, crc32c} (version 2).
 *           chunk table: 0, or 1 + the entry block holding the chunk's pages.
 *   blocks  entry blocks of 8 KiB: 512 entries of 16 bytes, one per page of
 *           a chunk, allocated when the chunk gets its first page, unlinked
 *           and punched out when it loses its last.
 *           entry: u32 state (valid bit 31, kind 29:28, tier slot 27:24,
 *           magic 0x5c 23:16, compressed length 12:0), u32 crc32c of the
 *           uncompressed page, u64 location (pool handle, the SAME word, 0).
 *   pool-S  the pool of node-medium tier slot S (mapped, mbind to the node);
 *           file-medium pools are DIR/vtier-sSTOREID-S.pool of the spec.
 *
 * Isolation: every file a store owns is in its directory or named by its
 * id, created O_EXCL after the store's own files are removed, and unlinked
 * only by that name: no store opens, truncates or unlinks another's. A file
 * under our name found at create is ours (a kill between its creation and
 * its record) and is replaced. Version-1 stores (file pools named by uuid
 * and backend crc, which two stores could share) get an id and their file
 * pools renamed at reopen (upgrade_v1); one removed before a reopen leaves
 * them.
 *
 * Memory: 4 bytes per 2 MiB of backend in the chunk table (2 MiB per TiB),
 * 2 bytes per chunk of live counts in memory (1 MiB per TiB), and 8 KiB per
 * chunk that holds stored pages.
 *
 * Address space follows what is stored, not the backend's size: the blocks
 * file and each node pool are mapped in segments (ctier_medium.h) as far as
 * they are used: the blocks as they are added, a pool's pages as they are
 * committed, and at reopen up to the highest one a valid entry claimed; an
 * entry or object is only ever reached below that, so a get never maps.
 *
 * Crash safety (kill -9 at any instant; the files are in the page cache):
 * put writes the compressed bytes into the pool, then the entry's crc and
 * location, then its state word with a release store; a kill before the
 * state store leaves an invalid entry, ignored on reopen, whose pool slot is
 * free again since the allocators rebuild from valid entries only. A block is
 * zeroed and linked in the chunk table before any entry in it is written; a
 * linked block without valid entries is unlinked on reopen. drop clears the
 * state word first, then frees the pool slot, then unlinks an empty block.
 * Reopen trusts nothing: header crc, key, every chunk link and every valid
 * entry are checked, and the pools claim each object (two entries on one
 * slot, a slot outside its pool: -EUCLEAN).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctier.h"
#include "ctier_codec.h"
#include "ctier_csum.h"
#include "ctier_medium.h"
#include "ctier_pool.h"
#include "ctier_refused.h"
#include "thread_ns.h"

#define PAGE 4096U
#define CHUNK_PAGES 512U
#define HDR_BYTES 4096U
#define HDR_MAGIC "VTCTIER1"
#define HDR_VERSION 2U			/* 1: without a store id (upgraded on reopen) */
#define TIER_USED 0x72656974U		/* "tier" */

#define ST_VALID (1U << 31)
#define ST_KIND_SHIFT 28
#define ST_SLOT_SHIFT 24
#define ST_MAGIC (0x5cU << 16)
#define ST_LEN_MASK 0x1fffU
/* bits that must be zero in a valid state word */
#define ST_MBZ ((1U << 30) | 0xe000U)

struct entry {
	_Atomic uint32_t state;
	uint32_t crc;
	uint64_t loc;
};
_Static_assert(sizeof(struct entry) == 16, "entry");
#define BLOCK_BYTES (CHUNK_PAGES * sizeof(struct entry))

struct hdr_owner {
	uint64_t seq;
	struct vt_store_owner o;
	uint32_t crc;
	uint32_t pad;
};

struct hdr_tier {
	uint32_t used;
	uint32_t crc;
	struct vt_ctier_spec spec;
	uint64_t pool_bytes;
};

/* Zero in a version-1 header; written once, crc last. */
struct hdr_ident {
	uint8_t store_id[16];		/* random: names the store's files outside its directory */
	uint32_t crc;			/* over store_id */
	uint32_t pad;
};

struct store_hdr {
	char magic[8];
	uint32_t version, hdr_bytes;
	struct vt_store_key key;
	uint64_t nr_chunks;
	uint32_t chunk_pages, entry_bytes;
	uint32_t crc;			/* over everything above */
	uint32_t pad;
	struct hdr_owner owner[2];
	struct hdr_tier tier[VT_CTIER_MAX];
	struct hdr_ident ident;
};
_Static_assert(sizeof(struct store_hdr) <= HDR_BYTES, "header");

struct tier {
	bool live;			/* slot in use (record valid, pool open) */
	struct vt_ctier_spec spec;
	const struct vt_codec_ops *codec;
	void *ctx;			/* for gets, under the lock */
	GPtrArray *spare;		/* for puts, outside it: contexts not in use */
	struct vt_medium medium;
	bool medium_open;
	struct vt_pool pool;
	int api;			/* tier index callers use */
	uint32_t max_bytes;
	struct vt_store_tier_stats st;
};

struct vt_store {
	pthread_mutex_t lock;
	char *dir;
	int idx_fd, blk_fd;
	struct store_hdr *hdr;
	uint32_t *chunk;
	size_t idx_bytes;		/* for the key's backend size */
	size_t idx_map_bytes;		/* mapped: the file's size */
	struct vt_segmap blocks;	/* up to nr_chunks blocks, [0, blk_nr) in the file, mapped */
	uint64_t blk_nr;
	uint16_t *live;			/* valid entries per chunk */
	GArray *free_blocks;		/* uint32_t */
	uint64_t nr_pages, nr_chunks;
	struct tier tier[VT_CTIER_MAX];
	int api_slot[VT_CTIER_MAX];	/* caller's tier index -> slot */
	unsigned int nr_api;
	unsigned int nr_specs;		/* tiers from nr_specs on only keep their pages */
	uint8_t rbuf[2 * PAGE];		/* a file medium's object, read */
	struct vt_refused *refused;	/* pages a tier refused, by content */
};

static uint32_t crc(const void *p, size_t len)
{
	return vt_crc32c(p, len);
}

static int fail(char *why, size_t len, int r, const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static int fail(char *why, size_t len, int r, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
		g_debug("ctier: %s", why);
	}
	return r;
}

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
	if (in->medium == VT_MEDIUM_FILE)
		memcpy(out->dir, in->dir, strnlen(in->dir, sizeof(out->dir) - 1));
	out->max_stored_pct = in->max_stored_pct;
	out->capacity_bytes = in->capacity_bytes;
}

static bool spec_ok(const struct vt_ctier_spec *s)
{
	const struct vt_codec_ops *c = vt_codec_get(s->codec);

	return c && s->level >= c->min_level && s->level <= c->max_level &&
	       (s->pool == VT_POOL_ZSMALLOC || s->pool == VT_POOL_ZBUD) &&
	       ((s->medium == VT_MEDIUM_NODE && s->node >= 0) ||
		(s->medium == VT_MEDIUM_FILE && s->dir[0] == '/')) &&
	       s->max_stored_pct >= 10 && s->max_stored_pct <= 100 && s->name[0];
}

static uint32_t tier_crc(const struct hdr_tier *t)
{
	struct hdr_tier c = *t;

	c.used = TIER_USED;
	c.crc = 0;
	return crc(&c, sizeof(c));
}

static uint32_t owner_crc(const struct hdr_owner *o)
{
	return crc(o, offsetof(struct hdr_owner, crc));
}

static bool ident_ok(const struct hdr_ident *id)
{
	return id->crc == crc(id->store_id, sizeof(id->store_id));
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
static void pool_path(const char *dir, const struct store_hdr *h, unsigned int slot, char *buf,
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
static void legacy_pool_path(const struct store_hdr *h, unsigned int slot, char *buf, size_t len)
{
	char uuid[33];

	hex16(h->key.vm_uuid, uuid);
	snprintf(buf, len, "%s/vtier-%s-%08x-%u.pool", h->tier[slot].spec.dir, uuid,
		 crc(h->key.backend_id, strnlen(h->key.backend_id, sizeof(h->key.backend_id))),
		 slot);
}

static uint8_t *block_at(struct vt_store *s, uint64_t b)
{
	uint64_t room;

	return vt_segmap_at(&s->blocks, b * BLOCK_BYTES, &room);
}

static struct entry *entry_of(struct vt_store *s, uint64_t page)
{
	uint32_t b = atomic_load_explicit((_Atomic uint32_t *)&s->chunk[page / CHUNK_PAGES],
					  memory_order_acquire);

	if (!b || b > s->blk_nr)
		return NULL;
	/* blocks below blk_nr are mapped */
	return (struct entry *)block_at(s, b - 1) + page % CHUNK_PAGES;
}

static void tier_close(struct tier *t)
{
	if (t->spare) {
		for (unsigned int i = 0; i < t->spare->len; i++)
			t->codec->ctx_free(t->spare->pdata[i]);
		g_ptr_array_free(t->spare, TRUE);
	}
	vt_pool_fini(&t->pool);
	if (t->medium_open)
		vt_medium_close(&t->medium);
	if (t->codec && t->ctx)
		t->codec->ctx_free(t->ctx);
	memset(t, 0, sizeof(*t));
}

/* Open slot @slot's pool (@create: a fresh file) and codec. */
static int tier_open(struct vt_store *s, unsigned int slot, bool create, char *why, size_t wl)
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
		return fail(why, wl, -ENOMEM, "tier %s: no memory for its codec", t->spec.name);
	pool_path(s->dir, s->hdr, slot, path, sizeof(path));
	r = vt_medium_open(&t->medium, path, t->spec.medium, t->spec.node, rec->pool_bytes, create);
	if (r == -EEXIST) {
		/* ours (the name carries this store's id): left by a kill before its record */
		g_debug("ctier: %s: a pool file of this store left by a crash; replaced", path);
		unlink(path);
		r = vt_medium_open(&t->medium, path, t->spec.medium, t->spec.node,
				   rec->pool_bytes, create);
	}
	if (r < 0) {
		tier_close(t);
		return fail(why, wl, !create && r == -ENOENT ? -EUCLEAN : r, "tier %s: pool file "
			    "%s: %s", rec->spec.name, path, g_strerror(-r));
	}
	t->medium_open = true;
	if (!create && t->medium.size != rec->pool_bytes) {
		uint64_t size = t->medium.size;

		tier_close(t);
		return fail(why, wl, -EUCLEAN, "tier %s: pool file %s is %llu bytes, the header "
			    "says %llu", rec->spec.name, path, (unsigned long long)size,
			    (unsigned long long)rec->pool_bytes);
	}
	r = vt_pool_init(&t->pool, t->spec.pool, &t->medium);
	if (r < 0) {
		tier_close(t);
		return fail(why, wl, r, "tier %s: pool: %s", rec->spec.name, g_strerror(-r));
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
		return fail(why, wl, -EINVAL, "tier %s: capacity below one page", spec->name);
	rec->crc = tier_crc(rec);
	/*
	 * The pool file first: a tier that cannot open (no such node, no such
	 * directory) leaves no record that would make the next open fail.
	 */
	r = tier_open(s, slot, true, why, wl);
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

	pool_path(s->dir, s->hdr, slot, path, sizeof(path));
	tier_close(&s->tier[slot]);
	atomic_store_explicit((_Atomic uint32_t *)&s->hdr->tier[slot].used, 0,
			      memory_order_release);
	unlink(path);
}

/* Open (@create: empty) file @name of the store into *@fd; @path gets its name. */
static int open_file(struct vt_store *s, const char *name, bool create, int *fd, char *path,
		     size_t len, struct stat *st, char *why, size_t wl)
{
	snprintf(path, len, "%s/%s", s->dir, name);
	/* a create follows remove_files(): a file there now is not ours to truncate */
	*fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0), 0600);
	if (*fd < 0 || fstat(*fd, st) < 0)
		return fail(why, wl, -errno, "%s: %s", path, g_strerror(errno));
	return 0;
}

static int map_index(struct vt_store *s, bool create, char *why, size_t wl)
{
	char path[512];
	struct stat st;
	int r = open_file(s, "index", create, &s->idx_fd, path, sizeof(path), &st, why, wl);

	if (r < 0)
		return r;
	if (create) {
		if (ftruncate(s->idx_fd, (off_t)s->idx_bytes) < 0 ||
		    fallocate(s->idx_fd, 0, 0, (off_t)s->idx_bytes) < 0)
			return fail(why, wl, -errno, "%s: %s", path, g_strerror(errno));
	} else {
		if ((uint64_t)st.st_size < HDR_BYTES)
			return fail(why, wl, -EUCLEAN, "%s: %llu bytes, shorter than its header",
				    path, (unsigned long long)st.st_size);
		/* checked against the key's geometry once the key is */
		s->idx_map_bytes = (size_t)st.st_size;
	}
	s->hdr = mmap(NULL, s->idx_map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->idx_fd, 0);
	if (s->hdr == MAP_FAILED) {
		s->hdr = NULL;
		return fail(why, wl, -errno, "mmap %s: %s", path, g_strerror(errno));
	}
	s->chunk = (uint32_t *)((uint8_t *)s->hdr + HDR_BYTES);
	return 0;
}

static int map_blocks(struct vt_store *s, bool create, char *why, size_t wl)
{
	char path[512];
	struct stat st;
	int r = open_file(s, "blocks", create, &s->blk_fd, path, sizeof(path), &st, why, wl);

	if (r < 0)
		return r == -ENOENT ? -EUCLEAN : r;	/* the index is there: a store lost a file */
	if ((uint64_t)st.st_size % BLOCK_BYTES ||
	    (uint64_t)st.st_size / BLOCK_BYTES > s->nr_chunks)
		return fail(why, wl, -EUCLEAN, "%s: %llu bytes is not a count of blocks up to "
			    "one per chunk", path, (unsigned long long)st.st_size);
	s->blk_nr = (uint64_t)st.st_size / BLOCK_BYTES;
	/* mapped as far as the file goes; segments follow it as it grows */
	vt_segmap_init(&s->blocks, s->blk_fd, -1, s->nr_chunks * BLOCK_BYTES);
	r = vt_segmap_reserve(&s->blocks, s->blk_nr * BLOCK_BYTES);
	if (r < 0)
		return fail(why, wl, r, "mmap %s: %s", path, g_strerror(-r));
	return 0;
}

static const char *kind_name(unsigned int kind)
{
	return kind == VT_STORE_ZERO ? "zero" : kind == VT_STORE_SAME ? "same" : "compressed";
}

static void count(struct tier *t, unsigned int kind, uint32_t len, int sign)
{
	t->st.pages += sign;
	if (kind == VT_STORE_ZERO)
		t->st.zero_pages += sign;
	else if (kind == VT_STORE_SAME)
		t->st.same_pages += sign;
	else
		t->st.compressed_bytes += sign * (int64_t)len;
}

/* Check one valid entry of page @page and claim its pool object. */
static int load_entry(struct vt_store *s, uint64_t page, const struct entry *e,
		      char *why, size_t wl)
{
	uint32_t st = atomic_load_explicit(&((struct entry *)e)->state, memory_order_acquire);
	unsigned int kind = (st >> ST_KIND_SHIFT) & 3, slot = (st >> ST_SLOT_SHIFT) & 15;
	uint32_t len = st & ST_LEN_MASK;
	struct tier *t;

	if ((st & 0x00ff0000U) != ST_MAGIC || (st & ST_MBZ) || kind > VT_STORE_COMPRESSED)
		return fail(why, wl, -EUCLEAN, "page %llu: bad index entry %08x",
			    (unsigned long long)page, st);
	if (page >= s->nr_pages)
		return fail(why, wl, -EUCLEAN, "page %llu: entry outside the backend (%llu pages)",
			    (unsigned long long)page, (unsigned long long)s->nr_pages);
	if (slot >= VT_CTIER_MAX || !s->tier[slot].live)
		return fail(why, wl, -EUCLEAN, "page %llu: entry names tier slot %u, which the "
			    "store does not have", (unsigned long long)page, slot);
	t = &s->tier[slot];
	if (kind == VT_STORE_COMPRESSED) {
		if (!len || len > t->max_bytes)
			return fail(why, wl, -EUCLEAN, "page %llu: compressed length %u outside "
				    "1..%u", (unsigned long long)page, len, t->max_bytes);
		if (t->pool.ops->claim(&t->pool, e->loc, len) < 0)
			return fail(why, wl, -EUCLEAN, "page %llu: pool object %#llx of %u bytes "
				    "in tier %s is outside the pool or claimed twice",
				    (unsigned long long)page, (unsigned long long)e->loc, len,
				    t->spec.name);
	} else if (len || (kind == VT_STORE_ZERO && e->loc)) {
		return fail(why, wl, -EUCLEAN, "page %llu: %s entry with a payload",
			    (unsigned long long)page, kind_name(kind));
	}
	count(t, kind, len, 1);
	return 0;
}

/* Walk the chunk table: check links, claim every valid entry, free empty blocks. */
static int load_index(struct vt_store *s, char *why, size_t wl)
{
	g_autofree uint64_t *seen = g_try_new0(uint64_t, (s->blk_nr + 63) / 64 + 1);
	int r;

	if (!seen)
		return -ENOMEM;
	for (uint64_t c = 0; c < s->nr_chunks; c++) {
		uint32_t b = s->chunk[c];
		struct entry *e;

		if (!b)
			continue;
		if (b > s->blk_nr || (seen[(b - 1) / 64] >> ((b - 1) % 64)) & 1)
			return fail(why, wl, -EUCLEAN, "chunk %llu: entry block %u %s",
				    (unsigned long long)c, b - 1,
				    b > s->blk_nr ? "outside the blocks file" :
				    "claimed by another chunk too");
		seen[(b - 1) / 64] |= 1ULL << ((b - 1) % 64);
		e = (struct entry *)block_at(s, b - 1);
		for (unsigned int i = 0; i < CHUNK_PAGES; i++) {
			if (!(atomic_load_explicit(&e[i].state, memory_order_acquire) & ST_VALID))
				continue;	/* never written, dropped, or half-written */
			r = load_entry(s, c * CHUNK_PAGES + i, &e[i], why, wl);
			if (r < 0)
				return r;
			s->live[c]++;
		}
	}
	for (uint64_t c = 0; c < s->nr_chunks; c++) {
		if (s->chunk[c] && !s->live[c]) {
			/* linked at a crash before its first entry: unlink */
			seen[(s->chunk[c] - 1) / 64] &= ~(1ULL << ((s->chunk[c] - 1) % 64));
			atomic_store_explicit((_Atomic uint32_t *)&s->chunk[c], 0,
					      memory_order_release);
		}
	}
	for (uint64_t b = s->blk_nr; b-- > 0;) {
		uint32_t v = (uint32_t)b;

		if (!((seen[b / 64] >> (b % 64)) & 1))
			g_array_append_val(s->free_blocks, v);
	}
	return 0;
}

/* Slots for @specs: the same (name, spec) keeps its slot; others get a new one. */
static int map_tiers(struct vt_store *s, const struct vt_ctier_spec *specs, unsigned int nr,
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
			return fail(why, wl, -ENOSPC, "tier %s: the store already has %u tiers "
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
static bool rec_ok(const struct hdr_tier *t)
{
	return t->crc == tier_crc(t) && spec_ok(&t->spec) && t->pool_bytes &&
	       !(t->pool_bytes % PAGE) && memchr(t->spec.dir, 0, sizeof(t->spec.dir));
}

static int new_store_id(struct hdr_ident *id)
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

	if (!ident_ok(&h->ident)) {
		r = new_store_id(&h->ident);
		if (r < 0)
			return fail(why, wl, r, "%s: no store id: getrandom: %s", s->dir,
				    g_strerror(-r));
	}
	for (unsigned int k = 0; k < VT_CTIER_MAX; k++) {
		char old[512], path[512];

		if (h->tier[k].used != TIER_USED || !rec_ok(&h->tier[k]) ||
		    h->tier[k].spec.medium != VT_MEDIUM_FILE)
			continue;
		pool_path(s->dir, h, k, path, sizeof(path));
		if (access(path, F_OK) == 0)
			continue;
		legacy_pool_path(h, k, old, sizeof(old));
		if (rename(old, path) < 0)
			return fail(why, wl, -EUCLEAN, "tier %s: pool file %s: %s (renaming it to "
				    "%s)", h->tier[k].spec.name, old, g_strerror(errno), path);
		g_debug("ctier: %s: version-1 pool %s renamed %s", s->dir, old, path);
	}
	return 0;
}

static int check_header(struct vt_store *s, const struct vt_store_key *key, char *why,
			size_t wl)
{
	struct store_hdr *h = s->hdr;

	if (!memcmp(h->magic, "\0\0\0\0\0\0\0\0", 8))
		return fail(why, wl, -ENOENT, "%s: the store was never finished", s->dir);
	if (memcmp(h->magic, HDR_MAGIC, 8) || (h->version != HDR_VERSION && h->version != 1) ||
	    h->hdr_bytes != HDR_BYTES || h->crc != crc(h, offsetof(struct store_hdr, crc)) ||
	    (h->version == HDR_VERSION && !ident_ok(&h->ident)))
		return fail(why, wl, -EUCLEAN, "%s: bad header (magic, version, checksum or "
			    "store id)", s->dir);
	if (memcmp(h->key.vm_uuid, key->vm_uuid, 16) ||
	    strncmp(h->key.backend_id, key->backend_id, sizeof(key->backend_id)) ||
	    h->key.size_bytes != key->size_bytes || h->key.page_size != key->page_size)
		return fail(why, wl, -ESTALE, "%s: the store belongs to another backend "
			    "(%.64s, %llu bytes)", s->dir, h->key.backend_id,
			    (unsigned long long)h->key.size_bytes);
	if (h->nr_chunks != s->nr_chunks || h->chunk_pages != CHUNK_PAGES ||
	    h->entry_bytes != sizeof(struct entry) || s->idx_map_bytes != s->idx_bytes)
		return fail(why, wl, -EUCLEAN, "%s: bad header geometry", s->dir);
	if (h->version == 1) {
		int r = upgrade_v1(s, why, wl);

		if (r < 0)
			return r;
	}
	for (unsigned int k = 0; k < VT_CTIER_MAX; k++) {
		struct hdr_tier *t = &h->tier[k];
		int r;

		if (t->used != TIER_USED) {
			if (rec_ok(t) && t->spec.medium == VT_MEDIUM_FILE) {
				/* added or removed when a kill came: a file left is ours */
				char path[512];

				pool_path(s->dir, h, k, path, sizeof(path));
				unlink(path);
			}
			continue;
		}
		if (!rec_ok(t)) {
			/* a record torn while being added: no entry can name it */
			g_debug("ctier: %s: tier record %u is torn; ignored", s->dir, k);
			t->used = 0;
			continue;
		}
		r = tier_open(s, k, false, why, wl);
		if (r < 0)
			return r;
	}
	return 0;
}

static void write_header(struct vt_store *s, const struct vt_store_key *key,
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

/*
 * Remove the store's files in @dir, and the file-medium pools named by its
 * id (a version-1 store's are left: their name does not say whose they are).
 */
static int remove_files(const char *dir)
{
	char path[512];
	struct store_hdr h;
	DIR *d;
	struct dirent *de;
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/index", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
		    !memcmp(h.magic, HDR_MAGIC, 8) && ident_ok(&h.ident)) {
			/* records being added or removed too: a file there carries our id */
			for (unsigned int k = 0; k < VT_CTIER_MAX; k++)
				if (rec_ok(&h.tier[k]) && h.tier[k].spec.medium == VT_MEDIUM_FILE) {
					pool_path(dir, &h, k, path, sizeof(path));
					unlink(path);
				}
		} else if (!memcmp(h.magic, HDR_MAGIC, 8)) {
			g_debug("ctier: %s: a version-1 store never reopened: its file-medium "
				"pools are left", dir);
		}
		close(fd);
	}
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, "index") && strcmp(de->d_name, "blocks") &&
		    !g_str_has_prefix(de->d_name, "pool-"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) < 0)
			r = -errno;
	}
	closedir(d);
	return r;
}

int vt_store_destroy(const char *dir)
{
	int r = remove_files(dir);

	if (r < 0)
		return r;
	return rmdir(dir) < 0 && errno != ENOTEMPTY ? -errno : 0;
}

int vt_store_open(const char *dir, const struct vt_store_key *key,
		  const struct vt_ctier_spec *specs, unsigned int nr, bool create,
		  struct vt_store **out, char *why, size_t why_len)
{
	struct hdr_ident id = { 0 };
	struct vt_store *s;
	int r;

	*out = NULL;
	if (why && why_len)
		why[0] = 0;
	if (!dir || !key || (nr && !specs) || nr > VT_CTIER_MAX)
		return fail(why, why_len, -EINVAL, "bad arguments");
	if (key->page_size != PAGE || !key->size_bytes || key->size_bytes % PAGE ||
	    !memchr(key->backend_id, 0, sizeof(key->backend_id)))
		return fail(why, why_len, -EINVAL, "key: page size must be %u, size a multiple "
			    "of it, backend id NUL-terminated", PAGE);
	for (unsigned int i = 0; i < nr; i++) {
		if (!spec_ok(&specs[i]) || !memchr(specs[i].name, 0, sizeof(specs[i].name)))
			return fail(why, why_len, -EINVAL, "tier %u: invalid spec", i);
		for (unsigned int j = 0; j < i; j++)
			if (!strcmp(specs[i].name, specs[j].name))
				return fail(why, why_len, -EINVAL, "two tiers named %s",
					    specs[i].name);
	}
	if (strlen(dir) > 256)
		return fail(why, why_len, -ENAMETOOLONG, "store directory name too long");
	s = g_new0(struct vt_store, 1);
	pthread_mutex_init(&s->lock, NULL);
	s->idx_fd = s->blk_fd = -1;
	s->dir = g_strdup(dir);
	s->nr_pages = key->size_bytes / PAGE;
	s->nr_chunks = (s->nr_pages + CHUNK_PAGES - 1) / CHUNK_PAGES;
	s->idx_bytes = HDR_BYTES + (s->nr_chunks * sizeof(uint32_t) + PAGE - 1) / PAGE * PAGE;
	s->idx_map_bytes = s->idx_bytes;
	s->free_blocks = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	/* one slot per 8 pages, 4 MiB at most (a 1 TiB guest) */
	s->refused = vt_refused_new(MIN(MAX(s->nr_pages / 8, 64), 1ull << 18));
	s->live = g_try_new0(uint16_t, s->nr_chunks);
	if (!s->live) {
		r = fail(why, why_len, -ENOMEM, "no memory for %llu chunks",
			 (unsigned long long)s->nr_chunks);
		goto err;
	}
	if (create) {
		if (g_mkdir_with_parents(dir, 0700) < 0) {
			r = fail(why, why_len, -errno, "%s: %s", dir, g_strerror(errno));
			goto err;
		}
		remove_files(dir);
	}
	if (create) {
		r = new_store_id(&id);
		if (r < 0) {
			r = fail(why, why_len, r, "no store id: getrandom: %s", g_strerror(-r));
			goto err;
		}
	}
	r = map_index(s, create, why, why_len);
	if (r < 0)
		goto err;
	if (create)
		write_header(s, key, &id);
	else
		r = check_header(s, key, why, why_len);
	if (r < 0)
		goto err;
	r = map_blocks(s, create, why, why_len);
	if (r < 0)
		goto err;
	if (!create) {
		r = load_index(s, why, why_len);
		if (r < 0)
			goto err;
		/*
		 * pool pages no valid entry claimed: give their storage back;
		 * the others mapped (gets point into them)
		 */
		for (unsigned int k = 0; k < VT_CTIER_MAX; k++) {
			struct tier *t = &s->tier[k];

			if (!t->live)
				continue;
			vt_pool_trim(&t->pool);
			r = vt_medium_map(&t->medium, vt_pool_pages_end(&t->pool) * VT_POOL_PAGE);
			if (r < 0) {
				r = fail(why, why_len, r, "tier %s: mapping its pool: %s",
					 t->spec.name, g_strerror(-r));
				goto err;
			}
		}
	}
	r = map_tiers(s, specs, nr, why, why_len);
	if (r < 0)
		goto err;
	*out = s;
	return 0;
err:
	vt_store_close(s);
	return r;
}

void vt_store_close(struct vt_store *s)
{
	if (!s)
		return;
	for (unsigned int k = 0; k < VT_CTIER_MAX; k++)
		tier_close(&s->tier[k]);
	vt_segmap_fini(&s->blocks);
	if (s->hdr)
		munmap(s->hdr, s->idx_map_bytes);
	if (s->blk_fd >= 0)
		close(s->blk_fd);
	if (s->idx_fd >= 0)
		close(s->idx_fd);
	g_array_free(s->free_blocks, TRUE);
	vt_refused_free(s->refused);
	g_free(s->live);
	g_free(s->dir);
	pthread_mutex_destroy(&s->lock);
	g_free(s);
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

enum vt_store_kind vt_store_classify(const void *data, uint64_t *word)
{
	const uint64_t *w = data;

	for (unsigned int i = 1; i < PAGE / sizeof(*w); i++)
		if (w[i] != w[0])
			return VT_STORE_COMPRESSED;
	*word = w[0];
	return w[0] ? VT_STORE_SAME : VT_STORE_ZERO;
}

/* The entry for @page, linking a fresh block to its chunk if it has none. */
static int entry_make(struct vt_store *s, uint64_t page, struct entry **out)
{
	uint64_t c = page / CHUNK_PAGES;
	uint32_t b;
	int r;

	*out = entry_of(s, page);
	if (*out)
		return 0;
	if (s->free_blocks->len) {
		b = g_array_index(s->free_blocks, uint32_t, s->free_blocks->len - 1);
		g_array_set_size(s->free_blocks, s->free_blocks->len - 1);
	} else {
		if (s->blk_nr >= s->nr_chunks)
			return -EUCLEAN;
		b = (uint32_t)s->blk_nr;
		r = vt_segmap_reserve(&s->blocks, ((uint64_t)b + 1) * BLOCK_BYTES);
		if (r < 0)
			return r;
		if (ftruncate(s->blk_fd, (off_t)((b + 1) * BLOCK_BYTES)) < 0)
			return -errno;
		s->blk_nr++;
	}
	if (fallocate(s->blk_fd, 0, (off_t)(b * BLOCK_BYTES), BLOCK_BYTES) < 0 &&
	    errno != EOPNOTSUPP) {
		r = -errno;
		g_array_append_val(s->free_blocks, b);
		return r;
	}
	memset(block_at(s, b), 0, BLOCK_BYTES);
	atomic_store_explicit((_Atomic uint32_t *)&s->chunk[c], b + 1, memory_order_release);
	*out = entry_of(s, page);
	return 0;
}

/* Unlink the block of chunk @c (no valid entry left) and give its memory back. */
static void block_release(struct vt_store *s, uint64_t c)
{
	uint32_t b = s->chunk[c] - 1;

	atomic_store_explicit((_Atomic uint32_t *)&s->chunk[c], 0, memory_order_release);
	fallocate(s->blk_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)((uint64_t)b * BLOCK_BYTES), BLOCK_BYTES);
	g_array_append_val(s->free_blocks, b);
}

static struct tier *tier_of_api(struct vt_store *s, unsigned int tier)
{
	if (tier >= s->nr_api || s->api_slot[tier] < 0)
		return NULL;
	return &s->tier[s->api_slot[tier]];
}

/* A codec context for one put, outside the lock: a spare one, or a new one. */
static void *ctx_take(struct vt_store *s, struct tier *t)
{
	void *ctx = NULL;

	pthread_mutex_lock(&s->lock);
	if (t->spare->len)
		ctx = g_ptr_array_steal_index_fast(t->spare, t->spare->len - 1);
	pthread_mutex_unlock(&s->lock);
	return ctx ? ctx : t->codec->ctx_new(t->spec.level);
}

static bool valid_at(struct vt_store *s, uint64_t page)
{
	struct entry *e = entry_of(s, page);

	return e && atomic_load_explicit(&e->state, memory_order_acquire) & ST_VALID;
}

/*
 * Classifying, compressing and checksumming run outside the lock, so that a
 * fault thread's get never waits for a compression; the pool and the index
 * change under it.
 */
/*
 * @copy (@copy_len bytes): what @t's codec made of @data earlier, maybe
 * from another version of the page. True when it decompresses to @data
 * byte for byte and fits the tier: then it is stored as it is.
 */
static bool copy_matches(struct tier *t, void *ctx, const void *data, const void *copy,
			 uint32_t copy_len)
{
	uint8_t out[PAGE];

	return copy_len && copy_len <= t->max_bytes &&
	       t->codec->decompress(ctx, copy, copy_len, out, PAGE) == (int)PAGE &&
	       memcmp(out, data, PAGE) == 0;
}

int vt_store_put(struct vt_store *s, uint64_t page, unsigned int tier, const void *data)
{
	return vt_store_put_copy(s, page, tier, data, NULL, 0, NULL);
}

int vt_store_put_copy(struct vt_store *s, uint64_t page, unsigned int tier, const void *data,
		      const void *copy, uint32_t copy_len, bool *used)
{
	uint8_t cbuf[2 * PAGE];
	struct tier *t;
	struct entry *e;
	uint64_t word = 0, handle = 0, off = 0, ns = 0;
	bool allocated = false;
	uint32_t len = 0, sum;
	int kind, r = 0, slot;
	void *ctx = NULL;

	if (used)
		*used = false;
	if (!s || !data || page >= s->nr_pages)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	t = tier_of_api(s, tier);
	/* tiers kept only for their pages take no new ones */
	if (!t || tier >= s->nr_specs)
		r = -EINVAL;
	else if (valid_at(s, page))
		r = -EEXIST;
	pthread_mutex_unlock(&s->lock);
	if (r < 0)
		return r;
	kind = vt_store_classify(data, &word);
	sum = crc(data, PAGE);
	slot = (int)(t - s->tier);
	if (kind == VT_STORE_COMPRESSED) {
		uint64_t t0;
		bool refused;

		/* refused before with this very content: it would be again */
		pthread_mutex_lock(&s->lock);
		refused = vt_refused_has(s->refused, page, (unsigned int)slot, sum);
		if (refused) {
			t->st.puts++;
			t->st.rejected_e2big++;
			t->st.rejected_memo++;
		}
		pthread_mutex_unlock(&s->lock);
		if (refused)
			return -E2BIG;
		ctx = ctx_take(s, t);
		if (!ctx)
			return -ENOMEM;
		t0 = vt_now_ns();
		if (copy && copy_matches(t, ctx, data, copy, copy_len)) {
			memcpy(cbuf, copy, copy_len);
			r = (int)copy_len;
			if (used)
				*used = true;
		} else {
			r = t->codec->compress(ctx, data, PAGE, cbuf, t->max_bytes);
		}
		ns = vt_now_ns() - t0;
		len = r > 0 ? (uint32_t)r : 0;
	}

	pthread_mutex_lock(&s->lock);
	t->st.puts++;
	t->st.compress_ns += ns;
	if (ctx)
		g_ptr_array_add(t->spare, ctx);
	if (kind == VT_STORE_COMPRESSED && (r < 0 || len > t->max_bytes)) {
		t->st.rejected_e2big++;
		vt_refused_add(s->refused, page, (unsigned int)slot, sum);
		r = -E2BIG;
		goto out;
	}
	vt_refused_forget(s->refused, page);
	if (valid_at(s, page)) {
		r = -EEXIST;		/* another thread put it meanwhile */
		goto out;
	}
	r = entry_make(s, page, &e);
	if (r < 0)
		goto out;
	if (kind == VT_STORE_COMPRESSED) {
		r = t->pool.ops->alloc(&t->pool, len, &handle);
		allocated = r == 0;
		if (!r)
			r = t->pool.ops->locate(&t->pool, handle, len, &off);
		if (!r)
			r = vt_medium_write(&t->medium, off, cbuf, len);
		if (r < 0) {
			if (allocated)
				t->pool.ops->free(&t->pool, handle, len);
			if (!s->live[page / CHUNK_PAGES])
				block_release(s, page / CHUNK_PAGES);
			goto out;
		}
		word = handle;
	}
	e->crc = sum;
	e->loc = word;
	/* the entry is valid only once everything it names is in place */
	atomic_store_explicit(&e->state, ST_VALID | (uint32_t)kind << ST_KIND_SHIFT |
			      (uint32_t)slot << ST_SLOT_SHIFT | ST_MAGIC | len,
			      memory_order_release);
	s->live[page / CHUNK_PAGES]++;
	count(t, (unsigned int)kind, len, 1);
	r = 0;
out:
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* The valid entry of @page and its tier, or NULL. Under the lock. */
static struct entry *lookup(struct vt_store *s, uint64_t page, uint32_t *state,
			    struct tier **t)
{
	struct entry *e;
	unsigned int slot;

	if (page >= s->nr_pages)
		return NULL;
	e = entry_of(s, page);
	if (!e)
		return NULL;
	*state = atomic_load_explicit(&e->state, memory_order_acquire);
	slot = (*state >> ST_SLOT_SHIFT) & 15;
	if (!(*state & ST_VALID) || slot >= VT_CTIER_MAX || !s->tier[slot].live)
		return NULL;
	*t = &s->tier[slot];
	return e;
}

static int fill(struct vt_store *s, struct tier *t, const struct entry *e, uint32_t st,
		void *out)
{
	unsigned int kind = (st >> ST_KIND_SHIFT) & 3;
	uint32_t len = st & ST_LEN_MASK;
	const void *src;
	uint64_t off, t0;
	int n;

	if (kind == VT_STORE_ZERO || kind == VT_STORE_SAME) {
		uint64_t *w = out;

		for (unsigned int i = 0; i < PAGE / sizeof(*w); i++)
			w[i] = e->loc;
		return 0;
	}
	if (kind != VT_STORE_COMPRESSED || t->pool.ops->locate(&t->pool, e->loc, len, &off) < 0)
		return -EBADMSG;
	src = vt_medium_read(&t->medium, off, len, s->rbuf);
	if (!src)
		return -EBADMSG;
	t0 = vt_now_ns();
	n = t->codec->decompress(t->ctx, src, len, out, PAGE);
	t->st.decompress_ns += vt_now_ns() - t0;
	return n == (int)PAGE ? 0 : -EBADMSG;
}

int vt_store_get(struct vt_store *s, uint64_t page, void *out)
{
	struct tier *t = NULL;
	struct entry *e;
	uint32_t st = 0;
	int r;

	if (!s || !out)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	e = lookup(s, page, &st, &t);
	if (!e) {
		r = -ENOENT;
		goto out;
	}
	t->st.gets++;
	r = fill(s, t, e, st, out);
	if (!r && crc(out, PAGE) != e->crc)
		r = -EBADMSG;
	if (r < 0) {
		t->st.bad_checksum++;
		memset(out, 0, PAGE);
	}
out:
	pthread_mutex_unlock(&s->lock);
	return r;
}

int vt_store_drop(struct vt_store *s, uint64_t page)
{
	struct tier *t = NULL;
	struct entry *e;
	uint32_t st = 0;
	uint64_t c = page / CHUNK_PAGES;

	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	e = lookup(s, page, &st, &t);
	if (!e) {
		pthread_mutex_unlock(&s->lock);
		return -ENOENT;
	}
	/* the entry goes first: a kill now leaves a free slot, never a shared one */
	atomic_store_explicit(&e->state, 0, memory_order_release);
	if (((st >> ST_KIND_SHIFT) & 3) == VT_STORE_COMPRESSED)
		t->pool.ops->free(&t->pool, e->loc, st & ST_LEN_MASK);
	count(t, (st >> ST_KIND_SHIFT) & 3, st & ST_LEN_MASK, -1);
	if (s->live[c] && !--s->live[c])
		block_release(s, c);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int vt_store_tier_of(struct vt_store *s, uint64_t page)
{
	struct tier *t = NULL;
	uint32_t st;
	int r;

	pthread_mutex_lock(&s->lock);
	r = lookup(s, page, &st, &t) ? t->api : -ENOENT;
	pthread_mutex_unlock(&s->lock);
	return r;
}

int vt_store_crc_of(struct vt_store *s, uint64_t page, uint32_t *crc)
{
	struct tier *t = NULL;
	struct entry *e;
	uint32_t st;
	int r = -ENOENT;

	pthread_mutex_lock(&s->lock);
	e = lookup(s, page, &st, &t);
	if (e) {
		*crc = e->crc;
		r = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

uint64_t vt_store_next(struct vt_store *s, uint64_t from)
{
	uint64_t r = UINT64_MAX;

	pthread_mutex_lock(&s->lock);
	for (uint64_t c = from / CHUNK_PAGES; c < s->nr_chunks && r == UINT64_MAX; c++) {
		const struct entry *e;

		if (!s->live[c] || !(e = entry_of(s, c * CHUNK_PAGES)))
			continue;
		for (uint64_t i = c == from / CHUNK_PAGES ? from % CHUNK_PAGES : 0;
		     i < CHUNK_PAGES; i++)
			if (atomic_load_explicit(&((struct entry *)e)[i].state,
						 memory_order_relaxed) & ST_VALID) {
				r = c * CHUNK_PAGES + i;
				break;
			}
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

unsigned int vt_store_stats(struct vt_store *s, struct vt_store_tier_stats *out, unsigned int nr)
{
	unsigned int n;

	pthread_mutex_lock(&s->lock);
	n = MIN(nr, s->nr_api);
	for (unsigned int i = 0; i < n; i++) {
		struct tier *t = &s->tier[s->api_slot[i]];

		out[i] = t->st;
		out[i].pool_bytes = t->pool.pages.in_use * VT_POOL_PAGE;
		out[i].metadata_bytes = vt_pool_metadata_bytes(&t->pool) +
					t->st.pages * sizeof(struct entry);
		g_strlcpy(out[i].placement, t->medium.map.placement, sizeof(out[i].placement));
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

uint64_t vt_store_index_bytes(struct vt_store *s)
{
	struct stat a, b;
	uint64_t n;

	pthread_mutex_lock(&s->lock);
	n = s->nr_chunks * sizeof(*s->live) + s->free_blocks->len * sizeof(uint32_t) +
	    vt_refused_bytes(s->refused);
	if (fstat(s->idx_fd, &a) == 0 && fstat(s->blk_fd, &b) == 0)
		n += ((uint64_t)a.st_blocks + (uint64_t)b.st_blocks) * 512;
	pthread_mutex_unlock(&s->lock);
	return n;
}
