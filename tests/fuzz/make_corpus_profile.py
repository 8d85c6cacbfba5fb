#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpus of fuzz_profile into the directory given: migration
profiles (v2 and v1) as another host's agent would write them, good and
garbled, each after the byte that picks the backend size (bit 0: the size the
profile claims), built here so that no binary file lives in git."""

import ipaddress
import os
import struct
import sys

MAGIC = 0x46505456
OWN, FIXED = b"\x01", b"\x00"     # backend size: the profile's own, or 64 MiB


def tier(name, kind=0, reserved=0):
    return struct.pack("<16sII", name, kind, reserved)


def chunk(heat=0, t=0xFF, size_class=0, cold=0, reserved=0):
    return struct.pack("<HBBHH", heat, t, size_class, cold, reserved)


STREAM = 1                          # VTIER_PROFILE_F_STREAM


def stream(family=4, addr=bytes([192, 0, 2, 1]), port=4444, secret=b"s" * 32,
           sid=bytes(range(1, 17)), reserved=0, reserved2=0):
    """The stream section: secret, stream id, family, reserved, port, reserved2, address."""
    return struct.pack("<32s16sBBHI16s", secret, sid, family, reserved, port, reserved2, addr)


def v6(text):
    return ipaddress.IPv6Address(text).packed


def v2(size=64 << 20, shift=21, tiers=None, chunks=None, n_chunks=None, flags=0, version=2,
       section=b""):
    tiers = tiers if tiers is not None else [tier(b"dram"), tier(b"cxl"), tier(b"lz4", 1)]
    n = (size + (1 << shift) - 1) >> shift
    if chunks is None:
        chunks = [chunk(65535 if i < 4 else 0, i % len(tiers) if tiers else 0xFF,
                        3 if i % 3 == 2 else 0, 0 if i < 4 else 40) for i in range(n)]
    return (struct.pack("<IHBBQIIQ", MAGIC, version, shift, len(tiers), size,
                        n if n_chunks is None else n_chunks, flags, 7)
            + b"".join(tiers) + b"".join(chunks) + section)


def v1(size=64 << 20, shift=21):
    n = (size + (1 << shift) - 1) >> shift
    return struct.pack("<IHBBQII", MAGIC, 1, shift, 0, size, n, 0) + bytes(i * 8 % 256 for i in range(n))


seeds = {
    "v2": FIXED + v2(),
    "v2-own-size": OWN + v2(size=(8 << 20) + 4096, shift=12),
    "v2-one-tier": FIXED + v2(tiers=[tier(b"dram")], chunks=[chunk(100, 0)] * 32),
    "v2-16-tiers": OWN + v2(size=1 << 20, shift=16, tiers=[tier(b"t%d" % i, min(i, 1)) for i in range(16)]),
    "v2-no-tier-chunks": FIXED + v2(chunks=[chunk()] * 32),
    "v1": FIXED + v1(),
    "v1-own-size": OWN + v1(size=3 << 20, shift=12),
    # found by the fuzzer: a v1 header alone, of a 0-byte backend, read for one
    "v1-size-0": OWN + v1(size=0),
    # garbled and foreign
    "v2-other-backend": FIXED + v2(size=128 << 20),
    "v2-tier-index": FIXED + v2(chunks=[chunk(1, 3)] * 32),
    "v2-size-class": FIXED + v2(chunks=[chunk(1, 0, 9)] * 32),
    "v2-tier0-compressed": FIXED + v2(tiers=[tier(b"lz4", 1), tier(b"dram")]),
    "v2-bad-name": FIXED + v2(tiers=[tier(b"dram"), tier(b"../x")]),
    "v2-name-padding": FIXED + v2(tiers=[tier(b"dram"), tier(b"cxl\0\0\0\0\0\0\0\0\0\0\0\0\x01"), tier(b"lz4", 1)]),
    "v2-short": FIXED + v2()[:-1],
    "v2-count": FIXED + v2(n_chunks=0xFFFFFFFF),
    "v2-flags": FIXED + v2(flags=2),
    "v2-flags-stream-and-more": FIXED + v2(flags=0x80000001, section=stream()),
    # the stream section (flag bit 0): where the destination agent connects, the secret
    "v2-stream-ipv4": FIXED + v2(flags=STREAM, section=stream()),
    "v2-stream-ipv6": OWN + v2(size=(8 << 20) + 4096, shift=12, flags=STREAM,
                               section=stream(6, v6("2001:db8::1"), 65535)),
    "v2-stream-loopback": FIXED + v2(flags=STREAM, section=stream(addr=bytes([127, 0, 0, 1]))),
    "v2-stream-loopback6": FIXED + v2(tiers=[tier(b"dram")], chunks=[chunk(100, 0)] * 32,
                                      flags=STREAM, section=stream(6, v6("::1"), 1)),
    "v2-stream-no-section": FIXED + v2(flags=STREAM),
    "v2-stream-no-flag": FIXED + v2(section=stream()),
    "v2-stream-short": FIXED + v2(flags=STREAM, section=stream()[:-1]),
    "v2-stream-long": FIXED + v2(flags=STREAM, section=stream() + b"\0"),
    "v2-stream-twice": FIXED + v2(flags=STREAM, section=stream() * 2),
    "v2-stream-family-3": FIXED + v2(flags=STREAM, section=stream(family=3)),
    "v2-stream-port-0": FIXED + v2(flags=STREAM, section=stream(port=0)),
    "v2-stream-reserved": FIXED + v2(flags=STREAM, section=stream(reserved=1)),
    "v2-stream-reserved2": FIXED + v2(flags=STREAM, section=stream(reserved2=1)),
    "v2-stream-ipv4-tail": FIXED + v2(flags=STREAM,
                                      section=stream(addr=bytes([192, 0, 2, 1, *[0] * 11, 1]))),
    "v2-stream-unspecified": FIXED + v2(flags=STREAM, section=stream(addr=bytes(4))),
    "v2-stream-multicast": FIXED + v2(flags=STREAM, section=stream(addr=bytes([224, 0, 0, 1]))),
    "v2-stream-broadcast": FIXED + v2(flags=STREAM, section=stream(addr=b"\xff" * 4)),
    "v2-stream-unspecified6": FIXED + v2(flags=STREAM, section=stream(6, bytes(16))),
    "v2-stream-multicast6": FIXED + v2(flags=STREAM, section=stream(6, v6("ff02::1"))),
    "v2-stream-link-local6": FIXED + v2(flags=STREAM, section=stream(6, v6("fe80::1"))),
    "v2-stream-mapped6": FIXED + v2(flags=STREAM, section=stream(6, v6("::ffff:192.0.2.1"))),
    "v2-stream-secret-0": FIXED + v2(flags=STREAM, section=stream(secret=bytes(32))),
    "v2-stream-id-0": FIXED + v2(flags=STREAM, section=stream(sid=bytes(16))),
    "v2-shift-31": OWN + v2(size=1 << 20, shift=12)[:6] + b"\x1f" + v2(size=1 << 20, shift=12)[7:],
    "v3": FIXED + v2(version=3),
    "not-a-profile": FIXED + b"VTHO" + b"\0" * 60,
    "empty": FIXED,
}

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
