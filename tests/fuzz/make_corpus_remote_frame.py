#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpus of fuzz_remote_frame into the directory given:
Ethernet/IPv4/UDP frames to 10.77.0.1:7111 as a client sends them, good
(several sizes) and one per refusal, each after the byte that picks the bound
address (bit 0: 10.77.0.1, else any), built here so no binary lives in git.
tests/remote/test-transport.sh sends frame()'s refusals at a live server."""

import os
import struct
import sys

LOCAL, PEER = bytes([10, 77, 0, 1]), bytes([10, 77, 0, 2])


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(payload, ethertype=0x0800, vihl=0x45, frag=0x4000, proto=17, src=PEER, dst=LOCAL,
          sport=40000, dport=7111, tot=None, ulen=None, bad_csum=False, options=b"",
          mac_dst=bytes([2, 0, 0, 0, 0, 1]), mac_src=bytes([2, 0, 0, 0, 0, 2])):
    ulen = len(payload) + 8 if ulen is None else ulen
    tot = 20 + len(options) + len(payload) + 8 if tot is None else tot
    ip = struct.pack("!BBHHHBBH4s4s", vihl, 0, tot, 0, frag, 64, proto, 0, src, dst) + options
    c = csum(ip) ^ (1 if bad_csum else 0)
    ip = ip[:10] + struct.pack("!H", c) + ip[12:]
    udp = struct.pack("!HHHH", sport, dport, ulen, 0)
    pseudo = src + dst + struct.pack("!BBH", 0, 17, ulen)
    udp = udp[:6] + struct.pack("!H", csum(pseudo + udp + payload) or 0xFFFF)
    eth = mac_dst + mac_src + struct.pack("!H", ethertype)
    return eth + ip + udp + payload


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    body = bytes((i * 7 + 3) & 0xFF for i in range(4000))
    seeds = {
        "good-0": frame(b""), "good-64": frame(body[:64]), "good-1464": frame(body[:1464]),
        "good-3968": frame(body[:3968]), "good-padded": frame(body[:4]) + bytes(20),
        "arp": frame(body[:28], ethertype=0x0806), "vlan": frame(body[:64], ethertype=0x8100),
        "ihl4": frame(body[:64], vihl=0x44), "ipv6-version": frame(body[:64], vihl=0x65),
        "options": frame(body[:64], vihl=0x46, options=bytes(4)),
        "more-fragments": frame(body[:64], frag=0x2000), "offset": frame(body[:64], frag=0x0010),
        "tcp": frame(body[:64], proto=6), "bad-csum": frame(body[:64], bad_csum=True),
        "tot-too-long": frame(body[:64], tot=1000), "tot-too-short": frame(body[:64], tot=27),
        "udp-len": frame(body[:64], ulen=60), "wrong-port": frame(body[:64], dport=53),
        "wrong-addr": frame(body[:64], dst=bytes([10, 77, 0, 9])),
        "broadcast-dst": frame(body[:64], dst=bytes([255, 255, 255, 255])),
        "sport0": frame(body[:64], sport=0), "loopback-src": frame(body[:64], src=bytes([127, 0, 0, 1])),
        "multicast-src": frame(body[:64], src=bytes([224, 0, 0, 1])),
        "truncated": frame(body[:64])[:40], "empty": b"",
    }
    for name, f in seeds.items():
        for bound in (0, 1):
            with open(os.path.join(out, "%s-%d" % (name, bound)), "wb") as fh:
                fh.write(bytes([bound]) + f)


if __name__ == "__main__":
    main()
