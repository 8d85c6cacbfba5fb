// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The control socket with the real daemon dispatcher behind it: requests and
 * replies, strangers refused before parsing, permissions of the socket and its
 * directory, a second server on the same path, oversize and silent clients,
 * a client that never reads its reply, accept() out of fds.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "control_socket.h"
#include "emfile_child.h"
#include "daemon.h"

struct call {
	const char *path;
	const char *request;
	char *reply;
	GError *error;
	gboolean done;
};

static gpointer call_thread(gpointer data)
{
	struct call *c = data;

	c->reply = vt_control_call(c->path, c->request, 5000, &c->error);
	g_atomic_int_set(&c->done, TRUE);
	return NULL;
}

static char *call(const char *path, const char *request)
{
	struct call c = { .path = path, .request = request };
	GThread *t = g_thread_new("client", call_thread, &c);

	while (!g_atomic_int_get(&c.done))
		g_main_context_iteration(NULL, FALSE), g_usleep(1000);
	g_thread_join(t);
	if (c.error)
		g_error_free(c.error);
	return c.reply;
}

static char *handle(const char *data, size_t len, void *arg)
{
	return vt_daemon_handle(arg, data, len);
}

struct fixture {
	char *dir;
	char *path;
	struct vt_daemon *d;
	struct vt_control_server *s;
};

static int setup(void **state)
{
	struct fixture *f = g_new0(struct fixture, 1);
	struct vt_tiers tiers = { .nr = 0 };

	f->dir = g_dir_make_tmp("vtier-ctl-XXXXXX", NULL);
	f->path = g_build_filename(f->dir, "run", "vtierd.sock", NULL);
	f->d = vt_daemon_new(&tiers, NULL);
	f->s = vt_control_server_new(f->path, handle, f->d, NULL);
	assert_non_null(f->s);
	f->d->ctl = f->s;	/* attach replies come later */
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", f->dir);

	vt_control_server_free(f->s);
	vt_daemon_free(f->d);
	assert_int_equal(system(cmd), 0);
	g_free(f->dir);
	g_free(f->path);
	g_free(f);
	return 0;
}

static void test_requests(void **state)
{
	struct fixture *f = *state;
	struct stat st;
	g_autofree char *dir = g_path_get_dirname(f->path);
	g_autofree char *r1 = call(f->path, "{\"v\":1,\"cmd\":\"ping\"}\n");
	g_autofree char *r2 = call(f->path, "{\"v\":1,\"cmd\":\"list\"}\n");
	g_autofree char *r3 = call(f->path, "{\"v\":1,\"cmd\":\"stats\",\"vm\":\"ghost\"}\n");
	g_autofree char *r4 = call(f->path, "this is not json\n");
	g_autofree char *r5 = call(f->path, "{\"v\":1,\"cmd\":\"attach\",\"qmp\":\"/nonexistent.qmp\"}\n");
	g_autofree char *r6 = call(f->path,
				   "{\"v\":1,\"cmd\":\"policy\",\"vm\":\"ghost\",\"set\":[\"mode=x\"]}\n");
	g_autofree char *r7 = call(f->path, "{\"v\":1,\"cmd\":\"detach\",\"vm\":\"ghost\"}\n");

	assert_string_equal(r1, "{\"ok\":true,\"result\":\"pong\"}");
	assert_string_equal(r2, "{\"ok\":true,\"result\":[]}");
	assert_non_null(strstr(r3, "no VM named 'ghost'"));
	assert_non_null(strstr(r4, "\"ok\":false"));
	assert_non_null(strstr(r5, "cannot connect to QMP socket /nonexistent.qmp"));
	assert_non_null(strstr(r6, "no VM named 'ghost'"));
	assert_non_null(strstr(r7, "no VM named 'ghost'"));
	/* and still serving */
	g_free(r1);
	r1 = call(f->path, "{\"v\":1,\"cmd\":\"ping\"}\n");
	assert_non_null(strstr(r1, "pong"));
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
}

/* demote's gpa=/len=: the size grammar of policy keys, no negative, no wrap. */
static void test_demote_args(void **state)
{
	static const struct {
		const char *words;
		uint64_t gpa, len;
	} good[] = {
		{ "tier=lz4", 0, UINT64_MAX }, { "tier=lz4 gpa=0 len=4096", 0, 4096 },
		{ "tier=lz4 len=512M", 0, 512ULL << 20 }, { "tier=lz4 gpa=0x100000 len=1GiB", 1 << 20, 1 << 30 },
		{ "tier=lz4 gpa=4GiB len=2MiB+4KiB", 4ULL << 30, (2 << 20) + 4096 },
	};
	static const struct {
		const char *words, *want1, *want2;
	} bad[] = {
		{ "tier=lz4 gpa=-1 len=4096", "gpa", "'-1'" },
		{ "tier=lz4 len=-4096", "len", "'-4096'" },
		{ "tier=lz4 len=99999999999999999999", "len", "out of range" },
		{ "tier=lz4 len=17179869184GiB", "len", "too large" },
		{ "tier=lz4 gpa=1 len=0xffffffffffffffff", "len=18446744073709551615", "beyond 2^64" },
		{ "tier=lz4 len=4Q", "len", "unknown unit 'Q'" },
		{ "tier=lz4 len=", "len", "empty size" },
		{ "tier=lz4 size=4", "unknown key 'size'", "tier, gpa, len" },
		{ "lz4", "'lz4' is not KEY=VALUE", "tier=NAME" },
	};
	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(good); i++) {
		g_auto(GStrv) w = g_strsplit(good[i].words, " ", -1);
		const char *tier = NULL;
		uint64_t gpa = 7, len = 7;
		g_autoptr(GError) e = NULL;

		assert_true(vt_demote_args_parse(w, g_strv_length(w), &tier, &gpa, &len, &e));
		assert_string_equal(tier, "lz4");
		assert_int_equal(gpa, good[i].gpa);
		assert_int_equal(len, good[i].len);
	}
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_auto(GStrv) w = g_strsplit(bad[i].words, " ", -1);
		const char *tier = NULL;
		uint64_t gpa, len;
		g_autoptr(GError) e = NULL;

		assert_false(vt_demote_args_parse(w, g_strv_length(w), &tier, &gpa, &len, &e));
		assert_non_null(e);
		if (!strstr(e->message, bad[i].want1) || !strstr(e->message, bad[i].want2))
			fail_msg("%s: '%s' lacks '%s' or '%s'", bad[i].words, e->message,
				 bad[i].want1, bad[i].want2);
	}
}

static void test_stranger(void **state)
{
	struct fixture *f = *state;
	pid_t child;
	int status;

	if (geteuid() != 0)
		skip();	/* needs root to become another user */
	/* the stranger needs to reach the socket: open the directory to it for the test */
	{
		g_autofree char *dir = g_path_get_dirname(f->path);

		assert_int_equal(chmod(f->dir, 0755), 0);
		assert_int_equal(chmod(dir, 0755), 0);
		assert_int_equal(chmod(f->path, 0666), 0);
	}
	child = fork();
	if (child == 0) {
		g_autoptr(GError) e = NULL;
		char *r;

		if (setgid(65534) || setuid(65534))
			_exit(3);
		r = vt_control_call(f->path, "{\"v\":1,\"cmd\":\"list\"}\n", 3000, &e);
		_exit(r && strstr(r, "permission denied") ? 0 : 1);
	}
	while (waitpid(child, &status, WNOHANG) == 0)
		g_main_context_iteration(NULL, FALSE), g_usleep(1000);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(vt_control_server_refused(f->s), 1);
}

static void test_second_server(void **state)
{
	struct fixture *f = *state;
	g_autoptr(GError) e = NULL;

	assert_null(vt_control_server_new(f->path, handle, f->d, &e));
	assert_int_equal(e->code, EADDRINUSE);
	assert_non_null(strstr(e->message, "another vtierd"));
}

static void test_bad_dir(void **state)
{
	struct fixture *f = *state;
	g_autofree char *open_dir = g_build_filename(f->dir, "open", NULL);
	g_autofree char *path = g_build_filename(open_dir, "s", NULL);
	g_autofree char *stale_dir = g_build_filename(f->dir, "stale", NULL);
	g_autofree char *stale = g_build_filename(stale_dir, "s", NULL);
	g_autoptr(GError) e = NULL;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct vt_control_server *s;
	int fd;

	assert_int_equal(mkdir(open_dir, 0755), 0);
	assert_int_equal(chmod(open_dir, 0755), 0);
	assert_null(vt_control_server_new(path, handle, f->d, &e));
	assert_int_equal(e->code, EPERM);
	assert_non_null(strstr(e->message, "0700"));
	/* a stale socket (nobody listening) is replaced */
	assert_int_equal(mkdir(stale_dir, 0700), 0);
	strcpy(sa.sun_path, stale);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	s = vt_control_server_new(stale, handle, f->d, NULL);
	assert_non_null(s);
	vt_control_server_free(s);
}

static void test_oversize(void **state)
{
	struct fixture *f = *state;
	g_autofree char *big = g_strnfill(70000, 'x');
	g_autofree char *r = call(f->path, big);

	assert_non_null(r);
	assert_non_null(strstr(r, "larger than"));
}

/* Replies 1 MiB (more than socket buffers hold) to "big", "pong" to anything else. */
static char *handle_big(const char *data, size_t len, void *arg)
{
	(void)arg;
	if (len == 3 && memcmp(data, "big", 3) == 0) {
		char *r = g_malloc(1u << 20);

		memset(r, 'x', (1u << 20) - 2);
		r[(1u << 20) - 2] = '\n';
		r[(1u << 20) - 1] = '\0';
		return r;
	}
	return g_strdup("pong\n");
}

static void count_notes(const char *msg, void *arg)
{
	GPtrArray *notes = arg;

	g_ptr_array_add(notes, g_strdup(msg));
}

static int raw_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/*
 * (h) A client that asks for a large reply and never reads it: another
 * client is answered meanwhile, before the silent one's deadline (the reply
 * used to block the loop for 5 s; no wall-clock bound, which a loaded host
 * could break), and the silent one is dropped at its deadline, with a note.
 */
static void test_silent_reader(void **state)
{
	struct fixture *f = *state;
	g_autofree char *path = g_build_filename(f->dir, "run", "big.sock", NULL);
	g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
	struct vt_control_server *s = vt_control_server_new(path, handle_big, NULL, NULL);
	gint64 end;
	int silent;

	assert_non_null(s);
	vt_control_server_set_notify(s, count_notes, notes);
	vt_control_server_set_limits(s, 2000, 16u << 20);
	silent = raw_connect(path);
	assert_int_equal(send(silent, "big\n", 4, MSG_NOSIGNAL), 4);
	/* the silent client's request is handled in here: that must not block */
	for (int i = 0; i < 20; i++)
		g_main_context_iteration(NULL, FALSE), g_usleep(500);
	{
		g_autofree char *r = call(path, "ping\n");

		assert_non_null(r);
		assert_string_equal(r, "pong");
	}
	/* answered while the silent one still waited: a blocked loop drops it first */
	assert_int_equal(vt_control_server_dropped(s), 0);
	end = g_get_monotonic_time() + 5000000;
	while (vt_control_server_dropped(s) == 0 && g_get_monotonic_time() < end)
		g_main_context_iteration(NULL, FALSE), g_usleep(1000);
	assert_int_equal(vt_control_server_dropped(s), 1);
	assert_int_equal(notes->len, 1);
	assert_non_null(strstr(notes->pdata[0], "in 2000 ms: disconnected"));
	close(silent);
	/* a reply over the cap becomes a short error */
	vt_control_server_set_limits(s, 1000, 512u << 10);
	{
		g_autofree char *r = call(path, "big\n");

		assert_non_null(r);
		assert_non_null(strstr(r, "reply larger than 524288 bytes"));
	}
	vt_control_server_free(s);
}

/*
 * (g) accept() out of fds in a forked child with RLIMIT_NOFILE at its use:
 * 500 ms of the loop must not spin, and the burst is reported once.
 */
static void test_emfile_backoff(void **state)
{
	struct fixture *f = *state;
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		GPtrArray *notes = g_ptr_array_new_with_free_func(g_free);
		int code = 0;
		long cpu_us;

		vt_control_server_set_notify(f->s, count_notes, notes);
		for (int i = 0; i < 4; i++)
			(void)raw_connect(f->path);	/* queued in the backlog */
		if (!emfile_limit_at_use())
			_exit(10);
		cpu_us = emfile_run_cpu_us(NULL, 500);
		if (vt_control_server_accept_pauses(f->s) < 2 ||
		    vt_control_server_accept_pauses(f->s) > 10)
			code = 11;
		else if (notes->len != 1 || !strstr(notes->pdata[0], "LimitNOFILE"))
			code = 12;
		else if (cpu_us > 150000)
			code = 13;
		if (code)
			fprintf(stderr, "# child: pauses %u, notes %u, cpu %ld us\n",
				vt_control_server_accept_pauses(f->s), notes->len, cpu_us);
		_exit(code);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Defers "later" (answered 50 ms on) and "never" (its client times out). */
struct deferring {
	struct vt_control_server *s;
	int gone;
};

static gboolean answer_later(gpointer data)
{
	vt_control_deferred_reply(data, g_strdup("done\n"));
	return G_SOURCE_REMOVE;
}

static void on_gone(void *arg)
{
	((struct deferring *)arg)->gone++;
}

static char *handle_deferring(const char *data, size_t len, void *arg)
{
	struct deferring *x = arg;

	if (len == 5 && memcmp(data, "later", 5) == 0) {
		struct vt_control_deferred *d = vt_control_defer(x->s, 1000, on_gone, x);

		assert_non_null(d);
		assert_null(vt_control_defer(x->s, 1000, on_gone, x));	/* once */
		g_timeout_add(50, answer_later, d);
		return NULL;
	}
	if (len == 5 && memcmp(data, "never", 5) == 0) {
		assert_non_null(vt_control_defer(x->s, 200, on_gone, x));
		return NULL;
	}
	return g_strdup("pong\n");
}

/* (i) A request that waits on a peer is answered later, without holding the loop. */
static void test_deferred_reply(void **state)
{
	struct fixture *f = *state;
	g_autofree char *path = g_build_filename(f->dir, "run", "defer.sock", NULL);
	struct deferring x = { 0 };
	gint64 t0;

	x.s = vt_control_server_new(path, handle_deferring, &x, NULL);
	assert_non_null(x.s);
	assert_null(vt_control_defer(x.s, 1000, on_gone, &x));	/* not inside a handler */
	t0 = g_get_monotonic_time();
	{
		g_autofree char *r = call(path, "later\n");

		assert_non_null(r);
		assert_string_equal(r, "done");
	}
	assert_true(g_get_monotonic_time() - t0 >= 50000);
	assert_int_equal(x.gone, 0);
	{
		g_autofree char *r = call(path, "never\n");

		assert_null(r);		/* dropped at the 200 ms deadline */
	}
	assert_int_equal(x.gone, 1);
	{
		g_autofree char *r = call(path, "ping\n");

		assert_string_equal(r, "pong");
	}
	vt_control_server_free(x.s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_requests, setup, teardown),
		cmocka_unit_test(test_demote_args),
		cmocka_unit_test_setup_teardown(test_second_server, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oversize, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stranger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silent_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emfile_backoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deferred_reply, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
