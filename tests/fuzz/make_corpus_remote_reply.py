#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpus of fuzz_remote_reply into the directory given:
replies of a memory server to each op (the harness puts the test namespace,
the request's seq and a tag on them when a record's flags say so: see
fuzz_remote_reply.c), broken and misdirected ones."""

import os
import struct
import sys

MAGIC = 0x4D525456
HELLO, PUT, GET, FREE, STAT = 1, 2, 3, 4, 5
TAG, NS_SEQ = 1, 2
OK = TAG | NS_SEQ


def frags(op, body, fmax=1400, status=0, **kw):
    n = max(1, -(-len(body) // fmax))
    out = []
    for i in range(n):
        part = body[i * fmax:(i + 1) * fmax]
        hdr = struct.pack("<IBBBB16sQIHHII", MAGIC, 1, kw.get("wire_op", op | 0x80), i, n,
                          b"\0" * 16, 0, len(body), len(part), status, i * fmax, 0)
        out.append(hdr + part + b"\0" * 16)
    return out


def recs(ds, flags=OK):
    return b"".join(struct.pack("<HB", len(d), flags) + d for d in ds)


def get_reply(items):
    ents = b"".join(struct.pack("<QHH", pid, st, len(blob)) for pid, st, blob in items)
    return struct.pack("<H", len(items)) + ents + b"".join(b for _, _, b in items)


def op_byte(op, jumbo=False):
    return bytes([(op - 1) | (8 if jumbo else 0)])


seeds = {
    "hello": op_byte(HELLO) + recs(frags(HELLO, struct.pack("<QQQ", 1 << 30, 0, 1 << 33))),
    "hello-eacces": op_byte(HELLO) + recs(frags(HELLO, b"", status=13)),
    "put": op_byte(PUT) + recs(frags(PUT, struct.pack("<HHH", 2, 0, 28))),
    "free": op_byte(FREE) + recs(frags(FREE, struct.pack("<HH", 1, 2))),
    "get-two": op_byte(GET) + recs(frags(GET, get_reply([(1, 0, b"a" * 4136),
                                                         (2, 2, b"")]))),
    "get-jumbo": op_byte(GET, True) + recs(frags(GET, get_reply([(1, 0, b"b" * 4136)]),
                                                 fmax=3968)),
    "get-reversed": op_byte(GET) + recs(frags(GET, get_reply([(7, 0, b"c" * 4136)]))[::-1]),
    "get-bad": op_byte(GET) + recs(frags(GET, get_reply([(1, 2, b"x")]))),
    "stat": op_byte(STAT) + recs(frags(STAT, struct.pack("<QQQQH4Q", 1, 2, 3, 4, 4, 5, 6, 7,
                                                         8))),
    "wrong-op": op_byte(PUT) + recs(frags(GET, get_reply([]))),
    "untagged": op_byte(STAT) + recs(frags(STAT, b"\0" * 66), NS_SEQ),
    "request": op_byte(GET) + recs(frags(GET, b"", wire_op=GET)),
}

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
