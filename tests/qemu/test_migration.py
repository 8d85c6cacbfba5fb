#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Live migration between two patched QEMUs on this machine, each with its
own reference peer: the source peer has evicted thousands of guest pages,
is told when migration starts and ends, and sends its hotness profile;
QEMU migrates the profile with the device state; the destination QEMU hands
guest RAM to its own peer with the profile in the HELLO. The guest's memory
is checked with checksums on the destination: 0 bad pages. Postcopy, which
needs its own userfaultfd on guest RAM, must be refused clearly."""

import os

from vtier_qemu import Harness, Tap, TestFailure, log, main, wait_for

REGION = 0x1000000


def migrate(src, uri, timeout=120):
    src.command("migrate", uri=uri)

    def done():
        st = src.command("query-migrate")
        if st.get("status") in ("completed", "failed", "cancelled"):
            return st
        return None
    return wait_for("migration to finish", done, timeout, interval=0.1)


def test():
    t = Tap(12)
    with Harness("migration") as h:
        pa = h.peer("src-peer")
        pb = h.peer("dst-peer")
        src = h.qemu("src", pa.socket)
        src.connect()
        src.wait_ready()
        src.guest("fill 0xabc")
        r = pa.cmd(f"evict {REGION:#x} 5000 3")
        t.ok(r["evicted"] == "5000", f"source peer evicted 5000 pages: {r}")

        # Postcopy would put a second userfaultfd on guest RAM: refused.
        scratch = h.qemu("scratch", pb.socket, required=False,
                         incoming=f"unix:{h.dir}/scratch.mig")
        scratch.connect()
        src.command("migrate-set-capabilities",
                    capabilities=[{"capability": "postcopy-ram", "state": True}])
        st = migrate(src, f"unix:{h.dir}/scratch.mig")
        t.ok(st["status"] == "failed" and "tier agent" in st.get("error-desc", ""),
             f"postcopy refused: {st.get('error-desc')}")
        src.command("migrate-set-capabilities",
                    capabilities=[{"capability": "postcopy-ram", "state": False}])
        t.ok(src.guest("verify")["bad"] == "0", "the guest runs on after the refused migration")
        st = pa.status()
        t.ok(st["migration"] == "0:0:1", f"the source peer heard of the failure: {st['migration']}")

        dst = h.qemu("dst", pb.socket, incoming=f"unix:{h.dir}/dst.mig")
        dst.connect()
        st = migrate(src, f"unix:{h.dir}/dst.mig")
        t.ok(st["status"] == "completed",
             f"migrated in {st.get('total-time')} ms, {st['ram']['transferred']} bytes")

        sa = pa.status()
        t.ok(sa["migration"] == "1:1:1",
             f"source peer told: started and completed (start:completed:failed={sa['migration']})")
        t.ok(int(sa["promotions"]) >= 5000 and sa["stored"] == "0",
             f"reading RAM for migration faulted every evicted page back ({sa['promotions']})")
        out_size, out_crc = sa["profile_out"].split(":")
        t.ok(int(out_size) > 24, f"source peer sent a profile of {out_size} bytes")

        sb = wait_for("the destination's hand-off",
                      lambda: (s := pb.status()) and s["connected"] == "1" and s, 30)
        flags = int(sb["hello_flags"], 16)
        in_size, in_crc, in_ok = sb["profile_in"].split(":")
        t.ok(flags & 0x2 and sb["generation"] == "1",
             f"destination handed RAM over after loading it (flags {sb['hello_flags']})")
        t.ok(in_size == out_size and in_crc == out_crc and in_ok == "1",
             f"the profile arrived intact: {in_size} bytes, crc {in_crc} (source {out_crc})")
        info = dst.tiers()["mem0"]
        log(f"destination query-memory-tiers: state {info['state']}, "
            f"profile-bytes {info['profile-bytes']}")

        v = dst.guest("verify")
        t.ok(v["bad"] == "0", f"guest memory on the destination: bad={v['bad']}")
        r = pb.cmd(f"evict {REGION:#x} 4000 2")
        dst.guest("half 0x66 5 2")
        v = dst.guest("verify")
        t.ok(r["evicted"] == "4000" and v["bad"] == "0" and info["profile-bytes"] == int(in_size),
             f"the destination peer evicts and serves: bad={v['bad']}")
        if src.command("query-status")["status"] != "postmigrate":
            raise TestFailure("source not in postmigrate")


if __name__ == "__main__":
    main(test)
