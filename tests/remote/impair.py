#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A lossy, reordering Ethernet bridge between two interfaces, for kernels
without netem (tests/remote/netns.sh, netns_impair): every frame one side
sends goes out the other, except LOSS % dropped and REORDER % held back and
sent after the next frame that way (or after 5 ms). Run in a namespace of its
own between the two ends. Usage: impair.py IF_A IF_B LOSS REORDER SEED STATS_FILE;
on SIGTERM it writes "frames=... dropped=... reordered=..." to STATS_FILE."""

import random
import select
import signal
import socket
import sys
import time

ETH_P_ALL = 3
PACKET_OUTGOING = 4


def main():
    ifa, ifb, loss, reorder, seed, stats_file = sys.argv[1:7]
    loss, reorder = float(loss) / 100, float(reorder) / 100
    rng = random.Random(int(seed))
    socks = {}
    for name in (ifa, ifb):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((name, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        socks[name] = s
    other = {ifa: socks[ifb], ifb: socks[ifa]}
    held = {ifa: None, ifb: None}   # (frame, since) per direction, keyed by the receiving side
    count = {"frames": 0, "dropped": 0, "reordered": 0}
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    by_fd = {s.fileno(): name for name, s in socks.items()}
    while running[0]:
        try:
            ready, _, _ = select.select(list(by_fd), [], [], 0.002)
        except InterruptedError:
            continue
        now = time.monotonic()
        for fd in ready:
            name = by_fd[fd]
            try:
                frame, addr = socks[name].recvfrom(65535)
            except OSError:
                continue
            if addr[2] == PACKET_OUTGOING:
                continue    # our own send on this interface
            count["frames"] += 1
            r = rng.random()
            if r < loss:
                count["dropped"] += 1
                continue
            if held[name] is None and r < loss + reorder:
                held[name] = (frame, now)
                count["reordered"] += 1
                continue
            other[name].send(frame)
            if held[name] is not None:
                other[name].send(held[name][0])
                held[name] = None
        for name, h in held.items():
            if h is not None and now - h[1] > 0.005:
                other[name].send(h[0])
                held[name] = None
    with open(stats_file, "w") as f:
        f.write(" ".join("%s=%d" % kv for kv in count.items()) + "\n")


if __name__ == "__main__":
    main()
