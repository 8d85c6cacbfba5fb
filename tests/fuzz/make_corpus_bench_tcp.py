#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpus of fuzz_bench_tcp into the directory given: a
connection's frames to make bench-remote's TCP baseline server (see
host-agent/tools/bench_remote_tcp.h): PUTs and GETs as the benchmark sends
them, then broken ones (an unknown op, a body that does not decode, a frame
over the bound, a bad pad byte, a short body)."""

import os
import struct
import sys

PUT, GET = 2, 3
BODY_MAX = 2 + 64 * (12 + 4096 + 64)


def frame(op, body, length=None, pad=0, status=0):
    return struct.pack("<IBBH", len(body) if length is None else length, op, pad, status) + body


def put(pages):
    ents = b"".join(struct.pack("<QH", pid, len(blob)) for pid, blob in pages)
    return frame(PUT, struct.pack("<H", len(pages)) + ents + b"".join(b for _, b in pages))


def get(ids):
    return frame(GET, struct.pack("<H", len(ids)) + b"".join(struct.pack("<Q", i) for i in ids))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    blobs = [(i, bytes([i & 0xFF]) * (40 + 700 * (i % 6))) for i in range(8)]
    seeds = {
        "put-get": put(blobs[:4]) + get([0, 1, 2, 3]),
        "get-missing": put(blobs[:2]) + get([1, 7, 0, 1]),
        "replace": put(blobs[:1]) + put([(0, b"x" * 4160)]) + get([0]),
        "get-64": put(blobs) + get(list(range(64))),
        "unknown-op": frame(9, b"abc") + get([0]),
        "bad-body": frame(GET, struct.pack("<H", 3) + b"\0" * 8) + frame(PUT, b"\0\0"),
        "empty-blob": put([(5, b"")]) + get([5]),
        "over-blob": put([(6, b"y" * 4161)]) + get([6]),
        "over-bound": frame(GET, b"", length=BODY_MAX + 1),
        "bad-pad": frame(GET, struct.pack("<HQ", 1, 0), pad=1),
        "short-body": put(blobs[:2])[:-50],
        "zero-count": frame(GET, struct.pack("<H", 0)) + frame(GET, struct.pack("<H", 65) + b"\0" * 520),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


main()
