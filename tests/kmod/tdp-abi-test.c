// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier_tdp.ko ABI tests, run in the testbed's L1 (static binary).
 *
 *   tdp-abi-test errors        error paths on a VM of our own (KVM_CREATE_VM, no vCPU):
 *                              bad fd, non-KVM fds, ABI version, double attach,
 *                              oversized/empty batches, gpa outside every memslot,
 *                              memslots added and removed while attached, and
 *                              200 attach/close cycles
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
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

	r = scan(dev, 1ULL << 40, 2ULL << 40, 0, 3, young, 16, &sc);
	CHECK(r == -ENOENT, "SCAN outside every memslot: %s (want ENOENT)", strerror(-r));
	r = scan(dev, 0, 16 << 20, 2, 1, young, 16, &sc);
	CHECK(r == -EINVAL, "SCAN skip_from < level: %s (want EINVAL)", strerror(-r));
	r = scan(dev, 0, 16 << 20, 0, 3, young, 0, &sc);
	CHECK(r == -EINVAL, "SCAN max_young 0: %s (want EINVAL)", strerror(-r));
	r = scan(dev, 16 << 20, 0, 0, 3, young, 16, &sc);
	CHECK(r == -EINVAL, "SCAN start > end: %s (want EINVAL)", strerror(-r));
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
	uint64_t start = 0, end = 0, checks[VTIER_TDP_MAX_LEVELS] = { 0 }, nyoung = 0;
	int dev = open_dev(), vm = vm_fd_of(pid), r, n, calls = 0;

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
		for (int l = 0; l < VTIER_TDP_MAX_LEVELS; l++)
			checks[l] += sc.checks[l];
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
	close(dev);
	return 0;
}

static int test_orphan(pid_t pid)
{
	struct vtier_tdp_info info = { .abi_version = VTIER_TDP_ABI_VERSION };
	struct vtier_tdp_probe p;
	struct vtier_tdp_sample s;
	int dev = open_dev(), vm = vm_fd_of(pid), r;

	CHECK(vm >= 0, "pidfd_getfd the VM fd of QEMU %d", (int)pid);
	if (vm < 0)
		return 1;
	r = attach(dev, vm);
	CHECK(r == 0, "ATTACH: %s", strerror(-r));
	close(vm);
	kill(pid, SIGKILL);
	for (int i = 0; i < 300 && kill(pid, 0) == 0; i++)
		usleep(100000);
	CHECK(kill(pid, 0) < 0, "QEMU %d exited", (int)pid);
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
	else if (argc == 3 && !strcmp(argv[1], "live"))
		test_live(atoi(argv[2]));
	else if (argc == 3 && !strcmp(argv[1], "orphan"))
		test_orphan(atoi(argv[2]));
	else {
		fprintf(stderr, "usage: tdp-abi-test errors | live PID | orphan PID\n");
		return 2;
	}
	printf("%s: %d failure(s)\n", argv[1], failures);
	return failures ? 1 : 0;
}
