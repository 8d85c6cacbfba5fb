// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libvirt's event loop on glib (iface/libvirt_event.c), driven by libvirt's
 * own in-process test driver (test:///default): domain events are queued by
 * a libvirt timer and reach our callback only through the glib main loop;
 * a removed callback's free function runs later, on the loop, once. The
 * socket handles are exercised against a real libvirtd in tests/libvirt.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <glib.h>
#include <libvirt/libvirt.h>

#include "libvirt_event.h"

struct seen {
	int events[8];
	unsigned int nr;
	unsigned int freed;
	GThread *thread;
};

static void lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail, void *opaque)
{
	struct seen *s = opaque;

	(void)conn;
	(void)dom;
	(void)detail;
	if (s->nr < G_N_ELEMENTS(s->events))
		s->events[s->nr++] = event;
	s->thread = g_thread_self();
}

static void freed(void *opaque)
{
	((struct seen *)opaque)->freed++;
}

static void run_until(bool (*done)(struct seen *), struct seen *s)
{
	gint64 end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

	while (!done(s) && g_get_monotonic_time() < end)
		g_main_context_iteration(NULL, FALSE), g_usleep(1000);
}

static bool two_events(struct seen *s)
{
	return s->nr >= 2;
}

static bool was_freed(struct seen *s)
{
	return s->freed > 0;
}

static void test_events_on_the_loop(void **state)
{
	struct seen s = { 0 };
	virConnectPtr conn;
	virDomainPtr dom;
	int id;

	(void)state;
	vt_libvirt_event_register();
	vt_libvirt_event_register();	/* once is enough; twice is harmless */
	conn = virConnectOpen("test:///default");
	assert_non_null(conn);
	id = virConnectDomainEventRegisterAny(conn, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
					      VIR_DOMAIN_EVENT_CALLBACK(lifecycle), &s, freed);
	assert_true(id >= 0);
	dom = virDomainLookupByName(conn, "test");
	assert_non_null(dom);
	assert_int_equal(virDomainSuspend(dom), 0);
	assert_int_equal(virDomainResume(dom), 0);
	/* queued, not delivered: nothing runs until the loop does */
	assert_int_equal(s.nr, 0);
	run_until(two_events, &s);
	assert_int_equal(s.nr, 2);
	assert_int_equal(s.events[0], VIR_DOMAIN_EVENT_SUSPENDED);
	assert_int_equal(s.events[1], VIR_DOMAIN_EVENT_RESUMED);
	assert_true(s.thread == g_thread_self());
	assert_int_equal(virConnectDomainEventDeregisterAny(conn, id), 0);
	run_until(was_freed, &s);
	assert_int_equal(s.freed, 1);
	/* deregistered: a new event reaches nobody */
	assert_int_equal(virDomainSuspend(dom), 0);
	for (int i = 0; i < 50; i++)
		g_main_context_iteration(NULL, FALSE), g_usleep(1000);
	assert_int_equal(s.nr, 2);
	virDomainFree(dom);
	virConnectClose(conn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_events_on_the_loop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
