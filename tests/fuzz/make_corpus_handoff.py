#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpus of fuzz_handoff into the directory given: valid
and broken hand-off messages as QEMU would send them (header, fd count
byte, payload), built here so that no binary file lives in git."""

import os
import struct
import sys

MAGIC = 0x4F485456
HELLO, POLICY, MIGRATION, RANGES, SENT = 1, 4, 6, 8, 9
# HELLO flags: WP | UUID, ZERO_MAP, SEND_MAP, RECONNECT, NO_PROFILE
WP_UUID, ZERO_MAP, SEND_MAP, RECONNECT, NO_PROFILE = 0xC, 0x80, 0x200, 0x1, 0x100


def msg(mtype, payload, nfds=0, size=None, magic=MAGIC, version=1):
    size = len(payload) if size is None else size
    return struct.pack("<IHHII", magic, version, mtype, size, 7) + bytes([nfds]) + payload


def hello(n_ranges=1, profile=b"", flags=0x8 | 0x4, size=64 << 20, page=4096,
          backend=b"mem0", generation=1, hva=0x7F0000000000, uffd=(0x1FF, 0x17C)):
    fixed = struct.pack("<IIQQQQQQQII16s64s64s", flags, n_ranges, size, page,
                        hva, 0, uffd[0], uffd[1], generation, 1234,
                        len(profile), b"\x11" * 16, b"vm0", backend)
    ranges = b"".join(struct.pack("<QQQ", i << 30, i * (16 << 20), 16 << 20)
                      for i in range(n_ranges))
    return fixed + ranges + profile


def profile(size=64 << 20, shift=21):
    n = (size + (1 << shift) - 1) >> shift
    return struct.pack("<IHBBQII", 0x46505456, 1, shift, 0, size, n, 0) + bytes(range(n))


def policy(mode=2, flags=0xF, tiers=b"dram,lz4", weight=0, dram_min=None):
    """A POLICY; with flag 0x10 (dram min) the u64 dram min follows (168 bytes),
    @dram_min says what follows regardless (None: nothing), so that the size can lie."""
    body = struct.pack("<IIQQII128s", mode, flags, 1 << 30, 64 << 20, 500, weight, tiers)
    return body + (b"" if dram_min is None else struct.pack("<Q", dram_min))


def sent(status=0, pages=0, text=b"no page marked"):
    """SENT, the agent's answer to MIGRATION SEND_END: status, 0, pages, message[128]."""
    return struct.pack("<iIQ", status, 0, pages) + text[:128].ljust(128, b"\0")


def migration(event, reserved=0):
    return msg(MIGRATION, struct.pack("<II", event, reserved))


def stats(tco_tiers=2, total=None, flags=0x3, short=0, mig=(1, 0, 3, 1, 1)):
    """A STATS report: one v2 tier, then (flag 0x2) a TCO block and its tiers,
    then (flag 0x4) the migration block: state, reserved, started, completed, failed."""
    body = struct.pack("<QQQQQII", 1, 2, 3, 4, 5, 1, flags)
    body += struct.pack("<16s7Q", b"memory", 1 << 20, 1 << 20, 1 << 20, 0, 0, 0, 0)
    if flags & 0x2:
        body += struct.pack("<QQQQQqQQQiIIIII16s", 7, (3 << 20) if total is None else total,
                            150000, 150000, 200000, 36500000, 1 << 20, 3, 1, 25000, 0, 0,
                            500, 0, tco_tiers, b"tco")
        for i in range(tco_tiers):
            b = max(2 - i, 0) << 20
            body += struct.pack("<16sII7Q", b"dram" if i == 0 else b"lz4", min(i, 1), 1000 + 1500 * i,
                                b, b, 0, 100, 3000000000, 1, 1)
    if flags & 0x4:
        body += struct.pack("<II10Q", *mig, 5 << 20, 9 << 20, 32 << 20, 4, 0, 0, 0)
    return body[:len(body) - short]


seeds = {
    "hello": msg(HELLO, hello(), nfds=2),
    "hello-profile": msg(HELLO, hello(n_ranges=2, profile=profile()), nfds=2),
    "hello-reconnect": msg(HELLO, hello(flags=0x9, generation=5), nfds=2),
    # a destination's PREPARE (flags PREPARE | INCOMING | UUID, the memfd alone), then the HELLO proper
    "prepare-then-hello": msg(HELLO, hello(flags=0x16, profile=profile(), hva=0, uffd=(0, 0)), nfds=1) +
        msg(HELLO, hello(flags=0xE, profile=profile()), nfds=2),
    "prepare-two-fds": msg(HELLO, hello(flags=0x16, hva=0, uffd=(0, 0)), nfds=2),
    "prepare-wp": msg(HELLO, hello(flags=0x1E, hva=0, uffd=(0, 0)), nfds=1),
    # the early hand-off: a PREPARE that offers it (PREPARE | EARLY | INCOMING | UUID),
    # the HELLO during the precopy (INCOMING | UUID | WP | PRECOPY) with the profile,
    # its reconnect (| RECONNECT), then MIGRATION ARRIVED once the guest runs
    "prepare-early": msg(HELLO, hello(flags=0x36, profile=profile(), hva=0, uffd=(0, 0)), nfds=1),
    "prepare-early-then-precopy": msg(HELLO, hello(flags=0x36, profile=profile(), hva=0,
                                                   uffd=(0, 0)), nfds=1) +
        msg(HELLO, hello(flags=0x4E, profile=profile()), nfds=2),
    "precopy-hello": msg(HELLO, hello(flags=0x4E, profile=profile()), nfds=2),
    "precopy-reconnect": msg(HELLO, hello(flags=0x4F, profile=profile(), generation=2), nfds=2),
    "precopy-arrived": msg(HELLO, hello(flags=0x4E, profile=profile()), nfds=2) +
        msg(MIGRATION, struct.pack("<II", 4, 0)),
    "precopy-without-incoming": msg(HELLO, hello(flags=0x4C), nfds=2),
    "early-without-prepare": msg(HELLO, hello(flags=0x2E), nfds=2),
    "hello-unknown-flag": msg(HELLO, hello(flags=0x8C), nfds=2),
    "hello-no-fds": msg(HELLO, hello()),
    "hello-truncated": msg(HELLO, hello(), nfds=2)[:-9],
    "hello-range-outside": msg(HELLO, hello(n_ranges=5, size=32 << 20), nfds=2),
    "hello-huge-count": msg(HELLO, hello()[:4] + struct.pack("<I", 0xFFFFFFFF) + hello()[8:], nfds=2),
    "policy": msg(POLICY, policy()),
    "policy-bad-tiers": msg(POLICY, policy(tiers=b"dram;x")),
    # host sharing: the weight (flag 0x20) and the dram min after the policy (flag 0x10)
    "policy-share": msg(POLICY, policy(flags=0x3F, weight=300, dram_min=256 << 20)),
    "policy-weight": msg(POLICY, policy(flags=0x20, weight=10000)),
    "policy-dram-min": msg(POLICY, policy(flags=0x10, dram_min=0)),
    "policy-weight-zero": msg(POLICY, policy(flags=0x20, weight=0)),
    "policy-weight-over": msg(POLICY, policy(flags=0x20, weight=10001)),
    "policy-weight-no-flag": msg(POLICY, policy(flags=0x1, weight=100)),
    "policy-min-no-flag": msg(POLICY, policy(flags=0x1, dram_min=1 << 30)),
    "policy-flag-no-min": msg(POLICY, policy(flags=0x10)),
    "policy-min-short": msg(POLICY, policy(flags=0x10, dram_min=1 << 30)[:-3]),
    "policy-unknown-flag": msg(POLICY, policy(flags=0x40)),
    "stream-share": msg(HELLO, hello(), nfds=2) + msg(POLICY, policy(flags=0x30, weight=7, dram_min=2 << 20)) +
        msg(POLICY, policy(flags=0x0)),
    "migration": msg(MIGRATION, struct.pack("<II", 1, 0)),
    # every MIGRATION event (START, COMPLETED, FAILED, ARRIVED) and one past them
    "migration-completed": msg(MIGRATION, struct.pack("<II", 2, 0)),
    "migration-failed": msg(MIGRATION, struct.pack("<II", 3, 0)),
    "migration-arrived": msg(MIGRATION, struct.pack("<II", 4, 0)),
    "migration-unknown": msg(MIGRATION, struct.pack("<II", 6, 0)),
    # the source's last pass over RAM is done: QEMU waits for SENT
    "migration-send-end": migration(5),
    "migration-send-end-reserved": migration(5, 1),
    # the send map: a fourth fd, only with the zero map; wrong counts refused
    "hello-send-map": msg(HELLO, hello(flags=WP_UUID | ZERO_MAP | SEND_MAP), nfds=4),
    "hello-send-map-reconnect": msg(HELLO, hello(flags=WP_UUID | ZERO_MAP | SEND_MAP | RECONNECT |
                                                 NO_PROFILE, generation=3), nfds=4),
    "hello-send-map-three-fds": msg(HELLO, hello(flags=WP_UUID | ZERO_MAP | SEND_MAP), nfds=3),
    "hello-send-map-five-fds": msg(HELLO, hello(flags=WP_UUID | ZERO_MAP | SEND_MAP), nfds=5),
    "hello-send-map-alone": msg(HELLO, hello(flags=WP_UUID | SEND_MAP), nfds=4),
    "hello-zero-map-four-fds": msg(HELLO, hello(flags=WP_UUID | ZERO_MAP), nfds=4),
    "hello-flag-past-send-map": msg(HELLO, hello(flags=WP_UUID | ZERO_MAP | SEND_MAP | 0x400), nfds=4),
    "prepare-send-map": msg(HELLO, hello(flags=0x16 | ZERO_MAP | SEND_MAP, hva=0, uffd=(0, 0)), nfds=1),
    # a migration with the send map: started, the last pass, completed
    "stream-send-end": msg(HELLO, hello(flags=WP_UUID | ZERO_MAP | SEND_MAP), nfds=4) +
        migration(1) + migration(5) + migration(2),
    # SENT (agent -> QEMU): what the agent builds, and what QEMU refuses from QEMU's side
    "sent": msg(SENT, sent()),
    "sent-error": msg(SENT, sent(-110, 12345, b"the destination's agent did not answer")),
    "sent-positive-status": msg(SENT, sent(5, 1, b"x")),
    "sent-unterminated": msg(SENT, sent(0, 7, b"y" * 128)),
    "sent-long-text": msg(SENT, sent(0, 1)[:16] + b"z" * 300),
    "sent-short": msg(SENT, sent()[:20]),
    "migration-reserved": msg(MIGRATION, struct.pack("<II", 1, 7)),
    "stream": msg(HELLO, hello(), nfds=2) + msg(POLICY, policy()) + msg(MIGRATION, struct.pack("<II", 2, 0)),
    "bad-magic": msg(HELLO, hello(), nfds=2, magic=0x12345678),
    "bad-version": msg(HELLO, hello(), nfds=2, version=9),
    "oversized": msg(HELLO, b"", nfds=2, size=0xFFFFFFF0),
    "reply-type": msg(2, b"\0" * 136),
    "ranges": msg(RANGES, struct.pack("<II", 2, 0) + struct.pack("<QQQQQQ", 1 << 32, 0, 1 << 20,
                                                                  2 << 32, 1 << 20, 1 << 20)),
    "ranges-empty": msg(RANGES, struct.pack("<II", 0, 0)),
    "ranges-short": msg(RANGES, struct.pack("<II", 3, 0) + b"\0" * 24),
    # backend ids that must never become a path, and a HELLO cut short
    "hello-id-dotdot": msg(HELLO, hello(backend=b"../../x"), nfds=2),
    "hello-id-slash": msg(HELLO, hello(backend=b"a/b"), nfds=2),
    "hello-id-utf8": msg(HELLO, hello(backend=b"caf\xc3\xa9"), nfds=2),
    "hello-partial": msg(HELLO, hello(profile=profile()), nfds=2)[:4096],
    "hello-huge-size": msg(HELLO, hello(size=1 << 40), nfds=2),
    # STATS (agent -> QEMU) with the VM's TCO block, good and bad
    "stats-v2": msg(3, stats(flags=0x1)),
    "stats-tco": msg(3, stats()),
    "stats-tco-short": msg(3, stats(short=80)),
    "stats-tco-sum": msg(3, stats(total=4 << 20)),
    "stats-tco-count": msg(3, stats(tco_tiers=17)),
    # ... and the VM's migration block, last
    "stats-migration": msg(3, stats(flags=0x5)),
    "stats-tco-migration": msg(3, stats(flags=0x7)),
    "stats-migration-short": msg(3, stats(flags=0x7, short=8)),
    "stats-migration-state": msg(3, stats(flags=0x5, mig=(3, 0, 3, 1, 1))),
    "stats-migration-counts": msg(3, stats(flags=0x5, mig=(0, 0, 1, 1, 1))),
    "stats-migration-placing": msg(3, stats(flags=0x5, mig=(2, 0, 3, 1, 1))),
    "stats-unknown-flag": msg(3, stats(flags=0x9)),
}

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
