#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Hand-off end to end: the patched QEMU hands guest RAM (memfd +
userfaultfd) to the reference peer, which evicts thousands of guest pages
(write-protect, copy, punch) and serves each fault with UFFDIO_COPY while the
TCG guest reads and writes them; the guest checks every page against the
pattern it wrote: 0 bad pages. A peer that corrupts pages on purpose must be
caught. Then the peer is killed with SIGKILL while it serves faults: the
guest must wait (no zeros), QEMU must hand the fds over again to the
restarted peer, and the guest must finish with 0 bad pages."""

import time

from vtier_qemu import Harness, Tap, TestFailure, log, main, wait_for

REGION = 0x1000000     # the guest's test region (see guest/guest.c)
PAGES = 16384          # 64 MiB


def test():
    t = Tap(36)
    with Harness("handoff") as h:
        peer = h.peer()
        q = h.qemu("vm", peer.socket)
        q.connect()
        ready = q.wait_ready()
        t.ok(int(ready["region"], 16) == REGION and int(ready["pages"]) == PAGES,
             f"guest up, region {ready['region']} pages {ready['pages']}")
        st = peer.status()
        t.ok(st["connected"] == "1" and st["generation"] == "1" and int(st["ranges"]) >= 1,
             f"QEMU handed mem0 over (ranges={st['ranges']}, zero-filled first touches={st['zero']})")
        info = q.tiers()["mem0"]
        t.ok(info["state"] == "active" and info["handoffs"] == 1 and
             info["agent"] == peer.socket, f"query-memory-tiers: {info['state']}")

        start = time.monotonic()
        q.guest("fill 0x1234")
        t.ok(q.guest("verify")["bad"] == "0", "guest memory checks out before any eviction")
        log(f"fill + verify of {PAGES} pages: {time.monotonic() - start:.1f} s")

        # Evict 6000 pages (every other one over 12000), then let the guest
        # write half of every third page: faults on write, the other half must
        # come back as it was.
        r = peer.cmd(f"evict {REGION:#x} 6000 2")
        t.ok(r["evicted"] == "6000" and r["absent"] == "0", f"evicted 6000 pages: {r}")
        t.ok(peer.status()["stored"] == "6000", "6000 pages in the peer's store")
        peer.cmd("stats")
        info = wait_for("a STATS report with the eviction", lambda: (
            (i := q.tiers()["mem0"]) and i.get("demotions") == 6000 and i), 10)
        tiers = {x["name"]: x["bytes"] for x in info["tiers"]}
        store = {x["name"]: x for x in info["tiers"]}["store"]
        t.ok(info["state"] == "active" and info["handoffs"] == 1 and
             tiers == {"dram": (128 << 20) - 6000 * 4096, "store": 6000 * 4096} and
             store["stored-bytes"] == store["compressed-bytes"] == 6000 * 4096 and
             store["pages-evicted"] == 6000 and store["pages-faulted-back"] == 0 and
             info["report-age-ms"] < 5000 and info["size"] == 128 << 20,
             f"query-memory-tiers: {tiers}, store {store}, age {info['report-age-ms']} ms")
        hmp = q.command("human-monitor-command", **{"command-line": "info memory-tiers"})
        t.ok("memory backend: mem0" in hmp and "(active, 1 hand-offs)" in hmp and
             f"tier store: {6000 * 4096} bytes" in hmp and
             f"stored: {6000 * 4096} bytes, compressed to {6000 * 4096} bytes (ratio 1.00)"
             in hmp and "pages evicted: 6000, faulted back: 0" in hmp,
             "HMP info memory-tiers")
        # The VM's TCO report (STATS with VTIER_STATS_F_TCO): what the peer sent.
        r = peer.cmd("tco 3 0.5")
        tco = wait_for("a STATS report with the TCO block", lambda: (
            (i := q.tiers()["mem0"].get("tco")) and i["windows"] == int(r["windows"]) and i), 10)
        nusd = lambda v: round(v * 1e9)
        qt = {x["name"]: x for x in tco["tiers"]}
        hmp = q.command("human-monitor-command", **{"command-line": "info memory-tiers"})
        t.ok(nusd(tco["usd-per-hour"]) == int(r["cost_nusd"]) > 0 and
             nusd(tco["all-dram-usd-per-hour"]) == int(r["all_dram_nusd"]) and
             nusd(tco["saving-usd-per-month"]) == int(r["saving_month_nusd"]) and
             round(tco["saving-pct"] * 1000) == int(r["saving_pct_milli"]) > 0 and
             tco["bytes"] == 128 << 20 and tco["placement"] == "peer" and
             qt["dram"]["bytes"] == int(r["dram_bytes"]) == (128 << 20) - 6000 * 4096 and
             qt["store"]["bytes"] == int(r["store_bytes"]) == 6000 * 4096 and
             nusd(qt["store"]["usd-per-hour"]) == int(r["store_nusd"]) and
             nusd(qt["dram"]["usd-per-hour"]) == int(r["dram_nusd"]) and
             qt["dram"]["kind"] == "numa" and qt["store"]["kind"] == "compressed" and
             qt["dram"]["usd-per-gib"] == 3 and qt["store"]["usd-per-gib"] == 0.5 and
             "TCO of the VM (placement peer" in hmp and
             f"tier store (compressed): {6000 * 4096} bytes" in hmp,
             f"query-memory-tiers tco is the peer's: {r}; QMP {tco}")
        # The VM's migration as the agent sees it (VTIER_STATS_F_MIGRATION),
        # last in the report after the TCO block: what the peer sent.
        keys = ["started", "completed", "failed", "extra-bytes", "extra-peak-bytes",
                "extra-bound-bytes", "promotions-held", "profiles-seeded",
                "profiles-refused", "plan-chunks"]
        for state, figures, line in [
                ("outgoing", [3, 1, 1, 12 << 20, 30 << 20, 32 << 20, 3, 0, 0, 0],
                 "  migration: outgoing, extra 12 MiB (peak 30 MiB, bound 32 MiB), "
                 "3 promotions held\r\n"),
                ("placing", [0, 0, 0, 0, 0, 0, 0, 1, 0, 57],
                 "  migration: placing, 57 chunks to place (1 profile seeded)\r\n")]:
            want = dict(zip(keys, figures), state=state)
            r = peer.cmd(f"migration {state} " + " ".join(map(str, figures)))
            mig = wait_for(f"a STATS report with the {state} migration block", lambda: (
                (i := q.tiers()["mem0"]) and i.get("migration") == want and i), 10)
            hmp = q.command("human-monitor-command", **{"command-line": "info memory-tiers"})
            t.ok(r["state"] == str(["none", "outgoing", "placing"].index(state)) and
                 mig["tco"]["placement"] == "peer" and line in hmp and
                 "TCO of the VM (placement peer" in hmp,
                 f"query-memory-tiers migration is the peer's ({state}), with the TCO block; "
                 f"HMP {line.strip()!r}")
        peer.cmd("migration off")
        wait_for("a STATS report without the migration block",
                 lambda: "migration" not in q.tiers()["mem0"], 10)
        hmp = q.command("human-monitor-command", **{"command-line": "info memory-tiers"})
        t.ok("migration:" not in hmp and "TCO of the VM" in hmp,
             "a report without the block: no migration member, no HMP line")
        q.guest("half 0xbeef 3 0")
        v = q.guest("verify")
        st = peer.status()
        t.ok(v["bad"] == "0", f"after partial writes to evicted pages: bad={v['bad']}")
        t.ok(st["stored"] == "0" and int(st["promotions"]) == 6000,
             f"every evicted page was served back (promotions={st['promotions']})")
        # The store tier's figures as the peer measured them (STATS v2).
        info = wait_for("a STATS report with the faults served back", lambda: (
            (i := q.tiers()["mem0"]) and i.get("promotions") == 6000 and i), 10)
        store = {x["name"]: x for x in info["tiers"]}["store"]
        p50, p99 = store["fault-latency-p50-ns"], store["fault-latency-p99-ns"]
        t.ok(store["pages-evicted"] == 6000 and store["pages-faulted-back"] == 6000 and
             store["bytes"] == store["stored-bytes"] == 0 and 0 < p50 <= p99 and
             (p50, p99) == (int(st["lat_p50"]), int(st["lat_p99"])),
             f"per-tier figures after the faults: {store}")

        # Evict again, read everything.
        r = peer.cmd(f"evict {REGION + 4096:#x} 7000 2")
        t.ok(r["evicted"] == "7000", f"evicted 7000 more pages: {r}")
        v = q.guest("verify")
        t.ok(v["bad"] == "0" and peer.status()["stored"] == "0",
             f"guest read all evicted pages back: bad={v['bad']}")

        # Evict while the guest writes the same pages: a racing write must
        # abort the eviction of its page, never be lost.
        wp0 = int(peer.status()["wp"])
        q.serial.send("scribble 0x77 300")
        busy = evicted = 0
        for rnd in range(16):
            r = peer.cmd(f"evict {REGION + (rnd % 7) * 4096:#x} 2000 7")
            busy += int(r["busy"])
            evicted += int(r["evicted"])
        q.guest_reply(300, "scribble")
        v = q.guest("verify")
        wp = int(peer.status()["wp"]) - wp0
        t.ok(v["bad"] == "0",
             f"eviction racing guest writes: {evicted} evicted, {busy} aborted, "
             f"{wp} write-protect faults, bad={v['bad']}")

        # A write that lands between the copy and the punch: held on purpose.
        q.serial.send("hammer 100 4000000 0x31")
        time.sleep(0.2)
        r = peer.cmd(f"evict {REGION + 100 * 4096:#x} 1 1 300000")
        q.guest_reply(300, "hammer")
        v = q.guest("verify")
        t.ok(r["busy"] == "1" and r["evicted"] == "0" and v["bad"] == "0",
             f"a write during the eviction aborts it: {r}, bad={v['bad']}")

        # Negative control: a peer that corrupts 3 pages must be caught.
        q.guest("fill 0x4242")
        peer.cmd(f"evict {REGION:#x} 100 1")
        peer.cmd("corrupt 3")
        v = q.guest("verify")
        t.ok(v["bad"] == "3", f"the check catches corrupted pages (bad={v['bad']}, want 3)")
        q.guest("fill 0x5151")
        t.ok(q.guest("verify")["bad"] == "0", "guest memory rewritten")

        # Policy goes to the agent; its answer shows in QMP.
        q.command("set-memory-tier-policy", id="mem0", mode="auto",
                  **{"dram-limit": 64 << 20, "tiers": ["dram", "store"]})
        info = wait_for("the agent's answer", lambda: (
            (i := q.tiers()["mem0"]) and "policy-status" in i and i), 10)
        st = peer.status()
        t.ok(info["policy-status"] == 0 and st["policies"] == "1" and st["policy_mode"] == "2",
             f"policy applied by the agent: {info['policy-message']}")
        q.command("set-memory-tier-policy", id="mem0", mode="observe",
                  **{"dram-limit": 1 << 40})
        info = wait_for("the agent's refusal", lambda: (
            (i := q.tiers()["mem0"]) and "policy-status" in i and i), 10)
        t.ok(info["policy-status"] == -34 and "exceeds" in info["policy-message"],
             f"policy refused by the agent: {info['policy-status']} {info['policy-message']}")
        q.command("set-memory-tier-policy", id="mem0", mode="auto")

        # kill -9 in the middle of serving faults.
        r = peer.cmd(f"evict {REGION:#x} 8000 2")
        t.ok(r["evicted"] == "8000", "evicted 8000 pages before the kill")
        peer.cmd("slow 1000")
        before = int(peer.status()["faults"])
        q.serial.send("verify")
        wait_for("the peer to serve 1000 faults",
                 lambda: int(peer.status()["faults"]) >= before + 1000, 60)
        left = int(peer.status()["stored"])
        peer.kill9()
        t.ok(0 < left < 8000, f"peer killed with SIGKILL mid-stream, {left} pages still evicted")
        time.sleep(2)
        early = q.serial.readline(0.1)
        t.ok(early is None, f"while no agent runs the guest waits (early answer: {early})")
        ev = q.wait_event("MEMORY_TIER_AGENT_CHANGE", 10,
                          lambda e: e["data"]["state"] == "disconnected")
        t.ok(q.tiers()["mem0"]["state"] == "disconnected",
             f"QMP sees the agent gone: {ev['data']}")

        peer.start()
        st = wait_for("QEMU to hand the fds over again",
                      lambda: (s := peer.status()) and s["connected"] == "1" and s, 30)
        t.ok(st["generation"] == "2" and int(st["hello_flags"], 16) & 1,
             f"QEMU reconnected: generation {st['generation']}, flags {st['hello_flags']}")
        ev = q.wait_event("MEMORY_TIER_AGENT_CHANGE", 10,
                          lambda e: e["data"]["state"] == "active")
        t.ok(ev["data"]["handoffs"] == 2, f"QMP event after the reconnect: {ev['data']}")
        v = q.guest_reply(120, "verify after the restart")
        t.ok(v["bad"] == "0", f"after kill -9 and restart: bad={v['bad']}")
        st = peer.status()
        t.ok(st["stored"] == "0", f"the restarted peer served the rest (stored={st['stored']})")
        t.ok(st["policies"] == "1" and st["policy_mode"] == "2",
             "QEMU sent the policy again to the restarted peer")

        # And the new peer keeps working: evict, write, verify.
        r = peer.cmd(f"evict {REGION:#x} 3000 5")
        q.guest("write 0x99 2 1")
        v = q.guest("verify")
        t.ok(r["evicted"] == "3000" and v["bad"] == "0",
             f"the restarted peer evicts and serves: bad={v['bad']}")

        # QEMU keeps running when the agent goes away for good.
        peer.kill9()
        q.command("query-status")
        t.ok(q.proc.poll() is None, "QEMU survives losing its agent")
        peer.start()
        wait_for("reconnect", lambda: (s := peer.status()) and s["connected"] == "1", 30)
        t.ok(peer.status()["generation"] == "3", "third hand-off after the second restart")
        t.ok(q.guest("verify")["bad"] == "0", "guest memory intact at the end")


if __name__ == "__main__":
    main(test)
