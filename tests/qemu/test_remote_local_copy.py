#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The remote tier's local-copy variant end to end: as qemu-remote-vtierd (the
patched QEMU, vtierd its tier agent, three vtier-memd in network namespaces
of their own, on UDP), with [remote.far] copies = 1 and local_copy = lz4 (a
compressed tier on node 0). Every page is checked by the guest itself, each
time:
  1 vtierd attaches the VM by its hand-off; the guest fills its pages
  2 64 MiB demoted to far: the servers hold one copy of each page sent,
    vtierd's local store one more (local_copy_pages)
  3 the server holding the most pages killed -9 while the guest reads:
    faults served from the local copies, vtierd logs the server lost
  4 with that server gone the tier takes pages again (the local copies
    hold), and they read back
  5 a second server killed -9 while the guest reads: every page still reads
    back (one server left, the rest from the local copies)
  6 no page reads as zeros where the guest wrote data (QEMU's own pmemsave);
    "# RESULT-REMOTE-LOCAL-COPY pages=... fault_p50_us=... fault_p99_us=...
    server_kills=2 local_copy_reads=... bad_pages=0 zero_pages=0"
  7 the VM quits: its store, the local copies with it, is removed
Needs root (network namespaces, veth): without it the test skips."""

import os

from vtier_qemu import log, main, parse_kv, wait_for
from test_remote_vtierd import (PAGES, backend, demoted, far_of, held, log_lines, ns_pages,
                                server_of, Verifier, vm_filled, with_servers,
                                check_last)


def test():
    with_servers("remote-local-copy", 11, "copies = 1\nlocal_copy = lz4\ncodec = lz4\n"
                 "transport = udp\n", run_test)


def run_test(t, h, d, memds):
    verify = Verifier()

    def killed_during_verify(what, victim):
        """@victim killed -9 while the guest verifies: the reply, its lost line."""
        lost = f"remote tier far: server {victim.addr} lost"
        lost0 = len(log_lines(d, lost))
        q.serial.send("verify")
        early = q.serial.readline(0.3)
        victim.kill9()
        v = verify(what, parse_kv(early) if early else q.guest_reply(300, what))
        line = wait_for("vtierd's log line of the lost server", lambda: (
            (x := log_lines(d, lost)) and len(x) > lost0 and x[-1]), 30)
        return early, v, line

    # 1: the hand-off VM, filled
    q, ready, vms, vm = verify.vm = vm_filled(h, d, 0x10c1)
    v = verify("filled")
    rem = far_of(backend(d.run("stats", vm))).get("remote", {})
    t.ok(len(vms) == 1 and vms[0]["attached_by"] == "hand-off" and
         rem.get("copies") == 1 and rem.get("local_copy") == "lz4" and v["bad"] == "0",
         f"vtierd attached '{vm}' by its hand-off, far has copies {rem.get('copies')} and "
         f"local_copy {rem.get('local_copy')}; guest filled {ready['pages']} pages: bad "
         f"{v['bad']}")

    # 2: demoted: one copy on the servers, one local
    r, b = demoted(d, vm, "first demotion")
    far = far_of(b)
    far_pages = far["pages"]
    sent = far_pages - far["zero_pages"] - far["same_pages"]
    on = held(memds)
    total = sum(e["pages"] for e in on.values())
    rem = far["remote"]
    t.ok(r["queued_bytes"] > 0 and far_pages > PAGES // 2 and
         abs(total - sent) <= max(8, sent // 100),
         f"64 MiB demoted: far holds {far_pages} pages, {sent} with data; the servers hold "
         f"{total} (one copy each), per server {[ns_pages(m) for m in memds]}")
    t.ok(rem["local_copy_pages"] == sent and rem["local_copy_bytes"] > 0 and
         far["pool_bytes"] == far["compressed_bytes"],
         f"a local copy of each: local_copy_pages {rem['local_copy_pages']}, "
         f"local_copy_bytes {rem['local_copy_bytes']}, far's pool bytes {far['pool_bytes']} "
         f"(one server copy of {far['compressed_bytes']} compressed bytes)")

    # 3: the server holding most pages killed -9 during the guest's verify
    victim = max(memds, key=ns_pages)
    early, v, line = killed_during_verify("first server killed during it", victim)
    b = backend(d.run("stats", vm))
    far = far_of(b)
    rem = far["remote"]
    fault_p50_us, fault_p99_us = b["fault_p50_ns"] / 1000, b["fault_p99_ns"] / 1000
    t.ok(early is None and v["bad"] == "0" and b["poisoned"] == 0,
         f"vtier-memd {victim.addr} killed -9 during the guest's verify: bad {v['bad']}, "
         f"poisoned {b['poisoned']} (early reply: {early})")
    t.ok(rem["local_copy_reads"] > 0 and server_of(far, victim)["state"] == "down" and
         far["bad_checksum"] == 0,
         f"faults served from the local copies: local_copy_reads {rem['local_copy_reads']}, "
         f"bad_checksum {far['bad_checksum']}; {line.strip()}")

    # 4: the tier takes pages with the server gone
    puts0 = far["puts"]
    r, b = demoted(d, vm, "with a server gone")
    far = far_of(b)
    t.ok(far["pages"] > PAGES // 2 and far["puts"] > puts0,
         f"the local copies hold: far takes pages with {victim.addr} gone ({far['pages']} "
         f"pages, {far['puts'] - puts0} puts; under_copies {far['remote']['under_copies']})")
    v = verify("with a server gone")
    t.ok(v["bad"] == "0", f"and every page reads back: bad {v['bad']}")

    # 5: a second server killed during a verify
    r, b = demoted(d, vm, "before the second kill")
    reads0 = far_of(b)["remote"]["local_copy_reads"]
    second = max((m for m in memds if m.proc is not None), key=ns_pages)
    early, v, line = killed_during_verify("second server killed during it", second)
    far = far_of(backend(d.run("stats", vm)))
    t.ok(v["bad"] == "0" and far["remote"]["local_copy_reads"] > reads0,
         f"vtier-memd {second.addr} killed -9 too: bad {v['bad']}, local_copy_reads "
         f"+{far['remote']['local_copy_reads'] - reads0}; {line.strip()}")

    # 6: no page zeroed, as QEMU itself reads guest RAM
    zero_pages = check_last(t, h, q, verify)
    reads = far_of(backend(d.run("stats", vm)))["remote"]["local_copy_reads"]
    log(f"RESULT-REMOTE-LOCAL-COPY pages={far_pages} fault_p50_us={fault_p50_us:.1f} "
        f"fault_p99_us={fault_p99_us:.1f} server_kills=2 local_copy_reads={reads} "
        f"bad_pages={verify.bad_pages} zero_pages={zero_pages}")

    # 7: the VM ends: its store goes, the local copies with it
    _, b = demoted(d, vm, "before the VM quits")
    q.command("quit")
    q.proc.wait(timeout=30)
    left = wait_for("the store removed", lambda: (
        (x := os.listdir(d.store) if os.path.isdir(d.store) else []) == [] and [x]), 30)
    t.ok(left == [[]] and far_of(b)["remote"]["local_copy_pages"] > 0,
         f"QEMU quit with {far_of(b)['remote']['local_copy_pages']} local copies: the store "
         f"root is left empty")
    t.ok(d.proc.poll() is None, "vtierd keeps running")


if __name__ == "__main__":
    main(test)
