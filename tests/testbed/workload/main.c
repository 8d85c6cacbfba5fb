// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-workload: command line, the command interpreter, and the unix-socket
 * server/client pair.
 *
 *   vtier-workload serve --size SIZE [--seed N] [--thp default|never|always] [--socket PATH]
 *       allocate and fill the region, then serve commands, one per connection
 *   vtier-workload ctl [--socket PATH] [--wait SEC] COMMAND [ARG...]
 *       send one command to a server, print the reply; exit 0 ok, 1 fail, 2 error
 *   vtier-workload run --size SIZE [--seed N] [--thp MODE] 'COMMAND' ...
 *       the same commands in one process, in order (for tests without a VM)
 *
 * Commands:
 *   fill [version=V]                       rewrite every page at version V (default 1)
 *   phase dist=uniform|gaussian|zipf|seq ranges=A-B[,C-D...] duration_ms=N|accesses=N
 *         [write_pct=P] [sigma=F] [mu=F] [zipf_s=F] [scatter=0|1] [seed=N]
 *         bounds: bytes, 4K/64M/1G, 10p (pages) or 25% of the region; end exclusive
 *   hotset [source=ranges|accessed] [min_accesses=N] [out=FILE]
 *         guest-physical extents of the last phase's hot set (needs root)
 *   pagemap out=FILE                       every page: index vaddr gpa
 *   extents [from=SIZE] out=FILE           guest-physical extents of the pages
 *                                          from SIZE on (needs root)
 *   kinds [from=SIZE]                      pages holding zeros, random bytes, text
 *   verify [report=N]                      check every page; "fail" when any is bad
 *   corrupt pages=N [seed=S]               fault injection for the checker's tests
 *   progress                               the progress page: its guest-physical
 *                                          and virtual address, cookie and count
 *                                          (needs root)
 *   info | quit
 * Every reply ends with one line starting "ok", "fail" or "err".
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

#define DEFAULT_SOCKET "/run/vtier-workload.sock"
#define MAX_LINE 4096
#define MAX_ARGS 64

enum { RC_OK = 0, RC_FAIL = 1, RC_ERR = 2 };

struct wl_state {
    struct wl_region region;
    struct wl_phase last_phase;
    bool have_phase;
    bool quit;
};

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int reply(FILE *out, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int reply(FILE *out, int rc, const char *fmt, ...)
{
    va_list ap;

    fputs(rc == RC_OK ? "ok " : rc == RC_FAIL ? "fail " : "err ", out);
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    fflush(out);
    return rc;
}

/* "key=value" lookup among args; NULL when absent. */
static const char *arg_value(char **argv, int argc, const char *key)
{
    size_t klen = strlen(key);

    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], key, klen) && argv[i][klen] == '=') {
            return argv[i] + klen + 1;
        }
    }
    return NULL;
}

static bool args_known(char **argv, int argc, const char *const *keys, FILE *out)
{
    for (int i = 0; i < argc; i++) {
        bool ok = false;

        for (int k = 0; keys[k] && !ok; k++) {
            size_t klen = strlen(keys[k]);

            ok = !strncmp(argv[i], keys[k], klen) && argv[i][klen] == '=';
        }
        if (!ok) {
            reply(out, RC_ERR, "unknown argument '%s'", argv[i]);
            return false;
        }
    }
    return true;
}

static int cmd_verify(struct wl_state *st, char **argv, int argc, FILE *out)
{
    static const char *const keys[] = { "report", NULL };
    const char *rep = arg_value(argv, argc, "report");
    size_t report = rep ? strtoul(rep, NULL, 0) : 10, nbad;
    struct wl_bad_page *bad;
    uint64_t t0 = now_ms();

    if (!args_known(argv, argc, keys, out)) {
        return RC_ERR;
    }
    bad = calloc(report ? report : 1, sizeof(*bad));
    if (!bad) {
        return reply(out, RC_ERR, "out of memory");
    }
    nbad = wl_region_verify(&st->region, bad, report);
    for (size_t i = 0; i < nbad && i < report; i++) {
        fprintf(out, "bad page=%zu %s\n", bad[i].index, bad[i].what);
    }
    free(bad);
    return reply(out, nbad ? RC_FAIL : RC_OK, "verify pages=%zu bad=%zu ms=%llu",
                 st->region.npages, nbad, (unsigned long long)(now_ms() - t0));
}

static int cmd_hotset(struct wl_state *st, char **argv, int argc, FILE *out)
{
    static const char *const keys[] = { "source", "min_accesses", "out", NULL };
    const char *source = arg_value(argv, argc, "source");
    const char *min = arg_value(argv, argc, "min_accesses");
    const char *path = arg_value(argv, argc, "out");
    enum wl_hotset_source src = WL_HOTSET_RANGES;
    char summary[160];
    FILE *f = out;
    int rc;

    if (!args_known(argv, argc, keys, out)) {
        return RC_ERR;
    }
    if (!st->have_phase) {
        return reply(out, RC_ERR, "hotset: no phase has run yet");
    }
    if (source && !strcmp(source, "accessed")) {
        src = WL_HOTSET_ACCESSED;
    } else if (source && strcmp(source, "ranges")) {
        return reply(out, RC_ERR, "hotset: source is ranges or accessed");
    }
    if (min) {
        src = WL_HOTSET_ACCESSED;
    }
    if (path) {
        f = fopen(path, "w");
        if (!f) {
            return reply(out, RC_ERR, "hotset: %s: %s", path, strerror(errno));
        }
    }
    rc = wl_hotset(&st->region, &st->last_phase, src, min ? (uint32_t)strtoul(min, NULL, 0) : 1,
                   f, summary, sizeof(summary));
    if (path) {
        fclose(f);
    }
    if (rc == -EPERM) {
        return reply(out, RC_ERR, "hotset: /proc/self/pagemap hides PFNs: run as root "
                     "(CAP_SYS_ADMIN)");
    }
    if (rc) {
        return reply(out, RC_ERR, "hotset: %s", strerror(-rc));
    }
    return reply(out, RC_OK, "hotset source=%s %s", src == WL_HOTSET_RANGES ? "ranges" : "accessed",
                 summary);
}

static int execute(struct wl_state *st, char *line, FILE *out)
{
    char *argv[MAX_ARGS], *save = NULL, *tok, err[160] = "";
    int argc = 0;
    struct wl_region *r = &st->region;

    for (tok = strtok_r(line, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
        if (argc == MAX_ARGS) {
            return reply(out, RC_ERR, "too many arguments");
        }
        argv[argc++] = tok;
    }
    if (argc == 0) {
        return reply(out, RC_ERR, "empty command");
    }
    if (!strcmp(argv[0], "fill")) {
        static const char *const keys[] = { "version", NULL };
        const char *v = arg_value(argv + 1, argc - 1, "version");
        uint32_t version = v ? (uint32_t)strtoul(v, NULL, 0) : 1;
        uint64_t t0 = now_ms();

        if (!args_known(argv + 1, argc - 1, keys, out)) {
            return RC_ERR;
        }
        wl_region_fill(r, version);
        return reply(out, RC_OK, "fill pages=%zu version=%u ms=%llu", r->npages, version,
                     (unsigned long long)(now_ms() - t0));
    }
    if (!strcmp(argv[0], "phase")) {
        struct wl_phase p;
        struct wl_phase_result res;
        double secs;

        if (wl_phase_parse(&p, r, argv + 1, argc - 1, err, sizeof(err))) {
            return reply(out, RC_ERR, "phase: %s", err);
        }
        if (wl_phase_run(r, &p, &res)) {
            return reply(out, RC_ERR, "phase: out of memory");
        }
        st->last_phase = p;
        st->have_phase = true;
        secs = (double)res.elapsed_us / 1e6;
        return reply(out, RC_OK,
                     "phase dist=%s accesses=%llu reads=%llu writes=%llu touched_pages=%zu "
                     "ms=%llu rate=%.0f/s sink=%llx", wl_dist_name(p.dist),
                     (unsigned long long)res.accesses, (unsigned long long)res.reads,
                     (unsigned long long)res.writes, res.touched_pages,
                     (unsigned long long)(res.elapsed_us / 1000),
                     secs > 0 ? (double)res.accesses / secs : 0.0,
                     (unsigned long long)(res.sink & 0xff));
    }
    if (!strcmp(argv[0], "hotset")) {
        return cmd_hotset(st, argv + 1, argc - 1, out);
    }
    if (!strcmp(argv[0], "pagemap")) {
        const char *path = arg_value(argv + 1, argc - 1, "out");
        char summary[128];
        FILE *f;
        int rc;

        if (!path) {
            return reply(out, RC_ERR, "pagemap: out=FILE is required");
        }
        f = fopen(path, "w");
        if (!f) {
            return reply(out, RC_ERR, "pagemap: %s: %s", path, strerror(errno));
        }
        rc = wl_pagemap_dump(r, f, summary, sizeof(summary));
        fclose(f);
        if (rc) {
            return reply(out, RC_ERR, "pagemap: %s", rc == -EPERM ?
                         "/proc/self/pagemap hides PFNs: run as root" : strerror(-rc));
        }
        return reply(out, RC_OK, "pagemap %s", summary);
    }
    if (!strcmp(argv[0], "verify")) {
        return cmd_verify(st, argv + 1, argc - 1, out);
    }
    if (!strcmp(argv[0], "corrupt")) {
        const char *n = arg_value(argv + 1, argc - 1, "pages");
        const char *seed = arg_value(argv + 1, argc - 1, "seed");

        if (!n) {
            return reply(out, RC_ERR, "corrupt: pages=N is required");
        }
        return reply(out, RC_OK, "corrupt pages=%zu",
                     wl_region_corrupt(r, strtoul(n, NULL, 0), seed ? strtoull(seed, NULL, 0) : 1));
    }
    if (!strcmp(argv[0], "extents")) {
        const char *from = arg_value(argv + 1, argc - 1, "from");
        const char *path = arg_value(argv + 1, argc - 1, "out");
        char summary[160];
        uint64_t off = 0;
        FILE *f;
        int rc;

        if (!path) {
            return reply(out, RC_ERR, "extents: out=FILE is required");
        }
        if (from && (wl_parse_size(from, r->npages * WL_PAGE_SIZE, &off) ||
                     off > r->npages * WL_PAGE_SIZE)) {
            return reply(out, RC_ERR, "extents: bad from=%s", from);
        }
        f = fopen(path, "w");
        if (!f) {
            return reply(out, RC_ERR, "extents: %s: %s", path, strerror(errno));
        }
        rc = wl_extents(r, off / WL_PAGE_SIZE, f, summary, sizeof(summary));
        fclose(f);
        if (rc) {
            return reply(out, RC_ERR, "extents: %s", rc == -EPERM ?
                         "/proc/self/pagemap hides PFNs: run as root" : strerror(-rc));
        }
        return reply(out, RC_OK, "extents %s", summary);
    }
    if (!strcmp(argv[0], "kinds")) {
        /* what the pages hold now: random pages do not compress */
        const char *from = arg_value(argv + 1, argc - 1, "from");
        uint64_t off = 0;
        size_t zero, random, corpus;

        if (from && (wl_parse_size(from, r->npages * WL_PAGE_SIZE, &off) ||
                     off > r->npages * WL_PAGE_SIZE)) {
            return reply(out, RC_ERR, "kinds: bad from=%s", from);
        }
        wl_region_kinds(r, off / WL_PAGE_SIZE, &zero, &random, &corpus);
        return reply(out, RC_OK, "kinds zero=%zu random=%zu corpus=%zu", zero, random, corpus);
    }
    if (!strcmp(argv[0], "progress")) {
        uint64_t gpa;
        int rc = wl_gpa_of(r->progress, &gpa);

        if (rc) {
            return reply(out, RC_ERR, "progress: %s", rc == -EPERM ?
                         "/proc/self/pagemap hides PFNs: run as root" : strerror(-rc));
        }
        return reply(out, RC_OK, "progress gpa=0x%llx addr=%p cookie=0x%llx accesses=%llu",
                     (unsigned long long)gpa, (void *)r->progress,
                     (unsigned long long)r->progress->cookie,
                     (unsigned long long)__atomic_load_n(&r->progress->accesses,
                                                         __ATOMIC_RELAXED));
    }
    if (!strcmp(argv[0], "info")) {
        return reply(out, RC_OK, "info pages=%zu bytes=%zu base=%p seed=%llu pid=%d", r->npages,
                     r->npages * WL_PAGE_SIZE, (void *)r->base, (unsigned long long)r->seed,
                     (int)getpid());
    }
    if (!strcmp(argv[0], "quit")) {
        st->quit = true;
        return reply(out, RC_OK, "quit");
    }
    return reply(out, RC_ERR, "unknown command '%s'", argv[0]);
}

/* ------------------------------------------------------------------ modes */

struct region_opts {
    uint64_t size_bytes, seed;
    const char *thp, *socket;
    const char *corpus;          /* --mix CORPUS: compressible content */
    unsigned int zero_pct, random_pct;
};

static void usage(void)
{
    fprintf(stderr,
            "usage: vtier-workload serve --size SIZE [--seed N] [--thp default|never|always] "
            "[--socket PATH]\n"
            "         [--mix CORPUS [--zero-pct N] [--random-pct N]]   pages: N %% zeros, N %% "
            "random,\n"
            "         the rest windows of the CORPUS file (default 20 %% and 15 %%)\n"
            "       vtier-workload ctl [--socket PATH] [--wait SEC] COMMAND [ARG...]\n"
            "       vtier-workload run --size SIZE [--seed N] [--thp MODE] 'COMMAND' ...\n");
    exit(RC_ERR);
}

static int parse_opts(int argc, char **argv, struct region_opts *o)
{
    static const struct option lopts[] = {
        { "size", required_argument, NULL, 's' },
        { "seed", required_argument, NULL, 'S' },
        { "thp", required_argument, NULL, 't' },
        { "socket", required_argument, NULL, 'k' },
        { "mix", required_argument, NULL, 'm' },
        { "zero-pct", required_argument, NULL, 'z' },
        { "random-pct", required_argument, NULL, 'r' },
        { NULL, 0, NULL, 0 },
    };
    int opt;

    o->seed = 1;
    o->socket = DEFAULT_SOCKET;
    o->zero_pct = 20;
    o->random_pct = 15;
    optind = 2;
    while ((opt = getopt_long(argc, argv, "+", lopts, NULL)) != -1) {
        switch (opt) {
        case 's':
            if (wl_parse_size(optarg, 0, &o->size_bytes) || o->size_bytes < WL_PAGE_SIZE) {
                fprintf(stderr, "vtier-workload: bad --size '%s'\n", optarg);
                exit(RC_ERR);
            }
            break;
        case 'S':
            o->seed = strtoull(optarg, NULL, 0);
            break;
        case 't':
            o->thp = optarg;
            break;
        case 'k':
            o->socket = optarg;
            break;
        case 'm':
            o->corpus = optarg;
            break;
        case 'z':
            o->zero_pct = (unsigned int)strtoul(optarg, NULL, 10);
            break;
        case 'r':
            o->random_pct = (unsigned int)strtoul(optarg, NULL, 10);
            break;
        default:
            usage();
        }
    }
    if (!o->size_bytes) {
        usage();
    }
    return optind;
}

static void init_region(struct wl_state *st, const struct region_opts *o)
{
    int rc = wl_region_init(&st->region, o->size_bytes, o->seed, o->thp);

    if (rc) {
        fprintf(stderr, "vtier-workload: cannot allocate %llu bytes: %s\n",
                (unsigned long long)o->size_bytes, strerror(-rc));
        exit(RC_ERR);
    }
    if (o->corpus) {
        rc = wl_region_set_mix(&st->region, o->corpus, o->zero_pct, o->random_pct);
        if (rc) {
            fprintf(stderr, "vtier-workload: --mix %s: %s (a file of >= 64 KiB; percentages "
                    "adding up to <= 100)\n", o->corpus, strerror(-rc));
            exit(RC_ERR);
        }
    }
    wl_region_fill(&st->region, 1);
}

static int mode_run(int argc, char **argv)
{
    struct region_opts o = { 0 };
    static struct wl_state st;
    int first = parse_opts(argc, argv, &o), worst = RC_OK;

    init_region(&st, &o);
    for (int i = first; i < argc && !st.quit; i++) {
        char line[MAX_LINE];
        int rc;

        snprintf(line, sizeof(line), "%s", argv[i]);
        printf("> %s\n", argv[i]);
        rc = execute(&st, line, stdout);
        if (rc > worst) {
            worst = rc;
        }
    }
    return worst;
}

static int listen_unix(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd;

    if (strlen(path) >= sizeof(sa.sun_path)) {
        return -ENAMETOOLONG;
    }
    strcpy(sa.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -errno;
    }
    unlink(path);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 8)) {
        int e = -errno;

        close(fd);
        return e;
    }
    return fd;
}

static int mode_serve(int argc, char **argv)
{
    struct region_opts o = { 0 };
    static struct wl_state st;
    uint64_t t0 = now_ms();
    int lfd;

    if (parse_opts(argc, argv, &o) != argc) {
        usage();
    }
    signal(SIGPIPE, SIG_IGN);
    init_region(&st, &o);
    lfd = listen_unix(o.socket);
    if (lfd < 0) {
        fprintf(stderr, "vtier-workload: listen on %s: %s\n", o.socket, strerror(-lfd));
        return RC_ERR;
    }
    printf("ready socket=%s pages=%zu fill_ms=%llu pid=%d\n", o.socket, st.region.npages,
           (unsigned long long)(now_ms() - t0), (int)getpid());
    fflush(stdout);
    while (!st.quit) {
        int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        char line[MAX_LINE];
        FILE *in, *out;

        if (cfd < 0) {
            if (errno == EINTR) {
                continue;
            }
            fprintf(stderr, "vtier-workload: accept: %s\n", strerror(errno));
            return RC_ERR;
        }
        in = fdopen(cfd, "r");
        out = fdopen(dup(cfd), "w");
        if (!in || !out) {
            fprintf(stderr, "vtier-workload: fdopen: %s\n", strerror(errno));
            return RC_ERR;
        }
        if (fgets(line, sizeof(line), in)) {
            printf("> %s", line);
            fflush(stdout);
            execute(&st, line, out);
        }
        fclose(out);
        fclose(in);
    }
    close(lfd);
    unlink(o.socket);
    return RC_OK;
}

static int mode_ctl(int argc, char **argv)
{
    static const struct option lopts[] = {
        { "socket", required_argument, NULL, 'k' },
        { "wait", required_argument, NULL, 'w' },
        { NULL, 0, NULL, 0 },
    };
    const char *path = DEFAULT_SOCKET;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    char line[MAX_LINE] = "", buf[8192], cur[MAX_LINE], last[MAX_LINE] = "";
    size_t curlen = 0;
    uint64_t wait_s = 300, deadline;
    int opt, fd = -1;

    optind = 2;
    while ((opt = getopt_long(argc, argv, "+", lopts, NULL)) != -1) {
        if (opt == 'k') {
            path = optarg;
        } else if (opt == 'w') {
            wait_s = strtoull(optarg, NULL, 0);
        } else {
            usage();
        }
    }
    if (optind == argc || strlen(path) >= sizeof(sa.sun_path)) {
        usage();
    }
    for (int i = optind; i < argc; i++) {
        if (strlen(line) + strlen(argv[i]) + 2 >= sizeof(line)) {
            fprintf(stderr, "vtier-workload: command too long\n");
            return RC_ERR;
        }
        strcat(line, argv[i]);
        strcat(line, i + 1 < argc ? " " : "\n");
    }
    strcpy(sa.sun_path, path);
    /* The server creates its socket once the region is filled: wait for it. */
    deadline = now_ms() + wait_s * 1000;
    for (;;) {
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
            break;
        }
        if (fd >= 0) {
            close(fd);
        }
        if ((errno != ENOENT && errno != ECONNREFUSED) || now_ms() >= deadline) {
            fprintf(stderr, "vtier-workload: connect %s: %s\n", path, strerror(errno));
            return RC_ERR;
        }
        usleep(100 * 1000);
    }
    if (write(fd, line, strlen(line)) != (ssize_t)strlen(line)) {
        fprintf(stderr, "vtier-workload: write: %s\n", strerror(errno));
        close(fd);
        return RC_ERR;
    }
    /* Relay the reply; the status is the first word of its last line. */
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        fwrite(buf, 1, (size_t)n, stdout);
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                cur[curlen] = '\0';
                memcpy(last, cur, curlen + 1);
                curlen = 0;
            } else if (curlen < sizeof(cur) - 1) {
                cur[curlen++] = buf[i];
            }
        }
    }
    close(fd);
    fflush(stdout);
    if (!strncmp(last, "ok", 2)) {
        return RC_OK;
    }
    if (!strncmp(last, "fail", 4)) {
        return RC_FAIL;
    }
    fprintf(stderr, "vtier-workload: %s\n", last[0] ? "command failed" : "no reply");
    return RC_ERR;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage();
    }
    if (!strcmp(argv[1], "serve")) {
        return mode_serve(argc, argv);
    }
    if (!strcmp(argv[1], "ctl")) {
        return mode_ctl(argc, argv);
    }
    if (!strcmp(argv[1], "run")) {
        return mode_run(argc, argv);
    }
    usage();
}
