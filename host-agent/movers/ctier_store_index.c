// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The page store's index (ctier_store_int.h): the chunk table, the entry
 * blocks, and the walk that checks and claims every entry at reopen.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctier_store_int.h"

/* Open (@create: empty) file @name of the store into *@fd; @path gets its name. */
static int open_file(struct vt_store *s, const char *name, bool create, int *fd, char *path,
		     size_t len, struct stat *st, char *why, size_t wl)
{
	snprintf(path, len, "%s/%s", s->dir, name);
	/* a create follows remove_files(): a file there now is not ours to truncate */
	*fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0), 0600);
	if (*fd < 0 || fstat(*fd, st) < 0)
		return cts_fail(why, wl, -errno, "%s: %s", path, g_strerror(errno));
	return 0;
}

int cts_map_index(struct vt_store *s, bool create, char *why, size_t wl)
{
	char path[512];
	struct stat st;
	int r = open_file(s, "index", create, &s->idx_fd, path, sizeof(path), &st, why, wl);

	if (r < 0)
		return r;
	if (create) {
		if (ftruncate(s->idx_fd, (off_t)s->idx_bytes) < 0 ||
		    fallocate(s->idx_fd, 0, 0, (off_t)s->idx_bytes) < 0)
			return cts_fail(why, wl, -errno, "%s: %s", path, g_strerror(errno));
	} else {
		if ((uint64_t)st.st_size < HDR_BYTES)
			return cts_fail(why, wl, -EUCLEAN, "%s: %llu bytes, shorter than its header",
					path, (unsigned long long)st.st_size);
		/* checked against the key's geometry once the key is */
		s->idx_map_bytes = (size_t)st.st_size;
	}
	s->hdr = mmap(NULL, s->idx_map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->idx_fd, 0);
	if (s->hdr == MAP_FAILED) {
		s->hdr = NULL;
		return cts_fail(why, wl, -errno, "mmap %s: %s", path, g_strerror(errno));
	}
	s->chunk = (uint32_t *)((uint8_t *)s->hdr + HDR_BYTES);
	return 0;
}

int cts_map_blocks(struct vt_store *s, bool create, char *why, size_t wl)
{
	char path[512];
	struct stat st;
	int r = open_file(s, "blocks", create, &s->blk_fd, path, sizeof(path), &st, why, wl);

	if (r < 0)
		return r == -ENOENT ? -EUCLEAN : r;	/* the index is there: a store lost a file */
	if ((uint64_t)st.st_size % BLOCK_BYTES ||
	    (uint64_t)st.st_size / BLOCK_BYTES > s->nr_chunks)
		return cts_fail(why, wl, -EUCLEAN, "%s: %llu bytes is not a count of blocks up to "
				"one per chunk", path, (unsigned long long)st.st_size);
	s->blk_nr = (uint64_t)st.st_size / BLOCK_BYTES;
	/* mapped as far as the file goes; segments follow it as it grows */
	vt_segmap_init(&s->blocks, s->blk_fd, -1, s->nr_chunks * BLOCK_BYTES);
	r = vt_segmap_reserve(&s->blocks, s->blk_nr * BLOCK_BYTES);
	if (r < 0)
		return cts_fail(why, wl, r, "mmap %s: %s", path, g_strerror(-r));
	return 0;
}

static const char *kind_name(unsigned int kind)
{
	return kind == VT_STORE_ZERO ? "zero" : kind == VT_STORE_SAME ? "same" : "compressed";
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
		return cts_fail(why, wl, -EUCLEAN, "page %llu: bad index entry %08x",
				(unsigned long long)page, st);
	if (page >= s->nr_pages)
		return cts_fail(why, wl, -EUCLEAN, "page %llu: entry outside the backend (%llu pages)",
				(unsigned long long)page, (unsigned long long)s->nr_pages);
	if (slot >= VT_CTIER_MAX || !s->tier[slot].live)
		return cts_fail(why, wl, -EUCLEAN, "page %llu: entry names tier slot %u, which the "
				"store does not have", (unsigned long long)page, slot);
	t = &s->tier[slot];
	if (kind == VT_STORE_COMPRESSED) {
		if (!len || len > t->max_bytes)
			return cts_fail(why, wl, -EUCLEAN, "page %llu: compressed length %u outside "
					"1..%u", (unsigned long long)page, len, t->max_bytes);
		if (tier_remote(t) ? !cts_remote_loc_ok(t, e->loc) :
				     t->pool.ops->claim(&t->pool, e->loc, len) < 0)
			return cts_fail(why, wl, -EUCLEAN, "page %llu: pool object %#llx of %u bytes "
					"in tier %s is outside the pool or claimed twice",
					(unsigned long long)page, (unsigned long long)e->loc, len,
					t->spec.name);
	} else if (len || (kind == VT_STORE_ZERO && e->loc)) {
		return cts_fail(why, wl, -EUCLEAN, "page %llu: %s entry with a payload",
				(unsigned long long)page, kind_name(kind));
	}
	count(t, kind, len, 1);
	return 0;
}

/* Walk the chunk table: check links, claim every valid entry, free empty blocks. */
int cts_load_index(struct vt_store *s, char *why, size_t wl)
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
			return cts_fail(why, wl, -EUCLEAN, "chunk %llu: entry block %u %s",
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

/* The entry for @page, linking a fresh block to its chunk if it has none. */
int cts_entry_make(struct vt_store *s, uint64_t page, struct entry **out)
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
void cts_block_release(struct vt_store *s, uint64_t c)
{
	uint32_t b = s->chunk[c] - 1;

	atomic_store_explicit((_Atomic uint32_t *)&s->chunk[c], 0, memory_order_release);
	fallocate(s->blk_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)((uint64_t)b * BLOCK_BYTES), BLOCK_BYTES);
	g_array_append_val(s->free_blocks, b);
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
