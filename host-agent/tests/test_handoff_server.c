// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the hand-off socket server (host-agent/iface/handoff_server.c),
 * with this test playing QEMU on the other end of a real unix socket: HELLO
 * with fds accepted or refused, POLICY answered with its seq, STATS sent,
 * malformed and out-of-order input closing the connection, and a second
 * connection (QEMU reconnecting) getting a fresh HELLO.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "handoff_server.h"

struct agent {
	struct vt_handoff_server *srv;
	GMainContext *ctx;
	char path[108];
	char dir[64];
	int refuse;		/* errno to refuse HELLOs with, 0 to accept */
	int hellos;
	int closed;
	char closed_why[128];
	char backend_id[VTIER_HANDOFF_ID_LEN];
	uint64_t generation;
	int memfd;
	int uffd;
	int policies;
	uint32_t policy_mode;
	int migrations[4];
	int ranges_msgs;
	uint32_t n_ranges;
	uint64_t first_gpa;
	struct vt_handoff_conn *conn;
};

static int on_hello(struct vt_handoff_conn *conn, const struct vt_handoff_hello *hello,
		    int memfd, int uffd, char *msg, void *opaque)
{
	struct agent *a = opaque;

	a->hellos++;
	g_strlcpy(a->backend_id, hello->fixed->backend_id, sizeof(a->backend_id));
	a->generation = hello->fixed->generation;
	if (a->memfd >= 0)
		close(a->memfd);
	if (a->uffd >= 0)
		close(a->uffd);
	a->memfd = memfd;
	a->uffd = uffd;
	if (a->refuse) {
		snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN, "no room for %s", hello->fixed->backend_id);
		return -a->refuse;
	}
	a->conn = conn;
	return 0;
}

static int on_policy(struct vt_handoff_conn *conn, const struct vtier_handoff_policy *policy,
		     char *msg, void *opaque)
{
	struct agent *a = opaque;

	(void)conn;
	a->policies++;
	a->policy_mode = policy->mode;
	if (policy->mode == VTIER_POLICY_MODE_OFF) {
		strcpy(msg, "mode off not supported here");
		return -EOPNOTSUPP;
	}
	return 0;
}

static void on_migration(struct vt_handoff_conn *conn, enum vtier_migration_event event,
			 void *opaque)
{
	struct agent *a = opaque;

	(void)conn;
	a->migrations[event]++;
}

static void on_ranges(struct vt_handoff_conn *conn, const struct vtier_handoff_range *ranges,
		      uint32_t n_ranges, void *opaque)
{
	struct agent *a = opaque;

	(void)conn;
	a->ranges_msgs++;
	a->n_ranges = n_ranges;
	a->first_gpa = n_ranges ? ranges[0].gpa : 0;
}

static void on_closed(struct vt_handoff_conn *conn, const char *why, void *opaque)
{
	struct agent *a = opaque;

	a->closed++;
	g_strlcpy(a->closed_why, why, sizeof(a->closed_why));
	if (a->conn == conn)
		a->conn = NULL;
}

static const struct vt_handoff_ops ops = {
	.hello = on_hello,
	.policy = on_policy,
	.migration = on_migration,
	.ranges = on_ranges,
	.closed = on_closed,
};

static int setup(void **state)
{
	struct agent *a = g_new0(struct agent, 1);

	a->memfd = a->uffd = -1;
	strcpy(a->dir, "/tmp/test-handoff-XXXXXX");
	assert_non_null(mkdtemp(a->dir));
	snprintf(a->path, sizeof(a->path), "%s/agent.sock", a->dir);
	a->ctx = g_main_context_new();
	assert_int_equal(vt_handoff_server_new(a->path, a->ctx, &ops, a, &a->srv), 0);
	*state = a;
	return 0;
}

static int teardown(void **state)
{
	struct agent *a = *state;

	vt_handoff_server_free(a->srv);
	assert_int_equal(access(a->path, F_OK), -1);	/* socket unlinked */
	rmdir(a->dir);
	if (a->memfd >= 0)
		close(a->memfd);
	if (a->uffd >= 0)
		close(a->uffd);
	g_main_context_unref(a->ctx);
	g_free(a);
	return 0;
}

static void spin(struct agent *a, int iterations)
{
	for (int i = 0; i < iterations; i++) {
		while (g_main_context_iteration(a->ctx, FALSE))
			;
		g_usleep(1000);
	}
}

static int qemu_connect(struct agent *a)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strcpy(addr.sun_path, a->path);
	assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	return fd;
}

static void qemu_send(int fd, uint16_t type, uint32_t seq, const void *payload, size_t size,
		      const int *fds, int nfds)
{
	struct vtier_handoff_hdr hdr;
	struct iovec iov[2] = { { &hdr, sizeof(hdr) }, { (void *)payload, size } };
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} control;
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	vt_handoff_hdr_init(&hdr, type, seq, size);
	if (nfds) {
		struct cmsghdr *cm;

		mh.msg_control = control.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	assert_int_equal(sendmsg(fd, &mh, MSG_NOSIGNAL), (ssize_t)(sizeof(hdr) + size));
}

/* Receive one message while the agent's loop runs; false on EOF. */
static bool qemu_recv(struct agent *a, int fd, struct vtier_handoff_hdr *hdr, void *payload,
		      size_t max)
{
	uint8_t buf[4096];
	size_t got = 0;

	for (int i = 0; i < 2000; i++) {
		ssize_t n;

		spin(a, 1);
		n = recv(fd, buf + got, sizeof(buf) - got, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return false;
		if (n < 0) {
			assert_int_equal(errno, EAGAIN);
			continue;
		}
		got += n;
		if (got >= sizeof(*hdr)) {
			memcpy(hdr, buf, sizeof(*hdr));
			if (got >= sizeof(*hdr) + hdr->size) {
				assert_true(hdr->size <= max);
				memcpy(payload, buf + sizeof(*hdr), hdr->size);
				return true;
			}
		}
	}
	fail_msg("no message from the agent within 2 s");
	return false;
}

static bool qemu_sees_eof(struct agent *a, int fd)
{
	struct vtier_handoff_hdr hdr;
	uint8_t payload[512];

	return !qemu_recv(a, fd, &hdr, payload, sizeof(payload));
}

static void send_hello(int fd, const char *id, uint64_t generation)
{
	struct vtier_handoff_hello h = {
		.flags = VTIER_HELLO_F_WP | (generation > 1 ? VTIER_HELLO_F_RECONNECT : 0),
		.size_bytes = 1 << 20,
		.page_size = 4096,
		.hva = 0x7f0000000000ull,
		.generation = generation,
	};
	int fds[2];

	g_strlcpy(h.backend_id, id, sizeof(h.backend_id));
	fds[0] = memfd_create("mem", MFD_CLOEXEC);
	fds[1] = memfd_create("not-a-uffd", MFD_CLOEXEC);
	qemu_send(fd, VTIER_HANDOFF_HELLO, 1, &h, sizeof(h), fds, 2);
	close(fds[0]);
	close(fds[1]);
}

static void test_hello_accepted(void **state)
{
	struct agent *a = *state;
	struct vtier_handoff_hdr hdr;
	struct vtier_handoff_hello_reply reply;
	struct stat st;
	int fd = qemu_connect(a);

	send_hello(fd, "mem0", 1);
	assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
	assert_int_equal(hdr.type, VTIER_HANDOFF_HELLO_REPLY);
	assert_int_equal(hdr.seq, 1);
	assert_int_equal(reply.status, 0);
	assert_int_equal(a->hellos, 1);
	assert_string_equal(a->backend_id, "mem0");
	assert_string_equal(vt_handoff_conn_backend_id(a->conn), "mem0");
	/* The fds arrived and now belong to the agent. */
	assert_int_equal(fstat(a->memfd, &st), 0);
	assert_int_equal(fstat(a->uffd, &st), 0);

	close(fd);
	spin(a, 20);
	assert_int_equal(a->closed, 1);
	assert_non_null(strstr(a->closed_why, "closed"));
}

static void test_hello_refused(void **state)
{
	struct agent *a = *state;
	struct vtier_handoff_hdr hdr;
	struct vtier_handoff_hello_reply reply;
	int fd = qemu_connect(a);

	a->refuse = ENOSPC;
	send_hello(fd, "mem1", 1);
	assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
	assert_int_equal(reply.status, -ENOSPC);
	assert_string_equal(reply.message, "no room for mem1");
	assert_true(qemu_sees_eof(a, fd));
	assert_int_equal(a->closed, 0);		/* never accepted */
	close(fd);
}

static void test_policy_and_stats(void **state)
{
	struct agent *a = *state;
	struct vtier_handoff_hdr hdr;
	uint8_t buf[512];
	struct vtier_handoff_policy policy = { .mode = VTIER_POLICY_MODE_AUTO };
	struct vtier_handoff_migration mig = { .event = VTIER_MIGRATION_START };
	struct vtier_handoff_stats stats = { .faults_served = 42, .n_tiers = 2 };
	struct vtier_handoff_tier tiers[2] = { { "dram", 1 << 20 }, { "lz4", 1 << 12 } };
	struct vtier_handoff_tier_v2 tiers_v2[2] = {
		{ .name = "dram", .resident_bytes = 1 << 20, .stored_bytes = 1 << 20,
		  .compressed_bytes = 1 << 20 },
		{ .name = "lz4", .resident_bytes = 1 << 12, .stored_bytes = 1 << 12,
		  .compressed_bytes = 1 << 10, .pages_evicted = 9, .pages_faulted_back = 8,
		  .fault_latency_p50_ns = 7000, .fault_latency_p99_ns = 21000 },
	};
	const struct vtier_handoff_policy_reply *reply = (const void *)buf;
	int fd = qemu_connect(a);

	send_hello(fd, "mem0", 1);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));

	qemu_send(fd, VTIER_HANDOFF_POLICY, 77, &policy, sizeof(policy), NULL, 0);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	assert_int_equal(hdr.type, VTIER_HANDOFF_POLICY_REPLY);
	assert_int_equal(hdr.seq, 77);
	assert_int_equal(reply->status, 0);
	assert_int_equal(a->policy_mode, VTIER_POLICY_MODE_AUTO);

	policy.mode = VTIER_POLICY_MODE_OFF;
	qemu_send(fd, VTIER_HANDOFF_POLICY, 78, &policy, sizeof(policy), NULL, 0);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	assert_int_equal(hdr.seq, 78);
	assert_int_equal(reply->status, -EOPNOTSUPP);
	assert_string_equal(reply->message, "mode off not supported here");

	qemu_send(fd, VTIER_HANDOFF_MIGRATION, 79, &mig, sizeof(mig), NULL, 0);
	spin(a, 20);
	assert_int_equal(a->migrations[VTIER_MIGRATION_START], 1);

	assert_int_equal(vt_handoff_conn_send_stats(a->conn, &stats, tiers), 0);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	assert_int_equal(hdr.type, VTIER_HANDOFF_STATS);
	assert_int_equal(hdr.size, sizeof(stats) + sizeof(tiers));
	assert_int_equal(((struct vtier_handoff_stats *)buf)->faults_served, 42);
	assert_string_equal(((struct vtier_handoff_tier *)(buf + sizeof(stats)))[1].name, "lz4");

	/* Per-tier figures: the flag is set by the sender, entries are v2. */
	stats.faults_served = 43;
	assert_int_equal(vt_handoff_conn_send_stats_v2(a->conn, &stats, tiers_v2), 0);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	assert_int_equal(hdr.type, VTIER_HANDOFF_STATS);
	assert_int_equal(hdr.size, sizeof(stats) + sizeof(tiers_v2));
	assert_int_equal(((struct vtier_handoff_stats *)buf)->flags, VTIER_STATS_F_TIER_V2);
	assert_int_equal(((struct vtier_handoff_stats *)buf)->faults_served, 43);
	assert_memory_equal(buf + sizeof(stats), tiers_v2, sizeof(tiers_v2));

	/* Reports QEMU would refuse are not sent. */
	tiers_v2[1].name[0] = '\0';
	assert_int_equal(vt_handoff_conn_send_stats_v2(a->conn, &stats, tiers_v2), -EINVAL);
	tiers[0].name[0] = '\0';
	assert_int_equal(vt_handoff_conn_send_stats(a->conn, &stats, tiers), -EINVAL);
	stats.n_tiers = VTIER_HANDOFF_TIERS_MAX + 1;
	assert_int_equal(vt_handoff_conn_send_stats(a->conn, &stats, tiers), -EINVAL);
	assert_int_equal(vt_handoff_conn_send_profile(a->conn, buf, 0), -EMSGSIZE);
	assert_int_equal(vt_handoff_conn_send_profile(a->conn, "hot", 3), 0);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	assert_int_equal(hdr.type, VTIER_HANDOFF_PROFILE);
	assert_int_equal(hdr.size, 3);
	close(fd);
	spin(a, 20);
}

/* Ways QEMU (or something pretending to be it) can break the protocol. */
static void test_bad_input_closes(void **state)
{
	struct agent *a = *state;
	struct vtier_handoff_policy policy = { .mode = VTIER_POLICY_MODE_AUTO };
	struct vtier_handoff_hdr hdr;
	uint8_t buf[512];
	int fd, fds[3];

	/* Garbage instead of a header. */
	fd = qemu_connect(a);
	assert_int_equal(write(fd, "GET / HTTP/1.0\r\n\r\n", 18), 18);
	assert_true(qemu_sees_eof(a, fd));
	close(fd);

	/* A POLICY before any HELLO. */
	fd = qemu_connect(a);
	qemu_send(fd, VTIER_HANDOFF_POLICY, 1, &policy, sizeof(policy), NULL, 0);
	assert_true(qemu_sees_eof(a, fd));
	close(fd);

	/* A HELLO without its fds. */
	fd = qemu_connect(a);
	{
		struct vtier_handoff_hello h = {
			.flags = VTIER_HELLO_F_WP, .size_bytes = 4096, .page_size = 4096,
			.generation = 1, .backend_id = "m",
		};
		qemu_send(fd, VTIER_HANDOFF_HELLO, 1, &h, sizeof(h), NULL, 0);
	}
	assert_true(qemu_sees_eof(a, fd));
	close(fd);

	/* Fds on a message that carries none: closed, and the fds not leaked. */
	fd = qemu_connect(a);
	send_hello(fd, "mem0", 1);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	for (int i = 0; i < 3; i++)
		fds[i] = memfd_create("extra", MFD_CLOEXEC);
	qemu_send(fd, VTIER_HANDOFF_POLICY, 2, &policy, sizeof(policy), fds, 3);
	assert_true(qemu_sees_eof(a, fd));
	assert_non_null(strstr(a->closed_why, "fds"));
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	close(fd);

	/* A header announcing a huge payload: refused before any allocation. */
	fd = qemu_connect(a);
	vt_handoff_hdr_init(&hdr, VTIER_HANDOFF_HELLO, 1, 0xfffffff0u);
	assert_int_equal(write(fd, &hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	assert_true(qemu_sees_eof(a, fd));
	close(fd);

	/* Half a message, then QEMU dies. */
	fd = qemu_connect(a);
	vt_handoff_hdr_init(&hdr, VTIER_HANDOFF_POLICY, 1, sizeof(policy));
	assert_int_equal(write(fd, &hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	assert_int_equal(write(fd, &policy, 10), 10);
	spin(a, 10);
	close(fd);
	spin(a, 20);
	assert_int_equal(a->hellos, 1);
	assert_int_equal(a->closed, 1);
}

static void test_ranges_update(void **state)
{
	struct agent *a = *state;
	struct vtier_handoff_hdr hdr;
	uint8_t buf[512];
	struct {
		struct vtier_handoff_ranges h;
		struct vtier_handoff_range r;
	} m = {
		.h = { .n_ranges = 1 },
		.r = { .gpa = 4ull << 30, .offset = 0, .size = 1 << 20 },
	};
	int fd = qemu_connect(a);

	send_hello(fd, "mem0", 1);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	qemu_send(fd, VTIER_HANDOFF_RANGES, 2, &m, sizeof(m), NULL, 0);
	spin(a, 20);
	assert_int_equal(a->ranges_msgs, 1);
	assert_int_equal(a->n_ranges, 1);
	assert_int_equal(a->first_gpa, 4ull << 30);
	/* A range beyond the 1 MiB backend of the HELLO closes the connection. */
	m.r.offset = 4096;
	qemu_send(fd, VTIER_HANDOFF_RANGES, 3, &m, sizeof(m), NULL, 0);
	assert_true(qemu_sees_eof(a, fd));
	assert_int_equal(a->ranges_msgs, 1);
	assert_non_null(strstr(a->closed_why, "outside the backend"));
	close(fd);
}

static void test_reconnect_is_a_new_hello(void **state)
{
	struct agent *a = *state;
	struct vtier_handoff_hdr hdr;
	uint8_t buf[512];
	int fd = qemu_connect(a);

	send_hello(fd, "mem0", 1);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	close(fd);
	spin(a, 20);
	fd = qemu_connect(a);
	send_hello(fd, "mem0", 2);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	assert_int_equal(((struct vtier_handoff_hello_reply *)buf)->status, 0);
	assert_int_equal(a->hellos, 2);
	assert_int_equal(a->generation, 2);
	/* A second HELLO on the same connection is a protocol error. */
	send_hello(fd, "mem0", 3);
	assert_true(qemu_sees_eof(a, fd));
	close(fd);
}

static void test_stale_socket_replaced(void **state)
{
	struct agent *a = *state;
	struct vt_handoff_server *srv2;
	char file[128];
	int fd;

	/* An agent restarted after kill -9 finds its old socket file. */
	vt_handoff_server_free(a->srv);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	{
		struct sockaddr_un addr = { .sun_family = AF_UNIX };

		strcpy(addr.sun_path, a->path);
		assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	}
	close(fd);
	assert_int_equal(vt_handoff_server_new(a->path, a->ctx, &ops, a, &a->srv), 0);
	/* But a regular file is never removed. */
	snprintf(file, sizeof(file), "%s/file", a->dir);
	fd = open(file, O_CREAT | O_WRONLY, 0600);
	close(fd);
	assert_int_equal(vt_handoff_server_new(file, a->ctx, &ops, a, &srv2), -EEXIST);
	unlink(file);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hello_accepted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hello_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_policy_and_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_input_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ranges_update, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect_is_a_new_hello, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_socket_replaced, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
