// SPDX-License-Identifier: GPL-2.0-or-later
/* Domain XML for vtier: the policy element, the domain's identity, its QMP socket. */
#include <errno.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "json_guard.h"
#include "libvirt_xml.h"

G_DEFINE_QUARK(vt-libvirt-error-quark, vt_libvirt_error)

#define QEMU_NS "http://libvirt.org/schemas/domain/qemu/1.0"

#define XERR(error, ...) g_set_error(error, VT_LIBVIRT_ERROR, EINVAL, __VA_ARGS__)

/* XML names and values are UTF-8 from outside: shown as printable ASCII. */
static const char *shown(char *buf, size_t len, const xmlChar *s)
{
	const char *c = s ? (const char *)s : "";

	return vt_text_printable(buf, len, c, strlen(c));
}

static void keys_list(GString *out, const char *const *keys)
{
	for (unsigned int i = 0; keys[i]; i++)
		g_string_append_printf(out, "%s%s", i ? ", " : "", keys[i]);
}

#define UTF8_ONLY "vtier reads UTF-8 (or ASCII) XML only"

/* The first @n bytes of @p, printable, for a message. */
static const char *shown_n(char *buf, size_t len, const char *p, size_t n)
{
	return vt_text_printable(buf, len, p, MIN(n, 40));
}

/* The first occurrence of @lit in [@p, @end), or NULL. */
static const char *find(const char *p, const char *end, const char *lit)
{
	return p < end ? g_strstr_len(p, end - p, lit) : NULL;
}

/*
 * The bytes are ASCII-compatible UTF-8 before any other check looks at
 * them: no UTF-16/32 (a byte order mark, or the NULs of their ASCII), a
 * first byte '<' (EBCDIC's "<?xml" is 4C 6F A7 94), and an encoding
 * declaration, if any, of UTF-8 or ASCII. Returns where the document starts
 * (after a UTF-8 byte order mark), or NULL with @error set.
 */
static const char *check_encoding(const char *xml, size_t len, GError **error)
{
	static const char *const ok[] = { "UTF-8", "UTF8", "US-ASCII", "ASCII" };
	const unsigned char *u = (const unsigned char *)xml;
	const char *p = xml, *end = xml + len, *nul, *decl_end, *enc;
	char a[64];

	if (len >= 2 && ((u[0] == 0xfe && u[1] == 0xff) || (u[0] == 0xff && u[1] == 0xfe) ||
			 (len >= 4 && !u[0] && !u[1] && u[2] == 0xfe && u[3] == 0xff))) {
		XERR(error, "a UTF-16 or UTF-32 byte order mark: " UTF8_ONLY);
		return NULL;
	}
	nul = memchr(xml, '\0', len);
	if (nul) {
		XERR(error, "a NUL byte at offset %zu (UTF-16 or UTF-32?): " UTF8_ONLY,
		     (size_t)(nul - xml));
		return NULL;
	}
	if (len >= 3 && u[0] == 0xef && u[1] == 0xbb && u[2] == 0xbf)
		p += 3;
	while (p < end && g_ascii_isspace(*p))
		p++;
	if (p == end || *p != '<') {
		/* EBCDIC's '<' and '?' */
		bool ebcdic = end - p >= 2 && (unsigned char)p[0] == 0x4c && (unsigned char)p[1] == 0x6f;

		XERR(error, "the XML starts with byte 0x%02x at offset %zu, not '<'%s: " UTF8_ONLY,
		     p < end ? (unsigned char)*p : 0, (size_t)(p - xml),
		     ebcdic ? " (EBCDIC)" : "");
		return NULL;
	}
	if (end - p < 6 || memcmp(p, "<?xml", 5) || !(g_ascii_isspace(p[5]) || p[5] == '?'))
		return xml;
	decl_end = find(p, end, "?>");
	enc = decl_end ? find(p, decl_end, "encoding") : NULL;
	if (enc) {
		const char *v = enc + 8, *q;

		while (v < decl_end && (g_ascii_isspace(*v) || *v == '='))
			v++;
		q = v < decl_end && (*v == '"' || *v == '\'') ? memchr(v + 1, *v, decl_end - v - 1) :
		    NULL;
		for (unsigned int i = 0; q && i < G_N_ELEMENTS(ok); i++)
			if ((size_t)(q - v - 1) == strlen(ok[i]) &&
			    !g_ascii_strncasecmp(v + 1, ok[i], strlen(ok[i])))
				return xml;
		XERR(error, "encoding '%s' declared: " UTF8_ONLY, q ?
		     shown_n(a, sizeof(a), v + 1, (size_t)(q - v - 1)) :
		     shown_n(a, sizeof(a), v, (size_t)(decl_end - v)));
		return NULL;
	}
	return xml;
}

/*
 * A scan of the markup, linear in the bytes, before libxml2 sees it: no DTD
 * or other <! declaration (comments and CDATA are skipped), and the bounds of
 * libvirt_xml.h on attributes and namespace declarations per element,
 * namespace declarations per document and nesting. What is not well-formed
 * is left to libxml2 to refuse.
 */
static bool check_markup(const char *p, const char *end, GError **error)
{
	unsigned int depth = 0, ns_total = 0;
	char a[64];

	while ((p = p < end ? memchr(p, '<', (size_t)(end - p)) : NULL)) {
		const char *elem = ++p, *name = NULL, *q;
		unsigned int attrs = 0, ns = 0;
		size_t elem_len, name_len = 0;
		bool in_name = false, empty = false;

		if (p < end && *p == '!') {
			if (end - p >= 3 && !memcmp(p, "!--", 3))
				q = find(p + 3, end, "-->");
			else if (end - p >= 8 && !memcmp(p, "![CDATA[", 8))
				q = find(p + 8, end, "]]>");
			else {
				XERR(error, "a '<%s' declaration in the XML: vtier reads no DTD and "
				     "expands no entities", shown_n(a, 12, p, (size_t)(end - p)));
				return false;
			}
			p = q ? q + 3 : end;
			continue;
		}
		if (p < end && *p == '?') {
			q = find(p, end, "?>");
			p = q ? q + 2 : end;
			continue;
		}
		if (p < end && *p == '/') {
			depth -= depth > 0;
			q = memchr(p, '>', (size_t)(end - p));
			p = q ? q + 1 : end;
			continue;
		}
		/* a start tag: its name, then attributes up to '>' (quoted values may hold one) */
		while (p < end && !g_ascii_isspace(*p) && *p != '>' && *p != '/')
			p++;
		elem_len = (size_t)(p - elem);
		while (p < end && *p != '>') {
			char c = *p;

			if (c == '"' || c == '\'') {
				q = memchr(p + 1, c, (size_t)(end - p - 1));
				p = q ? q + 1 : end;
				in_name = false;
			} else if (c == '=') {
				attrs++;
				if (name && ((name_len == 5 && !memcmp(name, "xmlns", 5)) ||
					     (name_len > 6 && !memcmp(name, "xmlns:", 6))))
					ns++;
				name = NULL;
				in_name = false;
				p++;
			} else if (g_ascii_isspace(c) || c == '/') {
				empty = c == '/' && p + 1 < end && p[1] == '>';
				in_name = false;
				p++;
			} else {
				if (!in_name) {
					name = p;
					name_len = 0;
					in_name = true;
				}
				name_len++;
				p++;
			}
		}
		if (ns > VT_LIBVIRT_XML_MAX_NS_ELEMENT) {
			XERR(error, "element <%s> declares %u namespaces: at most %d on one element",
			     shown_n(a, sizeof(a), elem, elem_len), ns,
			     VT_LIBVIRT_XML_MAX_NS_ELEMENT);
			return false;
		}
		if (attrs > VT_LIBVIRT_XML_MAX_ATTRS) {
			XERR(error, "element <%s> has %u attributes: at most %d on one element",
			     shown_n(a, sizeof(a), elem, elem_len), attrs, VT_LIBVIRT_XML_MAX_ATTRS);
			return false;
		}
		ns_total += ns;
		if (ns_total > VT_LIBVIRT_XML_MAX_NS) {
			XERR(error, "more than %d namespace declarations in the document (%u by "
			     "element <%s>)", VT_LIBVIRT_XML_MAX_NS, ns_total,
			     shown_n(a, sizeof(a), elem, elem_len));
			return false;
		}
		if (depth + 1 > VT_LIBVIRT_XML_MAX_DEPTH) {
			XERR(error, "element <%s> is nested %u deep: at most %d",
			     shown_n(a, sizeof(a), elem, elem_len), depth + 1,
			     VT_LIBVIRT_XML_MAX_DEPTH);
			return false;
		}
		depth += !empty;
		p += p < end;
	}
	return true;
}

/*
 * ASCII-compatible UTF-8, at most @max bytes, no DOCTYPE (no entities to
 * expand, no external fetches), within the bounds of libvirt_xml.h, then
 * well-formed, and nothing that libxml2 would have to warn about.
 */
static xmlDocPtr read_doc(const char *xml, size_t len, size_t max, GError **error)
{
	xmlParserCtxtPtr ctxt;
	xmlDocPtr doc;
	const char *start;

	if (!xml || !len) {
		XERR(error, "empty XML");
		return NULL;
	}
	if (len > max) {
		XERR(error, "XML of %zu bytes: at most %zu are read", len, max);
		return NULL;
	}
	start = check_encoding(xml, len, error);
	if (!start)
		return NULL;
	if (g_strstr_len(xml, (gssize)len, "<!DOCTYPE")) {
		XERR(error, "a DOCTYPE in the XML: vtier reads no DTD and expands no entities");
		return NULL;
	}
	if (!check_markup(start, xml + len, error))
		return NULL;
	xmlInitParser();
	ctxt = xmlNewParserCtxt();
	if (!ctxt) {
		g_set_error(error, VT_LIBVIRT_ERROR, ENOMEM, "no memory for an XML parser");
		return NULL;
	}
	doc = xmlCtxtReadMemory(ctxt, xml, (int)len, NULL, "UTF-8",
				XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!doc) {
		const xmlError *xe = xmlCtxtGetLastError(ctxt);
		g_autofree char *msg = g_strdup(xe && xe->message ? xe->message : "unknown error");
		char buf[200];

		XERR(error, "XML not well-formed: line %d: %s", xe ? xe->line : 0,
		     vt_text_printable(buf, sizeof(buf), g_strchomp(msg), strlen(msg)));
	}
	xmlFreeParserCtxt(ctxt);
	return doc;
}

static bool in_ns(const xmlNode *n, const char *href)
{
	return n->ns && n->ns->href && strcmp((const char *)n->ns->href, href) == 0;
}

static bool blank(const xmlChar *s)
{
	for (; s && *s; s++)
		if (!g_ascii_isspace(*s))
			return false;
	return true;
}

/* An element of our namespace: the policy, attributes only, each a known key. */
static bool policy_from_node(xmlNodePtr n, const char *const *keys, GPtrArray *set,
			     GError **error)
{
	unsigned int nr = 0;
	char a[64], b[64];

	if (strcmp((const char *)n->name, VT_LIBVIRT_POLICY_ELEMENT) != 0) {
		/* virsh metadata --key vtier --set '<vtier:policy/>' stores "vtier:policy" as a name */
		XERR(error, "element '%s' in vtier's namespace: the only one is 'policy'%s",
		     shown(a, sizeof(a), n->name), strchr((const char *)n->name, ':') ?
		     " (with virsh metadata --key " VT_LIBVIRT_POLICY_KEY ", write <policy .../>: "
		     "virsh adds the prefix)" : "");
		return false;
	}
	for (xmlAttrPtr at = n->properties; at; at = at->next) {
		g_autoptr(GString) list = NULL;
		xmlChar *value;
		unsigned int k;

		if (at->ns) {
			XERR(error, "vtier:policy attribute '%s:%s': policy attributes take no "
			     "namespace prefix", shown(a, sizeof(a), at->ns->prefix),
			     shown(b, sizeof(b), at->name));
			return false;
		}
		for (k = 0; keys[k]; k++)
			if (strcmp(keys[k], (const char *)at->name) == 0)
				break;
		if (!keys[k]) {
			list = g_string_new(NULL);
			keys_list(list, keys);
			XERR(error, "vtier:policy: unknown attribute '%s' (one of: %s)",
			     shown(a, sizeof(a), at->name), list->str);
			return false;
		}
		if (++nr > VT_LIBVIRT_POLICY_MAX_KEYS) {
			XERR(error, "vtier:policy: more than %d attributes",
			     VT_LIBVIRT_POLICY_MAX_KEYS);
			return false;
		}
		value = xmlNodeListGetString(n->doc, at->children, 1);
		g_ptr_array_add(set, g_strdup_printf("%s=%s", keys[k], value ? (char *)value : ""));
		xmlFree(value);
	}
	for (xmlNodePtr c = n->children; c; c = c->next) {
		if (c->type == XML_ELEMENT_NODE) {
			XERR(error, "vtier:policy: child element '%s': the policy is attributes "
			     "only", shown(a, sizeof(a), c->name));
			return false;
		}
		if ((c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) &&
		    !blank(c->content)) {
			XERR(error, "vtier:policy: text '%s' inside: the policy is attributes only",
			     shown(a, sizeof(a), c->content));
			return false;
		}
	}
	return true;
}

bool vt_libvirt_policy_parse(const char *xml, size_t len, const char *const *keys,
			     GPtrArray *set, GError **error)
{
	xmlDocPtr doc = read_doc(xml, len, VT_LIBVIRT_POLICY_XML_MAX, error);
	xmlNodePtr root;
	bool ok = false;
	char a[64];

	if (!doc)
		return false;
	root = xmlDocGetRootElement(doc);
	if (!root || !in_ns(root, VT_LIBVIRT_POLICY_NS)) {
		char b[128];

		XERR(error, "element '%s' is in namespace '%s', not in vtier's %s",
		     root ? shown(a, sizeof(a), root->name) : "",
		     root && root->ns ? shown(b, sizeof(b), root->ns->href) : "",
		     VT_LIBVIRT_POLICY_NS);
		goto out;
	}
	ok = policy_from_node(root, keys, set, error);
out:
	xmlFreeDoc(doc);
	return ok;
}

/* "-qmp unix:PATH[,opts]" in <qemu:commandline>; other monitors are not ours to take. */
static bool qmp_from_commandline(xmlNodePtr cl, char **path, GError **error)
{
	bool next_is_qmp = false;
	char a[160];

	for (xmlNodePtr c = cl->children; c; c = c->next) {
		g_autofree xmlChar *value = NULL;
		const char *v, *comma;

		if (c->type != XML_ELEMENT_NODE || !in_ns(c, QEMU_NS) ||
		    strcmp((const char *)c->name, "arg") != 0)
			continue;
		value = xmlGetNoNsProp(c, (const xmlChar *)"value");
		v = value ? (const char *)value : "";
		if (!next_is_qmp) {
			next_is_qmp = strcmp(v, "-qmp") == 0;
			continue;
		}
		next_is_qmp = false;
		if (!g_str_has_prefix(v, "unix:"))
			continue;
		v += 5;
		comma = strchr(v, ',');
		if (*path) {
			XERR(error, "<qemu:commandline>: two -qmp unix: sockets; vtierd takes one");
			return false;
		}
		*path = comma ? g_strndup(v, (gsize)(comma - v)) : g_strdup(v);
		if ((*path)[0] != '/' || strlen(*path) > 107 || !vt_text_is_printable(*path)) {
			XERR(error, "<qemu:commandline>: -qmp unix:%s: the socket path must be "
			     "absolute, printable and at most 107 bytes",
			     vt_text_printable(a, sizeof(a), *path, strlen(*path)));
			return false;
		}
	}
	return true;
}

static bool uuid_valid(const char *s)
{
	if (strlen(s) != 36)
		return false;
	for (unsigned int i = 0; i < 36; i++)
		if ((i == 8 || i == 13 || i == 18 || i == 23) ? s[i] != '-' :
		    !g_ascii_isxdigit(s[i]))
			return false;
	return true;
}

bool vt_libvirt_domain_parse(const char *xml, size_t len, const char *const *keys,
			     struct vt_libvirt_domain *dom, GError **error)
{
	xmlDocPtr doc;
	xmlNodePtr root;
	bool ok = false;
	char a[64];

	memset(dom, 0, sizeof(*dom));
	dom->id = -1;
	dom->policy = g_ptr_array_new_with_free_func(g_free);
	doc = read_doc(xml, len, VT_LIBVIRT_DOMAIN_XML_MAX, error);
	if (!doc)
		return false;
	root = xmlDocGetRootElement(doc);
	if (!root || root->ns || strcmp((const char *)root->name, "domain") != 0) {
		XERR(error, "root element '%s' is not <domain>",
		     root ? shown(a, sizeof(a), root->name) : "");
		goto out;
	}
	{
		g_autofree xmlChar *id = xmlGetNoNsProp(root, (const xmlChar *)"id");
		guint64 v;

		if (id && g_ascii_string_to_unsigned((const char *)id, 10, 0, G_MAXINT, &v, NULL))
			dom->id = (int)v;
	}
	for (xmlNodePtr c = root->children; c; c = c->next) {
		if (c->type != XML_ELEMENT_NODE)
			continue;
		if (!c->ns && strcmp((const char *)c->name, "name") == 0 && !dom->name) {
			xmlChar *s = xmlNodeGetContent(c);

			dom->name = g_strdup(s ? (const char *)s : "");
			xmlFree(s);
		} else if (!c->ns && strcmp((const char *)c->name, "uuid") == 0) {
			g_autofree xmlChar *s = xmlNodeGetContent(c);

			if (!s || !uuid_valid((const char *)s)) {
				XERR(error, "<uuid> '%s' is not a UUID", shown(a, sizeof(a), s));
				goto out;
			}
			g_strlcpy(dom->uuid, (const char *)s, sizeof(dom->uuid));
			for (char *u = dom->uuid; *u; u++)
				*u = g_ascii_tolower(*u);
		} else if (!c->ns && strcmp((const char *)c->name, "metadata") == 0) {
			for (xmlNodePtr m = c->children; m; m = m->next) {
				if (m->type != XML_ELEMENT_NODE || !in_ns(m, VT_LIBVIRT_POLICY_NS))
					continue;
				if (dom->has_policy) {
					XERR(error, "two elements of vtier's namespace in "
					     "<metadata>: one vtier:policy at most");
					goto out;
				}
				dom->has_policy = true;
				if (!policy_from_node(m, keys, dom->policy, error))
					goto out;
			}
		} else if (in_ns(c, QEMU_NS) && strcmp((const char *)c->name, "commandline") == 0) {
			if (!qmp_from_commandline(c, &dom->qmp_path, error))
				goto out;
		}
	}
	if (!dom->name || !dom->name[0]) {
		XERR(error, "the domain has no <name>");
		goto out;
	}
	ok = true;
out:
	xmlFreeDoc(doc);
	return ok;
}

void vt_libvirt_xml_init(void)
{
	xmlInitParser();
}

void vt_libvirt_domain_clear(struct vt_libvirt_domain *dom)
{
	if (!dom)
		return;
	g_free(dom->name);
	g_free(dom->qmp_path);
	if (dom->policy)
		g_ptr_array_free(dom->policy, TRUE);
	memset(dom, 0, sizeof(*dom));
	dom->id = -1;
}
