/* SPDX-License-Identifier: GPL-2.0-or-later WITH Linux-syscall-note */
/*
 * vtier_tdp.ko ioctl ABI: read and clear the accessed bits of a KVM VM's
 * second-level page table (AMD NPT, Intel EPT with A/D bits) at every level.
 * Documented in docs/abi-tdp.md.
 *
 * Levels count from the leaf, as in the agent's access-source contract:
 * 0 = 4 KiB entry, 1 = 2 MiB, 2 = 1 GiB, 3 = 512 GiB, 4 = 256 TiB (5-level).
 *
 * Every structure starts with abi_version; the module rejects a version it
 * does not know with EPROTO. Changes are additive: new fields go at the end
 * and get a new version. The size of a structure is part of its ioctl number,
 * so the module tells a version 1 caller (the *_V1 numbers below, the
 * structures without their "version 2" fields) from a version 2 one and reads
 * and writes only the bytes the caller has; an agent finding a version 1
 * module (ENOTTY for VTIER_TDP_INFO) can fall back to the *_V1 numbers.
 */
#ifndef VTIER_TDP_H
#define VTIER_TDP_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define VTIER_TDP_ABI_VERSION	2	/* the module accepts 1 and 2 */
#define VTIER_TDP_DEVICE	"/dev/vtier-tdp"
#define VTIER_TDP_MAX_LEVELS	5
#define VTIER_TDP_MAX_BATCH	4096	/* probes per SAMPLE */
#define VTIER_TDP_MAX_SCAN_CHECKS 65536	/* bit tests per SCAN call */
#define VTIER_TDP_MAX_MEMSLOTS	32768

/* vtier_tdp_info.format */
#define VTIER_TDP_FORMAT_NPT	1	/* AMD nested page table, A = bit 5 */
#define VTIER_TDP_FORMAT_EPT	2	/* Intel EPT with A/D bits, A = bit 8 */

/* vtier_tdp_info.features */
#define VTIER_TDP_F_UPPER_ACCESSED _BITUL(0)	/* A bit set by hardware on non-leaf entries */
#define VTIER_TDP_F_SAMPLE	_BITUL(1)
#define VTIER_TDP_F_SCAN	_BITUL(2)
#define VTIER_TDP_F_HUGE_LEAVES	_BITUL(3)	/* SAMPLE and SCAN take VTIER_TDP_HUGE_LEAVES */
/* version 2 */
#define VTIER_TDP_F_FLUSH_TLB	_BITUL(4)	/* SAMPLE and SCAN take VTIER_TDP_FLUSH_TLB */
#define VTIER_TDP_F_ROOT_COOKIE	_BITUL(5)	/* root_cookie in INFO, SAMPLE, SCAN */
#define VTIER_TDP_F_MARK_YOUNG	_BITUL(6)	/* clearing a young leaf marks its folio young */
#define VTIER_TDP_F_YIELD	_BITUL(7)	/* mmu_lock let go every VTIER_TDP_HOLD_ENTRIES */

/* Entries read under one hold of mmu_lock, at most (SAMPLE, SCAN, INFO). */
#define VTIER_TDP_HOLD_ENTRIES	8192

/*
 * vtier_tdp_sample.flags, vtier_tdp_scan.flags: an address under a huge leaf
 * (2 MiB, 1 GiB) is answered by that leaf's accessed bit. SAMPLE tests and
 * clears the leaf once per call, and every probe of the call under the same
 * leaf gets that answer; SCAN tests the leaf and writes it, when young, as
 * (leaf gpa | leaf level), which may start before @start. Without the flag an
 * address under a huge leaf reads ABSENT and SCAN skips it.
 */
#define VTIER_TDP_HUGE_LEAVES	_BITUL(0)
/*
 * vtier_tdp_sample.flags, vtier_tdp_scan.flags (when INFO lists
 * VTIER_TDP_F_FLUSH_TLB): after the call, with mmu_lock released, flush the
 * VM's TLBs (kvm_flush_remote_tlbs) if this file cleared an accessed bit since
 * its last flush. A translation cached in a TLB or paging-structure cache is
 * not walked again, so without a flush its accessed bits stay clear while the
 * memory is hot. Meant once per window; flush_ns says what it cost.
 */
#define VTIER_TDP_FLUSH_TLB	_BITUL(1)

/* vtier_tdp_probe.result */
#define VTIER_TDP_OLD		0	/* present, not accessed since last cleared */
#define VTIER_TDP_YOUNG		1	/* present, accessed (and now cleared) */
/* nothing at that level: unmapped, or under a huge leaf without VTIER_TDP_HUGE_LEAVES */
#define VTIER_TDP_ABSENT	2
#define VTIER_TDP_NOSLOT	3	/* the gpa lies in no memslot: not tested */

/* vtier_tdp_memslot.flags */
#define VTIER_TDP_SLOT_READONLY	_BITUL(0)
#define VTIER_TDP_SLOT_INTERNAL	_BITUL(1)	/* KVM-private slot (APIC page, TSS...) */

struct vtier_tdp_attach {
	__u32 abi_version;
	__s32 vm_fd;		/* a KVM VM fd in the caller's fd table */
	__u32 flags;		/* must be 0 */
	__u32 pad;
};

struct vtier_tdp_info {
	__u32 abi_version;
	__u32 format;		/* VTIER_TDP_FORMAT_* */
	__u32 levels;		/* 4 or 5 */
	__u32 features;		/* VTIER_TDP_F_* */
	__u32 accessed_bit;	/* bit number of A in an entry */
	__u32 max_batch;	/* VTIER_TDP_MAX_BATCH */
	__u32 max_scan_checks;	/* VTIER_TDP_MAX_SCAN_CHECKS */
	__u32 nr_memslots;	/* address space 0, including internal slots */
	__u64 leaves[VTIER_TDP_MAX_LEVELS];	/* present leaf entries per level, now */
	__u32 leaves_truncated;	/* census stopped at VTIER_TDP_MAX_SCAN_CHECKS * 16 entries */
	__u32 pad;
	/* version 2; the totals count since ATTACH on this file */
	__u64 root_cookie;	/* the root walked now; see vtier_tdp_sample.root_cookie */
	__u64 nr_flushes;	/* VTIER_TDP_FLUSH_TLB flushes done */
	__u64 flush_ns;		/* time spent in them */
	__u64 nr_cleared;	/* accessed bits found set and cleared, all levels */
	__u64 nr_marked;	/* host folios marked young (young leaves cleared) */
	__u64 nr_yields;	/* times a call dropped mmu_lock to bound its hold */
};

struct vtier_tdp_memslot {
	__u64 gpa;
	__u64 size;
	__u64 hva;		/* userspace_addr in the VMM */
	__u32 id;		/* KVM slot id */
	__u32 flags;		/* VTIER_TDP_SLOT_* */
};

struct vtier_tdp_memslots {
	__u32 abi_version;
	__u32 max;		/* capacity of slots[] */
	__u32 count;		/* out: number of slots (may exceed max; then max are filled) */
	__u32 pad;
	__u64 slots;		/* user pointer to struct vtier_tdp_memslot[max], sorted by gpa */
};

struct vtier_tdp_probe {
	__u64 gpa;
	__u8 level;
	__u8 result;		/* out: VTIER_TDP_OLD/YOUNG/ABSENT/NOSLOT */
	__u8 pad[6];
};

struct vtier_tdp_sample {
	__u32 abi_version;
	__u32 n;		/* number of probes, 1..VTIER_TDP_MAX_BATCH */
	__u64 probes;		/* user pointer: struct vtier_tdp_probe[n], in/out */
	__u64 checks[VTIER_TDP_MAX_LEVELS];	/* out: bits tested, per level */
	__u32 nr_noslot;	/* out: probes outside every memslot */
	__u32 flags;		/* VTIER_TDP_HUGE_LEAVES, VTIER_TDP_FLUSH_TLB */
	/* version 2, all out */
	__u64 root_cookie;	/* root walked (at the end of the call); 0: none */
	__u64 flush_ns;		/* time in kvm_flush_remote_tlbs; 0: no flush */
	__u32 nr_cleared;	/* accessed bits found set and cleared */
	__u32 nr_marked;	/* host folios marked young */
	__u32 nr_yields;	/* mmu_lock drops */
	__u32 pad;
};

/*
 * vtier_tdp_sample.root_cookie (and INFO's, SCAN's): names the TDP MMU root
 * the call walked. 0 while the VM has no root; otherwise it starts at 1 per
 * open file and changes whenever KVM has replaced the root since this file's
 * previous call (a memslot deleted or moved, a fast zap, ...): the new root's
 * entries start with their accessed bits set, so a window that saw a change
 * reads everything mapped as young.
 */

/*
 * SCAN visits [start, end) at @level. Entries at levels in (level, skip_from]
 * that lie wholly inside [start, end) are tested and cleared, and their subtree
 * is skipped when old. At @level every present entry is tested and cleared and
 * the young ones are written to young[] as (entry gpa | level). Work is bounded:
 * the call stops after max_checks tests or when young[] is full, and sets
 * @next to where the walk stopped (== end when done). Continue with start = next.
 */
struct vtier_tdp_scan {
	__u32 abi_version;
	__u32 level;
	__u32 skip_from;	/* >= level; == level: no skipping */
	__u32 max_checks;	/* 0: VTIER_TDP_MAX_SCAN_CHECKS; at most that */
	__u64 start;
	__u64 end;		/* exclusive */
	__u64 young;		/* user pointer to __u64[max_young] */
	__u32 max_young;
	__u32 nr_young;		/* out */
	__u64 next;		/* out */
	__u64 checks[VTIER_TDP_MAX_LEVELS];	/* out: bits tested, per level */
	__u32 flags;		/* VTIER_TDP_HUGE_LEAVES, VTIER_TDP_FLUSH_TLB */
	__u32 pad;
	/* version 2, all out: as in struct vtier_tdp_sample */
	__u64 root_cookie;
	__u64 flush_ns;
	__u32 nr_cleared;
	__u32 nr_marked;
	__u32 nr_yields;
	__u32 pad2;
};

#define VTIER_TDP_IOC_MAGIC	0xB7
#define VTIER_TDP_ATTACH	_IOW(VTIER_TDP_IOC_MAGIC, 1, struct vtier_tdp_attach)
#define VTIER_TDP_INFO		_IOWR(VTIER_TDP_IOC_MAGIC, 2, struct vtier_tdp_info)
#define VTIER_TDP_MEMSLOTS	_IOWR(VTIER_TDP_IOC_MAGIC, 3, struct vtier_tdp_memslots)
#define VTIER_TDP_SAMPLE	_IOWR(VTIER_TDP_IOC_MAGIC, 4, struct vtier_tdp_sample)
#define VTIER_TDP_SCAN		_IOWR(VTIER_TDP_IOC_MAGIC, 5, struct vtier_tdp_scan)

/* Version 1 sizes and numbers (without the "version 2" fields). */
#define VTIER_TDP_INFO_SIZE_V1		80
#define VTIER_TDP_SAMPLE_SIZE_V1	64
#define VTIER_TDP_SCAN_SIZE_V1		104
#define VTIER_TDP_IOWR_V1(nr, size) \
	_IOC(_IOC_READ | _IOC_WRITE, VTIER_TDP_IOC_MAGIC, nr, size)
#define VTIER_TDP_INFO_V1	VTIER_TDP_IOWR_V1(2, VTIER_TDP_INFO_SIZE_V1)
#define VTIER_TDP_SAMPLE_V1	VTIER_TDP_IOWR_V1(4, VTIER_TDP_SAMPLE_SIZE_V1)
#define VTIER_TDP_SCAN_V1	VTIER_TDP_IOWR_V1(5, VTIER_TDP_SCAN_SIZE_V1)

#endif
