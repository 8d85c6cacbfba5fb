/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Memory servers for unit tests, no root needed: real server state
 * (remote_server.c) on a UDP socket of this process on 127.0.0.1, served by
 * a thread; `mute` makes one read and never answer (a dead or partitioned
 * server), server_restart_empty() a restart that kept nothing. Uses
 * cmocka's asserts: include <cmocka.h> first.
 */
#ifndef VTIER_TESTS_REMOTE_SERVERS_H
#define VTIER_TESTS_REMOTE_SERVERS_H

#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "remote_client.h"
#include "remote_server.h"

struct server {
	struct vt_rt *rt;
	struct vt_rs *rs;
	struct vt_seal_server_key key;
	uint16_t port;
	GThread *thread;
	gint stop;		/* 1: the thread ends */
	gint mute;		/* 1: datagrams are read and never answered (a dead server) */
	gint delay_ms;		/* replies sent this late (a slow path) */
	const struct vt_rt_dgram *req;
	struct vt_rt_dgram out[VT_RP_MAX_FRAGS * 4];
	uint8_t outbuf[VT_RP_MAX_FRAGS * 4][VT_RP_DGRAM_MAX];
	unsigned int nout;
};

static inline void emit(void *arg, const struct vt_rs_peer *peer, const uint8_t *d, size_t len)
{
	struct server *s = arg;

	(void)peer;
	if (s->nout == G_N_ELEMENTS(s->out))
		return;
	memcpy(s->outbuf[s->nout], d, len);
	s->out[s->nout] = (struct vt_rt_dgram){ .peer = s->req->peer, .buf = s->outbuf[s->nout],
						.len = len };
	s->nout++;
}

static inline gpointer serve(gpointer data)
{
	struct server *s = data;
	uint8_t buf[VT_RP_DGRAM_MAX];

	while (!g_atomic_int_get(&s->stop)) {
		struct pollfd pfd = { .fd = vt_rt_fd(s->rt), .events = POLLIN };
		struct vt_rt_dgram in = { .buf = buf, .cap = sizeof(buf) };
		struct vt_rs_peer p = { 0 };

		if (poll(&pfd, 1, 20) <= 0 || vt_rt_recv(s->rt, &in, 1) != 1)
			continue;
		if (g_atomic_int_get(&s->mute))
			continue;
		s->req = &in;
		s->nout = 0;
		vt_rs_input(s->rs, &p, in.buf, in.len, (uint64_t)g_get_monotonic_time() * 1000,
			    emit, s);
		if (s->nout && g_atomic_int_get(&s->delay_ms))
			g_usleep((gulong)g_atomic_int_get(&s->delay_ms) * 1000);
		if (s->nout)
			vt_rt_send(s->rt, s->out, s->nout);
	}
	return NULL;
}

static inline void server_start(struct server *s, unsigned int k)
{
	g_autofree char *dir = g_dir_make_tmp("remote-client-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "key", NULL);
	struct vt_rs_config rc = { .server_cap_bytes = 64ull << 20 };
	char err[256];

	assert_int_equal(vt_seal_server_key_create(path, &s->key, err, sizeof(err)), 0);
	unlink(path);
	rmdir(dir);
	rc.key = s->key;
	s->rs = vt_rs_new(&rc, err, sizeof(err));
	assert_non_null(s->rs);
	/* a port of our own: from the pid, the next one when it is taken */
	for (unsigned int t = 0; t < 200; t++) {
		struct vt_rt_config tc = { .mode = VT_RT_UDP, .addr = 0x7f000001,
					   .port = (uint16_t)(20000 + (getpid() * 7 + k * 211 + t) %
							      30000) };

		if (vt_rt_open(&tc, &s->rt, err, sizeof(err)) == 0) {
			s->port = tc.port;
			break;
		}
	}
	assert_non_null(s->rt);
	s->thread = g_thread_new("server", serve, s);
}

static inline void server_stop(struct server *s)
{
	g_atomic_int_set(&s->stop, 1);
	g_thread_join(s->thread);
	vt_rt_close(s->rt);
	vt_rs_free(s->rs);
}

/* The server restarted: same key and port, nothing kept. */
static inline void server_restart_empty(struct server *s)
{
	struct vt_rs_config rc = { .server_cap_bytes = 64ull << 20, .key = s->key };
	char err[256];

	g_atomic_int_set(&s->stop, 1);
	g_thread_join(s->thread);
	vt_rs_free(s->rs);
	s->rs = vt_rs_new(&rc, err, sizeof(err));
	assert_non_null(s->rs);
	g_atomic_int_set(&s->stop, 0);
	s->thread = g_thread_new("server", serve, s);
}

/* A client configuration for @n servers started with server_start() (copies 2). */
static inline void servers_config(struct server *srv, unsigned int n, struct vt_rc_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (unsigned int k = 0; k < n; k++) {
		cfg->server[k] = (struct vt_rc_server){ .addr = 0x7f000001, .port = srv[k].port };
		memcpy(cfg->server[k].pk, srv[k].key.pk, VT_SEAL_PK_BYTES);
	}
	cfg->nr_servers = n;
	cfg->copies = 2;
	cfg->transport.mode = VT_RT_UDP;
	/* a first try of 20 ms: a reply late under load (ASan, a busy machine) is not a timeout */
	cfg->timeout_us = 20000;
}

#endif
