/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What vtier reads from libvirt's domain XML (docs/libvirt.md): the
 * domain's name and uuid, its vtier policy (<metadata><vtier:policy .../>),
 * and the QMP socket vtierd attaches through (<qemu:commandline>'s
 * "-qmp unix:PATH,server=on,wait=off"). Only the XML's shape is judged
 * here: a policy comes out as "KEY=VALUE" assignments, whose values the
 * caller checks (model/vm_policy.c). The XML comes from libvirt, the hook's
 * stdin or an operator's virsh: every refusal names one reason.
 *
 * Before libxml2 sees a byte, a scan refuses what is not ASCII-compatible
 * UTF-8 (a UTF-16/32 byte order mark or a NUL, a first byte that is not '<'
 * as in EBCDIC's "<?xml" 4C 6F A7 94, an encoding declaration other than
 * UTF-8 or ASCII), then any DTD (<!DOCTYPE or any other <! declaration), then
 * the bounds below, each refusal naming the bound and the value found.
 *
 * Library code: no logging, no I/O.
 */
#ifndef VTIER_IFACE_LIBVIRT_XML_H
#define VTIER_IFACE_LIBVIRT_XML_H

#include <stdbool.h>
#include <stddef.h>

#include <glib.h>

/* The namespace of vtier's policy element; a new major version gets a new URI. */
#define VT_LIBVIRT_POLICY_NS "http://vtier.dev/xmlns/libvirt/policy/1"
/* The prefix (virsh metadata --key) and the element's local name. */
#define VT_LIBVIRT_POLICY_KEY "vtier"
#define VT_LIBVIRT_POLICY_ELEMENT "policy"
/*
 * Bounds checked by a scan of the bytes before libxml2 sees them (its
 * duplicate-attribute and namespace lookups are quadratic: 50 k attributes on
 * one element took 20 s). A real host's domain XML is far below each: a
 * device is 0.2-1 KiB of XML, so 1 MiB holds over a thousand devices (the
 * largest domains have a few hundred); libvirt's elements have at most ~12
 * attributes, and vtier:policy at most 32; a domain declares a handful of
 * namespaces (qemu, one per application's metadata) and nests ~8 deep.
 */
#define VT_LIBVIRT_DOMAIN_XML_MAX (1u << 20)
#define VT_LIBVIRT_POLICY_XML_MAX (64u << 10)
#define VT_LIBVIRT_XML_MAX_ATTRS 64	/* attributes on one element, xmlns ones included */
#define VT_LIBVIRT_XML_MAX_NS_ELEMENT 16	/* namespace declarations on one element */
#define VT_LIBVIRT_XML_MAX_NS 256	/* namespace declarations in a document */
#define VT_LIBVIRT_XML_MAX_DEPTH 64	/* elements inside one another */
/* Most attributes on a policy element (vtierctl's 32 assignments). */
#define VT_LIBVIRT_POLICY_MAX_KEYS 32

#define VT_LIBVIRT_ERROR (vt_libvirt_error_quark())
GQuark vt_libvirt_error_quark(void);

struct vt_libvirt_domain {
	char *name;		/* <name>, as libvirt has it (any UTF-8) */
	char uuid[37];		/* <uuid>, lower case; "" when absent */
	char *qmp_path;		/* the -qmp unix: socket of <qemu:commandline>, or NULL */
	int id;			/* the running domain's id= attribute, -1 when not running */
	bool has_policy;	/* a vtier:policy in <metadata> */
	GPtrArray *policy;	/* its "KEY=VALUE" assignments (g_free'd strings) */
};

/*
 * A vtier:policy element alone, as virDomainGetMetadata() returns it:
 * @set gets one "KEY=VALUE" per attribute, each key one of @keys
 * (NULL-terminated). False with @error (EINVAL, one reason) otherwise.
 */
bool vt_libvirt_policy_parse(const char *xml, size_t len, const char *const *keys,
			     GPtrArray *set, GError **error);
/*
 * A whole domain XML (virDomainGetXMLDesc, the hook's stdin). A domain
 * without vtier policy is not an error (has_policy false); a malformed
 * one is. Clear @dom with vt_libvirt_domain_clear() in every case.
 */
bool vt_libvirt_domain_parse(const char *xml, size_t len, const char *const *keys,
			     struct vt_libvirt_domain *dom, GError **error);
void vt_libvirt_domain_clear(struct vt_libvirt_domain *dom);
/*
 * libxml2's one-time set-up: call it on one thread before the parsers above
 * run on others (they are thread-safe after it).
 */
void vt_libvirt_xml_init(void);

#endif
