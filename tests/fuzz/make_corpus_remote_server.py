#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpus of fuzz_remote_server into the directory given:
requests of the test client (the harness puts its namespace, seq and tag on
them when a record's flags say so: see fuzz_remote_server.c), broken ones,
replays and garbage, built here so that no binary file lives in git."""

import os
import struct
import sys

MAGIC = 0x4D525456
HELLO, PUT, GET, FREE, STAT = 1, 2, 3, 4, 5
TAG, NS_SEQ, NEXT, FIX = 1, 2, 4, 8
REQ = TAG | NS_SEQ | NEXT          # a new request of the test client
MORE = TAG | NS_SEQ                # another fragment of the same request


def frags(op, body, fmax=1400, **kw):
    """The datagrams of one message (tag bytes left zero: the harness tags)."""
    n = max(1, -(-len(body) // fmax))
    out = []
    for i in range(n):
        part = body[i * fmax:(i + 1) * fmax]
        hdr = struct.pack("<IBBBB16sQIHHII", kw.get("magic", MAGIC), kw.get("version", 1),
                          kw.get("wire_op", op), kw.get("frag", i), kw.get("nfrags", n),
                          b"\0" * 16, 0, kw.get("body_len", len(body)),
                          kw.get("frag_len", len(part)), kw.get("status", 0),
                          kw.get("frag_off", i * fmax), kw.get("reserved", 0))
        out.append(hdr + part + b"\0" * 16)
    return out


def rec(dgram, flags):
    return struct.pack("<HB", len(dgram), flags) + dgram


def request(op, body, fmax=1400, order=None, **kw):
    ds = frags(op, body, fmax, **kw)
    order = order or range(len(ds))
    return b"".join(rec(ds[k], REQ if j == 0 else MORE) for j, k in enumerate(order))


def put(pages, blob_len=4136):
    ents = b"".join(struct.pack("<QH", p, blob_len) for p in pages)
    blobs = b"".join(bytes([p & 0xFF]) * blob_len for p in pages)
    return struct.pack("<H", len(pages)) + ents + blobs


def ids(pages):
    return struct.pack("<H", len(pages)) + b"".join(struct.pack("<Q", p) for p in pages)


seeds = {
    "hello-only": b"\x00",
    "put-get-free": b"\x00" + request(PUT, put([1])) + request(GET, ids([1, 2]))
    + request(FREE, ids([1, 1])) + request(STAT, b""),
    "put-two": b"\x00" + request(PUT, put([1, 2])) + request(GET, ids(list(range(8)))),
    "jumbo": b"\x01" + request(PUT, put([5]), fmax=3968) + request(GET, ids([5]), fmax=3968),
    "out-of-order": b"\x00" + request(PUT, put([3]), order=[2, 0, 1]),
    "over-cap": b"\x00" + b"".join(request(PUT, put([i])) for i in range(6)),
    "replay": b"\x00" + request(PUT, put([9])) + b"".join(
        rec(d, MORE) for d in frags(PUT, put([9]))),
    "expiry": b"\x00" + rec(frags(PUT, put([4]))[0], REQ) + rec(frags(PUT, put([4]))[1],
                                                                MORE | 0xF0),
    "dup-overlap": b"\x00" + rec(frags(PUT, put([4]))[0], REQ) + rec(frags(PUT, put([4]))[0], MORE)
    + rec(frags(PUT, put([4]), frag_off=1000)[1], MORE),
    "bye-after": b"\x08" + request(PUT, put([1, 2])) + rec(frags(PUT, put([3]))[0], REQ),
    "bye-before": b"\x10" + request(PUT, put([1])) + request(GET, ids([1])),
    "hijack": b"\x04" + request(GET, ids([1])),
    "hijacker-first": b"\x06" + request(GET, ids([1])),
    "no-hello": b"\x02" + request(PUT, put([1])),
    "untagged": b"\x00" + rec(frags(GET, ids([1]))[0], NS_SEQ | NEXT),
    "bad-fields": b"\x00" + b"".join(rec(frags(GET, ids([1]), **kw)[0], REQ) for kw in [
        {"magic": 1}, {"version": 2}, {"wire_op": 9}, {"wire_op": 0x83}, {"nfrags": 9}, {"frag": 3},
        {"reserved": 1}, {"status": 28}, {"body_len": 5000}, {"frag_off": 7},
        {"frag_len": 3}]),
    "bad-bodies": b"\x00" + request(GET, b"\x00\x00") + request(PUT, put([1])[:-1])
    + request(FREE, ids([1]) + b"\0") + request(STAT, b"x") + request(GET, ids(list(range(65)))),
    "oversize-blob": b"\x00" + request(PUT, put([1], blob_len=4161)),
    "garbage": b"\x00" + rec(bytes(range(256)) * 3, 0) + rec(b"\xff" * 5000, FIX | TAG)
    + rec(b"", 0) + rec(b"VTRM", FIX),
}

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
