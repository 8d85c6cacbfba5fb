#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""tier-agent-required=off: QEMU starts and the guest runs with no agent
(nothing is registered, so nothing waits); when the agent appears later,
QEMU hands guest RAM over on its own and eviction works from then on, with
0 bad pages. With required=on and no agent, QEMU refuses to start and says
why."""

import os

from vtier_qemu import Harness, Tap, main, wait_for

REGION = 0x1000000


def test():
    t = Tap(6)
    with Harness("optional") as h:
        sock = os.path.join(h.dir, "late-peer.sock")
        q = h.qemu("vm", sock, required=False)
        q.connect()
        q.wait_ready()
        q.guest("fill 0x777")
        v = q.guest("verify")
        info = q.tiers()["mem0"]
        t.ok(v["bad"] == "0" and info["state"] == "disconnected" and info["handoffs"] == 0,
             f"guest runs without an agent (state {info['state']})")

        peer = h.peer("late-peer")
        st = wait_for("QEMU to find the late agent",
                      lambda: (s := peer.status()) and s["connected"] == "1" and s, 30)
        t.ok(st["generation"] == "1" and not int(st["hello_flags"], 16) & 1,
             f"first hand-off once the agent is up (flags {st['hello_flags']})")
        r = peer.cmd(f"evict {REGION:#x} 3000 3")
        v = q.guest("verify")
        t.ok(r["evicted"] == "3000" and v["bad"] == "0",
             f"evicted 3000 pages, read them back: bad={v['bad']}")
        t.ok(q.tiers()["mem0"]["state"] == "active", "query-memory-tiers: active")

        bad = h.qemu("no-agent", os.path.join(h.dir, "nobody.sock"), required=True)
        rc = bad.proc.wait(timeout=30)
        with open(os.path.join(h.dir, "no-agent.log")) as f:
            err = f.read()
        t.ok(rc != 0, f"required=on without an agent: QEMU exits with {rc}")
        t.ok("cannot reach the tier agent (tier-agent-required=on)" in err,
             f"and says why: {err.strip().splitlines()[-1]}")


if __name__ == "__main__":
    main(test)
