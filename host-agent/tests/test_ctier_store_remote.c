// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The page store's remote tier (ctier.h: VT_MEDIUM_REMOTE) against three
 * memory servers of this process (remote_servers.h), no root needed:
 *  - put, get and drop: every page read back byte for byte, two copies a
 *    compressed page on the servers, zero and same pages kept in the index
 *    alone, incompressible pages refused; drops freed on the servers;
 *  - a closed store (the agent gone) reopened and attached again: its pages
 *    are read back from the servers through the versions and holders its
 *    index kept;
 *  - no server answering: a get says "again later" (-EAGAIN), never a bad
 *    copy; once they answer the page comes back; a put is refused (-EAGAIN);
 *  - one server silent: gets come from the other copy, the tier takes no
 *    new page until the upkeep re-created the lost copies, then takes again;
 *  - before its client is attached the tier takes and serves nothing;
 *  - the store's key replaced (a forged or foreign copy): nothing opens,
 *    every get is -EBADMSG, nothing is served;
 *  - a bad [remote.NAME] group is refused naming the key and value;
 *  - the local-copy variant (copies = 1, local_copy): one copy on a server
 *    and one in a local store; every page read back when its server is
 *    silent, restarted empty or holds copies that do not open (a foreign
 *    key), the tier taking pages meanwhile; nothing served when neither
 *    copy is good; drops free both; a store of the two-copy kind reopened
 *    with a local copy; local copies the index does not name dropped at
 *    attach; its memory in the tier's figures.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "ctier.h"
#include "ctier_remote_spec.h"
#include "remote_servers.h"

#define NSRV 3
#define PAGE 4096
#define NPAGES 4096

struct fixture {
	struct server srv[NSRV];
	struct vt_rc_config cfg;
	char *dir;
	struct vt_store_key key;
	struct vt_ctier_spec spec[2];
};

static int setup(void **state)
{
	struct fixture *f = g_new0(struct fixture, 1);

	for (unsigned int k = 0; k < NSRV; k++)
		server_start(&f->srv[k], k);
	servers_config(f->srv, NSRV, &f->cfg);
	f->dir = g_dir_make_tmp("store-remote-XXXXXX", NULL);
	f->key.size_bytes = (uint64_t)NPAGES * PAGE;
	f->key.page_size = PAGE;
	g_strlcpy(f->key.backend_id, "mem0", sizeof(f->key.backend_id));
	g_strlcpy(f->spec[0].name, "far", sizeof(f->spec[0].name));
	f->spec[0].codec = VT_CODEC_LZ4;
	f->spec[0].medium = VT_MEDIUM_REMOTE;
	f->spec[0].node = -1;
	f->spec[0].max_stored_pct = 75;
	g_strlcpy(f->spec[1].name, "near", sizeof(f->spec[1].name));
	f->spec[1].codec = VT_CODEC_LZ4;
	f->spec[1].medium = VT_MEDIUM_NODE;
	f->spec[1].max_stored_pct = 75;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	for (unsigned int k = 0; k < NSRV; k++)
		server_stop(&f->srv[k]);
	vt_store_destroy(f->dir);
	rmdir(f->dir);
	g_free(f->dir);
	g_free(f);
	return 0;
}

/* Page @p's content: zero, same-filled, incompressible, or text-like. */
static void content(uint64_t p, uint32_t gen, uint8_t *b)
{
	uint64_t x = p * 0x9e3779b97f4a7c15ull + gen;

	switch (p % 8) {
	case 0:
		memset(b, 0, PAGE);
		break;
	case 1:
		for (unsigned int i = 0; i < PAGE / 8; i++)
			memcpy(b + i * 8, &x, 8);
		break;
	case 2:
		for (unsigned int i = 0; i < PAGE; i += 8) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			memcpy(b + i, &x, 8);
		}
		break;
	default:
		for (unsigned int i = 0; i < PAGE; i++)
			b[i] = (uint8_t)("the quick brown fox "[(i + p + gen) % 20] ^ (i / 512));
	}
}

static struct vt_store *open_attached(struct fixture *f, bool create)
{
	struct vt_store *s = NULL;
	char why[300];
	int r = vt_store_open(f->dir, &f->key, f->spec, 2, create, &s, why, sizeof(why));

	if (r)
		fail_msg("vt_store_open: %s (%s)", g_strerror(-r), why);
	r = vt_store_remote_attach(s, 0, &f->cfg, NULL, why, sizeof(why));
	if (r)
		fail_msg("vt_store_remote_attach: %s (%s)", g_strerror(-r), why);
	return s;
}

/* The store attached with copies = 1 and its local copies in tier "near"'s spec. */
static struct vt_store *open_local_copy(struct fixture *f, bool create)
{
	struct vt_store *s = NULL;
	struct vt_rc_config c = f->cfg;
	char why[300];
	int r = vt_store_open(f->dir, &f->key, f->spec, 2, create, &s, why, sizeof(why));

	if (r)
		fail_msg("vt_store_open: %s (%s)", g_strerror(-r), why);
	c.copies = 1;
	r = vt_store_remote_attach(s, 0, &c, &f->spec[1], why, sizeof(why));
	if (r)
		fail_msg("vt_store_remote_attach: %s (%s)", g_strerror(-r), why);
	return s;
}

/* Put pages [0, n) into the remote tier: how many were stored. */
static unsigned int put_all(struct vt_store *s, unsigned int n, uint32_t gen)
{
	uint8_t b[PAGE];
	unsigned int stored = 0;

	for (unsigned int p = 0; p < n; p++) {
		int r;

		content(p, gen, b);
		r = vt_store_put(s, p, 0, b);
		if (r == 0)
			stored++;
		else if (r != -E2BIG || p % 8 != 2)
			fail_msg("put %u: %s", p, g_strerror(-r));
	}
	return stored;
}

/* Pages [0, n) read back: how many are exactly as put (the refused ones skipped). */
static unsigned int check_all(struct vt_store *s, unsigned int n, uint32_t gen, int *first_err)
{
	uint8_t want[PAGE], got[PAGE];
	unsigned int good = 0;

	*first_err = 0;
	for (unsigned int p = 0; p < n; p++) {
		int r;

		if (p % 8 == 2)
			continue;
		content(p, gen, want);
		r = vt_store_get(s, p, got);
		if (r == 0 && !memcmp(want, got, PAGE))
			good++;
		else if (!*first_err)
			*first_err = r ? r : -EILSEQ;
	}
	return good;
}

static uint64_t copies_on_servers(struct vt_store *s)
{
	struct vt_rc_server_stats srv[NSRV];
	struct vt_rc_stats st;
	uint64_t n = 0;

	assert_int_equal(vt_store_remote_stats(s, 0, &st, srv, NSRV), NSRV);
	for (unsigned int k = 0; k < NSRV; k++)
		n += srv[k].pages;
	return n;
}

static void test_put_get_drop(void **state)
{
	struct fixture *f = *state;
	struct vt_store *s = open_attached(f, true);
	struct vt_store_tier_stats ts[2];
	struct vt_rt_stats rt;
	unsigned int n = 512, stored = put_all(s, n, 1);
	uint8_t b[PAGE];
	int err;

	assert_int_equal(stored, n - n / 8);
	assert_int_equal(check_all(s, n, 1, &err), n - n / 8);
	assert_int_equal(vt_store_stats(s, ts, 2), 2);
	assert_string_equal(ts[0].name, "far");
	assert_int_equal(ts[0].pages, stored);
	assert_int_equal(ts[0].zero_pages, n / 8);
	assert_int_equal(ts[0].same_pages, n / 8);
	assert_int_equal(ts[0].rejected_e2big, n / 8);
	assert_string_equal(ts[0].placement, "remote");
	/* what a fault's read-ahead asks before it reads a tier's page */
	assert_true(vt_store_tier_remote(s, 0));
	assert_true(vt_store_tier_remote(s, vt_store_tier_of(s, 3)));
	assert_false(vt_store_tier_remote(s, 1));
	assert_false(vt_store_tier_remote(s, 2));
	assert_false(vt_store_tier_remote(s, vt_store_tier_of(s, 2)));	/* refused: -ENOENT */
	/* the compressed ones, two copies each: counted after an upkeep */
	assert_true(vt_store_remote_tick(s, 64) >= 0);
	assert_int_equal(copies_on_servers(s), 2ull * (stored - 2 * (n / 8)));
	assert_int_equal(ts[0].pool_bytes, 2 * ts[0].compressed_bytes);
	/* the client's own end as its transport says (vtierctl stats' "end") */
	assert_int_equal(vt_store_remote_transport(s, 0, &rt), 0);
	assert_string_equal(rt.mode, "udp");
	assert_string_equal(rt.fallback, "");
	assert_false(rt.busy_poll);
	assert_true(rt.tx >= 2ull * (stored - 2 * (n / 8)) && rt.rx > 0);
	assert_int_equal(vt_store_remote_transport(s, 1, &rt), -ENOENT);	/* a local tier */
	/* a stored page is there once */
	content(3, 1, b);
	assert_int_equal(vt_store_put(s, 3, 0, b), -EEXIST);
	/* drops: the frees go out with the next upkeep */
	for (unsigned int p = 0; p < n; p++)
		if (p % 8 != 2)
			assert_int_equal(vt_store_drop(s, p), 0);
	assert_int_equal(vt_store_get(s, 3, b), -ENOENT);
	assert_true(vt_store_remote_tick(s, 64) >= 0);
	assert_int_equal(copies_on_servers(s), 0);
	vt_store_close(s);
}

/* Batches: one request per server for up to 32 pages; results per page. */
static void test_batch(void **state)
{
	struct fixture *f = *state;
	struct vt_store *s = open_attached(f, true);
	struct vt_rc_server_stats srv[NSRV];
	struct vt_rc_stats st;
	uint64_t before = 0, after = 0, pages[VT_STORE_BATCH_MAX];
	const void *data[VT_STORE_BATCH_MAX];
	static uint8_t buf[VT_STORE_BATCH_MAX][PAGE];
	int status[VT_STORE_BATCH_MAX], err;
	unsigned int n = 256, stored = 0;

	vt_store_remote_tick(s, 0);
	assert_int_equal(vt_store_remote_stats(s, 0, &st, srv, NSRV), NSRV);
	for (unsigned int k = 0; k < NSRV; k++)
		before += srv[k].requests;
	for (unsigned int b = 0; b < n; b += VT_STORE_BATCH_MAX) {
		for (unsigned int i = 0; i < VT_STORE_BATCH_MAX; i++) {
			pages[i] = b + i;
			content(b + i, 9, buf[i]);
			data[i] = buf[i];
		}
		stored += (unsigned int)vt_store_put_batch(s, pages, 0, data, VT_STORE_BATCH_MAX,
							   status);
		for (unsigned int i = 0; i < VT_STORE_BATCH_MAX; i++)
			assert_int_equal(status[i], (b + i) % 8 == 2 ? -E2BIG : 0);
	}
	assert_int_equal(stored, n - n / 8);
	vt_store_remote_tick(s, 0);
	vt_store_remote_stats(s, 0, &st, srv, NSRV);
	for (unsigned int k = 0; k < NSRV; k++)
		after += srv[k].requests;
	/* 160 compressed pages on two servers each: a few requests a batch, not 320 */
	assert_true(after - before <= 8 * 2 * 2);
	assert_int_equal(check_all(s, n, 9, &err), n - n / 8);
	/* again: every page is there already */
	assert_int_equal(vt_store_put_batch(s, pages, 0, data, VT_STORE_BATCH_MAX, status), 0);
	for (unsigned int i = 0; i < VT_STORE_BATCH_MAX; i++)
		assert_true(status[i] == -EEXIST || status[i] == -E2BIG);
	assert_int_equal(vt_store_put_batch(s, pages, 0, data, VT_STORE_BATCH_MAX + 1, status),
			 -EINVAL);
	vt_store_close(s);
}

static void test_reopen_reads_back(void **state)
{
	struct fixture *f = *state;
	struct vt_store *s = open_attached(f, true);
	unsigned int n = 1024, stored = put_all(s, n, 7);
	int err;

	/* the agent goes: the index stays, the client with its versions is gone */
	vt_store_close(s);
	s = open_attached(f, false);
	assert_int_equal(vt_store_stats(s, (struct vt_store_tier_stats[2]){ 0 }, 2), 2);
	assert_int_equal(check_all(s, n, 7, &err), stored);
	/* stored again after the restart: read as the new content only */
	for (unsigned int p = 0; p < 64; p++)
		if (p % 8 != 2)
			assert_int_equal(vt_store_drop(s, p), 0);
	assert_int_equal(put_all(s, 64, 8), 64 - 8);
	assert_int_equal(check_all(s, 64, 8, &err), 64 - 8);
	vt_store_close(s);
}

/*
 * The VM is gone: its store's namespace is forgotten on every server that
 * answers (pages and all); a silent one keeps it; a store that never made a
 * remote key asks nobody.
 */
static void test_forget(void **state)
{
	struct fixture *f = *state;
	struct vt_store *s = open_attached(f, true);
	g_autofree char *fresh = g_dir_make_tmp("store-remote-XXXXXX", NULL);
	struct vt_rs_stats st;
	unsigned int asked = 99;
	char why[256];

	put_all(s, 512, 3);
	assert_true(vt_store_remote_tick(s, 0) >= 0);
	assert_true(copies_on_servers(s) > 0);
	vt_store_close(s);
	g_atomic_int_set(&f->srv[2].mute, 1);
	assert_int_equal(vt_store_remote_forget(f->dir, &f->cfg, &asked, why, sizeof(why)),
			 NSRV - 1);
	assert_int_equal(asked, NSRV);
	g_atomic_int_set(&f->srv[2].mute, 0);
	for (unsigned int k = 0; k < NSRV; k++) {
		vt_rs_get_stats(f->srv[k].rs, &st);
		if (k == 2) {
			/* it never heard the BYE: the copies stay until it restarts */
			assert_int_equal(st.namespaces, 1);
			assert_true(st.pages > 0);
			assert_int_equal(st.byes, 0);
		} else {
			assert_int_equal(st.namespaces, 0);
			assert_int_equal(st.pages, 0);
			assert_int_equal(st.bytes, 0);
			assert_int_equal(st.byes, 1);
		}
	}
	assert_int_equal(vt_store_remote_forget(fresh, &f->cfg, &asked, why, sizeof(why)), 0);
	assert_int_equal(asked, 0);
	rmdir(fresh);
}

static void test_silent_servers(void **state)
{
	struct fixture *f = *state;
	struct vt_store *s = open_attached(f, true);
	unsigned int n = 256, stored = put_all(s, n, 3);
	uint8_t b[PAGE];
	int err;

	for (unsigned int k = 0; k < NSRV; k++)
		g_atomic_int_set(&f->srv[k].mute, 1);
	/* compressed pages wait; zero and same pages are in the index alone */
	assert_int_equal(vt_store_get(s, 3, b), -EAGAIN);
	assert_int_equal(vt_store_get(s, 4, b), -EAGAIN);
	assert_int_equal(vt_store_get(s, 0, b), 0);
	content(1, 3, b);
	{
		uint8_t got[PAGE];

		assert_int_equal(vt_store_get(s, 1, got), 0);
		assert_memory_equal(got, b, PAGE);
	}
	content(n + 3, 3, b);
	assert_int_equal(vt_store_put(s, n + 3, 0, b), -EAGAIN);
	assert_int_equal(vt_store_tier_of(s, n + 3), -ENOENT);
	for (unsigned int k = 0; k < NSRV; k++)
		g_atomic_int_set(&f->srv[k].mute, 0);
	g_usleep(VT_RC_PROBE_NS / 1000 + 50000);
	vt_store_remote_tick(s, 64);
	assert_int_equal(check_all(s, n, 3, &err), stored);
	vt_store_close(s);
}

/*
 * Server 1 silent: pages [0, n) of @gen all read back (@stored of them),
 * the server marked down on the way, pages missing copies after an upkeep
 * of @budget.
 */
static void server1_silent(struct fixture *f, struct vt_store *s, unsigned int n, uint32_t gen,
			   unsigned int stored, unsigned int budget, struct vt_rc_stats *st)
{
	struct vt_rc_server_stats srv[NSRV];
	int err;

	g_atomic_int_set(&f->srv[1].mute, 1);
	assert_int_equal(check_all(s, n, gen, &err), stored);
	vt_store_remote_tick(s, budget);
	assert_int_equal(vt_store_remote_stats(s, 0, st, srv, NSRV), NSRV);
	assert_int_equal(srv[1].state, VT_RC_DOWN);
	assert_true(st->under_copies > 0);
}

static void test_one_server_lost(void **state)
{
	struct fixture *f = *state;
	struct vt_store *s = open_attached(f, true);
	unsigned int n = 256, stored = put_all(s, n, 5);
	struct vt_rc_server_stats srv[NSRV];
	struct vt_rc_stats st;
	uint8_t b[PAGE];
	int err, r = 0;

	/* every page from its other copy; until the upkeep re-created the copies, no new page */
	server1_silent(f, s, n, 5, stored, 0, &st);
	content(n + 3, 5, b);
	assert_int_equal(vt_store_put(s, n + 3, 0, b), -EAGAIN);
	for (unsigned int i = 0; i < 20 && (r = vt_store_remote_tick(s, 1000)) >= 0; i++) {
		vt_store_remote_stats(s, 0, &st, srv, NSRV);
		if (!st.under_copies)
			break;
	}
	assert_int_equal(st.under_copies, 0);
	assert_true(st.repaired > 0);
	assert_int_equal(vt_store_put(s, n + 3, 0, b), 0);
	assert_int_equal(check_all(s, n, 5, &err), stored);
	vt_store_close(s);
}

static void test_not_attached(void **state)
{
	struct fixture *f = *state;
	struct vt_store *s = open_attached(f, true);
	unsigned int stored = put_all(s, 64, 2);
	struct vt_rt_stats rt;
	char why[300];
	uint8_t b[PAGE];

	(void)stored;
	vt_store_close(s);
	assert_int_equal(vt_store_open(f->dir, &f->key, f->spec, 2, false, &s, why, sizeof(why)), 0);
	assert_int_equal(vt_store_get(s, 3, b), -EAGAIN);
	assert_int_equal(vt_store_remote_transport(s, 0, &rt), -ENOENT);	/* not attached */
	content(70, 2, b);
	assert_int_equal(vt_store_put(s, 70, 0, b), -EAGAIN);
	/* not a remote tier; attached twice */
	assert_int_equal(vt_store_remote_attach(s, 1, &f->cfg, NULL, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "not a remote tier"));
	assert_int_equal(vt_store_remote_attach(s, 0, &f->cfg, NULL, why, sizeof(why)), 0);
	assert_int_equal(vt_store_remote_attach(s, 0, &f->cfg, NULL, why, sizeof(why)), -EALREADY);
	assert_int_equal(vt_store_get(s, 3, b), 0);
	vt_store_close(s);
}

static void test_foreign_key(void **state)
{
	struct fixture *f = *state;
	struct vt_store *s = open_attached(f, true);
	unsigned int n = 128;
	g_autofree char *path = g_build_filename(f->dir, "remote-key", NULL);
	uint8_t other[32], b[PAGE];
	int fd, bad = 0;
	struct stat st;

	put_all(s, n, 4);
	vt_store_close(s);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	memset(other, 0x5a, sizeof(other));
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, other, sizeof(other)), (ssize_t)sizeof(other));
	close(fd);
	s = open_attached(f, false);
	for (unsigned int p = 0; p < n; p++)
		if (p % 8 > 2)
			bad += vt_store_get(s, p, b) == -EBADMSG;
	assert_int_equal(bad, n / 8 * 5);
	vt_store_close(s);
	/* a key file of another size is refused */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, other, 7), 7);
	close(fd);
	{
		char why[300];

		assert_int_equal(vt_store_open(f->dir, &f->key, f->spec, 2, false, &s, why,
					       sizeof(why)), 0);
		assert_int_equal(vt_store_remote_attach(s, 0, &f->cfg, NULL, why, sizeof(why)), -EUCLEAN);
		assert_non_null(strstr(why, "not a key of 32 bytes"));
		vt_store_close(s);
	}
}

/* The fds this process holds. */
static unsigned int open_fds(void)
{
	g_autoptr(GDir) d = g_dir_open("/proc/self/fd", 0, NULL);
	unsigned int n = 0;

	while (d && g_dir_read_name(d))
		n++;
	return n;
}

/* Compressed pages among [0, n): those with a copy on a server. */
static unsigned int compressed_of(unsigned int n)
{
	return n - 3 * (n / 8);
}

/*
 * copies = 1 with a local copy: one copy on the servers, one in the local
 * store, each page read back; drops free both.
 */
static void test_local_copy(void **state)
{
	struct fixture *f = *state;
	struct vt_store *s = open_local_copy(f, true);
	struct vt_store_tier_stats ts[2];
	unsigned int n = 512, stored = put_all(s, n, 11);
	g_autofree char *lcdir = g_build_filename(f->dir, "lcopy-far", NULL);
	int err;

	assert_int_equal(stored, n - n / 8);
	assert_int_equal(check_all(s, n, 11, &err), stored);
	assert_true(vt_store_remote_tick(s, 64) >= 0);
	/* one copy a compressed page on the servers, one here */
	assert_int_equal(copies_on_servers(s), compressed_of(n));
	assert_int_equal(vt_store_stats(s, ts, 2), 2);
	assert_int_equal(ts[0].pool_bytes, ts[0].compressed_bytes);
	assert_int_equal(ts[0].local_copy_pages, compressed_of(n));
	assert_true(ts[0].local_copy_bytes >= ts[0].compressed_bytes / 2);
	assert_int_equal(ts[0].local_copy_reads, 0);
	assert_true(g_file_test(lcdir, G_FILE_TEST_IS_DIR));
	for (unsigned int p = 0; p < n; p++)
		if (p % 8 != 2)
			assert_int_equal(vt_store_drop(s, p), 0);
	assert_true(vt_store_remote_tick(s, 64) >= 0);
	assert_int_equal(copies_on_servers(s), 0);
	assert_int_equal(vt_store_stats(s, ts, 2), 2);
	assert_int_equal(ts[0].local_copy_pages, 0);
	vt_store_close(s);
	/* removed with the store */
	assert_int_equal(vt_store_destroy(f->dir), 0);
	assert_false(g_file_test(lcdir, G_FILE_TEST_EXISTS));
}

/*
 * A server silent, then restarted empty: every page from the local copy
 * at once, the tier taking new pages meanwhile (on the live servers).
 */
static void test_local_copy_server_lost(void **state)
{
	struct fixture *f = *state;
	struct vt_store *s = open_local_copy(f, true);
	unsigned int n = 512, stored = put_all(s, n, 12);
	struct vt_store_tier_stats ts[2];
	struct vt_rc_server_stats srv[NSRV];
	struct vt_rc_stats st;
	uint8_t b[PAGE], got[PAGE];
	int err;

	server1_silent(f, s, n, 12, stored, 64, &st);
	assert_int_equal(vt_store_stats(s, ts, 2), 2);
	assert_true(ts[0].local_copy_reads > 0);
	assert_int_equal(ts[0].bad_checksum, 0);
	/* the local copy holds: new pages are taken, and read back */
	for (unsigned int p = n; p < n + 64; p++) {
		content(p, 12, b);
		assert_int_equal(vt_store_put(s, p, 0, b) == 0 || p % 8 == 2, 1);
	}
	assert_int_equal(check_all(s, n + 64, 12, &err), stored + 64 - 8);
	/* it comes back empty: its copies forgotten, the local copies serve */
	server_restart_empty(&f->srv[1]);
	g_atomic_int_set(&f->srv[1].mute, 0);
	g_usleep(VT_RC_PROBE_NS / 1000 + 50000);
	vt_store_remote_tick(s, 64);
	assert_int_equal(vt_store_remote_stats(s, 0, &st, srv, NSRV), NSRV);
	assert_int_equal(srv[1].state, VT_RC_UP);
	assert_true(srv[1].emptied > 0);
	assert_int_equal(check_all(s, n + 64, 12, &err), stored + 64 - 8);
	/* every server silent: still every page */
	for (unsigned int k = 0; k < NSRV; k++)
		g_atomic_int_set(&f->srv[k].mute, 1);
	assert_int_equal(check_all(s, n + 64, 12, &err), stored + 64 - 8);
	content(3, 12, b);
	assert_int_equal(vt_store_get(s, 3, got), 0);
	assert_memory_equal(got, b, PAGE);
	for (unsigned int k = 0; k < NSRV; k++)
		g_atomic_int_set(&f->srv[k].mute, 0);
	vt_store_close(s);
}

/*
 * The servers' copies do not open (the store's key replaced: a forged or
 * foreign copy): each page from its local copy; without the local copies
 * too, nothing is served (-EBADMSG, never zeros or another page).
 */
static void test_local_copy_bad_copies(void **state)
{
	struct fixture *f = *state;
	struct vt_store *s = open_local_copy(f, true);
	unsigned int n = 256, stored = put_all(s, n, 13);
	g_autofree char *path = g_build_filename(f->dir, "remote-key", NULL);
	g_autofree char *lcdir = g_build_filename(f->dir, "lcopy-far", NULL);
	uint8_t other[32], b[PAGE];
	int fd, err, bad = 0;

	vt_store_close(s);
	memset(other, 0x5a, sizeof(other));
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, other, sizeof(other)), (ssize_t)sizeof(other));
	close(fd);
	s = open_local_copy(f, false);
	assert_int_equal(check_all(s, n, 13, &err), stored);
	vt_store_close(s);
	/* the local copies gone as well */
	assert_int_equal(vt_store_destroy(lcdir), 0);
	assert_false(g_file_test(lcdir, G_FILE_TEST_EXISTS));
	s = open_local_copy(f, false);
	for (unsigned int p = 0; p < n; p++) {
		if (p % 8 <= 2)
			continue;
		memset(b, 0xee, sizeof(b));
		assert_int_equal(vt_store_get(s, p, b), -EBADMSG);
		for (unsigned int i = 0; i < PAGE; i++)
			bad += b[i] != 0;
	}
	assert_int_equal(bad, 0);	/* the buffer cleared, nothing handed out */
	vt_store_close(s);
}

/*
 * Reopen: a store the two-copy tier wrote (no local copies) opens with a
 * local copy and reads back from the servers; pages put then have both;
 * local copies whose remote entry is gone (the agent killed between the
 * two, or a drop without the tier attached) are dropped at attach.
 */
static void test_local_copy_reopen(void **state)
{
	struct fixture *f = *state;
	unsigned int fds = open_fds();
	struct vt_store *s = open_attached(f, true);
	unsigned int n = 256, two = open_fds() - fds, old = put_all(s, n, 14);
	struct vt_store_tier_stats ts[2];
	char why[300];
	int err;

	vt_store_close(s);
	fds = open_fds();
	s = open_local_copy(f, false);
	/* the local copies' store: 3 fds more (index, blocks, pool: the hand-off budget's charge) */
	assert_int_equal(open_fds() - fds, two + 3);
	assert_int_equal(check_all(s, n, 14, &err), old);
	assert_int_equal(vt_store_stats(s, ts, 2), 2);
	assert_int_equal(ts[0].local_copy_pages, 0);
	/* new pages [n, 2n) with a local copy each */
	for (unsigned int p = n; p < 2 * n; p++) {
		uint8_t b[PAGE];

		content(p, 14, b);
		assert_int_equal(vt_store_put(s, p, 0, b) == 0 || p % 8 == 2, 1);
	}
	assert_int_equal(vt_store_stats(s, ts, 2), 2);
	assert_int_equal(ts[0].local_copy_pages, compressed_of(n));
	vt_store_close(s);
	/* the remote entries of [n, n + 64) dropped with no tier attached */
	assert_int_equal(vt_store_open(f->dir, &f->key, f->spec, 2, false, &s, why, sizeof(why)), 0);
	for (unsigned int p = n; p < n + 64; p++)
		if (p % 8 != 2)
			assert_int_equal(vt_store_drop(s, p), 0);
	vt_store_close(s);
	s = open_local_copy(f, false);
	assert_int_equal(vt_store_stats(s, ts, 2), 2);
	assert_int_equal(ts[0].local_copy_pages, compressed_of(n) - compressed_of(64));
	assert_int_equal(check_all(s, n, 14, &err), old);
	vt_store_close(s);
	/* copies and the local copy must agree */
	{
		struct vt_rc_config c = f->cfg;

		assert_int_equal(vt_store_open(f->dir, &f->key, f->spec, 2, false, &s, why,
					       sizeof(why)), 0);
		c.copies = 1;
		assert_int_equal(vt_store_remote_attach(s, 0, &c, NULL, why, sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, "copies = 1 without a local copy"));
		assert_int_equal(vt_store_remote_attach(s, 0, &f->cfg, &f->spec[1], why,
							sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, "a local copy with copies = 2"));
		vt_store_close(s);
	}
}

/* [remote.NAME] groups: accepted, and refused naming the key and value. */
static void test_config(void **state)
{
	struct fixture *f = *state;
	char pk[2][2 * VT_SEAL_PK_BYTES + 1];
	struct vt_ctier_spec spec;
	struct vt_remote_spec rs;
	g_autofree char *good = NULL;
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "servers = 10.0.0.1:7600/PK0", "servers: 1 given, 2-8 accepted" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.300:7600/PK1", "'10.0.0.300:7600/" },
		{ "servers = 10.0.0.1:0/PK0, 10.0.0.2:7600/PK1", "is not IPV4:PORT/PUBKEY" },
		{ "servers = 10.0.0.1:7600/abcd, 10.0.0.2:7600/PK1", "is not IPV4:PORT/PUBKEY" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\ncopies = 1", "copies: '1' needs "
		  "local_copy = CTIER" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\ncopies = 3", "copies: '3': 2 "
		  "(two servers) or 1 (one server and local_copy) accepted" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\nlocal_copy = near",
		  "local_copy: 'near' only with copies = 1" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\ncopies = 1\nlocal_copy = a/b",
		  "local_copy: 'a/b': the NAME of a [ctier.NAME] accepted" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\ntransport = tcp",
		  "transport: 'tcp': udp, afxdp or auto" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\ntransport = afxdp",
		  "port: required" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\ncodec = lzma",
		  "[remote.far]: [ctier.far] codec: unknown codec 'lzma'" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\npool = zbud", "pool: unknown key" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\ninterface = a/b",
		  "interface: 'a/b'" },
		{ "copies = 2", "servers: missing" },
		/* the AF_XDP end's knobs: bad values, and any of them with transport udp */
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\ntransport = afxdp\nport = 7700\n"
		  "xdp_bind = fast", "[remote.far] xdp_bind: 'fast': auto, copy or zerocopy accepted" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\ntransport = auto\nport = 7700\n"
		  "need_wakeup = 1", "[remote.far] need_wakeup: '1': yes or no accepted" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\ntransport = afxdp\nport = 7700\n"
		  "busy_poll = true", "[remote.far] busy_poll: 'true': yes or no accepted" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\ntransport = afxdp\nport = 7700\n"
		  "xdp_skb = YES", "[remote.far] xdp_skb: 'YES': yes or no accepted" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\ntransport = udp\nbusy_poll = yes",
		  "[remote.far] busy_poll: 'yes': an AF_XDP option, accepted only with transport "
		  "afxdp or auto (transport is udp)" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\nxdp_bind = copy",
		  "[remote.far] xdp_bind: 'copy': an AF_XDP option, accepted only with transport "
		  "afxdp or auto (transport is udp, the default)" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\nneed_wakeup = no\ntransport = udp",
		  "need_wakeup: 'no': an AF_XDP option" },
		{ "servers = 10.0.0.1:7600/PK0, 10.0.0.2:7600/PK1\nxdp-bind = copy",
		  "xdp-bind: unknown key (servers, copies, local_copy, codec, max_stored_pct, "
		  "capacity, price_usd_per_gib, transport, interface, address, port, xdp_prog, "
		  "xdp_bind, need_wakeup, busy_poll, xdp_skb)" },
	};

	(void)f;
	for (unsigned int k = 0; k < 2; k++)
		for (unsigned int i = 0; i < VT_SEAL_PK_BYTES; i++)
			snprintf(pk[k] + 2 * i, 3, "%02x", f->srv[k].key.pk[i]);
	good = g_strdup_printf("[remote.far]\nservers = 10.0.0.1:7600/%s , 10.0.0.2:7601/%s\n"
			       "codec = zstd:5\ncapacity = 1GiB\nprice_usd_per_gib = 0.5\n", pk[0],
			       pk[1]);
	{
		g_autoptr(GKeyFile) kf = g_key_file_new();
		g_autoptr(GError) e = NULL;

		assert_true(g_key_file_load_from_data(kf, good, -1, 0, NULL));
		if (!vt_remote_spec_parse(kf, "remote.far", &spec, &rs, &e))
			fail_msg("refused: %s", e->message);
		assert_string_equal(spec.name, "far");
		assert_int_equal(spec.medium, VT_MEDIUM_REMOTE);
		assert_int_equal(spec.codec, VT_CODEC_ZSTD);
		assert_int_equal(spec.level, 5);
		assert_int_equal(spec.capacity_bytes, 1ull << 30);
		assert_int_equal(rs.rc.nr_servers, 2);
		assert_int_equal(rs.rc.copies, 2);
		assert_int_equal(rs.rc.server[1].port, 7601);
		assert_int_equal(rs.rc.server[0].addr, 0x0a000001);
		assert_memory_equal(rs.rc.server[1].pk, f->srv[1].key.pk, VT_SEAL_PK_BYTES);
		assert_int_equal(rs.rc.transport.mode, VT_RT_UDP);
		assert_int_equal(rs.rc.transport.bind, VT_RT_BIND_AUTO);
		assert_false(rs.rc.transport.busy_poll || rs.rc.transport.no_need_wakeup ||
			     rs.rc.transport.skb_mode);
	}
	{
		/* the AF_XDP end's knobs, as vtier-memd's and vtier-bench's options set them */
		g_autoptr(GKeyFile) kf = g_key_file_new();
		g_autoptr(GError) e = NULL;
		g_autofree char *text = g_strdup_printf(
			"[remote.far]\nservers = 10.0.0.1:7600/%s, 10.0.0.2:7601/%s\n"
			"transport = afxdp\ninterface = vq0\naddress = 10.0.0.9\nport = 7700\n"
			"xdp_bind = copy\nneed_wakeup = no\nbusy_poll = yes\nxdp_skb = yes\n",
			pk[0], pk[1]);
		struct vt_remote_spec copy;

		assert_true(g_key_file_load_from_data(kf, text, -1, 0, NULL));
		if (!vt_remote_spec_parse(kf, "remote.far", &spec, &rs, &e))
			fail_msg("refused: %s", e->message);
		assert_int_equal(rs.rc.transport.mode, VT_RT_AFXDP);
		assert_int_equal(rs.rc.transport.bind, VT_RT_BIND_COPY);
		assert_true(rs.rc.transport.no_need_wakeup && rs.rc.transport.busy_poll &&
			    rs.rc.transport.skb_mode);
		assert_int_equal(rs.rc.transport.port, 7700);
		copy = rs;
		vt_remote_spec_fix(&copy);
		assert_string_equal(copy.rc.transport.ifname, "vq0");
		/* the other values, each one alone */
		g_key_file_set_string(kf, "remote.far", "xdp_bind", "zerocopy");
		g_key_file_set_string(kf, "remote.far", "need_wakeup", "yes");
		g_key_file_set_string(kf, "remote.far", "busy_poll", "no");
		g_key_file_set_string(kf, "remote.far", "xdp_skb", "no");
		g_key_file_set_string(kf, "remote.far", "transport", "auto");
		if (!vt_remote_spec_parse(kf, "remote.far", &spec, &rs, &e))
			fail_msg("refused: %s", e->message);
		assert_int_equal(rs.rc.transport.mode, VT_RT_AUTO);
		assert_int_equal(rs.rc.transport.bind, VT_RT_BIND_ZEROCOPY);
		assert_false(rs.rc.transport.no_need_wakeup || rs.rc.transport.busy_poll ||
			     rs.rc.transport.skb_mode);
	}
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GKeyFile) kf = g_key_file_new();
		g_autoptr(GError) e = NULL;
		g_autofree char *t1 = g_strdup(bad[i].text);
		g_autofree char *t2 = NULL, *text = NULL;
		GString *g = g_string_new(t1);

		g_string_replace(g, "PK0", pk[0], 0);
		g_string_replace(g, "PK1", pk[1], 0);
		t2 = g_string_free(g, FALSE);
		text = g_strdup_printf("[remote.far]\n%s\n", t2);
		assert_true(g_key_file_load_from_data(kf, text, -1, 0, NULL));
		if (vt_remote_spec_parse(kf, "remote.far", &spec, &rs, &e))
			fail_msg("accepted: %s", text);
		if (!strstr(e->message, bad[i].msg))
			fail_msg("'%s': message '%s' lacks '%s'", text, e->message, bad[i].msg);
	}
	{
		/* copies = 1 with a local copy: it names a local compressed tier */
		g_autoptr(GKeyFile) kf = g_key_file_new();
		g_autoptr(GError) e = NULL;
		g_autofree char *text = g_strdup_printf("[remote.far]\nservers = 10.0.0.1:7600/%s, "
							"10.0.0.2:7601/%s\ncopies = 1\n"
							"local_copy = near\n", pk[0], pk[1]);
		struct vt_ctier_spec tiers[3] = { 0 };

		assert_true(g_key_file_load_from_data(kf, text, -1, 0, NULL));
		if (!vt_remote_spec_parse(kf, "remote.far", &spec, &rs, &e))
			fail_msg("refused: %s", e->message);
		assert_int_equal(rs.rc.copies, 1);
		assert_string_equal(rs.local_copy, "near");
		tiers[0] = spec;
		tiers[1] = f->spec[1];
		tiers[2] = f->spec[0];
		g_strlcpy(tiers[2].name, "far2", sizeof(tiers[2].name));
		assert_true(vt_remote_spec_resolve(&rs, "remote.far", tiers, 3, &e));
		assert_string_equal(rs.local.name, "near");
		assert_int_equal(rs.local.medium, VT_MEDIUM_NODE);
		/* a tier that is not there, or a remote one */
		assert_false(vt_remote_spec_resolve(&rs, "remote.far", tiers, 1, &e));
		assert_non_null(strstr(e->message, "[remote.far] local_copy: 'near' is not a local "
				       "compressed tier"));
		g_clear_error(&e);
		g_strlcpy(rs.local_copy, "far2", sizeof(rs.local_copy));
		assert_false(vt_remote_spec_resolve(&rs, "remote.far", tiers, 3, &e));
		assert_non_null(strstr(e->message, "'far2' is not a local compressed tier"));
	}
	{
		g_autoptr(GKeyFile) kf = g_key_file_new();
		g_autoptr(GError) e = NULL;

		assert_true(g_key_file_load_from_data(kf, "[remote.a/b]\nservers=x\n", -1, 0, NULL));
		assert_false(vt_remote_spec_parse(kf, "remote.a/b", &spec, &rs, &e));
		assert_non_null(strstr(e->message, "remote.NAME"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_get_drop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen_reads_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silent_servers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_server_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_attached, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_local_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_local_copy_server_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_local_copy_bad_copies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_local_copy_reopen, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
