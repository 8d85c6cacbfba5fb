// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * util/tlb_counters.c: the TLB: line of /proc/interrupts (as x86 kernels
 * print it) and KVM's debugfs counters, read from a fake /proc and debugfs
 * tree built here.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <glib.h>

#include "fake_tree.h"
#include "tlb_counters.h"

/* 2 CPUs, as a small x86 guest prints it (lines cut down, columns as the kernel pads them) */
static const char interrupts_2cpu[] =
	"           CPU0       CPU1       \n"
	"  0:         44          0   IO-APIC   2-edge      timer\n"
	"  1:          0          9   IO-APIC   1-edge      i8042\n"
	"NMI:          0          0   Non-maskable interrupts\n"
	"LOC:    3512345    3498765   Local timer interrupts\n"
	"SPU:          0          0   Spurious interrupts\n"
	"RES:      12087      11934   Rescheduling interrupts\n"
	"CAL:       4500       4321   Function call interrupts\n"
	"TLB:       1200        345   TLB shootdowns\n"
	"TRM:          0          0   Thermal event interrupts\n"
	"MCP:         57         57   Machine check polls\n"
	"ERR:          0\n"
	"MIS:          0\n"
	"PIN:          0          0   Posted-interrupt notification event\n";

/* 4 CPUs with CPU1 offline (left out of the header and of each line), counts past 32 bits */
static const char interrupts_gap[] =
	"            CPU0       CPU2       CPU3       CPU4\n"
	"   8:          0          0          0          0  IR-IO-APIC    8-edge      rtc0\n"
	" LOC: 4294967296 4294967296          1          2   Local timer interrupts\n"
	" TLB: 4294967296 4294967296          7         11   TLB shootdowns\n"
	" ERR:          0\n";

/* 1 CPU, no trailing newline */
static const char interrupts_1cpu[] =
	"           CPU0       \n"
	"NMI:          0   Non-maskable interrupts\n"
	"TLB:          9   TLB shootdowns";

/* arm64 prints IPI lines and no TLB: the counter is not available there */
static const char interrupts_arm64[] =
	"           CPU0       CPU1       \n"
	" 11:     102393      98812     GICv3  27 Level     arch_timer\n"
	"IPI0:      2071       2210       Rescheduling interrupts\n"
	"IPI1:       311        290       Function call interrupts\n"
	"Err:          0\n";

static void test_interrupts_parse(void **state)
{
	static const struct {
		const char *text;
		uint64_t total;
	} good[] = {
		{ interrupts_2cpu, 1545 },
		{ interrupts_gap, 8589934592ull + 18 },
		{ interrupts_1cpu, 9 },
	};
	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(good); i++) {
		g_autoptr(GError) e = NULL;
		uint64_t total = 0;

		assert_int_equal(vt_interrupts_tlb_parse(good[i].text, strlen(good[i].text),
							 &total, &e), VT_COUNTER_OK);
		assert_null(e);
		assert_true(total == good[i].total);
	}
}

static void test_interrupts_absent(void **state)
{
	g_autoptr(GError) e = NULL;
	uint64_t total = 5;

	(void)state;
	assert_int_equal(vt_interrupts_tlb_parse(interrupts_arm64, strlen(interrupts_arm64),
						 &total, &e), VT_COUNTER_ABSENT);
	assert_true(g_error_matches(e, VT_TLB_COUNTERS_ERROR, ENOENT));
	assert_non_null(strstr(e->message, "no TLB: line"));
	assert_int_equal(total, 5);
}

static void test_interrupts_malformed(void **state)
{
	static const struct {
		const char *text;
		const char *says;
	} bad[] = {
		{ "", "empty" },
		{ "\n\n", "not the CPUs' names" },
		{ "TLB:  1  2  TLB shootdowns\n", "not the CPUs' names (\"CPU0 CPU1 ...\"): 'TLB:  1  2" },
		{ "  CPU0  CPUx\nTLB: 1 2\n", "): 'CPU0  CPUx'" },
		{ "  CPU0  CPU1\nTLB: 1 TLB shootdowns\n",
		  "the TLB: line has 1 counts, the header names 2 CPUs" },
		{ "  CPU0  CPU1\nTLB:\n", "the TLB: line has 0 counts, the header names 2 CPUs" },
		{ "  CPU0  CPU1\nTLB: 1 2x TLB shootdowns\n", "count 2 ('2x TLB shootdowns')" },
		{ "  CPU0  CPU1\nTLB: -1 2\n", "has 0 counts" },
		{ "  CPU0\nTLB: 18446744073709551616\n", "count 1 ('18446744073709551616')" },
		{ "  CPU0  CPU1\nTLB: 18446744073709551615 1\n", "add up to more than 64 bits" },
		{ "  CPU0\nTLB: 1 TLB shootdowns\nTLB: 2 TLB shootdowns\n",
		  "a second TLB: line (line 3)" },
		{ "  CPU0\nTLB: \001\n", "has 0 counts" },
	};
	static const char nul[] = "  CPU0\nTLB: 1\0 TLB shootdowns\n";

	(void)state;
	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e = NULL;
		uint64_t total = 5;

		assert_int_equal(vt_interrupts_tlb_parse(bad[i].text, strlen(bad[i].text), &total,
							 &e), VT_COUNTER_BAD);
		assert_non_null(e);
		if (!strstr(e->message, bad[i].says))
			fail_msg("'%s': said '%s', not '%s'", bad[i].text, e->message, bad[i].says);
		assert_int_equal(total, 5);
	}
	{
		g_autoptr(GError) e = NULL;
		uint64_t total = 5;

		assert_int_equal(vt_interrupts_tlb_parse(nul, sizeof(nul) - 1, &total, &e),
				 VT_COUNTER_BAD);
		assert_non_null(strstr(e->message, "NUL byte"));
	}
}

static void test_interrupts_read(void **state)
{
	const char *root = *state;
	g_autoptr(GError) e = NULL, e2 = NULL;
	uint64_t total = 0;

	assert_int_equal(vt_interrupts_tlb_read(root, &total, &e), VT_COUNTER_ABSENT);
	assert_non_null(strstr(e->message, "interrupts"));
	fake_tree_put(root, "interrupts", interrupts_2cpu);
	assert_int_equal(vt_interrupts_tlb_read(root, &total, &e2), VT_COUNTER_OK);
	assert_int_equal(total, 1545);
}

/* A fake debugfs: kvm/ with this VM's directory and others' */
static void test_kvm_read(void **state)
{
	const char *root = *state;
	pid_t pid = 4242;
	struct vt_kvm_tlb t = { 0 };
	g_autoptr(GError) e1 = NULL, e2 = NULL, e3 = NULL, e4 = NULL, e5 = NULL, e6 = NULL;
	g_autoptr(GError) e7 = NULL;

	/* debugfs not mounted: not available, saying where it looked */
	assert_int_equal(vt_kvm_tlb_read(root, pid, &t, &e1), VT_COUNTER_ABSENT);
	assert_non_null(strstr(e1->message, "debugfs not mounted"));
	/* another QEMU's VM, and names that only look like this pid's */
	fake_tree_put(root, "kvm/4243-11/remote_tlb_flush", "99\n");
	fake_tree_put(root, "kvm/42420-11/remote_tlb_flush", "98\n");
	fake_tree_mkdir(root, "kvm/4242-");
	fake_tree_mkdir(root, "kvm/4242-1x");
	fake_tree_put(root, "kvm/remote_tlb_flush", "97\n");
	assert_int_equal(vt_kvm_tlb_read(root, pid, &t, &e2), VT_COUNTER_ABSENT);
	assert_non_null(strstr(e2->message, "no VM of pid 4242"));
	/* this VM, on a kernel without remote_tlb_flush_requests */
	fake_tree_put(root, "kvm/4242-13/remote_tlb_flush", "1234\n");
	assert_int_equal(vt_kvm_tlb_read(root, pid, &t, &e3), VT_COUNTER_OK);
	assert_int_equal(t.flushes, 1234);
	assert_false(t.has_requests);
	fake_tree_put(root, "kvm/4242-13/remote_tlb_flush_requests", "2000\n");
	assert_int_equal(vt_kvm_tlb_read(root, pid, &t, NULL), VT_COUNTER_OK);
	assert_int_equal(t.flushes, 1234);
	assert_true(t.has_requests);
	assert_int_equal(t.requests, 2000);
	/* malformed: an error naming the file and the text */
	fake_tree_put(root, "kvm/4242-13/remote_tlb_flush_requests", "20 00\n");
	assert_int_equal(vt_kvm_tlb_read(root, pid, &t, &e4), VT_COUNTER_BAD);
	assert_non_null(strstr(e4->message, "remote_tlb_flush_requests: '20 00'"));
	fake_tree_put(root, "kvm/4242-13/remote_tlb_flush_requests", "2000\n");
	fake_tree_put(root, "kvm/4242-13/remote_tlb_flush", "-1\n");
	assert_int_equal(vt_kvm_tlb_read(root, pid, &t, &e5), VT_COUNTER_BAD);
	assert_non_null(strstr(e5->message, "4242-13/remote_tlb_flush: '-1' is not"));
	/* two VMs of one pid: which one is meant is not known */
	fake_tree_put(root, "kvm/4242-13/remote_tlb_flush", "1\n");
	fake_tree_mkdir(root, "kvm/4242-14");
	assert_int_equal(vt_kvm_tlb_read(root, pid, &t, &e6), VT_COUNTER_ABSENT);
	assert_non_null(strstr(e6->message, "2 VMs of pid 4242"));
	assert_int_equal(vt_kvm_tlb_read(root, 0, &t, &e7), VT_COUNTER_ABSENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interrupts_parse),
		cmocka_unit_test(test_interrupts_absent),
		cmocka_unit_test(test_interrupts_malformed),
		cmocka_unit_test_setup_teardown(test_interrupts_read, fake_tree_setup,
						fake_tree_teardown),
		cmocka_unit_test_setup_teardown(test_kvm_read, fake_tree_setup,
						fake_tree_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
