// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Hand-offs to vtierd's daemon, with a real client: this process plays QEMU
 * (a memfd mapped shared, a userfaultfd registered on it, the HELLO sent
 * with both fds over the agent's socket) while the daemon runs on the test's
 * main context. The identity rules: the kernel's word for the pid, one live
 * holder per VM backend, a RECONNECT gets its own store or nothing, and the
 * store's pages survive the agent.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <linux/userfaultfd.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend.h"
#include "handoff_peer.h"
#include "handoff_proto.h"
#include "json_pin.h"
#include "map_memfd.h"
#include "daemon.h"
#include "engine.h"
#include "fake_qemu.h"
#include "migration.h"
#include "proc_self.h"
#include "profile_format.h"
#include "tier_model.h"
#include "vm.h"
#include "vm_json.h"

#define PAGE 4096ul
#define NPAGES 256ul

struct fixture {
	char *dir;
	char *agent;
	struct vt_daemon *d;
	struct fake_qemu_ram q;
};

static const uint8_t uuid[16] = { 0x5a, 0x1e, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14 };

/*
 * Send a HELLO as QEMU does, with @profile_len bytes of @profile after the
 * range (a destination's), and with a zero map (flag ZERO_MAP) and a send
 * map after it (flag SEND_MAP) where their fds are not -1.
 */
static void hello_send_ram(int s, const struct fake_qemu_ram *q, const uint8_t *vm_uuid,
			   uint32_t pid, uint32_t flags, uint64_t generation, const char *backend_id,
			   const void *profile, size_t profile_len, int zero_map_fd, int send_map_fd)
{
	struct {
		struct vtier_handoff_hdr hdr;
		struct vtier_handoff_hello h;
		struct vtier_handoff_range r;
	} m = {
		.hdr = { VTIER_HANDOFF_MAGIC, VTIER_HANDOFF_VERSION, VTIER_HANDOFF_HELLO,
			 (uint32_t)(sizeof(struct vtier_handoff_hello) +
				    sizeof(struct vtier_handoff_range) + profile_len), 7 },
		.h = fake_qemu_hello(q, backend_id, generation),
		.r = { .gpa = 1ull << 32, .offset = 0, .size = NPAGES * PAGE },
	};
	int fds[4] = { q->memfd, q->uffd, zero_map_fd, send_map_fd };
	/* a PREPARE hands the memfd over alone; a zero map comes third, a send map fourth */
	unsigned int nfds = flags & VTIER_HELLO_F_PREPARE ? 1 : send_map_fd >= 0 ? 4 :
			    zero_map_fd >= 0 ? 3 : 2;
	char cbuf[CMSG_SPACE(sizeof(fds))] = { 0 };
	struct iovec iov[2] = { { &m, sizeof(m) }, { (void *)profile, profile_len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = profile_len ? 2 : 1,
			     .msg_control = cbuf, .msg_controllen = CMSG_SPACE(nfds * sizeof(int)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	m.h.flags |= (vm_uuid ? VTIER_HELLO_F_UUID : 0) | flags |
		     (zero_map_fd >= 0 ? VTIER_HELLO_F_ZERO_MAP : 0) |
		     (send_map_fd >= 0 ? VTIER_HELLO_F_SEND_MAP : 0);
	if (flags & VTIER_HELLO_F_PREPARE) {
		m.h.flags &= ~VTIER_HELLO_F_WP;
		m.h.hva = m.h.uffd_features = m.h.uffd_ioctls = 0;
	}
	m.h.n_ranges = 1;
	m.h.qemu_pid = pid;
	m.h.profile_size = (uint32_t)profile_len;
	if (vm_uuid)
		memcpy(m.h.vm_uuid, vm_uuid, 16);
	g_strlcpy(m.h.vm_name, "vm0", sizeof(m.h.vm_name));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	assert_int_equal(sendmsg(s, &mh, 0), (ssize_t)(sizeof(m) + profile_len));
}

static void hello_send_on(int s, struct fixture *f, uint32_t pid, uint32_t flags,
			  uint64_t generation, const char *backend_id, const void *profile,
			  size_t profile_len)
{
	hello_send_ram(s, &f->q, uuid, pid, flags, generation, backend_id, profile, profile_len,
		       -1, -1);
}

static int agent_connect(struct fixture *f)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	g_strlcpy(sa.sun_path, f->agent, sizeof(sa.sun_path));
	assert_int_equal(connect(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return s;
}

static int hello_send_profile(struct fixture *f, uint32_t pid, uint32_t flags,
			      uint64_t generation, const char *backend_id, const void *profile,
			      size_t profile_len)
{
	int s = agent_connect(f);

	hello_send_on(s, f, pid, flags, generation, backend_id, profile, profile_len);
	return s;
}

static int hello_send(struct fixture *f, uint32_t pid, uint32_t flags, uint64_t generation,
		      const char *backend_id)
{
	return hello_send_profile(f, pid, flags, generation, backend_id, NULL, 0);
}

/* Run the daemon's loop until the HELLO_REPLY on @s; return its status. */
static int hello_wait(int s, int *sock_out, char *msg)
{
	uint8_t reply[16 + 136];
	size_t got = 0;
	gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

	while (got < sizeof(reply) && g_get_monotonic_time() < deadline) {
		ssize_t n = recv(s, reply + got, sizeof(reply) - got, 0);

		if (n > 0)
			got += (size_t)n;
		else if (n == 0)
			break;

		else
			g_main_context_iteration(NULL, FALSE);
	}
	if (got != sizeof(reply)) {
		/* a protocol error: the agent closes without a HELLO_REPLY */
		close(s);
		g_strlcpy(msg, "(closed without a reply)", 128);
		return -ECONNRESET;
	}
	g_strlcpy(msg, (const char *)reply + 24, 128);
	if (sock_out)
		*sock_out = s;
	else
		close(s);
	return *(int32_t *)(reply + 16);
}

/* Send a HELLO; run the daemon's loop until the reply; return its status. */
static int hello(struct fixture *f, uint32_t pid, uint32_t flags, uint64_t generation,
		 const char *backend_id, int *sock_out, char *msg)
{
	return hello_wait(hello_send(f, pid, flags, generation, backend_id), sock_out, msg);
}

static void spin(unsigned int ms)
{
	gint64 until = g_get_monotonic_time() + ms * 1000;

	while (g_get_monotonic_time() < until)
		g_main_context_iteration(NULL, FALSE);
}

/* Run the main loop until @cond holds or @ms pass; the value of @cond. */
#define SPIN_UNTIL(cond, ms)                                                        \
	({                                                                         \
		gint64 until_ = g_get_monotonic_time() + (gint64)(ms) * 1000;      \
		while (!(cond) && g_get_monotonic_time() < until_)                 \
			g_main_context_iteration(NULL, FALSE);                     \
		(cond);                                                            \
	})

static struct vt_daemon *daemon_new(const char *dir)
{
	struct vt_tiers tiers = { .nr = 0 };
	struct vt_daemon *d = vt_daemon_new(&tiers, NULL);

	d->host.ctier[0] = (struct vt_ctier_spec){ .name = "lz4", .codec = VT_CODEC_LZ4,
					      .pool = VT_POOL_ZSMALLOC, .medium = VT_MEDIUM_NODE,
					      .node = 0, .max_stored_pct = 75 };
	d->host.nr_ctier = 1;
	d->defaults.mode = VT_MODE_OFF;	/* no profiler on the test process */
	g_snprintf(d->host.store_root, sizeof(d->host.store_root), "%s/store", dir);
	return d;
}

static int setup(void **state)
{
	struct fixture *f = g_new0(struct fixture, 1);

	if (fake_qemu_ram_open(&f->q, NPAGES * PAGE, false)) {
		fprintf(stderr, "# skip: userfaultfd with shmem missing + write-protect\n");
		g_free(f);
		skip();
	}
	for (uint64_t p = 0; p < NPAGES; p++)
		memset(f->q.map + p * PAGE, (int)(p % 7), PAGE / 2);	/* compresses */
	assert_int_equal(fake_qemu_ram_register(&f->q), 0);
	f->dir = g_dir_make_tmp("vtier-backend-XXXXXX", NULL);
	f->agent = g_build_filename(f->dir, "agent.sock", NULL);
	f->d = daemon_new(f->dir);
	assert_true(vt_daemon_listen_handoff(f->d, f->agent, NULL));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", f->dir);

	vt_daemon_free(f->d);
	spin(50);
	fake_qemu_ram_close(&f->q);
	assert_int_equal(system(cmd), 0);
	g_free(f->agent);
	g_free(f->dir);
	g_free(f);
	return 0;
}

static struct vt_vm *the_vm(struct vt_daemon *d)
{
	return g_hash_table_lookup(d->vms, "vm0");
}

/* The kernel's word, not the HELLO's: a pid that is not the peer's is refused. */
static void test_pid_is_the_kernels(void **state)
{
	struct fixture *f = *state;
	char msg[128];

	assert_true(hello(f, (uint32_t)getppid(), 0, 1, "mem0", NULL, msg) < 0);
	assert_non_null(strstr(msg, "peer is pid"));
	assert_int_equal(g_hash_table_size(f->d->vms), 0);
	/* a name that is not a safe file name never reaches the daemon */
	assert_int_equal(hello(f, (uint32_t)getpid(), 0, 1, "../../x", NULL, msg), -ECONNRESET);
	assert_int_equal(g_hash_table_size(f->d->vms), 0);
}

/* One live holder per VM backend; the VM is attached by the hand-off alone. */
static void test_no_takeover(void **state)
{
	struct fixture *f = *state;
	char msg[128];
	int s1;

	assert_int_equal(hello(f, (uint32_t)getpid(), 0, 1, "mem0", &s1, msg), 0);
	assert_non_null(the_vm(f->d));
	assert_true(the_vm(f->d)->by_handoff);
	assert_true(hello(f, (uint32_t)getpid(), 0, 2, "mem0", NULL, msg) < 0);
	assert_non_null(strstr(msg, "live"));
	assert_int_equal(g_hash_table_size(f->d->ho.backends), 1);
	close(s1);
	spin(100);
	/* the connection is gone; this process lives: its store stays for a reconnect */
	assert_int_equal(g_hash_table_size(f->d->ho.backends), 0);
	assert_null(the_vm(f->d));
}

/* Every page of the fixture's RAM as setup() wrote it (read through the mapping: faults served). */
static void check_pages(struct fixture *f)
{
	uint8_t want[PAGE];

	for (uint64_t p = 0; p < NPAGES; p++) {
		memset(want, 0, sizeof(want));
		memset(want, (int)(p % 7), PAGE / 2);
		assert_memory_equal(f->q.map + p * PAGE, want, PAGE);
	}
}

/* Pages evicted by one agent come back through the next one. */
/*
 * The agent dies with pages evicted; the next one gets them back from the
 * store. @flags: more HELLO flags on both hand-offs (INCOMING: a QEMU that
 * arrived by migration keeps saying so when it reconnects).
 */
static void reconnect_gets_its_pages(void **state, uint32_t flags)
{
	struct fixture *f = *state;
	struct vt_backend *b;
	char msg[128];
	int s1, s2;
	g_autoptr(GError) e = NULL;
	g_autofree char *req = NULL;
	g_autofree char *reply = NULL;

	assert_int_equal(hello(f, (uint32_t)getpid(), flags, 1, "mem0", &s1, msg), 0);
	b = g_hash_table_lookup(f->d->ho.backends, ((struct vt_backend *)
		g_ptr_array_index(the_vm(f->d)->backends, 0))->key);
	assert_non_null(b);
	req = g_strdup("{\"v\":1,\"cmd\":\"demote\",\"vm\":\"vm0\",\"set\":[\"tier=lz4\"]}\n");
	reply = vt_daemon_handle(f->d, req, strlen(req));
	assert_non_null(strstr(reply, "\"queued_bytes\":1048576"));
	for (int i = 0; i < 2000 && vt_ctier_mover_backlog(b->mover); i++)
		spin(1);
	spin(50);
	/* the agent dies (the daemon is freed without a word to QEMU) */
	close(s1);
	vt_daemon_free(f->d);
	/* nothing in the memfd now: the store holds the pages */
	assert_int_equal(lseek(f->q.memfd, 0, SEEK_DATA) < 0 && errno == ENXIO, true);
	f->d = daemon_new(f->dir);
	assert_true(vt_daemon_listen_handoff(f->d, f->agent, &e));
	assert_int_equal(hello(f, (uint32_t)getpid(), VTIER_HELLO_F_RECONNECT | flags, 2, "mem0",
			       &s2, msg), 0);
	/* each page as it was: the fault thread serves them while this thread reads */
	check_pages(f);
	close(s2);
	spin(50);
}

static void test_reconnect_gets_its_pages(void **state)
{
	reconnect_gets_its_pages(state, 0);
}

/* A VM that arrived by live migration: its reconnect is still INCOMING, its store still its own. */
static void test_reconnect_after_incoming(void **state)
{
	reconnect_gets_its_pages(state, VTIER_HELLO_F_INCOMING);
}

/* A RECONNECT without a store is refused: never zeros for evicted pages. */
static void test_reconnect_without_store(void **state)
{
	struct fixture *f = *state;
	char msg[128];

	assert_true(hello(f, (uint32_t)getpid(), VTIER_HELLO_F_RECONNECT, 2, "mem0", NULL,
			  msg) < 0);
	assert_non_null(strstr(msg, "rather than serving zeros"));
	assert_int_equal(g_hash_table_size(f->d->vms), 0);
}

struct ticker {
	gint64 last;
	gint64 max_gap;
	unsigned int ticks;
};

static gboolean tick(gpointer data)
{
	struct ticker *t = data;
	gint64 now = g_get_monotonic_time();

	if (t->last && now - t->last > t->max_gap)
		t->max_gap = now - t->last;
	t->last = now;
	t->ticks++;
	return G_SOURCE_CONTINUE;
}

/*
 * A store that takes long to open (1 s here; seconds for a big VM's
 * reconcile) holds its HELLO, not the loop: a 10 ms ticker keeps ticking
 * (never a gap of 250 ms, a shared machine's scheduling aside),
 * a second HELLO of the same backend meanwhile is refused as held.
 */
static void test_slow_open(void **state)
{
	struct fixture *f = *state;
	struct ticker t = { 0 };
	guint id = g_timeout_add(10, tick, &t);
	gint64 t0 = g_get_monotonic_time();
	char msg[128];
	int s1, s2;

	f->d->host.store_open_delay_ms = 1000;
	s1 = hello_send(f, (uint32_t)getpid(), 0, 1, "mem0");
	/* a condition, not a fixed sleep: under load the HELLO took more than 100 ms */
	assert_true(SPIN_UNTIL(g_hash_table_size(f->d->ho.opening) == 1, 900));
	assert_int_equal(g_hash_table_size(f->d->ho.backends), 0);
	assert_true(hello(f, (uint32_t)getpid(), 0, 2, "mem0", NULL, msg) < 0);
	assert_non_null(strstr(msg, "held by a live connection"));
	assert_int_equal(hello_wait(s1, &s2, msg), 0);
	g_source_remove(id);
	assert_true(g_get_monotonic_time() - t0 >= 1000000);
	assert_true(t.ticks >= 40);
	if (t.max_gap >= 250000)	/* the loop was never held */
		fail_msg("the loop was held for %" G_GINT64_FORMAT " us", t.max_gap);
	assert_int_equal(g_hash_table_size(f->d->ho.opening), 0);
	assert_int_equal(g_hash_table_size(f->d->ho.backends), 1);
	assert_non_null(the_vm(f->d));
	close(s2);
	spin(100);
	assert_int_equal(g_hash_table_size(f->d->ho.backends), 0);
}

/* QEMU goes while its store is being opened: no backend, no VM, the store kept for it. */
static void test_closed_during_open(void **state)
{
	struct fixture *f = *state;
	char msg[128];
	int s;

	/* waits on conditions, not fixed sleeps: under load a HELLO took more than
	 * the 50 ms this test once gave it (1 failure in 4 niced runs) */
	f->d->host.store_open_delay_ms = 1000;
	s = hello_send(f, (uint32_t)getpid(), 0, 1, "mem0");
	assert_true(SPIN_UNTIL(g_hash_table_size(f->d->ho.opening) == 1, 5000));
	close(s);
	assert_true(SPIN_UNTIL(g_hash_table_size(f->d->ho.opening) == 0, 10000));
	spin(50);
	assert_int_equal(g_hash_table_size(f->d->ho.backends), 0);
	assert_int_equal(g_hash_table_size(f->d->vms), 0);
	/* this process lives: its store stays for the reconnect, as after a live hand-off */
	assert_int_equal(f->d->ho.orphans->len, 1);
	/* and the backend is free for the next HELLO */
	f->d->host.store_open_delay_ms = 0;
	assert_int_equal(hello(f, (uint32_t)getpid(), VTIER_HELLO_F_RECONNECT, 2, "mem0", &s,
			       msg), 0);
	close(s);
	spin(100);

	/* the agent goes while a store is being opened: QEMU gets no answer, nothing leaks */
	f->d->host.store_open_delay_ms = 1000;
	s = hello_send(f, (uint32_t)getpid(), VTIER_HELLO_F_RECONNECT, 3, "mem0");
	assert_true(SPIN_UNTIL(g_hash_table_size(f->d->ho.opening) == 1, 5000));
	vt_daemon_free(f->d);
	f->d = NULL;
	assert_int_equal(hello_wait(s, NULL, msg), -ECONNRESET);
	f->d = daemon_new(f->dir);
	assert_true(vt_daemon_listen_handoff(f->d, f->agent, NULL));
	/* its store is still there for the next agent */
	assert_int_equal(hello(f, (uint32_t)getpid(), VTIER_HELLO_F_RECONNECT, 4, "mem0", &s,
			       msg), 0);
	close(s);
	spin(100);
}

/* The config's [ctier.NAME] and [policy] groups: parsed all or nothing. */
static void test_config(void **state)
{
	static const struct {
		const char *text;
		const char *says;	/* NULL: accepted */
	} cases[] = {
		{ "[policy]\nwindow_ms=500\nctier_age_windows=2\n[ctier.a]\ncodec=lz4\n"
		  "pool=zbud\nmedium=node:0\n", NULL },
		{ "[policy]\nwindow_ms=banana\n", "[policy]: " },
		{ "[policy]\nnot_a_key=1\n", "[policy]: " },
		{ "[ctier.a]\ncodec=lzo\npool=zbud\nmedium=node:0\n", "codec" },
		/* a medium's price: a number in 0..1e6, else refused with the key named */
		{ "[ctier.a]\ncodec=lz4\npool=zbud\nmedium=node:0\nprice_usd_per_gib=-1\n",
		  "price_usd_per_gib" },
		{ "[ctier.a]\ncodec=lz4\npool=zbud\nmedium=node:0\nprice_usd_per_gib=nan\n",
		  "price_usd_per_gib" },
		{ "[ctier.a]\ncodec=lz4\npool=zbud\nmedium=node:0\nprice_usd_per_gib=1e7\n",
		  "price_usd_per_gib" },
		{ "[ctier.a]\ncodec=lz4\npool=zbud\nmedium=node:0\nprice_usd_per_gib=0.5x\n",
		  "price_usd_per_gib" },
		{ "[ctier.a]\ncodec=lz4\npool=zbud\nmedium=node:0\nprice_usd_per_gib=\n",
		  "price_usd_per_gib" },
	};

	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct vt_tiers tiers = { .nr = 0 };
		struct vt_daemon *d = vt_daemon_new(&tiers, NULL);
		g_autoptr(GKeyFile) k = g_key_file_new();
		g_autoptr(GError) e = NULL;
		bool ok;

		assert_true(g_key_file_load_from_data(k, cases[i].text, -1, 0, NULL));
		ok = vt_daemon_load_ctiers(d, k, &e);
		if (!cases[i].says) {
			assert_true(ok);
			assert_int_equal(d->host.nr_ctier, 1);
			assert_int_equal(d->defaults.window_ms, 500);
			assert_int_equal(d->defaults.ctier_age_windows, 2);
			assert_true(d->host.ctier_price[0] < 0);	/* none configured: the medium's */
		} else if (ok || !strstr(e->message, cases[i].says)) {
			fail_msg("case %u: %s", i, ok ? "accepted" : e->message);
		}
		vt_daemon_free(d);
	}
}

static void test_config_price(void **state)
{
	struct vt_tiers tiers = { .nr = 0 };
	struct vt_daemon *d = vt_daemon_new(&tiers, NULL);
	g_autoptr(GKeyFile) k = g_key_file_new();
	g_autoptr(GError) e = NULL;

	(void)state;
	assert_true(g_key_file_load_from_data(k, "[ctier.a]\ncodec=lz4\npool=zbud\nmedium=node:0\n"
					      "price_usd_per_gib=0.25\n[ctier.b]\ncodec=lz4\n"
					      "pool=zbud\nmedium=file:/tmp\n", -1, 0, NULL));
	assert_true(vt_daemon_load_ctiers(d, k, &e));
	assert_int_equal(d->host.nr_ctier, 2);
	assert_true(d->host.ctier_price[0] == 0.25);
	assert_true(d->host.ctier_price[1] < 0);
	vt_daemon_free(d);
}

/* Read @len bytes of @s (non-blocking), running the daemon's loop meanwhile. */
static bool recv_all(int s, void *buf, size_t len, gint64 deadline)
{
	size_t got = 0;

	while (got < len && g_get_monotonic_time() < deadline) {
		ssize_t n = recv(s, (char *)buf + got, len - got, 0);

		if (n > 0)
			got += (size_t)n;
		else if (n == 0)
			return false;
		else
			g_main_context_iteration(NULL, FALSE);
	}
	return got == len;
}

/* The next STATS on @s within 5 s, checked as QEMU checks it; its payload in @buf. */
static struct vt_handoff_stats next_stats(int s, void *buf, size_t cap)
{
	gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
	struct vtier_handoff_hdr hdr;
	struct vt_handoff_stats st;
	char err[VT_HANDOFF_ERR_LEN];

	do {
		assert_true(recv_all(s, &hdr, sizeof(hdr), deadline));
		assert_true(hdr.size <= cap);
		assert_true(recv_all(s, buf, hdr.size, deadline));
	} while (hdr.type != VTIER_HANDOFF_STATS);
	if (vt_handoff_check_stats(buf, hdr.size, &st, err, sizeof(err)))
		fail_msg("vtierd sent a STATS QEMU refuses: %s", err);
	return st;
}

static int64_t json_nusd(JsonObject *o, const char *key)
{
	return llround(json_object_get_double_member(o, key) * 1e9);
}

static int64_t json_milli(JsonObject *o, const char *key)
{
	return llround(json_object_get_double_member(o, key) * 1e3);
}

/* A thread that holds a VM's lock until told to let go, as a busy worker does. */
struct lock_holder {
	struct vt_vm *vm;
	GMutex m;
	GCond c;
	bool held, release;
};

static gpointer hold_lock(gpointer data)
{
	struct lock_holder *h = data;

	g_mutex_lock(&h->vm->lock);
	g_mutex_lock(&h->m);
	h->held = true;
	g_cond_signal(&h->c);
	while (!h->release)
		g_cond_wait(&h->c, &h->m);
	g_mutex_unlock(&h->m);
	g_mutex_unlock(&h->vm->lock);
	return NULL;
}

/* Until the VM's worker took the RAM (engine start, mode=off): its two tiers. */
static void wait_engine(struct vt_vm *vm)
{
	gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
	unsigned int nr;

	do {
		g_main_context_iteration(NULL, FALSE);
		g_mutex_lock(&vm->lock);
		nr = vm->nr_tiers;
		g_mutex_unlock(&vm->lock);
	} while (nr != 2 && g_get_monotonic_time() < deadline);
	assert_int_equal(nr, 2);
}

/*
 * Sends @vm's STATS now and reads reports (a 1 s tick may send others first)
 * until one's migration block has @want in the field at @off.
 */
static struct vt_handoff_stats migration_sent(struct vt_vm *vm, int s, uint64_t *buf, size_t len,
					      size_t off, uint64_t want)
{
	struct vt_handoff_stats st;

	assert_int_equal(vt_backend_send_stats(g_ptr_array_index(vm->backends, 0)), 0);
	do
		st = next_stats(s, buf, len);
	while (*(const uint64_t *)((const char *)st.migration + off) != want);
	return st;
}

/*
 * After a window of a handed-off VM, QEMU gets STATS with the VM's TCO report:
 * the figures of `vtierctl report VM --json`, in the hand-off's fixed point.
 */
static void test_stats_carry_report(void **state)
{
	struct fixture *f = *state;
	struct vt_tiers numa = { .nr = 1 };
	/* the store measured 3 MiB of guest data in 1 MiB: ratio 3 */
	struct vt_ctier_measured meas = { 3 << 20, 1 << 20, 40, 20000 };
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonNode) root = NULL;
	uint64_t buf[4096 / sizeof(uint64_t)];
	struct vt_handoff_stats st;
	JsonObject *o, *sd, *prof, *t;
	JsonArray *tiers;
	struct vt_vm *vm;
	char msg[128];
	int s;

	assert_int_equal(hello(f, (uint32_t)getpid(), 0, 1, "mem0", &s, msg), 0);
	vm = the_vm(f->d);
	assert_non_null(vm);
	/* mode=off, no window yet: per-tier figures, and no migration */
	st = next_stats(s, buf, sizeof(buf));
	assert_int_equal(st.fixed->flags, VTIER_STATS_F_TIER_V2 | VTIER_STATS_F_MIGRATION);
	assert_null(st.tco);
	assert_int_equal(st.migration->state, VTIER_MIGRATION_STATE_NONE);
	assert_int_equal(st.migration->started, 0);

	/* a window as the worker publishes one (no profiler runs on the test process) */
	numa.tier[0] = (struct vt_tier){ .name = "dram", .nodes = { 0 }, .nr_nodes = 1,
					 .latency_ns = 100, .price_usd_gib = 3.0 };
	g_mutex_lock(&vm->lock);
	vm->stats.windows = 5;
	vt_tier_model_build(&vm->stats.model, &numa, f->d->host.ctier, f->d->host.ctier_price, NULL,
			    f->d->host.nr_ctier, &meas, false);
	vm->stats.tier[0].resident_bytes = 1 << 20;
	/* the residency stage counts a hand-off's pools from their stores */
	vm->stats.tier[1].resident_bytes = 3 << 20;
	vm->stats.access_weight[0] = 1;
	vm->stats.fault_ns_per_s[1] = 3e6;
	vm->stats.hot_chunks = 1;
	vm->stats.stable_windows = 3;
	vm->stats.phase_changes = 1;
	g_mutex_unlock(&vm->lock);
	vm->engine_window(vm);
	st = next_stats(s, buf, sizeof(buf));
	assert_non_null(st.tco);

	vt_vm_report_to_json(vm, b);
	root = json_builder_get_root(b);
	o = json_node_get_object(root);
	assert_int_equal(st.tco->windows, json_object_get_int_member(o, "windows"));
	assert_string_equal(st.tco->placement, json_object_get_string_member(o, "placement"));
	assert_int_equal(st.tco->bytes, json_object_get_int_member(o, "bytes"));
	assert_int_equal(st.tco->bytes, 4 << 20);
	assert_int_equal(st.tco->cost_nusd_per_hour, json_nusd(o, "usd_per_hour"));
	assert_true(st.tco->cost_nusd_per_hour > 0);
	assert_int_equal(st.tco->all_dram_nusd_per_hour, json_nusd(o, "all_dram_usd_per_hour"));
	assert_int_equal(st.tco->saving_nusd_per_month, json_nusd(o, "saving_usd_per_month"));
	assert_int_equal(st.tco->saving_pct_milli, json_milli(o, "saving_pct"));
	assert_true(st.tco->saving_pct_milli > 0);
	assert_int_equal(st.tco->hour_samples, json_object_get_int_member(o, "hour_samples"));
	assert_int_equal(st.tco->hot_set_bytes, json_object_get_int_member(o, "hot_set_bytes"));
	sd = json_object_get_object_member(o, "slowdown");
	assert_int_equal(st.tco->fault_time_pct_milli, json_milli(sd, "fault_time_pct"));
	assert_int_equal(st.tco->fault_time_pct_milli, 300);	/* 3 ms per s */
	prof = json_object_get_object_member(o, "profile");
	assert_int_equal(st.tco->windows_since_phase_change,
			 json_object_get_int_member(prof, "windows_since_phase_change"));
	assert_int_equal(st.tco->phase_changes, json_object_get_int_member(prof, "phase_changes"));
	tiers = json_object_get_array_member(o, "tiers");
	assert_int_equal(st.tco->n_tiers, json_array_get_length(tiers));
	assert_int_equal(st.tco->n_tiers, 2);
	for (unsigned int i = 0; i < st.tco->n_tiers; i++) {
		t = json_array_get_object_element(tiers, i);
		assert_string_equal(st.tco_tiers[i].name, json_object_get_string_member(t, "tier"));
		assert_int_equal(st.tco_tiers[i].bytes, json_object_get_int_member(t, "bytes"));
		assert_int_equal(st.tco_tiers[i].cost_nusd_per_hour, json_nusd(t, "usd_per_hour"));
		assert_int_equal(st.tco_tiers[i].price_nusd_per_gib, json_nusd(t, "usd_per_gib"));
		assert_int_equal(st.tco_tiers[i].ratio_milli, json_milli(t, "ratio"));
	}
	/* the compressed tier holds what the store measured */
	assert_int_equal(st.tco_tiers[1].kind, VTIER_TCO_TIER_COMPRESSED);
	assert_int_equal(st.tco_tiers[1].bytes, 3 << 20);
	assert_int_equal(st.tco_tiers[1].ratio_milli, 3000);

	/* the VM's migration as vtierctl shows it: outgoing, then placing */
	g_mutex_lock(&vm->lock);
	vm->policy.migration_extra_bytes = 32 << 20;
	vm->migration.state = VT_MIGRATION_OUTGOING;
	vm->stats.migration.started = 2;
	vm->stats.migration.completed = 1;
	vm->stats.migration.extra_bytes = 5 << 20;
	vm->stats.migration.extra_peak_bytes = 9 << 20;
	vm->stats.migration.promotions_held = 7;
	g_mutex_unlock(&vm->lock);
	st = migration_sent(vm, s, buf, sizeof(buf),
			    offsetof(struct vtier_handoff_migration_stats, started), 2);
	assert_int_equal(st.migration->state, VTIER_MIGRATION_STATE_OUTGOING);
	assert_int_equal(st.migration->completed, 1);
	assert_int_equal(st.migration->failed, 0);
	assert_int_equal(st.migration->extra_bytes, 5 << 20);
	assert_int_equal(st.migration->extra_peak_bytes, 9 << 20);
	assert_int_equal(st.migration->extra_bound_bytes, 32 << 20);
	assert_int_equal(st.migration->promotions_held, 7);
	g_mutex_lock(&vm->lock);
	vm->migration.state = VT_MIGRATION_NONE;
	vm->stats.migration.plan_chunks = 57;
	vm->stats.migration.profiles_seeded = 1;
	g_mutex_unlock(&vm->lock);
	st = migration_sent(vm, s, buf, sizeof(buf),
			    offsetof(struct vtier_handoff_migration_stats, plan_chunks), 57);
	assert_int_equal(st.migration->state, VTIER_MIGRATION_STATE_PLACING);
	assert_int_equal(st.migration->profiles_seeded, 1);
	g_mutex_lock(&vm->lock);
	vm->stats.migration.plan_chunks = 0;
	g_mutex_unlock(&vm->lock);

	/*
	 * While the worker holds the VM's lock (restarting its engine), the main loop
	 * does not wait for it: STATS goes out at once with the report sent last.
	 */
	{
		struct vtier_handoff_tco last = *st.tco;
		struct lock_holder h = { .vm = vm };
		GThread *holder;
		gint64 t0;

		/* a window the main loop will not see until the lock is free */
		g_mutex_lock(&vm->lock);
		vm->stats.windows = 6;
		g_mutex_unlock(&vm->lock);
		holder = g_thread_new("holder", hold_lock, &h);
		g_mutex_lock(&h.m);
		while (!h.held)
			g_cond_wait(&h.c, &h.m);
		g_mutex_unlock(&h.m);
		t0 = g_get_monotonic_time();
		assert_int_equal(vt_backend_send_stats(g_ptr_array_index(vm->backends, 0)), 0);
		st = next_stats(s, buf, sizeof(buf));
		assert_true(g_get_monotonic_time() - t0 < G_USEC_PER_SEC);
		assert_non_null(st.tco);
		assert_memory_equal(st.tco, &last, sizeof(last));
		g_mutex_lock(&h.m);
		h.release = true;
		g_cond_signal(&h.c);
		g_mutex_unlock(&h.m);
		g_thread_join(holder);
		/* free again: the new window's report (after any the 1 s tick sent meanwhile) */
		assert_int_equal(vt_backend_send_stats(g_ptr_array_index(vm->backends, 0)), 0);
		for (st = next_stats(s, buf, sizeof(buf)); st.tco->windows != 6;
		     st = next_stats(s, buf, sizeof(buf)))
			assert_memory_equal(st.tco, &last, sizeof(last));
	}
	close(s);
}

static void send_migration_seq(int s, uint32_t event, uint32_t seq)
{
	struct {
		struct vtier_handoff_hdr hdr;
		struct vtier_handoff_migration m;
	} msg = {
		{ VTIER_HANDOFF_MAGIC, VTIER_HANDOFF_VERSION, VTIER_HANDOFF_MIGRATION, 8, seq },
		{ event, 0 },
	};

	assert_int_equal(send(s, &msg, sizeof(msg), 0), (ssize_t)sizeof(msg));
}

static void send_migration(int s, uint32_t event)
{
	send_migration_seq(s, event, 9);
}

/*
 * The next message of @type on @s within 5 s (others skipped); its payload in
 * @buf, its header in @hdr.
 */
static size_t next_msg_hdr(int s, uint16_t type, void *buf, size_t cap,
			   struct vtier_handoff_hdr *hdr)
{
	gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

	do {
		assert_true(recv_all(s, hdr, sizeof(*hdr), deadline));
		assert_true(hdr->size <= cap);
		assert_true(recv_all(s, buf, hdr->size, deadline));
	} while (hdr->type != type);
	return hdr->size;
}

static size_t next_msg(int s, uint16_t type, void *buf, size_t cap)
{
	struct vtier_handoff_hdr hdr;

	return next_msg_hdr(s, type, buf, cap, &hdr);
}

static struct vt_migration_stats migration_of(struct vt_vm *vm, enum vt_migration_state *state,
					      char *note, size_t note_len)
{
	struct vt_migration_stats ms;

	g_mutex_lock(&vm->lock);
	ms = vm->stats.migration;
	if (state)
		*state = vm->migration.state;
	if (note)
		g_strlcpy(note, vm->migration.note, note_len);
	g_mutex_unlock(&vm->lock);
	return ms;
}

/* Run the loop until the VM's migration state is @want (the worker takes events). */
static void wait_state(struct vt_vm *vm, enum vt_migration_state want, uint64_t ended)
{
	gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
	enum vt_migration_state st;
	struct vt_migration_stats ms;

	do {
		g_main_context_iteration(NULL, FALSE);
		ms = migration_of(vm, &st, NULL, 0);
	} while ((st != want || ms.completed + ms.failed != ended) &&
		 g_get_monotonic_time() < deadline);
	assert_int_equal(st, want);
}

/*
 * Source: MIGRATION started makes vtierd send the backend's profile (v2, read
 * back here as the destination reads it) and hold promotions until the
 * migration ends, which status and stats say; failed and completed end it.
 */
/* A zero map as QEMU makes one for the test's backend: sealed, @seals added. */
static int zero_map_memfd(int seals)
{
	return map_memfd(vtier_zero_map_bytes(NPAGES * PAGE, PAGE), seals);
}

/* The backend's entry of `vtierctl --json stats`, boolean @key. */
static bool backend_stat_bool(struct vt_vm *vm, const char *key)
{
	g_autoptr(JsonBuilder) jb = json_builder_new();
	g_autoptr(JsonNode) root = NULL;
	g_autoptr(GPtrArray) bs = vt_vm_backends_ref(vm);

	assert_int_equal(bs->len, 1);
	vt_backend_stats_to_json(g_ptr_array_index(bs, 0), jb);
	root = json_builder_get_root(jb);
	assert_true(json_object_has_member(json_node_get_object(root), key));
	return json_object_get_boolean_member(json_node_get_object(root), key);
}

/* QEMU's read of page @p's bit in its read-only mapping @map. */
static bool zero_bit_of(const uint64_t *map, uint64_t p)
{
	return __atomic_load_n(&map[p / 64], __ATOMIC_ACQUIRE) >> (p % 64) & 1;
}

/*
 * The zero map QEMU sends with its HELLO: while an outgoing migration reads,
 * the holes of the memfd with no copy are marked (not the pages with data,
 * not the ones stored); the end of the migration clears them; a map QEMU
 * could shrink is refused with the reason.
 */
static void test_zero_map_handoff(void **state)
{
	struct fixture *f = *state;
	size_t bytes = vtier_zero_map_bytes(NPAGES * PAGE, PAGE);
	uint64_t hole = NPAGES / 2, marked = 0;
	const uint64_t *map;
	char msg[128];
	int s, fd;

	/* one memory tier, then the compressed one */
	f->d->host.tiers.nr = 1;
	f->d->host.tiers.tier[0] = (struct vt_tier){ .name = "dram", .nodes = { 0 }, .nr_nodes = 1 };
	fd = zero_map_memfd(F_SEAL_GROW | F_SEAL_SEAL);
	s = agent_connect(f);
	hello_send_ram(s, &f->q, uuid, (uint32_t)getpid(), 0, 1, "mem0", NULL, 0, fd, -1);
	assert_int_equal(hello_wait(s, NULL, msg), -EBADF);
	assert_non_null(strstr(msg, "not sealed"));
	close(fd);

	fd = zero_map_memfd(F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	map = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(fallocate(f->q.memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   (off_t)(hole * PAGE), (off_t)(hole * PAGE)), 0);
	s = agent_connect(f);
	hello_send_ram(s, &f->q, uuid, (uint32_t)getpid(), 0, 1, "mem0", NULL, 0, fd, -1);
	close(fd);
	assert_int_equal(hello_wait(s, &s, msg), 0);
	wait_engine(the_vm(f->d));
	assert_true(backend_stat_bool(the_vm(f->d), "zero_map"));
	assert_false(backend_stat_bool(the_vm(f->d), "send_map"));
	spin(200);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_false(zero_bit_of(map, p));	/* no migration reads */
	send_migration(s, VTIER_MIGRATION_START);
	assert_true(SPIN_UNTIL(zero_bit_of(map, NPAGES - 1) && zero_bit_of(map, hole), 10000));
	for (uint64_t p = 0; p < NPAGES; p++) {
		marked += zero_bit_of(map, p);
		if (zero_bit_of(map, p) != (p >= hole))
			fail_msg("page %" PRIu64 ": zero bit %d", p, zero_bit_of(map, p));
	}
	assert_int_equal(marked, hole);
	send_migration(s, VTIER_MIGRATION_COMPLETED);
	assert_true(SPIN_UNTIL(!zero_bit_of(map, hole), 10000));
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_false(zero_bit_of(map, p));
	munmap((void *)map, bytes);
	close(s);
}

/*
 * The send map QEMU sends with its zero map (HELLO flags ZERO_MAP | SEND_MAP,
 * four fds): one of the wrong size or that QEMU could shrink is refused with
 * the reason; a good one is taken (stats say so). vtierd marks no page in it
 * yet, so MIGRATION SEND_END is answered at once: SENT, status 0, 0 pages,
 * the MIGRATION's seq, and the migration goes on until it ends.
 */
static void test_send_map_handoff(void **state)
{
	struct fixture *f = *state;
	size_t bytes = vtier_zero_map_bytes(NPAGES * PAGE, PAGE);
	unsigned int n_bad;
	const struct bad_map *bad = bad_send_maps(&n_bad);
	struct vtier_handoff_sent sent;
	struct vtier_handoff_hdr hdr;
	struct vt_migration_stats ms;
	enum vt_migration_state st;
	const uint64_t *smap;
	struct vt_vm *vm;
	char msg[128];
	int s, zfd, sfd;

	/* one memory tier, then the compressed one */
	f->d->host.tiers.nr = 1;
	f->d->host.tiers.tier[0] = (struct vt_tier){ .name = "dram", .nodes = { 0 }, .nr_nodes = 1 };
	assert_int_equal(NPAGES * PAGE, 1 << 20);	/* the size bad_send_maps() is for */
	zfd = zero_map_memfd(MAP_SEALS);
	for (unsigned int i = 0; i < n_bad; i++) {
		sfd = map_memfd(bad[i].bytes, bad[i].seals);
		s = agent_connect(f);
		hello_send_ram(s, &f->q, uuid, (uint32_t)getpid(), 0, 1, "mem0", NULL, 0, zfd, sfd);
		close(sfd);
		assert_int_equal(hello_wait(s, NULL, msg), bad[i].status);
		if (!strstr(msg, bad[i].says))
			fail_msg("refused with '%s', not '%s'", msg, bad[i].says);
	}
	assert_null(the_vm(f->d));

	sfd = zero_map_memfd(MAP_SEALS);
	smap = mmap(NULL, bytes, PROT_READ, MAP_SHARED, sfd, 0);
	assert_true(smap != MAP_FAILED);
	s = agent_connect(f);
	hello_send_ram(s, &f->q, uuid, (uint32_t)getpid(), 0, 1, "mem0", NULL, 0, zfd, sfd);
	close(zfd);
	close(sfd);
	assert_int_equal(hello_wait(s, &s, msg), 0);
	vm = the_vm(f->d);
	assert_non_null(vm);
	wait_engine(vm);
	assert_true(backend_stat_bool(vm, "zero_map"));
	assert_true(backend_stat_bool(vm, "send_map"));

	send_migration(s, VTIER_MIGRATION_START);
	wait_state(vm, VT_MIGRATION_OUTGOING, 0);
	send_migration_seq(s, VTIER_MIGRATION_SEND_END, 1234);
	assert_int_equal(next_msg_hdr(s, VTIER_HANDOFF_SENT, &sent, sizeof(sent), &hdr), 144);
	assert_int_equal(hdr.seq, 1234);
	assert_int_equal(sent.status, 0);
	assert_int_equal(sent.reserved, 0);
	assert_int_equal(sent.pages, 0);
	assert_non_null(memchr(sent.message, '\0', sizeof(sent.message)));
	for (size_t w = 0; w < bytes / 8; w++)
		assert_int_equal(smap[w], 0);	/* nothing marked, nothing to deliver */
	/* SEND_END ends nothing: the migration is outgoing until QEMU says it ended */
	spin(100);
	ms = migration_of(vm, &st, NULL, 0);
	assert_int_equal(st, VT_MIGRATION_OUTGOING);
	assert_int_equal(ms.completed + ms.failed, 0);
	send_migration(s, VTIER_MIGRATION_COMPLETED);
	wait_state(vm, VT_MIGRATION_NONE, 1);
	assert_int_equal(migration_of(vm, NULL, NULL, 0).completed, 1);
	munmap((void *)smap, bytes);
	close(s);
}

static void test_migration_source(void **state)
{
	struct fixture *f = *state;
	g_autofree uint8_t *buf = g_malloc(1 << 20);
	g_autoptr(JsonBuilder) jb = json_builder_new();
	g_autoptr(JsonNode) root = NULL;
	struct vt_migration_stats ms;
	enum vt_migration_state st;
	struct vt_profile_chunk c;
	struct vt_profile p;
	struct vt_backend *b;
	struct vt_vm *vm;
	char err[VT_PROFILE_ERR_LEN], msg[128], note[200];
	gint64 deadline;
	size_t len;
	int s;

	/* one memory tier, then the compressed one */
	f->d->host.tiers.nr = 1;
	f->d->host.tiers.tier[0] = (struct vt_tier){ .name = "dram", .nodes = { 0 }, .nr_nodes = 1 };
	assert_int_equal(hello(f, (uint32_t)getpid(), 0, 1, "mem0", &s, msg), 0);
	vm = the_vm(f->d);
	assert_non_null(vm);
	wait_engine(vm);
	/* no state yet (mode=off): no profile, said so */
	send_migration(s, VTIER_MIGRATION_START);
	wait_state(vm, VT_MIGRATION_OUTGOING, 0);
	deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
	do {	/* the worker writes (or fails to write) the profile right after */
		g_main_context_iteration(NULL, FALSE);
		ms = migration_of(vm, NULL, note, sizeof(note));
	} while (!ms.profile_errors && g_get_monotonic_time() < deadline);
	assert_int_equal(ms.profile_errors, 1);
	assert_non_null(strstr(note, "no profile"));
	send_migration(s, VTIER_MIGRATION_FAILED);
	wait_state(vm, VT_MIGRATION_NONE, 1);

	/* the state a window leaves (no profiler runs on the test process) */
	b = g_ptr_array_index(vm->backends, 0);
	g_mutex_lock(&vm->lock);
	vm->mtm = vt_mtm_new(&(struct vt_range){ b->hva, b->hva + NPAGES * PAGE }, 1, 2 << 20,
			     128 << 10, 2);
	vt_mtm_set_ema(vm->mtm, 0, 0.5);
	vm->stats.windows = 3;
	g_mutex_unlock(&vm->lock);
	send_migration(s, VTIER_MIGRATION_START);
	len = next_msg(s, VTIER_HANDOFF_PROFILE, buf, 1 << 20);
	assert_int_equal(vt_profile_read(buf, len, NPAGES * PAGE, &p, err, sizeof(err)), 0);
	assert_int_equal(p.version, 2);
	assert_int_equal(p.windows, 3);
	assert_int_equal(p.n_tiers, 2);
	assert_string_equal(p.tiers[0].name, "dram");
	assert_string_equal(p.tiers[1].name, "lz4");
	assert_int_equal(p.tiers[1].kind, VTIER_PROFILE_TIER_COMPRESSED);
	assert_int_equal(p.n_chunks, 1);
	vt_profile_chunk(&p, 0, &c);
	assert_true(fabs(c.ema - 0.5) < 1e-4);
	ms = migration_of(vm, &st, NULL, 0);
	assert_int_equal(st, VT_MIGRATION_OUTGOING);
	assert_int_equal(ms.started, 2);
	assert_int_equal(ms.profiles_written, 1);
	assert_int_equal(ms.profile_bytes, len);
	vt_vm_status_to_json(vm, jb);
	root = json_builder_get_root(jb);
	assert_string_equal(json_object_get_string_member(json_object_get_object_member(
		json_node_get_object(root), "migration"), "state"), "outgoing");
	send_migration(s, VTIER_MIGRATION_COMPLETED);
	wait_state(vm, VT_MIGRATION_NONE, 2);
	ms = migration_of(vm, NULL, NULL, 0);
	assert_int_equal(ms.completed, 1);
	assert_int_equal(ms.failed, 1);
	close(s);
}

/*
 * A QEMU whose HELLO says NO_PROFILE hears at once that there is no profile
 * (the engine has no state): a PROFILE of 0 bytes, so that its migration's
 * setup need not wait for one. Without the flag nothing is sent
 * (test_migration_source: the first PROFILE it reads is the real one).
 */
static void test_migration_no_profile(void **state)
{
	struct fixture *f = *state;
	g_autofree uint8_t *buf = g_malloc(1 << 20);
	struct vt_vm *vm;
	char msg[128];
	int s;

	/* one memory tier, then the compressed one */
	f->d->host.tiers.nr = 1;
	f->d->host.tiers.tier[0] = (struct vt_tier){ .name = "dram", .nodes = { 0 }, .nr_nodes = 1 };
	assert_int_equal(hello(f, (uint32_t)getpid(), VTIER_HELLO_F_NO_PROFILE, 1, "mem0", &s,
			       msg), 0);
	vm = the_vm(f->d);
	assert_non_null(vm);
	wait_engine(vm);
	send_migration(s, VTIER_MIGRATION_START);
	assert_int_equal(next_msg(s, VTIER_HANDOFF_PROFILE, buf, 1 << 20), 0);
	assert_int_equal(migration_of(vm, NULL, NULL, 0).profile_errors, 1);
	send_migration(s, VTIER_MIGRATION_FAILED);
	wait_state(vm, VT_MIGRATION_NONE, 1);
	close(s);
}

/* A v2 profile of the test's backend: one chunk on a tier of @tier_name. */
static size_t good_profile(uint8_t *buf, const char *tier_name)
{
	struct vt_profile_tier t[2] = { { "dram", VTIER_PROFILE_TIER_NUMA } };
	size_t len = vt_profile_v2_bytes(NPAGES * PAGE, 2, 21);

	g_strlcpy(t[1].name, tier_name, sizeof(t[1].name));
	t[1].kind = VTIER_PROFILE_TIER_COMPRESSED;
	assert_int_equal(vt_profile_v2_init(buf, NPAGES * PAGE, 21, t, 2, 9), 0);
	vt_profile_v2_set(buf, 0, &(struct vt_profile_chunk){ .ema = 0.25, .tier = 1 });
	return len;
}

/*
 * Destination: a HELLO with INCOMING and a garbled or foreign profile is
 * accepted (the profile is a hint), the profile refused with its reason,
 * counted, and the VM profiles from scratch; a good one with mode=off is let go.
 */
static void test_migration_incoming_refused(void **state)
{
	struct fixture *f = *state;
	uint8_t good[256], bad[256];
	size_t good_len = good_profile(good, "lz4");
	struct {
		const char *what;
		size_t off, len;	/* a byte of @good changed at @off, or cut to @len */
		uint8_t value;
		const char *reason;
		uint32_t flags;
	} cases[] = {
		{ "bad magic", 0, 0, 0x11, "not a vtier profile", 0 },
		{ "foreign backend size", 13, 0, 0x01, "backend", 0 },
		{ "version 7", 4, 0, 7, "version 7", 0 },
		{ "tier index out of its table", 32 + 2 * 24 + 2, 0, 5, "names tier 5", 0 },
		{ "one byte short", 0, 1, 0, "bytes", 0 },
		{ "good, mode=off", 0, 0, 0, "not used", 0 },
	};

	for (unsigned int k = 0; k < G_N_ELEMENTS(cases); k++) {
		struct vt_migration_stats ms = { 0 };
		char msg[128], note[200] = "";
		size_t len = good_len - cases[k].len;
		struct vt_vm *vm;
		gint64 deadline;
		int s;

		memcpy(bad, good, good_len);
		if (cases[k].off || cases[k].value)
			bad[cases[k].off] = cases[k].value;
		s = hello_send_profile(f, (uint32_t)getpid(), VTIER_HELLO_F_INCOMING, 1, "mem0",
				       bad, len);
		assert_int_equal(hello_wait(s, &s, msg), 0);
		vm = the_vm(f->d);
		assert_non_null(vm);
		deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
		do {	/* the worker's engine start takes the profile */
			g_main_context_iteration(NULL, FALSE);
			ms = migration_of(vm, NULL, note, sizeof(note));
		} while (!note[0] && g_get_monotonic_time() < deadline);
		if (!strstr(note, cases[k].reason))
			fail_msg("%s: note '%s', want '%s'", cases[k].what, note, cases[k].reason);
		assert_int_equal(ms.profiles_refused, strstr(cases[k].what, "good") ? 0 : 1);
		assert_int_equal(ms.profiles_seeded, 0);
		close(s);
		deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
		while (the_vm(f->d) && g_get_monotonic_time() < deadline)
			g_main_context_iteration(NULL, FALSE);
		assert_null(the_vm(f->d));
	}
}

struct page_writer {
	uint8_t *map;
	volatile bool stop;
	uint64_t last;		/* the value written last into word 3 of pages 3, 100 and 200 */
};

static void *page_writer_main(void *opaque)
{
	struct page_writer *w = opaque;

	for (uint64_t v = 1; !__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE); v++) {
		for (unsigned int k = 0; k < 3; k++)
			((volatile uint64_t *)(w->map + (k ? k * 100 : 3) * PAGE))[3] = v;
		__atomic_store_n(&w->last, v, __ATOMIC_RELEASE);
	}
	return NULL;
}

/*
 * The destination's placement of an incoming VM through the real hand-off:
 * bulk orders (a plan's chunks, more than the ordinary backlog of 16) are all
 * queued, evicted in spans while a vCPU writes into them, and every page
 * reads back as it was, the written ones with their last write.
 */
static void test_incoming_bulk_placement(void **state)
{
	struct fixture *f = *state;
	struct page_writer w = { .map = f->q.map };
	struct vt_ctier_mover_stats st;
	struct vt_backend *b;
	uint8_t want[PAGE];
	pthread_t t;
	char msg[128];
	int s;

	assert_int_equal(hello(f, (uint32_t)getpid(), VTIER_HELLO_F_INCOMING, 1, "mem0", &s, msg), 0);
	b = g_ptr_array_index(the_vm(f->d)->backends, 0);
	for (int round = 0; round < 2; round++) {
		/* 4 orders of 64 pages (at most a span each: the ordinary path takes 8
		 * runs of 32), then 32 of 8 (more than the ordinary backlog takes) */
		uint64_t order = (round ? 8 : 64) * PAGE;

		uint64_t before = w.last;

		w.stop = false;
		assert_int_equal(pthread_create(&t, NULL, page_writer_main, &w), 0);
		/* the vCPU writes before the orders come, however loaded the machine */
		for (int i = 0; i < 30000 && __atomic_load_n(&w.last, __ATOMIC_ACQUIRE) == before; i++)
			g_usleep(1000);
		assert_true(__atomic_load_n(&w.last, __ATOMIC_ACQUIRE) != before);
		for (uint64_t o = 0; o < NPAGES * PAGE; o += order)
			assert_int_equal(vt_backend_queue_bulk(b, o, order, 0), 0);
		for (int i = 0; i < 5000 && vt_backend_backlog(b); i++)
			spin(1);
		assert_int_equal(vt_backend_backlog(b), 0);
		__atomic_store_n(&w.stop, true, __ATOMIC_RELEASE);
		pthread_join(t, NULL);
		vt_ctier_mover_get_stats(b->mover, &st);
		assert_true(st.evicted > NPAGES / 2);
		if (!round)
			assert_true(st.evict_runs <= 4);
		for (uint64_t p = 0; p < NPAGES; p++) {
			memset(want, 0, sizeof(want));
			memset(want, (int)(p % 7), PAGE / 2);
			if (p == 3 || p == 100 || p == 200)
				((uint64_t *)want)[3] = w.last;
			assert_memory_equal(f->q.map + p * PAGE, want, PAGE);
		}
	}
	close(s);
	spin(50);
}

/* A source's profile (*@len bytes) that puts the whole backend, one chunk, on its lz4 tier. */
static uint8_t *cold_profile(size_t *len)
{
	const struct vt_profile_tier tiers[2] = {
		{ .name = "dram", .kind = VTIER_PROFILE_TIER_NUMA },
		{ .name = "lz4", .kind = VTIER_PROFILE_TIER_COMPRESSED },
	};
	uint8_t *prof;

	*len = vt_profile_v2_bytes(NPAGES * PAGE, 2, 21);
	prof = g_malloc0(*len);
	assert_int_equal(vt_profile_v2_init(prof, NPAGES * PAGE, 21, tiers, 2, 5), 0);
	vt_profile_v2_set(prof, 0, &(struct vt_profile_chunk){ .ema = 0, .tier = 1,
							       .cold_windows = 5, .size_class = 2 });
	return prof;
}

/*
 * A destination prepared during precopy: PREPARE (the memfd and a profile
 * that puts the whole backend on the compressed tier) while "the migration"
 * still writes pages; one page written again after its copy was made; then
 * the HELLO proper on the same connection and a bulk placement. The mover
 * stores the unchanged pages from their copies and compresses the changed
 * one again; every page reads back as the memfd held it.
 */
static void test_prepared_placement(void **state)
{
	struct fixture *f = *state;
	size_t len;
	g_autofree uint8_t *prof = cold_profile(&len);
	struct vt_ctier_mover_stats st;
	uint64_t zero = 0, nonzero;
	struct vt_backend *b;
	uint8_t want[PAGE];
	char msg[128];
	int s;

	/*
	 * Half of the pages are there when QEMU prepares, the rest arrive
	 * meanwhile (written as the migration does, not through the mapping,
	 * whose userfaultfd nobody serves yet).
	 */
	assert_int_equal(fallocate(f->q.memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   NPAGES / 2 * PAGE, NPAGES / 2 * PAGE), 0);
	s = agent_connect(f);
	hello_send_on(s, f, (uint32_t)getpid(), VTIER_HELLO_F_PREPARE | VTIER_HELLO_F_INCOMING, 1,
		      "mem0", prof, len);
	spin(1000);
	for (uint64_t p = NPAGES / 2; p < NPAGES; p++) {
		memset(want, 0, sizeof(want));
		memset(want, (int)(p % 7), PAGE / 2);
		assert_int_equal(pwrite(f->q.memfd, want, PAGE, (off_t)(p * PAGE)), (ssize_t)PAGE);
	}
	spin(1500);
	/* page 10 sent again, changed, after its copy */
	memset(want, 0, sizeof(want));
	memset(want, 10 % 7, PAGE / 2);
	memset(want + PAGE / 2, 0x7e, 64);
	assert_int_equal(pwrite(f->q.memfd, want, PAGE, 10 * PAGE), (ssize_t)PAGE);
	for (uint64_t p = 0; p < NPAGES; p++)
		zero += p % 7 == 0;
	nonzero = NPAGES - zero;

	hello_send_on(s, f, (uint32_t)getpid(), VTIER_HELLO_F_INCOMING, 1, "mem0", prof, len);
	assert_int_equal(hello_wait(s, &s, msg), 0);
	b = g_ptr_array_index(the_vm(f->d)->backends, 0);
	vt_ctier_mover_get_stats(b->mover, &st);
	/* every non-zero page copied once: its first arrival (the second half's too) */
	assert_int_equal(st.prepared_pages, nonzero);
	assert_true(st.prepared_bytes > 0);
	assert_int_equal(vt_backend_queue_bulk(b, 0, NPAGES * PAGE, 0), 0);
	for (int i = 0; i < 5000 && vt_backend_backlog(b); i++)
		spin(1);
	assert_int_equal(vt_backend_backlog(b), 0);
	vt_ctier_mover_get_stats(b->mover, &st);
	assert_int_equal(st.evicted, NPAGES);
	assert_int_equal(st.prepared_used, nonzero - 1);
	assert_int_equal(st.prepared_stale, 1);
	for (uint64_t p = 0; p < NPAGES; p++) {
		memset(want, 0, sizeof(want));
		memset(want, (int)(p % 7), PAGE / 2);
		if (p == 10)
			memset(want + PAGE / 2, 0x7e, 64);
		assert_memory_equal(f->q.map + p * PAGE, want, PAGE);
	}
	close(s);
	spin(50);
}

/* Threads of this process named @name. */
static unsigned int threads_named(const char *name)
{
	GDir *dir = g_dir_open("/proc/self/task", 0, NULL);
	const char *tid;
	unsigned int n = 0;

	assert_non_null(dir);
	while ((tid = g_dir_read_name(dir))) {
		g_autofree char *path = g_strdup_printf("/proc/self/task/%s/comm", tid);
		g_autofree char *comm = NULL;

		if (g_file_get_contents(path, &comm, NULL, NULL) && !strcmp(g_strchomp(comm), name))
			n++;
	}
	g_dir_close(dir);
	return n;
}

/*
 * The same memfd PREPAREd on 3 connections (each would hold its own copies:
 * the memory of one set, three times): one set of copies is made, by one
 * copier, charged once to the peer; the others prepare nothing. When the
 * connections go, so does the copier and its charge.
 */
static void test_prepare_one_set_per_memfd(void **state)
{
	struct fixture *f = *state;
	size_t len;
	g_autofree uint8_t *prof = cold_profile(&len);
	struct vt_peer_id who = { .pid = getpid() };
	struct vt_charge held;
	int s[3];

	assert_true(vt_proc_start_time(getpid(), &who.start_time) == 0);
	for (unsigned int i = 0; i < 3; i++) {
		s[i] = agent_connect(f);
		hello_send_on(s[i], f, (uint32_t)getpid(), VTIER_HELLO_F_PREPARE |
			      VTIER_HELLO_F_INCOMING, 1, "mem0", prof, len);
	}
	spin(500);
	assert_int_equal(threads_named("vtier-prepare"), 1);
	assert_int_equal(g_hash_table_size(f->d->ho.preparing), 1);
	vt_budget_peer_held(f->d->ho.budget, &who, &held);
	assert_int_equal(held.v[VT_BOUND_PREPARES], 1);
	assert_true(held.v[VT_BOUND_PREPARE_BYTES] > 0);
	for (unsigned int i = 0; i < 3; i++)
		close(s[i]);
	for (int i = 0; i < 200 && threads_named("vtier-prepare"); i++)
		spin(10);
	assert_int_equal(threads_named("vtier-prepare"), 0);
	assert_int_equal(g_hash_table_size(f->d->ho.preparing), 0);
	vt_budget_peer_held(f->d->ho.budget, &who, &held);
	assert_int_equal(held.v[VT_BOUND_PREPARES], 0);
}

/* The incoming migration of test_early_placement: writes through QEMU's mapping. */
struct arrivals {
	uint8_t *map;
	bool done;
};

static void page_pattern(uint8_t *page, uint64_t p)
{
	memset(page, 0, PAGE);
	memset(page, (int)(p % 7), PAGE / 2);
	if (p == 10 || p == 200)
		memset(page + PAGE / 2, 0x7e, 64);	/* sent again, changed */
}

static void *arrivals_main(void *opaque)
{
	struct arrivals *a = opaque;
	uint8_t page[PAGE];

	/* the second half arrives; then pages 10 and 200 are sent again, changed */
	for (uint64_t p = NPAGES / 2; p < NPAGES; p++) {
		page_pattern(page, p == 200 ? 0 : p);
		memcpy(a->map + p * PAGE, page, PAGE);
		if (p % 16 == 0)
			g_usleep(20000);
	}
	g_usleep(100000);
	page_pattern(page, 10);
	memcpy(a->map + 10 * PAGE, page, PAGE);
	page_pattern(page, 200);
	memcpy(a->map + 200 * PAGE, page, PAGE);
	__atomic_store_n(&a->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * The early hand-off: a PREPARE offering it is answered with the EARLY
 * reply, the HELLO proper with PRECOPY is accepted while half of guest RAM
 * has not arrived; the migration then writes the rest through QEMU's
 * mapping (holes: faults the agent serves) and sends two pages again,
 * changed, while the whole backend is evicted over and over as the
 * precopy's windows do. MIGRATION ARRIVED ends the precopy. Every page
 * reads back as the migration last wrote it.
 */
static void test_early_placement(void **state)
{
	struct fixture *f = *state;
	size_t len;
	g_autofree uint8_t *prof = cold_profile(&len);
	struct arrivals arr = { .map = f->q.map };
	struct vtier_handoff_hello_reply reply;
	struct vt_ctier_mover_stats st;
	struct vt_vm_stats vs = { 0 };
	struct vt_backend *b;
	uint8_t want[PAGE];
	unsigned int orders = 0;
	pthread_t t;
	char msg[128];
	int s;

	for (uint64_t p = 0; p < NPAGES / 2; p++) {
		page_pattern(want, p == 10 ? 0 : p);
		assert_int_equal(pwrite(f->q.memfd, want, PAGE, (off_t)(p * PAGE)), (ssize_t)PAGE);
	}
	assert_int_equal(fallocate(f->q.memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   NPAGES / 2 * PAGE, NPAGES / 2 * PAGE), 0);
	s = agent_connect(f);
	hello_send_on(s, f, (uint32_t)getpid(), VTIER_HELLO_F_PREPARE | VTIER_HELLO_F_INCOMING |
		      VTIER_HELLO_F_EARLY, 1, "mem0", prof, len);
	assert_int_equal(next_msg(s, VTIER_HANDOFF_HELLO_REPLY, &reply, sizeof(reply)),
			 sizeof(reply));
	assert_int_equal(reply.status, 0);
	assert_int_equal(reply.flags, VTIER_HELLO_REPLY_F_EARLY);
	hello_send_on(s, f, (uint32_t)getpid(), VTIER_HELLO_F_INCOMING | VTIER_HELLO_F_PRECOPY, 1,
		      "mem0", prof, len);
	assert_int_equal(hello_wait(s, &s, msg), 0);
	b = g_ptr_array_index(the_vm(f->d)->backends, 0);
	assert_true(b->precopy);
	/* before a window: its migration stage will take it as precopy, until the bound */
	assert_true(vt_migration_precopy_due(the_vm(f->d)->backends, &vs));
	vs.migration.precopy_windows = VT_MIGRATION_PRECOPY_WINDOWS_MAX;
	assert_false(vt_migration_precopy_due(the_vm(f->d)->backends, &vs));
	vs.migration.precopy_windows = 0;
	assert_int_equal(pthread_create(&t, NULL, arrivals_main, &arr), 0);
	/* the precopy's windows: the plan queued again whenever the mover is idle */
	for (int i = 0; i < 20000; i++) {
		bool done = __atomic_load_n(&arr.done, __ATOMIC_ACQUIRE);

		if (!vt_backend_backlog(b)) {
			if (done && orders > 2)
				break;
			assert_int_equal(vt_backend_queue_bulk(b, 0, NPAGES * PAGE, 0), 0);
			orders++;
		}
		spin(1);
	}
	pthread_join(t, NULL);
	assert_int_equal(vt_backend_backlog(b), 0);
	vt_ctier_mover_get_stats(b->mover, &st);
	/* the first half at least, evicted before the precopy ended */
	assert_true(st.evicted >= NPAGES / 2);
	assert_true(st.faults_zero + st.faults_stored > 0);
	fprintf(stderr, "# evicted %lu faults_zero %lu faults_stored %lu wp %lu orders %u\n", (unsigned long)st.evicted, (unsigned long)st.faults_zero, (unsigned long)st.faults_stored, (unsigned long)st.faults_wp, orders);
	send_migration(s, VTIER_MIGRATION_ARRIVED);
	spin(100);
	assert_false(b->precopy);
	assert_false(vt_migration_precopy_due(the_vm(f->d)->backends, &vs));
	/* the first ordinary window sweeps the plan once more, and only that one */
	assert_true(b->arrived_sweep);
	assert_false(vt_migration_precopy_window(the_vm(f->d), the_vm(f->d)->backends, &vs));
	assert_false(b->arrived_sweep);
	for (uint64_t p = 0; p < NPAGES; p++) {
		page_pattern(want, p);
		assert_memory_equal(f->q.map + p * PAGE, want, PAGE);
	}
	close(s);
	spin(50);
}

/* The engine's state after a window (no profiler runs on the test process). */
static void vm_after_a_window(struct vt_vm *vm)
{
	struct vt_backend *b = g_ptr_array_index(vm->backends, 0);

	wait_engine(vm);
	g_mutex_lock(&vm->lock);
	vm->mtm = vt_mtm_new(&(struct vt_range){ b->hva, b->hva + NPAGES * PAGE }, 1, 2 << 20,
			     128 << 10, 2);
	vt_mtm_set_ema(vm->mtm, 0, 0.5);
	vm->stats.windows = 3;
	g_mutex_unlock(&vm->lock);
}

/*
 * vtierd dies during an outgoing migration and a new one takes over: QEMU
 * hands the memory over again (RECONNECT) and says MIGRATION started again.
 * The successor takes the VM as outgoing (STATS says so, promotions held)
 * and answers with the backend's profile, as its predecessor did.
 */
static void test_migration_after_reconnect(void **state)
{
	struct fixture *f = *state;
	const struct vt_tier dram = { .name = "dram", .nodes = { 0 }, .nr_nodes = 1 };
	g_autofree uint8_t *buf = g_malloc(1 << 20);
	uint64_t sbuf[4096 / sizeof(uint64_t)];
	char err[VT_PROFILE_ERR_LEN], msg[128];
	struct vt_migration_stats ms;
	struct vt_handoff_stats st;
	struct vt_profile p;
	struct vt_vm *vm;
	size_t len;
	int s;

	f->d->host.tiers.nr = 1;
	f->d->host.tiers.tier[0] = dram;
	assert_int_equal(hello(f, (uint32_t)getpid(), 0, 1, "mem0", &s, msg), 0);
	vm = the_vm(f->d);
	assert_non_null(vm);
	vm_after_a_window(vm);
	send_migration(s, VTIER_MIGRATION_START);
	assert_true(next_msg(s, VTIER_HANDOFF_PROFILE, buf, 1 << 20) > 0);
	wait_state(vm, VT_MIGRATION_OUTGOING, 0);

	/* the agent dies with the migration under way (QEMU is not told) */
	close(s);
	vt_daemon_free(f->d);
	f->d = daemon_new(f->dir);
	f->d->host.tiers.nr = 1;
	f->d->host.tiers.tier[0] = dram;
	assert_true(vt_daemon_listen_handoff(f->d, f->agent, NULL));
	assert_int_equal(hello(f, (uint32_t)getpid(), VTIER_HELLO_F_RECONNECT, 2, "mem0", &s,
			       msg), 0);
	vm = the_vm(f->d);
	assert_non_null(vm);
	vm_after_a_window(vm);
	/* a successor knows of no migration until QEMU says so */
	st = migration_sent(vm, s, sbuf, sizeof(sbuf),
			    offsetof(struct vtier_handoff_migration_stats, state),
			    VTIER_MIGRATION_STATE_NONE);
	assert_int_equal(st.migration->started, 0);

	send_migration(s, VTIER_MIGRATION_START);
	len = next_msg(s, VTIER_HANDOFF_PROFILE, buf, 1 << 20);
	assert_int_equal(vt_profile_read(buf, len, NPAGES * PAGE, &p, err, sizeof(err)), 0);
	assert_int_equal(p.version, 2);
	assert_int_equal(p.windows, 3);
	assert_int_equal(p.n_chunks, 1);
	wait_state(vm, VT_MIGRATION_OUTGOING, 0);
	st = migration_sent(vm, s, sbuf, sizeof(sbuf),
			    offsetof(struct vtier_handoff_migration_stats, state),
			    VTIER_MIGRATION_STATE_OUTGOING);
	assert_int_equal(st.migration->started, 1);
	assert_int_equal(st.migration->completed + st.migration->failed, 0);
	ms = migration_of(vm, NULL, NULL, 0);
	assert_int_equal(ms.profiles_written, 1);
	assert_int_equal(ms.profile_bytes, len);

	/* and its end ends it */
	send_migration(s, VTIER_MIGRATION_FAILED);
	wait_state(vm, VT_MIGRATION_NONE, 1);
	st = migration_sent(vm, s, sbuf, sizeof(sbuf),
			    offsetof(struct vtier_handoff_migration_stats, failed), 1);
	assert_int_equal(st.migration->state, VTIER_MIGRATION_STATE_NONE);
	close(s);
	spin(50);
}

/* What a flood child did (flood_child). */
struct flood_result {
	unsigned int tries, accepted;
	int first_refusal;
	char first_msg[128];
};

/* In a flood child: connect to @agent, blocking. */
static int child_connect(const char *agent)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	g_strlcpy(sa.sun_path, agent, sizeof(sa.sun_path));
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		if (s >= 0)
			close(s);
		return -1;
	}
	return s;
}

/* In a flood child: the HELLO_REPLY's status on @s (blocking), its message in @msg. */
static int child_reply(int s, char *msg)
{
	uint8_t reply[16 + 136];
	size_t got = 0;

	while (got < sizeof(reply)) {
		ssize_t n = recv(s, reply + got, sizeof(reply) - got, 0);

		if (n <= 0) {
			g_strlcpy(msg, "(closed without a reply)", 128);
			return -ECONNRESET;
		}
		got += (size_t)n;
	}
	g_strlcpy(msg, (const char *)reply + 24, 128);
	return *(int32_t *)(reply + 16);
}

/*
 * A forked process that hands over backends of @size bytes (sparse memfds,
 * no uuid), each refusal halving the size, until @max are accepted or a
 * size below @min would come; it reports on @out, then holds every accepted
 * hand-off until @hold reads EOF. Never returns.
 */
static G_NORETURN void flood_child(const char *agent, uint64_t size, uint64_t min, unsigned int max,
				   int out, int hold)
{
	struct flood_result r = { 0 };
	char id[32], msg[128], c;

	while (r.accepted < max && size >= min) {
		struct fake_qemu_ram q;
		int s, st;

		if (fake_qemu_ram_open(&q, size, true))
			break;
		s = child_connect(agent);
		if (s < 0) {
			fake_qemu_ram_close(&q);
			break;
		}
		g_snprintf(id, sizeof(id), "flood%u", r.tries++);
		hello_send_ram(s, &q, NULL, (uint32_t)getpid(), 0, 1, id, NULL, 0, -1, -1);
		st = child_reply(s, msg);
		/* the agent has its own fds now: this process's mapping is not needed */
		fake_qemu_ram_close(&q);
		if (st == 0) {
			r.accepted++;
			continue;
		}
		close(s);
		if (!r.first_refusal) {
			r.first_refusal = st;
			g_strlcpy(r.first_msg, msg, sizeof(r.first_msg));
		}
		if (st == -ECONNRESET)
			break;
		size = size / 2 / PAGE * PAGE;
	}
	if (write(out, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(1);
	while (read(hold, &c, 1) > 0)
		;
	_exit(0);
}

struct flood {
	pid_t pid;
	int hold;
	struct flood_result r;
};

/* Start a flood child and run the daemon's loop until it has done its worst. */
static void flood_start(struct fixture *f, struct flood *fl, uint64_t size, uint64_t min,
			unsigned int max)
{
	int out[2], hold[2];
	gint64 deadline = g_get_monotonic_time() + 300 * G_USEC_PER_SEC;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out), 0);
	assert_int_equal(pipe2(hold, O_CLOEXEC), 0);
	fl->pid = fork();
	assert_true(fl->pid >= 0);
	if (!fl->pid) {
		close(out[0]);
		close(hold[1]);
		flood_child(f->agent, size, min, max, out[1], hold[0]);
	}
	close(out[1]);
	close(hold[0]);
	fl->hold = hold[1];
	assert_int_equal(fcntl(out[0], F_SETFL, O_NONBLOCK), 0);
	assert_true(recv_all(out[0], &fl->r, sizeof(fl->r), deadline));
	close(out[0]);
	fprintf(stderr, "# flood: %u tries, %u accepted, first refusal %d: %s\n", fl->r.tries,
		fl->r.accepted, fl->r.first_refusal, fl->r.first_msg);
}

static void flood_end(struct fixture *f, struct flood *fl)
{
	int status;

	close(fl->hold);
	assert_int_equal(waitpid(fl->pid, &status, 0), fl->pid);
	/* its hand-offs end, its stores go with it */
	for (int i = 0; i < 200 && g_hash_table_size(f->d->ho.backends) > 0; i++)
		spin(10);
}

/* The victim: its backend handed over, every page evicted to the store, its connection gone. */
static void victim_evicted(struct fixture *f)
{
	g_autofree char *req = g_strdup("{\"v\":1,\"cmd\":\"demote\",\"vm\":\"vm0\","
					"\"set\":[\"tier=lz4\"]}\n");
	g_autofree char *reply = NULL;
	struct vt_backend *b;
	char msg[128];
	int s;

	assert_int_equal(hello(f, (uint32_t)getpid(), 0, 1, "mem0", &s, msg), 0);
	b = g_ptr_array_index(the_vm(f->d)->backends, 0);
	reply = vt_daemon_handle(f->d, req, strlen(req));
	assert_non_null(strstr(reply, "\"queued_bytes\":1048576"));
	for (int i = 0; i < 5000 && vt_backend_backlog(b); i++)
		spin(1);
	spin(50);
	close(s);
	spin(100);
	/* nothing in the memfd: the store holds every page; the store kept for the reconnect */
	assert_true(lseek(f->q.memfd, 0, SEEK_DATA) < 0 && errno == ENXIO);
	assert_int_equal(f->d->ho.orphans->len, 1);
}

/* The victim reconnects: served within a second, every page as it was. */
static void victim_reconnects(struct fixture *f)
{
	gint64 t0 = g_get_monotonic_time();
	char msg[128];
	int s, ret;

	ret = hello(f, (uint32_t)getpid(), VTIER_HELLO_F_RECONNECT, 2, "mem0", &s, msg);
	if (ret)
		fail_msg("the victim's RECONNECT refused: %s", msg);
	if (g_get_monotonic_time() - t0 > G_USEC_PER_SEC)
		fail_msg("the victim's RECONNECT took %" G_GINT64_FORMAT " ms",
			 (g_get_monotonic_time() - t0) / 1000);
	check_pages(f);
	close(s);
	spin(50);
}

/*
 * After a vtierd restart the stores found in the store root are reserved for
 * their reconnects: with the host's bound of backends at 1, a new hand-off
 * (another backend, "mem1") is refused, naming the reserve, while the
 * victim's RECONNECT takes its reservation and gets every page back.
 */
static void test_reserve_after_restart(void **state)
{
	struct fixture *f = *state;
	struct vt_budget_limits l;
	struct fake_qemu_ram q;
	char msg[128];
	int s;

	victim_evicted(f);
	vt_daemon_free(f->d);
	f->d = daemon_new(f->dir);
	vt_budget_limits_default(&l);
	l.host[VT_BOUND_BACKENDS] = 1;
	vt_daemon_set_budget(f->d, &l);
	assert_true(vt_daemon_listen_handoff(f->d, f->agent, NULL));
	assert_int_equal(fake_qemu_ram_open(&q, NPAGES * PAGE, true), 0);
	s = agent_connect(f);
	hello_send_ram(s, &q, uuid, (uint32_t)getpid(), 0, 1, "mem1", NULL, 0, -1, -1);
	assert_int_equal(hello_wait(s, NULL, msg), -EDQUOT);
	assert_non_null(strstr(msg, "host backends would be 2 (1 kept for reconnects), over its "
			       "bound of 1 (--max-backends)"));
	fake_qemu_ram_close(&q);
	victim_reconnects(f);
}

/* An honest VM's first hand-off (another QEMU's backend, here this process's "mem1"): served within a second. */
static void honest_served(struct fixture *f)
{
	struct fake_qemu_ram q;
	gint64 t0;
	char msg[128];
	int s, ret;

	assert_int_equal(fake_qemu_ram_open(&q, NPAGES * PAGE, true), 0);
	t0 = g_get_monotonic_time();
	s = agent_connect(f);
	hello_send_ram(s, &q, uuid, (uint32_t)getpid(), 0, 1, "mem1", NULL, 0, -1, -1);
	ret = hello_wait(s, &s, msg);
	if (ret)
		fail_msg("an honest hand-off refused: %s", msg);
	if (g_get_monotonic_time() - t0 > G_USEC_PER_SEC)
		fail_msg("an honest hand-off took %" G_GINT64_FORMAT " ms",
			 (g_get_monotonic_time() - t0) / 1000);
	close(s);
	spin(50);
	fake_qemu_ram_close(&q);
}

/*
 * A sparse-memfd flood: one process hands over backends of 4 TiB declared
 * (and smaller ones after each refusal, down to 1 MiB), as a process that
 * wants vtierd's address space would. It is refused at this peer's bound of
 * declared bytes with the bound named; while it holds what it got, an honest
 * VM's hand-off and the victim's RECONNECT (every page evicted before) are
 * served within a second, every page as it was.
 */
static void test_sparse_flood(void **state)
{
	struct fixture *f = *state;
	const char *req = "{\"v\":1,\"cmd\":\"stats\",\"vm\":\"vm0\"}\n";
	g_autofree char *reply = NULL;
	char msg[128], want[64];
	struct flood fl;
	int s;

	victim_evicted(f);
	flood_start(f, &fl, 4ull << 40, NPAGES * PAGE, 1000);
	assert_true(fl.r.accepted >= 1);
	assert_int_equal(fl.r.first_refusal, -EDQUOT);
	assert_non_null(strstr(fl.r.first_msg, "declared bytes would be 8.0 TiB, over this "
				"peer's bound of 4.0 TiB (--max-peer-bytes)"));
	honest_served(f);
	victim_reconnects(f);
	/* vtierctl stats counts the refusals per bound */
	assert_int_equal(hello(f, (uint32_t)getpid(), VTIER_HELLO_F_RECONNECT, 3, "mem0", &s, msg), 0);
	reply = vt_daemon_handle(f->d, req, strlen(req));
	assert_non_null(strstr(reply, "\"declared_bytes\":{\"peer_bound\":4398046511104,"
				"\"host_bound\":0,\"held\":"));
	g_snprintf(want, sizeof(want), "\"refused\":%u}", fl.r.tries - fl.r.accepted);
	assert_non_null(strstr(reply, want));
	close(s);
	spin(50);
	flood_end(f, &fl);
}

static unsigned int count_fds(void)
{
	return dir_entries("/proc/self/fd") - 1;	/* the directory's own */
}

/*
 * A remote tier's local copies are a store of their own: the hand-off
 * budget charges its index, blocks and pool file (3 fds, the count
 * test_ctier_store_remote.c sees held) and the address space of a store
 * with the local tier alone.
 */
static void test_local_copy_charge(void **state)
{
	struct vt_ctier_spec specs[2] = {
		{ .name = "far", .codec = VT_CODEC_LZ4, .medium = VT_MEDIUM_REMOTE, .node = -1,
		  .max_stored_pct = 75 },
		{ .name = "near", .codec = VT_CODEC_LZ4, .medium = VT_MEDIUM_NODE,
		  .max_stored_pct = 75 },
	};
	struct vt_remote_spec rs[2] = { 0 };
	struct vt_charge two, local, near;

	(void)state;
	vt_budget_backend_charge(64 << 20, specs, rs, 2, &two);
	g_strlcpy(rs[0].local_copy, "near", sizeof(rs[0].local_copy));
	rs[0].local = specs[1];
	vt_budget_backend_charge(64 << 20, specs, rs, 2, &local);
	vt_budget_backend_charge(64 << 20, &specs[1], NULL, 1, &near);
	assert_int_equal(local.v[VT_BOUND_FDS], two.v[VT_BOUND_FDS] + 3);
	assert_int_equal(local.v[VT_BOUND_VA], two.v[VT_BOUND_VA] + near.v[VT_BOUND_VA]);
	assert_true(near.v[VT_BOUND_VA] >= 64 << 20);
	assert_int_equal(local.v[VT_BOUND_THREADS], two.v[VT_BOUND_THREADS]);
	assert_int_equal(local.v[VT_BOUND_BYTES], two.v[VT_BOUND_BYTES]);
}

static unsigned int count_threads(void)
{
	return dir_entries("/proc/self/task");
}

/*
 * The threads above @base once they settle at @want (5 s at most): a VM's
 * worker starts on its own thread a moment after the attach, and a loaded
 * machine (two unit suites at once) counted before it did.
 */
static unsigned int threads_settled(unsigned int base, unsigned int want)
{
	unsigned int n = count_threads() - base;

	for (unsigned int i = 0; i < 500 && n != want; i++) {
		g_usleep(10 * 1000);
		n = count_threads() - base;
	}
	return n;
}

/*
 * A many-backend flood: one process hands over 1 MiB backends until
 * refused. With vtierd's fds at 1024 it would reach EMFILE after ~120; it
 * is refused at this peer's bound of backends (64) instead, the bound
 * named, and the victim's RECONNECT is served within a second while the
 * flood holds its 64, every page as it was. What a backend is charged is
 * what it holds: the fds and threads vtierd has for it, counted.
 */
static void test_backend_flood(void **state)
{
	struct fixture *f = *state;
	struct rlimit was, low = { 1024, 0 };
	unsigned int fds, threads;
	struct vt_charge c;
	struct flood fl;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
	low.rlim_max = was.rlim_max;
	if (was.rlim_cur < 1024) {
		fprintf(stderr, "# skip: RLIMIT_NOFILE below 1024\n");
		skip();
	}
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	vt_daemon_set_budget(f->d, NULL);	/* its host bound of fds from the limit now */
	victim_evicted(f);
	fds = count_fds();
	threads = count_threads();
	flood_start(f, &fl, NPAGES * PAGE, NPAGES * PAGE, 200);
	vt_budget_backend_charge(NPAGES * PAGE, f->d->host.ctier, f->d->host.remote,
				 f->d->host.nr_ctier, &c);
	fprintf(stderr, "# charged %" G_GUINT64_FORMAT " fds, %" G_GUINT64_FORMAT " thread per "
		"backend; held for the flood: %u fds, %u threads\n", c.v[VT_BOUND_FDS],
		c.v[VT_BOUND_THREADS], count_fds() - fds, count_threads() - threads);
	/*
	 * each backend holds what it is charged; besides, the flood's VM (its
	 * worker: a thread and a few fds) and this test's pipe to the child
	 */
	assert_in_range(count_fds() - fds, 64 * c.v[VT_BOUND_FDS], 64 * c.v[VT_BOUND_FDS] + 8);
	assert_int_equal(threads_settled(threads, 64 * c.v[VT_BOUND_THREADS] + 1),
			 64 * c.v[VT_BOUND_THREADS] + 1);
	assert_int_equal(fl.r.accepted, 64);
	assert_int_equal(fl.r.first_refusal, -EDQUOT);
	assert_non_null(strstr(fl.r.first_msg, "backends would be 65, over this peer's bound of "
				"64 (--max-peer-backends)"));
	victim_reconnects(f);
	flood_end(f, &fl);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
}

/*
 * The VM's status and stats views (its backend's, the hand-off budget's
 * inside), pinned by their shape: member names in order and value types.
 */
static void test_views_pinned(void **state)
{
	struct fixture *f = *state;
	g_autoptr(JsonBuilder) status = json_builder_new();
	g_autoptr(JsonBuilder) stats = json_builder_new();
	g_autofree char *status_shape = NULL, *stats_shape = NULL;
	struct vt_tiers numa = { .nr = 1, .tier[0] = { .name = "dram", .nodes = { 0 },
						      .nr_nodes = 1 } };
	struct vt_vm *vm;
	char msg[128];
	int s;

	assert_int_equal(hello(f, (uint32_t)getpid(), 0, 1, "mem0", &s, msg), 0);
	vm = the_vm(f->d);
	assert_non_null(vm);
	vt_vm_status_to_json(vm, status);
	status_shape = json_pin_shape(status);
	vt_vm_stats_to_json(vm, &numa, stats);
	stats_shape = json_pin_shape(stats);
	close(s);
	assert_true(json_pin_matches("status", status_shape,
		"7c855740165480811c35672a2cd4ecfe035d3c27b45d9ca52a6d3930fcbd3e21"));
	assert_true(json_pin_matches("stats", stats_shape,
		"54f27fecc75e527c392ac7687bef5d088316964a3298db1960b2f160f71092a9"));
}

/*
 * A VM whose profiler cannot start when it is attached (here: the tdp
 * device missing) is not left in "error" for good: its engine tries again
 * every VT_ENGINE_RETRY_MS on the worker (a VM handed over as its migration
 * ends has no second-level page table until a vCPU runs). A start of its
 * own (a policy) takes over and ends the retries.
 */
static void test_engine_start_retried(void **state)
{
	struct fixture *f = *state;
	char *const off[] = { "mode=off" };
	g_autoptr(GError) e = NULL;
	struct vt_vm *vm;
	char msg[128], state_now[32], err_now[256];
	unsigned int tries;
	bool armed;
	int s;

	g_setenv("VTIER_TDP_DEVICE", "/nonexistent/vtier-tdp", TRUE);
	f->d->defaults.mode = VT_MODE_OBSERVE;
	g_strlcpy(f->d->defaults.profiler, "telescope-flex", sizeof(f->d->defaults.profiler));
	assert_int_equal(hello(f, (uint32_t)getpid(), 0, 1, "mem0", &s, msg), 0);
	vm = the_vm(f->d);
	assert_non_null(vm);
	/* the first start failed; two more tries at least, each failing again */
	assert_true(SPIN_UNTIL(({
		g_mutex_lock(&vm->lock);
		tries = vm->engine_retries;
		g_mutex_unlock(&vm->lock);
		tries >= 3;
	}), 5000 + 3 * VT_ENGINE_RETRY_MS));
	g_mutex_lock(&vm->lock);
	g_strlcpy(state_now, vm->state, sizeof(state_now));
	g_strlcpy(err_now, vm->last_error, sizeof(err_now));
	armed = vm->engine_retry_src != NULL;
	g_mutex_unlock(&vm->lock);
	fprintf(stderr, "# after %u tries: state %s, armed %d, last error: %s\n", tries, state_now,
		armed, err_now);
	assert_string_equal(state_now, "error");
	assert_non_null(strstr(err_now, "/nonexistent/vtier-tdp"));
	assert_true(armed);
	/* a policy's start takes over: no more tries */
	assert_true(vt_daemon_set_policy(f->d, vm, off, 1, NULL, &e));
	assert_true(SPIN_UNTIL(({
		bool done;

		g_mutex_lock(&vm->lock);
		done = !strcmp(vm->state, "off");
		g_mutex_unlock(&vm->lock);
		done;
	}), 5000));
	g_mutex_lock(&vm->lock);
	armed = vm->engine_retry_src != NULL;
	tries = vm->engine_retries;
	g_mutex_unlock(&vm->lock);
	assert_false(armed);
	assert_int_equal(tries, 0);
	g_unsetenv("VTIER_TDP_DEVICE");
	close(s);
	spin(50);
}

/* The VM's engine starts so far, and whether its policy's budget is @budget. */
static uint64_t engine_starts(struct vt_vm *vm, uint64_t budget, bool *has_budget)
{
	uint64_t n;

	g_mutex_lock(&vm->lock);
	n = vm->engine_starts;
	*has_budget = vm->policy.budget_bytes == budget;
	g_mutex_unlock(&vm->lock);
	return n;
}

/*
 * A key the engine reads each window is taken without a restart (the
 * profiler keeps its state); a key it reads only when it starts restarts it.
 */
static void test_policy_live_keys(void **state)
{
	struct fixture *f = *state;
	char *const live[] = { "budget=64MiB", "placement=tco", "hot_threshold=0.2" };
	char *const restart[] = { "budget=32MiB", "window_ms=500" };
	g_autoptr(GError) e = NULL;
	struct vt_vm *vm;
	uint64_t starts, now;
	char msg[128];
	bool has;
	int s;

	assert_int_equal(hello(f, (uint32_t)getpid(), 0, 1, "mem0", &s, msg), 0);
	vm = the_vm(f->d);
	assert_non_null(vm);
	/* the worker starts the engine after the attach */
	assert_true(SPIN_UNTIL(engine_starts(vm, 0, &has) >= 1, 5000));
	spin(100);
	starts = engine_starts(vm, 0, &has);
	assert_true(vt_daemon_set_policy(f->d, vm, live, G_N_ELEMENTS(live), NULL, &e));
	assert_true(SPIN_UNTIL((engine_starts(vm, 64ULL << 20, &has), has), 5000));
	spin(50);
	now = engine_starts(vm, 64ULL << 20, &has);
	assert_int_equal(now, starts);
	g_mutex_lock(&vm->lock);
	assert_int_equal(vm->policy.placement, VT_PLACEMENT_TCO);
	assert_string_equal(vm->policy_refused, "");
	g_mutex_unlock(&vm->lock);
	/* with a key that is not live among them, the engine restarts once */
	assert_true(vt_daemon_set_policy(f->d, vm, restart, G_N_ELEMENTS(restart), NULL, &e));
	assert_true(SPIN_UNTIL((engine_starts(vm, 32ULL << 20, &has), has), 5000));
	spin(50);
	now = engine_starts(vm, 32ULL << 20, &has);
	assert_int_equal(now, starts + 1);
	close(s);
	spin(50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_price),
		cmocka_unit_test(test_local_copy_charge),
		cmocka_unit_test_setup_teardown(test_pid_is_the_kernels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_takeover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect_gets_its_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect_after_incoming, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect_without_store, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_during_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_carry_report, setup, teardown),
		cmocka_unit_test_setup_teardown(test_views_pinned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_start_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_policy_live_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migration_source, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migration_no_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_map_handoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_map_handoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migration_incoming_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_incoming_bulk_placement, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prepared_placement, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prepare_one_set_per_memfd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_early_placement, setup, teardown),
		cmocka_unit_test(test_config),
		cmocka_unit_test_setup_teardown(test_migration_after_reconnect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sparse_flood, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backend_flood, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reserve_after_restart, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
