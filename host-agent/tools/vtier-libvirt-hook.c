// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-libvirt-hook: libvirt's qemu hook, installed as
 * /etc/libvirt/hooks/qemu.d/50-vtier. libvirt runs it as
 *   50-vtier DOMAIN OPERATION SUB-OPERATION EXTRA   (domain XML on stdin)
 * and waits for it, holding the domain's start: it must never be what holds
 * a domain up. So it always exits 0, within 100 ms whatever vtierd does
 * (down, hung, slow), never calls libvirt, and says in the log what it
 * skipped:
 *   prepare, start, check the vtier:policy of the domain's XML (the same
 *   migrate,        checks as vtierd's) and say what is wrong; add nothing
 *   restore         (migrate and restore: nothing on stdout, so libvirt keeps
 *                   the XML it has; the policy travels in its metadata)
 *   release         tell vtierd the domain's QEMU is gone (a detach; vtierd
 *                   also follows libvirt's events, this is for when it does not)
 *   reconnect, and everything else: nothing
 * Log: syslog (daemon, "vtier-hook") and stderr (libvirtd's log).
 * VTIER_SOCKET overrides vtierd's control socket, VTIER_HOOK_TIMING=1 prints
 * the hook's own time on stderr (tests).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <glib.h>

#include "control_socket.h"
#include "ctl_proto.h"
#include "json_guard.h"
#include "libvirt_xml.h"
#include "vm_policy.h"

/*
 * The bound libvirt sees is 100 ms from fork to exit; exec, the dynamic
 * linker, exit and the scheduler's delays take a part of it that a loaded
 * host stretches (15-60 ms measured with two busy cores, load 4): reading
 * stdin and calling vtierd share 40. A healthy vtierd answers a detach in
 * ~1 ms.
 */
#define HOOK_BUDGET_US (40 * 1000)
#define HOOK_MARGIN_US (5 * 1000)

static gint64 deadline_us;

static void say(int prio, const char *dom, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static void say(int prio, const char *dom, const char *fmt, ...)
{
	g_autofree char *msg = NULL;
	char shown[128];
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	vt_text_printable(shown, sizeof(shown), dom, strlen(dom));
	syslog(prio, "%s: %s", shown, msg);
	fprintf(stderr, "vtier-hook: %s: %s\n", shown, msg);
}

static int left_ms(void)
{
	gint64 left = deadline_us - HOOK_MARGIN_US - g_get_monotonic_time();

	return left > 0 ? (int)(left / 1000) : 0;
}

/* The domain XML on stdin, until EOF, the size cap or the deadline. */
static GString *read_stdin(bool *complete)
{
	GString *buf = g_string_new(NULL);
	char tmp[65536];

	*complete = false;
	fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
	for (;;) {
		struct pollfd pfd = { .fd = 0, .events = POLLIN };
		ssize_t n = read(0, tmp, sizeof(tmp));

		if (n == 0) {
			*complete = true;
			break;
		}
		if (n > 0) {
			if (buf->len + (size_t)n > VT_LIBVIRT_DOMAIN_XML_MAX)
				break;
			g_string_append_len(buf, tmp, n);
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN || !left_ms() || poll(&pfd, 1, left_ms()) < 0)
			break;
	}
	return buf;
}

/*
 * prepare/start, and migrate (on the destination, before its QEMU starts) /
 * restore: the policy as vtierd will judge it; nothing is changed.
 */
static void check_policy(const char *name)
{
	struct vt_libvirt_domain dom;
	g_autoptr(GError) e = NULL;
	struct vt_vm_policy p;
	bool complete;
	g_autoptr(GString) xml = read_stdin(&complete);

	if (!complete) {
		say(LOG_WARNING, name, "domain XML not read in time (or over %u bytes): policy "
		    "check skipped", VT_LIBVIRT_DOMAIN_XML_MAX);
		return;
	}
	if (!vt_libvirt_domain_parse(xml->str, xml->len, vt_vm_policy_keys(), &dom, &e)) {
		say(LOG_ERR, name, "vtier policy refused: %s; the domain starts untiered", e->message);
		vt_libvirt_domain_clear(&dom);
		return;
	}
	vt_vm_policy_default(&p);
	if (!dom.has_policy) {
		/* nothing asked, nothing said */
	} else if (dom.policy->len &&
		   !vt_vm_policy_apply(&p, (char *const *)dom.policy->pdata, dom.policy->len, &e)) {
		say(LOG_ERR, name, "vtier policy refused: %s; the domain starts untiered",
		    e->message);
	} else if (!dom.qmp_path) {
		say(LOG_WARNING, name, "vtier policy has no QMP socket for vtierd: add -qmp "
		    "unix:/var/lib/libvirt/qemu/vtier-NAME.qmp,server=on,wait=off to "
		    "<qemu:commandline> (docs/libvirt.md)");
	} else {
		say(LOG_INFO, name, "vtier policy checked: mode %s, %u setting(s); vtierd attaches "
		    "through %s", vt_mode_name(p.mode), dom.policy->len, dom.qmp_path);
	}
	vt_libvirt_domain_clear(&dom);
}

/* release: vtierd detaches the VM, if it hears in time; it follows libvirt's events anyway. */
static void tell_release(const char *name)
{
	struct vt_ctl_request req = { .cmd = VT_CTL_DETACH, .vm = (char *)name };
	const char *path = g_getenv("VTIER_SOCKET");
	g_autofree char *text = NULL, *reply = NULL;
	g_autoptr(GError) e = NULL;

	/* stdin is not read: libvirt takes a hook that closed it early (EPIPE) */
	if (!vt_ctl_name_valid(name)) {
		say(LOG_INFO, name, "release: not a vtierd VM name: vtierd's events detach it");
		return;
	}
	if (!left_ms()) {
		say(LOG_WARNING, name, "release: out of time before calling vtierd: skipped");
		return;
	}
	text = vt_ctl_request_to_json(&req);
	reply = vt_control_call(path ? path : VT_CONTROL_SOCKET_DEFAULT, text, left_ms(), &e);
	if (!reply)
		say(LOG_WARNING, name, "release: vtierd not told, skipped: %s", e->message);
	else if (strstr(reply, "\"ok\":true"))
		say(LOG_INFO, name, "release: vtierd detached it");
	else
		say(LOG_INFO, name, "release: vtierd had nothing to detach");
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "?", *op = argc > 2 ? argv[2] : "";
	gint64 start_us = g_get_monotonic_time();

	deadline_us = start_us + HOOK_BUDGET_US;
	openlog("vtier-hook", LOG_PID, LOG_DAEMON);
	if (strcmp(op, "prepare") == 0 || strcmp(op, "start") == 0 ||
	    strcmp(op, "migrate") == 0 || strcmp(op, "restore") == 0)
		check_policy(name);
	else if (strcmp(op, "release") == 0)
		tell_release(name);
	/* reconnect, started, stopped, attach: nothing to do */
	closelog();
	if (g_strcmp0(g_getenv("VTIER_HOOK_TIMING"), "1") == 0)
		fprintf(stderr, "vtier-hook: timing: %" G_GINT64_FORMAT " us\n",
			g_get_monotonic_time() - start_us);
	return 0;
}
