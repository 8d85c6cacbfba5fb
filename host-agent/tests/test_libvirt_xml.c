// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libvirt domain XML and vtier:policy: golden files. Each
 * tests/libvirt-xml/NAME.xml (policy-*: the element alone, as
 * virDomainGetMetadata returns it; domain-*: a whole domain) is parsed, its
 * assignments applied to the default policy (model/vm_policy.c), and what
 * came out compared with NAME.out. A bad input gives exactly one "error:"
 * or "refused:" line. VT_GOLDEN_UPDATE=1 rewrites the .out files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "libvirt_xml.h"
#include "host_share.h"
#include "vm_policy.h"

static const char *dir;
static const char *schema;

static void apply(GString *out, GPtrArray *set)
{
	struct vt_vm_policy p;
	g_autoptr(GError) e = NULL;

	g_string_append(out, "policy:");
	for (unsigned int i = 0; i < set->len; i++) {
		g_autofree char *esc = g_strescape(g_ptr_array_index(set, i), NULL);

		g_string_append_printf(out, " %s", esc);
	}
	g_string_append_c(out, '\n');
	/* no attribute: the defaults (vtierd does the same) */
	vt_vm_policy_default(&p);
	if (set->len && !vt_vm_policy_apply(&p, (char *const *)set->pdata, set->len, &e)) {
		g_string_append_printf(out, "refused: %s\n", e->message);
		return;
	}
	g_string_append_printf(out, "applied: mode=%s dram_limit=%" G_GUINT64_FORMAT
			       " tco_alpha=%g placement=%s\n", vt_mode_name(p.mode),
			       (guint64)p.dram_limit_bytes, p.tco_alpha, vt_placement_name(p.placement));
	/* the host-share keys, when set (the older golden files have neither) */
	if (p.dram_min_bytes || p.weight != VT_SHARE_WEIGHT_DEFAULT)
		g_string_append_printf(out, "applied: dram_min=%" G_GUINT64_FORMAT " weight=%u\n",
				       (guint64)p.dram_min_bytes, p.weight);
	/* tdp_flush, when not the default */
	if (p.tdp_flush != VT_POLICY_TDP_FLUSH_NEVER)
		g_string_append_printf(out, "applied: tdp_flush=%s\n",
				       vt_policy_tdp_flush_name(p.tdp_flush));
}

static char *run_one(const char *name, const char *xml, size_t len)
{
	GString *out = g_string_new(NULL);
	g_autoptr(GError) e = NULL;

	if (g_str_has_prefix(name, "policy-")) {
		g_autoptr(GPtrArray) set = g_ptr_array_new_with_free_func(g_free);

		if (!vt_libvirt_policy_parse(xml, len, vt_vm_policy_keys(), set, &e))
			g_string_append_printf(out, "error: %s\n", e->message);
		else
			apply(out, set);
	} else {
		struct vt_libvirt_domain dom;

		if (!vt_libvirt_domain_parse(xml, len, vt_vm_policy_keys(), &dom, &e)) {
			g_string_append_printf(out, "error: %s\n", e->message);
		} else {
			g_string_append_printf(out, "name: %s\nuuid: %s\nid: %d\nqmp: %s\n",
					       dom.name, dom.uuid, dom.id,
					       dom.qmp_path ? dom.qmp_path : "(none)");
			if (dom.has_policy)
				apply(out, dom.policy);
			else
				g_string_append(out, "policy: none\n");
		}
		vt_libvirt_domain_clear(&dom);
	}
	return g_string_free(out, FALSE);
}

static void test_golden(void **state)
{
	const char *name = *state;
	g_autofree char *xml_path = g_build_filename(dir, name, NULL);
	g_autofree char *base = g_strndup(name, strlen(name) - 4);
	g_autofree char *out_path = g_strconcat(dir, "/", base, ".out", NULL);
	g_autofree char *xml = NULL, *want = NULL, *got = NULL;
	gsize len;

	assert_true(g_file_get_contents(xml_path, &xml, &len, NULL));
	got = run_one(base, xml, len);
	if (g_getenv("VT_GOLDEN_UPDATE")) {
		assert_true(g_file_set_contents(out_path, got, -1, NULL));
		return;
	}
	if (!g_file_get_contents(out_path, &want, NULL, NULL))
		fail_msg("%s: no golden file (run with VT_GOLDEN_UPDATE=1 and review it)", out_path);
	if (strcmp(want, got) != 0)
		fail_msg("%s:\nwant:\n%sgot:\n%s", name, want, got);
	/* a bad input names one reason, on one line, the last */
	if (strstr(base, "-bad-")) {
		g_auto(GStrv) lines = g_strsplit(got, "\n", -1);
		unsigned int reasons = 0, nr = g_strv_length(lines);

		for (unsigned int i = 0; i < nr; i++)
			reasons += g_str_has_prefix(lines[i], "error: ") ||
				   g_str_has_prefix(lines[i], "refused: ");
		assert_int_equal(reasons, 1);
		assert_true(nr >= 2 && !lines[nr - 1][0] &&
			    (g_str_has_prefix(lines[nr - 2], "error: ") ||
			     g_str_has_prefix(lines[nr - 2], "refused: ")));
	} else {
		assert_null(strstr(got, "error: "));
		assert_null(strstr(got, "refused: "));
	}
}

/* The same bytes as a domain's <metadata> and as the element alone give the same assignments. */
static void test_policy_in_domain(void **state)
{
	static const char el[] = "<vtier:policy xmlns:vtier='" VT_LIBVIRT_POLICY_NS "' mode='observe' "
				 "dram_limit='512MiB'/>";
	g_autofree char *doc = g_strdup_printf("<domain><name>a</name><metadata>%s</metadata>"
					       "</domain>", el);
	g_autoptr(GPtrArray) set = g_ptr_array_new_with_free_func(g_free);
	struct vt_libvirt_domain dom;

	(void)state;
	assert_true(vt_libvirt_policy_parse(el, strlen(el), vt_vm_policy_keys(), set, NULL));
	assert_true(vt_libvirt_domain_parse(doc, strlen(doc), vt_vm_policy_keys(), &dom, NULL));
	assert_true(dom.has_policy);
	assert_int_equal(dom.policy->len, set->len);
	for (unsigned int i = 0; i < set->len; i++)
		assert_string_equal(g_ptr_array_index(set, i), g_ptr_array_index(dom.policy, i));
	vt_libvirt_domain_clear(&dom);
}

/* Sizes: the caps hold, and a NUL inside is refused rather than cut short. */
static void test_limits(void **state)
{
	g_autofree char *big = g_malloc(VT_LIBVIRT_POLICY_XML_MAX + 2);
	g_autoptr(GPtrArray) set = g_ptr_array_new_with_free_func(g_free);
	static const char nul[] = "<vtier:policy xmlns:vtier='" VT_LIBVIRT_POLICY_NS "'/>\0x";
	g_autoptr(GError) e = NULL;

	(void)state;
	memset(big, ' ', VT_LIBVIRT_POLICY_XML_MAX + 1);
	assert_false(vt_libvirt_policy_parse(big, VT_LIBVIRT_POLICY_XML_MAX + 1,
					     vt_vm_policy_keys(), set, &e));
	assert_non_null(strstr(e->message, "at most"));
	g_clear_error(&e);
	assert_false(vt_libvirt_policy_parse(nul, sizeof(nul) - 1, vt_vm_policy_keys(), set, &e));
	assert_non_null(strstr(e->message, "NUL"));
	g_clear_error(&e);
	assert_false(vt_libvirt_policy_parse("", 0, vt_vm_policy_keys(), set, &e));
	assert_int_equal(set->len, 0);
}

/* A domain whose <metadata> element carries @n attributes (xmlns:pN ones when @ns). */
static GString *many_attributes(unsigned int n, bool ns)
{
	GString *x = g_string_new("<domain type='qemu'><name>flood</name><metadata><app:x "
				  "xmlns:app='http://app/'");

	for (unsigned int i = 0; i < n; i++)
		g_string_append_printf(x, ns ? " xmlns:p%u='http://p/%u'" : " a%u=''", i, i);
	g_string_append(x, "/><vtier:policy xmlns:vtier='" VT_LIBVIRT_POLICY_NS "' mode='auto'/>"
			"</metadata></domain>");
	return x;
}

/* this thread's CPU time in us: a loaded machine's wait is not the parser's cost */
static gint64 thread_cpu_us(void)
{
	struct timespec ts;

	assert_int_equal(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts), 0);
	return (gint64)ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

/*
 * libxml2's duplicate-attribute and namespace checks are quadratic: 50 k
 * attributes on one element (0.5 MB) took 20 s. The scan refuses them, and
 * 20 k namespace declarations (0.6 MB), in well under a second of CPU (a
 * wall-clock bound of 0.1 s failed with two unit suites on two cores),
 * naming the bound.
 */
static void test_attribute_flood(void **state)
{
	struct vt_libvirt_domain dom;
	g_autoptr(GError) e = NULL;
	GString *x;
	gint64 t0;

	(void)state;
	for (int ns = 0; ns < 2; ns++) {
		x = many_attributes(ns ? 20000 : 50000, ns);
		assert_true(x->len < VT_LIBVIRT_DOMAIN_XML_MAX);
		t0 = thread_cpu_us();
		assert_false(vt_libvirt_domain_parse(x->str, x->len, vt_vm_policy_keys(), &dom, &e));
		print_message("# %u %s: refused in %lld us of CPU: %s\n", ns ? 20000 : 50000,
			      ns ? "namespaces" : "attributes", (long long)(thread_cpu_us() - t0),
			      e->message);
		assert_true(thread_cpu_us() - t0 < G_USEC_PER_SEC / 2);
		assert_non_null(strstr(e->message, ns ? "namespaces: at most 16" :
				       "attributes: at most 64"));
		vt_libvirt_domain_clear(&dom);
		g_clear_error(&e);
		g_string_free(x, TRUE);
	}
	/* at the bound it is read */
	x = many_attributes(VT_LIBVIRT_XML_MAX_ATTRS - 1, false);
	assert_true(vt_libvirt_domain_parse(x->str, x->len, vt_vm_policy_keys(), &dom, &e));
	assert_true(dom.has_policy);
	vt_libvirt_domain_clear(&dom);
	g_string_free(x, TRUE);
}

/*
 * The DOCTYPE guard is a byte search: a document in another encoding hides
 * its DOCTYPE and entities from it, and libxml2 reads them. Each is refused
 * by the encoding check first.
 */
static void test_encodings(void **state)
{
	static const char doc[] =
		"<?xml version='1.0' encoding='%s'?><!DOCTYPE p [<!ENTITY m 'auto'>]>"
		"<vtier:policy xmlns:vtier='" VT_LIBVIRT_POLICY_NS "' mode='&m;'/>";
	static const struct {
		const char *iconv, *decl, *bom;
		size_t bom_len;
	} cases[] = {
		{ "IBM037", "IBM037", NULL, 0 },	/* EBCDIC: 4C 6F A7 94 */
		{ "IBM500", "EBCDIC-INT", NULL, 0 },
		{ "UTF-16LE", "UTF-16", "\xff\xfe", 2 },
		{ "UTF-16BE", "UTF-16", "\xfe\xff", 2 },
		{ "UTF-16LE", "UTF-16LE", NULL, 0 },
		{ "UTF-32BE", "UTF-32", "\0\0\xfe\xff", 4 },
		{ "UTF-32LE", "UTF-32LE", NULL, 0 },
	};

	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *text = g_strdup_printf(doc, cases[i].decl);
		g_autoptr(GPtrArray) set = g_ptr_array_new_with_free_func(g_free);
		g_autoptr(GError) e = NULL;
		g_autofree char *enc = NULL;
		GString *x = g_string_new_len(cases[i].bom, (gssize)cases[i].bom_len);
		gsize n = 0;

		enc = g_convert(text, -1, cases[i].iconv, "UTF-8", NULL, &n, NULL);
		assert_non_null(enc);
		g_string_append_len(x, enc, (gssize)n);
		if (vt_libvirt_policy_parse(x->str, x->len, vt_vm_policy_keys(), set, &e))
			fail_msg("%s: read as %u assignment(s) (%s)", cases[i].iconv, set->len,
				 set->len ? (char *)g_ptr_array_index(set, 0) : "");
		if (!strstr(e->message, "UTF-8 (or ASCII) XML only"))
			fail_msg("%s: refused for another reason: %s", cases[i].iconv, e->message);
		g_string_free(x, TRUE);
	}
}

/* The schema names every policy key vtierd takes (a new key goes into both). */
static void test_schema_keys(void **state)
{
	g_autofree char *rng = NULL;

	(void)state;
	if (!schema)
		skip();
	assert_true(g_file_get_contents(schema, &rng, NULL, NULL));
	assert_non_null(strstr(rng, "ns=\"" VT_LIBVIRT_POLICY_NS "\""));
	for (const char *const *k = vt_vm_policy_keys(); *k; k++) {
		g_autofree char *want = g_strdup_printf("<attribute name=\"%s\">", *k);

		if (!strstr(rng, want))
			fail_msg("%s: no attribute for policy key '%s'", schema, *k);
	}
}

static gint cmp_name(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	g_autoptr(GDir) d = NULL;
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	struct CMUnitTest *tests;
	const char *n;
	int ret;

	dir = argc > 1 ? argv[1] : "host-agent/tests/libvirt-xml";
	schema = argc > 2 ? argv[2] : NULL;
	d = g_dir_open(dir, 0, NULL);
	if (!d) {
		fprintf(stderr, "test_libvirt_xml: no directory %s\n", dir);
		return 1;
	}
	while ((n = g_dir_read_name(d)))
		if (g_str_has_suffix(n, ".xml"))
			g_ptr_array_add(names, g_strdup(n));
	g_ptr_array_sort(names, cmp_name);
	tests = g_new0(struct CMUnitTest, names->len + 5);
	for (unsigned int i = 0; i < names->len; i++) {
		const char *nm = g_ptr_array_index(names, i);

		tests[i] = (struct CMUnitTest){ .name = nm, .test_func = test_golden,
						.initial_state = (void *)nm };
	}
	tests[names->len] = (struct CMUnitTest)cmocka_unit_test(test_policy_in_domain);
	tests[names->len + 1] = (struct CMUnitTest)cmocka_unit_test(test_limits);
	tests[names->len + 2] = (struct CMUnitTest)cmocka_unit_test(test_schema_keys);
	tests[names->len + 3] = (struct CMUnitTest)cmocka_unit_test(test_attribute_flood);
	tests[names->len + 4] = (struct CMUnitTest)cmocka_unit_test(test_encodings);
	ret = _cmocka_run_group_tests("libvirt_xml", tests, names->len + 5, NULL, NULL);
	g_free(tests);
	return ret;
}
