// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target of the hand-off server's accept-level bounds
 * (host-agent/iface/handoff_server.h): the input is a script that opens
 * connections (from this process, or from a second process so that the
 * server sees two peers), writes bytes and fds on them, sends PREPAREs,
 * closes them, lets the server's loop and deadlines run, and sets small
 * limits (max_pending, per-peer caps, HELLO and PREPARE deadlines). The fds
 * a message carries are chosen per message: the right memfd, a memfd too
 * small or empty, a pipe, /dev/null, a socket, or none where one is due;
 * whatever fd reaches the agent's ops is a memfd as large as the HELLO says
 * (what the kernel proves, never what the peer claims). HELLOs true to this
 * process (its mapping of the memfd with a userfaultfd registered, where the
 * kernel allows one) are accepted, with a zero map and a send map good or
 * bad, and followed by a MIGRATION (SEND_END answered with SENT once); a map
 * that reaches the agent is one QEMU cannot shrink, of the backend's size. After
 * each step the server's books must hold: no more pending connections than
 * max_pending and no more partial input than its cap (or than were held
 * when a limit was lowered); after the script every connection closes and
 * the counters per reason add up to no more than the dropped ones.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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

#include <glib.h>

#include "handoff_server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SLOTS 12
#define MEM_SIZE (64u << 10)

/* The fds a message may carry (the byte that chooses them: fd_kind()). */
enum fd_kind { FD_MEMFD, FD_MEMFD_SMALL, FD_MEMFD_EMPTY, FD_PIPE, FD_DEVNULL, FD_SOCKET, FD_KINDS };

/* The zero or send map a HELLO carries (send_hello()): good, the wrong size, unsealed. */
enum map_kind { MAP_GOOD, MAP_SMALL, MAP_UNSEALED, MAP_KINDS };

/*
 * What the whole run shares: one socket path, an fd of each kind, a helper
 * process; QEMU's mapping of the memfd with a userfaultfd registered on it
 * (-1 where the kernel has none for us), and maps of each kind.
 */
static struct {
	char path[108];
	int memfd;
	int fd[FD_KINDS];
	int helper;		/* socketpair to the helper; -1 before the first use */
	void *map;
	int uffd;
	int maps[MAP_KINDS];
} run = { .memfd = -1, .helper = -1, .uffd = -1 };

struct fuzz_agent {
	unsigned int open;	/* connections the server told about: accepted - closed */
	unsigned int dropped;
	unsigned int prepares;
	unsigned int sent;	/* SEND_ENDs answered */
};

/* A map the agent takes is there exactly with its flag: a memfd QEMU cannot resize, of the size. */
static void assert_checked_map(const struct vt_handoff_hello *hello, struct vt_handoff_conn *conn,
			       unsigned int fd_index, uint32_t flag)
{
	const int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	int fd = vt_handoff_conn_take_map(conn, fd_index);
	struct stat st;

	assert((fd >= 0) == !!(hello->fixed->flags & flag));
	if (fd < 0)
		return;
	assert(fstat(fd, &st) == 0 && S_ISREG(st.st_mode));
	assert((uint64_t)st.st_size == vtier_zero_map_bytes(hello->fixed->size_bytes,
							     hello->fixed->page_size));
	assert((fcntl(fd, F_GET_SEALS) & seals) == seals);
	close(fd);
}

/* What reaches the agent is a tmpfs file of at least fd_offset + size_bytes, whatever was sent. */
static void assert_checked_memfd(const struct vt_handoff_hello *hello, int memfd)
{
	struct stat st;

	assert(fstat(memfd, &st) == 0 && S_ISREG(st.st_mode));
	assert((uint64_t)st.st_size >= hello->fixed->fd_offset + hello->fixed->size_bytes);
}

static int on_hello(struct vt_handoff_conn *conn, const struct vt_handoff_hello *hello, int memfd,
		    int uffd, char *msg, void *opaque)
{
	struct fuzz_agent *a = opaque;

	(void)msg;
	assert_checked_memfd(hello, memfd);
	assert_checked_map(hello, conn, VTIER_HANDOFF_FD_ZERO_MAP, VTIER_HELLO_F_ZERO_MAP);
	assert_checked_map(hello, conn, VTIER_HANDOFF_FD_SEND_MAP, VTIER_HELLO_F_SEND_MAP);
	close(memfd);
	close(uffd);
	a->open++;
	return 0;
}

/* SEND_END: nothing marked, answered at once, and only once. */
static void on_migration(struct vt_handoff_conn *conn, enum vtier_migration_event event,
			 void *opaque)
{
	struct fuzz_agent *a = opaque;
	int ret;

	assert(event >= VTIER_MIGRATION_START && event <= VTIER_MIGRATION_SEND_END);
	if (event != VTIER_MIGRATION_SEND_END) {
		assert(vt_handoff_conn_send_sent(conn, 0, 0, NULL) == -EINVAL);
		return;
	}
	ret = vt_handoff_conn_send_sent(conn, 0, 0, "no page marked");
	assert(ret == 0 || ret == -ENOBUFS || ret == -ENOTCONN);
	assert(vt_handoff_conn_send_sent(conn, 0, 0, NULL) == -EINVAL);
	a->sent++;
}

static bool on_prepare(struct vt_handoff_conn *conn, const struct vt_handoff_hello *hello,
		       int memfd, void *opaque)
{
	struct fuzz_agent *a = opaque;

	(void)conn;
	assert_checked_memfd(hello, memfd);
	close(memfd);
	a->prepares++;
	/* an offered early hand-off is taken: the server answers HELLO_REPLY F_EARLY */
	return hello->fixed->flags & VTIER_HELLO_F_EARLY;
}

static void on_closed(struct vt_handoff_conn *conn, const char *why, void *opaque)
{
	struct fuzz_agent *a = opaque;

	(void)conn;
	assert(why && why[0]);
	a->open--;
}

static void on_dropped(struct vt_handoff_conn *conn, const char *why, void *opaque)
{
	struct fuzz_agent *a = opaque;

	(void)conn;
	assert(why && why[0]);
	a->dropped++;
}

static const struct vt_handoff_ops ops = {
	.hello = on_hello,
	.prepare = on_prepare,
	.migration = on_migration,
	.closed = on_closed,
	.dropped = on_dropped,
};

static int connect_path(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	strcpy(addr.sun_path, run.path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The helper: connects on request and sends the socket back (its SO_PEERCRED stays its own). */
static void __attribute__((noreturn)) helper_main(int sock)
{
	char c;

	while (read(sock, &c, 1) == 1) {
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} control;
		struct iovec iov = { &c, 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		int fd = connect_path();

		c = fd >= 0;
		if (fd >= 0) {
			struct cmsghdr *cm;

			mh.msg_control = control.buf;
			mh.msg_controllen = sizeof(control.buf);
			cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		}
		if (sendmsg(sock, &mh, MSG_NOSIGNAL) != 1)
			_exit(0);
		if (fd >= 0)
			close(fd);
	}
	_exit(0);
}

/* A userfaultfd registered (missing + write-protect) on run.map, as QEMU has one; -1: none. */
static int uffd_on_map(void)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_MISSING_SHMEM | UFFD_FEATURE_WP_HUGETLBFS_SHMEM,
	};
	struct uffdio_register reg = {
		.range = { (uintptr_t)run.map, MEM_SIZE },
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (uffd >= 0 && (ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg))) {
		close(uffd);
		uffd = -1;
	}
	return uffd;
}

/* A map of @bytes bytes, @seals added. */
static int map_memfd(size_t bytes, int seals)
{
	int fd = memfd_create("fuzz-map", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert(fd >= 0 && ftruncate(fd, (off_t)bytes) == 0);
	assert(!seals || fcntl(fd, F_ADD_SEALS, seals) == 0);
	return fd;
}

static void run_init(void)
{
	char dir[] = "/tmp/fuzz-handoff-XXXXXX";
	int sv[2];
	pid_t pid;

	if (run.memfd >= 0)
		return;
	signal(SIGPIPE, SIG_IGN);
	assert(mkdtemp(dir));
	snprintf(run.path, sizeof(run.path), "%s/agent.sock", dir);
	run.memfd = memfd_create("fuzz-ram", MFD_CLOEXEC);
	assert(run.memfd >= 0 && ftruncate(run.memfd, MEM_SIZE) == 0);
	run.fd[FD_MEMFD] = run.memfd;
	/* never touched here: a fault on it would wait for an agent that does not serve it */
	run.map = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, run.memfd, 0);
	assert(run.map != MAP_FAILED);
	run.uffd = uffd_on_map();
	run.maps[MAP_GOOD] = map_memfd(vtier_zero_map_bytes(MEM_SIZE, 4096),
				       F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	run.maps[MAP_SMALL] = map_memfd(vtier_zero_map_bytes(MEM_SIZE, 4096) * 2,
					F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	run.maps[MAP_UNSEALED] = map_memfd(vtier_zero_map_bytes(MEM_SIZE, 4096), 0);
	run.fd[FD_MEMFD_SMALL] = memfd_create("fuzz-small", MFD_CLOEXEC);
	assert(run.fd[FD_MEMFD_SMALL] >= 0 && ftruncate(run.fd[FD_MEMFD_SMALL], MEM_SIZE - 4096) == 0);
	run.fd[FD_MEMFD_EMPTY] = memfd_create("fuzz-empty", MFD_CLOEXEC);
	assert(run.fd[FD_MEMFD_EMPTY] >= 0);
	assert(pipe2(sv, O_CLOEXEC) == 0);
	run.fd[FD_PIPE] = sv[0];	/* the write end stays open too: never EOF */
	run.fd[FD_DEVNULL] = open("/dev/null", O_RDWR | O_CLOEXEC);
	assert(run.fd[FD_DEVNULL] >= 0);
	assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	run.fd[FD_SOCKET] = sv[0];
	assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	pid = fork();
	assert(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		helper_main(sv[1]);
	}
	close(sv[1]);
	run.helper = sv[0];
}

/* A connection made by the helper process: another peer. */
static int connect_other(void)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	char c = 'c';
	struct iovec iov = { &c, 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = control.buf, .msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cm;
	int fd = -1;

	if (write(run.helper, &c, 1) != 1 || recvmsg(run.helper, &mh, MSG_CMSG_CLOEXEC) != 1 || !c)
		return -1;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

static void send_fds(int fd, const uint8_t *buf, size_t len, const int *fds, unsigned int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 6)];
		struct cmsghdr align;
	} control;
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	assert(nfds <= 6);
	if (nfds && len) {
		struct cmsghdr *cm;

		mh.msg_control = control.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	(void)!sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void send_with_fds(int fd, const uint8_t *buf, size_t len, unsigned int nfds,
			  enum fd_kind kind)
{
	int fds[6];

	for (unsigned int i = 0; i < nfds && i < 6; i++)
		fds[i] = run.fd[kind];
	send_fds(fd, buf, len, fds, nfds);
}

/*
 * A PREPARE true to this process's pid, for 64 KiB. @variant: bit 0 RECONNECT
 * (a protocol error), bit 1 EARLY offered, bits 2-4 the fd sent (enum
 * fd_kind; 6: none, 7: two memfds), bits 5-7 the backend id.
 */
static void send_prepare(int fd, uint8_t variant)
{
	unsigned int fdsel = (variant >> 2) & 7;
	struct vtier_handoff_hello h = {
		.flags = VTIER_HELLO_F_PREPARE | VTIER_HELLO_F_INCOMING,
		.size_bytes = MEM_SIZE,
		.page_size = 4096,
		.generation = 1,
		.qemu_pid = (uint32_t)getpid(),
	};
	uint8_t buf[sizeof(struct vtier_handoff_hdr) + sizeof(h)];

	if (variant & 1)
		h.flags |= VTIER_HELLO_F_RECONNECT;	/* a protocol error */
	if (variant & 2)
		h.flags |= VTIER_HELLO_F_EARLY;
	snprintf(h.backend_id, sizeof(h.backend_id), "mem%u", variant >> 5);
	vt_handoff_hdr_init((struct vtier_handoff_hdr *)buf, VTIER_HANDOFF_HELLO, 1, sizeof(h));
	memcpy(buf + sizeof(struct vtier_handoff_hdr), &h, sizeof(h));
	send_with_fds(fd, buf, sizeof(buf), fdsel == 6 ? 0 : fdsel == 7 ? 2 : 1,
		      fdsel < FD_KINDS ? (enum fd_kind)fdsel : FD_MEMFD);
}

/*
 * A HELLO true to this process (its pid, its mapping, the registered
 * userfaultfd), for 64 KiB; nothing where the kernel gave no userfaultfd.
 * @variant: bits 0-1 the maps (0 none, 1 a zero map, 2 a zero and a send
 * map, 3 SEND_MAP's flag without ZERO_MAP's, four fds), bits 2-3 the last
 * map sent (enum map_kind; 3: good), bits 4-5 a MIGRATION right after (0
 * none, 1 START, 2 SEND_END, 3 event 6, a protocol error), bits 6-7 the
 * backend id.
 */
static void send_hello(int fd, uint8_t variant)
{
	static const uint32_t flags[] = {
		0, VTIER_HELLO_F_ZERO_MAP, VTIER_HELLO_F_ZERO_MAP | VTIER_HELLO_F_SEND_MAP,
		VTIER_HELLO_F_SEND_MAP,
	};
	static const uint32_t events[] = { 0, VTIER_MIGRATION_START, VTIER_MIGRATION_SEND_END, 6 };
	unsigned int maps = variant & 3, kind = (variant >> 2) & 3;
	struct vtier_handoff_hello h = {
		.flags = VTIER_HELLO_F_WP | flags[maps],
		.size_bytes = MEM_SIZE,
		.page_size = 4096,
		.hva = (uintptr_t)run.map,
		.generation = 1,
		.qemu_pid = (uint32_t)getpid(),
	};
	struct vtier_handoff_migration mig = { .event = events[(variant >> 4) & 3] };
	uint8_t buf[sizeof(struct vtier_handoff_hdr) + sizeof(h)];
	uint8_t mbuf[sizeof(struct vtier_handoff_hdr) + sizeof(mig)];
	int fds[4] = { run.memfd, run.uffd, run.maps[MAP_GOOD], run.maps[MAP_GOOD] };
	unsigned int nfds = maps ? 3 + (maps != 1) : 2;

	if (run.uffd < 0)
		return;
	if (maps)
		fds[nfds - 1] = run.maps[kind < MAP_KINDS ? kind : MAP_GOOD];
	snprintf(h.backend_id, sizeof(h.backend_id), "mem%u", variant >> 6);
	vt_handoff_hdr_init((struct vtier_handoff_hdr *)buf, VTIER_HANDOFF_HELLO, 1, sizeof(h));
	memcpy(buf + sizeof(struct vtier_handoff_hdr), &h, sizeof(h));
	send_fds(fd, buf, sizeof(buf), fds, nfds);
	if (!mig.event)
		return;
	vt_handoff_hdr_init((struct vtier_handoff_hdr *)mbuf, VTIER_HANDOFF_MIGRATION, 2,
			    sizeof(mig));
	memcpy(mbuf + sizeof(struct vtier_handoff_hdr), &mig, sizeof(mig));
	send_fds(fd, mbuf, sizeof(mbuf), NULL, 0);
}

static void loop_run(GMainContext *ctx, unsigned int us)
{
	gint64 end = g_get_monotonic_time() + us;

	do {
		while (g_main_context_iteration(ctx, FALSE))
			;
		if (us)
			g_usleep(200);
	} while (g_get_monotonic_time() < end);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vt_handoff_server_stats st;
	struct vt_handoff_limits l;
	struct vt_handoff_server *srv;
	struct fuzz_agent a = { 0 };
	unsigned int pending_floor = 0;	/* held when a limit was lowered */
	size_t buffered_floor = 0;
	GMainContext *ctx;
	int slot[SLOTS];
	size_t i = 0;

	run_init();
	for (int s = 0; s < SLOTS; s++)
		slot[s] = -1;
	ctx = g_main_context_new();
	assert(vt_handoff_server_new(run.path, ctx, &ops, &a, &srv) == 0);
	vt_handoff_limits_default(&l);
	l.hello_timeout_ms = 20;
	l.prepare_idle_ms = 20;
	l.reserve_hello_ms = 10;
	vt_handoff_server_set_limits(srv, &l);
	while (i < size) {
		uint8_t op = data[i++], s = i < size ? data[i] % SLOTS : 0;

		switch (op % 8) {
		case 0:		/* connect from this process, or (1) from the helper */
		case 1:
			i++;
			if (slot[s] >= 0)
				close(slot[s]);
			slot[s] = op % 8 ? connect_other() : connect_path();
			break;
		case 2: {	/* bytes, and fds (0..5) of one kind with them */
			size_t len = i + 2 < size ? data[i + 2] : 0;
			unsigned int nfds = i + 1 < size ? data[i + 1] % 6 : 0;
			enum fd_kind kind = i + 1 < size ? (enum fd_kind)(data[i + 1] / 6 % FD_KINDS) :
					    FD_MEMFD;

			i += 3;
			len = MIN(len, size - MIN(i, size));
			if (slot[s] >= 0)
				send_with_fds(slot[s], data + i, len, nfds, kind);
			i += len;
			break;
		}
		case 3:		/* a PREPARE */
			i++;
			if (slot[s] >= 0)
				send_prepare(slot[s], i < size ? data[i] : 0);
			i++;
			break;
		case 4:
			i++;
			if (slot[s] >= 0)
				close(slot[s]);
			slot[s] = -1;
			break;
		case 5:		/* let deadlines pass: 0..25 ms */
			loop_run(ctx, (i < size ? data[i++] % 26u : 0) * 1000u);
			break;
		case 6:		/* small limits */
			if (i + 3 > size)
				break;
			l.max_pending = 1 + data[i] % 8;
			l.max_peer_pending = 1 + data[i + 1] % 8;
			l.max_peer_conns = 1 + data[i + 2] % 8;
			l.max_buffered_bytes = 1024u << (data[i] >> 4);
			vt_handoff_server_set_limits(srv, &l);
			pending_floor = vt_handoff_server_pending(srv);
			buffered_floor = vt_handoff_server_buffered_bytes(srv);
			i += 3;
			break;
		default:		/* 7: a HELLO true to this process, maps, a MIGRATION */
			i++;
			if (slot[s] >= 0)
				send_hello(slot[s], i < size ? data[i] : 0);
			i++;
			break;
		}
		loop_run(ctx, 0);
		assert(vt_handoff_server_pending(srv) <= MAX(l.max_pending, pending_floor));
		assert(vt_handoff_server_buffered_bytes(srv) <= MAX(l.max_buffered_bytes,
								    buffered_floor));
	}
	loop_run(ctx, 30000);	/* every deadline passes */
	vt_handoff_server_get_stats(srv, &st);
	assert(st.refused_peer_conns + st.refused_peer_pending + st.refused_full + st.displaced +
	       st.hello_timeouts + st.prepare_idle + st.no_credentials <= st.dropped);
	assert(a.dropped == st.dropped);
	for (int s = 0; s < SLOTS; s++)
		if (slot[s] >= 0)
			close(slot[s]);
	loop_run(ctx, 2000);
	assert(vt_handoff_server_pending(srv) == 0);	/* every peer gone: nothing charged */
	vt_handoff_server_free(srv);
	assert(a.open == 0);
	g_main_context_unref(ctx);
	return 0;
}
