#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""make bench-remote, its second part: vtierd's own faults served from the
remote tier, with vtierd's end of it on a UDP socket and on AF_XDP, side by
side in one run (docs/remote.md, "vtierd's own end").

Three vtier-memd (UDP, the same for every variant), each in a network
namespace of its own, joined by a bridge in a fourth namespace to one veth
whose other end is vtierd's, in the root namespace (10.83.0.1; the servers
10.83.0.11-13): one L2 network, so an AF_XDP end on that veth reaches every
server. Per round, each variant in turn (udp afxdp afxdp-busy, udp ...: the
machine's drift hits each alike), a vtierd of its own with [remote.far]
(copies = 2) and:
  udp         transport = udp
  afxdp       transport = afxdp, interface = the veth, xdp_bind = copy
  afxdp-busy  the same with busy_poll = yes
the patched QEMU attached by its hand-off (the test guest, TCG), its region
filled (mixed content), demoted to far, then read back by the guest: every
page a fault that vtierd serves from the servers. vtierd's own figures of that
read-back, from `vtierctl stats`: the backend's fault p50/p99 (faults served
from the store, vtierd taking the fault to the page in place; same-filled
pages, which need no fetch, included) and far's fetch p50/p99 (the remote
client's get of a page with data: request to the page opened). One line per
round ("# round K: ROUND variant=... end_mode=... end_busy_poll=... retries=...":
retries, the client's tries sent again during the read-back), then per
variant the median of the rounds:
  RESULT-REMOTE-VTIERD-BENCH variant=V end_mode=M fault_p50_us= fault_p99_us=
                             fetch_p50_us= fetch_p99_us= faults=
Fails when a page reads back wrong (the guest's verify), or a variant's end is
not what it asked for (udp; afxdp-copy; busy_poll); exits 77 without root or
without the patched QEMU. One short round of it (1024 pages) is the meson test
qemu-remote-vtierd-ends (make check-qemu).
Knobs (environment): BENCH_REMOTE_VTIERD_ROUNDS (5), BENCH_REMOTE_VTIERD_PAGES
(the guest region's pages, 16384: 64 MiB), BENCH_REMOTE_VTIERD_VARIANTS ("udp
afxdp afxdp-busy").
Usage (root; what `make bench-remote` runs): VTIER_TEST_BUILD=BUILD/tests/qemu
VTIER_QEMU_DIR=... PYTHONPATH=tests/qemu bench_remote_vtierd.py MEMD_STEER_BPF_O"""

import os
import random
import statistics
import subprocess
import sys
import time

from vtier_qemu import Harness, TestFailure, Vtierd, log, wait_for
from test_remote_vtierd import Net, backend, far_of, sh, start_memds

SERVERS = 3
NET = "10.83.0"         # not the other remote tests' 10.78, 10.79, 10.81
CLIENT_PORT = 7700
REGION = 16 << 20       # guest-physical address of the test guest's region
UUID = "5a1e0000-1111-4222-8333-0000000b0083"
VARIANTS = {
    "udp": "transport = udp\n",
    "afxdp": "transport = afxdp\ninterface = {ifname}\naddress = {addr}\nport = {port}\n"
             "xdp_prog = {prog}\nxdp_bind = copy\n",
    "afxdp-busy": "transport = afxdp\ninterface = {ifname}\naddress = {addr}\nport = {port}\n"
                  "xdp_prog = {prog}\nxdp_bind = copy\nbusy_poll = yes\n",
}
EXPECT = {"udp": ("udp", False), "afxdp": ("afxdp-copy", False),
          "afxdp-busy": ("afxdp-copy", True)}


class Bridged(Net):
    """Namespaces s1..s3 and a switch namespace whose bridge joins their veths
    and the root namespace's veth (vtierd's end); cleanup() (Net's) removes
    them all."""

    def __init__(self):
        tag = f"{os.getpid() % 10000}{random.randrange(100):02d}"
        self.sw = f"vtb{tag}sw"
        self.ns = {k: f"vtb{tag}s{k}" for k in range(1, SERVERS + 1)}
        self.ifname = f"vb{tag}c"
        self.addr = f"{NET}.1"
        self.made_ns, self.made_if = [], []

    def server_addr(self, k):
        return f"{NET}.{10 + k}"

    def setup(self):
        used = sh("ip", "-4", "-o", "addr", "show", "to", f"{NET}.0/24").stdout.strip()
        if used:
            raise TestFailure(f"{NET}.0/24 is already in use in the root namespace: {used}")
        for ns in [self.sw, *self.ns.values()]:
            sh("ip", "netns", "add", ns)
            self.made_ns.append(ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", self.sw, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.sw, "link", "set", "br0", "up")
        sh("ip", "link", "add", self.ifname, "type", "veth", "peer", "name", "c0",
           "netns", self.sw)
        self.made_if.append(self.ifname)
        sh("ip", "addr", "add", f"{self.addr}/24", "dev", self.ifname)
        sh("ip", "link", "set", self.ifname, "up")
        ports = ["c0"]
        for k, ns in self.ns.items():
            sh("ip", "-n", ns, "link", "add", "vs", "type", "veth", "peer", "name", f"p{k}",
               "netns", self.sw)
            sh("ip", "-n", ns, "addr", "add", f"{self.server_addr(k)}/24", "dev", "vs")
            sh("ip", "-n", ns, "link", "set", "vs", "up")
            ports.append(f"p{k}")
        for p in ports:
            sh("ip", "-n", self.sw, "link", "set", p, "master", "br0")
            sh("ip", "-n", self.sw, "link", "set", p, "up")


def retries_of(far):
    """The tries far's client sent again (no reply in time), all servers."""
    return sum(s.get("retries", 0) for s in far.get("remote", {}).get("servers", []))


def one_round(h, memds, net, prog, variant, rnd, pages):
    """One vtierd with @variant's end, one VM: filled, demoted, read back."""
    servers = ", ".join(f"{m.addr}/{m.key}" for m in memds)
    end = VARIANTS[variant].format(ifname=net.ifname, addr=net.addr, port=CLIENT_PORT,
                                   prog=prog)
    d = Vtierd(h, name=f"vtierd-{variant}-{rnd}",
               extra_config=f"[remote.far]\nservers = {servers}\ncopies = 2\ncodec = lz4\n{end}")
    d.start()
    q = h.qemu(f"vm-{variant}-{rnd}", d.agent, pages=pages, extra=["-uuid", UUID])
    try:
        q.connect()
        q.wait_ready()
        vm = wait_for("the VM attached by its hand-off", lambda: d.run("list") or None, 20)[0]
        vm = vm["name"]
        d.run("policy", vm, "mode=off")
        q.guest("content mixed")
        q.guest(f"fill {0x5e71 + rnd:#x}")
        d.run("demote", vm, "tier=far", f"gpa={REGION}", f"len={pages * 4096}")
        time.sleep(0.5)
        b = wait_for("the demotion carried out", lambda: (
            (x := backend(d.run("stats", vm))) and x["backlog"] == 0 and x), 180)
        held = far_of(b)["pages"]
        retries0 = retries_of(far_of(b))
        t0 = time.monotonic()
        v = q.guest("verify", timeout=600)
        secs = time.monotonic() - t0
        # the upkeep (every 100 ms) takes the client's figures for the stats
        time.sleep(0.5)
        b = backend(d.run("stats", vm))
        far = far_of(b)
        rem = far.get("remote", {})
        e = rem.get("end", {})
        r = {"variant": variant, "bad": int(v["bad"]), "held": held,
             "faults": b["faults_stored"], "fault_p50_us": b["fault_p50_ns"] / 1000,
             "fault_p99_us": b["fault_p99_ns"] / 1000,
             "fetch_p50_us": rem.get("fetch_p50_ns", 0) / 1000,
             "fetch_p99_us": rem.get("fetch_p99_ns", 0) / 1000, "gets": far["gets"],
             "end_mode": e.get("mode", "none"), "end_busy_poll": int(e.get("busy_poll", 0)),
             "end_fallback": e.get("fallback", ""), "end_rx_dropped": e.get("rx_dropped", 0),
             "end_tx_busy": e.get("tx_busy", 0),
             "retries": retries_of(far) - retries0,
             "verify_s": secs}
        q.command("quit")
        q.proc.wait(timeout=30)
    finally:
        if q.proc.poll() is None:
            q.proc.kill()
        d.proc.terminate()
        d.proc.wait(timeout=30)
    return r


def main():
    if os.geteuid() != 0:
        print("bench-remote-vtierd: needs root (network namespaces, AF_XDP)", flush=True)
        sys.exit(77)
    prog = os.path.realpath(sys.argv[1])
    # libxdp pins its dispatcher in a bpffs: our own mount namespace with one
    if subprocess.run(["stat", "-f", "-c", "%T", "/sys/fs/bpf"], capture_output=True,
                      text=True).stdout.strip() != "bpf_fs":
        if os.environ.get("BENCH_REMOTE_VTIERD_UNSHARED"):
            sh("mount", "-t", "bpf", "bpf", "/sys/fs/bpf")
        else:
            os.environ["BENCH_REMOTE_VTIERD_UNSHARED"] = "1"
            os.execvp("unshare", ["unshare", "--mount", "--propagation", "private",
                                  sys.executable, *sys.argv])
    rounds = int(os.environ.get("BENCH_REMOTE_VTIERD_ROUNDS", "5"))
    pages = int(os.environ.get("BENCH_REMOTE_VTIERD_PAGES", "16384"))
    variants = os.environ.get("BENCH_REMOTE_VTIERD_VARIANTS", "udp afxdp afxdp-busy").split()
    for v in variants:
        if v not in VARIANTS:
            sys.exit(f"bench-remote-vtierd: BENCH_REMOTE_VTIERD_VARIANTS: '{v}': "
                     f"{', '.join(VARIANTS)} accepted")
    res = {v: [] for v in variants}
    with Harness("bench-remote-vtierd") as h:
        net = Bridged()
        memds = []
        try:
            net.setup()
            start_memds(h, net, memds)
            for rnd in range(1, rounds + 1):
                for v in variants:
                    r = one_round(h, memds, net, prog, v, rnd, pages)
                    log(f"round {rnd}: ROUND " + " ".join(
                        f"{k}={r[k]:.1f}" if isinstance(r[k], float) else f"{k}={r[k]}"
                        for k in r if k != "end_fallback") +
                        (f" end_fallback='{r['end_fallback']}'" if r["end_fallback"] else ""))
                    want = EXPECT[v]
                    if r["bad"] or (r["end_mode"], bool(r["end_busy_poll"])) != want:
                        raise TestFailure(f"round {rnd} {v}: bad pages {r['bad']}, end "
                                          f"{r['end_mode']} busy_poll {r['end_busy_poll']} "
                                          f"(expected {want})")
                    res[v].append(r)
        except Exception:
            for m in memds:
                if m.starts:
                    print("\n".join(f"# {x}" for x in m.logs().splitlines()), flush=True)
            raise
        finally:
            net.cleanup()
    for v in variants:
        med = {k: statistics.median(r[k] for r in res[v])
               for k in ("fault_p50_us", "fault_p99_us", "fetch_p50_us", "fetch_p99_us",
                         "faults")}
        print(f"RESULT-REMOTE-VTIERD-BENCH variant={v} end_mode={EXPECT[v][0]} "
              f"fault_p50_us={med['fault_p50_us']:.1f} fault_p99_us={med['fault_p99_us']:.1f} "
              f"fetch_p50_us={med['fetch_p50_us']:.1f} fetch_p99_us={med['fetch_p99_us']:.1f} "
              f"faults={med['faults']:.0f}", flush=True)


if __name__ == "__main__":
    try:
        main()
    except TestFailure as e:
        print(f"bench-remote-vtierd: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
