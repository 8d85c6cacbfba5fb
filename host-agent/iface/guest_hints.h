/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The agent's side of the guest hint channel (include/vtier/guest.h,
 * docs/abi-guest.md): set up the host's page of the region, read hint
 * records from the guest's ring, check each one, hand out the good ones and
 * count the rest by reason. No policy: the caller opens the region's file,
 * acts on the hints it gets, then commits.
 *
 * The region is read and written with pread/pwrite on its file, never
 * through a mapping: the file belongs to QEMU, which may shrink it at any
 * moment, and a load or store through a mapping past the new end would be
 * SIGBUS for the whole agent. A read past the end fails the channel instead:
 * from then on it reads and writes nothing, vt_ghint_error() says why, and
 * the caller detaches.
 *
 * The region is guest memory: the guest may change any byte of it at any
 * moment. Every record is copied once and only the copy is checked and
 * returned; the host's own state (consumer index, epoch, reclaim sequence)
 * lives in the channel and is written to the region, never read back from it.
 * A flooding guest is read at a capped rate (records per poll and per second,
 * discard bytes per second); what it writes beyond that waits in its own ring.
 */
#ifndef VTIER_IFACE_GUEST_HINTS_H
#define VTIER_IFACE_GUEST_HINTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vtier/guest.h>

#define VT_GHINT_ERR_LEN 160

/* Caps per VM; zero fields take the default. */
struct vt_ghint_limits {
	uint32_t max_records_per_poll;	/* records read per vt_ghint_poll(); default 256 */
	uint32_t records_per_sec;	/* refill of the record budget; default 4096 */
	uint32_t burst_records;		/* most records in the budget at once; default 1024 */
	uint64_t discard_bytes_per_sec;	/* FREE + INFLATE bytes accepted per s; default 1 GiB */
	uint64_t discard_burst_bytes;	/* most bytes in that budget; default 1 GiB */
};

/* A piece of guest RAM (guest-physical), as discovery found it. */
struct vt_ghint_ram {
	uint64_t gpa;
	uint64_t size;
};

/* A checked hint, host byte order. */
struct vt_ghint {
	uint16_t kind;		/* enum vtier_guest_kind */
	uint16_t flags;
	uint64_t gpa;
	uint64_t size_bytes;
	uint64_t arg;
};

/* Why a record was refused; every record read is accepted or counted here. */
enum vt_ghint_reject {
	VT_GHINT_R_SEQ,		/* seq is not the index it sits at: stale or torn slot */
	VT_GHINT_R_KIND,	/* unknown kind: skipped */
	VT_GHINT_R_UNWANTED,	/* a kind the host did not ask for (host flags) */
	VT_GHINT_R_FLAGS,	/* flags not defined for the kind */
	VT_GHINT_R_ALIGN,	/* gpa or size not 4 KiB aligned */
	VT_GHINT_R_SIZE,	/* size 0 or over VTIER_GUEST_RANGE_MAX */
	VT_GHINT_R_RANGE,	/* not inside one piece of guest RAM */
	VT_GHINT_R_ARG,		/* arg not valid for the kind */
	VT_GHINT_R_BALLOON,	/* DEFLATE of more than the guest has inflated */
	VT_GHINT_R_RATE,	/* FREE/INFLATE over the discard byte budget */
	VT_GHINT_R_CONTRADICTED,	/* host telemetry says otherwise */
	VT_GHINT_R_COUNT
};

struct vt_ghint_stats {
	uint64_t records;		/* records read from the ring */
	uint64_t accepted[VTIER_GUEST_KIND_MAX + 1];	/* by kind */
	uint64_t accepted_bytes[VTIER_GUEST_KIND_MAX + 1];
	uint64_t rejected[VT_GHINT_R_COUNT];	/* by reason */
	uint64_t bad_header;	/* polls that found no valid guest header */
	uint64_t bad_index;	/* polls whose producer index was beyond the ring */
	uint64_t skipped;	/* records dropped unread by a resync after bad_index */
	uint64_t deferred;	/* polls that left records for later (caps) */
	uint64_t balloon_bytes;	/* INFLATE minus DEFLATE accepted: the guest's claim */
};

struct vt_ghint_chan;

/*
 * Asked for each record that passed every other check: does host telemetry
 * contradict it (a COLD range the host saw accessed, a FREE range...)? True
 * refuses it (VT_GHINT_R_CONTRADICTED). Runs inside vt_ghint_poll().
 */
typedef bool (*vt_ghint_contradicts_fn)(void *opaque, const struct vt_ghint *hint);

/*
 * Take over the region of @size bytes (a power of 2 within
 * VTIER_GUEST_REGION_MIN..MAX) in the file @fd (the caller's, open until
 * vt_ghint_detach; a file shorter than @size is refused): write the host's page with
 * @host_flags (VTIER_GUEST_HOST_*, ACTIVE added), a new epoch, and a
 * consumer index equal to the guest's producer index, which acknowledges
 * whatever a previous agent left unread without acting on it. @ram is the
 * VM's guest RAM (1..64 pieces, each 4 KiB aligned, no overlap); @lim may be
 * NULL for the defaults; @now_ns starts the rate budgets (any clock, the
 * same in every call). Returns 0, or -EINVAL (arguments) or the read's
 * -errno (-ESTALE: the file is shorter) with @err set.
 */
int vt_ghint_attach(struct vt_ghint_chan **out, int fd, size_t size,
		    const struct vt_ghint_ram *ram, size_t n_ram,
		    const struct vt_ghint_limits *lim, uint32_t host_flags,
		    uint64_t now_ns, char *err, size_t err_len);

/*
 * Leave the region: clear the host's flags and acknowledge every record up to
 * the guest's producer index without acting on it, so that a guest waiting
 * for acks goes on. Call only after acting on every hint polled. NULL is fine.
 */
void vt_ghint_detach(struct vt_ghint_chan *ch);

/* Set the contradiction check (NULL: none). */
void vt_ghint_set_contradicts(struct vt_ghint_chan *ch, vt_ghint_contradicts_fn fn,
			      void *opaque);

/*
 * Read the records the guest published, at most @max and within the caps,
 * and put those that pass every check in @out. Returns how many. Records
 * read are done with: the next poll starts after them. The consumer index is
 * not published to the guest until vt_ghint_commit(): act on FREE and
 * INFLATE hints (discard) before that, never after.
 */
size_t vt_ghint_poll(struct vt_ghint_chan *ch, struct vt_ghint *out, size_t max,
		     uint64_t now_ns);

/* Publish the consumer index past every record polled, and a heartbeat. */
void vt_ghint_commit(struct vt_ghint_chan *ch);

/* Ask the guest to hold @pages 4 KiB pages in its balloon (0: give all back). */
void vt_ghint_set_balloon_target(struct vt_ghint_chan *ch, uint64_t pages);

const struct vt_ghint_stats *vt_ghint_stats(const struct vt_ghint_chan *ch);

/*
 * 0 while the region's file answers; else the -errno of the first access
 * that failed (-ESTALE: a read past the end of a file its owner shrank) with
 * @err (may be NULL) saying which. A failed channel polls nothing and writes
 * nothing: detach it.
 */
int vt_ghint_error(const struct vt_ghint_chan *ch, char *err, size_t err_len);

/* "seq", "kind", ... for stats output; "?" for a value out of range. */
const char *vt_ghint_reject_name(enum vt_ghint_reject r);

#endif /* VTIER_IFACE_GUEST_HINTS_H */
