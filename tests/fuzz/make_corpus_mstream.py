#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpus of fuzz_mstream into the directory given: whole
streams as a destination and a source take them (tagged here with the test
secret's keys, derived as libsodium's crypto_kdf_derive_from_key does: keyed
BLAKE2b with the subkey id as salt and "vtiermst" as personalisation), PAGES
payloads for the iterator, headers, and broken frames of each kind (see
fuzz_mstream.c for the input format)."""

import hashlib
import os
import struct
import sys

MAGIC = 0x534D5456
HELLO, WELCOME, PAGES, ACK, END, END_ACK, ABORT = range(1, 8)
TO_DST, TO_SRC, TO_ITER, TO_HDR = 0, 1, 2, 3
FIX_ALL = 4 | 8 | 16 | 32 | 64          # magic, length, stream id, seq, tag

SECRET = b"the fuzzer's migration secret.".ljust(32, b"\0")
SID = b"fuzz stream id.\0"
BACKEND = 4 << 20


def kdf(subkey):
    return hashlib.blake2b(b"", digest_size=32, key=SECRET,
                           salt=struct.pack("<Q", subkey) + bytes(8),
                           person=b"vtiermst" + bytes(8)).digest()


D2S, S2D = kdf(1), kdf(2)


def frame(ftype, seq, payload, key, length=None, magic=MAGIC, version=1, res0=0, res1=0):
    hdr = struct.pack("<IBBHIIQ", magic, version, ftype, res0,
                      len(payload) if length is None else length, res1, seq)
    return hdr + payload + hashlib.blake2b(hdr + payload, digest_size=16, key=key).digest()


def hello(sid=SID, size=BACKEND, page=4096):
    return sid + struct.pack("<QII", size, page, 0)


def welcome(hint=0, sid=SID):
    return sid + struct.pack("<QQ", hint, 0)


def rec(index, kind, data, codec=0, tier=0, crc=0, pad=0):
    padded = (len(data) + 7) & ~7
    return (struct.pack("<QBBBBIII", index, kind, codec, tier, 0, len(data), crc, 0)
            + data + bytes([pad]) * (padded - len(data)))


def pages(*recs, count=None):
    return struct.pack("<II", len(recs) if count is None else count, 0) + b"".join(recs)


def abort(err=-5, text=b"destination out of memory"):
    return struct.pack("<iI", err, 0) + text.ljust(128, b"\0")


def recs(*items):
    """Records of the harness: (to, flags, bytes)."""
    return b"".join(struct.pack("<HB", len(d), to | flags) + d for to, flags, d in items)


def to_dst(*frames, flags=0):
    return [(TO_DST, flags, f) for f in frames]


def to_src(*frames, flags=0):
    return [(TO_SRC, flags, f) for f in frames]


P1 = pages(rec(0, 0, b"compressed by lz4", codec=1, tier=2, crc=0xDEADBEEF),
           rec(1, 1, b"\xAA" * 8, tier=1), rec(1023, 2, bytes(range(256)) * 16, tier=15))
P2 = pages(rec(5, 0, b"z" * 100, codec=2), rec(6, 0, b"d" * 4096, codec=3))

seeds = {
    # the destination after its HELLO: WELCOME, two PAGES, END (it answers ACK, END_ACK)
    "dst-stream": bytes([1]) + recs(*to_dst(
        frame(WELCOME, 0, welcome(5), S2D), frame(PAGES, 1, P1, S2D),
        frame(PAGES, 2, P2, S2D), frame(END, 3, struct.pack("<QQ", 5, 2), S2D))),
    # the same with every field fixed by the harness (zeros where it writes)
    "dst-stream-fixed": bytes([1]) + recs(*to_dst(
        frame(WELCOME, 9, welcome(5, bytes(16)), bytes(32)),
        frame(PAGES, 9, P1, bytes(32)), frame(END, 9, struct.pack("<QQ", 3, 1), bytes(32)),
        flags=FIX_ALL)),
    "dst-abort": bytes([2]) + recs(*to_dst(frame(ABORT, 1, abort(), S2D))),
    "dst-pages-dup": bytes([2]) + recs(*to_dst(
        frame(PAGES, 1, pages(rec(3, 1, bytes(8)), rec(3, 1, bytes(8))), S2D))),
    "dst-pages-past-end": bytes([2]) + recs(*to_dst(
        frame(PAGES, 1, pages(rec(1024, 1, bytes(8))), S2D))),
    "dst-end-wrong": bytes([3]) + recs(*to_dst(frame(END, 2, struct.pack("<QQ", 3, 1), S2D))),
    "dst-replay": bytes([2]) + recs(*to_dst(frame(PAGES, 1, P2, S2D), frame(PAGES, 1, P2, S2D))),
    "dst-wrong-key": bytes([1]) + recs(*to_dst(frame(WELCOME, 0, welcome(), D2S))),
    "dst-other-stream": bytes([1]) + recs(*to_dst(
        frame(WELCOME, 0, welcome(sid=b"another stream!\0"), S2D))),
    # the source: a HELLO (it answers WELCOME), ACKs, an ABORT
    "src-stream": bytes([0]) + recs(*to_src(
        frame(HELLO, 0, hello(), D2S), frame(ACK, 1, bytes(32), D2S),
        frame(ABORT, 2, abort(-28, b"no room"), D2S))),
    "src-acks": bytes([3]) + recs(*to_src(
        frame(ACK, 2, struct.pack("<QQQQ", 2, 1, 1, 1), D2S),
        frame(ACK, 3, struct.pack("<QQQQ", 1, 1, 0, 1), D2S))),
    "src-end-ack": bytes([3 | 4]) + recs(*to_src(
        frame(ACK, 2, struct.pack("<QQQQ", 2, 1, 1, 1), D2S),
        frame(END_ACK, 3, struct.pack("<QQQiI", 2, 1, 1, 0, 0), D2S),
        frame(ACK, 4, bytes(32), D2S))),
    "src-end-ack-short": bytes([2 | 4]) + recs(*to_src(
        frame(END_ACK, 1, struct.pack("<QQQiI", 1, 1, 0, 0, 0), D2S))),
    "src-hello-size": bytes([0]) + recs(*to_src(frame(HELLO, 0, hello(size=BACKEND * 2), D2S))),
    "src-hello-page": bytes([0]) + recs(*to_src(frame(HELLO, 0, hello(page=8192), D2S))),
    "src-bad-abort": bytes([1]) + recs(*to_src(
        frame(ABORT, 1, struct.pack("<iI", -1, 0) + b"\x1b[2J".ljust(128, b"\0"), D2S))),
    # PAGES payloads to the iterator
    "iter": bytes([0]) + recs((TO_ITER, 0, P1), (TO_ITER, 0, P2)),
    "iter-padding": bytes([0]) + recs((TO_ITER, 0, pages(rec(1, 0, b"abc", codec=1, pad=1)))),
    "iter-left-over": bytes([0]) + recs((TO_ITER, 0, pages(rec(1, 1, bytes(8))) + bytes(8))),
    "iter-count": bytes([0]) + recs((TO_ITER, 0, pages(rec(1, 1, bytes(8)), count=2)),
                                    (TO_ITER, 0, pages(rec(1, 1, bytes(8)), count=0))),
    "iter-kinds": bytes([0]) + recs((TO_ITER, 0, pages(rec(1, 3, bytes(8)))),
                                    (TO_ITER, 0, pages(rec(1, 1, bytes(8), codec=1))),
                                    (TO_ITER, 0, pages(rec(1, 2, bytes(8)))),
                                    (TO_ITER, 0, pages(rec(1, 0, bytes(8), codec=4))),
                                    (TO_ITER, 0, pages(rec(1, 0, bytes(8), codec=1, tier=16)))),
    # headers
    "headers": bytes([0]) + recs(*[(TO_HDR, 0, frame(t, 0, bytes(n), S2D)[:24])
                                   for t, n in ((HELLO, 32), (PAGES, 40), (END, 16),
                                                (ABORT, 136), (PAGES, 44), (8, 0))]),
    "headers-bad": bytes([0]) + recs((TO_HDR, 0, frame(END, 0, bytes(16), S2D, magic=1)[:24]),
                                     (TO_HDR, 0, frame(END, 0, bytes(16), S2D, version=2)[:24]),
                                     (TO_HDR, 0, frame(END, 0, bytes(16), S2D, res1=1)[:24]),
                                     (TO_HDR, 0, frame(PAGES, 0, b"", S2D,
                                                       length=(1 << 20) + (64 << 10) + 1)[:24])),
}

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
