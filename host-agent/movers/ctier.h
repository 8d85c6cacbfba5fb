/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Compressed tiers (TierScape's model): a tier is a codec (lz4, zstd:N,
 * deflate:N) x a pool allocator (size classes like zsmalloc, two objects per
 * page like zbud) x a medium (pool memory bound to a NUMA node, or a file on
 * disk for the coldest data). One page store per guest memory backend holds
 * the evicted pages of that backend in any of the configured tiers.
 *
 * The store lives in files (a directory under /run/vtier/store, tmpfs, for
 * node media; the file medium's pool in its own directory) mapped or written
 * so that kill -9 of the agent loses nothing: a page's compressed bytes and
 * its index entry are in the files before vt_store_put() returns, and a
 * restarted agent reopens the store with the same key and gets every page
 * back. The index is the only truth; pool allocators rebuild their free
 * lists from it on open.
 *
 * Every stored page carries a checksum of its uncompressed content, checked
 * on every vt_store_get(); a mismatch is -EBADMSG and the data is never
 * handed out. Zero-filled and same-filled pages take no pool space. A page
 * that does not compress to max_stored_pct of a page is not stored (-E2BIG).
 *
 * Thread safety: every call may come from any thread (the fault thread gets
 * and drops, the VM's worker puts); a store serialises internally.
 */
#ifndef VTIER_MOVERS_CTIER_H
#define VTIER_MOVERS_CTIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#define VT_CTIER_MAX 8			/* compressed tiers per host */
#define VT_CTIER_NAME_LEN 32

enum vt_codec_kind { VT_CODEC_LZ4, VT_CODEC_ZSTD, VT_CODEC_DEFLATE };
enum vt_pool_kind { VT_POOL_ZSMALLOC, VT_POOL_ZBUD };
/*
 * VT_MEDIUM_REMOTE: the compressed page is kept on memory servers
 * (vtier-memd, host-agent/remote/), sealed with the store's own key; the
 * index entry keeps its version and holders. No pool: the spec's pool is
 * ignored (kept as zsmalloc). Its servers are not part of the tier's
 * identity: they are handed to vt_store_remote_attach().
 */
enum vt_medium_kind { VT_MEDIUM_NODE, VT_MEDIUM_FILE, VT_MEDIUM_REMOTE };

/* One compressed tier, as configured ([ctier.NAME] group of the config). */
struct vt_ctier_spec {
	char name[VT_CTIER_NAME_LEN];	/* util/tier_name.h, from the group name */
	enum vt_codec_kind codec;
	int level;			/* zstd -131072..-1, 1..22; deflate 1..9; 0 lz4 */
	enum vt_pool_kind pool;
	enum vt_medium_kind medium;
	int node;			/* VT_MEDIUM_NODE: the NUMA node of the pool memory */
	char dir[256];			/* VT_MEDIUM_FILE: directory of the pool files */
	unsigned int max_stored_pct;	/* store only if compressed <= this % of a page (75) */
	uint64_t capacity_bytes;	/* pool bytes this tier may use on the host (0: no cap) */
};

/*
 * Parse group @group ("ctier.NAME") of @kf:
 *   codec = lz4 | zstd[:-131072..-1 or 1..22] | deflate[:1-9]
 *   pool = zsmalloc | zbud
 *   medium = node:N | file:/ABS/DIR
 *   max_stored_pct = 10..100      (optional, default 75)
 *   capacity = SIZE               (optional, e.g. 4GiB; default no cap)
 * Unknown keys, bad values and a bad NAME are errors naming the key.
 */
bool vt_ctier_spec_parse(GKeyFile *kf, const char *group, struct vt_ctier_spec *out,
			 GError **error);
/* KEY's value in GROUP, stripped (g_free it), or NULL with @error naming both. */
char *vt_ctier_key_value(GKeyFile *kf, const char *group, const char *key, GError **error);
/* "lz4 x zsmalloc x node:1" for logs and status. */
void vt_ctier_spec_describe(const struct vt_ctier_spec *spec, char *buf, size_t len);

/* What a store belongs to; written in its header, checked on reopen. */
struct vt_store_key {
	uint8_t vm_uuid[16];
	char backend_id[64];
	uint64_t size_bytes;		/* backend size */
	uint64_t page_size;		/* 4096 (huge page backends are not stored) */
};

/*
 * Who uses the store now: the agent's record of the QEMU process, so that a
 * RECONNECT is matched to the same process. Opaque to the store; kept in its
 * header and durable like the rest.
 */
struct vt_store_owner {
	uint32_t qemu_pid;
	uint32_t reserved;
	uint64_t qemu_start_time;	/* /proc/PID/stat field 22, clock ticks */
	uint64_t generation;		/* the HELLO's generation */
};

struct vt_store;

/*
 * Open the store in @dir for @key with the tiers @specs[@nr] (tier index =
 * position in @specs). @create: make a fresh, empty store with a new random
 * id (replacing any store in @dir; its files are created O_EXCL, and file
 * pools elsewhere are named by that id, so no other store's file is ever
 * opened, truncated or unlinked). Without @create: reopen; -ENOENT if there
 * is none, -ESTALE if its key differs, -EUCLEAN if the index is inconsistent
 * (overlapping slots, entries outside the backend, bad header) or a pool file
 * is missing or of another size; @why says what in one line. A version-1
 * store (before ids) gets one and its file pools are renamed to it.
 * A reopened store whose stored pages name a tier missing from @specs keeps
 * them readable (the tier's pool files are reopened by the name in the store).
 * Such tiers get the indices from @nr on (vt_store_tier_of, vt_store_stats),
 * take no new pages (vt_store_put: -EINVAL), and are forgotten at the first
 * open that finds them empty. A tier is the same tier when its name and its
 * whole spec are; a changed spec under an old name is a new tier.
 */
int vt_store_open(const char *dir, const struct vt_store_key *key,
		  const struct vt_ctier_spec *specs, unsigned int nr, bool create,
		  struct vt_store **out, char *why, size_t why_len);
/* Unmap and close; the files stay (for the next agent). NULL is fine. */
void vt_store_close(struct vt_store *s);
/*
 * Remove the store's files (the VM is gone for good): those in @dir and the
 * file pools named by its id; a version-1 store's old-named pools stay.
 * 0 or -errno.
 */
int vt_store_destroy(const char *dir);

/* A fresh store's owner is all zeroes. */
int vt_store_get_owner(struct vt_store *s, struct vt_store_owner *owner);
int vt_store_set_owner(struct vt_store *s, const struct vt_store_owner *owner);

/*
 * Store the page at byte offset @page * page_size of the backend (@data,
 * page_size bytes) in tier @tier. Durable when it returns 0. Returns
 * -E2BIG (does not compress below the tier's threshold: nothing stored),
 * -ENOSPC (the tier's pool is full), -EEXIST (already stored), -EINVAL.
 */
int vt_store_put(struct vt_store *s, uint64_t page, unsigned int tier, const void *data);
/*
 * The same, given @copy (@copy_len bytes): what tier @tier's codec made of
 * this page earlier (a destination's copy made during precopy, which the
 * page may have changed since). Stored as it is, without compressing again,
 * when it decompresses to @data byte for byte and fits the tier (*@used
 * true, when @used is not NULL); otherwise @data is compressed as by
 * vt_store_put(). @copy NULL: vt_store_put().
 */
int vt_store_put_copy(struct vt_store *s, uint64_t page, unsigned int tier, const void *data,
		      const void *copy, uint32_t copy_len, bool *used);
/*
 * Store @n (at most VT_STORE_BATCH_MAX) pages @pages[i] with bytes @data[i]
 * in tier @tier, each as vt_store_put() would, its result in @status[i]; a
 * remote tier's pages go to the servers together (one request per server,
 * not one per page). Returns how many were stored, or -EINVAL.
 */
#define VT_STORE_BATCH_MAX 32
int vt_store_put_batch(struct vt_store *s, const uint64_t *pages, unsigned int tier,
		       const void *const *data, unsigned int n, int *status);
/*
 * Copy the stored page into @out (page_size bytes), checksum verified.
 * Returns 0, -ENOENT (not stored: never evicted, or already served back),
 * -EBADMSG (checksum or decompression failed: @out must not be used).
 */
int vt_store_get(struct vt_store *s, uint64_t page, void *out);
/*
 * The same for a page read ahead of its fault (store-ahead): a damaged copy
 * is -EBADMSG but not counted in the tier's bad_checksum, which counts the
 * damaged copies a fault met (the page's own fault meets it and counts it).
 */
int vt_store_get_ahead(struct vt_store *s, uint64_t page, void *out);
/* Forget the page (after the kernel took it back with UFFDIO_COPY). */
int vt_store_drop(struct vt_store *s, uint64_t page);
/* Is @page stored, and where: tier index (>= nr: a tier kept for its pages), or -ENOENT */
int vt_store_tier_of(struct vt_store *s, uint64_t page);
/*
 * Is tier @tier (an index as vt_store_tier_of() gives it) a remote one
 * (VT_MEDIUM_REMOTE): its compressed pages are read from memory servers,
 * over the network. False for any other tier and for an index with no tier.
 */
bool vt_store_tier_remote(struct vt_store *s, int tier);
/*
 * The crc32c (vt_crc32c) of the stored page's uncompressed bytes, as put:
 * whether a copy of the page elsewhere is still the same. 0, or -ENOENT.
 */
int vt_store_crc_of(struct vt_store *s, uint64_t page, uint32_t *crc);
/* First stored page >= @from, or UINT64_MAX: walks the index (reconcile). */
uint64_t vt_store_next(struct vt_store *s, uint64_t from);

enum vt_store_kind { VT_STORE_ZERO, VT_STORE_SAME, VT_STORE_COMPRESSED };
/*
 * How the store keeps a page of these bytes: zero, one 64-bit word repeated
 * (*word, in entry itself), or compressed.
 */
enum vt_store_kind vt_store_classify(const void *page, uint64_t *word);

/*
 * A stored page as its store keeps it, for another host's store to take as
 * it is (compressed travel, docs/migration.md): how it is kept, the codec
 * of its tier for a compressed page, the crc32c of the uncompressed page,
 * the word of a ZERO or SAME page, and for a compressed page @len bytes.
 */
struct vt_store_encoded {
	enum vt_store_kind kind;
	enum vt_codec_kind codec;	/* VT_STORE_COMPRESSED only */
	uint32_t len;			/* compressed bytes, 1..page size; else 0 */
	uint32_t crc;			/* vt_crc32c of the page's bytes */
	uint64_t word;			/* ZERO (0) and SAME: the page's one word */
};
/*
 * The stored @page as kept (@enc; a compressed page's bytes in @out, room
 * for a page): nothing is decompressed, and nothing checked but the entry.
 * 0, -ENOENT (not stored), -EOPNOTSUPP (a remote tier's page: its bytes
 * are on the servers, vt_store_get() them), -EBADMSG (the entry names no
 * bytes of its pool), -EINVAL.
 */
int vt_store_get_encoded(struct vt_store *s, uint64_t page, struct vt_store_encoded *enc,
			 void *out);
/*
 * Store @page in tier @tier as another store kept it (@enc, and @bytes for
 * a compressed page), without compressing or decompressing: the crc is
 * the one checked when the page is got, as for any put. A compressed page
 * only when tier @tier's codec is @enc->codec (the level does not matter:
 * decompression is the same) and @enc->len fits the tier; otherwise
 * -EOPNOTSUPP (decompress it, and vt_store_put() the page). Durable when
 * it returns 0. -EEXIST (already stored), -EOPNOTSUPP (also: a remote
 * tier), -EINVAL (a malformed @enc: a ZERO page's word not 0, a SAME
 * page's 0, a length out of range), -ENOSPC (the tier's pool is full).
 */
int vt_store_put_encoded(struct vt_store *s, uint64_t page, unsigned int tier,
			 const struct vt_store_encoded *enc, const void *bytes);

struct vt_store_tier_stats {
	char name[VT_CTIER_NAME_LEN];
	uint64_t pages;			/* pages stored in this tier */
	uint64_t zero_pages;		/* of those, zero-filled (no pool space) */
	uint64_t same_pages;		/* same-filled (no pool space) */
	uint64_t compressed_bytes;	/* payload bytes of the compressed pages */
	uint64_t pool_bytes;		/* pool memory or file bytes in use */
	uint64_t metadata_bytes;	/* index and allocator bytes for this tier */
	uint64_t rejected_e2big;	/* puts refused: did not compress enough */
	uint64_t rejected_memo;		/* ... of those, known from an earlier refusal of
					   the same content: not compressed again */
	uint64_t bad_checksum;		/* gets that failed the checksum */
	uint64_t compress_ns;		/* time spent compressing / decompressing */
	uint64_t decompress_ns;
	uint64_t puts, gets;
	char placement[32];		/* where the pool is: "bind:N", "preferred:N", "disk" */
	/* a remote tier's local copies (copies = 1, local_copy): its own store's figures */
	uint64_t local_copy_pages;	/* pages with a local copy */
	uint64_t local_copy_bytes;	/* their pool and index bytes (not in pool_bytes) */
	uint64_t local_copy_reads;	/* gets served from the local copy (server lost, copy bad) */
};

/*
 * @out has room for @nr entries; fills min(nr, tiers) and returns that: the
 * tiers of @specs in order, then those kept only for their pages. Counters of
 * calls (puts, gets, rejected_e2big, bad_checksum, *_ns) count since open;
 * the others describe the store as it is.
 */
unsigned int vt_store_stats(struct vt_store *s, struct vt_store_tier_stats *out, unsigned int nr);
/* Index + bitmap + refused-page memo bytes of the whole store (not per tier). */
uint64_t vt_store_index_bytes(struct vt_store *s);

/*
 * Remote tiers (VT_MEDIUM_REMOTE). Until its client is attached a remote
 * tier takes no page (-EAGAIN) and serves none (-EAGAIN: the fault waits).
 * Attach makes the store's key (STORE/remote-key, 0600, 32 random bytes at
 * first use; the servers never see it), connects to the servers of @cfg
 * (its vm_key is ignored) and hands the client every page the index names
 * on the tier (version and holders), so a restarted agent reads what the
 * last one stored. Blocks on the servers' HELLOs (188 ms per silent server at
 * most): from a job or a mover's thread. 0 or -errno, @why in one line.
 *
 * @local_copy (NULL: none; with cfg->copies == 1): every page of the tier
 * is also kept, before its put returns, in a store of its own with that
 * compressed tier's spec (DIR/lcopy-NAME, the same crash-safety rules; made
 * at first use, so a store of the old code opens as it is); a get whose
 * server copy is silent, missing or bad is served from it (checksum
 * verified); a drop frees both; local copies the index does not name (a
 * kill between the two puts) are dropped here.
 */
struct vt_rc_config;
struct vt_rc_stats;
struct vt_rc_server_stats;
struct vt_rt_stats;
int vt_store_remote_attach(struct vt_store *s, unsigned int tier, const struct vt_rc_config *cfg,
			   const struct vt_ctier_spec *local_copy, char *why, size_t why_len);
/*
 * The store in @dir is being removed for good (its QEMU exited): the servers
 * of @cfg are asked to forget the store's namespace (remote_client.h,
 * vt_rc_bye), with the key in DIR/remote-key. Call it once per remote tier,
 * before vt_store_destroy(), with the store closed. Blocks on the servers
 * (188 ms per silent one at most): never on a main loop. The servers that
 * confirmed (0 also when the store never made a remote key: nothing is out
 * there), with @asked set to how many were asked; or -errno, @why in one line.
 */
int vt_store_remote_forget(const char *dir, const struct vt_rc_config *cfg, unsigned int *asked,
			   char *why, size_t why_len);
/*
 * The remote tiers' upkeep, from the mover's thread: the frees of dropped
 * pages sent (in batches), down servers probed, up to @budget lost copies
 * re-created. Blocks on the servers (bounded). Pages re-created this call,
 * or -ENOENT: the store has no remote tier.
 */
int vt_store_remote_tick(struct vt_store *s, unsigned int budget);
/*
 * The client's figures of remote tier @tier and of up to @nr servers in
 * @srv, as of the last vt_store_remote_tick() (never waits on a server: for
 * a main loop): the number of servers, or -ENOENT (not a remote tier, not
 * attached or not ticked yet).
 */
int vt_store_remote_stats(struct vt_store *s, unsigned int tier, struct vt_rc_stats *st,
			  struct vt_rc_server_stats *srv, unsigned int nr);
/*
 * The client's own end of remote tier @tier as its transport says, as of the
 * last vt_store_remote_tick() (mode "udp", "afxdp-copy", "afxdp-zerocopy";
 * the fallback reason in auto mode; busy_poll, need_wakeup, counters).
 * Never waits on a server. 0, or -ENOENT as vt_store_remote_stats().
 */
int vt_store_remote_transport(struct vt_store *s, unsigned int tier, struct vt_rt_stats *st);

#endif
