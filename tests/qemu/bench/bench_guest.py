#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Fault round trip as a TCG guest sees it: the test guest times single
reads with rdtsc (guest/guest.c `lat`), first of resident pages (what a
read costs under TCG), then of pages the reference peer evicted, whose
faults go through the patched QEMU's hand-off to the peer and back. The
guest's TSC is calibrated against the host's monotonic clock. Prints lines
in the format of vtier-handoff-bench, and checks guest memory at the end."""

import time

from vtier_qemu import Harness, TestFailure, main

REGION = 0x1000000
PAGES = 16384
STRIDE = 4   # every 4th page: 4096 samples


def tsc_per_us(q):
    t0 = time.monotonic()
    a = int(q.guest("tsc")["tsc"], 16)
    t1 = time.monotonic()
    time.sleep(2)
    t2 = time.monotonic()
    b = int(q.guest("tsc")["tsc"], 16)
    t3 = time.monotonic()
    # The reads happened somewhere in [t0, t1] and [t2, t3]: use midpoints.
    return (b - a) / (((t2 + t3) / 2 - (t0 + t1) / 2) * 1e6)


def report(mode, r, per_us):
    us = {k: int(r[k]) / per_us for k in ("p50", "p90", "p99", "max")}
    print(f"mode={mode} pages={r['n']} p50_us={us['p50']:.1f} p90_us={us['p90']:.1f} "
          f"p99_us={us['p99']:.1f} max_us={us['max']:.1f}", flush=True)


def bench():
    with Harness("bench") as h:
        peer = h.peer()
        q = h.qemu("vm", peer.socket, pages=PAGES)
        q.connect()
        q.wait_ready()
        q.guest("fill 0x1234")
        per_us = tsc_per_us(q)
        print(f"# guest TSC: {per_us:.1f} ticks/us", flush=True)
        report("tcg-resident", q.guest(f"lat {STRIDE} 0"), per_us)
        for rnd in range(3):
            r = peer.cmd(f"evict {REGION:#x} {PAGES // STRIDE} {STRIDE}")
            if int(r["evicted"]) != PAGES // STRIDE:
                raise TestFailure(f"evicted only {r}")
            report("tcg-guest-handoff", q.guest(f"lat {STRIDE} 0"), per_us)
        v = q.guest("verify")
        if v["bad"] != "0":
            raise TestFailure(f"guest memory bad after the benchmark: {v}")
        print("# guest memory verified: bad=0", flush=True)


if __name__ == "__main__":
    main(bench)
