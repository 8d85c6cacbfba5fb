// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the hand-off socket server (host-agent/iface/handoff_server.h),
 * with this test playing QEMU on the other end of a real unix socket: HELLO
 * with fds accepted or refused, POLICY answered with its seq, STATS sent,
 * malformed and out-of-order input closing the connection, and a second
 * connection (QEMU reconnecting) getting a fresh HELLO. Hostile peers: a
 * HELLO whose pid, fds, sizes or mapping lie; a QEMU that never reads;
 * many partial HELLOs; accept() out of fds; floods from one process (held
 * PREPAREs, no-HELLO connections reopened, the agent at its fd limit) while
 * other processes (forked children) hand over. QEMU's memory is a real memfd
 * mapped here with a real userfaultfd registered on it (skip without
 * userfaultfd).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/userfaultfd.h>

#include <cmocka.h>
#include <glib.h>

#include "emfile_child.h"
#include "handoff_peer.h"
#include "handoff_server.h"
#include "map_memfd.h"
#include "proc_self.h"

#define MEM_SIZE (1u << 20)

struct agent {
	struct vt_handoff_server *srv;
	GMainContext *ctx;
	char path[108];
	char dir[64];
	int refuse;		/* errno to refuse HELLOs with, 0 to accept */
	bool defer;		/* answer HELLOs later (VT_HANDOFF_HELLO_PENDING) */
	int hellos;
	int closed;
	char closed_why[128];
	char backend_id[VTIER_HANDOFF_ID_LEN];
	uint64_t generation;
	int memfd;
	int uffd;
	int maps[2];		/* the last HELLO's zero and send maps, taken; -1 */
	int policies;
	uint32_t policy_mode;
	int migrations[VTIER_MIGRATION_SEND_END + 1];
	int ranges_msgs;
	uint32_t n_ranges;
	uint64_t first_gpa;
	struct vt_handoff_conn *conn;
	int dropped;
	char dropped_why[128];
	int prepares;
	int prep_memfd;		/* the last PREPARE's */
	uint32_t prep_flags;
	bool want_early;	/* take QEMU's offer of an early hand-off */
	GPtrArray *mems;	/* struct qemu_mem: QEMU's memory, unmapped at teardown */
};

/* One memory backend as QEMU holds it: memfd, shared mapping, registered uffd. */
struct qemu_mem {
	int memfd;
	int uffd;
	void *map;
	size_t size;
};

static int new_uffd(void)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_MISSING_SHMEM | UFFD_FEATURE_WP_HUGETLBFS_SHMEM,
	};
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (uffd >= 0 && ioctl(uffd, UFFDIO_API, &api)) {
		close(uffd);
		return -1;
	}
	return uffd;
}

/* Map a new @size memfd and register a new userfaultfd on it (if @reg). */
static struct qemu_mem *qemu_mem_new(struct agent *a, size_t size, bool reg)
{
	struct qemu_mem *mp = g_new0(struct qemu_mem, 1), m = { .size = size };
	struct uffdio_register r;

	m.memfd = memfd_create("qemu-ram", MFD_CLOEXEC);
	assert_true(m.memfd >= 0);
	assert_int_equal(ftruncate(m.memfd, (off_t)size), 0);
	m.map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, m.memfd, 0);
	assert_true(m.map != MAP_FAILED);
	m.uffd = new_uffd();
	assert_true(m.uffd >= 0);
	if (reg) {
		r = (struct uffdio_register) {
			.range = { (uintptr_t)m.map, size },
			.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
		};
		assert_int_equal(ioctl(m.uffd, UFFDIO_REGISTER, &r), 0);
	}
	*mp = m;
	g_ptr_array_add(a->mems, mp);
	return mp;
}

static void on_dropped(struct vt_handoff_conn *conn, const char *why, void *opaque)
{
	struct agent *a = opaque;

	(void)conn;
	a->dropped++;
	g_strlcpy(a->dropped_why, why, sizeof(a->dropped_why));
}

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
	for (unsigned int i = 0; i < 2; i++) {
		if (a->maps[i] >= 0)
			close(a->maps[i]);
		a->maps[i] = vt_handoff_conn_take_map(conn, VTIER_HANDOFF_FD_ZERO_MAP + i);
	}
	if (a->refuse) {
		snprintf(msg, VTIER_HANDOFF_MESSAGE_LEN, "no room for %s", hello->fixed->backend_id);
		return -a->refuse;
	}
	a->conn = conn;
	return a->defer ? VT_HANDOFF_HELLO_PENDING : 0;
}

static int on_policy(struct vt_handoff_conn *conn, const struct vt_handoff_policy *policy,
		     char *msg, void *opaque)
{
	struct agent *a = opaque;

	(void)conn;
	a->policies++;
	a->policy_mode = policy->fixed->mode;
	if (policy->fixed->mode == VTIER_POLICY_MODE_OFF) {
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

static bool on_prepare(struct vt_handoff_conn *conn, const struct vt_handoff_hello *hello,
		       int memfd, void *opaque)
{
	struct agent *a = opaque;

	(void)conn;
	a->prepares++;
	a->prep_flags = hello->fixed->flags;
	if (a->prep_memfd >= 0)
		close(a->prep_memfd);
	a->prep_memfd = memfd;
	return a->want_early;
}

static const struct vt_handoff_ops ops = {
	.hello = on_hello,
	.prepare = on_prepare,
	.policy = on_policy,
	.migration = on_migration,
	.ranges = on_ranges,
	.closed = on_closed,
	.dropped = on_dropped,
};

static int setup(void **state)
{
	struct agent *a;
	int uffd = new_uffd();

	if (uffd < 0) {
		fprintf(stderr, "# skip: no userfaultfd with shmem missing + write-protect: %s\n",
			strerror(errno));
		skip();
	}
	close(uffd);
	a = g_new0(struct agent, 1);
	a->mems = g_ptr_array_new_with_free_func(g_free);
	a->memfd = a->uffd = a->prep_memfd = a->maps[0] = a->maps[1] = -1;
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
	if (a->prep_memfd >= 0)
		close(a->prep_memfd);
	for (unsigned int i = 0; i < 2; i++)
		if (a->maps[i] >= 0)
			close(a->maps[i]);
	for (unsigned int i = 0; i < a->mems->len; i++) {
		struct qemu_mem *m = a->mems->pdata[i];

		munmap(m->map, m->size);
		close(m->memfd);
		close(m->uffd);
	}
	g_ptr_array_free(a->mems, TRUE);
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

/* One message with its fds; false when sendmsg() did not take it whole. */
static bool send_msg(int fd, uint16_t type, uint32_t seq, const void *payload, size_t size,
		     const int *fds, int nfds)
{
	struct vtier_handoff_hdr hdr;
	struct iovec iov[2] = { { &hdr, sizeof(hdr) }, { (void *)payload, size } };
	union {
		char buf[CMSG_SPACE(sizeof(int) * 6)];
		struct cmsghdr align;
	} control;
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	assert_true(nfds <= 6);
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
	return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)(sizeof(hdr) + size);
}

static void qemu_send(int fd, uint16_t type, uint32_t seq, const void *payload, size_t size,
		      const int *fds, int nfds)
{
	if (!send_msg(fd, type, seq, payload, size, fds, nfds))
		fail_msg("sendmsg: %s", strerror(errno));
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

/* A truthful HELLO for @m: this process is QEMU. */
static struct vtier_handoff_hello hello_for(const struct qemu_mem *m, const char *id,
					    uint64_t generation)
{
	struct vtier_handoff_hello h = {
		.flags = VTIER_HELLO_F_WP | (generation > 1 ? VTIER_HELLO_F_RECONNECT : 0),
		.size_bytes = m->size,
		.page_size = 4096,
		.hva = (uintptr_t)m->map,
		.generation = generation,
		.qemu_pid = (uint32_t)getpid(),
	};

	g_strlcpy(h.backend_id, id, sizeof(h.backend_id));
	return h;
}

static void send_hello_fds(int fd, const struct vtier_handoff_hello *h, int memfd, int uffd)
{
	int fds[2] = { memfd, uffd };

	qemu_send(fd, VTIER_HANDOFF_HELLO, 1, h, sizeof(*h), fds, 2);
}

static void send_hello(struct agent *a, int fd, const char *id, uint64_t generation)
{
	struct qemu_mem *m = qemu_mem_new(a, MEM_SIZE, true);
	struct vtier_handoff_hello h = hello_for(m, id, generation);

	send_hello_fds(fd, &h, m->memfd, m->uffd);
}

static void test_hello_accepted(void **state)
{
	struct agent *a = *state;
	struct vtier_handoff_hdr hdr;
	struct vtier_handoff_hello_reply reply;
	struct stat st;
	int fd = qemu_connect(a);

	send_hello(a, fd, "mem0", 1);
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

/* The destination's PREPARE for @m (the memfd alone, INCOMING), as QEMU sends it. */
static struct vtier_handoff_hello prepare_for(const struct qemu_mem *m, const char *id)
{
	struct vtier_handoff_hello h = hello_for(m, id, 1);

	h.flags = VTIER_HELLO_F_PREPARE | VTIER_HELLO_F_INCOMING;
	h.hva = 0;
	return h;
}

static void send_prepare(int fd, const struct qemu_mem *m, const char *id, bool lie)
{
	struct vtier_handoff_hello h = prepare_for(m, id);

	if (lie)
		h.qemu_pid = (uint32_t)getppid();
	qemu_send(fd, VTIER_HANDOFF_HELLO, 1, &h, sizeof(h), &m->memfd, 1);
}

/*
 * A PREPARE, then the HELLO proper long after the HELLO deadline: the
 * memfd to ops->prepare, no reply, no deadline; the HELLO accepted on the
 * same connection. A second PREPARE, a PREPARE after the HELLO, a HELLO of
 * another backend after a PREPARE, or a PREPARE whose pid lies close the
 * connection; a connection closed after its PREPARE is dropped (ops->dropped).
 */
static void test_prepare_then_hello(void **state)
{
	struct agent *a = *state;
	struct vt_handoff_limits l;
	struct qemu_mem *m = qemu_mem_new(a, MEM_SIZE, false);
	struct vtier_handoff_hello h = hello_for(m, "mem0", 1);
	struct vtier_handoff_hello_reply reply;
	struct vtier_handoff_hdr hdr;
	struct stat st1, st2;
	struct uffdio_register r = {
		.range = { (uintptr_t)m->map, m->size },
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};
	int fd;

	vt_handoff_limits_default(&l);
	l.hello_timeout_ms = 100;
	vt_handoff_server_set_limits(a->srv, &l);
	fd = qemu_connect(a);
	send_prepare(fd, m, "mem0", false);
	spin(a, 300);		/* three HELLO deadlines */
	assert_int_equal(a->prepares, 1);
	assert_int_equal(a->prep_flags, VTIER_HELLO_F_PREPARE | VTIER_HELLO_F_INCOMING);
	assert_int_equal(a->dropped, 0);
	assert_int_equal(fstat(a->prep_memfd, &st1), 0);
	assert_int_equal(fstat(m->memfd, &st2), 0);
	assert_true(st1.st_ino == st2.st_ino && st1.st_dev == st2.st_dev);
	/* the guest runs: QEMU registers the uffd and sends the HELLO proper */
	assert_int_equal(ioctl(m->uffd, UFFDIO_REGISTER, &r), 0);
	h.flags |= VTIER_HELLO_F_INCOMING;
	send_hello_fds(fd, &h, m->memfd, m->uffd);
	assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
	assert_int_equal(hdr.type, VTIER_HANDOFF_HELLO_REPLY);
	assert_int_equal(reply.status, 0);
	assert_int_equal(a->hellos, 1);
	/* a PREPARE after the HELLO */
	send_prepare(fd, m, "mem0", false);
	assert_true(qemu_sees_eof(a, fd));
	assert_int_equal(a->prepares, 1);
	assert_int_equal(a->closed, 1);
	close(fd);

	/* a second PREPARE */
	fd = qemu_connect(a);
	send_prepare(fd, m, "mem0", false);
	send_prepare(fd, m, "mem0", false);
	assert_true(qemu_sees_eof(a, fd));
	assert_int_equal(a->prepares, 2);
	assert_int_equal(a->dropped, 1);
	assert_non_null(strstr(a->dropped_why, "PREPARE"));
	close(fd);
	/* a HELLO of another backend after the PREPARE */
	fd = qemu_connect(a);
	send_prepare(fd, m, "mem0", false);
	g_strlcpy(h.backend_id, "mem1", sizeof(h.backend_id));
	send_hello_fds(fd, &h, m->memfd, m->uffd);
	assert_true(qemu_sees_eof(a, fd));
	assert_int_equal(a->prepares, 3);
	assert_int_equal(a->hellos, 1);
	assert_int_equal(a->dropped, 2);
	assert_non_null(strstr(a->dropped_why, "another backend"));
	close(fd);
	/* a PREPARE that lies about its pid: refused by the kernel's word, nothing prepared */
	fd = qemu_connect(a);
	send_prepare(fd, m, "mem0", true);
	assert_true(qemu_sees_eof(a, fd));
	assert_int_equal(a->prepares, 3);
	assert_int_equal(a->dropped, 3);
	assert_non_null(strstr(a->dropped_why, "PREPARE refused"));
	close(fd);
	/* QEMU goes after its PREPARE: dropped */
	fd = qemu_connect(a);
	send_prepare(fd, m, "mem0", false);
	spin(a, 20);
	close(fd);
	spin(a, 50);
	assert_int_equal(a->prepares, 4);
	assert_int_equal(a->dropped, 4);
}

/*
 * The early hand-off: a PREPARE offering it (EARLY) to an agent that takes
 * it is answered with a HELLO_REPLY (status 0, flag EARLY, the PREPARE's
 * seq); the HELLO proper with PRECOPY follows and is answered as any, then
 * MIGRATION ARRIVED reaches ops->migration. No offer, or an agent that does
 * not take it: no reply to the PREPARE (the first reply is the HELLO's).
 */
static void test_prepare_early(void **state)
{
	struct agent *a = *state;
	struct qemu_mem *m = qemu_mem_new(a, MEM_SIZE, false);
	struct vtier_handoff_hello h = hello_for(m, "mem0", 1);
	struct vtier_handoff_hello p = hello_for(m, "mem0", 1);
	struct vtier_handoff_migration mig = { .event = VTIER_MIGRATION_ARRIVED };
	struct vtier_handoff_hello_reply reply;
	struct vtier_handoff_hdr hdr;
	struct uffdio_register r = {
		.range = { (uintptr_t)m->map, m->size },
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};
	int fd;

	p.flags = VTIER_HELLO_F_PREPARE | VTIER_HELLO_F_INCOMING | VTIER_HELLO_F_EARLY;
	p.hva = 0;
	a->want_early = true;
	fd = qemu_connect(a);
	qemu_send(fd, VTIER_HANDOFF_HELLO, 7, &p, sizeof(p), &m->memfd, 1);
	assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
	assert_int_equal(hdr.type, VTIER_HANDOFF_HELLO_REPLY);
	assert_int_equal(hdr.seq, 7);
	assert_int_equal(reply.status, 0);
	assert_int_equal(reply.flags, VTIER_HELLO_REPLY_F_EARLY);
	assert_int_equal(a->prepares, 1);
	assert_int_equal(a->hellos, 0);
	/* QEMU registers the uffd and hands over at once, the RAM still arriving */
	assert_int_equal(ioctl(m->uffd, UFFDIO_REGISTER, &r), 0);
	h.flags |= VTIER_HELLO_F_INCOMING | VTIER_HELLO_F_PRECOPY;
	qemu_send(fd, VTIER_HANDOFF_HELLO, 8, &h, sizeof(h), (int[]){ m->memfd, m->uffd }, 2);
	assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
	assert_int_equal(hdr.type, VTIER_HANDOFF_HELLO_REPLY);
	assert_int_equal(hdr.seq, 8);
	assert_int_equal(reply.status, 0);
	assert_int_equal(reply.flags, 0);
	assert_int_equal(a->hellos, 1);
	qemu_send(fd, VTIER_HANDOFF_MIGRATION, 9, &mig, sizeof(mig), NULL, 0);
	spin(a, 50);
	assert_int_equal(a->migrations[VTIER_MIGRATION_ARRIVED], 1);
	close(fd);
	spin(a, 20);

	/* offered, not taken; taken, not offered: no reply to the PREPARE */
	for (int i = 0; i < 2; i++) {
		a->want_early = i == 1;
		p.flags = VTIER_HELLO_F_PREPARE | VTIER_HELLO_F_INCOMING |
			  (i == 0 ? VTIER_HELLO_F_EARLY : 0);
		h.flags = VTIER_HELLO_F_WP | VTIER_HELLO_F_INCOMING;
		fd = qemu_connect(a);
		qemu_send(fd, VTIER_HANDOFF_HELLO, 1, &p, sizeof(p), &m->memfd, 1);
		spin(a, 50);
		assert_int_equal(a->prepares, 2 + i);
		qemu_send(fd, VTIER_HANDOFF_HELLO, 2, &h, sizeof(h),
			  (int[]){ m->memfd, m->uffd }, 2);
		assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
		assert_int_equal(hdr.seq, 2);
		assert_int_equal(reply.flags, 0);
		assert_int_equal(a->hellos, 2 + i);
		close(fd);
		spin(a, 20);
	}
}

static void test_hello_refused(void **state)
{
	struct agent *a = *state;
	struct vtier_handoff_hdr hdr;
	struct vtier_handoff_hello_reply reply;
	int fd = qemu_connect(a);

	a->refuse = ENOSPC;
	send_hello(a, fd, "mem1", 1);
	assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
	assert_int_equal(reply.status, -ENOSPC);
	assert_string_equal(reply.message, "no room for mem1");
	assert_true(qemu_sees_eof(a, fd));
	assert_int_equal(a->closed, 0);		/* never accepted */
	close(fd);
}

/*
 * A HELLO answered later: no reply and no HELLO deadline while the agent
 * works, then the one reply QEMU waits for; a connection that closes
 * meanwhile is dropped and the late answer goes nowhere.
 */
static void test_hello_pending(void **state)
{
	struct agent *a = *state;
	struct vt_handoff_limits l;
	struct vtier_handoff_hdr hdr;
	struct vtier_handoff_hello_reply reply;
	struct vt_handoff_conn *c;
	int fd;

	vt_handoff_limits_default(&l);
	l.hello_timeout_ms = 100;
	vt_handoff_server_set_limits(a->srv, &l);
	a->defer = true;
	fd = qemu_connect(a);
	send_hello(a, fd, "mem0", 1);
	spin(a, 300);		/* three times the HELLO deadline */
	assert_int_equal(a->hellos, 1);
	assert_int_equal(a->dropped, 0);
	assert_int_equal(recv(fd, &hdr, sizeof(hdr), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);	/* nothing said yet */
	assert_false(vt_handoff_conn_closed(a->conn));
	assert_int_equal(vt_handoff_conn_hello_done(a->conn, 0, NULL), 0);
	assert_int_equal(vt_handoff_conn_hello_done(a->conn, 0, NULL), -EINVAL);
	assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
	assert_int_equal(hdr.type, VTIER_HANDOFF_HELLO_REPLY);
	assert_int_equal(hdr.seq, 1);
	assert_int_equal(reply.status, 0);
	close(fd);
	spin(a, 20);
	assert_int_equal(a->closed, 1);

	/* refused later: the reason goes out, then the connection closes */
	fd = qemu_connect(a);
	send_hello(a, fd, "mem1", 1);
	spin(a, 20);
	assert_int_equal(vt_handoff_conn_hello_done(a->conn, -EBUSY, "busy"), 0);
	assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
	assert_int_equal(reply.status, -EBUSY);
	assert_string_equal(reply.message, "busy");
	assert_true(qemu_sees_eof(a, fd));
	close(fd);
	assert_int_equal(a->closed, 1);		/* never accepted */

	/* QEMU goes while the agent works */
	fd = qemu_connect(a);
	send_hello(a, fd, "mem2", 1);
	spin(a, 20);
	c = a->conn;
	close(fd);
	spin(a, 20);
	assert_int_equal(a->dropped, 2);	/* the refused one, and this one */
	assert_true(vt_handoff_conn_closed(c));
	assert_int_equal(vt_handoff_conn_hello_done(c, 0, NULL), -ENOTCONN);
	assert_int_equal(a->closed, 1);

	/* the server goes while the agent works: the late answer is still safe */
	fd = qemu_connect(a);
	send_hello(a, fd, "mem3", 1);
	spin(a, 20);
	c = a->conn;
	vt_handoff_server_free(a->srv);
	assert_int_equal(vt_handoff_conn_hello_done(c, 0, NULL), -ENOTCONN);
	close(fd);
	assert_int_equal(vt_handoff_server_new(a->path, a->ctx, &ops, a, &a->srv), 0);
}

static void test_policy_and_stats(void **state)
{
	struct agent *a = *state;
	struct vtier_handoff_hdr hdr;
	uint8_t buf[1024];
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
	struct vtier_handoff_tco tco = { .windows = 3, .bytes = 5 << 20, .n_tiers = 2,
					 .placement = "mtm" };
	struct vtier_handoff_migration_stats mstats = {
		.state = VTIER_MIGRATION_STATE_OUTGOING, .started = 2, .completed = 1,
		.extra_bytes = 3 << 20, .extra_peak_bytes = 7 << 20, .extra_bound_bytes = 32 << 20,
	};
	struct vtier_handoff_tco_tier tco_tiers[2] = {
		{ .name = "dram", .ratio_milli = 1000, .bytes = 4 << 20,
		  .cost_nusd_per_hour = 274000 },
		{ .name = "lz4", .kind = VTIER_TCO_TIER_COMPRESSED, .ratio_milli = 3000,
		  .bytes = 1 << 20, .cost_nusd_per_hour = 23000 },
	};
	const struct vtier_handoff_policy_reply *reply = (const void *)buf;
	int fd = qemu_connect(a);

	send_hello(a, fd, "mem0", 1);
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

	/* The VM's TCO report after the tiers; the sender sets both flags. */
	assert_int_equal(vt_handoff_conn_send_stats_tco(a->conn, &stats, tiers_v2, &tco, tco_tiers, NULL), 0);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	assert_int_equal(hdr.size, sizeof(stats) + sizeof(tiers_v2) + sizeof(tco) + sizeof(tco_tiers));
	assert_int_equal(((struct vtier_handoff_stats *)buf)->flags,
			 VTIER_STATS_F_TIER_V2 | VTIER_STATS_F_TCO);
	assert_memory_equal(buf + sizeof(stats) + sizeof(tiers_v2), &tco, sizeof(tco));
	assert_memory_equal(buf + sizeof(stats) + sizeof(tiers_v2) + sizeof(tco), tco_tiers,
			    sizeof(tco_tiers));
	/* without a block it is a v2 report */
	assert_int_equal(vt_handoff_conn_send_stats_tco(a->conn, &stats, tiers_v2, NULL, NULL, NULL), 0);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	assert_int_equal(hdr.size, sizeof(stats) + sizeof(tiers_v2));
	assert_int_equal(((struct vtier_handoff_stats *)buf)->flags, VTIER_STATS_F_TIER_V2);
	/* the migration block comes last, after the TCO block or the tiers */
	assert_int_equal(vt_handoff_conn_send_stats_tco(a->conn, &stats, tiers_v2, &tco, tco_tiers,
							&mstats), 0);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	assert_int_equal(hdr.size, sizeof(stats) + sizeof(tiers_v2) + sizeof(tco) +
				   sizeof(tco_tiers) + sizeof(mstats));
	assert_int_equal(((struct vtier_handoff_stats *)buf)->flags,
			 VTIER_STATS_F_TIER_V2 | VTIER_STATS_F_TCO | VTIER_STATS_F_MIGRATION);
	assert_memory_equal(buf + hdr.size - sizeof(mstats), &mstats, sizeof(mstats));
	assert_int_equal(vt_handoff_conn_send_stats_tco(a->conn, &stats, tiers_v2, NULL, NULL,
							&mstats), 0);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	assert_int_equal(hdr.size, sizeof(stats) + sizeof(tiers_v2) + sizeof(mstats));
	assert_memory_equal(buf + sizeof(stats) + sizeof(tiers_v2), &mstats, sizeof(mstats));
	mstats.failed = 3;	/* more ended than started: not sent */
	assert_int_equal(vt_handoff_conn_send_stats_tco(a->conn, &stats, tiers_v2, NULL, NULL,
							&mstats), -EINVAL);
	/* a block that does not add up is not sent */
	tco.bytes++;
	assert_int_equal(vt_handoff_conn_send_stats_tco(a->conn, &stats, tiers_v2, &tco, tco_tiers, NULL),
			 -EINVAL);
	tco.bytes--;
	tco.n_tiers = VTIER_HANDOFF_TIERS_MAX + 1;
	assert_int_equal(vt_handoff_conn_send_stats_tco(a->conn, &stats, tiers_v2, &tco, tco_tiers, NULL),
			 -EINVAL);

	/* Reports QEMU would refuse are not sent. */
	tiers_v2[1].name[0] = '\0';
	assert_int_equal(vt_handoff_conn_send_stats_v2(a->conn, &stats, tiers_v2), -EINVAL);
	tiers[0].name[0] = '\0';
	assert_int_equal(vt_handoff_conn_send_stats(a->conn, &stats, tiers), -EINVAL);
	stats.n_tiers = VTIER_HANDOFF_TIERS_MAX + 1;
	assert_int_equal(vt_handoff_conn_send_stats(a->conn, &stats, tiers), -EINVAL);
	/* "no profile" only to a QEMU whose HELLO said NO_PROFILE (this one's did not) */
	assert_int_equal(vt_handoff_conn_send_profile(a->conn, buf, 0), -EOPNOTSUPP);
	assert_int_equal(vt_handoff_conn_send_profile(a->conn, buf, VTIER_HANDOFF_PROFILE_MAX + 1),
			 -EMSGSIZE);
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
	send_hello(a, fd, "mem0", 1);
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

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return !fstat(a, &sa) && !fstat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static const struct vt_handoff_ops ops_no_migration = {
	.hello = on_hello,
	.closed = on_closed,
	.dropped = on_dropped,
};

/*
 * The send map (HELLO flags ZERO_MAP | SEND_MAP, a fourth fd): checked like
 * the zero map and handed to the agent by vt_handoff_conn_take_map(); a bad
 * one refused with a reply naming it, its fds closed whichever way. MIGRATION
 * SEND_END reaches ops->migration and the agent answers SENT with its seq
 * when it is ready, once; an agent without ops->migration answers at once
 * that it delivers nothing.
 */
static void test_send_map(void **state)
{
	struct agent *a = *state;
	const size_t bytes = vtier_zero_map_bytes(MEM_SIZE, 4096);
	struct vtier_handoff_migration mig = { .event = VTIER_MIGRATION_SEND_END };
	struct qemu_mem *m = qemu_mem_new(a, MEM_SIZE, true);
	struct vtier_handoff_hello h = hello_for(m, "mem0", 1);
	struct vtier_handoff_hello_reply reply;
	struct vtier_handoff_sent sent;
	struct vtier_handoff_hdr hdr;
	const struct bad_map *bad;
	unsigned int open_fds, n_bad;
	int fd, zmap, smap;

	assert_int_equal(bytes, 32);
	h.flags |= VTIER_HELLO_F_ZERO_MAP | VTIER_HELLO_F_SEND_MAP;
	zmap = map_memfd(bytes, MAP_SEALS);
	smap = map_memfd(bytes, MAP_SEALS);
	fd = qemu_connect(a);
	qemu_send(fd, VTIER_HANDOFF_HELLO, 3, &h, sizeof(h),
		  (int[]){ m->memfd, m->uffd, zmap, smap }, 4);
	assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
	assert_int_equal(hdr.type, VTIER_HANDOFF_HELLO_REPLY);
	assert_int_equal(reply.status, 0);
	/* each map where the agent asks for it, once */
	assert_true(same_file(a->maps[0], zmap));
	assert_true(same_file(a->maps[1], smap));
	assert_int_equal(vt_handoff_conn_take_map(a->conn, VTIER_HANDOFF_FD_SEND_MAP), -1);
	assert_int_equal(vt_handoff_conn_take_map(a->conn, VTIER_HANDOFF_FD_UFFD), -1);
	assert_int_equal(vt_handoff_conn_take_map(a->conn, VTIER_HANDOFF_SEND_MAP_NFDS), -1);

	/* SENT answers a SEND_END only, when the agent is ready, with its seq */
	assert_int_equal(vt_handoff_conn_send_sent(a->conn, 0, 0, NULL), -EINVAL);
	qemu_send(fd, VTIER_HANDOFF_MIGRATION, 41, &mig, sizeof(mig), NULL, 0);
	spin(a, 20);
	assert_int_equal(a->migrations[VTIER_MIGRATION_SEND_END], 1);
	assert_int_equal(recv(fd, &hdr, sizeof(hdr), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);	/* nothing said yet */
	assert_int_equal(vt_handoff_conn_send_sent(a->conn, 0, 7, "7 pages delivered"), 0);
	assert_int_equal(vt_handoff_conn_send_sent(a->conn, 0, 7, NULL), -EINVAL);
	assert_true(qemu_recv(a, fd, &hdr, &sent, sizeof(sent)));
	assert_int_equal(hdr.type, VTIER_HANDOFF_SENT);
	assert_int_equal(hdr.seq, 41);
	assert_int_equal(hdr.size, sizeof(sent));
	assert_int_equal(sent.status, 0);
	assert_int_equal(sent.pages, 7);
	assert_string_equal(sent.message, "7 pages delivered");
	/* SENT is the agent's to send: from QEMU's side it ends the connection */
	qemu_send(fd, VTIER_HANDOFF_SENT, 43, &sent, sizeof(sent), NULL, 0);
	assert_true(qemu_sees_eof(a, fd));
	assert_non_null(strstr(a->closed_why, "message type 9 (SENT) is not one QEMU sends"));
	close(fd);
	spin(a, 20);
	assert_int_equal(a->closed, 1);

	/* a send map of another size, or one QEMU could shrink: refused, naming it */
	open_fds = dir_entries("/proc/self/fd");
	bad = bad_send_maps(&n_bad);
	for (unsigned int i = 0; i < n_bad; i++) {
		int bad_map = map_memfd(bad[i].bytes, bad[i].seals);

		fd = qemu_connect(a);
		qemu_send(fd, VTIER_HANDOFF_HELLO, 4, &h, sizeof(h),
			  (int[]){ m->memfd, m->uffd, zmap, bad_map }, 4);
		close(bad_map);
		assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
		assert_int_equal(reply.status, bad[i].status);
		if (!strstr(reply.message, bad[i].says))
			fail_msg("refused with '%s', not '%s'", reply.message, bad[i].says);
		assert_true(qemu_sees_eof(a, fd));
		close(fd);
	}
	/* with five fds: a protocol error, not a reply */
	fd = qemu_connect(a);
	qemu_send(fd, VTIER_HANDOFF_HELLO, 5, &h, sizeof(h),
		  (int[]){ m->memfd, m->uffd, zmap, smap, smap }, 5);
	assert_true(qemu_sees_eof(a, fd));
	assert_non_null(strstr(a->dropped_why, "with 5 fds (want 4"));
	close(fd);
	spin(a, 20);
	assert_int_equal(a->hellos, 1);
	/* the refused HELLOs' fds are all closed */
	assert_int_equal(dir_entries("/proc/self/fd"), open_fds);

	/* an agent that follows no migration: QEMU hears at once that nothing is delivered */
	vt_handoff_server_free(a->srv);
	assert_int_equal(vt_handoff_server_new(a->path, a->ctx, &ops_no_migration, a, &a->srv), 0);
	fd = qemu_connect(a);
	qemu_send(fd, VTIER_HANDOFF_HELLO, 6, &h, sizeof(h),
		  (int[]){ m->memfd, m->uffd, zmap, smap }, 4);
	assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
	assert_int_equal(reply.status, 0);
	qemu_send(fd, VTIER_HANDOFF_MIGRATION, 42, &mig, sizeof(mig), NULL, 0);
	assert_true(qemu_recv(a, fd, &hdr, &sent, sizeof(sent)));
	assert_int_equal(hdr.type, VTIER_HANDOFF_SENT);
	assert_int_equal(hdr.seq, 42);
	assert_int_equal(sent.status, -EOPNOTSUPP);
	assert_int_equal(sent.pages, 0);
	close(fd);
	close(zmap);
	close(smap);
	spin(a, 20);
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

	send_hello(a, fd, "mem0", 1);
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

	send_hello(a, fd, "mem0", 1);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	close(fd);
	spin(a, 20);
	fd = qemu_connect(a);
	send_hello(a, fd, "mem0", 2);
	assert_true(qemu_recv(a, fd, &hdr, buf, sizeof(buf)));
	assert_int_equal(((struct vtier_handoff_hello_reply *)buf)->status, 0);
	assert_int_equal(a->hellos, 2);
	assert_int_equal(a->generation, 2);
	/* A second HELLO on the same connection is a protocol error. */
	send_hello(a, fd, "mem0", 3);
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

/* Wait (running the agent) until @cond holds or @ms pass; true if it held. */
#define WAIT_FOR(a, cond, ms) ({						\
	gint64 _end = g_get_monotonic_time() + (ms) * 1000LL;			\
	while (!(cond) && g_get_monotonic_time() < _end)			\
		spin(a, 1);							\
	(cond);									\
})

/* (a) The pid in the HELLO must be the socket's peer; the kernel's word is kept. */
static void test_peer_identity(void **state)
{
	struct agent *a = *state;
	struct vtier_handoff_hello_reply reply;
	struct vtier_handoff_hdr hdr;
	struct qemu_mem *m = qemu_mem_new(a, MEM_SIZE, true);
	struct vtier_handoff_hello h = hello_for(m, "mem0", 1);
	uint64_t start = 0;
	int fd = qemu_connect(a);

	h.qemu_pid = (uint32_t)getpid() + 1;
	send_hello_fds(fd, &h, m->memfd, m->uffd);
	assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
	assert_int_equal(reply.status, -EPERM);
	assert_non_null(strstr(reply.message, "qemu_pid"));
	assert_true(qemu_sees_eof(a, fd));
	assert_int_equal(a->hellos, 0);
	assert_int_equal(a->dropped, 1);
	assert_non_null(strstr(a->dropped_why, "HELLO refused"));
	close(fd);

	fd = qemu_connect(a);
	h.qemu_pid = (uint32_t)getpid();
	send_hello_fds(fd, &h, m->memfd, m->uffd);
	assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
	assert_int_equal(reply.status, 0);
	assert_int_equal(vt_handoff_conn_peer_pid(a->conn), getpid());
	assert_int_equal(vt_handoff_conn_peer_uid(a->conn), geteuid());
	assert_int_equal(vt_proc_start_time(getpid(), &start), 0);
	assert_int_equal(vt_handoff_conn_peer_start_time(a->conn), start);
	assert_true(start > 0);
	if (vt_handoff_conn_peer_pidfd(a->conn) >= 0) {
		struct stat st;

		assert_int_equal(fstat(vt_handoff_conn_peer_pidfd(a->conn), &st), 0);
	}
	close(fd);
	spin(a, 20);
}

/* (b, c) Fds and sizes that do not match the HELLO are refused at HELLO. */
static void test_hello_fd_checks(void **state)
{
	struct agent *a = *state;
	struct qemu_mem *m = qemu_mem_new(a, MEM_SIZE, true);
	struct qemu_mem *other = qemu_mem_new(a, MEM_SIZE, true);
	struct qemu_mem *plain = qemu_mem_new(a, MEM_SIZE, false);
	char file[128];
	int ext4, devzero;
	struct {
		const char *name;
		uint64_t hva, size, fd_offset;
		int memfd, uffd;
		int status;
		const char *says;
	} cases[] = {
		{ "memfd as the uffd", (uintptr_t)m->map, MEM_SIZE, 0, m->memfd, m->memfd,
		  -EBADF, "not a userfaultfd" },
		{ "1 TiB over a 1 MiB memfd", (uintptr_t)m->map, 1ull << 40, 0, m->memfd, m->uffd,
		  -ERANGE, "smaller than" },
		{ "offset past the end", (uintptr_t)m->map, MEM_SIZE, MEM_SIZE, m->memfd, m->uffd,
		  -ERANGE, "smaller than" },
		{ "hva of another memfd's mapping", (uintptr_t)other->map, MEM_SIZE, 0, m->memfd,
		  m->uffd, -ERANGE, "not pid" },
		{ "hva where nothing is mapped", 0x10000, MEM_SIZE, 0, m->memfd, m->uffd,
		  -ERANGE, "not pid" },
		{ "hva a page in, fd_offset 0", (uintptr_t)m->map + 4096, MEM_SIZE - 4096, 0,
		  m->memfd, m->uffd, -ERANGE, "not pid" },
		{ "mapping longer than the mapping", (uintptr_t)m->map, 2 * MEM_SIZE, 0,
		  other->memfd, m->uffd, -ERANGE, "smaller than" },
		{ "another userfaultfd than the registered one", (uintptr_t)m->map, MEM_SIZE, 0,
		  m->memfd, other->uffd, -EBUSY, "not registered" },
		{ "memory fd not a regular file", (uintptr_t)m->map, MEM_SIZE, 0, -1, m->uffd,
		  -EBADF, "not a memfd" },
		{ "memory fd on a disk file system", (uintptr_t)m->map, MEM_SIZE, 0, -2, m->uffd,
		  -EBADF, "not a memfd" },
	};

	(void)plain;
	snprintf(file, sizeof(file), "%s/ram", a->dir);
	ext4 = open(file, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	assert_true(ext4 >= 0);
	assert_int_equal(ftruncate(ext4, MEM_SIZE), 0);
	devzero = open("/dev/zero", O_RDWR | O_CLOEXEC);
	assert_true(devzero >= 0);
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct vtier_handoff_hello h = hello_for(m, "mem0", 1);
		struct vtier_handoff_hello_reply reply;
		struct vtier_handoff_hdr hdr;
		int memfd = cases[i].memfd == -1 ? devzero : cases[i].memfd == -2 ? ext4 :
			    cases[i].memfd;
		int fd = qemu_connect(a);

		h.hva = cases[i].hva;
		h.size_bytes = cases[i].size;
		h.fd_offset = cases[i].fd_offset;
		send_hello_fds(fd, &h, memfd, cases[i].uffd);
		if (!qemu_recv(a, fd, &hdr, &reply, sizeof(reply)))
			fail_msg("%s: no HELLO_REPLY", cases[i].name);
		if (reply.status != cases[i].status || !strstr(reply.message, cases[i].says))
			fail_msg("%s: status %d '%s', want %d '%s'", cases[i].name, reply.status,
				 reply.message, cases[i].status, cases[i].says);
		assert_true(qemu_sees_eof(a, fd));
		close(fd);
	}
	assert_int_equal(a->hellos, 0);		/* the agent never saw a lying HELLO */
	/* A uffd created but never registered on its range is registered by the probe. */
	{
		struct vtier_handoff_hello h = hello_for(plain, "mem2", 1);
		struct vtier_handoff_hello_reply reply;
		struct vtier_handoff_hdr hdr;
		int fd = qemu_connect(a);

		send_hello_fds(fd, &h, plain->memfd, plain->uffd);
		assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
		assert_int_equal(reply.status, 0);
		close(fd);
		spin(a, 20);
	}
	close(ext4);
	close(devzero);
	unlink(file);
}

/* (d) Unsafe backend ids never reach the agent; VM names are display text. */
static void test_hello_names(void **state)
{
	struct agent *a = *state;
	struct qemu_mem *m = qemu_mem_new(a, MEM_SIZE, true);
	struct vtier_handoff_hello h = hello_for(m, "../../x", 1);
	struct vtier_handoff_hello_reply reply;
	struct vtier_handoff_hdr hdr;
	int fd = qemu_connect(a);

	send_hello_fds(fd, &h, m->memfd, m->uffd);
	assert_true(qemu_sees_eof(a, fd));
	assert_int_equal(a->hellos, 0);
	assert_non_null(strstr(a->dropped_why, "backend id"));
	close(fd);

	h = hello_for(m, "mem0", 1);
	strcpy(h.vm_name, "../../evil\n\x1b[31m\xff");
	fd = qemu_connect(a);
	send_hello_fds(fd, &h, m->memfd, m->uffd);
	assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
	assert_int_equal(reply.status, 0);
	assert_string_equal(vt_handoff_conn_vm_name(a->conn), "../../evil??[31m?");
	close(fd);
	spin(a, 20);
}

static int connect_and_hello(struct agent *a, const char *id)
{
	struct vtier_handoff_hello_reply reply;
	struct vtier_handoff_hdr hdr;
	int fd = qemu_connect(a);

	send_hello(a, fd, id, 1);
	assert_true(qemu_recv(a, fd, &hdr, &reply, sizeof(reply)));
	assert_int_equal(reply.status, 0);
	return fd;
}

/*
 * (e) A QEMU that never reads its socket: sends return at once, another QEMU
 * is answered within 100 ms meanwhile, and the full queue closes only the
 * silent one, with a reason.
 */
static void test_silent_reader(void **state)
{
	struct agent *a = *state;
	struct vt_handoff_limits l;
	struct vt_handoff_conn *silent;
	static uint8_t profile[256 << 10];	/* socket buffers hold about one */
	int fd_silent, fd_other, ret = 0, sends = 0;

	vt_handoff_limits_default(&l);
	l.max_output_bytes = 8 * sizeof(profile) + 4096;
	vt_handoff_server_set_limits(a->srv, &l);
	fd_silent = connect_and_hello(a, "silent");
	silent = a->conn;
	while (ret == 0 && sends < 64) {
		gint64 t0 = g_get_monotonic_time();

		ret = vt_handoff_conn_send_profile(silent, profile, sizeof(profile));
		/* never blocks: a blocking send would wait for the silent reader
		 * until send_timeout_ms (10 s by default); 1 s leaves room for a loaded
		 * machine under the sanitizer (100 ms failed there once) */
		assert_true(g_get_monotonic_time() - t0 < 1000000);
		sends++;
	}
	assert_int_equal(ret, -ENOBUFS);
	assert_true(sends >= 8);
	assert_int_equal(vt_handoff_conn_send_profile(silent, profile, 1), -ENOTCONN);
	/* the other QEMU is served while the silent one's queue is full */
	{
		gint64 t0 = g_get_monotonic_time();

		fd_other = connect_and_hello(a, "other");
		assert_true(g_get_monotonic_time() - t0 < 1000000);
	}
	assert_true(WAIT_FOR(a, a->closed >= 1, 1000));
	assert_non_null(strstr(a->closed_why, "output queue"));
	close(fd_silent);
	close(fd_other);
	spin(a, 20);
}

/* (e) Output QEMU takes none of within send_timeout_ms closes the connection. */
static void test_send_timeout(void **state)
{
	struct agent *a = *state;
	struct vt_handoff_limits l;
	static uint8_t profile[VTIER_HANDOFF_PROFILE_MAX];
	int fd;

	vt_handoff_limits_default(&l);
	l.send_timeout_ms = 200;
	vt_handoff_server_set_limits(a->srv, &l);
	fd = connect_and_hello(a, "mem0");
	assert_int_equal(vt_handoff_conn_send_profile(a->conn, profile, sizeof(profile)), 0);
	spin(a, 50);
	assert_int_equal(a->closed, 0);		/* not before the deadline */
	assert_true(WAIT_FOR(a, a->closed == 1, 2000));
	assert_non_null(strstr(a->closed_why, "read nothing for 200 ms"));
	close(fd);
}

/*
 * (f) Many connections each sending part of an 8 MiB HELLO: at most
 * max_pending are kept, the bytes they hold stay under the cap (buffers
 * grow with what arrives), each is closed by its deadline, and a real QEMU
 * gets through afterwards.
 */
static void test_partial_hellos(void **state)
{
	struct agent *a = *state;
	struct vt_handoff_limits l;
	static uint8_t chunk[256 << 10];
	int fds[100];

	vt_handoff_limits_default(&l);
	l.max_pending = 8;
	l.hello_timeout_ms = 500;
	l.idle_timeout_ms = 300;
	l.max_buffered_bytes = 2u << 20;
	vt_handoff_server_set_limits(a->srv, &l);
	for (int i = 0; i < 100; i++) {
		struct vtier_handoff_hdr hdr;

		fds[i] = qemu_connect(a);
		vt_handoff_hdr_init(&hdr, VTIER_HANDOFF_HELLO, 1, 8u << 20);
		/* a refused connection may already be closed: ignore send errors */
		if (send(fds[i], &hdr, sizeof(hdr), MSG_NOSIGNAL | MSG_DONTWAIT) == sizeof(hdr))
			(void)!send(fds[i], chunk, sizeof(chunk), MSG_NOSIGNAL | MSG_DONTWAIT);
		spin(a, 1);
		assert_true(vt_handoff_server_buffered_bytes(a->srv) <= l.max_buffered_bytes);
	}
	spin(a, 20);
	assert_true(vt_handoff_server_buffered_bytes(a->srv) <= l.max_buffered_bytes);
	assert_true(vt_handoff_server_dropped(a->srv) >= 100 - l.max_pending);
	/* the ones kept are dropped by their deadlines */
	assert_true(WAIT_FOR(a, vt_handoff_server_dropped(a->srv) == 100, 2000));
	assert_int_equal(vt_handoff_server_buffered_bytes(a->srv), 0);
	assert_int_equal(a->hellos, 0);
	for (int i = 0; i < 100; i++)
		close(fds[i]);
	close(connect_and_hello(a, "mem0"));
	spin(a, 20);
}

/* (e) A QEMU that dies with output queued: closed at once, not at the send deadline. */
static void test_peer_gone_with_output(void **state)
{
	struct agent *a = *state;
	static uint8_t profile[256 << 10];
	int fd = connect_and_hello(a, "mem0");

	for (int i = 0; i < 4; i++)
		assert_int_equal(vt_handoff_conn_send_profile(a->conn, profile, sizeof(profile)), 0);
	close(fd);
	assert_true(WAIT_FOR(a, a->closed == 1, 1000));		/* send_timeout_ms is 10 s */
}

/* (f) A connection that sends a header and then nothing: idle timeout. */
static void test_idle_partial(void **state)
{
	struct agent *a = *state;
	struct vtier_handoff_policy policy = { .mode = VTIER_POLICY_MODE_AUTO };
	struct vt_handoff_limits l;
	struct vtier_handoff_hdr hdr;
	int fd;

	vt_handoff_limits_default(&l);
	l.idle_timeout_ms = 200;
	vt_handoff_server_set_limits(a->srv, &l);
	fd = connect_and_hello(a, "mem0");
	vt_handoff_hdr_init(&hdr, VTIER_HANDOFF_POLICY, 2, sizeof(policy));
	assert_int_equal(write(fd, &hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	assert_int_equal(write(fd, &policy, 8), 8);
	assert_true(WAIT_FOR(a, a->closed == 1, 2000));
	assert_non_null(strstr(a->closed_why, "partial POLICY idle"));
	close(fd);
}

/*
 * (g) Out of fds: accept() fails with EMFILE while the listening socket stays
 * readable. In a child with RLIMIT_NOFILE at its current use, 500 ms of the
 * loop must cost little CPU (it spun at 100%), take one connection on the fd
 * reserve and stop accepting until it is answered, and report the burst once.
 */
static void test_emfile_backoff(void **state)
{
	struct agent *a = *state;
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct vt_handoff_server_stats st;
		int code = 0;
		long cpu_us;

		for (int i = 0; i < 4; i++)
			(void)qemu_connect(a);	/* queued in the backlog */
		if (!emfile_limit_at_use())
			_exit(10);
		cpu_us = emfile_run_cpu_us(a->ctx, 500);
		vt_handoff_server_get_stats(a->srv, &st);
		if (st.accept_pauses < 1 || st.accept_pauses > 10 || st.reserve_accepts != 1)
			code = 11;
		else if (a->dropped != 1 || !strstr(a->dropped_why, "LimitNOFILE"))
			code = 12;
		else if (cpu_us > 150000)
			code = 13;
		if (code)
			fprintf(stderr, "# child: pauses %u, dropped %d '%s', cpu %ld us\n",
				vt_handoff_server_accept_pauses(a->srv), a->dropped, a->dropped_why,
				cpu_us);
		_exit(code);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * Forked peers: each child is a process of its own (its own SO_PEERCRED pid)
 * playing QEMU while the parent runs the agent; children use no cmocka and
 * _exit with a code that says what went wrong.
 */
static bool child_mem(struct qemu_mem *m, size_t size, bool reg)
{
	struct uffdio_register r;

	*m = (struct qemu_mem) { .size = size };
	m->memfd = memfd_create("qemu-ram", MFD_CLOEXEC);
	if (m->memfd < 0 || ftruncate(m->memfd, (off_t)size))
		return false;
	m->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, m->memfd, 0);
	m->uffd = new_uffd();
	if (m->map == MAP_FAILED || m->uffd < 0)
		return false;
	r = (struct uffdio_register) {
		.range = { (uintptr_t)m->map, size },
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};
	return !reg || ioctl(m->uffd, UFFDIO_REGISTER, &r) == 0;
}

static int child_connect(const char *path, bool nonblock)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);

	strcpy(addr.sun_path, path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A HELLO_REPLY on @fd within @ms, with no agent loop here: 1 got it, 0 EOF, -1 nothing. */
static int recv_reply(int fd, int ms, struct vtier_handoff_hdr *hdr,
		      struct vtier_handoff_hello_reply *reply)
{
	uint8_t buf[sizeof(*hdr) + sizeof(*reply)];
	gint64 end = g_get_monotonic_time() + ms * 1000LL;
	size_t got = 0;

	while (got < sizeof(buf)) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		gint64 left = (end - g_get_monotonic_time()) / 1000;
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return -1;
		n = recv(fd, buf + got, sizeof(buf) - got, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return 0;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (n > 0)
			got += (size_t)n;
	}
	memcpy(hdr, buf, sizeof(*hdr));
	memcpy(reply, buf + sizeof(*hdr), sizeof(*reply));
	return 1;
}

/*
 * In a child: hand @m over as @id (@generation > 1: a RECONNECT) and wait up
 * to @ms for the reply. 0: accepted in time; 20 no connection, 21 not sent,
 * 22 closed without a reply, 23 no reply in time, 24 refused.
 */
static int child_hello(const char *path, const struct qemu_mem *m, const char *id,
		       uint64_t generation, int ms)
{
	struct vtier_handoff_hello h = hello_for(m, id, generation);
	struct vtier_handoff_hello_reply reply;
	struct vtier_handoff_hdr hdr;
	int fds[2] = { m->memfd, m->uffd };
	int fd = child_connect(path, false), ret;

	if (fd < 0)
		return 20;
	if (!send_msg(fd, VTIER_HANDOFF_HELLO, 1, &h, sizeof(h), fds, 2)) {
		close(fd);
		return 21;
	}
	ret = recv_reply(fd, ms, &hdr, &reply);
	close(fd);
	if (ret <= 0) {
		fprintf(stderr, "# child %d: %s generation %" PRIu64 ": %s\n", (int)getpid(), id,
			generation, ret ? "no reply in time" : "closed without a reply");
		return ret ? 23 : 22;
	}
	if (reply.status) {
		fprintf(stderr, "# child %d: %s refused: %d %s\n", (int)getpid(), id, reply.status,
			reply.message);
		return 24;
	}
	return 0;
}

/*
 * Run the agent until every child of @pids exits (killed after @ms): 0 when
 * all exited 0, else the first failing code (99: killed).
 */
static int run_until_exit(struct agent *a, const pid_t *pids, int n, int ms)
{
	gint64 end = g_get_monotonic_time() + ms * 1000LL;
	bool done[16] = { false };
	int code = 0, left = n, status;

	assert_true(n <= 16);
	while (left && g_get_monotonic_time() < end) {
		spin(a, 1);
		for (int i = 0; i < n; i++) {
			if (done[i] || waitpid(pids[i], &status, WNOHANG) != pids[i])
				continue;
			done[i] = true;
			left--;
			if (!code && (!WIFEXITED(status) || WEXITSTATUS(status)))
				code = WIFEXITED(status) ? WEXITSTATUS(status) : 98;
		}
	}
	for (int i = 0; i < n; i++) {
		if (done[i])
			continue;
		kill(pids[i], SIGKILL);
		waitpid(pids[i], &status, 0);
		code = code ? code : 99;
	}
	return code;
}

static struct vt_handoff_server_stats stats_of(struct agent *a)
{
	struct vt_handoff_server_stats st;

	vt_handoff_server_get_stats(a->srv, &st);
	return st;
}

/*
 * In a child: keep 40 connections open, each sending @prepare (with @memfd)
 * or nothing, and open another as soon as the agent closes one, until the
 * parent closes its end of @stop.
 */
static void __attribute__((noreturn)) child_flood(const char *path, int stop,
						  const struct vtier_handoff_hello *prepare,
						  int memfd)
{
	struct pollfd pfd[41];
	int fds[40];

	for (int i = 0; i < 40; i++)
		fds[i] = -1;
	for (;;) {
		for (int i = 0; i < 40; i++) {
			if (fds[i] < 0) {
				fds[i] = child_connect(path, !prepare);
				if (fds[i] >= 0 && prepare)
					(void)send_msg(fds[i], VTIER_HANDOFF_HELLO, 1, prepare,
						       sizeof(*prepare), &memfd, 1);
			}
			pfd[i] = (struct pollfd) { .fd = fds[i], .events = POLLIN };
		}
		pfd[40] = (struct pollfd) { .fd = stop, .events = POLLIN };
		poll(pfd, 41, 5);
		if (pfd[40].revents)
			_exit(0);
		for (int i = 0; i < 40; i++) {
			char c;

			if (fds[i] >= 0 && pfd[i].revents && recv(fds[i], &c, 1, MSG_DONTWAIT) <= 0) {
				close(fds[i]);	/* dropped: open another at once */
				fds[i] = -1;
			}
		}
	}
}

/* Block until the parent closes its end of @stop. */
static void child_wait_stop(int stop)
{
	char c;

	while (read(stop, &c, 1) < 0 && errno == EINTR)
		;
}

/*
 * (h) Per-process caps: a process over max_peer_pending or max_peer_conns
 * loses its new connection at accept, the reason naming the bound, its value
 * and the peer (pid, uid, cgroup); counted per reason.
 */
static void test_peer_caps(void **state)
{
	struct agent *a = *state;
	struct vtier_handoff_hello_reply reply;
	struct vtier_handoff_hdr hdr;
	struct vt_handoff_limits l;
	char pid_text[64];
	int fds[8], n = 0;

	vt_handoff_limits_default(&l);
	l.max_peer_pending = 3;
	l.max_peer_conns = 6;
	vt_handoff_server_set_limits(a->srv, &l);
	snprintf(pid_text, sizeof(pid_text), "pid %d uid %u cgroup /", (int)getpid(),
		 (unsigned int)getuid());
	fds[n++] = connect_and_hello(a, "mem0");
	fds[n++] = connect_and_hello(a, "mem1");
	for (int i = 0; i < 4; i++)
		fds[n++] = qemu_connect(a);	/* 3 pending, the 4th over the cap */
	assert_true(WAIT_FOR(a, a->dropped == 1, 1000));
	assert_non_null(strstr(a->dropped_why, "3 connections without an accepted HELLO already "
				"(max_peer_pending 3)"));
	assert_non_null(strstr(a->dropped_why, pid_text));
	assert_int_equal(stats_of(a).refused_peer_pending, 1);
	assert_true(qemu_sees_eof(a, fds[5]));
	/* a HELLO on a pending one makes room for one more, the 6th open */
	send_hello(a, fds[2], "mem2", 1);
	assert_true(qemu_recv(a, fds[2], &hdr, &reply, sizeof(reply)));
	assert_int_equal(reply.status, 0);
	fds[n++] = qemu_connect(a);
	fds[n++] = qemu_connect(a);
	assert_true(WAIT_FOR(a, a->dropped == 2, 1000));
	assert_non_null(strstr(a->dropped_why, "6 connections open already (max_peer_conns 6)"));
	assert_non_null(strstr(a->dropped_why, pid_text));
	assert_true(qemu_sees_eof(a, fds[7]));
	assert_int_equal(stats_of(a).refused_peer_conns, 1);
	assert_int_equal(stats_of(a).dropped, 2);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	spin(a, 20);
}

/*
 * (h) One process holds 32 PREPAREs (a real memfd), all of max_pending (its
 * own cap raised to allow it), and sends each one closed again at once:
 * another process's HELLO and then its RECONNECT are each answered within
 * 1 s, by displacing the holder's oldest PREPARE (no deadline involved).
 */
static void test_prepare_flood(void **state)
{
	struct agent *a = *state;
	struct vt_handoff_server_stats st;
	struct vt_handoff_limits l;
	pid_t attacker, victim;
	int stop[2];

	vt_handoff_limits_default(&l);
	l.max_pending = 32;
	l.max_peer_pending = 64;
	vt_handoff_server_set_limits(a->srv, &l);
	assert_int_equal(pipe2(stop, O_CLOEXEC), 0);
	attacker = fork();
	assert_true(attacker >= 0);
	if (attacker == 0) {
		struct vtier_handoff_hello h;
		struct qemu_mem m;

		close(stop[1]);
		if (!child_mem(&m, MEM_SIZE, false))
			_exit(30);
		h = prepare_for(&m, "held");
		child_flood(a->path, stop[0], &h, m.memfd);
	}
	close(stop[0]);
	assert_true(WAIT_FOR(a, a->prepares == 32 && stats_of(a).refused_full >= 8, 5000));
	assert_non_null(strstr(a->dropped_why, "(max_pending 32)"));
	for (int generation = 1; generation <= 2; generation++) {
		victim = fork();
		assert_true(victim >= 0);
		if (victim == 0) {
			struct qemu_mem m;

			if (!child_mem(&m, MEM_SIZE, true))
				_exit(30);
			_exit(child_hello(a->path, &m, "victim", (uint64_t)generation, 1000));
		}
		assert_int_equal(run_until_exit(a, &victim, 1, 5000), 0);
		assert_int_equal(a->hellos, generation);
		assert_int_equal(a->generation, generation);
		assert_int_equal(stats_of(a).displaced, generation);
		/* the holder takes the place back: max_pending is full again */
		assert_true(WAIT_FOR(a, a->prepares == 32 + generation, 2000));
	}
	st = stats_of(a);
	assert_int_equal(st.prepare_idle, 0);
	assert_int_equal(st.hello_timeouts, 0);
	close(stop[1]);
	assert_int_equal(run_until_exit(a, &attacker, 1, 3000), 0);
	spin(a, 50);
}

/*
 * (h) A PREPARE whose memfd gets no guest RAM for prepare_idle_ms is closed
 * with the reason; one whose memfd keeps growing (the migration writing into
 * it) stays open past several deadlines, and is closed once it stops.
 */
static void test_prepare_deadline(void **state)
{
	struct agent *a = *state;
	struct vt_handoff_limits l;
	pid_t pid;

	vt_handoff_limits_default(&l);
	l.prepare_idle_ms = 300;
	vt_handoff_server_set_limits(a->srv, &l);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct qemu_mem idle, live;
		struct vtier_handoff_hello h;
		static char page[4096];
		int fds[5];
		gint64 t0, live_gone = 0;
		bool idle_gone[4] = { false };
		off_t off = 0;

		if (!child_mem(&idle, MEM_SIZE, false) || !child_mem(&live, MEM_SIZE, false))
			_exit(30);
		for (int i = 0; i < 5; i++) {
			h = prepare_for(i < 4 ? &idle : &live, i < 4 ? "idle" : "live");
			fds[i] = child_connect(a->path, false);
			if (fds[i] < 0 || !send_msg(fds[i], VTIER_HANDOFF_HELLO, 1, &h, sizeof(h),
						     i < 4 ? &idle.memfd : &live.memfd, 1))
				_exit(31);
		}
		/* RAM arrives into "live" every 50 ms for 1.5 s, then stops */
		t0 = g_get_monotonic_time();
		while (g_get_monotonic_time() - t0 < 2500000 && !live_gone) {
			struct pollfd pfd[5];

			if (g_get_monotonic_time() - t0 < 1500000) {
				memset(page, (int)(off >> 12) + 1, sizeof(page));
				if (pwrite(live.memfd, page, sizeof(page), off) != sizeof(page))
					_exit(32);
				off = (off + 4096) % MEM_SIZE;
			}
			for (int i = 0; i < 5; i++)
				pfd[i] = (struct pollfd) {
					.fd = i < 4 && idle_gone[i] ? -1 : fds[i], .events = POLLIN };
			g_usleep(50000);	/* a page every 50 ms */
			poll(pfd, 5, 0);
			for (int i = 0; i < 5; i++) {
				char c;

				if (!pfd[i].revents || recv(fds[i], &c, 1, MSG_DONTWAIT) > 0)
					continue;
				if (i < 4)
					idle_gone[i] = true;
				else
					live_gone = g_get_monotonic_time() - t0;
			}
		}
		for (int i = 0; i < 4; i++)
			if (!idle_gone[i])
				_exit(33);
		if (!live_gone || live_gone < 1500000) {
			fprintf(stderr, "# live PREPARE closed after %" PRId64 " us\n", live_gone);
			_exit(34);
		}
		_exit(0);
	}
	assert_int_equal(run_until_exit(a, &pid, 1, 6000), 0);
	assert_int_equal(a->prepares, 5);
	assert_int_equal(stats_of(a).prepare_idle, 5);
	assert_int_equal(a->dropped, 5);
	assert_non_null(strstr(a->dropped_why, "no guest RAM arrived for 300 ms (prepare_idle_ms)"));
}

/*
 * (i) One process keeps max_pending full of connections without a HELLO,
 * reopening each as the HELLO deadline drops it: 60 honest HELLOs from
 * three other processes are all answered, each within 1 s.
 */
static void test_no_hello_flood(void **state)
{
	struct agent *a = *state;
	struct vt_handoff_limits l;
	pid_t attacker, victims[3];
	int stop[2];

	vt_handoff_limits_default(&l);
	l.max_pending = 32;
	l.max_peer_pending = 64;
	l.hello_timeout_ms = 300;
	vt_handoff_server_set_limits(a->srv, &l);
	assert_int_equal(pipe2(stop, O_CLOEXEC), 0);
	attacker = fork();
	assert_true(attacker >= 0);
	if (attacker == 0) {
		close(stop[1]);
		child_flood(a->path, stop[0], NULL, -1);
	}
	close(stop[0]);
	assert_true(WAIT_FOR(a, stats_of(a).hello_timeouts >= 32 && stats_of(a).refused_full >= 8,
			     5000));
	for (int v = 0; v < 3; v++) {
		victims[v] = fork();
		assert_true(victims[v] >= 0);
		if (victims[v] == 0) {
			char id[16];
			struct qemu_mem m;

			snprintf(id, sizeof(id), "v%d", v);
			if (!child_mem(&m, MEM_SIZE, true))
				_exit(30);
			for (int i = 0; i < 20; i++) {
				int ret = child_hello(a->path, &m, id, 1, 1000);

				if (ret)
					_exit(ret);
				g_usleep(10000);	/* the flood refills meanwhile */
			}
			_exit(0);
		}
	}
	assert_int_equal(run_until_exit(a, victims, 3, 30000), 0);
	assert_int_equal(a->hellos, 60);
	assert_true(stats_of(a).displaced >= 1);
	close(stop[1]);
	assert_int_equal(run_until_exit(a, &attacker, 1, 3000), 0);
	spin(a, 20);
}

/* In a child: serve with RLIMIT_NOFILE at the fds in use + @extra for @ms, then _exit. */
static pid_t serve_at_fd_limit(struct agent *a, int extra, int ms)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct vt_handoff_server_stats st;
		struct rlimit rl;
		int lowest = dup(0);

		close(lowest);
		rl.rlim_cur = (rlim_t)(lowest + extra);
		rl.rlim_max = 4096;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			_exit(10);
		emfile_run_cpu_us(a->ctx, ms);
		vt_handoff_server_get_stats(a->srv, &st);
		fprintf(stderr, "# agent child: reserve accepts %u, refused %u, timeouts %u, out of "
			"fds %u, hellos %d\n", st.reserve_accepts, st.reserve_refused,
			st.hello_timeouts, st.out_of_fds, a->hellos);
		_exit(0);
	}
	return pid;
}

/*
 * (j) The agent at its fd limit (a child serving with RLIMIT_NOFILE at its
 * use) while another process holds connections without a HELLO: QEMU's
 * RECONNECT is answered (accepted, or refused naming the fd limit), never
 * left without a reply; then, with room to accept but none for the HELLO's
 * fds, the HELLO is refused with -EMFILE naming RLIMIT_NOFILE, not closed as
 * "more fds than any message carries".
 */
static void test_emfile_reconnect(void **state)
{
	struct agent *a = *state;
	struct qemu_mem *m = qemu_mem_new(a, MEM_SIZE, true);
	struct vtier_handoff_hello h = hello_for(m, "mem0", 2);
	struct vtier_handoff_hello_reply reply;
	struct vtier_handoff_hdr hdr;
	pid_t attacker, server;
	int stop[2], ready[2], fd, status;
	char c;

	assert_int_equal(pipe2(stop, O_CLOEXEC), 0);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	attacker = fork();
	assert_true(attacker >= 0);
	if (attacker == 0) {
		close(stop[1]);
		for (int i = 0; i < 5; i++)
			if (child_connect(a->path, false) < 0)	/* queued, kept, silent */
				_exit(31);
		if (write(ready[1], "r", 1) != 1)
			_exit(32);
		child_wait_stop(stop[0]);
		_exit(0);
	}
	close(stop[0]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	server = serve_at_fd_limit(a, 0, 4000);
	fd = qemu_connect(a);
	send_hello_fds(fd, &h, m->memfd, m->uffd);
	assert_int_equal(recv_reply(fd, 3000, &hdr, &reply), 1);
	assert_int_equal(hdr.type, VTIER_HANDOFF_HELLO_REPLY);
	if (reply.status != 0 &&
	    !(reply.status == -EMFILE && strstr(reply.message, "RLIMIT_NOFILE")))
		fail_msg("RECONNECT refused: %d %s", reply.status, reply.message);
	close(fd);
	kill(server, SIGKILL);
	assert_int_equal(waitpid(server, &status, 0), server);
	close(stop[1]);
	assert_int_equal(waitpid(attacker, &status, 0), attacker);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* room for the connection only: the HELLO's two fds cannot be installed */
	server = serve_at_fd_limit(a, 1, 2000);
	fd = qemu_connect(a);
	h = hello_for(m, "mem0", 1);
	send_hello_fds(fd, &h, m->memfd, m->uffd);
	assert_int_equal(recv_reply(fd, 1500, &hdr, &reply), 1);
	assert_int_equal(reply.status, -EMFILE);
	assert_non_null(strstr(reply.message, "RLIMIT_NOFILE"));
	close(fd);
	kill(server, SIGKILL);
	assert_int_equal(waitpid(server, &status, 0), server);
	close(ready[0]);
	close(ready[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hello_accepted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hello_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prepare_then_hello, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prepare_early, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hello_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_policy_and_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_input_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_map, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ranges_update, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect_is_a_new_hello, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_socket_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hello_fd_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hello_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silent_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_gone_with_output, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_hellos, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_partial, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emfile_backoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prepare_flood, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prepare_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_hello_flood, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emfile_reconnect, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
