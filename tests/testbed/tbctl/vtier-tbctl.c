// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-tbctl: the testbed's plumbing between L1 (the host VM) and L2 guests.
 *
 *   vtier-tbctl qmp SOCKET JSON...        (L1) run QMP commands, print each reply
 *   vtier-tbctl exec [-t SEC] SOCKET CMD  (L1) run CMD with sh -c in an L2 guest,
 *                                         print its output, exit with its status
 *                                         (124: CMD timed out; 125: no answer
 *                                         from the agent within SEC + 10 s)
 *   vtier-tbctl agent [--name PORT]       (L2) serve exec requests on a virtio port
 *   vtier-tbctl virtio [-t SEC] SOCKET    (L1) every virtio queue of a guest: QEMU's
 *                                         indices and the guest's rings (hang reports)
 *   vtier-tbctl hold-vm                   (L1) create an empty KVM VM and keep it
 *                                         until killed
 *   vtier-tbctl watch SOCKET LOG          (L1) log a guest QEMU's QMP events; when
 *                                         the guest stops itself (-action
 *                                         shutdown=pause), dump its CPU state
 *                                         and quit that QEMU
 *
 * The exec channel is a virtio-serial port in L2 whose QEMU chardev is a unix
 * socket server in L1. Frames on it:
 *   client -> agent   "@@R <nonce> <timeout_s> <len>\n" <len bytes of command>
 *   agent -> client   "@@B <nonce>\n"  then  "@@O <len>\n" <len bytes>  ...
 *                     then "@@E <nonce> <status>\n"
 * The client skips everything before "@@B <its nonce>", so output left over from
 * an earlier client that gave up never reaches the next one.
 *
 * Built static so it runs in the minimal L1/L2 roots.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_TIMEOUT 124    /* the command outlived its timeout (killed by the agent) */
#define EXIT_NO_AGENT 125   /* the agent did not answer at all: the guest hangs or is gone */
#define MAX_CMD_BYTES (64 * 1024)

static const char *prog = "vtier-tbctl";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Write everything, waiting at most 10 s for a non-blocking fd to take more
 * (a virtio port whose host side closed stays EAGAIN forever).
 */
static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    int64_t stuck_since = 0;

    while (len > 0) {
        ssize_t n = write(fd, p, len);

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN) {
                struct pollfd pfd = { .fd = fd, .events = POLLOUT };

                if (!stuck_since) {
                    stuck_since = now_ms();
                } else if (now_ms() - stuck_since > 10000) {
                    return -ETIMEDOUT;
                }
                poll(&pfd, 1, 100);
                continue;
            }
            return -errno;
        }
        stuck_since = 0;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Buffered reader with a deadline, for both sockets and the virtio port. */
struct reader {
    int fd;
    char buf[65536];
    size_t start, end;
    int64_t deadline_ms;   /* 0: none */
};

/* Returns 1 when data was added, 0 on EOF, -ETIMEDOUT or -errno. */
static int reader_fill(struct reader *r)
{
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    if (r->end == sizeof(r->buf)) {
        return -ENOBUFS;
    }
    for (;;) {
        int timeout = -1;
        struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
        ssize_t n;

        if (r->deadline_ms) {
            int64_t left = r->deadline_ms - now_ms();

            if (left <= 0) {
                return -ETIMEDOUT;
            }
            timeout = (int)(left > 1000 ? 1000 : left);
        }
        if (poll(&pfd, 1, timeout) < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR))) {
            continue;
        }
        n = read(r->fd, r->buf + r->end, sizeof(r->buf) - r->end);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            return -errno;
        }
        if (n == 0) {
            return 0;
        }
        r->end += (size_t)n;
        return 1;
    }
}

/* Next line without its '\n' (NUL-terminated in place). NULL on EOF/error, *err set. */
static char *reader_line(struct reader *r, int *err)
{
    for (;;) {
        char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);
        int rc;

        if (nl) {
            char *line = r->buf + r->start;

            *nl = '\0';
            r->start = (size_t)(nl - r->buf) + 1;
            return line;
        }
        rc = reader_fill(r);
        if (rc <= 0) {
            *err = rc == 0 ? -EPIPE : rc;
            return NULL;
        }
    }
}

/* Copy exactly len bytes to out_fd (or drop them when out_fd < 0). */
static int reader_copy(struct reader *r, size_t len, int out_fd)
{
    while (len > 0) {
        size_t avail = r->end - r->start;
        int rc;

        if (avail == 0) {
            rc = reader_fill(r);
            if (rc <= 0) {
                return rc == 0 ? -EPIPE : rc;
            }
            continue;
        }
        if (avail > len) {
            avail = len;
        }
        if (out_fd >= 0 && write_all(out_fd, r->buf + r->start, avail) < 0) {
            out_fd = -1;   /* reader went away: keep consuming the frame */
        }
        r->start += avail;
        len -= avail;
    }
    return 0;
}

/*
 * Connect, retrying while the socket is refused (its server is busy) until
 * deadline_ms, and while it does not exist (its QEMU is starting) until
 * missing_ms: a guest whose QEMU is gone must fail fast.
 */
static int connect_unix(const char *path, int64_t deadline_ms, int64_t missing_ms)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };

    if (strlen(path) >= sizeof(sa.sun_path)) {
        die("socket path too long: %s", path);
    }
    strcpy(sa.sun_path, path);
    for (;;) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0) {
            die("socket: %s", strerror(errno));
        }
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
            return fd;
        }
        close(fd);
        if ((errno != ENOENT && errno != ECONNREFUSED) || now_ms() >= deadline_ms ||
            (errno == ENOENT && now_ms() >= missing_ms)) {
            fprintf(stderr, "%s: connect %s: %s\n", prog, path, strerror(errno));
            return -1;
        }
        usleep(100 * 1000);
    }
}

/* The one option of qmp, virtio and exec: -t SEC into *timeout_s; -1 on a bad option. */
static int opt_timeout(int argc, char **argv, int *timeout_s)
{
    int opt;

    while ((opt = getopt(argc, argv, "+t:")) != -1) {
        if (opt != 't') {
            return -1;
        }
        *timeout_s = atoi(optarg);
    }
    return 0;
}

/* ------------------------------------------------------------------ qmp */

static bool json_str(const char *line, const char *key, char *out, size_t size);

/* The next reply, skipping events; *out (if set) points to it until the next read. */
static int qmp_reply_line(struct reader *r, bool print, char **out)
{
    for (;;) {
        int err = 0;
        char *line = reader_line(r, &err);

        if (!line) {
            fprintf(stderr, "%s: qmp: %s\n", prog,
                    err == -ETIMEDOUT ? "timed out waiting for a reply" : strerror(-err));
            return 2;
        }
        if (!strncmp(line, "{\"return\"", 9)) {
            if (print) {
                puts(line);
            }
            if (out) {
                *out = line;
            }
            return 0;
        }
        if (!strncmp(line, "{\"error\"", 8)) {
            puts(line);
            return 1;
        }
        /* events and the greeting are skipped */
    }
}

static int qmp_reply(struct reader *r, bool print)
{
    return qmp_reply_line(r, print, NULL);
}

/* Connect to a QMP socket and leave command mode on; -1 on failure (said). */
static int qmp_open(struct reader *r, const char *path, int timeout_s)
{
    const char *caps = "{\"execute\":\"qmp_capabilities\"}\n";
    int fd;

    r->deadline_ms = now_ms() + (int64_t)timeout_s * 1000;
    fd = connect_unix(path, r->deadline_ms, r->deadline_ms);
    if (fd < 0) {
        return -1;
    }
    r->fd = fd;
    r->start = r->end = 0;
    if (write_all(fd, caps, strlen(caps)) < 0 || qmp_reply(r, false) != 0) {
        fprintf(stderr, "%s: qmp: capabilities negotiation failed\n", prog);
        close(fd);
        return -1;
    }
    return fd;
}

/* One command; its reply line in *out (NULL on an error reply). */
static int qmp_call(struct reader *r, char **out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int qmp_call(struct reader *r, char **out, const char *fmt, ...)
{
    char cmd[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(cmd, sizeof(cmd) - 1, fmt, ap);
    va_end(ap);
    cmd[n++] = '\n';
    *out = NULL;
    if (write_all(r->fd, cmd, (size_t)n) < 0) {
        return 2;
    }
    return qmp_reply_line(r, false, out);
}

/* The unsigned number after "key": in a QMP reply line. */
static bool json_u64(const char *line, const char *key, uint64_t *out)
{
    char pat[64];
    const char *p;
    char *end;

    snprintf(pat, sizeof(pat), "\"%s\":", key);
    p = line ? strstr(line, pat) : NULL;
    if (!p) {
        return false;
    }
    p += strlen(pat);
    while (*p == ' ') {
        p++;
    }
    *out = strtoull(p, &end, 10);
    return end != p;
}

/* A 16-bit word of guest-physical memory, read with HMP xp. */
static bool guest_u16(struct reader *r, uint64_t gpa, unsigned *out)
{
    char *reply, *colon;

    if (qmp_call(r, &reply, "{\"execute\":\"human-monitor-command\",\"arguments\":"
                 "{\"command-line\":\"xp /1hx 0x%" PRIx64 "\"}}", gpa) != 0 || !reply) {
        return false;
    }
    colon = strstr(reply, ": 0x");
    return colon && sscanf(colon + 2, "%x", out) == 1;
}

/*
 * The state of every queue of a guest's virtio devices: QEMU's view
 * (x-query-virtio-queue-status) and the guest's, read from its rings (avail
 * idx and the used_event it asked for, used idx and the avail_event QEMU
 * asked for). A lost kick shows as a guest avail idx QEMU has not consumed; a
 * lost interrupt as a used idx past what the guest has seen.
 */
static int cmd_virtio(int argc, char **argv)
{
    static struct reader r;
    char *reply, paths[8][128];
    int timeout_s = 10, npaths = 0;

    if (opt_timeout(argc, argv, &timeout_s) < 0) {
        return 2;
    }
    if (argc - optind != 1) {
        die("usage: virtio [-t SEC] QMP-SOCKET");
    }
    if (qmp_open(&r, argv[optind], timeout_s) < 0) {
        return 2;
    }
    if (qmp_call(&r, &reply, "{\"execute\":\"x-query-virtio\"}") != 0 || !reply) {
        fprintf(stderr, "%s: virtio: x-query-virtio failed\n", prog);
        return 2;
    }
    for (const char *p = reply; npaths < 8 && (p = strstr(p, "\"path\": \"")); p++) {
        if (!json_str(p, "path", paths[npaths], sizeof(paths[npaths]))) {
            break;
        }
        npaths++;
    }
    for (int i = 0; i < npaths; i++) {
        uint64_t nvq = 0, isr = 0;

        if (qmp_call(&r, &reply, "{\"execute\":\"x-query-virtio-status\",\"arguments\":"
                     "{\"path\":\"%s\"}}", paths[i]) != 0 || !reply) {
            continue;
        }
        json_u64(reply, "num-vqs", &nvq);
        json_u64(reply, "isr", &isr);
        {
            char name[64] = "?";

            json_str(reply, "name", name, sizeof(name));
            printf("%s (%s): %" PRIu64 " queues, isr %" PRIu64 ", event_idx %s\n", paths[i],
                   name, nvq, isr, strstr(reply, "VIRTIO_RING_F_EVENT_IDX") ? "yes" : "no");
        }
        for (uint64_t q = 0; q < nvq && q < 64; q++) {
            uint64_t num = 0, avail = 0, used = 0, last_avail = 0, shadow = 0, used_idx = 0;
            uint64_t sig = 0, sig_valid = 0, inuse = 0;
            unsigned g_avail = 0, g_used_event = 0, g_used = 0, g_avail_event = 0;
            bool ok;

            if (qmp_call(&r, &reply, "{\"execute\":\"x-query-virtio-queue-status\","
                         "\"arguments\":{\"path\":\"%s\",\"queue\":%" PRIu64 "}}",
                         paths[i], q) != 0 || !reply) {
                continue;
            }
            json_u64(reply, "vring-num", &num);
            json_u64(reply, "vring-avail", &avail);
            json_u64(reply, "vring-used", &used);
            json_u64(reply, "last-avail-idx", &last_avail);
            json_u64(reply, "shadow-avail-idx", &shadow);
            json_u64(reply, "used-idx", &used_idx);
            json_u64(reply, "signalled-used", &sig);
            json_u64(reply, "inuse", &inuse);
            sig_valid = strstr(reply, "\"signalled-used-valid\": true") != NULL;
            if (!avail || !used) {
                printf("  vq %" PRIu64 ": not set up\n", q);
                continue;
            }
            ok = guest_u16(&r, avail + 2, &g_avail) &&
                 guest_u16(&r, avail + 4 + 2 * num, &g_used_event) &&
                 guest_u16(&r, used + 2, &g_used) &&
                 guest_u16(&r, used + 4 + 8 * num, &g_avail_event);
            printf("  vq %" PRIu64 ": num %" PRIu64 " qemu: last_avail %" PRIu64
                   " shadow_avail %" PRIu64 " used %" PRIu64 " inuse %" PRIu64
                   " signalled_used %" PRIu64 "%s",
                   q, num, last_avail, shadow, used_idx, inuse, sig, sig_valid ? "" : " (invalid)");
            if (ok) {
                printf(" | ring: avail.idx %u used_event %u used.idx %u avail_event %u%s%s\n",
                       g_avail, g_used_event, g_used, g_avail_event,
                       g_avail != (unsigned)(last_avail & 0xffff) ? " UNCONSUMED-AVAIL" : "",
                       inuse ? " IN-FLIGHT" : "");
            } else {
                printf(" | ring: unreadable\n");
            }
        }
    }
    close(r.fd);
    return 0;
}

static int cmd_qmp(int argc, char **argv)
{
    int timeout_s = 30, fd, rc = 0;
    static struct reader r;

    if (opt_timeout(argc, argv, &timeout_s) < 0) {
        return 2;
    }
    if (argc - optind < 2) {
        die("usage: qmp [-t SEC] SOCKET JSON...");
    }
    fd = qmp_open(&r, argv[optind], timeout_s);
    if (fd < 0) {
        return 2;
    }
    for (int i = optind + 1; i < argc && rc == 0; i++) {
        if (write_all(fd, argv[i], strlen(argv[i])) < 0 || write_all(fd, "\n", 1) < 0) {
            fprintf(stderr, "%s: qmp: write: %s\n", prog, strerror(errno));
            rc = 2;
            break;
        }
        rc = qmp_reply(&r, true);
    }
    close(fd);
    return rc;
}

/* ------------------------------------------------------------------ exec client */

static int cmd_exec(int argc, char **argv)
{
    int timeout_s = 60, fd, err = 0;
    char nonce[40], begin[64], hdr[128];
    static struct reader r;
    size_t len;
    const char *cmd;

    if (opt_timeout(argc, argv, &timeout_s) < 0) {
        return 2;
    }
    if (argc - optind != 2) {
        die("usage: exec [-t SEC] SOCKET 'COMMAND'");
    }
    cmd = argv[optind + 1];
    len = strlen(cmd);
    if (len == 0 || len > MAX_CMD_BYTES) {
        die("command empty or longer than %d bytes", MAX_CMD_BYTES);
    }
    /* The agent kills the command at timeout_s; allow it time to report that. */
    r.deadline_ms = now_ms() + (int64_t)timeout_s * 1000 + 10000;
    fd = connect_unix(argv[optind], r.deadline_ms, now_ms() + 10000);
    if (fd < 0) {
        return 2;
    }
    r.fd = fd;
    {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(nonce, sizeof(nonce), "%lx%lx%x", (long)ts.tv_sec, ts.tv_nsec,
                 (unsigned)getpid());
    }
    snprintf(hdr, sizeof(hdr), "@@R %s %d %zu\n", nonce, timeout_s, len);
    if (write_all(fd, hdr, strlen(hdr)) < 0 || write_all(fd, cmd, len) < 0) {
        fprintf(stderr, "%s: exec: write: %s\n", prog, strerror(errno));
        close(fd);
        return 2;
    }
    snprintf(begin, sizeof(begin), "@@B %s", nonce);
    for (;;) {
        char *line = reader_line(&r, &err);

        if (!line) {
            goto lost;
        }
        if (!strcmp(line, begin)) {
            break;
        }
    }
    for (;;) {
        char *line = reader_line(&r, &err);
        unsigned long n;
        int status;
        char got[40];

        if (!line) {
            goto lost;
        }
        if (sscanf(line, "@@O %lu", &n) == 1) {
            err = reader_copy(&r, n, STDOUT_FILENO);
            if (err < 0) {
                goto lost;
            }
        } else if (sscanf(line, "@@E %39s %d", got, &status) == 2 && !strcmp(got, nonce)) {
            close(fd);
            return status;
        } else {
            fprintf(stderr, "%s: exec: bad frame from the agent: %.80s\n", prog, line);
            close(fd);
            return 2;
        }
    }
lost:
    fprintf(stderr, "%s: exec: %s\n", prog,
            err == -ETIMEDOUT ? "timed out waiting for the guest agent" : strerror(-err));
    close(fd);
    return err == -ETIMEDOUT ? EXIT_NO_AGENT : 2;
}

/* ------------------------------------------------------------------ agent (L2) */

static char *find_port(const char *name)
{
    glob_t g;
    static char dev[256];
    char *found = NULL;

    if (glob("/sys/class/virtio-ports/*/name", 0, NULL, &g) != 0) {
        return NULL;
    }
    for (size_t i = 0; i < g.gl_pathc && !found; i++) {
        char buf[128] = "";
        FILE *f = fopen(g.gl_pathv[i], "r");

        if (!f) {
            continue;
        }
        if (fgets(buf, sizeof(buf), f)) {
            buf[strcspn(buf, "\n")] = '\0';
            if (!strcmp(buf, name)) {
                /* /sys/class/virtio-ports/vport1p1/name -> /dev/vport1p1 */
                char *p = g.gl_pathv[i] + strlen("/sys/class/virtio-ports/");

                snprintf(dev, sizeof(dev), "/dev/%.*s", (int)strcspn(p, "/"), p);
                found = dev;
            }
        }
        fclose(f);
    }
    globfree(&g);
    return found;
}

static int agent_send(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int agent_send(int fd, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return write_all(fd, buf, (size_t)n);
}

static void agent_run(int port, const char *nonce, int timeout_s, const char *cmd)
{
    int pipefd[2], status = 0, wrc = 0;
    bool exited = false, timed_out = false, eof = false;
    int64_t deadline = now_ms() + (int64_t)timeout_s * 1000;
    pid_t pid;
    char buf[16384];

    if (agent_send(port, "@@B %s\n", nonce) < 0) {
        return;
    }
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        agent_send(port, "@@E %s %d\n", nonce, 126);
        return;
    }
    pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);

        setsid();
        dup2(devnull, 0);
        dup2(pipefd[1], 1);
        dup2(pipefd[1], 2);
        signal(SIGPIPE, SIG_DFL);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(pipefd[1]);
    if (pid < 0) {
        close(pipefd[0]);
        agent_send(port, "@@E %s %d\n", nonce, 126);
        return;
    }
    fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
    /*
     * Stream output until the command exits. Background children may keep the
     * pipe open, so its EOF is not awaited: once the command has exited, what
     * is buffered (up to 1 MiB) is sent and the pipe closed.
     */
    for (size_t drained = 0;;) {
        ssize_t n = -1;

        if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
            exited = true;
        }
        if (!exited && now_ms() > deadline) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            exited = true;
            timed_out = true;
        }
        if (!eof) {
            struct pollfd pfd = { .fd = pipefd[0], .events = POLLIN };

            poll(&pfd, 1, exited ? 0 : 50);
            n = read(pipefd[0], buf, sizeof(buf));
            if (n == 0) {
                eof = true;
            }
        } else if (!exited) {
            usleep(50 * 1000);
        }
        if (n > 0) {
            if (wrc == 0) {
                wrc = agent_send(port, "@@O %zd\n", n);
            }
            if (wrc == 0) {
                wrc = write_all(port, buf, (size_t)n);
            }
            if (exited && (drained += (size_t)n) > (1 << 20)) {
                break;
            }
            continue;
        }
        if (exited) {
            break;
        }
    }
    close(pipefd[0]);
    if (!exited) {
        waitpid(pid, &status, 0);
    }
    if (timed_out) {
        status = EXIT_TIMEOUT;
    } else if (WIFEXITED(status)) {
        status = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        status = 128 + WTERMSIG(status);
    }
    if (wrc == 0) {
        agent_send(port, "@@E %s %d\n", nonce, status);
    }
}

static int cmd_agent(int argc, char **argv)
{
    const char *name = "vtier.ctl", *dev = NULL;
    static struct reader r;
    int opt, fd;
    static const struct option lopts[] = {
        { "name", required_argument, NULL, 'n' },
        { "device", required_argument, NULL, 'd' },
        { NULL, 0, NULL, 0 },
    };

    while ((opt = getopt_long(argc, argv, "+n:d:", lopts, NULL)) != -1) {
        if (opt == 'n') {
            name = optarg;
        } else if (opt == 'd') {
            dev = optarg;
        } else {
            return 2;
        }
    }
    for (int i = 0; !dev; i++) {
        dev = find_port(name);
        if (!dev) {
            if (i == 50) {
                die("agent: no virtio port named %s", name);
            }
            usleep(100 * 1000);
        }
    }
    fd = open(dev, O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        die("agent: open %s: %s", dev, strerror(errno));
    }
    signal(SIGPIPE, SIG_IGN);
    fprintf(stderr, "%s: agent serving on %s (%s)\n", prog, dev, name);
    r.fd = fd;
    for (;;) {
        char nonce[64], *line, *cmd;
        int timeout_s, err = 0;
        unsigned long len;

        line = reader_line(&r, &err);
        if (!line) {
            /*
             * The port reads EOF (and polls POLLHUP) while the guest sees the
             * host side closed. That is no frame boundary: one client's
             * "closed" and the next one's "opened" reach the guest as control
             * messages, handled on a workqueue, before or after the next
             * client's bytes, which come on the port's own queue. Dropping a
             * partial frame here lost requests (the testbed's "L2 hang",
             * docs/testbed.md); keep it, the next "@@R " resynchronises.
             */
            if (err == -ENOBUFS) {
                r.start = r.end = 0;    /* a full buffer and no newline: junk */
            } else if (r.end > r.start) {
                fprintf(stderr, "%s: agent: the host side reads closed with %zu bytes of a "
                        "frame buffered: kept\n", prog, r.end - r.start);
            }
            usleep(20 * 1000);
            continue;
        }
        /* what a client that gave up mid-frame left comes before its successor's frame */
        for (char *next; *line && (next = strstr(line + 1, "@@R ")) != NULL;) {
            line = next;
        }
        if (sscanf(line, "@@R %63s %d %lu", nonce, &timeout_s, &len) != 3 ||
            len == 0 || len > MAX_CMD_BYTES || timeout_s <= 0) {
            continue;   /* not a request: resynchronise on the next line */
        }
        cmd = calloc(1, len + 1);
        if (!cmd) {
            die("agent: out of memory");
        }
        r.deadline_ms = now_ms() + 10000;
        for (size_t got = 0, said = 0; got < len;) {
            size_t avail = r.end - r.start;

            if (avail == 0) {
                int rc = reader_fill(&r);

                if (rc < 0) {
                    break;      /* 10 s and the rest of the command never came */
                }
                if (rc == 0) {
                    /* EOF while the guest sees the host side closed: see above */
                    if (!said++) {
                        fprintf(stderr, "%s: agent: the host side reads closed %zu bytes "
                                "into a %lu-byte command: waiting for the rest\n", prog, got,
                                len);
                    }
                    usleep(20 * 1000);
                }
                continue;
            }
            if (avail > len - got) {
                avail = len - got;
            }
            memcpy(cmd + got, r.buf + r.start, avail);
            r.start += avail;
            got += avail;
        }
        r.deadline_ms = 0;
        if (strlen(cmd) == len) {
            agent_run(fd, nonce, timeout_s, cmd);
        }
        free(cmd);
    }
}

/* ------------------------------------------------------------------ watch */

/* Seconds since boot: the same clock as /proc/uptime in the scenario's logs. */
static double uptime_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The string value of "key": "..." in a QMP line, unescaped, into out. */
static bool json_str(const char *line, const char *key, char *out, size_t size)
{
    char pat[64];
    const char *p;
    size_t n = 0;

    snprintf(pat, sizeof(pat), "\"%s\": \"", key);
    p = strstr(line, pat);
    if (!p) {
        return false;
    }
    for (p += strlen(pat); *p && *p != '"' && n + 1 < size; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            out[n++] = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p == 'r' ? '\r' : *p;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    return true;
}

/*
 * Log every QMP event of one guest QEMU until it exits. The guest's QEMU runs
 * with -action reboot=shutdown,shutdown=pause: a guest that resets (a triple
 * fault, or the guest asking for it) or powers off stops instead of exiting,
 * so its CPU state can still be read. Then this dumps it and quits QEMU. The
 * log's last "cause" line says why QEMU ended: "cause REASON GUEST UPTIME_S".
 */
static int cmd_watch(int argc, char **argv)
{
    static struct reader r;
    static char text[65536];
    char reason[64];
    FILE *log;
    int fd, err = 0;
    bool quitting = false;

    if (argc - optind != 2) {
        die("usage: watch SOCKET LOG");
    }
    log = fopen(argv[optind + 1], "a");
    if (!log) {
        die("%s: %s", argv[optind + 1], strerror(errno));
    }
    setvbuf(log, NULL, _IOLBF, 0);
    r.deadline_ms = now_ms() + 60000;
    fd = connect_unix(argv[optind], r.deadline_ms, r.deadline_ms);
    if (fd < 0) {
        fprintf(log, "[%.2f] watch: cannot connect to %s\n", uptime_s(), argv[optind]);
        return 2;
    }
    r.fd = fd;
    {
        const char *caps = "{\"execute\":\"qmp_capabilities\"}\n";

        if (write_all(fd, caps, strlen(caps)) < 0 || qmp_reply(&r, false) != 0) {
            fprintf(log, "[%.2f] watch: QMP negotiation failed\n", uptime_s());
            return 2;
        }
    }
    r.deadline_ms = 0;
    fprintf(log, "[%.2f] watch: connected\n", uptime_s());
    for (;;) {
        char *line = reader_line(&r, &err);
        bool guest;

        if (!line) {
            break;
        }
        if (!strstr(line, "\"event\"")) {
            if (json_str(line, "return", text, sizeof(text))) {
                fprintf(log, "%s", text);
            }
            continue;
        }
        fprintf(log, "[%.2f] %s\n", uptime_s(), line);
        if (!strstr(line, "\"event\": \"SHUTDOWN\"") || quitting) {
            continue;
        }
        guest = strstr(line, "\"guest\": true") != NULL;
        if (!json_str(line, "reason", reason, sizeof(reason))) {
            snprintf(reason, sizeof(reason), "unknown");
        }
        fprintf(log, "cause %s %s %.2f\n", reason, guest ? "guest" : "host", uptime_s());
        if (guest) {
            /* Stopped, not gone: keep its state, then end it as it would have
             * ended. Every vCPU's ("CPU#N" blocks): the one KVM put back at the
             * reset vector is the runner's proof of a triple fault (tb/rerun.py). */
            const char *dump = "{\"execute\":\"human-monitor-command\","
                               "\"arguments\":{\"command-line\":\"info registers -a\"}}\n"
                               "{\"execute\":\"quit\"}\n";

            fprintf(log, "---- CPU state after the guest's %s\n", reason);
            if (write_all(fd, dump, strlen(dump)) < 0) {
                fprintf(log, "watch: cannot ask for the CPU state or quit\n");
            }
            quitting = true;
        }
    }
    fprintf(log, "[%.2f] watch: QEMU closed QMP (%s)\n", uptime_s(),
            err == -EPIPE ? "exited" : strerror(-err));
    fclose(log);
    close(fd);
    return 0;
}

/* ------------------------------------------------------------------ hold-vm */

/*
 * Keep one (empty) KVM VM alive for L1's lifetime. KVM enables the scheduler's
 * preempt-notifier static key when the first VM is created and disables it when
 * the last one goes: each flip live-patches finish_task_switch(), which every
 * context switch runs, and TCG's multi-threaded translation has been seen to
 * execute that patch's int3 after the patch was done (an L1 Oops). With this VM
 * held, the key is set once, before any test, and never flips again.
 */
static int cmd_hold_vm(void)
{
    int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    int vm;

    if (kvm < 0) {
        die("/dev/kvm: %s", strerror(errno));
    }
    vm = ioctl(kvm, KVM_CREATE_VM, 0);
    if (vm < 0) {
        die("KVM_CREATE_VM: %s", strerror(errno));
    }
    printf("holding KVM VM fd %d\n", vm);
    fflush(stdout);
    for (;;) {
        pause();
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        goto usage;
    }
    optind = 2;
    if (!strcmp(argv[1], "qmp")) {
        return cmd_qmp(argc, argv);
    }
    if (!strcmp(argv[1], "exec")) {
        return cmd_exec(argc, argv);
    }
    if (!strcmp(argv[1], "agent")) {
        return cmd_agent(argc, argv);
    }
    if (!strcmp(argv[1], "watch")) {
        return cmd_watch(argc, argv);
    }
    if (!strcmp(argv[1], "virtio")) {
        return cmd_virtio(argc, argv);
    }
    if (!strcmp(argv[1], "hold-vm")) {
        return cmd_hold_vm();
    }
usage:
    fprintf(stderr,
            "usage: %s qmp [-t SEC] SOCKET JSON...\n"
            "       %s exec [-t SEC] SOCKET 'COMMAND'\n"
            "       %s agent [--name PORT | --device DEV]\n"
            "       %s watch SOCKET LOG\n"
            "       %s virtio [-t SEC] QMP-SOCKET\n"
            "       %s hold-vm\n", prog, prog, prog, prog, prog, prog);
    return 2;
}
