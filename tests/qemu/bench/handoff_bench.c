// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-handoff-bench: how long a thread waits when it touches an evicted
 * page, measured by that thread (clock_gettime around the access), in two
 * set-ups that differ only in who serves the fault:
 *
 *   inproc   a second thread of this process reads the userfaultfd and
 *            resolves each fault with UFFDIO_COPY: the bare kernel path.
 *   handoff  this process plays QEMU: it hands its memfd and userfaultfd to
 *            the reference peer (tests/qemu/peer) over the real hand-off
 *            protocol, has it evict the pages into its store, and the peer
 *            serves the faults (store lookup, crc32 check, UFFDIO_COPY).
 *
 * Usage:
 *   vtier-handoff-bench inproc [--pages N]
 *   vtier-handoff-bench handoff --socket PEER.sock --control PEER.ctl [--pages N]
 * Prints one line: mode pages p50_us p90_us p99_us max_us mean_us.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/falloc.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <vtier/handoff.h>

#define PAGE 4096ul

static struct {
	size_t pages;
	int memfd;
	int uffd;
	uint8_t *map;		/* "QEMU's" mapping, registered */
	uint8_t *store;		/* inproc: the evicted copies */
	volatile int stop;
	uint64_t ioctls;
} b;

static void die(const char *what)
{
	fprintf(stderr, "vtier-handoff-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void setup_memory(void)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_MISSING_SHMEM | UFFD_FEATURE_WP_HUGETLBFS_SHMEM,
	};
	struct uffdio_register reg;
	uint8_t page[PAGE];

	b.memfd = memfd_create("bench-guest-ram", MFD_CLOEXEC);
	if (b.memfd < 0 || ftruncate(b.memfd, b.pages * PAGE))
		die("memfd");
	/* Content through the fd: the mapping is not registered yet anyway. */
	for (size_t i = 0; i < b.pages; i++) {
		memset(page, (int)(i * 7 + 1), sizeof(page));
		if (pwrite(b.memfd, page, PAGE, i * PAGE) != (ssize_t)PAGE)
			die("pwrite");
	}
	b.map = mmap(NULL, b.pages * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, b.memfd, 0);
	if (b.map == MAP_FAILED)
		die("mmap");
	b.uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (b.uffd < 0 || ioctl(b.uffd, UFFDIO_API, &api))
		die("userfaultfd with shmem missing + write-protect");
	reg = (struct uffdio_register) {
		.range = { (uintptr_t)b.map, b.pages * PAGE },
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};
	if (ioctl(b.uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
	b.ioctls = reg.ioctls;
}

/* Touch every page once, timing each access; pages must all be evicted. */
static void touch_and_report(const char *mode)
{
	double *lat = malloc(b.pages * sizeof(*lat)), sum = 0;
	unsigned int bad = 0;

	for (size_t i = 0; i < b.pages; i++) {
		double t0 = now_us();
		uint8_t v = *(volatile uint8_t *)(b.map + i * PAGE + 100);

		lat[i] = now_us() - t0;
		sum += lat[i];
		bad += v != (uint8_t)(i * 7 + 1);
	}
	for (size_t i = 1; i < b.pages; i++) {	/* insertion sort is fine here */
		double v = lat[i];
		size_t j = i;

		while (j && lat[j - 1] > v) {
			lat[j] = lat[j - 1];
			j--;
		}
		lat[j] = v;
	}
	printf("mode=%s pages=%zu p50_us=%.1f p90_us=%.1f p99_us=%.1f max_us=%.1f mean_us=%.1f "
	       "bad=%u\n", mode, b.pages, lat[b.pages / 2], lat[b.pages * 90 / 100],
	       lat[b.pages * 99 / 100], lat[b.pages - 1], sum / b.pages, bad);
	free(lat);
	if (bad) {
		fprintf(stderr, "vtier-handoff-bench: %u pages read back wrong\n", bad);
		exit(1);
	}
}

static void *inproc_server(void *arg)
{
	(void)arg;
	while (!b.stop) {
		struct pollfd pfd = { .fd = b.uffd, .events = POLLIN };
		struct uffd_msg msg;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		while (read(b.uffd, &msg, sizeof(msg)) == sizeof(msg)) {
			uint64_t off = (msg.arg.pagefault.address - (uintptr_t)b.map) & ~(PAGE - 1);
			struct uffdio_copy c = {
				.dst = (uintptr_t)b.map + off,
				.src = (uintptr_t)b.store + off,
				.len = PAGE,
			};

			if (msg.event != UFFD_EVENT_PAGEFAULT)
				continue;
			while (ioctl(b.uffd, UFFDIO_COPY, &c) && errno == EAGAIN)
				;
		}
	}
	return NULL;
}

static void run_inproc(void)
{
	pthread_t t;

	b.store = malloc(b.pages * PAGE);
	for (size_t i = 0; i < b.pages; i++) {
		struct uffdio_writeprotect wp = {
			.range = { (uintptr_t)b.map + i * PAGE, PAGE },
			.mode = UFFDIO_WRITEPROTECT_MODE_WP,
		};

		if (ioctl(b.uffd, UFFDIO_WRITEPROTECT, &wp) ||
		    pread(b.memfd, b.store + i * PAGE, PAGE, i * PAGE) != (ssize_t)PAGE ||
		    fallocate(b.memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, i * PAGE, PAGE))
			die("evict");
	}
	pthread_create(&t, NULL, inproc_server, NULL);
	touch_and_report("inproc");
	b.stop = 1;
	pthread_join(t, NULL);
}

static int connect_unix(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)))
		die(path);
	return fd;
}

static void read_full(int fd, void *buf, size_t len)
{
	for (size_t got = 0; got < len;) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n <= 0)
			die("read from the peer");
		got += n;
	}
}

/* The hand-off as QEMU does it: HELLO with the memfd and the uffd. */
static int hand_off(const char *sock)
{
	struct {
		struct vtier_handoff_hdr hdr;
		struct vtier_handoff_hello hello;
		struct vtier_handoff_range range;
	} m = {
		.hdr = {
			.magic = VTIER_HANDOFF_MAGIC, .version = VTIER_HANDOFF_VERSION,
			.type = VTIER_HANDOFF_HELLO, .seq = 1,
			.size = sizeof(m.hello) + sizeof(m.range),
		},
		.hello = {
			.flags = VTIER_HELLO_F_WP, .n_ranges = 1,
			.size_bytes = b.pages * PAGE, .page_size = PAGE,
			.hva = (uintptr_t)b.map, .uffd_ioctls = b.ioctls,
			.generation = 1, .vm_name = "bench", .backend_id = "bench-mem",
		},
		.range = { .gpa = 0, .offset = 0, .size = b.pages * PAGE },
	};
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} control;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = control.buf, .msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	struct vtier_handoff_hdr rh;
	struct vtier_handoff_hello_reply reply;
	int fds[2] = { b.memfd, b.uffd };
	int fd = connect_unix(sock);

	m.hello.qemu_pid = getpid();
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	if (sendmsg(fd, &mh, 0) != (ssize_t)sizeof(m))
		die("send HELLO");
	read_full(fd, &rh, sizeof(rh));
	if (rh.type != VTIER_HANDOFF_HELLO_REPLY || rh.size != sizeof(reply))
		die("HELLO_REPLY");
	read_full(fd, &reply, sizeof(reply));
	if (reply.status) {
		fprintf(stderr, "vtier-handoff-bench: peer refused: %s\n", reply.message);
		exit(1);
	}
	return fd;	/* keep it open: closing it ends the hand-off */
}

static void peer_command(const char *control, const char *cmd)
{
	char reply[512] = "";
	int fd = connect_unix(control);
	size_t got = 0;

	if (write(fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd))
		die("control");
	while (got < sizeof(reply) - 1 && !strchr(reply, '\n')) {
		ssize_t n = read(fd, reply + got, sizeof(reply) - 1 - got);

		if (n <= 0)
			die("control reply");
		got += n;
	}
	close(fd);
	if (strncmp(reply, "OK", 2)) {
		fprintf(stderr, "vtier-handoff-bench: peer: %s", reply);
		exit(1);
	}
	fprintf(stderr, "# peer: %s", reply);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pages", required_argument, NULL, 'n' },
		{ "socket", required_argument, NULL, 's' },
		{ "control", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL, *control = NULL, *mode;
	char cmd[128];
	int opt, conn;

	b.pages = 20000;
	if (argc < 2) {
		fprintf(stderr, "usage: %s inproc|handoff [--pages N] [--socket S --control C]\n",
			argv[0]);
		return 2;
	}
	mode = argv[1];
	optind = 2;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			b.pages = strtoul(optarg, NULL, 0);
			break;
		case 's':
			sock = optarg;
			break;
		case 'c':
			control = optarg;
			break;
		default:
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	setup_memory();
	if (!strcmp(mode, "inproc")) {
		run_inproc();
		return 0;
	}
	if (strcmp(mode, "handoff") || !sock || !control) {
		fprintf(stderr, "handoff needs --socket and --control\n");
		return 2;
	}
	conn = hand_off(sock);
	snprintf(cmd, sizeof(cmd), "evict 0x0 %zu 1\n", b.pages);
	peer_command(control, cmd);
	touch_and_report("handoff");
	close(conn);
	return 0;
}
