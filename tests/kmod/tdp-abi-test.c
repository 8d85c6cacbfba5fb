// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier_tdp.ko ABI tests, run in the testbed's L1 (static binary).
 *
 *   tdp-abi-test errors        error paths on a VM of our own (KVM_CREATE_VM, no vCPU):
 *                              bad fd, non-KVM fds, ABI version, double attach,
 *                              oversized/empty batches, gpa outside every memslot,
 *                              memslots added and removed while attached, and
 *                              200 attach/close cycles
 *   tdp-abi-test guest         a VM of our own whose vCPU runs a few instructions
 *                              (32-bit, no paging) writing known pages, so which
 *                              bits are set is known: root cookie across a root
 *                              swap, levels checked before clearing, one answer
 *                              per huge leaf, host folios marked young, the TLB
 *                              flush flag, bounded lock hold, SCAN resuming below
 *                              an upper entry, version 1 callers
 *   tdp-abi-test live PID      attach to QEMU process PID's VM; INFO, MEMSLOTS,
 *                              SAMPLE at every level, SCAN with skipping
 *   tdp-abi-test orphan PID    attach, SIGKILL the QEMU, then every call must fail
 *                              with ESRCH (VM's process gone) and close cleanly
 *
 * Each check prints "ok"/"FAIL" and a reason; exit 0 when all pass, 1 otherwise.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vtier/tdp.h>

static int failures;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (cond) {                                                \
			printf("ok   ");                                   \
		} else {                                                   \
			printf("FAIL ");                                   \
			failures++;                                        \
		}                                                          \
		printf(__VA_ARGS__);                                       \
		printf("\n");                                              \
	} while (0)

#define SKIP(...)                                                          \
	do {                                                               \
		printf("skip ");                                           \
		printf(__VA_ARGS__);                                       \
		printf("\n");                                              \
	} while (0)

static int xioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) < 0 ? -errno : 0;
}

static int open_dev(void)
{
	int d = open(VTIER_TDP_DEVICE, O_RDWR | O_CLOEXEC);

	if (d < 0) {
		printf("FAIL open %s: %s (is vtier_tdp.ko loaded?)\n", VTIER_TDP_DEVICE, strerror(errno));
		exit(1);
	}
	return d;
}

static int attach(int dev, int fd)
{
	struct vtier_tdp_attach a = { .abi_version = VTIER_TDP_ABI_VERSION, .vm_fd = fd };

	return xioctl(dev, VTIER_TDP_ATTACH, &a);
}

static int sample1(int dev, uint64_t gpa, unsigned int level, struct vtier_tdp_sample *s,
		   struct vtier_tdp_probe *p)
{
	memset(s, 0, sizeof(*s));
	memset(p, 0, sizeof(*p));
	p->gpa = gpa;
	p->level = (uint8_t)level;
	s->abi_version = VTIER_TDP_ABI_VERSION;
	s->n = 1;
	s->probes = (uintptr_t)p;
	return xioctl(dev, VTIER_TDP_SAMPLE, s);
}

static int scan(int dev, uint64_t start, uint64_t end, unsigned int level, unsigned int skip_from,
		uint64_t *young, uint32_t max_young, struct vtier_tdp_scan *s)
{
	memset(s, 0, sizeof(*s));
	s->abi_version = VTIER_TDP_ABI_VERSION;
	s->start = start;
	s->end = end;
	s->level = level;
	s->skip_from = skip_from;
	s->young = (uintptr_t)young;
	s->max_young = max_young;
	return xioctl(dev, VTIER_TDP_SCAN, s);
}

static int memslot_count(int dev, struct vtier_tdp_memslot *slots, uint32_t max)
{
	struct vtier_tdp_memslots m = { .abi_version = VTIER_TDP_ABI_VERSION, .max = max,
					.slots = (uintptr_t)slots };
	int r = xioctl(dev, VTIER_TDP_MEMSLOTS, &m);

	return r < 0 ? r : (int)m.count;
}

static int set_slot(int vm, uint32_t slot, uint64_t gpa, uint64_t size, void *hva)
{
	struct kvm_userspace_memory_region r = { .slot = slot, .guest_phys_addr = gpa,
						 .memory_size = size, .userspace_addr = (uintptr_t)hva };

	return xioctl(vm, KVM_SET_USER_MEMORY_REGION, &r);
}

static int count_vm_debugfs(void)
{
	char prefix[32];
	DIR *d = opendir("/sys/kernel/debug/kvm");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	snprintf(prefix, sizeof(prefix), "%d-", (int)getpid());
	while ((de = readdir(d)))
		n += !strncmp(de->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

static int test_errors(void)
{
	struct vtier_tdp_memslot slots[8];
	struct vtier_tdp_probe probes[VTIER_TDP_MAX_BATCH + 1];
	struct vtier_tdp_sample s;
	struct vtier_tdp_scan sc;
	struct vtier_tdp_info info;
	struct vtier_tdp_attach a;
	uint64_t young[16];
	int dev, kvm, vm, vcpu, null, r, dbg;
	void *mem;

	dev = open_dev();
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		printf("FAIL /dev/kvm: %s\n", strerror(errno));
		return 1;
	}
	null = open("/dev/null", O_RDWR);

	memset(&info, 0, sizeof(info));
	info.abi_version = VTIER_TDP_ABI_VERSION;
	r = xioctl(dev, VTIER_TDP_INFO, &info);
	CHECK(r == -ENXIO, "INFO before ATTACH: %s (want ENXIO)", strerror(-r));
	r = attach(dev, -1);
	CHECK(r == -EBADF, "ATTACH fd -1: %s (want EBADF)", strerror(-r));
	r = attach(dev, 100000);
	CHECK(r == -EBADF, "ATTACH fd 100000: %s (want EBADF)", strerror(-r));
	r = attach(dev, null);
	CHECK(r == -ENOTTY, "ATTACH /dev/null: %s (want ENOTTY)", strerror(-r));
	r = attach(dev, kvm);
	CHECK(r == -ENOTTY, "ATTACH /dev/kvm: %s (want ENOTTY)", strerror(-r));
	r = attach(dev, dev);
	CHECK(r == -ENOTTY, "ATTACH /dev/vtier-tdp itself: %s (want ENOTTY)", strerror(-r));
	a = (struct vtier_tdp_attach){ .abi_version = 0, .vm_fd = null };
	r = xioctl(dev, VTIER_TDP_ATTACH, &a);
	CHECK(r == -EPROTO, "ATTACH abi_version 0: %s (want EPROTO)", strerror(-r));
	memset(&info, 0, sizeof(info));
	info.abi_version = VTIER_TDP_ABI_VERSION + 1;
	r = xioctl(dev, VTIER_TDP_INFO, &info);
	CHECK(r == -EPROTO, "INFO abi_version %u: %s (want EPROTO)", VTIER_TDP_ABI_VERSION + 1,
	      strerror(-r));

	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0) {
		printf("FAIL KVM_CREATE_VM: %s\n", strerror(errno));
		return 1;
	}
	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	CHECK(vcpu >= 0, "KVM_CREATE_VCPU: %s", vcpu >= 0 ? "fd" : strerror(errno));
	if (vcpu >= 0) {
		r = attach(dev, vcpu);
		CHECK(r == -ENOTTY, "ATTACH a vCPU fd: %s (want ENOTTY)", strerror(-r));
	}
	/* kvm.ko's own anon-inode files that are not the VM: file_is_kvm() says no */
	{
		int stats = ioctl(vm, KVM_GET_STATS_FD, NULL);

		if (stats >= 0) {
			r = attach(dev, stats);
			CHECK(r == -ENOTTY, "ATTACH the VM's stats fd (kvm-vm-stats): %s (want ENOTTY)",
			      strerror(-r));
			close(stats);
		} else {
			SKIP("KVM_GET_STATS_FD: %s: cannot try a stats fd", strerror(errno));
		}
	}
	SKIP("EOPNOTSUPP: needs kvm.tdp_mmu=N or EPT without A/D bits; this L1 has the TDP MMU on NPT");
	a = (struct vtier_tdp_attach){ .abi_version = 99, .vm_fd = vm };
	r = xioctl(dev, VTIER_TDP_ATTACH, &a);
	CHECK(r == -EPROTO, "ATTACH abi_version 99: %s (want EPROTO)", strerror(-r));
	a = (struct vtier_tdp_attach){ .abi_version = VTIER_TDP_ABI_VERSION, .vm_fd = vm, .flags = 1 };
	r = xioctl(dev, VTIER_TDP_ATTACH, &a);
	CHECK(r == -EINVAL, "ATTACH unknown flags: %s (want EINVAL)", strerror(-r));
	r = attach(dev, vm);
	CHECK(r == 0, "ATTACH a KVM VM fd: %s", strerror(-r));
	r = attach(dev, vm);
	CHECK(r == -EBUSY, "second ATTACH: %s (want EBUSY)", strerror(-r));
	r = xioctl(dev, _IO(VTIER_TDP_IOC_MAGIC, 99), NULL);
	CHECK(r == -ENOTTY, "unknown ioctl: %s (want ENOTTY)", strerror(-r));

	memset(&info, 0, sizeof(info));
	info.abi_version = VTIER_TDP_ABI_VERSION;
	r = xioctl(dev, VTIER_TDP_INFO, &info);
	CHECK(r == 0 && info.format == VTIER_TDP_FORMAT_NPT && info.accessed_bit == 5,
	      "INFO: format %u, A bit %u, levels %u (no vCPU ran: 0), features 0x%x", info.format,
	      info.accessed_bit, info.levels, info.features);

	mem = mmap(NULL, 32 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r = set_slot(vm, 0, 0, 16 << 20, mem);
	CHECK(r == 0, "KVM_SET_USER_MEMORY_REGION slot 0 [0, 16 MiB): %s", strerror(-r));
	r = memslot_count(dev, slots, 8);
	CHECK(r == 1 && slots[0].gpa == 0 && slots[0].size == 16 << 20 &&
	      slots[0].hva == (uintptr_t)mem, "MEMSLOTS: %d slot(s), first gpa 0x%llx size 0x%llx", r,
	      (unsigned long long)slots[0].gpa, (unsigned long long)slots[0].size);
	/* Memslots change while attached: the module reads them on every call. */
	r = set_slot(vm, 1, 1ULL << 30, 16 << 20, (char *)mem + (16 << 20));
	CHECK(r == 0, "add slot 1 at 1 GiB while attached: %s", strerror(-r));
	r = memslot_count(dev, slots, 8);
	CHECK(r == 2 && slots[1].gpa == 1ULL << 30, "MEMSLOTS after adding: %d", r);
	r = memslot_count(dev, slots, 1);
	CHECK(r == 2, "MEMSLOTS with room for 1: count %d (want 2)", r);
	r = sample1(dev, (1ULL << 30) + 4096, 0, &s, probes);
	CHECK(r == 0 && probes[0].result == VTIER_TDP_ABSENT,
	      "SAMPLE in slot 1, nothing mapped yet: result %u (want ABSENT)", probes[0].result);
	r = set_slot(vm, 1, 1ULL << 30, 0, NULL);
	CHECK(r == 0, "delete slot 1: %s", strerror(-r));
	r = memslot_count(dev, slots, 8);
	CHECK(r == 1, "MEMSLOTS after deleting: %d", r);
	r = sample1(dev, (1ULL << 30) + 4096, 0, &s, probes);
	CHECK(r == 0 && probes[0].result == VTIER_TDP_NOSLOT && s.nr_noslot == 1,
	      "SAMPLE in the deleted slot: result %u nr_noslot %u (want NOSLOT, 1)", probes[0].result,
	      s.nr_noslot);
	r = sample1(dev, 1ULL << 40, 2, &s, probes);
	CHECK(r == 0 && probes[0].result == VTIER_TDP_NOSLOT,
	      "SAMPLE gpa 1 TiB (outside every memslot): result %u (want NOSLOT)", probes[0].result);

	r = sample1(dev, 0, 5, &s, probes);
	CHECK(r == -EINVAL, "SAMPLE level 5: %s (want EINVAL)", strerror(-r));
	memset(&s, 0, sizeof(s));
	memset(probes, 0, sizeof(probes));
	s.abi_version = VTIER_TDP_ABI_VERSION;
	s.probes = (uintptr_t)probes;
	s.n = VTIER_TDP_MAX_BATCH + 1;
	r = xioctl(dev, VTIER_TDP_SAMPLE, &s);
	CHECK(r == -E2BIG, "SAMPLE %u probes: %s (want E2BIG)", s.n, strerror(-r));
	s.n = 0;
	r = xioctl(dev, VTIER_TDP_SAMPLE, &s);
	CHECK(r == -E2BIG, "SAMPLE 0 probes: %s (want E2BIG)", strerror(-r));
	s.n = VTIER_TDP_MAX_BATCH;
	r = xioctl(dev, VTIER_TDP_SAMPLE, &s);
	CHECK(r == 0, "SAMPLE %u probes (the maximum): %s", s.n, strerror(-r));
	s.n = 4;
	s.probes = 16;
	r = xioctl(dev, VTIER_TDP_SAMPLE, &s);
	CHECK(r == -EFAULT, "SAMPLE with a bad pointer: %s (want EFAULT)", strerror(-r));
	s.probes = (uintptr_t)probes;
	s.flags = 1u << 7;
	r = xioctl(dev, VTIER_TDP_SAMPLE, &s);
	CHECK(r == -EINVAL, "SAMPLE unknown flag 0x80: %s (want EINVAL)", strerror(-r));
	s.flags = VTIER_TDP_HUGE_LEAVES | VTIER_TDP_FLUSH_TLB;
	r = xioctl(dev, VTIER_TDP_SAMPLE, &s);
	CHECK(r == 0 && s.flush_ns == 0 && s.root_cookie == 0,
	      "SAMPLE HUGE_LEAVES|FLUSH_TLB, no root, nothing cleared: %s, flush_ns %llu, cookie %llu (want 0, 0)",
	      strerror(-r), (unsigned long long)s.flush_ns, (unsigned long long)s.root_cookie);
	s.abi_version = VTIER_TDP_ABI_VERSION + 1;
	r = xioctl(dev, VTIER_TDP_SAMPLE, &s);
	CHECK(r == -EPROTO, "SAMPLE abi_version %u: %s (want EPROTO)", s.abi_version, strerror(-r));
	{
		struct vtier_tdp_memslots m = { .abi_version = VTIER_TDP_ABI_VERSION,
						.max = VTIER_TDP_MAX_MEMSLOTS + 1, .slots = (uintptr_t)slots };

		r = xioctl(dev, VTIER_TDP_MEMSLOTS, &m);
		CHECK(r == -E2BIG, "MEMSLOTS max %u: %s (want E2BIG)", m.max, strerror(-r));
		m.max = 8;
		m.slots = 16;
		r = xioctl(dev, VTIER_TDP_MEMSLOTS, &m);
		CHECK(r == -EFAULT, "MEMSLOTS with a bad pointer: %s (want EFAULT)", strerror(-r));
	}

	r = scan(dev, 1ULL << 40, 2ULL << 40, 0, 3, young, 16, &sc);
	CHECK(r == -ENOENT, "SCAN outside every memslot: %s (want ENOENT)", strerror(-r));
	r = scan(dev, 0, 16 << 20, 2, 1, young, 16, &sc);
	CHECK(r == -EINVAL, "SCAN skip_from < level: %s (want EINVAL)", strerror(-r));
	r = scan(dev, 0, 16 << 20, 0, 3, young, 0, &sc);
	CHECK(r == -EINVAL, "SCAN max_young 0: %s (want EINVAL)", strerror(-r));
	r = scan(dev, 16 << 20, 0, 0, 3, young, 16, &sc);
	CHECK(r == -EINVAL, "SCAN start > end: %s (want EINVAL)", strerror(-r));
	r = scan(dev, 0, 16 << 20, 5, 5, young, 16, &sc);
	CHECK(r == -EINVAL, "SCAN level 5: %s (want EINVAL)", strerror(-r));
	r = scan(dev, 0, 16 << 20, 0, 5, young, 16, &sc);
	CHECK(r == -EINVAL, "SCAN skip_from 5: %s (want EINVAL)", strerror(-r));
	memset(&sc, 0, sizeof(sc));
	sc = (struct vtier_tdp_scan){ .abi_version = VTIER_TDP_ABI_VERSION, .end = 16 << 20,
				      .young = (uintptr_t)young, .max_young = 16, .flags = 1u << 7 };
	r = xioctl(dev, VTIER_TDP_SCAN, &sc);
	CHECK(r == -EINVAL, "SCAN unknown flag 0x80: %s (want EINVAL)", strerror(-r));
	sc.flags = 0;
	sc.max_checks = VTIER_TDP_MAX_SCAN_CHECKS + 1;
	r = xioctl(dev, VTIER_TDP_SCAN, &sc);
	CHECK(r == -E2BIG, "SCAN max_checks %u: %s (want E2BIG)", sc.max_checks, strerror(-r));
	sc.max_checks = 0;
	sc.max_young = VTIER_TDP_MAX_SCAN_CHECKS + 1;
	r = xioctl(dev, VTIER_TDP_SCAN, &sc);
	CHECK(r == -E2BIG, "SCAN max_young %u: %s (want E2BIG)", sc.max_young, strerror(-r));
	r = scan(dev, 0, 16 << 20, 0, 3, young, 16, &sc);
	CHECK(r == 0 && sc.next == 16 << 20 && sc.nr_young == 0,
	      "SCAN of an unmapped slot: %s, next 0x%llx, young %u", strerror(-r),
	      (unsigned long long)sc.next, sc.nr_young);

	/* The VMM closes its VM fd while we are attached: our reference keeps it. */
	if (vcpu >= 0)
		close(vcpu);
	close(vm);
	r = memslot_count(dev, slots, 8);
	CHECK(r == 1, "MEMSLOTS after the VMM closed its VM fd: %d (our reference holds the VM)", r);
	dbg = count_vm_debugfs();
	if (dbg >= 0)
		CHECK(dbg == 1, "debugfs: %d VM of ours alive while attached (want 1)", dbg);
	close(dev);
	dbg = count_vm_debugfs();
	if (dbg >= 0)
		CHECK(dbg == 0, "debugfs: %d VM of ours after closing the device (want 0: no leaked reference)", dbg);
	else
		printf("skip debugfs not mounted: cannot count VMs\n");

	/* Attach/detach cycles: any leaked reference would keep VMs alive. */
	for (int i = 0; i < 200; i++) {
		int d = open_dev(), v = ioctl(kvm, KVM_CREATE_VM, 0);

		if (v < 0 || attach(d, v) != 0) {
			CHECK(0, "attach cycle %d: %s", i, strerror(errno));
			break;
		}
		close(v);
		close(d);
	}
	dbg = count_vm_debugfs();
	if (dbg >= 0)
		CHECK(dbg == 0, "200 attach/close cycles: %d VMs of ours left (want 0)", dbg);
	munmap(mem, 32 << 20);
	close(null);
	close(kvm);
	return 0;
}

/*
 * "guest": a VM of our own whose vCPU runs, in 32-bit protected mode without
 * paging (gpa = linear address), a program that writes 0x400000 and 0x600000
 * (slot 0, 2 MiB-aligned THP-backed memory: 2 MiB leaves when the host has
 * THP) and every 4 KiB page of slot 1 [16 MiB, 80 MiB) (no THP: 16384 4 KiB
 * leaves), then halts. KVM installs each leaf it faults in with its A bit set
 * (make_spte()), so which bits are set is known without relying on the
 * hardware walker (whose TLB this test would otherwise depend on).
 */
#define G_CODE		0x1000ULL
#define G_HUGE1		0x400000ULL
#define G_HUGE2		0x600000ULL
#define G_SLOT1		(16ULL << 20)
#define G_SLOT1_SIZE	(64ULL << 20)
#define G_SLOT1_PAGES	(G_SLOT1_SIZE >> 12)
#define G_SLOT2		(128ULL << 20)

static const uint8_t guest_code[] = {
	0xbe, 0x00, 0x00, 0x40, 0x00,		/* mov esi, 0x400000 */
	0x89, 0x06,				/* mov [esi], eax */
	0xa3, 0x00, 0x00, 0x60, 0x00,		/* mov [0x600000], eax */
	0xbf, 0x00, 0x00, 0x00, 0x01,		/* mov edi, 0x1000000 */
	0x89, 0x07,				/* 1: mov [edi], eax */
	0x81, 0xc7, 0x00, 0x10, 0x00, 0x00,	/* add edi, 0x1000 */
	0x81, 0xff, 0x00, 0x00, 0x00, 0x05,	/* cmp edi, 0x5000000 */
	0x72, 0xf0,				/* jb 1b */
	0xf4,					/* hlt */
};

struct guest {
	int kvm, vm, vcpu;
	struct kvm_run *run;
	uint8_t *slot0, *slot1;
};

static int guest_run(struct guest *g)
{
	struct kvm_regs regs = { .rip = G_CODE, .rflags = 2 };

	if (ioctl(g->vcpu, KVM_SET_REGS, &regs) < 0 || ioctl(g->vcpu, KVM_RUN, 0) < 0)
		return -errno;
	return g->run->exit_reason == KVM_EXIT_HLT ? 0 : -(int)g->run->exit_reason - 1000;
}

static int guest_setup(struct guest *g)
{
	struct kvm_segment seg = { .base = 0, .limit = 0xffffffff, .present = 1, .dpl = 0,
				   .db = 1, .s = 1, .g = 1 };
	struct kvm_sregs sregs;
	uint8_t *raw;
	int sz;

	g->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (g->kvm < 0)
		return -errno;
	g->vm = ioctl(g->kvm, KVM_CREATE_VM, 0);
	if (g->vm < 0)
		return -errno;
	/* slot 0: 16 MiB, 2 MiB-aligned, touched so that THP backs it */
	raw = mmap(NULL, 18 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	g->slot1 = mmap(NULL, G_SLOT1_SIZE + (2 << 20), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED || g->slot1 == MAP_FAILED)
		return -ENOMEM;
	g->slot0 = (uint8_t *)(((uintptr_t)raw + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
	madvise(g->slot0, 16 << 20, MADV_HUGEPAGE);
	memset(g->slot0, 0, 16 << 20);
	memcpy(g->slot0 + G_CODE, guest_code, sizeof(guest_code));
	madvise(g->slot1, G_SLOT1_SIZE + (2 << 20), MADV_NOHUGEPAGE);
	memset(g->slot1, 0, G_SLOT1_SIZE + (2 << 20));
	if (set_slot(g->vm, 0, 0, 16 << 20, g->slot0) || set_slot(g->vm, 1, G_SLOT1, G_SLOT1_SIZE, g->slot1) ||
	    set_slot(g->vm, 2, G_SLOT2, 2 << 20, g->slot1 + G_SLOT1_SIZE))
		return -errno;
	g->vcpu = ioctl(g->vm, KVM_CREATE_VCPU, 0);
	sz = ioctl(g->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (g->vcpu < 0 || sz < 0)
		return -errno;
	g->run = mmap(NULL, (size_t)sz, PROT_READ | PROT_WRITE, MAP_SHARED, g->vcpu, 0);
	if (g->run == MAP_FAILED || ioctl(g->vcpu, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	seg.type = 11;	/* code: execute/read, accessed */
	seg.selector = 8;
	sregs.cs = seg;
	seg.type = 3;	/* data: read/write, accessed */
	seg.selector = 16;
	sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = seg;
	sregs.cr0 |= 1;	/* PE, no paging */
	if (ioctl(g->vcpu, KVM_SET_SREGS, &sregs) < 0)
		return -errno;
	return 0;
}

static int info_of(int dev, struct vtier_tdp_info *info)
{
	memset(info, 0, sizeof(*info));
	info->abi_version = VTIER_TDP_ABI_VERSION;
	return xioctl(dev, VTIER_TDP_INFO, info);
}

/* SAMPLE @n probes at @level, @stride apart from @gpa. */
static int sample_n(int dev, struct vtier_tdp_probe *p, uint32_t n, uint64_t gpa, uint64_t stride,
		    unsigned int level, uint32_t flags, struct vtier_tdp_sample *s)
{
	memset(s, 0, sizeof(*s));
	for (uint32_t i = 0; i < n; i++)
		p[i] = (struct vtier_tdp_probe){ .gpa = gpa + i * stride, .level = (uint8_t)level };
	s->abi_version = VTIER_TDP_ABI_VERSION;
	s->n = n;
	s->probes = (uintptr_t)p;
	s->flags = flags;
	return xioctl(dev, VTIER_TDP_SAMPLE, s);
}

static uint32_t count_result(const struct vtier_tdp_probe *p, uint32_t n, uint8_t result)
{
	uint32_t c = 0;

	for (uint32_t i = 0; i < n; i++)
		c += p[i].result == result;
	return c;
}

static long long vm_stat(int vm_fd, const char *name)
{
	char path[160];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/kvm/%d-%d/%s", (int)getpid(), vm_fd, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* A whole SCAN of [start, end) at @level, resumed until done; sums its outputs. */
static int scan_all(int dev, uint64_t start, uint64_t end, unsigned int level, unsigned int skip_from,
		    uint32_t max_checks, uint64_t *young, struct vtier_tdp_scan *tot, int *calls,
		    uint32_t *max_yields_call, uint64_t *max_checks_call)
{
	struct vtier_tdp_scan sc;

	memset(tot, 0, sizeof(*tot));
	*calls = 0;
	*max_yields_call = 0;
	*max_checks_call = 0;
	while (start < end) {
		uint64_t ch = 0;
		int r;

		memset(&sc, 0, sizeof(sc));
		sc = (struct vtier_tdp_scan){ .abi_version = VTIER_TDP_ABI_VERSION, .level = level,
					      .skip_from = skip_from, .max_checks = max_checks,
					      .start = start, .end = end, .young = (uintptr_t)young,
					      .max_young = 65536 };
		r = xioctl(dev, VTIER_TDP_SCAN, &sc);
		if (r)
			return r;
		for (int l = 0; l < VTIER_TDP_MAX_LEVELS; l++) {
			tot->checks[l] += sc.checks[l];
			ch += sc.checks[l];
		}
		tot->nr_young += sc.nr_young;
		tot->nr_cleared += sc.nr_cleared;
		tot->nr_marked += sc.nr_marked;
		tot->nr_yields += sc.nr_yields;
		tot->root_cookie = sc.root_cookie;
		if (sc.nr_yields > *max_yields_call)
			*max_yields_call = sc.nr_yields;
		if (ch > *max_checks_call)
			*max_checks_call = ch;
		(*calls)++;
		if (sc.next <= start)
			return -EIO;
		start = sc.next;
	}
	return 0;
}

static int test_guest(void)
{
	static struct vtier_tdp_probe p[VTIER_TDP_MAX_BATCH];
	static uint64_t young[65536];
	struct vtier_tdp_sample s;
	struct vtier_tdp_scan tot;
	struct vtier_tdp_info info;
	struct guest g = { 0 };
	uint64_t cookie1, cookie2, max_checks_call;
	uint32_t max_yields_call;
	long long fl0, fl1;
	int dev, r, calls;
	bool huge;

	r = guest_setup(&g);
	CHECK(r == 0, "a VM of our own: 3 memslots and a vCPU in 32-bit protected mode: %s",
	      strerror(-r));
	if (r)
		return 1;
	dev = open_dev();
	r = attach(dev, g.vm);
	CHECK(r == 0, "ATTACH: %s", strerror(-r));
	r = info_of(dev, &info);
	CHECK(r == 0 && info.levels == 0 && info.root_cookie == 0,
	      "INFO before the vCPU ran: levels %u, root_cookie %llu (want 0, 0)", info.levels,
	      (unsigned long long)info.root_cookie);
	if (!(info.features & VTIER_TDP_F_ROOT_COOKIE) || !(info.features & VTIER_TDP_F_FLUSH_TLB)) {
		CHECK(0, "INFO features 0x%x lack ROOT_COOKIE/FLUSH_TLB: a version 1 module?",
		      info.features);
		return 1;
	}
	r = guest_run(&g);
	CHECK(r == 0, "KVM_RUN: the guest wrote its pages and halted: %d%s", r,
	      r <= -1000 ? " (exit reason = -r - 1000)" : "");
	if (r)
		return 1;

	r = info_of(dev, &info);
	cookie1 = info.root_cookie;
	CHECK(r == 0 && (info.levels == 4 || info.levels == 5) && cookie1 != 0,
	      "INFO after the run: levels %u, root_cookie %llu (want non-zero), leaves pte %llu pmd %llu",
	      info.levels, (unsigned long long)cookie1, (unsigned long long)info.leaves[0],
	      (unsigned long long)info.leaves[1]);
	CHECK(info.leaves[0] >= G_SLOT1_PAGES,
	      "INFO census: %llu 4 KiB leaves (want >= %llu, slot 1 written page by page)",
	      (unsigned long long)info.leaves[0], (unsigned long long)G_SLOT1_PAGES);
	CHECK(info.nr_yields >= 1,
	      "INFO census read > %u entries under one call: %llu lock drops (want >= 1)",
	      VTIER_TDP_HOLD_ENTRIES, (unsigned long long)info.nr_yields);

	/* One answer per huge leaf per call, whatever the order of the probes. */
	r = sample_n(dev, p, 1, G_HUGE1, 0, 0, 0, &s);
	huge = r == 0 && p[0].result == VTIER_TDP_ABSENT;
	if (!huge) {
		SKIP("huge leaves: 0x%llx is not under a 2 MiB leaf (result %u; host THP off?): one answer per leaf not tested",
		     (unsigned long long)G_HUGE1, p[0].result);
	} else {
		p[0] = (struct vtier_tdp_probe){ .gpa = G_HUGE1 + 0x3000 };
		p[1] = (struct vtier_tdp_probe){ .gpa = G_HUGE2 + 0x5000 };
		p[2] = (struct vtier_tdp_probe){ .gpa = G_HUGE1 + 0x7000 };
		p[3] = (struct vtier_tdp_probe){ .gpa = G_HUGE1, .level = 1 };
		p[4] = (struct vtier_tdp_probe){ .gpa = G_HUGE2 + 0x1ff000 };
		memset(&s, 0, sizeof(s));
		s.abi_version = VTIER_TDP_ABI_VERSION;
		s.n = 5;
		s.probes = (uintptr_t)p;
		s.flags = VTIER_TDP_HUGE_LEAVES;
		r = xioctl(dev, VTIER_TDP_SAMPLE, &s);
		CHECK(r == 0 && count_result(p, 5, VTIER_TDP_YOUNG) == 5 && s.checks[1] == 2,
		      "SAMPLE leaf1, leaf2, leaf1, leaf1 at its level, leaf2 (both written): %u %u %u %u %u, pmd checks %llu (want all YOUNG, 2)",
		      p[0].result, p[1].result, p[2].result, p[3].result, p[4].result,
		      (unsigned long long)s.checks[1]);
		r = xioctl(dev, VTIER_TDP_SAMPLE, &s);
		CHECK(r == 0 && count_result(p, 5, VTIER_TDP_OLD) == 5,
		      "the same SAMPLE again: %u %u %u %u %u (want all OLD: the first cleared both)",
		      p[0].result, p[1].result, p[2].result, p[3].result, p[4].result);
	}

	/* Levels are checked before any bit is cleared. */
	p[0] = (struct vtier_tdp_probe){ .gpa = G_SLOT1 };
	p[1] = (struct vtier_tdp_probe){ .gpa = G_SLOT1, .level = (uint8_t)info.levels };
	memset(&s, 0, sizeof(s));
	s.abi_version = VTIER_TDP_ABI_VERSION;
	s.n = 2;
	s.probes = (uintptr_t)p;
	r = xioctl(dev, VTIER_TDP_SAMPLE, &s);
	CHECK(r == -EINVAL, "SAMPLE {slot 1 page 0 at pte, level %u above the table's top}: %s (want EINVAL)",
	      info.levels, strerror(-r));
	r = sample_n(dev, p, 1, G_SLOT1, 0, 0, 0, &s);
	CHECK(r == 0 && p[0].result == VTIER_TDP_YOUNG,
	      "slot 1 page 0 after that EINVAL: result %u (want YOUNG: nothing was cleared)", p[0].result);
	r = sample_n(dev, p, 1, G_SLOT1, 0, 0, 0, &s);
	CHECK(r == 0 && p[0].result == VTIER_TDP_OLD, "and once more: result %u (want OLD)", p[0].result);

	/* A young leaf cleared marks its folio; a long batch lets go of the lock. */
	r = sample_n(dev, p, VTIER_TDP_MAX_BATCH, G_SLOT1, 4096, 0, 0, &s);
	CHECK(r == 0 && count_result(p, VTIER_TDP_MAX_BATCH, VTIER_TDP_YOUNG) == VTIER_TDP_MAX_BATCH - 1 &&
	      s.nr_cleared == VTIER_TDP_MAX_BATCH - 1 && s.nr_marked == VTIER_TDP_MAX_BATCH - 1,
	      "SAMPLE slot 1 pages 0-4095: %u young, nr_cleared %u, host folios marked young %u (want 4095 each)",
	      count_result(p, VTIER_TDP_MAX_BATCH, VTIER_TDP_YOUNG), s.nr_cleared, s.nr_marked);
	CHECK(s.nr_yields >= 1, "that SAMPLE read %u entries: %u lock drops (want >= 1)",
	      VTIER_TDP_MAX_BATCH * info.levels, s.nr_yields);
	CHECK(s.root_cookie == cookie1, "SAMPLE root_cookie %llu (want %llu, same root)",
	      (unsigned long long)s.root_cookie, (unsigned long long)cookie1);

	/* The TLB flush flag: once, after clearing, and only if something was cleared. */
	fl0 = vm_stat(g.vm, "remote_tlb_flush_requests");
	r = sample_n(dev, p, VTIER_TDP_MAX_BATCH, G_SLOT1 + VTIER_TDP_MAX_BATCH * 4096ULL, 4096, 0,
		     VTIER_TDP_FLUSH_TLB, &s);
	fl1 = vm_stat(g.vm, "remote_tlb_flush_requests");
	CHECK(r == 0 && s.nr_cleared == VTIER_TDP_MAX_BATCH && s.flush_ns > 0,
	      "SAMPLE pages 4096-8191 with FLUSH_TLB: %u cleared, flush took %llu ns (want 4096, > 0)",
	      s.nr_cleared, (unsigned long long)s.flush_ns);
	if (fl0 >= 0)
		CHECK(fl1 >= fl0 + 1, "KVM's remote_tlb_flush_requests %lld -> %lld (want +1 at least)",
		      fl0, fl1);
	else
		SKIP("debugfs kvm stats not readable: the flush is not cross-checked with KVM's count");
	r = sample_n(dev, p, 16, G_SLOT1 + VTIER_TDP_MAX_BATCH * 4096ULL, 4096, 0, VTIER_TDP_FLUSH_TLB, &s);
	CHECK(r == 0 && s.nr_cleared == 0 && s.flush_ns == 0,
	      "SAMPLE of those (now old) with FLUSH_TLB: cleared %u, flush_ns %llu (want 0, 0: nothing to flush)",
	      s.nr_cleared, (unsigned long long)s.flush_ns);
	r = info_of(dev, &info);
	CHECK(r == 0 && info.nr_flushes == 1 && info.flush_ns > 0 &&
	      info.nr_marked >= 2 * VTIER_TDP_MAX_BATCH - 1,
	      "INFO totals: %llu flush(es), %llu ns, %llu cleared, %llu folios marked young",
	      (unsigned long long)info.nr_flushes, (unsigned long long)info.flush_ns,
	      (unsigned long long)info.nr_cleared, (unsigned long long)info.nr_marked);

	/* SCAN the rest of slot 1 at pte level: the other 8192 pages are young. */
	r = scan_all(dev, G_SLOT1, G_SLOT1 + G_SLOT1_SIZE, 0, 0, 0, young, &tot, &calls,
		     &max_yields_call, &max_checks_call);
	CHECK(r == 0 && tot.checks[0] == G_SLOT1_PAGES && tot.nr_young == G_SLOT1_PAGES - 8192 &&
	      tot.nr_marked == tot.nr_young,
	      "SCAN slot 1 at pte, no skipping: %s, %llu checks, %u young, %u marked, %d call(s) (want 16384, 8192, 8192)",
	      strerror(-r), (unsigned long long)tot.checks[0], tot.nr_young, tot.nr_marked, calls);
	CHECK(max_checks_call <= VTIER_TDP_HOLD_ENTRIES || max_yields_call >= 1,
	      "SCAN: a call of %llu checks dropped the lock %u time(s) (want >= 1 past %u)",
	      (unsigned long long)max_checks_call, max_yields_call, VTIER_TDP_HOLD_ENTRIES);

	/* KVM replaces the root: deleting a memslot zaps all roots (KVM_X86_QUIRK_SLOT_ZAP_ALL). */
	r = set_slot(g.vm, 2, G_SLOT2, 0, NULL);
	CHECK(r == 0, "delete slot 2: %s", strerror(-r));
	r = info_of(dev, &info);
	CHECK(r == 0 && info.root_cookie == 0,
	      "INFO after the zap, before the vCPU runs: root_cookie %llu (want 0: no valid root)",
	      (unsigned long long)info.root_cookie);
	r = guest_run(&g);
	CHECK(r == 0, "KVM_RUN again (a new root, every page faulted in again): %d", r);
	r = info_of(dev, &info);
	cookie2 = info.root_cookie;
	CHECK(r == 0 && cookie2 != 0 && cookie2 != cookie1,
	      "INFO: root_cookie %llu -> %llu (want a new non-zero value: the root was swapped)",
	      (unsigned long long)cookie1, (unsigned long long)cookie2);

	/*
	 * SCAN that stops right after testing a young PMD entry (max_checks 1):
	 * the next call, from `next`, must still find every page below it.
	 */
	{
		struct vtier_tdp_scan sc = { .abi_version = VTIER_TDP_ABI_VERSION, .level = 0,
					     .skip_from = info.levels - 1, .max_checks = 1,
					     .start = G_SLOT1, .end = G_SLOT1 + G_SLOT1_SIZE,
					     .young = (uintptr_t)young, .max_young = 65536 };

		r = xioctl(dev, VTIER_TDP_SCAN, &sc);
		CHECK(r == 0 && sc.checks[1] == 1 && sc.nr_young == 0 && sc.next == G_SLOT1 &&
		      sc.root_cookie == cookie2,
		      "SCAN max_checks 1: pmd checks %llu, young %u, next 0x%llx (want 1, 0, 0x%llx)",
		      (unsigned long long)sc.checks[1], sc.nr_young, (unsigned long long)sc.next,
		      (unsigned long long)G_SLOT1);
		r = scan_all(dev, G_SLOT1, G_SLOT1 + G_SLOT1_SIZE, 0, info.levels - 1, 0, young, &tot,
			     &calls, &max_yields_call, &max_checks_call);
		CHECK(r == 0 && tot.nr_young == G_SLOT1_PAGES,
		      "SCAN from there, skipping old subtrees: %u young (want %llu: none skipped)",
		      tot.nr_young, (unsigned long long)G_SLOT1_PAGES);
	}

	/* A version 1 caller: v1 numbers, v1 sizes, nothing written past them. */
	{
		uint8_t buf[sizeof(struct vtier_tdp_info) + 16];
		struct vtier_tdp_info *i1 = (struct vtier_tdp_info *)buf;
		bool clean = true;

		memset(buf, 0xa5, sizeof(buf));
		i1->abi_version = 1;
		r = xioctl(dev, VTIER_TDP_INFO_V1, i1);
		for (size_t k = VTIER_TDP_INFO_SIZE_V1; k < sizeof(buf); k++)
			clean &= buf[k] == 0xa5;
		CHECK(r == 0 && i1->levels == info.levels && clean,
		      "INFO_V1 (abi_version 1, %u bytes): %s, levels %u, bytes past v1 untouched: %s",
		      VTIER_TDP_INFO_SIZE_V1, strerror(-r), i1->levels, clean ? "yes" : "no");
		memset(&s, 0xa5, sizeof(s));
		memset(p, 0, sizeof(p[0]));
		p[0].gpa = G_SLOT1;
		s.abi_version = 1;
		s.n = 1;
		s.probes = (uintptr_t)p;
		s.flags = 0;
		r = xioctl(dev, VTIER_TDP_SAMPLE_V1, &s);
		CHECK(r == 0 && p[0].result == VTIER_TDP_OLD && s.root_cookie == 0xa5a5a5a5a5a5a5a5ULL,
		      "SAMPLE_V1: %s, result %u (want OLD), version 2 fields untouched: %s", strerror(-r),
		      p[0].result, s.root_cookie == 0xa5a5a5a5a5a5a5a5ULL ? "yes" : "no");
	}
	close(dev);
	return 0;
}

static int vm_fd_of(pid_t pid)
{
	char dir[64], path[320], link[256];
	DIR *d;
	struct dirent *de;
	int target = -1, pidfd, fd;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = 0;
		if (!strcmp(link, "anon_inode:kvm-vm"))
			target = atoi(de->d_name);
	}
	closedir(d);
	if (target < 0)
		return -1;
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -1;
	fd = (int)syscall(SYS_pidfd_getfd, pidfd, target, 0);
	close(pidfd);
	return fd;
}

static int test_live(pid_t pid)
{
	struct vtier_tdp_memslot slots[64];
	struct vtier_tdp_probe p[3];
	struct vtier_tdp_sample s;
	struct vtier_tdp_scan sc;
	struct vtier_tdp_info info = { .abi_version = VTIER_TDP_ABI_VERSION };
	static uint64_t young[65536];
	uint64_t start = 0, end = 0, checks[VTIER_TDP_MAX_LEVELS] = { 0 }, nyoung = 0, yields = 0;
	int dev = open_dev(), vm = vm_fd_of(pid), r, n, calls = 0, long_calls = 0, long_no_yield = 0;

	CHECK(vm >= 0, "pidfd_getfd the VM fd of QEMU %d", (int)pid);
	if (vm < 0)
		return 1;
	r = attach(dev, vm);
	CHECK(r == 0, "ATTACH QEMU's VM: %s", strerror(-r));
	close(vm);
	r = xioctl(dev, VTIER_TDP_INFO, &info);
	CHECK(r == 0 && (info.levels == 4 || info.levels == 5),
	      "INFO: format %u levels %u leaves pte %llu pmd %llu pud %llu%s", info.format, info.levels,
	      (unsigned long long)info.leaves[0], (unsigned long long)info.leaves[1],
	      (unsigned long long)info.leaves[2], info.leaves_truncated ? " (truncated)" : "");
	n = memslot_count(dev, slots, 64);
	CHECK(n > 0, "MEMSLOTS: %d", n);
	for (int i = 0; i < n && i < 64; i++) {
		printf("     slot %u gpa 0x%llx size 0x%llx hva 0x%llx flags 0x%x\n", slots[i].id,
		       (unsigned long long)slots[i].gpa, (unsigned long long)slots[i].size,
		       (unsigned long long)slots[i].hva, slots[i].flags);
		if (!(slots[i].flags & VTIER_TDP_SLOT_INTERNAL) && slots[i].size > end - start) {
			start = slots[i].gpa;
			end = slots[i].gpa + slots[i].size;
		}
	}
	/* One probe per level at the start of the largest slot. */
	memset(p, 0, sizeof(p));
	for (int l = 0; l < 3; l++) {
		p[l].gpa = start + (1 << 20);
		p[l].level = (uint8_t)l;
	}
	memset(&s, 0, sizeof(s));
	s.abi_version = VTIER_TDP_ABI_VERSION;
	s.n = 3;
	s.probes = (uintptr_t)p;
	r = xioctl(dev, VTIER_TDP_SAMPLE, &s);
	CHECK(r == 0, "SAMPLE pte/pmd/pud at 0x%llx: %u %u %u, checks %llu/%llu/%llu",
	      (unsigned long long)p[0].gpa, p[0].result, p[1].result, p[2].result,
	      (unsigned long long)s.checks[0], (unsigned long long)s.checks[1],
	      (unsigned long long)s.checks[2]);
	/* A skipping scan of the whole slot, resumed until done. */
	for (uint64_t a = start; a < end; calls++) {
		r = scan(dev, a, end, 0, info.levels - 1, young, 65536, &sc);
		if (r) {
			CHECK(0, "SCAN at 0x%llx: %s", (unsigned long long)a, strerror(-r));
			break;
		}
		{
			uint64_t ch = 0;

			for (int l = 0; l < VTIER_TDP_MAX_LEVELS; l++) {
				checks[l] += sc.checks[l];
				ch += sc.checks[l];
			}
			/* every check reads an entry: past the hold limit, a drop */
			if (ch > VTIER_TDP_HOLD_ENTRIES) {
				long_calls++;
				long_no_yield += !sc.nr_yields;
			}
		}
		yields += sc.nr_yields;
		nyoung += sc.nr_young;
		if (sc.next <= a) {
			CHECK(0, "SCAN made no progress at 0x%llx", (unsigned long long)a);
			break;
		}
		a = sc.next;
	}
	CHECK(r == 0, "SCAN [0x%llx, 0x%llx) at pte, skipping from the top: %llu young, %d calls, checks pte %llu pmd %llu pud %llu p4d %llu",
	      (unsigned long long)start, (unsigned long long)end, (unsigned long long)nyoung, calls,
	      (unsigned long long)checks[0], (unsigned long long)checks[1],
	      (unsigned long long)checks[2], (unsigned long long)checks[3]);
	CHECK(long_no_yield == 0,
	      "SCAN lock hold: %llu drops in all; %d call(s) tested over %u entries, %d of them without a drop (want 0)",
	      (unsigned long long)yields, long_calls, VTIER_TDP_HOLD_ENTRIES, long_no_yield);
	close(dev);
	return 0;
}

static int test_orphan(pid_t pid)
{
	struct vtier_tdp_info info = { .abi_version = VTIER_TDP_ABI_VERSION };
	struct vtier_tdp_probe p;
	struct vtier_tdp_sample s;
	int dev = open_dev(), vm = vm_fd_of(pid), r;
	pid_t racer;

	CHECK(vm >= 0, "pidfd_getfd the VM fd of QEMU %d", (int)pid);
	if (vm < 0)
		return 1;
	r = attach(dev, vm);
	CHECK(r == 0, "ATTACH: %s", strerror(-r));
	close(vm);
	/*
	 * A caller racing the exit: INFO walks the whole table holding a
	 * reference on QEMU's mm, so QEMU's exit can leave the last reference
	 * to the module (dropped with mmput_async()). Every call must succeed
	 * until ESRCH, and nothing may show in dmesg (the scenario checks).
	 */
	racer = fork();
	if (racer == 0) {
		for (long calls = 0;; calls++) {
			struct vtier_tdp_info ri = { .abi_version = VTIER_TDP_ABI_VERSION };
			int e = xioctl(dev, VTIER_TDP_INFO, &ri);

			if (e == -ESRCH) {
				printf("     racer: %ld INFO calls, then ESRCH\n", calls);
				_exit(0);
			}
			if (e)
				_exit(2);
		}
	}
	usleep(300000);
	kill(pid, SIGKILL);
	for (int i = 0; i < 300 && kill(pid, 0) == 0; i++)
		usleep(100000);
	CHECK(kill(pid, 0) < 0, "QEMU %d exited", (int)pid);
	if (racer > 0) {
		int st = -1;

		for (int i = 0; i < 300 && waitpid(racer, &st, WNOHANG) == 0; i++)
			usleep(100000);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "INFO calls racing QEMU's exit: each succeeded until ESRCH (status 0x%x)", st);
	}
	r = sample1(dev, 1 << 20, 0, &s, &p);
	CHECK(r == -ESRCH, "SAMPLE after the VM's process exited: %s (want ESRCH)", strerror(-r));
	r = xioctl(dev, VTIER_TDP_INFO, &info);
	CHECK(r == -ESRCH, "INFO after exit: %s (want ESRCH)", strerror(-r));
	close(dev);
	printf("ok   closed the device (the VM is destroyed now, with our reference)\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "errors"))
		test_errors();
	else if (argc == 2 && !strcmp(argv[1], "guest"))
		test_guest();
	else if (argc == 3 && !strcmp(argv[1], "live"))
		test_live(atoi(argv[2]));
	else if (argc == 3 && !strcmp(argv[1], "orphan"))
		test_orphan(atoi(argv[2]));
	else {
		fprintf(stderr, "usage: tdp-abi-test errors | guest | live PID | orphan PID\n");
		return 2;
	}
	printf("%s: %d failure(s)\n", argv[1], failures);
	return failures ? 1 : 0;
}
