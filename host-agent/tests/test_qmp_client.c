// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * QMP client: reply parsers on good and malformed input, and peers that are
 * not QEMU (wrong greeting, garbage, silence, closing) through a real socket.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "qmp_client.h"

static JsonNode *json(const char *text)
{
	g_autoptr(JsonParser) p = json_parser_new();

	assert_true(json_parser_load_from_data(p, text, -1, NULL));
	return json_node_copy(json_parser_get_root(p));
}

static void test_greeting(void **state)
{
	static const char *const bad[] = {
		"{}", "{\"QMP\":{}}", "{\"QMP\":{\"version\":{\"qemu\":{\"major\":10}}}}",
		"{\"QMP\":{\"version\":{\"qemu\":{\"major\":\"10\",\"minor\":0,\"micro\":2}}}}",
		"{\"QMP\":{\"version\":{\"qemu\":{\"major\":5,\"minor\":2,\"micro\":0}}}}",
		"{\"QMP\":{\"version\":{\"qemu\":{\"major\":-1,\"minor\":0,\"micro\":0}}}}",
		"SSH-2.0-OpenSSH_9.2", "[]", "{\"QMP\":1}{}", "",
	};
	const char *good = "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 2, \"minor\": 0, "
			   "\"major\": 10}, \"package\": \"Debian\"}, \"capabilities\": [\"oob\"]}}";
	g_autofree char *v = NULL;

	(void)state;
	assert_true(vt_qmp_parse_greeting(good, strlen(good), &v, NULL));
	assert_string_equal(v, "10.0.2");
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e = NULL;
		char *x = NULL;

		if (vt_qmp_parse_greeting(bad[i], strlen(bad[i]), &x, &e))
			fail_msg("accepted greeting %s", bad[i]);
		assert_non_null(e);
	}
}

/* A 200 KB greeting of nested arrays crashed vtierd inside json-glib. */
static void test_greeting_deep(void **state)
{
	GString *s = g_string_new("{\"QMP\":");
	g_autoptr(GError) e = NULL;
	g_autofree char *v = NULL;

	(void)state;
	for (unsigned int i = 0; i < 100000; i++)
		g_string_append_c(s, '[');
	for (unsigned int i = 0; i < 100000; i++)
		g_string_append_c(s, ']');
	g_string_append_c(s, '}');
	assert_false(vt_qmp_parse_greeting(s->str, s->len, &v, &e));
	assert_non_null(strstr(e->message, "nested deeper than 64"));
	assert_null(v);
	g_string_free(s, TRUE);
}

static void test_memdev(void **state)
{
	g_autoptr(JsonNode) good = json(
		"[{\"share\": true, \"reserve\": true, \"prealloc\": false, \"host-nodes\": [], "
		"\"size\": 268435456, \"merge\": true, \"dump\": true, \"policy\": \"default\", "
		"\"id\": \"m0\"}, {\"size\": 4096, \"policy\": \"bind\", \"id\": \"m1\"}]");
	g_autoptr(JsonNode) objs = json("[{\"name\":\"type\",\"type\":\"string\"},"
					"{\"name\":\"m0\",\"type\":\"child<memory-backend-memfd>\"},"
					"{\"name\":\"m1\",\"type\":\"child<memory-backend-ram>\"}]");
	static const char *const bad[] = {
		"{}", "[1]", "[{\"size\":1}]", "[{\"size\":0,\"policy\":\"default\",\"id\":\"a\"}]",
		"[{\"size\":-5,\"policy\":\"default\",\"id\":\"a\"}]",
		"[{\"size\":\"1\",\"policy\":\"default\",\"id\":\"a\"}]",
		"[{\"size\":1,\"policy\":\"default\"}]",
		"[{\"size\":1,\"policy\":\"default\",\"id\":\"\"}]",
		/* ids and policies reach replies and logs: printable ASCII only */
		"[{\"size\":1,\"policy\":\"default\",\"id\":\"a\\u0007b\"}]",
		"[{\"size\":1,\"policy\":\"default\",\"id\":\"caf\\u00e9\"}]",
		"[{\"size\":1,\"policy\":\"def\\nault\",\"id\":\"a\"}]",
	};
	g_autoptr(GArray) m = g_array_new(FALSE, TRUE, sizeof(struct vt_memdev));

	(void)state;
	assert_true(vt_qmp_parse_memdev(good, m, NULL));
	assert_int_equal(m->len, 2);
	assert_true(vt_qmp_parse_objects(objs, m, NULL));
	assert_string_equal(g_array_index(m, struct vt_memdev, 0).type, "memory-backend-memfd");
	assert_true(g_array_index(m, struct vt_memdev, 0).share);
	assert_string_equal(g_array_index(m, struct vt_memdev, 1).type, "memory-backend-ram");
	assert_string_equal(g_array_index(m, struct vt_memdev, 1).policy, "bind");
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(JsonNode) n = json(bad[i]);
		g_autoptr(GArray) a = g_array_new(FALSE, TRUE, sizeof(struct vt_memdev));
		g_autoptr(GError) e = NULL;

		if (vt_qmp_parse_memdev(n, a, &e))
			fail_msg("accepted memdev %s", bad[i]);
	}
	{
		/* an octal escape makes a byte that is not UTF-8: taken as no type */
		g_autoptr(JsonNode) n = json("[{\"name\":\"m0\",\"type\":\"child<x\\233>\"}]");
		g_autoptr(GError) e = NULL;

		assert_false(vt_qmp_parse_objects(n, m, &e));
	}
	{
		g_autoptr(JsonNode) n = json("[{\"name\":1}]");
		g_autoptr(GError) e = NULL;

		assert_false(vt_qmp_parse_objects(n, m, &e));
	}
}

static void test_ramblocks(void **state)
{
	const char *good =
		"              Block Name    PSize              Offset               Used              Total                HVA  RO\r\n"
		"                     ram    4 KiB  0x0000000000000000 0x0000000010000000 0x0000000010000000 0x00007fc02bfff000  rw\r\n"
		"    /rom@etc/acpi/tables    2 MiB  0x0000000010080000 0x0000000000020000 0x0000000000200000 0x00007fc081400000  ro\r\n";
	static const char *const bad[] = {
		"", "garbage",
		"Block Name PSize Offset Used Total RO\n ram 4 KiB 0x0 0x1 0x1 rw\n",	/* no HVA */
		"ram 4 KiB 0x0 0x1000 0x1000 0x1000 rw\n",				/* no header */
		"Block Name PSize Offset Used Total HVA RO\n ram 4 KiB 0x0 0x1000 0x1000 0x1000\n",
		"Block Name PSize Offset Used Total HVA RO\n ram 4 XiB 0x0 0x1000 0x1000 0x1000 rw\n",
		"Block Name PSize Offset Used Total HVA RO\n ram 4 KiB 0 0x1000 0x1000 0x1000 rw\n",
		"Block Name PSize Offset Used Total HVA RO\n ram 4 KiB 0x0 0x2000 0x1000 0x1000 rw\n",
		"Block Name PSize Offset Used Total HVA RO\n ram 4 KiB 0x0 0x1000 0x1000 0x1000 rx\n",
		"Block Name PSize Offset Used Total HVA RO\n ram 4 KiB 0x0 0x1000 0x1000 0xfffffffffffff000 rw\n",
		"Block Name PSize Offset Used Total HVA RO\n ram 0 KiB 0x0 0x1000 0x1000 0x1000 rw\n",
		/* a block name that is not printable ASCII */
		"Block Name PSize Offset Used Total HVA RO\n r\xc3\xa9m 4 KiB 0x0 0x1000 0x1000 0x1000 rw\n",
	};
	g_autoptr(GArray) rb = g_array_new(FALSE, TRUE, sizeof(struct vt_ramblock));

	(void)state;
	assert_true(vt_qmp_parse_ramblocks(good, rb, NULL));
	assert_int_equal(rb->len, 2);
	assert_string_equal(g_array_index(rb, struct vt_ramblock, 0).name, "ram");
	assert_int_equal(g_array_index(rb, struct vt_ramblock, 0).hva, 0x7fc02bfff000);
	assert_int_equal(g_array_index(rb, struct vt_ramblock, 0).used, 0x10000000);
	assert_int_equal(g_array_index(rb, struct vt_ramblock, 1).page_size, 2 << 20);
	assert_true(g_array_index(rb, struct vt_ramblock, 1).readonly);
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GArray) a = g_array_new(FALSE, TRUE, sizeof(struct vt_ramblock));
		g_autoptr(GError) e = NULL;

		if (vt_qmp_parse_ramblocks(bad[i], a, &e))
			fail_msg("accepted ramblocks %s", bad[i]);
	}
	{
		/* the error quotes 80 bytes of the line: never half a UTF-8 character */
		g_autofree char *name = g_strnfill(79, 'a');
		g_autofree char *text = g_strdup_printf("Block Name PSize Offset Used Total HVA RO\n"
							"%s\xc3\xa9 4 KiB 0x0 0x1 0x1 0x1 rx\n", name);
		g_autoptr(GError) e = NULL;

		assert_false(vt_qmp_parse_ramblocks(text, rb, &e));
		assert_true(g_utf8_validate(e->message, -1, NULL));
	}
	assert_false(vt_qmp_parse_ramblocks(NULL, rb, NULL));
}

static void test_mtree(void **state)
{
	const char *good =
		"FlatView #0\n AS \"cpu-smm-0\", root: memory\n Root memory region: memory\n"
		"  0000000000000000-00000000000bffff (prio 0, ram): ram\n"
		"  00000000000c0000-00000000000dffff (prio 1, rom): pc.rom\n"
		"  0000000000100000-000000003fffffff (prio 0, ram): ram @0000000000100000 KVM\n"
		"  0000000100000000-000000013fffffff (prio 0, ram): m1 @0000000000000000 KVM\n"
		"  00000000fec00000-00000000fec00fff (prio 0, i/o): ioapic\n\n"
		"FlatView #1\n AS \"I/O\", root: io\n Root memory region: io\n"
		"  0000000000000000-0000000000000007 (prio 0, i/o): dma-chan\n"
		"FlatView #2\n Root memory region: memory\n"
		"  0000000000000000-0000000000000fff (prio 0, ram): dup\n";
	static const char *const bad[] = {
		"", "FlatView #0\n Root memory region: io\n",
		"FlatView #0\n Root memory region: memory\n 0000-0fff (prio 0, ram): ram\n",
		"FlatView #0\n Root memory region: memory\n"
		"  00000000000000zz-00000000000bffff (prio 0, ram): ram\n",
		"FlatView #0\n Root memory region: memory\n"
		"  00000000000c0000-00000000000bffff (prio 0, ram): ram\n",
		"FlatView #0\n Root memory region: memory\n"
		"  0000000000000000-00000000000bffff (prio 0, ram): ram @xyz\n",
		"FlatView #0\n Root memory region: memory\n"
		"  0000000000000000-ffffffffffffffff (prio 0, ram): ram\n",
		"FlatView #0\n Root memory region: memory\n"
		"  0000000000000000-00000000000bffff (prio 0, ram): \n",
		/* the line ends inside the range: nothing read past its end (fuzzer) */
		"FlatView #0\n Root memory region: memory\n  0000000000000000-00, ram):\n",
		/* ", ram):" before the end address */
		"FlatView #0\n Root memory region: memory\n"
		"  0000000000000000-, ram): 00000 (prio 0, ram): ram\n",
	};
	g_autoptr(GArray) r = g_array_new(FALSE, TRUE, sizeof(struct vt_gpa_range));
	const struct vt_gpa_range *x;

	(void)state;
	assert_true(vt_qmp_parse_mtree(good, r, NULL));
	assert_int_equal(r->len, 3);	/* ram twice and m1; not pc.rom, not the later view */
	x = &g_array_index(r, struct vt_gpa_range, 1);
	assert_string_equal(x->region, "ram");
	assert_int_equal(x->gpa, 0x100000);
	assert_int_equal(x->len, 0x3ff00000);
	assert_int_equal(x->offset, 0x100000);
	x = &g_array_index(r, struct vt_gpa_range, 0);
	assert_int_equal(x->offset, 0);
	assert_int_equal(x->len, 0xc0000);
	assert_string_equal(g_array_index(r, struct vt_gpa_range, 2).region, "m1");
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GArray) a = g_array_new(FALSE, TRUE, sizeof(struct vt_gpa_range));
		g_autoptr(GError) e = NULL;

		if (vt_qmp_parse_mtree(bad[i], a, &e))
			fail_msg("accepted mtree %s", bad[i]);
	}
	assert_false(vt_qmp_parse_mtree(NULL, r, NULL));
	/* under KVM the system address space's view comes first, rooted at "system" */
	{
		const char *kvm = "FlatView #0\n AS \"KVM-SMRAM\", root: mem-container-smram\n"
				  " Root memory region: mem-container-smram\n"
				  "  0000000000000000-00000000000bffff (prio 0, ram): smram\n"
				  "FlatView #1\n AS \"memory\", root: system\n Root memory region: system\n"
				  "  0000000000000000-000000003fffffff (prio 0, ram): ram KVM\n";
		g_autoptr(GArray) k = g_array_new(FALSE, TRUE, sizeof(struct vt_gpa_range));

		assert_true(vt_qmp_parse_mtree(kvm, k, NULL));
		assert_int_equal(k->len, 1);
		assert_string_equal(g_array_index(k, struct vt_gpa_range, 0).region, "ram");
	}
}

static void test_single_object(void **state)
{
	(void)state;
	assert_true(vt_json_single_object("{}", 2));
	assert_true(vt_json_single_object(" {\"a\":\"}{\"} \n", 13));
	assert_true(vt_json_single_object("{\"a\":\"\\\"}\"}", 11));
	assert_false(vt_json_single_object("{}{}", 4));
	assert_false(vt_json_single_object("{} x", 4));
	assert_false(vt_json_single_object("[]", 2));
	assert_false(vt_json_single_object("{", 1));
	assert_false(vt_json_single_object("", 0));
}

/* A fake peer: accepts once, writes @script, then keeps the line open for 3 s. */
struct peer {
	char path[108];
	const char *script;
	int fd;
	char *dir;
	GThread *thread;
};

static gpointer peer_thread(gpointer data)
{
	struct peer *p = data;
	int c = accept(p->fd, NULL, NULL);

	if (c >= 0) {
		if (*p->script && write(c, p->script, strlen(p->script)) < 0)
			(void)0;
		if (strcmp(p->script, "CLOSE") != 0) {
			char buf[4096];
			struct timeval tv = { .tv_sec = 3 };

			setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			while (read(c, buf, sizeof(buf)) > 0)
				;
		}
		close(c);
	}
	return NULL;
}

static void peer_start(struct peer *p, const char *script)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	p->script = script;
	p->dir = g_dir_make_tmp("vtier-qmp-XXXXXX", NULL);
	g_snprintf(p->path, sizeof(p->path), "%s/s", p->dir);
	strcpy(sa.sun_path, p->path);
	p->fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(p->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(p->fd, 1), 0);
	p->thread = g_thread_new("peer", peer_thread, p);
}

static void peer_stop(struct peer *p)
{
	g_thread_join(p->thread);
	close(p->fd);
	unlink(p->path);
	rmdir(p->dir);
	g_free(p->dir);
}

static void run_peer(const char *script, int expect_code, const char *expect_text)
{
	struct peer p;
	g_autoptr(GError) e = NULL;
	struct vt_qmp *q;

	peer_start(&p, script);
	q = vt_qmp_connect(p.path, 500, &e);
	assert_null(q);
	assert_non_null(e);
	if (expect_code)
		assert_int_equal(e->code, expect_code);
	if (!strstr(e->message, expect_text))
		fail_msg("error '%s' lacks '%s'", e->message, expect_text);
	peer_stop(&p);
}

static void test_not_qemu(void **state)
{
	(void)state;
	run_peer("SSH-2.0-OpenSSH_9.2\r\n", EPROTO, "not a QEMU QMP socket");
	run_peer("{\"hello\":\"world\"}\n", EPROTO, "not a QEMU QMP socket");
	run_peer("", ETIMEDOUT, "no answer");
	run_peer("CLOSE", ECONNRESET, "closed");
	/* a good greeting, then an error to qmp_capabilities */
	run_peer("{\"QMP\":{\"version\":{\"qemu\":{\"major\":10,\"minor\":0,\"micro\":2}}}}\n"
		 "{\"error\":{\"class\":\"GenericError\",\"desc\":\"nope\"},\"id\":\"vtier-1\"}\n",
		 EREMOTEIO, "nope");
	/* a reply for someone else */
	run_peer("{\"QMP\":{\"version\":{\"qemu\":{\"major\":10,\"minor\":0,\"micro\":2}}}}\n"
		 "{\"return\":{},\"id\":\"other\"}\n", EPROTO, "unexpected id");
	{
		g_autoptr(GError) e = NULL;

		assert_null(vt_qmp_connect("/nonexistent/qmp.sock", 500, &e));
		assert_int_equal(e->code, ENOENT);
	}
}

struct async_result {
	int calls;
	struct vt_qmp *q;
	GError *error;
	int ticks;
	gint64 last_tick;
	gint64 max_gap;		/* longest the loop went without running the ticker */
	bool drained;
};

static void async_cb(struct vt_qmp *q, GError *error, void *user)
{
	struct async_result *r = user;

	r->calls++;
	r->q = q;
	r->error = error;
	r->drained = q && vt_qmp_read_events(q, NULL, NULL, NULL);	/* the peer is still there */
}

static gboolean ticker(gpointer data)
{
	struct async_result *r = data;
	gint64 now = g_get_monotonic_time();

	if (r->last_tick && now - r->last_tick > r->max_gap)
		r->max_gap = now - r->last_tick;
	r->last_tick = now;
	r->ticks++;
	return G_SOURCE_CONTINUE;
}

/*
 * Connect asynchronously to a fake peer playing @script while a 10 ms
 * ticker runs on the same context; returns when the callback ran (or after
 * 3 s). With @cancel_after_ms, cancels then and runs the loop 400 ms more.
 */
static void run_async(const char *script, int timeout_ms, int cancel_after_ms,
		      struct async_result *r)
{
	GMainContext *ctx = g_main_context_new();
	struct vt_qmp_connecting *op;
	GSource *tick = g_timeout_source_new(10);
	struct peer p;
	gint64 t0, end;

	memset(r, 0, sizeof(*r));
	peer_start(&p, script);
	g_source_set_callback(tick, ticker, r, NULL);
	g_source_attach(tick, ctx);
	t0 = g_get_monotonic_time();
	op = vt_qmp_connect_async(p.path, timeout_ms, ctx, async_cb, r, NULL);
	assert_non_null(op);
	assert_true(g_get_monotonic_time() - t0 < 100000);	/* returns at once */
	end = t0 + (cancel_after_ms ? cancel_after_ms : 3000) * 1000LL;
	while (!r->calls && g_get_monotonic_time() < end)
		g_main_context_iteration(ctx, TRUE);
	if (cancel_after_ms) {
		assert_int_equal(r->calls, 0);
		vt_qmp_connect_cancel(op);
		end = g_get_monotonic_time() + 400000;
		while (g_get_monotonic_time() < end)
			g_main_context_iteration(ctx, TRUE);
	}
	g_source_destroy(tick);
	g_source_unref(tick);
	shutdown(p.fd, SHUT_RDWR);
	if (r->q)
		shutdown(vt_qmp_fd(r->q), SHUT_RDWR);	/* the peer thread stops reading */
	peer_stop(&p);
	g_main_context_unref(ctx);
}

#define GREETING "{\"QMP\":{\"version\":{\"qemu\":{\"major\":10,\"minor\":0,\"micro\":2}}}}\n"

/* QMP's events: a MIGRATION event's status, other events, replies, and lies. */
static void test_parse_event(void **state)
{
	static const struct {
		const char *line;
		int ret;
		enum vt_qmp_migration m;
	} cases[] = {
		{ "{\"event\":\"MIGRATION\",\"data\":{\"status\":\"setup\"},"
		  "\"timestamp\":{\"seconds\":1,\"microseconds\":2}}\r", 1, VT_QMP_MIGRATION_ACTIVE },
		{ "{\"event\":\"MIGRATION\",\"data\":{\"status\":\"active\"}}", 1, VT_QMP_MIGRATION_ACTIVE },
		{ "{\"event\":\"MIGRATION\",\"data\":{\"status\":\"device\"}}", 1, VT_QMP_MIGRATION_ACTIVE },
		{ "{\"event\":\"MIGRATION\",\"data\":{\"status\":\"pre-switchover\"}}", 1,
		  VT_QMP_MIGRATION_ACTIVE },
		{ "{\"event\":\"MIGRATION\",\"data\":{\"status\":\"wait-unplug\"}}", 1,
		  VT_QMP_MIGRATION_ACTIVE },
		{ "{\"event\":\"MIGRATION\",\"data\":{\"status\":\"completed\"}}", 1,
		  VT_QMP_MIGRATION_COMPLETED },
		{ "{\"event\":\"MIGRATION\",\"data\":{\"status\":\"failed\"}}", 1, VT_QMP_MIGRATION_FAILED },
		{ "{\"event\":\"MIGRATION\",\"data\":{\"status\":\"cancelled\"}}", 1,
		  VT_QMP_MIGRATION_FAILED },
		{ "{\"event\":\"MIGRATION\",\"data\":{\"status\":\"cancelling\"}}", 1,
		  VT_QMP_MIGRATION_OTHER },
		{ "{\"event\":\"MIGRATION\",\"data\":{\"status\":\"postcopy-active\"}}", 1,
		  VT_QMP_MIGRATION_OTHER },
		{ "{\"event\":\"MIGRATION\",\"data\":{\"status\":\"ACTIVE\"}}", 1, VT_QMP_MIGRATION_OTHER },
		{ "{\"event\":\"MIGRATION_PASS\",\"data\":{\"pass\":2}}", 1, VT_QMP_MIGRATION_NONE },
		{ "{\"event\":\"STOP\"}", 1, VT_QMP_MIGRATION_NONE },
		{ "{\"return\":{},\"id\":\"late\"}", 0, VT_QMP_MIGRATION_NONE },
		/* lies: each refused with a reason */
		{ "{\"event\":\"MIGRATION\"}", -1, 0 },
		{ "{\"event\":\"MIGRATION\",\"data\":{\"status\":3}}", -1, 0 },
		{ "{\"event\":\"MIGRATION\",\"data\":[\"active\"]}", -1, 0 },
		{ "{\"event\":\"MIGRATION\",\"data\":{\"status\":{\"x\":1}}}", -1, 0 },
		{ "{\"event\":7}", -1, 0 },
		{ "{\"event\":\"\"}", -1, 0 },
		{ "{\"event\":\"MIGRATION\"", -1, 0 },
		{ "[\"event\",\"MIGRATION\"]", -1, 0 },
		{ "{\"event\":\"STOP\"} {\"event\":\"STOP\"}", -1, 0 },
		{ "not json", -1, 0 },
		{ "", -1, 0 },
	};

	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) e = NULL;
		struct vt_qmp_event ev = { .migration = 99 };
		int r = vt_qmp_parse_event(cases[i].line, strlen(cases[i].line), &ev, &e);

		if (r != cases[i].ret)
			fail_msg("case %u (%s): %d, not %d", i, cases[i].line, r, cases[i].ret);
		if (r < 0 && (!e || !e->message[0]))
			fail_msg("case %u: refused without a reason", i);
		if (r == 1 && ev.migration != cases[i].m)
			fail_msg("case %u: migration %d, not %d", i, ev.migration, cases[i].m);
	}
	{
		/* a name with control characters is kept printable; NUL and depth refused */
		const char name[] = "{\"event\":\"A\\u001bB\"}";
		const char nul[] = "{\"event\":\"S\0\"}";
		g_autoptr(GString) deep = g_string_new("{\"event\":\"X\",\"data\":");
		struct vt_qmp_event ev;

		assert_int_equal(vt_qmp_parse_event(name, strlen(name), &ev, NULL), 1);
		for (const char *c = ev.name; *c; c++)
			assert_true(g_ascii_isprint(*c));
		assert_int_equal(vt_qmp_parse_event(nul, sizeof(nul) - 1, &ev, NULL), -1);
		for (int i = 0; i < 200; i++)
			g_string_append(deep, "{\"a\":");
		g_string_append(deep, "1");
		for (int i = 0; i < 201; i++)
			g_string_append(deep, "}");
		assert_int_equal(vt_qmp_parse_event(deep->str, deep->len, &ev, NULL), -1);
	}
}

struct seen_events {
	unsigned int n;
	enum vt_qmp_migration m[8];
};

static void count_event(const struct vt_qmp_event *ev, void *user)
{
	struct seen_events *s = user;

	if (s->n < G_N_ELEMENTS(s->m))
		s->m[s->n] = ev->migration;
	s->n++;
}

#define CAPS_OK "{\"return\":{},\"id\":\"vtier-1\"}\r\n"
#define MIG(st) "{\"event\":\"MIGRATION\",\"data\":{\"status\":\"" st "\"}}\r\n"

/*
 * Events as vtierd reads them from an attached VM's QMP: in order, also those
 * that came with the greeting's read, a message cut by the read waits, and
 * the events QEMU sent before it hung up are delivered before it says so;
 * a peer that sends what is not QMP loses the VM.
 */
static void test_read_events(void **state)
{
	static const struct {
		const char *script;
		unsigned int events;
		bool ok;
		int code;
	} cases[] = {
		{ GREETING CAPS_OK MIG("setup") "{\"event\":\"STOP\"}\r\n" MIG("completed")
		  "{\"event\":\"MIGR", 3, true, 0 },
		{ GREETING CAPS_OK MIG("active") "{\"event\":\"MIGRATION\"}\r\n" MIG("failed"), 1, false,
		  EPROTO },
	};

	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct seen_events seen = { 0 };
		g_autoptr(GError) e = NULL;
		struct peer p;
		struct vt_qmp *q;
		bool ok = true;

		peer_start(&p, cases[i].script);
		q = vt_qmp_connect(p.path, 2000, &e);
		assert_non_null(q);
		for (int t = 0; t < 200 && ok && seen.n < cases[i].events; t++) {
			ok = vt_qmp_read_events(q, count_event, &seen, &e);
			g_usleep(5000);
		}
		assert_int_equal(seen.n, cases[i].events);
		assert_int_equal(ok, cases[i].ok);
		if (!ok)
			assert_int_equal(e->code, cases[i].code);
		if (i == 0) {
			assert_int_equal(seen.m[0], VT_QMP_MIGRATION_ACTIVE);
			assert_int_equal(seen.m[1], VT_QMP_MIGRATION_NONE);
			assert_int_equal(seen.m[2], VT_QMP_MIGRATION_COMPLETED);
			/* the cut message waits; the peer hangs up: lost, after what it said */
			shutdown(p.fd, SHUT_RDWR);
			for (int t = 0; t < 400 && ok; t++) {
				ok = vt_qmp_read_events(q, count_event, &seen, &e);
				g_usleep(10000);
			}
			assert_false(ok);
			assert_int_equal(e->code, ECONNRESET);
			assert_int_equal(seen.n, 3);
		}
		shutdown(vt_qmp_fd(q), SHUT_RDWR);
		vt_qmp_free(q);
		peer_stop(&p);
	}
}

/*
 * (i) A socket that is not QMP, or says nothing: the attach must not stall
 * the loop (vt_qmp_connect blocked it for its whole timeout). The ticker
 * keeps running every 10 ms while the connect waits for its deadline.
 */
static void test_connect_async(void **state)
{
	struct async_result r;
	GString *deep = g_string_new("{\"QMP\":");

	(void)state;
	run_async(GREETING "{\"return\":{},\"id\":\"vtier-1\"}\n{\"event\":\"X\"}\n", 1000, 0, &r);
	assert_int_equal(r.calls, 1);
	assert_null(r.error);
	assert_non_null(r.q);
	assert_string_equal(vt_qmp_version(r.q), "10.0.2");
	assert_int_equal(vt_qmp_peer_pid(r.q), getpid());
	assert_true(r.drained);
	vt_qmp_free(r.q);

	run_async("", 300, 0, &r);
	assert_int_equal(r.calls, 1);
	assert_null(r.q);
	assert_int_equal(r.error->code, ETIMEDOUT);
	assert_non_null(strstr(r.error->message, "no QMP greeting within 300 ms"));
	assert_true(r.ticks >= 10);
	assert_true(r.max_gap < 100000);	/* the loop was never held */
	g_error_free(r.error);

	run_async("SSH-2.0-OpenSSH_9.2\r\n", 1000, 0, &r);
	assert_int_equal(r.error->code, EPROTO);
	assert_non_null(strstr(r.error->message, "not a QEMU QMP socket"));
	g_error_free(r.error);

	for (int i = 0; i < 100000; i++)
		g_string_append_c(deep, '[');
	for (int i = 0; i < 100000; i++)
		g_string_append_c(deep, ']');
	g_string_append(deep, "}\n");
	run_async(deep->str, 1000, 0, &r);
	assert_int_equal(r.error->code, EPROTO);
	assert_non_null(strstr(r.error->message, "nested deeper than 64"));
	g_error_free(r.error);
	g_string_free(deep, TRUE);

	run_async(GREETING "{\"error\":{\"class\":\"X\",\"desc\":\"no\\u0007pe\\n\"},\"id\":\"vtier-1\"}\n",
		  1000, 0, &r);
	assert_int_equal(r.error->code, EREMOTEIO);
	assert_non_null(strstr(r.error->message, "no?pe?"));	/* peer text made printable */
	g_error_free(r.error);

	run_async("CLOSE", 1000, 0, &r);
	assert_int_equal(r.error->code, ECONNRESET);
	g_error_free(r.error);

	/* cancelled: the callback never runs */
	run_async("", 300, 100, &r);
	assert_int_equal(r.calls, 0);
	{
		g_autoptr(GError) e = NULL;

		assert_null(vt_qmp_connect_async("/nonexistent/qmp.sock", 500, NULL, async_cb, &r,
						 &e));
		assert_int_equal(e->code, ENOENT);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_greeting),
		cmocka_unit_test(test_greeting_deep),
		cmocka_unit_test(test_memdev),
		cmocka_unit_test(test_ramblocks),
		cmocka_unit_test(test_mtree),
		cmocka_unit_test(test_single_object),
		cmocka_unit_test(test_not_qemu),
		cmocka_unit_test(test_connect_async),
		cmocka_unit_test(test_parse_event),
		cmocka_unit_test(test_read_events),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
