#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpus of fuzz_handoff into the directory given: valid
and broken hand-off messages as QEMU would send them (header, fd count
byte, payload), built here so that no binary file lives in git."""

import os
import struct
import sys

MAGIC = 0x4F485456
HELLO, POLICY, MIGRATION, RANGES = 1, 4, 6, 8


def msg(mtype, payload, nfds=0, size=None, magic=MAGIC, version=1):
    size = len(payload) if size is None else size
    return struct.pack("<IHHII", magic, version, mtype, size, 7) + bytes([nfds]) + payload


def hello(n_ranges=1, profile=b"", flags=0x8 | 0x4, size=64 << 20, page=4096,
          backend=b"mem0", generation=1):
    fixed = struct.pack("<IIQQQQQQQII16s64s64s", flags, n_ranges, size, page,
                        0x7F0000000000, 0, 0x1FF, 0x17C, generation, 1234,
                        len(profile), b"\x11" * 16, b"vm0", backend)
    ranges = b"".join(struct.pack("<QQQ", i << 30, i * (16 << 20), 16 << 20)
                      for i in range(n_ranges))
    return fixed + ranges + profile


def profile(size=64 << 20, shift=21):
    n = (size + (1 << shift) - 1) >> shift
    return struct.pack("<IHBBQII", 0x46505456, 1, shift, 0, size, n, 0) + bytes(range(n))


def policy(mode=2, flags=0xF, tiers=b"dram,lz4"):
    return struct.pack("<IIQQII128s", mode, flags, 1 << 30, 64 << 20, 500, 0, tiers)


seeds = {
    "hello": msg(HELLO, hello(), nfds=2),
    "hello-profile": msg(HELLO, hello(n_ranges=2, profile=profile()), nfds=2),
    "hello-reconnect": msg(HELLO, hello(flags=0x9, generation=5), nfds=2),
    "hello-no-fds": msg(HELLO, hello()),
    "hello-truncated": msg(HELLO, hello(), nfds=2)[:-9],
    "hello-range-outside": msg(HELLO, hello(n_ranges=5, size=32 << 20), nfds=2),
    "hello-huge-count": msg(HELLO, hello()[:4] + struct.pack("<I", 0xFFFFFFFF) + hello()[8:], nfds=2),
    "policy": msg(POLICY, policy()),
    "policy-bad-tiers": msg(POLICY, policy(tiers=b"dram;x")),
    "migration": msg(MIGRATION, struct.pack("<II", 1, 0)),
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
}

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
