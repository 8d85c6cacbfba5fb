#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpus of fuzz_guest_hints into the directory given: a
guest page and a ring as vtier_guest.ko would write them (see the layout in
fuzz_guest_hints.c), honest and broken, so that every check of
host-agent/iface/guest_hints.c is reached by some seed."""

import os
import struct
import sys

GUEST_MAGIC = 0x47475456
FREE, COLD, HOT, INFLATE, DEFLATE = 1, 2, 3, 4, 5
ALL = 0xF          # host asks for FREE, COLD, HOT and RECLAIM
MIB, GIB = 1 << 20, 1 << 30


def guest(prod, magic=GUEST_MAGIC, version=1, header_size=72):
    return struct.pack("<IHHIIIIQQQ3Q", magic, version, header_size, 0xF, prod, 1, 0,
                       0, 262144, 0, 0, 0, 0)


def rec(seq, kind, gpa, size, arg=0, flags=0):
    return struct.pack("<IHHQQQ", seq, kind, flags, gpa, size, arg)


def seed(records, host=ALL, polls=1, step=0, prod=None, **kw):
    """records: (kind, gpa, size, arg, flags[, seq]) tuples, seq defaults to the index."""
    ring = b""
    for i, r in enumerate(records):
        kind, gpa, size, arg, flags = r[:5]
        ring += rec(r[5] if len(r) > 5 else i, kind, gpa, size, arg, flags)
    n = len(records) if prod is None else prod
    return bytes([host, (polls - 1) | step << 3]) + guest(n, **kw) + ring


seeds = {
    "each-kind": seed([(FREE, 2 * MIB, 2 * MIB, 0, 0), (COLD, 4 * GIB, 4096, 30000, 1),
                       (HOT, 8192, 8192, 5, 0), (INFLATE, 64 * MIB, MIB, 1, 0),
                       (DEFLATE, 64 * MIB, MIB, 1, 0)]),
    "reject-each": seed([
        (FREE, 0, 4096, 0, 0, 77),             # seq
        (0, 0, 4096, 0, 0),                    # kind 0
        (9, 0, 4096, 0, 0),                    # kind unknown
        (FREE, 0, 4096, 0, 1),                 # flags
        (COLD, 0, 4096, 0, 2),                 # flags
        (FREE, 512, 4096, 0, 0),               # align gpa
        (FREE, 0, 4097, 0, 0),                 # align size
        (FREE, 0, 0, 0, 0),                    # size 0
        (COLD, 0, 2 * GIB, 0, 0),              # size over 1 GiB
        (FREE, 3 * GIB + 4096, 4096, 0, 0),    # in the hole
        (FREE, 5 * GIB - 4096, 8192, 0, 0),    # past the end
        ((FREE, (1 << 64) - 4096, 8192, 0, 0)),  # wraps
        (FREE, 0, 4096, 1, 0),                 # arg of FREE
        (INFLATE, 0, 4096, 0, 0),              # arg 0
        (INFLATE, 0, 4096, 2, 0),              # a request never made
        (DEFLATE, 0, 4096, 1, 0),              # nothing inflated
        (COLD, 4096, 4096, 0, 0),              # contradicted (odd page)
        (FREE, 0, GIB, 0, 0),                  # discard budget (256 MiB)
        (FREE, GIB, GIB, 0, 0),
    ]),
    "unwanted": seed([(HOT, 0, 4096, 0, 0), (FREE, 0, 4096, 0, 0), (COLD, 0, 4096, 0, 0)],
                     host=0x2),
    "bad-magic": seed([(FREE, 0, 4096, 0, 0)], magic=0x12345678),
    "bad-version": seed([(FREE, 0, 4096, 0, 0)], version=2),
    "short-header": seed([(FREE, 0, 4096, 0, 0)], header_size=8),
    "index-past-ring": seed([(FREE, 0, 4096, 0, 0)], prod=300, polls=2),
    "index-behind": seed([(FREE, 0, 4096, 0, 0)], prod=0xFFFFFFFF),
    "flood": seed([(COLD, (i % 64) * 8192, 4096, 0, 0) for i in range(256)], polls=8, step=1),
    "flood-free": seed([(FREE, i * 64 * MIB, 64 * MIB, 0, 0) for i in range(40)], polls=8,
                       step=20),
    "half-written": seed([(COLD, 0, 4096, 0, 0)], prod=5),
    "too-short": b"\x0f\x00" + guest(1)[:40],
}

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
