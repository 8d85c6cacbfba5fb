// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The page store of one guest memory backend (ctier.h): open, close and
 * destroy, and its stats. Its records and its files: ctier_store_int.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctier_store_int.h"

int cts_fail(char *why, size_t len, int r, const char *fmt, ...)
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
		    !memcmp(h.magic, HDR_MAGIC, 8) && cts_ident_ok(&h.ident)) {
			/* records being added or removed too: a file there carries our id */
			for (unsigned int k = 0; k < VT_CTIER_MAX; k++)
				if (cts_rec_ok(&h.tier[k]) && h.tier[k].spec.medium == VT_MEDIUM_FILE) {
					cts_pool_path(dir, &h, k, path, sizeof(path));
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
		if (g_str_has_prefix(de->d_name, LCOPY_PREFIX)) {
			/* a remote tier's local copies: a store of their own */
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (vt_store_destroy(path) < 0)
				r = -EIO;
			continue;
		}
		if (strcmp(de->d_name, "index") && strcmp(de->d_name, "blocks") &&
		    strcmp(de->d_name, REMOTE_KEY_FILE) && !g_str_has_prefix(de->d_name, "pool-"))
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
		return cts_fail(why, why_len, -EINVAL, "bad arguments");
	if (key->page_size != PAGE || !key->size_bytes || key->size_bytes % PAGE ||
	    !memchr(key->backend_id, 0, sizeof(key->backend_id)))
		return cts_fail(why, why_len, -EINVAL, "key: page size must be %u, size a multiple "
				"of it, backend id NUL-terminated", PAGE);
	for (unsigned int i = 0; i < nr; i++) {
		if (!cts_spec_ok(&specs[i]) || !memchr(specs[i].name, 0, sizeof(specs[i].name)))
			return cts_fail(why, why_len, -EINVAL, "tier %u: invalid spec", i);
		for (unsigned int j = 0; j < i; j++)
			if (!strcmp(specs[i].name, specs[j].name))
				return cts_fail(why, why_len, -EINVAL, "two tiers named %s",
						specs[i].name);
	}
	if (strlen(dir) > 256)
		return cts_fail(why, why_len, -ENAMETOOLONG, "store directory name too long");
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
		r = cts_fail(why, why_len, -ENOMEM, "no memory for %llu chunks",
			     (unsigned long long)s->nr_chunks);
		goto err;
	}
	if (create) {
		if (g_mkdir_with_parents(dir, 0700) < 0) {
			r = cts_fail(why, why_len, -errno, "%s: %s", dir, g_strerror(errno));
			goto err;
		}
		remove_files(dir);
	}
	if (create) {
		r = cts_new_store_id(&id);
		if (r < 0) {
			r = cts_fail(why, why_len, r, "no store id: getrandom: %s", g_strerror(-r));
			goto err;
		}
	}
	r = cts_map_index(s, create, why, why_len);
	if (r < 0)
		goto err;
	if (create)
		cts_write_header(s, key, &id);
	else
		r = cts_check_header(s, key, why, why_len);
	if (r < 0)
		goto err;
	r = cts_map_blocks(s, create, why, why_len);
	if (r < 0)
		goto err;
	if (!create) {
		r = cts_load_index(s, why, why_len);
		if (r < 0)
			goto err;
		/*
		 * pool pages no valid entry claimed: give their storage back;
		 * the others mapped (gets point into them)
		 */
		for (unsigned int k = 0; k < VT_CTIER_MAX; k++) {
			struct tier *t = &s->tier[k];

			if (!t->live || tier_remote(t))
				continue;
			vt_pool_trim(&t->pool);
			r = vt_medium_map(&t->medium, vt_pool_pages_end(&t->pool) * VT_POOL_PAGE);
			if (r < 0) {
				r = cts_fail(why, why_len, r, "tier %s: mapping its pool: %s",
					     t->spec.name, g_strerror(-r));
				goto err;
			}
		}
	}
	r = cts_map_tiers(s, specs, nr, why, why_len);
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
		cts_tier_close(&s->tier[k]);
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

unsigned int vt_store_stats(struct vt_store *s, struct vt_store_tier_stats *out, unsigned int nr)
{
	unsigned int n;

	pthread_mutex_lock(&s->lock);
	n = MIN(nr, s->nr_api);
	for (unsigned int i = 0; i < n; i++) {
		struct tier *t = &s->tier[s->api_slot[i]];

		out[i] = t->st;
		/* a remote tier's: what its pages take on the servers, each copy */
		out[i].pool_bytes = tier_remote(t) ? t->st.compressed_bytes * t->copies :
				    t->pool.pages.in_use * VT_POOL_PAGE;
		out[i].metadata_bytes = (tier_remote(t) ? 0 : vt_pool_metadata_bytes(&t->pool)) +
					t->st.pages * sizeof(struct entry);
		g_strlcpy(out[i].placement, t->medium.map.placement, sizeof(out[i].placement));
		if (t->lc) {
			struct vt_store_tier_stats l[VT_CTIER_MAX];
			unsigned int m = vt_store_stats(t->lc, l, VT_CTIER_MAX);

			/* its own store: no lock of ours taken there */
			out[i].local_copy_bytes = vt_store_index_bytes(t->lc);
			for (unsigned int k = 0; k < m; k++) {
				out[i].local_copy_pages += l[k].pages;
				out[i].local_copy_bytes += l[k].pool_bytes + l[k].metadata_bytes;
			}
			out[i].local_copy_reads = t->lc_reads;
		}
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
