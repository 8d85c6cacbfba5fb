/* SPDX-License-Identifier: GPL-2.0-or-later WITH Linux-syscall-note */
/*
 * Guest <-> host hint channel of vtier_guest.ko (guest) and vtierd (host):
 * a shared memory region, exposed to the guest as BAR 2 of a stock QEMU
 * ivshmem-plain PCI device and mapped by the agent from the same file.
 * Documented in docs/abi-guest.md.
 *
 * Layout (all integers little-endian, offsets from the start of the region):
 *   0x0000  struct vtier_guest_host   written by the host only
 *   0x1000  struct vtier_guest_guest  written by the guest only
 *   ring_offset                       ring_records x struct vtier_guest_hint,
 *                                     written by the guest only
 *
 * The guest is untrusted: it can write any byte of the region at any time,
 * the host's page included. The host never reads back what it wrote, copies
 * each guest field or record once before checking it, and acts on a record
 * only before it publishes a consumer index past it (see docs/abi-guest.md,
 * "What each side may trust").
 *
 * Changes are additive: new fields go into the reserved space and get a new
 * abi_version; a side refuses a version it does not know.
 */
#ifndef VTIER_GUEST_H
#define VTIER_GUEST_H

#include <linux/const.h>
#include <linux/types.h>

#define VTIER_GUEST_ABI_VERSION		1
#define VTIER_GUEST_HOST_MAGIC		0x48475456	/* "VTGH" in memory */
#define VTIER_GUEST_GUEST_MAGIC		0x47475456	/* "VTGG" in memory */

/* ivshmem-plain: Red Hat, Inc. vendor id, device id of "ivshmem" */
#define VTIER_GUEST_PCI_VENDOR		0x1af4
#define VTIER_GUEST_PCI_DEVICE		0x1110
#define VTIER_GUEST_PCI_BAR		2

#define VTIER_GUEST_HOST_OFFSET		0x0000
#define VTIER_GUEST_GUEST_OFFSET	0x1000
#define VTIER_GUEST_RING_OFFSET		0x2000	/* what the host writes in ring_offset */
#define VTIER_GUEST_REGION_MIN		0x4000	/* 16 KiB: 256 records */
#define VTIER_GUEST_REGION_MAX		0x4000000	/* 64 MiB */
#define VTIER_GUEST_RING_MAX		_BITUL(20)	/* records */

/* Hint ranges: 4 KiB aligned, 4 KiB .. 1 GiB long, whatever the guest's page size */
#define VTIER_GUEST_PAGE_SIZE		4096
#define VTIER_GUEST_RANGE_MAX		_BITULL(30)

/* vtier_guest_host.flags: what the host is doing now */
#define VTIER_GUEST_HOST_ACTIVE		_BITUL(0)	/* an agent polls the ring */
#define VTIER_GUEST_HOST_FREE		_BITUL(1)	/* wants FREE hints */
#define VTIER_GUEST_HOST_COLD		_BITUL(2)	/* wants COLD hints */
#define VTIER_GUEST_HOST_HOT		_BITUL(3)	/* wants HOT hints */
#define VTIER_GUEST_HOST_RECLAIM	_BITUL(4)	/* balloon_target_pages is meant */

/* vtier_guest_guest.flags: what the guest sends */
#define VTIER_GUEST_F_FREE		_BITUL(0)
#define VTIER_GUEST_F_COLD		_BITUL(1)
#define VTIER_GUEST_F_HOT		_BITUL(2)
#define VTIER_GUEST_F_RECLAIM		_BITUL(3)

/* vtier_guest_hint.kind */
enum vtier_guest_kind {
	/* free in the guest; the host may discard it until it acks the record */
	VTIER_GUEST_FREE = 1,
	/* not accessed in the guest for @arg ms; the host may demote it earlier */
	VTIER_GUEST_COLD = 2,
	/* accessed in the guest within @arg ms; advisory only */
	VTIER_GUEST_HOT = 3,
	/* taken into the balloon for reclaim_seq @arg; discardable until acked */
	VTIER_GUEST_INFLATE = 4,
	/* given back to the guest's allocator (reclaim_seq @arg); do not touch */
	VTIER_GUEST_DEFLATE = 5,
};

#define VTIER_GUEST_KIND_MAX		5

/* vtier_guest_hint.flags, COLD only: clean file cache the guest can drop */
#define VTIER_GUEST_HINT_CLEAN		_BITUL(0)

struct vtier_guest_host {
	__le32 magic;		/* VTIER_GUEST_HOST_MAGIC, stored last at attach */
	__le16 abi_version;	/* VTIER_GUEST_ABI_VERSION */
	__le16 header_size;	/* sizeof(struct vtier_guest_host) */
	__le32 flags;		/* VTIER_GUEST_HOST_* */
	__le32 ring_offset;	/* VTIER_GUEST_RING_OFFSET */
	__le32 ring_records;	/* power of 2, fits in the region */
	__le32 record_size;	/* sizeof(struct vtier_guest_hint) */
	__le32 cons;		/* records before this index are done (release) */
	__le32 epoch;		/* +1 at each agent attach */
	__le64 heartbeat;	/* +1 at each poll of the ring */
	__le64 balloon_target_pages;	/* 4 KiB pages the host asks the guest to hold */
	__le32 reclaim_seq;	/* +1 each time balloon_target_pages changes */
	__le32 max_records_per_sec;	/* the host's cap, for the guest to pace itself */
	__le64 reserved[2];	/* 0 */
};

struct vtier_guest_guest {
	__le32 magic;		/* VTIER_GUEST_GUEST_MAGIC, stored last at probe */
	__le16 abi_version;	/* VTIER_GUEST_ABI_VERSION */
	__le16 header_size;	/* sizeof(struct vtier_guest_guest) */
	__le32 flags;		/* VTIER_GUEST_F_* */
	__le32 prod;		/* records before this index are written (release) */
	__le32 epoch;		/* the host epoch the guest last saw */
	__le32 reclaim_seq_done;	/* last reclaim_seq the guest has acted on */
	__le64 balloon_pages;	/* 4 KiB pages in the guest's balloon now */
	__le64 ram_pages;	/* the guest's total RAM in 4 KiB pages */
	__le64 ring_full;	/* hints the guest dropped because the ring was full */
	__le64 reserved[3];	/* 0 */
};

struct vtier_guest_hint {
	__le32 seq;		/* the producer index it was written at */
	__le16 kind;		/* enum vtier_guest_kind */
	__le16 flags;		/* VTIER_GUEST_HINT_* allowed for the kind, else 0 */
	__le64 gpa;		/* guest-physical, VTIER_GUEST_PAGE_SIZE aligned */
	__le64 size_bytes;	/* multiple of VTIER_GUEST_PAGE_SIZE, <= RANGE_MAX */
	__le64 arg;		/* kind-specific, see enum vtier_guest_kind; FREE: 0 */
};

#ifdef __cplusplus
#define VTIER_GUEST_ASSERT static_assert
#else
#define VTIER_GUEST_ASSERT _Static_assert
#endif
VTIER_GUEST_ASSERT(sizeof(struct vtier_guest_host) == 72, "vtier_guest_host size");
VTIER_GUEST_ASSERT(__builtin_offsetof(struct vtier_guest_host, cons) == 24, "host.cons");
VTIER_GUEST_ASSERT(__builtin_offsetof(struct vtier_guest_host, heartbeat) == 32, "host.heartbeat");
VTIER_GUEST_ASSERT(__builtin_offsetof(struct vtier_guest_host, reclaim_seq) == 48,
		   "host.reclaim_seq");
VTIER_GUEST_ASSERT(sizeof(struct vtier_guest_guest) == 72, "vtier_guest_guest size");
VTIER_GUEST_ASSERT(__builtin_offsetof(struct vtier_guest_guest, prod) == 12, "guest.prod");
VTIER_GUEST_ASSERT(__builtin_offsetof(struct vtier_guest_guest, balloon_pages) == 24,
		   "guest.balloon_pages");
VTIER_GUEST_ASSERT(sizeof(struct vtier_guest_hint) == 32, "vtier_guest_hint size");
VTIER_GUEST_ASSERT(__builtin_offsetof(struct vtier_guest_hint, gpa) == 8, "hint.gpa");
VTIER_GUEST_ASSERT(__builtin_offsetof(struct vtier_guest_hint, arg) == 24, "hint.arg");
#undef VTIER_GUEST_ASSERT

#endif /* VTIER_GUEST_H */
