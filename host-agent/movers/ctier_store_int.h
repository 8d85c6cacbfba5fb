/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inside the page store (ctier.h is its contract): its on-disk records, its
 * state and the calls between its files, one job a file:
 *   ctier_store.c         open, close, destroy, and the store's stats
 *   ctier_store_header.c  the index file's header: identity, owner slots, checks, upgrade
 *   ctier_store_tiers.c   tier slots: records, pool files, codecs, slots for the specs
 *   ctier_store_index.c   the page index: chunk table, entry blocks, the walk at reopen
 *   ctier_store_pages.c   put, get and drop of one page
 * Not for any caller outside movers/ctier_store*.c.
 *
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
 *   remote-key  the key a remote tier seals this store's pages with (0600);
 *   lcopy-NAME/  remote tier NAME's local copies (copies = 1): a store of
 *           its own, same key, one tier (the local_copy tier's spec), the
 *           same page numbers; its entry is written before the servers'
 *           copies and the remote entry, dropped after the remote entry;
 *           one the index does not name is dropped at attach;
 *           a remote slot has no pool: its entries' location is
 *           {u32 version, u8 holders (bit s: server s of the tier's list)}
 *           of the page's copies on the memory servers (ctier_store_remote.c).
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
#ifndef VTIER_MOVERS_CTIER_STORE_INT_H
#define VTIER_MOVERS_CTIER_STORE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include "ctier.h"
#include "ctier_codec.h"
#include "ctier_csum.h"
#include "ctier_medium.h"
#include "ctier_pool.h"
#include "ctier_refused.h"

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
	/* VT_MEDIUM_REMOTE (ctier_store_remote.c) */
	struct vt_rc *rc;		/* attached client, or NULL */
	unsigned int copies;		/* each page's copies on the servers */
	/* the client's figures as of the last tick (lock): read without waiting on a server */
	struct vt_rc_stats *snap;
	struct vt_rc_server_stats *snap_srv;	/* VT_RC_MAX_SERVERS */
	unsigned int snap_nr;
	struct vt_rt_stats *snap_rt;	/* the client's own end */
	GMutex rput;			/* one remote put (or the frees before it) at a time */
	GArray *drops;			/* u64 pages dropped, their frees not sent yet */
	struct vt_store *lc;		/* the local copies (copies = 1), or NULL; lock order: ours, then its */
	uint64_t lc_reads;		/* gets served from the local copy */
};

static inline bool tier_remote(const struct tier *t)
{
	return t->spec.medium == VT_MEDIUM_REMOTE;
}

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

static inline uint32_t crc(const void *p, size_t len)
{
	return vt_crc32c(p, len);
}

static inline uint8_t *block_at(struct vt_store *s, uint64_t b)
{
	uint64_t room;

	return vt_segmap_at(&s->blocks, b * BLOCK_BYTES, &room);
}

static inline struct entry *entry_of(struct vt_store *s, uint64_t page)
{
	uint32_t b = atomic_load_explicit((_Atomic uint32_t *)&s->chunk[page / CHUNK_PAGES],
					  memory_order_acquire);

	if (!b || b > s->blk_nr)
		return NULL;
	/* blocks below blk_nr are mapped */
	return (struct entry *)block_at(s, b - 1) + page % CHUNK_PAGES;
}

static inline void count(struct tier *t, unsigned int kind, uint32_t len, int sign)
{
	t->st.pages += sign;
	if (kind == VT_STORE_ZERO)
		t->st.zero_pages += sign;
	else if (kind == VT_STORE_SAME)
		t->st.same_pages += sign;
	else
		t->st.compressed_bytes += sign * (int64_t)len;
}

/* ctier_store.c */
int cts_fail(char *why, size_t len, int r, const char *fmt, ...) G_GNUC_PRINTF(4, 5);

/* ctier_store_header.c */
bool cts_ident_ok(const struct hdr_ident *id);
int cts_new_store_id(struct hdr_ident *id);
int cts_check_header(struct vt_store *s, const struct vt_store_key *key, char *why,
		     size_t wl);
void cts_write_header(struct vt_store *s, const struct vt_store_key *key,
		      const struct hdr_ident *id);

/* ctier_store_tiers.c */
bool cts_spec_ok(const struct vt_ctier_spec *s);
bool cts_rec_ok(const struct hdr_tier *t);
void cts_pool_path(const char *dir, const struct store_hdr *h, unsigned int slot, char *buf,
		   size_t len);
void cts_legacy_pool_path(const struct store_hdr *h, unsigned int slot, char *buf,
			  size_t len);
int cts_tier_open(struct vt_store *s, unsigned int slot, bool create, char *why, size_t wl);
void cts_tier_close(struct tier *t);
int cts_map_tiers(struct vt_store *s, const struct vt_ctier_spec *specs, unsigned int nr,
		  char *why, size_t wl);

/* ctier_store_remote.c */
#define REMOTE_KEY_FILE "remote-key"
#define LCOPY_PREFIX "lcopy-"		/* DIR/lcopy-NAME: remote tier NAME's local copies */
void cts_remote_close(struct tier *t);
bool cts_remote_loc_ok(const struct tier *t, uint64_t loc);
/*
 * Under t->rput, outside the store's lock: the copies of @n pages on the
 * servers (page i's compressed bytes at @cbufs + i * @stride, @lens[i]
 * long), one request per server; per page in @status[i] 0 (its location
 * for the entry in @locs[i]), -EAGAIN (not attached, fewer live servers
 * than copies, pages still missing copies, no answer), -ENOSPC (a server's
 * cap) or -EIO. Returns 0, or the error every page got.
 */
int cts_remote_put(struct vt_store *s, struct tier *t, const uint64_t *pages,
		   const uint8_t *cbufs, const uint32_t *lens, unsigned int n, size_t stride,
		   uint64_t *locs, int *status);
/* Outside the store's lock: 0 (@len bytes), -EAGAIN (a holder silent), -EBADMSG. */
int cts_remote_fetch(struct vt_store *s, struct tier *t, uint64_t page, void *cbuf,
		     size_t cap, uint32_t *len);
/* Under the lock: its free is sent with the next batch, its local copy dropped. */
void cts_remote_dropped(struct tier *t, uint64_t page);
/*
 * Under t->rput, outside the store's lock, before the page goes to the
 * servers: its local copy (@data, and @cbuf of @len bytes: the remote
 * codec's, reused when the local tier's codec makes the same), replacing
 * a stale one. 0 (also without a local copy), -E2BIG, -ENOSPC or -EIO.
 */
int cts_remote_local_put(struct vt_store *s, struct tier *t, uint64_t page, const void *data,
			 const void *cbuf, uint32_t len);
/* Under the lock: @page's local copy into @out if it is @want's content. 0 or -errno. */
int cts_remote_local_get(struct tier *t, uint64_t page, uint32_t want, void *out);

/* ctier_store_index.c */
int cts_map_index(struct vt_store *s, bool create, char *why, size_t wl);
int cts_map_blocks(struct vt_store *s, bool create, char *why, size_t wl);
int cts_load_index(struct vt_store *s, char *why, size_t wl);
int cts_entry_make(struct vt_store *s, uint64_t page, struct entry **out);
void cts_block_release(struct vt_store *s, uint64_t c);

#endif
