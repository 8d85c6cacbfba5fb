/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vtier hand-off protocol: QEMU gives a memory backend's memfd and a
 * userfaultfd registered on its mapping to a tiering agent, then talks to
 * the agent about stats, policy and live migration over the same socket.
 *
 * The agent listens on a unix stream socket; QEMU connects (and reconnects
 * after the agent went away, handing the same fds over again). Every
 * message is a struct vtier_handoff_hdr followed by hdr.size payload bytes.
 * Integers are in host byte order: both ends run on the same host.
 *
 * This header is the single source of the ABI. QEMU carries a byte
 * identical copy as include/system/vtier-handoff.h; docs live in
 * docs/abi-handoff.md. Changes are additive: one that extends a message
 * behind a flag of that message (VTIER_STATS_F_TIER_V2, VTIER_STATS_F_TCO,
 * VTIER_STATS_F_MIGRATION, VTIER_POLICY_F_DRAM_MIN)
 * keeps the version, others bump VTIER_HANDOFF_VERSION; a receiver refuses
 * versions it does not know.
 */
#ifndef VTIER_HANDOFF_H
#define VTIER_HANDOFF_H

#include <stdint.h>

#define VTIER_HANDOFF_MAGIC         0x4f485456u /* "VTHO" in memory order */
#define VTIER_HANDOFF_VERSION       1

/* Upper bounds a receiver enforces before allocating anything. */
#define VTIER_HANDOFF_PAYLOAD_MAX   (9u << 20)
#define VTIER_HANDOFF_PROFILE_MAX   (8u << 20)
#define VTIER_HANDOFF_RANGES_MAX    64u
#define VTIER_HANDOFF_TIERS_MAX     16u
#define VTIER_HANDOFF_ID_LEN        64u
#define VTIER_HANDOFF_MESSAGE_LEN   128u
#define VTIER_HANDOFF_TIER_NAME_LEN 16u
#define VTIER_HANDOFF_TIER_LIST_LEN 128u
#define VTIER_TCO_HOUR_SAMPLES_MAX  60u     /* one a minute */

/* Number and order of the fds sent with SCM_RIGHTS along with a HELLO. */
#define VTIER_HANDOFF_HELLO_NFDS    2
#define VTIER_HANDOFF_FD_MEMFD      0
#define VTIER_HANDOFF_FD_UFFD       1

enum vtier_handoff_type {
    /* QEMU -> agent, with 2 fds: memfd, userfaultfd. First message. */
    VTIER_HANDOFF_HELLO = 1,
    /* agent -> QEMU: accepts or refuses the HELLO; seq echoes it. */
    VTIER_HANDOFF_HELLO_REPLY = 2,
    /* agent -> QEMU, any time after an accepting HELLO_REPLY. */
    VTIER_HANDOFF_STATS = 3,
    /* QEMU -> agent: tiering policy for this backend (set over QMP). */
    VTIER_HANDOFF_POLICY = 4,
    /* agent -> QEMU: result of a POLICY; seq echoes it. */
    VTIER_HANDOFF_POLICY_REPLY = 5,
    /* QEMU -> agent: live migration of this VM started / ended. */
    VTIER_HANDOFF_MIGRATION = 6,
    /* agent -> QEMU: the agent's latest hotness profile (opaque to QEMU). */
    VTIER_HANDOFF_PROFILE = 7,
    /* QEMU -> agent: the backend's guest-physical ranges changed. */
    VTIER_HANDOFF_RANGES = 8,
    /* agent -> QEMU: answers MIGRATION SEND_END; seq echoes it. */
    VTIER_HANDOFF_SENT = 9,
};

struct vtier_handoff_hdr {
    uint32_t magic;             /* VTIER_HANDOFF_MAGIC */
    uint16_t version;           /* VTIER_HANDOFF_VERSION */
    uint16_t type;              /* enum vtier_handoff_type */
    uint32_t size;              /* payload bytes after this header */
    uint32_t seq;               /* sender's counter; replies echo it */
};

/* vtier_handoff_hello.flags */
#define VTIER_HELLO_F_RECONNECT (1u << 0) /* fds were handed over before */
#define VTIER_HELLO_F_INCOMING  (1u << 1) /* RAM arrived by live migration */
#define VTIER_HELLO_F_UUID      (1u << 2) /* vm_uuid is meaningful */
#define VTIER_HELLO_F_WP        (1u << 3) /* uffd registered with MODE_WP */
#define VTIER_HELLO_F_PREPARE   (1u << 4) /* early, during precopy: see below */
#define VTIER_HELLO_F_EARLY     (1u << 5) /* PREPARE: hand over now if asked */
#define VTIER_HELLO_F_PRECOPY   (1u << 6) /* HELLO while RAM still arrives */
#define VTIER_HELLO_F_ZERO_MAP  (1u << 7) /* a third fd: the zero map, below */
#define VTIER_HELLO_F_NO_PROFILE (1u << 8) /* takes an empty PROFILE: below */
#define VTIER_HELLO_F_SEND_MAP  (1u << 9) /* a fourth fd: the send map, below */
#define VTIER_HELLO_F_KNOWN     0x3ffu

/*
 * VTIER_HELLO_F_ZERO_MAP: QEMU reads a zero map. With the memfd and the
 * userfaultfd comes a third fd (VTIER_HANDOFF_FD_ZERO_MAP): a memfd of
 * vtier_zero_map_bytes() bytes, zeroed, sealed F_SEAL_SHRINK | F_SEAL_GROW |
 * F_SEAL_SEAL, a bit per page of the backend (page i: bit i % 64 of u64 word
 * i / 64). While an outgoing migration reads, the agent sets a page's bit
 * only when the page is zeros and anything it holds later comes from a
 * guest write (which the dirty log sees): QEMU may send a page whose bit is
 * set as a zero page without reading it. A clear bit says nothing. Every
 * HELLO brings a fresh map; QEMU reads only the map of the agent that holds
 * the userfaultfd.
 */
#define VTIER_HANDOFF_ZERO_MAP_NFDS 3
#define VTIER_HANDOFF_FD_ZERO_MAP   2

static inline uint64_t vtier_zero_map_bytes(uint64_t size_bytes,
                                            uint64_t page_size)
{
    return (size_bytes / page_size + 63) / 64 * 8;
}

/*
 * VTIER_HELLO_F_SEND_MAP (only with VTIER_HELLO_F_ZERO_MAP): QEMU reads a
 * send map too, a fourth fd (VTIER_HANDOFF_FD_SEND_MAP) made as the zero
 * map (same size, zeroed, same seals, same bit order). While an outgoing
 * migration reads, the agent sets a page's bit only when it will deliver
 * the page itself, to the destination's agent, before it answers MIGRATION
 * SEND_END. QEMU's migration does not send a page whose bit is set: on the
 * destination the page stays a hole until that agent fills it. The agent
 * clears a page's bit before it fills the page (a fault), so a page the
 * guest writes afterwards is sent by the migration as dirty; the agent
 * still delivers what it marked (the migration's copy wins on the
 * destination). When the migration ends the agent clears every bit.
 *
 * If the migration skipped a page, QEMU sends MIGRATION SEND_END after its
 * last pass over guest RAM, with the guest stopped, and waits (a bounded
 * time, VTIER_SEND_END_TIMEOUT_MS) for SENT with the same seq: status 0
 * when every page the agent marked reached the destination's agent, else a
 * negative errno and a message, and the migration fails (the guest keeps
 * running here, with all its pages). The migration fails too when the
 * agent's connection ends after pages were skipped: its successor gets a
 * fresh map, and what the lost agent marked would be lost.
 */
#define VTIER_HANDOFF_SEND_MAP_NFDS 4
#define VTIER_HANDOFF_FD_SEND_MAP   3
#define VTIER_SEND_END_TIMEOUT_MS   10000u

/*
 * VTIER_HELLO_F_PREPARE: a destination's early HELLO, sent while an
 * incoming migration brings guest RAM in, once the source's profile has
 * arrived (it travels at the migration's setup): flags PREPARE | INCOMING
 * (| UUID), with 1 fd (the memfd, VTIER_HANDOFF_FD_MEMFD) and the source's
 * profile; hva, uffd_features and uffd_ioctls are 0. The agent may read the
 * memfd to prepare (store copies of the pages the profile says are cold)
 * and must neither write nor punch it; it sends no reply. The HELLO proper
 * (INCOMING, 2 fds) follows on the same connection once the guest runs;
 * nothing else comes before it. Closing the connection after a PREPARE
 * loses nothing: QEMU connects again and prepares again while RAM still
 * arrives, or sends the HELLO proper.
 */
#define VTIER_HANDOFF_PREPARE_NFDS 1

/*
 * VTIER_HELLO_F_EARLY, in a PREPARE: QEMU can hand the backend over now,
 * while RAM still arrives, if the agent asks. An agent that wants to place
 * guest RAM during the precopy answers the PREPARE with a HELLO_REPLY
 * (status 0, flag VTIER_HELLO_REPLY_F_EARLY, the PREPARE's seq); one that
 * does not answers nothing, as to any PREPARE. On that reply QEMU registers
 * its userfaultfd (MISSING | WP) and sends the HELLO proper at once, flags
 * INCOMING | WP | PRECOPY (| UUID), 2 fds, with the PREPARE's profile, and
 * the agent answers it as any HELLO. From then on the incoming migration's
 * reads and writes of guest RAM fault to the agent like a vCPU's: the agent
 * serves them (a write into a page it evicted gets the stored page first,
 * then overwrites it; a write racing its write-protection keeps its page).
 * VTIER_HELLO_F_PRECOPY: the guest does not run yet; QEMU sends MIGRATION
 * ARRIVED (after the HELLO_REPLY) once it does. A reconnect before that is
 * a HELLO with RECONNECT | INCOMING | WP | PRECOPY and no PREPARE; after
 * it, without PRECOPY. A refused early HELLO is not offered again: QEMU
 * takes its registration back and hands over as before, with a PREPARE
 * without EARLY and the HELLO proper once the guest's RAM is all there.
 */

/* Where a piece of the backend appears in guest-physical address space. */
struct vtier_handoff_range {
    uint64_t gpa;
    uint64_t offset;            /* byte offset into the backend */
    uint64_t size;
};

/*
 * Followed by n_ranges struct vtier_handoff_range, then profile_size bytes
 * of hotness profile (the one migrated from the source, on a destination).
 */
struct vtier_handoff_hello {
    uint32_t flags;             /* VTIER_HELLO_F_* */
    uint32_t n_ranges;          /* <= VTIER_HANDOFF_RANGES_MAX */
    uint64_t size_bytes;        /* backend size, a multiple of page_size */
    uint64_t page_size;         /* backend page size in bytes */
    uint64_t hva;               /* mapping start in QEMU (uffd addresses) */
    uint64_t fd_offset;         /* memfd offset that hva maps */
    uint64_t uffd_features;     /* features QEMU got from UFFDIO_API */
    uint64_t uffd_ioctls;       /* ioctls UFFDIO_REGISTER returned */
    uint64_t generation;        /* 1 on first hand-off, +1 per reconnect */
    uint32_t qemu_pid;
    uint32_t profile_size;      /* <= VTIER_HANDOFF_PROFILE_MAX */
    uint8_t vm_uuid[16];
    char vm_name[VTIER_HANDOFF_ID_LEN];     /* NUL-terminated, may be "" */
    char backend_id[VTIER_HANDOFF_ID_LEN];  /* NUL-terminated, not "" */
};

/*
 * Followed by n_ranges struct vtier_handoff_range: the complete new list,
 * sent after an accepted HELLO whenever it differs from the last one sent
 * (a DIMM plugged or unplugged, a remap). Zero ranges: not mapped.
 */
struct vtier_handoff_ranges {
    uint32_t n_ranges;          /* <= VTIER_HANDOFF_RANGES_MAX */
    uint32_t reserved;          /* 0 */
};

/* vtier_handoff_hello_reply.flags */
#define VTIER_HELLO_REPLY_F_EARLY (1u << 0) /* to a PREPARE: hand over now */
#define VTIER_HELLO_REPLY_F_KNOWN 0x1u

struct vtier_handoff_hello_reply {
    int32_t status;             /* 0: accepted; negative errno: refused */
    uint32_t flags;             /* VTIER_HELLO_REPLY_F_*, else 0 */
    char message[VTIER_HANDOFF_MESSAGE_LEN];    /* NUL-terminated */
};

struct vtier_handoff_tier {
    char name[VTIER_HANDOFF_TIER_NAME_LEN];     /* NUL-terminated, not "" */
    uint64_t bytes;             /* guest bytes currently in this tier */
};

/*
 * A tier entry of a STATS report with VTIER_STATS_F_TIER_V2 set. It starts
 * like struct vtier_handoff_tier (resident_bytes is the v1 "bytes").
 * Compression ratio of a tier: stored_bytes / compressed_bytes.
 */
struct vtier_handoff_tier_v2 {
    char name[VTIER_HANDOFF_TIER_NAME_LEN];     /* NUL-terminated, not "" */
    uint64_t resident_bytes;    /* guest bytes currently in this tier */
    uint64_t stored_bytes;      /* uncompressed guest bytes the tier holds */
    uint64_t compressed_bytes;  /* host bytes the tier uses for them */
    uint64_t pages_evicted;     /* pages moved into this tier, ever */
    uint64_t pages_faulted_back; /* pages served back from it on faults */
    uint64_t fault_latency_p50_ns;  /* fault served from this tier, 0: none */
    uint64_t fault_latency_p99_ns;
};

/* vtier_handoff_stats.flags */
#define VTIER_STATS_F_TIER_V2   (1u << 0) /* entries are tier_v2, not tier */
#define VTIER_STATS_F_TCO       (1u << 1) /* a TCO block follows the tiers */
#define VTIER_STATS_F_MIGRATION (1u << 2) /* a migration block follows, last */
#define VTIER_STATS_F_KNOWN     0x7u

/* vtier_handoff_tco_tier.kind */
enum vtier_tco_tier_kind {
    VTIER_TCO_TIER_NUMA = 0,        /* a NUMA node's memory */
    VTIER_TCO_TIER_COMPRESSED = 1,  /* a compressed tier */
};

/*
 * One tier of the VM's memory TCO report (VTIER_STATS_F_TCO). Money is in
 * nano-USD (1e-9 USD), ratios and percentages in thousandths.
 */
struct vtier_handoff_tco_tier {
    char name[VTIER_HANDOFF_TIER_NAME_LEN];     /* NUL-terminated, not "" */
    uint32_t kind;              /* enum vtier_tco_tier_kind */
    uint32_t ratio_milli;       /* compression ratio x 1000 (1000: none) */
    uint64_t bytes;             /* the VM's guest bytes on the tier now */
    uint64_t bytes_hour_avg;    /* average over the last hour's samples */
    uint64_t bytes_hour_max;    /* maximum over the same */
    uint64_t latency_ns;        /* access (NUMA) or fault (compressed) */
    uint64_t price_nusd_per_gib;    /* per GiB of guest data on the tier */
    uint64_t cost_nusd_per_hour;    /* bytes x price, per hour */
    uint64_t cost_hour_avg_nusd_per_hour;   /* the same over the last hour */
};

/*
 * The VM's memory TCO report (VTIER_STATS_F_TCO), after the tier entries,
 * followed by n_tiers struct vtier_handoff_tco_tier. It describes the whole
 * VM (every backend it handed over, and memory it did not), as of the
 * agent's last profiling window.
 */
struct vtier_handoff_tco {
    uint64_t windows;           /* profiling windows so far */
    uint64_t bytes;             /* guest bytes on all tiers: sum of tiers */
    uint64_t cost_nusd_per_hour;
    uint64_t cost_hour_avg_nusd_per_hour;
    uint64_t all_dram_nusd_per_hour;    /* the same bytes on the fastest tier */
    int64_t saving_nusd_per_month;      /* all-DRAM cost - cost, x 730 h */
    uint64_t hot_set_bytes;
    uint64_t windows_since_phase_change;    /* <= windows */
    uint64_t phase_changes;             /* <= windows */
    int32_t saving_pct_milli;   /* % of the all-DRAM cost x 1000, <= 100000 */
    uint32_t fault_time_pct_milli;      /* % of one vCPU's time x 1000 */
    uint32_t numa_extra_latency_pct_milli;  /* % of tier 0's latency x 1000 */
    uint32_t tco_alpha_milli;   /* the policy's alpha x 1000, <= 1000 */
    uint32_t hour_samples;      /* <= VTIER_TCO_HOUR_SAMPLES_MAX */
    uint32_t n_tiers;           /* <= VTIER_HANDOFF_TIERS_MAX */
    char placement[VTIER_HANDOFF_TIER_NAME_LEN];    /* NUL-terminated */
};

/* vtier_handoff_migration_stats.state: the agent's view of the VM */
enum vtier_migration_state {
    VTIER_MIGRATION_STATE_NONE = 0,     /* no migration in progress */
    VTIER_MIGRATION_STATE_OUTGOING = 1, /* source: started, not ended yet */
    /* destination: placing from the source's profile */
    VTIER_MIGRATION_STATE_PLACING = 2,
};

/*
 * The VM's live migration as the agent sees it (VTIER_STATS_F_MIGRATION),
 * last in a STATS report. It describes the whole VM, as of the agent's last
 * profiling window. Counters count since the agent took the VM. (Not to be
 * confused with struct vtier_handoff_migration, the MIGRATION message.)
 */
struct vtier_handoff_migration_stats {
    uint32_t state;             /* enum vtier_migration_state */
    uint32_t reserved;          /* 0 */
    uint64_t started;           /* outgoing migrations */
    uint64_t completed;         /* ... that completed */
    uint64_t failed;            /* ... that failed or were cancelled */
    uint64_t extra_bytes;       /* source: memory the migration holds now */
    uint64_t extra_peak_bytes;  /* ... the most of it, this or the last one */
    uint64_t extra_bound_bytes; /* ... the policy's bound, 0: none */
    uint64_t promotions_held;   /* promotions not started while outgoing */
    uint64_t profiles_seeded;   /* destination: profiles it was seeded from */
    uint64_t profiles_refused;  /* ... refused (garbled, foreign) */
    uint64_t plan_chunks;       /* ... chunks the placement still moves */
};

/*
 * Followed by n_tiers struct vtier_handoff_tier, or with
 * VTIER_STATS_F_TIER_V2 by n_tiers struct vtier_handoff_tier_v2; then, with
 * VTIER_STATS_F_TCO, by struct vtier_handoff_tco and its tiers; then, with
 * VTIER_STATS_F_MIGRATION, by struct vtier_handoff_migration_stats.
 */
struct vtier_handoff_stats {
    uint64_t agent_time_ns;     /* agent's CLOCK_MONOTONIC at the report */
    uint64_t faults_served;     /* userfaults resolved since first HELLO */
    uint64_t promotions;        /* pages moved to a faster tier */
    uint64_t demotions;         /* pages moved to a slower tier */
    uint64_t compressed_bytes;  /* host bytes used by compressed copies */
    uint32_t n_tiers;           /* <= VTIER_HANDOFF_TIERS_MAX */
    uint32_t flags;             /* VTIER_STATS_F_* */
};

enum vtier_policy_mode {
    VTIER_POLICY_MODE_OFF = 0,
    VTIER_POLICY_MODE_OBSERVE = 1,
    VTIER_POLICY_MODE_AUTO = 2,
};

/* vtier_handoff_policy.flags: which optional fields are set */
#define VTIER_POLICY_F_DRAM_LIMIT   (1u << 0)
#define VTIER_POLICY_F_TCO_ALPHA    (1u << 1)
#define VTIER_POLICY_F_MOVE_BUDGET  (1u << 2)
#define VTIER_POLICY_F_TIERS        (1u << 3)
#define VTIER_POLICY_F_DRAM_MIN     (1u << 4) /* vtier_handoff_policy_min follows */
#define VTIER_POLICY_F_WEIGHT       (1u << 5)
#define VTIER_POLICY_F_KNOWN        0x3fu
#define VTIER_POLICY_WEIGHT_MAX     10000u

struct vtier_handoff_policy {
    uint32_t mode;              /* enum vtier_policy_mode */
    uint32_t flags;             /* VTIER_POLICY_F_* */
    uint64_t dram_limit_bytes;
    uint64_t move_budget_bytes; /* per profiling window */
    uint32_t tco_alpha_milli;   /* TierScape alpha x 1000 */
    uint32_t weight;            /* F_WEIGHT: 1..VTIER_POLICY_WEIGHT_MAX, else 0 */
    char tiers[VTIER_HANDOFF_TIER_LIST_LEN];    /* "a,b,c", NUL-terminated */
};

/*
 * With VTIER_POLICY_F_DRAM_MIN the POLICY is struct vtier_handoff_policy
 * then this (168 bytes); without it, the policy alone (160 bytes).
 */
struct vtier_handoff_policy_min {
    uint64_t dram_min_bytes;    /* DRAM kept for the VM when contended */
};

struct vtier_handoff_policy_reply {
    int32_t status;             /* 0 or negative errno */
    uint32_t reserved;          /* 0 */
    char message[VTIER_HANDOFF_MESSAGE_LEN];    /* NUL-terminated */
};

enum vtier_migration_event {
    VTIER_MIGRATION_START = 1,      /* outgoing migration is set up */
    VTIER_MIGRATION_COMPLETED = 2,  /* source: the guest now runs elsewhere */
    VTIER_MIGRATION_FAILED = 3,     /* failed or cancelled; guest stays */
    VTIER_MIGRATION_ARRIVED = 4,    /* destination: the guest runs here */
    VTIER_MIGRATION_SEND_END = 5,   /* source: last pass done; answer SENT */
};

struct vtier_handoff_migration {
    uint32_t event;             /* enum vtier_migration_event */
    uint32_t reserved;          /* 0 */
};

/* SENT payload (VTIER_HELLO_F_SEND_MAP). */
struct vtier_handoff_sent {
    int32_t status;             /* 0: all delivered, or negative errno */
    uint32_t reserved;          /* 0 */
    uint64_t pages;             /* pages delivered in this migration */
    char message[VTIER_HANDOFF_MESSAGE_LEN];    /* NUL-terminated */
};

/*
 * PROFILE payload: opaque to QEMU, 1..VTIER_HANDOFF_PROFILE_MAX bytes. The
 * format vtier agents write is this header followed by n_chunks heat bytes
 * (0 cold .. 255 hottest) for consecutive 1 << chunk_shift byte chunks of
 * the backend. To a QEMU whose HELLO said VTIER_HELLO_F_NO_PROFILE, the
 * agent may answer MIGRATION started with a PROFILE of 0 bytes: it has no
 * profile (its engine has no state), the migration carries none, and QEMU
 * stops waiting for one.
 */
#define VTIER_PROFILE_MAGIC     0x46505456u /* "VTPF" */
#define VTIER_PROFILE_VERSION   1

struct vtier_profile_v1 {
    uint32_t magic;             /* VTIER_PROFILE_MAGIC */
    uint16_t version;           /* VTIER_PROFILE_VERSION */
    uint8_t chunk_shift;        /* 12 (4 KiB) .. 30 (1 GiB) */
    uint8_t reserved;           /* 0 */
    uint64_t size_bytes;        /* backend size the profile describes */
    uint32_t n_chunks;          /* ceil(size_bytes / (1 << chunk_shift)) */
    uint32_t reserved2;         /* 0 */
};

_Static_assert(sizeof(struct vtier_handoff_hdr) == 16, "hdr ABI");
_Static_assert(sizeof(struct vtier_handoff_range) == 24, "range ABI");
_Static_assert(sizeof(struct vtier_handoff_hello) == 216, "hello ABI");
_Static_assert(sizeof(struct vtier_handoff_ranges) == 8, "ranges ABI");
_Static_assert(sizeof(struct vtier_handoff_hello_reply) == 136, "reply ABI");
_Static_assert(sizeof(struct vtier_handoff_tier) == 24, "tier ABI");
_Static_assert(sizeof(struct vtier_handoff_tier_v2) == 72, "tier v2 ABI");
_Static_assert(sizeof(struct vtier_handoff_stats) == 48, "stats ABI");
_Static_assert(sizeof(struct vtier_handoff_tco) == 112, "tco ABI");
_Static_assert(sizeof(struct vtier_handoff_tco_tier) == 80, "tco tier ABI");
_Static_assert(sizeof(struct vtier_handoff_migration_stats) == 88,
               "migration stats ABI");
_Static_assert(sizeof(struct vtier_handoff_policy) == 160, "policy ABI");
_Static_assert(sizeof(struct vtier_handoff_policy_min) == 8, "policy min ABI");
_Static_assert(sizeof(struct vtier_handoff_policy_reply) == 136,
               "policy reply ABI");
_Static_assert(sizeof(struct vtier_handoff_migration) == 8, "migration ABI");
_Static_assert(sizeof(struct vtier_handoff_sent) == 144, "sent ABI");
_Static_assert(sizeof(struct vtier_profile_v1) == 24, "profile ABI");

#endif /* VTIER_HANDOFF_H */
