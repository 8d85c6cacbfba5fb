// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: libvirt domain XML and the vtier:policy element (the hook's
 * stdin, virDomainGetMetadata, an operator's virsh). The first byte picks
 * the parser; a refusal has a message and leaves nothing behind; accepted
 * assignments are "KEY=VALUE" of a known key.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "libvirt_xml.h"
#include "vm_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_set(GPtrArray *set)
{
	struct vt_vm_policy p;

	for (unsigned int i = 0; i < set->len; i++) {
		const char *a = g_ptr_array_index(set, i);
		const char *eq = strchr(a, '=');
		const char *const *k;

		if (!eq)
			__builtin_trap();
		for (k = vt_vm_policy_keys(); *k; k++)
			if (strlen(*k) == (size_t)(eq - a) && strncmp(*k, a, (size_t)(eq - a)) == 0)
				break;
		if (!*k)
			__builtin_trap();
	}
	vt_vm_policy_default(&p);
	if (set->len)
		vt_vm_policy_apply(&p, (char *const *)set->pdata, set->len, NULL);
}

/* A refusal: one reason, one line of UTF-8. */
static void check_refusal(const GError *e)
{
	if (!e || !g_utf8_validate(e->message, -1, NULL) || strchr(e->message, '\n'))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *xml = (const char *)data + 1;
	GError *e = NULL;

	if (!size)
		return 0;
	if (data[0] & 1) {
		struct vt_libvirt_domain dom;

		if (vt_libvirt_domain_parse(xml, size - 1, vt_vm_policy_keys(), &dom, &e)) {
			if (e || !dom.name || (dom.has_policy ? 0 : dom.policy->len) ||
			    (dom.qmp_path && dom.qmp_path[0] != '/'))
				__builtin_trap();
			check_set(dom.policy);
		} else {
			check_refusal(e);
		}
		vt_libvirt_domain_clear(&dom);
	} else {
		GPtrArray *set = g_ptr_array_new_with_free_func(g_free);

		if (vt_libvirt_policy_parse(xml, size - 1, vt_vm_policy_keys(), set, &e)) {
			if (e)
				__builtin_trap();
			check_set(set);
		} else {
			check_refusal(e);
		}
		g_ptr_array_free(set, TRUE);
	}
	g_clear_error(&e);
	return 0;
}
