// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtierd's libvirt client (daemon/libvirt_domains.c) against libvirt's own
 * in-process test driver (test:///FILE), whose running domains are read
 * from a node file written here. One domain's metadata carries an element of
 * 14 k attributes: libvirt itself takes about a second to parse it (libxml2's
 * quadratic duplicate check), vtierd refuses it by its bounds; the main loop
 * must answer all the while: a 2 ms timeout on it never waits long. Another
 * domain's refusal (no QMP socket) is logged as well.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <glib.h>

#include "daemon.h"
#include "libvirt_domains.h"
#include "libvirt_xml.h"

#define ATTRS 14000

/* vt_log_fn has no argument of its own: what vtierd logged, for the test to wait on. */
static GPtrArray *logged;

static void log_fn(GLogLevelFlags level, const char *vm, const char *message)
{
	(void)level;
	g_ptr_array_add(logged, g_strdup_printf("%s: %s", vm ? vm : "-", message));
	g_test_message("%s", message);
}

static bool logged_has(const char *needle)
{
	for (unsigned int i = 0; i < logged->len; i++)
		if (strstr(g_ptr_array_index(logged, i), needle))
			return true;
	return false;
}

struct ticks {
	gint64 last, worst;
};

static gboolean tick(gpointer data)
{
	struct ticks *t = data;
	gint64 now = g_get_monotonic_time();

	if (t->last && now - t->last > t->worst)
		t->worst = now - t->last;
	t->last = now;
	return G_SOURCE_CONTINUE;
}

static char *node_file(const char *dir)
{
	GString *x = g_string_new("<node>\n");
	char *path = g_build_filename(dir, "node.xml", NULL);

	g_string_append(x, "<domain type='test'><name>flood</name>"
			"<uuid>6a3b2e4c-1f2d-4e5a-9b8c-7d6e5f4a3b2c</uuid>"
			"<memory>1048576</memory><os><type>hvm</type></os><metadata>"
			"<app:x xmlns:app='http://app.example/'");
	for (unsigned int i = 0; i < ATTRS; i++)
		g_string_append_printf(x, " a%u=''", i);
	g_string_append(x, "/><vtier:policy xmlns:vtier='" VT_LIBVIRT_POLICY_NS "' "
			"mode='observe'/></metadata></domain>\n"
			"<domain type='test'><name>plain</name>"
			"<uuid>0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9</uuid>"
			"<memory>1048576</memory><os><type>hvm</type></os><metadata>"
			"<vtier:policy xmlns:vtier='" VT_LIBVIRT_POLICY_NS "' mode='observe'/>"
			"</metadata></domain>\n</node>\n");
	assert_true(g_file_set_contents(path, x->str, (gssize)x->len, NULL));
	g_string_free(x, TRUE);
	return path;
}

static void test_slow_domain_off_the_loop(void **state)
{
	g_autofree char *dir = g_dir_make_tmp("vtier-lv-XXXXXX", NULL);
	g_autofree char *node = NULL, *uri = NULL, *rm = NULL;
	struct vt_tiers tiers = { 0 };
	struct ticks t = { 0 };
	struct vt_daemon *d;
	struct vt_libvirt *lv;
	gint64 t0, end;
	guint timer;

	(void)state;
	assert_non_null(dir);
	node = node_file(dir);
	uri = g_strconcat("test://", node, NULL);
	logged = g_ptr_array_new_with_free_func(g_free);
	d = vt_daemon_new(&tiers, log_fn);
	timer = g_timeout_add(2, tick, &t);
	t0 = g_get_monotonic_time();
	end = t0 + 60 * G_USEC_PER_SEC;
	lv = vt_libvirt_new(d, uri, VT_LIBVIRT_ATTACH_POLICY);
	while (!(logged_has("attributes: at most 64") && logged_has("'plain' has no QMP socket")) &&
	       g_get_monotonic_time() < end)
		g_main_context_iteration(NULL, TRUE);
	print_message("# both domains handled in %lld ms; the loop's longest wait %lld ms\n",
		      (long long)(g_get_monotonic_time() - t0) / 1000, (long long)t.worst / 1000);
	for (unsigned int i = 0; i < logged->len; i++)
		print_message("#   %s\n", (char *)g_ptr_array_index(logged, i));
	assert_true(logged_has("connected, 2 running domain(s)"));
	assert_true(logged_has("libvirt domain 'flood': not attached: element <app:x> has 14001 "
			       "attributes: at most 64 on one element"));
	assert_true(logged_has("'plain' has no QMP socket"));
	/* the loop answered within milliseconds throughout */
	assert_true(t.worst < 250 * 1000);
	g_source_remove(timer);
	vt_libvirt_free(lv);
	vt_daemon_free(d);
	g_ptr_array_free(logged, TRUE);
	rm = g_strdup_printf("rm -rf '%s'", dir);
	assert_int_equal(system(rm), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slow_domain_off_the_loop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
