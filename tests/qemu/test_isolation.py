#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""No VM can hurt another VM's stored pages through vtierd (issue 28).

Patched QEMUs hand their RAM to one vtierd, whose compressed tier "disk" keeps
its pools in files of one directory shared by every VM:
- two honest QEMUs started without -uuid whose memory backends have the same id
  (mem0) both evict into the file tier; each guest then checks every page;
- a QEMU that takes a victim's uuid and a backend id whose CRC-32C is the
  victim's (found by solving CRC's linear equations) evicts into the same tier;
  the victim checks every page;
- the second honest VM and the colliding one exit (their stores are removed),
  vtierd is killed with SIGKILL and restarted: both survivors reconnect and
  their guests check every page again, served from their stores.
A guest whose page was destroyed reads it poisoned (QEMU dies of SIGBUS) or
waits for a store that was refused: either is a failure here, never a skip."""

import os
import time

from vtier_qemu import Harness, Tap, TestFailure, Vtierd, log, main, wait_for

MEM_MB = 64
PAGES = 8192            # 32 MiB checked region of each 64 MiB guest
VICTIM_UUID = "7e570000-1111-4222-8333-444455556666"


def crc32c(data, crc=0):
    crc ^= 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
    return crc ^ 0xffffffff


def colliding_id(victim, prefix="evil-"):
    """A QEMU object id (letters, digits, '-') other than @victim, of the same
    length class QEMU accepts, whose CRC-32C is @victim's. CRC is affine over
    GF(2): for ids of one length, crc(x) ^ crc(base) is linear in x ^ base, so
    48 positions that may each be 'a' or 'c' (one bit apart) give a system of
    32 equations that Gaussian elimination solves."""
    n = 48
    base = bytearray((prefix + "a" * n).encode())
    target = crc32c(victim.encode()) ^ crc32c(bytes(base))
    cols = []
    for i in range(n):
        v = bytearray(base)
        v[len(prefix) + i] ^= 0x02              # 'a' <-> 'c'
        cols.append((crc32c(bytes(v)) ^ crc32c(bytes(base)), 1 << i))
    # eliminate: rows are (crc delta, combination of positions)
    basis = {}
    for val, comb in cols:
        for bit in range(31, -1, -1):
            if not (val >> bit) & 1:
                continue
            if bit in basis:
                val ^= basis[bit][0]
                comb ^= basis[bit][1]
            else:
                basis[bit] = (val, comb)
                break
    want, comb = target, 0
    for bit in range(31, -1, -1):
        if (want >> bit) & 1:
            if bit not in basis:
                raise TestFailure("no CRC-32C collision among the candidates")
            want ^= basis[bit][0]
            comb ^= basis[bit][1]
    for i in range(n):
        if (comb >> i) & 1:
            base[len(prefix) + i] ^= 0x02
    out = base.decode()
    assert out != victim and crc32c(out.encode()) == crc32c(victim.encode())
    return out


class Vm:
    def __init__(self, h, d, name, fill, uuid=None, backend_id="mem0"):
        self.d, self.name, self.fill = d, name, fill
        self.q = h.qemu(name, d.agent, mem_mb=MEM_MB, pages=PAGES, backend_id=backend_id,
                        extra=["-uuid", uuid] if uuid else [])
        self.q.connect()
        self.q.wait_ready()
        self.vm = self.attached(20)
        self.q.guest("content mixed")
        self.q.guest(f"fill {fill}")
        d.run("policy", self.vm, "mode=off")

    def attached(self, timeout):
        return wait_for(f"{self.name} attached", lambda: next(
            (v["name"] for v in self.d.run("list") if v["pid"] == self.q.proc.pid), None),
            timeout)

    def backend(self):
        return self.d.run("stats", self.vm)["backends"][0]

    def evict(self):
        """Every page the file tier takes, into it; returns the pages it holds."""
        self.d.run("demote", self.vm, "tier=disk")
        time.sleep(0.5)
        b = wait_for(f"{self.name} evicted", lambda: (
            (x := self.backend()) and x["backlog"] == 0 and x), 120)
        return {c["name"]: c for c in b["ctiers"]}["disk"]["pages"]

    def verify(self, timeout=90):
        """Bad pages the guest finds in its region, or why it could not say."""
        try:
            return int(self.q.guest("verify", timeout)["bad"])
        except TestFailure as e:
            rc = self.q.proc.poll()
            return f"no answer ({e}; QEMU {'runs' if rc is None else f'exited {rc}'})"

    def quit(self):
        self.q.command("quit")
        self.q.proc.wait(timeout=30)


def test():
    t = Tap(10)
    with Harness("isolation") as h:
        d = Vtierd(h)
        try:
            run(t, h, d)
        except Exception:
            print(d.logs())
            raise


def run(t, h, d):
    d.start()
    a = Vm(h, d, "a", "0x1111")
    na = a.evict()
    b = Vm(h, d, "b", "0x2222")
    nb = b.evict()
    t.ok(na > PAGES // 4 and nb > PAGES // 4,
         f"two uuid-less QEMUs with backend id mem0 evicted {na} and {nb} pages into the "
         f"file tier ({sorted(os.listdir(d.disk))})")
    va, vb = a.verify(), b.verify()
    t.ok(va == 0 and vb == 0, f"each guest reads back every page: bad {va} and {vb}")
    t.ok(a.backend()["poisoned"] == 0 and b.backend()["poisoned"] == 0,
         "no page poisoned in either VM")

    evil = colliding_id("mem0")
    log(f"backend id {evil} has the CRC-32C of mem0: {crc32c(b'mem0'):08x}")
    v = Vm(h, d, "victim", "0x3333", uuid=VICTIM_UUID)
    nv = v.evict()
    x = Vm(h, d, "evil", "0x4444", uuid=VICTIM_UUID, backend_id=evil)
    nx = x.evict()
    t.ok(nv > PAGES // 4 and nx > PAGES // 4,
         f"the victim (uuid {VICTIM_UUID}, mem0) and a QEMU with its uuid and backend id "
         f"{evil} evicted {nv} and {nx} pages into the file tier")
    vv = v.verify()
    t.ok(vv == 0 and v.backend()["poisoned"] == 0,
         f"the victim reads back every page next to the colliding id: bad {vv}")

    # The survivors' pages go out again; the other two exit and lose their stores.
    na, nv = a.evict(), v.evict()
    b.quit()
    x.quit()
    left = wait_for("the exited QEMUs' stores removed", lambda: (
        (s := os.listdir(d.store)) and len(s) == 2 and s), 10)
    t.ok(left is not None and na > PAGES // 4 and nv > PAGES // 4,
         f"{na} and {nv} pages stored for the survivors; two QEMUs exited, stores left: "
         f"{left}")

    d.kill9()
    d.start()
    a.vm, v.vm = a.attached(30), v.attached(30)
    with open(os.path.join(h.dir, "vtierd.2.log")) as f:
        accepted = [line for line in f.read().splitlines() if "accepted" in line]
    t.ok(sum("(reconnect)" in line for line in accepted) == 2,
         "the restarted vtierd took both survivors' reconnects with their stores: " +
         " | ".join(accepted))
    va, vv = a.verify(), v.verify()
    t.ok(va == 0 and vv == 0,
         f"after the others' exit and a vtierd restart every page is back: bad {va} "
         f"and {vv}")
    ba, bv = a.backend(), v.backend()
    t.ok(ba["faults_stored"] > 0 and bv["faults_stored"] > 0 and
         ba["poisoned"] == 0 and bv["poisoned"] == 0,
         f"served from the stores ({ba['faults_stored']} and {bv['faults_stored']} "
         f"faults), nothing poisoned")
    t.ok(d.proc.poll() is None, "vtierd keeps running")


if __name__ == "__main__":
    main(test)
