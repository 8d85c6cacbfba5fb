// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Attach by QMP never blocks the daemon's main loop: a QMP peer that says
 * nothing, or greets and then stalls in discovery, costs its own attach a
 * timeout while a 10 ms ticker on the loop keeps ticking (never a gap of
 * 250 ms, where the attach waits 1000 ms); a control
 * 'attach' is answered when the VM is in; racing attaches of one VM leave
 * exactly one VM and an EEXIST; a failed or abandoned attach leaves
 * nothing behind. The QMP peer is a thread of this process playing QEMU
 * over a real socket, its "guest RAM" an anonymous mapping of ours.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"

#define RAM_SIZE (8u << 20)
#define GREETING "{\"QMP\":{\"version\":{\"qemu\":{\"major\":10,\"minor\":0,\"micro\":2}}}}\n"

/* A fake QEMU monitor: answers the commands of discovery, or stays silent. */
struct fake_qmp {
	char path[108];
	int lfd;
	bool accept;		/* false: listen only (the connect succeeds, nothing is said) */
	const char *stall;	/* a command never answered */
	const char *name;	/* -name */
	void *ram;
	GThread *thread;
	int cfd;
};

static char *reply_for(struct fake_qmp *f, const char *cmd, const char *id)
{
	if (strcmp(cmd, "qmp_capabilities") == 0)
		return g_strdup_printf("{\"return\":{},\"id\":\"%s\"}\n", id);
	if (strcmp(cmd, "query-name") == 0)
		return g_strdup_printf("{\"return\":{\"name\":\"%s\"},\"id\":\"%s\"}\n", f->name, id);
	if (strcmp(cmd, "query-memdev") == 0)
		return g_strdup_printf("{\"return\":[{\"id\":\"m0\",\"size\":%u,\"policy\":\"default\","
				       "\"share\":false}],\"id\":\"%s\"}\n", RAM_SIZE, id);
	if (strcmp(cmd, "qom-list") == 0)
		return g_strdup_printf("{\"return\":[{\"name\":\"m0\",\"type\":"
				       "\"child<memory-backend-ram>\"}],\"id\":\"%s\"}\n", id);
	if (strcmp(cmd, "x-query-ramblock") == 0)
		return g_strdup_printf("{\"return\":{\"human-readable-text\":\"Block Name PSize "
				       "Offset Used Total HVA RO\\r\\n m0 4 KiB 0x0 0x%x 0x%x "
				       "0x%" G_GINT64_MODIFIER "x rw\\r\\n\"},\"id\":\"%s\"}\n",
				       RAM_SIZE, RAM_SIZE, (guint64)(uintptr_t)f->ram, id);
	return g_strdup_printf("{\"error\":{\"class\":\"CommandNotFound\",\"desc\":\"no %s\"},"
			       "\"id\":\"%s\"}\n", cmd, id);
}

static void serve(struct fake_qmp *f, int fd)
{
	GString *buf = g_string_new(NULL);
	char tmp[4096];
	ssize_t n;

	if (send(fd, GREETING, strlen(GREETING), MSG_NOSIGNAL) < 0)
		goto out;
	while ((n = recv(fd, tmp, sizeof(tmp), 0)) > 0) {
		char *nl;

		g_string_append_len(buf, tmp, n);
		while ((nl = memchr(buf->str, '\n', buf->len))) {
			g_autoptr(JsonParser) p = json_parser_new();
			g_autofree char *line = g_strndup(buf->str, (gsize)(nl - buf->str));
			g_autofree char *reply = NULL;
			JsonObject *o;

			g_string_erase(buf, 0, nl - buf->str + 1);
			if (!json_parser_load_from_data(p, line, -1, NULL))
				goto out;
			o = json_node_get_object(json_parser_get_root(p));
			if (f->stall && strcmp(json_object_get_string_member(o, "execute"),
					       f->stall) == 0)
				continue;
			reply = reply_for(f, json_object_get_string_member(o, "execute"),
					  json_object_get_string_member(o, "id"));
			if (send(fd, reply, strlen(reply), MSG_NOSIGNAL) < 0)
				goto out;
		}
	}
out:
	g_string_free(buf, TRUE);
}

static gpointer fake_thread(gpointer data)
{
	struct fake_qmp *f = data;
	int fd;

	/* one client at a time, as QEMU; shutdown() of the listener ends it */
	while ((fd = accept(f->lfd, NULL, NULL)) >= 0) {
		g_atomic_int_set(&f->cfd, fd);
		serve(f, fd);
		g_atomic_int_set(&f->cfd, -1);
		close(fd);
	}
	return NULL;
}

static void fake_start(struct fake_qmp *f, const char *dir, const char *file, bool accept,
		       const char *stall)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(f, 0, sizeof(*f));
	g_snprintf(f->path, sizeof(f->path), "%s/%s", dir, file);
	f->accept = accept;
	f->stall = stall;
	f->name = "fake-vm";
	f->cfd = -1;
	f->ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(f->ram != MAP_FAILED);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	strcpy(sa.sun_path, f->path);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lfd, 4), 0);
	if (accept)
		f->thread = g_thread_new("fake-qmp", fake_thread, f);
}

static void fake_stop(struct fake_qmp *f)
{
	int cfd = g_atomic_int_get(&f->cfd);

	shutdown(f->lfd, SHUT_RDWR);
	if (cfd >= 0)
		shutdown(cfd, SHUT_RDWR);
	if (f->thread)
		g_thread_join(f->thread);
	close(f->lfd);
	unlink(f->path);
	munmap(f->ram, RAM_SIZE);
}

/* The loop under test: a ticker that notes its longest gap. */
struct ticker {
	GSource *src;
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

static void ticker_start(struct ticker *t)
{
	memset(t, 0, sizeof(*t));
	t->src = g_timeout_source_new(10);
	g_source_set_callback(t->src, tick, t, NULL);
	g_source_attach(t->src, NULL);
}

static void ticker_stop(struct ticker *t)
{
	g_source_destroy(t->src);
	g_source_unref(t->src);
}

struct fixture {
	char *dir;
	char *ctl_path;
	struct vt_daemon *d;
	struct vt_control_server *s;
};

static char *handle(const char *data, size_t len, void *arg)
{
	return vt_daemon_handle(arg, data, len);
}

static int setup(void **state)
{
	struct fixture *f = g_new0(struct fixture, 1);
	struct vt_tiers tiers = { .nr = 0 };

	f->dir = g_dir_make_tmp("vtier-attach-XXXXXX", NULL);
	f->ctl_path = g_build_filename(f->dir, "run", "vtierd.sock", NULL);
	f->d = vt_daemon_new(&tiers, NULL);
	f->d->qmp_timeout_ms = 300;
	f->s = vt_control_server_new(f->ctl_path, handle, f->d, NULL);
	assert_non_null(f->s);
	f->d->ctl = f->s;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", f->dir);

	vt_daemon_free(f->d);
	vt_control_server_free(f->s);
	assert_int_equal(system(cmd), 0);
	g_free(f->dir);
	g_free(f->ctl_path);
	g_free(f);
	return 0;
}

/* vtierctl's side, on a thread: the main thread runs the daemon's loop. */
struct call {
	const char *path;
	char *request;
	char *reply;
	GThread *thread;
	gint done;
};

static gpointer call_thread(gpointer data)
{
	struct call *c = data;

	c->reply = vt_control_call(c->path, c->request, 60000, NULL);
	g_atomic_int_set(&c->done, 1);
	g_main_context_wakeup(NULL);
	return NULL;
}

static void call_start(struct call *c, const char *path, const char *qmp, const char *extra)
{
	memset(c, 0, sizeof(*c));
	c->path = path;
	c->request = g_strdup_printf("{\"v\":1,\"cmd\":\"attach\",\"qmp\":\"%s\","
				     "\"set\":[\"mode=off\"]%s}\n", qmp, extra ? extra : "");
	c->thread = g_thread_new("vtierctl", call_thread, c);
}

/* Run the loop until the reply is in (at most @ms); returns it (the caller frees). */
static char *call_wait(struct call *c, int ms)
{
	gint64 end = g_get_monotonic_time() + ms * 1000LL;

	while (!g_atomic_int_get(&c->done) && g_get_monotonic_time() < end)
		g_main_context_iteration(NULL, TRUE);
	assert_true(g_atomic_int_get(&c->done));
	g_thread_join(c->thread);
	g_free(c->request);
	return c->reply;
}

static void spin(int ms)
{
	gint64 end = g_get_monotonic_time() + ms * 1000LL;

	while (g_get_monotonic_time() < end)
		g_main_context_iteration(NULL, FALSE), g_usleep(1000);
}

/* A QMP peer that never greets: the loop keeps ticking, the reply is ETIMEDOUT, nothing stays. */
static void test_silent_peer(void **state)
{
	struct fixture *f = *state;
	struct fake_qmp q;
	struct ticker t;
	struct call c;
	g_autofree char *r = NULL, *ping = NULL;

	fake_start(&q, f->dir, "silent.qmp", false, NULL);
	f->d->qmp_timeout_ms = 1000;
	ticker_start(&t);
	call_start(&c, f->ctl_path, q.path, NULL);
	r = call_wait(&c, 5000);
	ticker_stop(&t);
	assert_non_null(r);
	assert_non_null(strstr(r, "\"ok\":false"));
	assert_non_null(strstr(r, "no QMP greeting within 1000 ms"));
	assert_non_null(strstr(r, "\"errno\":110"));
	assert_true(t.ticks >= 30);
	/* the loop was never held (a shared machine's scheduling aside) */
	if (t.max_gap >= 250000)
		fail_msg("the loop was held for %" G_GINT64_FORMAT " us", t.max_gap);
	assert_int_equal(g_hash_table_size(f->d->vms), 0);
	assert_int_equal(f->d->attaching->len, 0);
	fake_stop(&q);
}

/* A peer that greets, then never answers query-memdev: the job waits, not the loop. */
static void test_stalled_discovery(void **state)
{
	struct fixture *f = *state;
	struct fake_qmp q;
	struct ticker t;
	struct call c;
	g_autofree char *r = NULL;

	fake_start(&q, f->dir, "stall.qmp", true, "query-memdev");
	f->d->qmp_timeout_ms = 1000;
	ticker_start(&t);
	call_start(&c, f->ctl_path, q.path, NULL);
	r = call_wait(&c, 5000);
	ticker_stop(&t);
	assert_non_null(strstr(r, "\"ok\":false"));
	assert_non_null(strstr(r, "no answer within 1000 ms"));
	assert_non_null(strstr(r, "\"errno\":110"));
	if (t.max_gap >= 250000)
		fail_msg("the loop was held for %" G_GINT64_FORMAT " us", t.max_gap);
	assert_int_equal(g_hash_table_size(f->d->vms), 0);
	assert_int_equal(f->d->attaching->len, 0);
	fake_stop(&q);
}

/* A control attach is answered with the VM's status once it is attached. */
static void test_attach_reply(void **state)
{
	struct fixture *f = *state;
	struct fake_qmp q;
	struct call c;
	g_autofree char *r = NULL;
	struct vt_vm *vm;

	fake_start(&q, f->dir, "good.qmp", true, NULL);
	call_start(&c, f->ctl_path, q.path, NULL);
	r = call_wait(&c, 10000);
	if (!strstr(r, "\"ok\":true"))
		fail_msg("attach: %s", r);
	assert_non_null(strstr(r, "\"name\":\"fake-vm\""));
	vm = g_hash_table_lookup(f->d->vms, "fake-vm");
	assert_non_null(vm);
	assert_int_equal(vm->pid, getpid());
	assert_int_equal(vm->ram_bytes, RAM_SIZE);
	assert_int_equal(f->d->attaching->len, 0);
	/* the same socket again: refused at once */
	g_free(r);
	call_start(&c, f->ctl_path, q.path, ",\"vm\":\"again\"");
	r = call_wait(&c, 2000);
	assert_non_null(strstr(r, "\"errno\":17"));
	assert_non_null(strstr(r, "already attached as 'fake-vm'"));
	assert_true(vt_daemon_detach(f->d, "fake-vm", "test", NULL));
	fake_stop(&q);
}

struct outcome {
	unsigned int calls;
	struct vt_vm *vm;
	int code;
};

static void outcome_cb(struct vt_vm *vm, const GError *error, void *arg)
{
	struct outcome *o = arg;

	o->calls++;
	o->vm = vm;
	o->code = error ? error->code : 0;
}

/* Racing attaches of one QEMU: one VM, the others EEXIST, nothing half-attached. */
static void test_racing_attaches(void **state)
{
	struct fixture *f = *state;
	struct fake_qmp q1, q2;
	struct outcome a = { 0 }, b = { 0 }, c = { 0 };
	g_autoptr(GError) e = NULL;
	char *set[] = { "mode=off" };
	gint64 end;

	fake_start(&q1, f->dir, "one.qmp", true, NULL);
	/* a second monitor of the same QEMU (the same pid) */
	fake_start(&q2, f->dir, "two.qmp", true, NULL);
	assert_true(vt_daemon_attach(f->d, q1.path, "first", set, 1, outcome_cb, &a, NULL));
	/* the same socket, or the same name, while the first is in progress */
	assert_false(vt_daemon_attach(f->d, q1.path, NULL, set, 1, outcome_cb, &b, &e));
	assert_int_equal(e->code, EEXIST);
	assert_non_null(strstr(e->message, "is being attached already as 'first'"));
	g_clear_error(&e);
	assert_false(vt_daemon_attach(f->d, q2.path, "first", set, 1, outcome_cb, &b, &e));
	assert_int_equal(e->code, EEXIST);
	g_clear_error(&e);
	/* another socket of the same QEMU: found out by its pid once connected */
	assert_true(vt_daemon_attach(f->d, q2.path, "second", set, 1, outcome_cb, &c, NULL));
	end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
	while ((!a.calls || !c.calls) && g_get_monotonic_time() < end)
		g_main_context_iteration(NULL, TRUE);
	assert_int_equal(a.calls, 1);
	assert_int_equal(b.calls, 0);
	assert_int_equal(c.calls, 1);
	/* whichever greeted first wins; the other is refused, not half-attached */
	assert_true(!a.vm != !c.vm);
	assert_int_equal(a.vm ? c.code : a.code, EEXIST);
	assert_string_equal(a.vm ? a.vm->name : c.vm->name, a.vm ? "first" : "second");
	assert_int_equal(g_hash_table_size(f->d->vms), 1);
	assert_int_equal(f->d->attaching->len, 0);
	assert_true(vt_daemon_detach(f->d, a.vm ? "first" : "second", "test", NULL));
	fake_stop(&q1);
	fake_stop(&q2);
}

/* The daemon, or the client, goes mid-attach: the attach ends, nothing stays or leaks. */
static void test_abandoned(void **state)
{
	struct fixture *f = *state;
	struct fake_qmp q;
	struct outcome a = { 0 };
	char *set[] = { "mode=off" };
	gint64 t0;

	fake_start(&q, f->dir, "stall.qmp", true, "query-memdev");
	f->d->qmp_timeout_ms = 20000;
	assert_true(vt_daemon_attach(f->d, q.path, NULL, set, 1, outcome_cb, &a, NULL));
	spin(200);	/* connected, the job is waiting for query-memdev */
	assert_int_equal(a.calls, 0);
	t0 = g_get_monotonic_time();
	vt_daemon_free(f->d);
	assert_true(g_get_monotonic_time() - t0 < 2 * G_USEC_PER_SEC);
	assert_int_equal(a.calls, 1);
	assert_int_equal(a.code, ESHUTDOWN);
	{
		struct vt_tiers tiers = { .nr = 0 };

		f->d = vt_daemon_new(&tiers, NULL);
		vt_control_server_free(f->s);	/* its handler's daemon is gone */
		f->s = vt_control_server_new(f->ctl_path, handle, f->d, NULL);
		f->d->ctl = f->s;
	}
	/* the control client goes (here: with its server) while the job waits: abandoned */
	f->d->qmp_timeout_ms = 1000;
	{
		struct call c;
		g_autofree char *r = NULL;

		call_start(&c, f->ctl_path, q.path, NULL);
		while (!f->d->attaching->len)
			g_main_context_iteration(NULL, TRUE);
		spin(200);	/* connected, the job waits for query-memdev */
		vt_control_server_free(f->s);
		f->s = vt_control_server_new(f->ctl_path, handle, f->d, NULL);
		f->d->ctl = f->s;
		r = call_wait(&c, 5000);
		assert_null(r);		/* closed without a reply */
		assert_int_equal(f->d->attaching->len, 1);	/* the job is still on QMP */
		spin(1500);	/* its query-memdev deadline */
		assert_int_equal(f->d->attaching->len, 0);
		assert_int_equal(g_hash_table_size(f->d->vms), 0);
	}
	fake_stop(&q);
}

/*
 * A daemon without a control server (the fuzzer's) still judges attach: a
 * bad policy word and --domain with --name are named, a good request is
 * refused with EOPNOTSUPP, and nothing connects to the socket it names.
 */
static void test_judged_without_server(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	static const struct {
		const char *extra;
		const char *want;
	} cases[] = {
		{ ",\"set\":[\"window_ms=banana\"]", "window_ms" },
		{ ",\"set\":[\"nosuchkey=1\"]", "nosuchkey" },
		{ ",\"vm\":\"vm0\",\"set\":[\"mode=off\"]", "daemon has no control server" },
	};

	f->d->ctl = NULL;
	g_snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/qmp.sock", f->dir);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	for (unsigned int i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *req = g_strdup_printf("{\"v\":1,\"cmd\":\"attach\",\"qmp\":\"%s\"%s}\n",
						       sa.sun_path, cases[i].extra);
		g_autofree char *r = vt_daemon_handle(f->d, req, strlen(req));

		if (!strstr(r, "\"ok\":false") || !strstr(r, cases[i].want))
			fail_msg("case %u: %s", i, r);
	}
	{
		static const char req[] = "{\"v\":1,\"cmd\":\"attach\",\"domain\":\"d0\","
					  "\"vm\":\"vm0\"}\n";
		g_autofree char *r = NULL;

		f->d->libvirt = (struct vt_libvirt *)f;	/* judged before it is called */
		r = vt_daemon_handle(f->d, req, strlen(req));
		f->d->libvirt = NULL;
		if (!strstr(r, "\"ok\":false") || !strstr(r, "no --name"))
			fail_msg("domain with a name: %s", r);
	}
	assert_int_equal(accept(lfd, NULL, NULL), -1);	/* nothing connected */
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(f->d->attaching->len, 0);
	assert_int_equal(g_hash_table_size(f->d->vms), 0);
	close(lfd);
	f->d->ctl = f->s;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_silent_peer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stalled_discovery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attach_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_racing_attaches, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abandoned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_judged_without_server, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
