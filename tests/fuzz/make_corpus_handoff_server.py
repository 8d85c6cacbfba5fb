#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpus of fuzz_handoff_server into the directory given:
scripts of connections, bytes, fds, PREPAREs, closes, waits, limits and
HELLOs true to the fuzzing process (fuzz_handoff_server.c: op byte % 8, then
its arguments), built here so that
no binary file lives in git. The fds a message carries: one of FD_* below."""

import os
import struct
import sys

MAGIC = 0x4F485456


def connect(slot, other=False):
    return bytes([1 if other else 0, slot])


# enum fd_kind of fuzz_handoff_server.c
FD_MEMFD, FD_MEMFD_SMALL, FD_MEMFD_EMPTY, FD_PIPE, FD_DEVNULL, FD_SOCKET = range(6)
NO_FD, TWO_FDS = 6, 7


def send(slot, payload, nfds=0, kind=FD_MEMFD):
    return bytes([2, slot, kind * 6 + nfds, len(payload)]) + payload


def prepare(slot, backend=0, reconnect=False, early=False, fd=FD_MEMFD):
    return bytes([3, slot, (backend << 5) | (fd << 2) | (2 if early else 0) | int(reconnect)])


# enum map_kind of fuzz_handoff_server.c; the maps a true HELLO carries; a MIGRATION after it
MAP_GOOD, MAP_SMALL, MAP_UNSEALED = range(3)
NO_MAPS, ZERO_MAP, ZERO_SEND_MAP, SEND_MAP_ALONE = range(4)
NO_EVENT, START, SEND_END, EVENT_6 = range(4)


def hello(slot, maps=ZERO_SEND_MAP, kind=MAP_GOOD, event=NO_EVENT, backend=0):
    """A HELLO true to the fuzzing process (accepted where it has a userfaultfd)."""
    return bytes([7, slot, (backend << 6) | (event << 4) | (kind << 2) | maps])


def close(slot):
    return bytes([4, slot])


def wait(ms):
    return bytes([5, ms])


def limits(pending, peer_pending, peer_conns, buffered_shift=6):
    return bytes([6, (buffered_shift << 4) | (pending - 1), peer_pending - 1, peer_conns - 1])


def hdr(mtype, size, seq=1):
    return struct.pack("<IHHII", MAGIC, 1, mtype, size, seq)


seeds = {
    # one process fills max_pending, another's connection displaces its oldest
    "displace": limits(4, 8, 8) + b"".join(connect(s) for s in range(5)) + connect(6, True),
    # per-process caps
    "peer-pending": limits(8, 2, 8) + b"".join(connect(s) for s in range(4)),
    "peer-conns": limits(8, 8, 2) + b"".join(connect(s) for s in range(4)),
    # PREPAREs held, then the deadline without RAM; a RECONNECT PREPARE is refused
    "prepare-held": b"".join(connect(s) + prepare(s, s) for s in range(4)) + wait(25),
    "prepare-reconnect": connect(0) + prepare(0, reconnect=True),
    # the early hand-off: offered and taken (HELLO_REPLY F_EARLY), then the wait
    "prepare-early": connect(0) + prepare(0, early=True) + wait(5) + connect(1) +
        prepare(1, 1, early=True, fd=FD_PIPE) + wait(25),
    # PREPAREs whose fd the kernel refutes, or none where one is due, or two
    "prepare-small-memfd": connect(0) + prepare(0, fd=FD_MEMFD_SMALL),
    "prepare-empty-memfd": connect(0) + prepare(0, fd=FD_MEMFD_EMPTY),
    "prepare-pipe": connect(0) + prepare(0, fd=FD_PIPE),
    "prepare-devnull": connect(0) + prepare(0, fd=FD_DEVNULL),
    "prepare-socket": connect(0) + prepare(0, fd=FD_SOCKET),
    "prepare-no-fd": connect(0) + prepare(0, fd=NO_FD),
    "prepare-two-fds": connect(0) + prepare(0, fd=TWO_FDS),
    # a sequence on one connection: refused PREPARE, then a good one on a new one
    "prepare-bad-then-good": connect(0) + prepare(0, fd=FD_DEVNULL) + connect(1) +
        prepare(1, early=True) + prepare(1, 2) + wait(25),
    "prepare-displaced": limits(2, 8, 8) + connect(0) + prepare(0) + connect(1) + prepare(1) +
        connect(2, True),
    # no HELLO: the deadline, reopened
    "no-hello-reopen": connect(0) + wait(25) + connect(0) + wait(25) + connect(1, True),
    # a partial HELLO, too many fds, fds on a message without any
    "partial-hello": connect(0) + send(0, hdr(1, 216) + b"\0" * 40, nfds=2) + wait(25),
    "too-many-fds": connect(0) + send(0, hdr(1, 216) + b"\0" * 216, nfds=5),
    "fds-on-policy": connect(0) + send(0, hdr(4, 160) + b"\0" * 160, nfds=1),
    "pipe-on-policy": connect(0) + send(0, hdr(4, 160) + b"\0" * 160, nfds=1, kind=FD_PIPE),
    "hello-devnull-pipe": connect(0) + send(0, hdr(1, 216) + b"\0" * 216, nfds=2, kind=FD_DEVNULL),
    "hello-no-fds": connect(0) + send(0, hdr(1, 216) + b"\0" * 216) + wait(5),
    "buffered-cap": limits(8, 8, 8, 0) + connect(0) + send(0, hdr(1, 4096) + b"\0" * 200) +
        connect(1, True) + send(1, hdr(1, 4096) + b"\0" * 200),
    "close-all": b"".join(connect(s, s % 2 == 1) for s in range(6)) + b"".join(close(s) for s in range(6)),
    # HELLOs true to this process: no map, a zero map, a zero and a send map (as the patched
    # QEMU sends every HELLO), then a migration that ends with SEND_END (answered with SENT)
    "hello-plain": connect(0) + hello(0, NO_MAPS) + wait(2),
    "hello-zero-map": connect(0) + hello(0, ZERO_MAP) + wait(2),
    "hello-send-map": connect(0) + hello(0) + wait(2),
    "hello-send-map-start": connect(0) + hello(0, event=START) + wait(2),
    "hello-send-map-send-end": connect(0) + hello(0, event=SEND_END) + wait(2) + close(0) +
        connect(1, True) + hello(1, event=SEND_END, backend=1) + wait(2),
    "hello-send-map-event-6": connect(0) + hello(0, event=EVENT_6) + wait(2),
    # ... a bad send map or zero map refused (its fds closed), SEND_MAP without ZERO_MAP
    "hello-send-map-small": connect(0) + hello(0, kind=MAP_SMALL) + wait(2),
    "hello-send-map-unsealed": connect(0) + hello(0, kind=MAP_UNSEALED) + wait(2),
    "hello-zero-map-small": connect(0) + hello(0, ZERO_MAP, MAP_SMALL) + wait(2),
    "hello-send-map-alone": connect(0) + hello(0, SEND_MAP_ALONE, event=SEND_END) + wait(2),
    # SEND_END before any HELLO; a send map's four fds on a HELLO whose pid lies
    "send-end-before-hello": connect(0) + send(0, hdr(6, 8) + struct.pack("<II", 5, 0)),
    "four-fds-on-hello": connect(0) + send(0, hdr(1, 216) + struct.pack(
        "<IIQQQQQQQII16s64s64s", 0x288, 0, 64 << 10, 4096, 0, 0, 0, 0, 1, 1, 0, b"", b"", b"m"),
        nfds=4),
}

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
