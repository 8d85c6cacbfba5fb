// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The remote tier's client (remote_client.h) against real memory-server
 * state (remote_server.c) on UDP sockets of this process, no root needed:
 * three servers on 127.0.0.1, each a thread running vt_rs over the UDP
 * transport. A bad configuration is refused naming the field; pages are
 * stored on two servers and read back byte for byte; a server that stops
 * answering is marked down after its requests time out (bounded), reads go
 * to the other copy, repair re-creates the copies, and with only one live
 * server the client takes no new page (-EAGAIN); a page served for another
 * id or version never opens. The batched GET (vt_rc_get_batch) reads every
 * page with far fewer requests than pages, asking again for what one reply
 * could not hold, says which pages are not stored, and reads a page from its
 * other copy when its first holder does not answer.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "remote_servers.h"

#define NSRV 3
#define PAGE 4096

struct fixture {
	struct server srv[NSRV];
	struct vt_rc_config cfg;
};

static int setup(void **state)
{
	struct fixture *f = g_new0(struct fixture, 1);

	for (unsigned int k = 0; k < NSRV; k++) {
		server_start(&f->srv[k], k);
		f->cfg.server[k] = (struct vt_rc_server){ .addr = 0x7f000001,
							  .port = f->srv[k].port };
		memcpy(f->cfg.server[k].pk, f->srv[k].key.pk, VT_SEAL_PK_BYTES);
	}
	f->cfg.nr_servers = NSRV;
	f->cfg.copies = 2;
	f->cfg.transport.mode = VT_RT_UDP;
	/* a first try of 20 ms: a reply late under load (ASan, a busy machine) is not a timeout */
	f->cfg.timeout_us = 20000;
	for (unsigned int i = 0; i < VT_SEAL_KEY_BYTES; i++)
		f->cfg.vm_key[i] = (uint8_t)(i * 13 + 1);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	for (unsigned int k = 0; k < NSRV; k++)
		server_stop(&f->srv[k]);
	g_free(f);
	return 0;
}

/* Page @id's bytes at @version: never all zeros, shorter for some ids. */
static size_t content(uint64_t id, uint32_t version, uint8_t *p)
{
	size_t len = id % 5 == 0 ? 1000 : PAGE;

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((id * 131 + i * 7 + version * 29) | 1);
	return len;
}

static int put_range(struct vt_rc *rc, uint64_t first, unsigned int n, uint32_t version)
{
	struct vt_rc_page pg[16];
	uint8_t buf[16][PAGE];
	int st[16], ret = 0;

	for (unsigned int i = 0; i < n; i += 16) {
		unsigned int k = MIN(16u, n - i);

		for (unsigned int j = 0; j < k; j++) {
			pg[j].id = first + i + j;
			pg[j].len = content(pg[j].id, version, buf[j]);
			pg[j].data = buf[j];
		}
		ret = vt_rc_put(rc, pg, k, st) ?: ret;
	}
	return ret;
}

/* Reads [first, first + n) back: how many came back exactly as stored. */
static unsigned int read_range(struct vt_rc *rc, uint64_t first, unsigned int n,
			       uint32_t version)
{
	unsigned int good = 0;

	for (unsigned int i = 0; i < n; i++) {
		uint8_t want[PAGE], got[PAGE];
		size_t wlen = content(first + i, version, want), glen = 0;

		if (vt_rc_get(rc, first + i, got, sizeof(got), &glen) == 0 && glen == wlen &&
		    !memcmp(got, want, wlen))
			good++;
	}
	return good;
}

static void test_config_refused(void **state)
{
	struct fixture *f = *state;
	struct vt_rc_config c;
	char err[256];

	c = f->cfg;
	c.nr_servers = 0;
	assert_null(vt_rc_new(&c, err, sizeof(err)));
	assert_non_null(strstr(err, "servers: 0 given, 1-8 accepted"));
	c = f->cfg;
	c.copies = 3;
	assert_null(vt_rc_new(&c, err, sizeof(err)));
	assert_non_null(strstr(err, "copies = 3"));
	c = f->cfg;
	c.nr_servers = 1;
	assert_null(vt_rc_new(&c, err, sizeof(err)));	/* copies 2 on one server */
	assert_non_null(strstr(err, "at most the 1 server(s) given"));
	c = f->cfg;
	c.server[1] = c.server[0];
	assert_null(vt_rc_new(&c, err, sizeof(err)));
	assert_non_null(strstr(err, "server 1 is server 0 again"));
	c = f->cfg;
	c.frag_max = 100;
	assert_null(vt_rc_new(&c, err, sizeof(err)));
	assert_non_null(strstr(err, "frag_max = 100"));
}

static void test_two_copies_and_a_dead_server(void **state)
{
	struct fixture *f = *state;
	struct vt_rc_stats st;
	struct vt_rc_server_stats s0;
	char err[256];
	struct vt_rc *rc = vt_rc_new(&f->cfg, err, sizeof(err));
	gint64 t0;

	assert_non_null(rc);
	assert_int_equal(vt_rc_connect(rc), NSRV);
	assert_int_equal(put_range(rc, 0, 96, 1), 0);
	assert_int_equal(read_range(rc, 0, 96, 1), 96);
	vt_rc_get_stats(rc, &st);
	assert_int_equal(st.pages, 96);
	/* server 0 stops answering: reads go to the other copy, each call bounded */
	g_atomic_int_set(&f->srv[0].mute, 1);
	t0 = g_get_monotonic_time();
	assert_int_equal(read_range(rc, 0, 96, 1), 96);
	/* 3 requests time out (6 tries of 20 ms each) before it is down: well under 5 s */
	assert_true(g_get_monotonic_time() - t0 < 5 * G_USEC_PER_SEC);
	vt_rc_server_stats(rc, 0, &s0);
	assert_int_equal(s0.state, VT_RC_DOWN);
	assert_int_equal(s0.lost, 1);
	vt_rc_get_stats(rc, &st);
	assert_true(st.get_fallbacks > 0);
	/* repair: every page has two live copies again */
	for (unsigned int i = 0; i < 10 && (vt_rc_repair(rc, 1000), vt_rc_get_stats(rc, &st),
					    st.under_copies); i++)
		;
	assert_int_equal(st.under_copies, 0);
	assert_true(st.repaired > 0);
	/* server 2 goes too: one live server, no new page is taken */
	g_atomic_int_set(&f->srv[2].mute, 1);
	assert_int_equal(read_range(rc, 0, 96, 1), 96);
	{
		uint8_t b[PAGE];
		struct vt_rc_page pg = { .id = 1000, .data = b, .len = content(1000, 1, b) };
		int s;

		/* up to 3 timeouts mark server 2 down, then: -EAGAIN */
		for (unsigned int i = 0; i < 4 && vt_rc_put(rc, &pg, 1, &s) != -EAGAIN; i++)
			;
		assert_int_equal(vt_rc_put(rc, &pg, 1, &s), -EAGAIN);
		assert_int_equal(s, -EAGAIN);
		assert_int_equal(vt_rc_get(rc, 1000, b, sizeof(b), &(size_t){ 0 }), -ENOENT);
	}
	/* both back: probed, what they kept is a copy again, in the pool again */
	g_atomic_int_set(&f->srv[0].mute, 0);
	g_atomic_int_set(&f->srv[2].mute, 0);
	g_usleep(VT_RC_PROBE_NS / 1000 + 50000);
	vt_rc_repair(rc, 1000);
	vt_rc_get_stats(rc, &st);
	assert_int_equal(st.servers_up, NSRV);
	assert_int_equal(st.under_copies, 0);
	assert_int_equal(put_range(rc, 200, 32, 1), 0);
	assert_int_equal(read_range(rc, 200, 32, 1), 32);
	/* a page stored again is read at its new version only */
	assert_int_equal(put_range(rc, 0, 16, 2), 0);
	assert_int_equal(read_range(rc, 0, 16, 2), 16);
	assert_int_equal(read_range(rc, 0, 16, 1), 0);
	/* every copy the client counts is there: no read meets a page a server dropped */
	assert_int_equal(read_range(rc, 16, 80, 1), 80);
	vt_rc_get_stats(rc, &st);
	assert_int_equal(st.damaged, 0);
	vt_rc_free(rc);
}

static void test_free_pages(void **state)
{
	struct fixture *f = *state;
	char err[256];
	struct vt_rc *rc = vt_rc_new(&f->cfg, err, sizeof(err));
	struct vt_rs_stats before, after;
	uint64_t ids[8];
	uint8_t b[PAGE];

	assert_non_null(rc);
	assert_int_equal(vt_rc_connect(rc), NSRV);
	assert_int_equal(put_range(rc, 500, 8, 1), 0);
	vt_rs_get_stats(f->srv[1].rs, &before);
	for (unsigned int i = 0; i < 8; i++)
		ids[i] = 500 + i;
	assert_int_equal(vt_rc_free_pages(rc, ids, 8), 0);
	assert_int_equal(vt_rc_get(rc, 500, b, sizeof(b), &(size_t){ 0 }), -ENOENT);
	g_usleep(20000);	/* the server thread applied it before it replied; settle reads */
	vt_rs_get_stats(f->srv[1].rs, &after);
	assert_true(after.pages < before.pages || before.pages == 0);
	vt_rc_free(rc);
}

/* Requests the client sent to all servers. */
static uint64_t requests(struct vt_rc *rc)
{
	uint64_t n = 0;

	for (unsigned int k = 0; k < NSRV; k++) {
		struct vt_rc_server_stats st;

		vt_rc_server_stats(rc, k, &st);
		n += st.requests;
	}
	return n;
}

/* vt_rc_get_batch of @ids (version 1); each page read compared; the call's value. */
static int get_batch_checked(struct vt_rc *rc, const uint64_t *ids, unsigned int n, int *st)
{
	static uint8_t buf[VT_RP_BATCH_MAX][PAGE];
	void *bufs[VT_RP_BATCH_MAX];
	size_t lens[VT_RP_BATCH_MAX];
	int r;

	for (unsigned int i = 0; i < n; i++) {
		bufs[i] = buf[i];
		memset(buf[i], 0, PAGE);
	}
	r = vt_rc_get_batch(rc, ids, n, bufs, PAGE, lens, st);
	for (unsigned int i = 0; i < n; i++) {
		uint8_t want[PAGE];
		size_t wl;

		if (st[i])
			continue;
		wl = content(ids[i], 1, want);
		assert_int_equal(lens[i], wl);
		assert_memory_equal(buf[i], want, wl);
	}
	return r;
}

/*
 * 48 pages in one call: a reply holds 8 fragments of 1400 bytes (two or three
 * 4 KiB pages), so each server is asked again from the first page it left out;
 * far fewer requests than pages, none read alone.
 */
static void test_batch_all(void **state)
{
	struct fixture *f = *state;
	char err[256];
	struct vt_rc *rc = vt_rc_new(&f->cfg, err, sizeof(err));
	struct vt_rc_stats st;
	uint64_t ids[48], before;
	int status[48];

	assert_non_null(rc);
	assert_int_equal(vt_rc_connect(rc), NSRV);
	assert_int_equal(put_range(rc, 1000, 48, 1), 0);
	for (unsigned int i = 0; i < 48; i++)
		ids[i] = 1000 + (i * 7) % 48;	/* not in the order they were stored */
	before = requests(rc);
	assert_int_equal(get_batch_checked(rc, ids, 48, status), 48);
	for (unsigned int i = 0; i < 48; i++)
		assert_int_equal(status[i], 0);
	/* at least two pages per reply: 24 requests at most (one read each: 48) */
	assert_in_range(requests(rc) - before, NSRV, 24);
	vt_rc_get_stats(rc, &st);
	assert_int_equal(st.gets, 48);
	assert_int_equal(st.get_fallbacks, 0);
	assert_int_equal(st.damaged, 0);
	vt_rc_free(rc);
}

/* A page never stored is -ENOENT (the others are read); 0 or over 64 pages: -EINVAL. */
static void test_batch_unknown_and_bounds(void **state)
{
	struct fixture *f = *state;
	char err[256];
	struct vt_rc *rc = vt_rc_new(&f->cfg, err, sizeof(err));
	uint64_t ids[VT_RP_BATCH_MAX + 1] = { 5, 6, 99, 7 };
	int st[VT_RP_BATCH_MAX + 1];
	uint8_t one[PAGE];
	void *bufs[VT_RP_BATCH_MAX + 1];
	size_t lens[VT_RP_BATCH_MAX + 1];

	assert_non_null(rc);
	assert_int_equal(vt_rc_connect(rc), NSRV);
	assert_int_equal(put_range(rc, 5, 3, 1), 0);
	assert_int_equal(get_batch_checked(rc, ids, 4, st), 3);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	assert_int_equal(st[2], -ENOENT);
	assert_int_equal(st[3], 0);
	for (unsigned int i = 0; i <= VT_RP_BATCH_MAX; i++) {
		ids[i] = 6;
		bufs[i] = one;
	}
	assert_int_equal(vt_rc_get_batch(rc, ids, 0, bufs, PAGE, lens, st), -EINVAL);
	assert_int_equal(vt_rc_get_batch(rc, ids, VT_RP_BATCH_MAX + 1, bufs, PAGE, lens, st),
			 -EINVAL);
	/* a buffer too small for the page: not read, never overrun */
	assert_int_equal(vt_rc_get_batch(rc, ids, 1, bufs, 100, lens, st), 0);
	assert_int_equal(st[0], -EBADMSG);
	vt_rc_free(rc);
}

/*
 * Every server unreachable for a while (a partition): a read says "again
 * later" (-EAGAIN, bounded), never "lost"; when they answer again, every page
 * comes back from the copies they kept. Then one comes back after a restart,
 * empty: its copies are forgotten and re-created elsewhere, nothing is lost.
 */
static void test_partition_and_empty_restart(void **state)
{
	struct fixture *f = *state;
	struct vt_rc_server_stats s0;
	struct vt_rc_stats st;
	char err[256];
	struct vt_rc *rc = vt_rc_new(&f->cfg, err, sizeof(err));
	uint8_t b[PAGE];
	gint64 t0;

	assert_non_null(rc);
	assert_int_equal(vt_rc_connect(rc), NSRV);
	assert_int_equal(put_range(rc, 0, 64, 1), 0);
	for (unsigned int k = 0; k < NSRV; k++)
		g_atomic_int_set(&f->srv[k].mute, 1);
	t0 = g_get_monotonic_time();
	for (unsigned int i = 0; i < 8; i++)
		assert_int_equal(vt_rc_get(rc, i, b, sizeof(b), &(size_t){ 0 }), -EAGAIN);
	assert_true(g_get_monotonic_time() - t0 < 10 * G_USEC_PER_SEC);
	vt_rc_get_stats(rc, &st);
	assert_int_equal(st.servers_up, 0);
	assert_int_equal(st.pages, 64);
	for (unsigned int k = 0; k < NSRV; k++)
		g_atomic_int_set(&f->srv[k].mute, 0);
	g_usleep(VT_RC_PROBE_NS / 1000 + 50000);
	vt_rc_repair(rc, 1000);
	vt_rc_get_stats(rc, &st);
	assert_int_equal(st.servers_up, NSRV);
	assert_int_equal(read_range(rc, 0, 64, 1), 64);
	assert_int_equal(st.lost_pages, 0);

	/* server 0 goes down, restarts empty, answers again */
	g_atomic_int_set(&f->srv[0].mute, 1);
	assert_int_equal(read_range(rc, 0, 64, 1), 64);
	vt_rc_server_stats(rc, 0, &s0);
	assert_int_equal(s0.state, VT_RC_DOWN);
	server_restart_empty(&f->srv[0]);
	g_atomic_int_set(&f->srv[0].mute, 0);
	g_usleep(VT_RC_PROBE_NS / 1000 + 50000);
	for (unsigned int i = 0; i < 10 && (vt_rc_repair(rc, 1000), vt_rc_get_stats(rc, &st),
					    st.under_copies || st.servers_up < NSRV); i++)
		g_usleep(VT_RC_PROBE_NS / 1000);
	vt_rc_server_stats(rc, 0, &s0);
	assert_int_equal(s0.state, VT_RC_UP);
	assert_int_equal(s0.emptied, 1);
	assert_int_equal(st.under_copies, 0);
	assert_int_equal(st.lost_pages, 0);
	assert_int_equal(read_range(rc, 0, 64, 1), 64);
	/* two copies a page, none counted twice: server 0's old ones forgotten */
	{
		uint64_t copies = 0;

		for (unsigned int k = 0; k < NSRV; k++) {
			vt_rc_server_stats(rc, k, &s0);
			copies += s0.pages;
		}
		assert_int_equal(copies, 2 * 64);
	}
	vt_rc_free(rc);
}

/*
 * Servers whose replies take 25 ms (an emulated host), with a first try of
 * 4 ms: later tries wait long enough to be answered, and the round trip
 * learnt makes the next requests' first try long enough (few retries).
 */
static void test_slow_path(void **state)
{
	struct fixture *f = *state;
	struct vt_rc_config c = f->cfg;
	struct vt_rc_server_stats s0, s1;
	char err[256];
	struct vt_rc *rc;

	c.timeout_us = 4000;
	rc = vt_rc_new(&c, err, sizeof(err));
	assert_non_null(rc);
	assert_int_equal(vt_rc_connect(rc), NSRV);
	for (unsigned int k = 0; k < NSRV; k++)
		g_atomic_int_set(&f->srv[k].delay_ms, 25);
	assert_int_equal(put_range(rc, 0, 32, 1), 0);
	assert_int_equal(read_range(rc, 0, 32, 1), 32);
	vt_rc_server_stats(rc, 0, &s0);
	vt_rc_server_stats(rc, 1, &s1);
	assert_int_equal(s0.state, VT_RC_UP);
	assert_int_equal(s0.lost, 0);
	/* the first request's tries of 4, 8 and 16 ms; then the learnt round trip */
	assert_true(s0.retries + s1.retries <= 12);
	vt_rc_free(rc);
}

/* Pages known from the store's index after a restart: read back by a new client. */
static void test_adopt(void **state)
{
	struct fixture *f = *state;
	char err[256];
	struct vt_rc *rc = vt_rc_new(&f->cfg, err, sizeof(err)), *rc2;
	uint32_t v[32];
	uint8_t h[32];

	assert_non_null(rc);
	assert_int_equal(vt_rc_connect(rc), NSRV);
	assert_int_equal(put_range(rc, 100, 32, 1), 0);
	assert_int_equal(put_range(rc, 100, 8, 2), 0);
	for (unsigned int i = 0; i < 32; i++)
		assert_int_equal(vt_rc_page_state(rc, 100 + i, &v[i], &h[i]), 0);
	assert_int_equal(vt_rc_page_state(rc, 99, &v[0], &h[0]), -ENOENT);
	vt_rc_free(rc);
	rc2 = vt_rc_new(&f->cfg, err, sizeof(err));
	assert_non_null(rc2);
	assert_int_equal(vt_rc_connect(rc2), NSRV);
	for (unsigned int i = 0; i < 32; i++)
		assert_int_equal(vt_rc_adopt(rc2, 100 + i, v[i], h[i]), 0);
	assert_int_equal(vt_rc_adopt(rc2, 100, v[0], h[0]), -EEXIST);
	assert_int_equal(vt_rc_adopt(rc2, 1, 0, 1), -EINVAL);
	assert_int_equal(vt_rc_adopt(rc2, 1, 1, 0), -EINVAL);
	assert_int_equal(vt_rc_adopt(rc2, 1, 1, 1u << NSRV), -EINVAL);
	assert_int_equal(read_range(rc2, 100, 8, 2), 8);
	assert_int_equal(read_range(rc2, 108, 24, 1), 24);
	/* a version the page does not have now never opens */
	assert_int_equal(read_range(rc2, 100, 8, 1), 0);
	vt_rc_free(rc2);
}

/* The first holder of some pages stops answering: those come from their other copy. */
static void test_batch_other_copy(void **state)
{
	struct fixture *f = *state;
	char err[256];
	struct vt_rc *rc = vt_rc_new(&f->cfg, err, sizeof(err));
	struct vt_rc_stats st;
	uint64_t ids[24];
	int status[24];

	assert_non_null(rc);
	assert_int_equal(vt_rc_connect(rc), NSRV);
	assert_int_equal(put_range(rc, 0, 24, 1), 0);
	for (unsigned int i = 0; i < 24; i++)
		ids[i] = i;
	g_atomic_int_set(&f->srv[0].mute, 1);
	assert_int_equal(get_batch_checked(rc, ids, 24, status), 24);
	for (unsigned int i = 0; i < 24; i++)
		assert_int_equal(status[i], 0);
	vt_rc_get_stats(rc, &st);
	assert_int_equal(st.gets, 24);
	assert_true(st.get_fallbacks >= 1);	/* ids 0, 3, 6...: server 0 holds them first */
	vt_rc_free(rc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_config_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_copies_and_a_dead_server, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_unknown_and_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_other_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partition_and_empty_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_adopt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_path, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
