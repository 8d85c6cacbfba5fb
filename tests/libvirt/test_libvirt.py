#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""vtierd and a real libvirtd on this host (tests/libvirt/libvirtd-ns: a
private libvirtd in a mount namespace of its own, QEMU under TCG, domains
that stay in SeaBIOS: nothing to boot). vtierd attaches a domain with a vtier
policy at its start event, and the ones already running when it connects;
leaves a domain without policy alone until vtierctl attach --domain; applies
virsh metadata --live at once and refuses a bad policy with its reason in
vtierctl status, the old one kept; survives a libvirtd restart (and a start
before libvirtd) and still gets events after it; detaches at virsh destroy.
The hook (qemu.d/50-vtier) is installed: domains start and stop with vtierd
down and with a vtierd that accepts and never answers.
The domains run mode=off: this host's DAMON is not vtierd's to take, and
the profiler is not what is tested here."""

import json
import re
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "qemu"))
from vtier_qemu import TestFailure, wait_for  # noqa: E402

NS = "http://vtier.dev/xmlns/libvirt/policy/1"
URI = "qemu:///system"


class Tap:
    def __init__(self):
        self.n = 0

    def ok(self, cond, what):
        self.n += 1
        print(f"{'ok' if cond else 'not ok'} {self.n} - {what}", flush=True)
        if not cond:
            raise TestFailure(what)


def virsh(*args, check=True):
    r = subprocess.run(["virsh", "-c", URI, *args], capture_output=True, text=True, timeout=60)
    if check and r.returncode:
        raise TestFailure(f"virsh {' '.join(args)}: {r.stderr.strip()}")
    return r


class Env:
    def __init__(self, d, tools):
        self.dir = d
        self.tools = tools
        # where the hook looks for vtierd (/run/vtier is private: libvirtd-ns)
        self.ctl = "/run/vtier/vtierd.sock"
        self.vtierd = None
        self.starts = 0

    def start_vtierd(self, *extra):
        self.starts += 1
        self.log = os.path.join(self.dir, f"vtierd.{self.starts}.log")
        self.vtierd = subprocess.Popen(
            [os.path.join(self.tools, "vtierd"), "--socket", self.ctl, "--agent-socket", "none",
             "--libvirt-uri", URI, "--metrics-listen", "127.0.0.1:0", "--verbose", *extra],
            stdout=open(self.log, "w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_for("vtierd's control socket", lambda: self.call("list", check=False) is not None, 10)
        with open(self.log) as f:
            self.metrics_port = int(re.search(r"metrics on \S+ \(port (\d+)\)", f.read())[1])

    def scrape(self):
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.headers["Content-Type"], r.read().decode()

    def stop_vtierd(self):
        """SIGTERM; vtierd exits 0 (a sanitizer build: with nothing to report)."""
        if self.vtierd and self.vtierd.poll() is None:
            self.vtierd.send_signal(signal.SIGTERM)
            self.vtierd.wait(timeout=30)
        if self.vtierd and self.vtierd.returncode != 0:
            raise TestFailure(f"vtierd exited {self.vtierd.returncode} on SIGTERM (see {self.log})")
        self.vtierd = None

    def post_mortem(self):
        """After a failure: where vtierd's threads are, if it still runs, then stop it."""
        if self.vtierd and self.vtierd.poll() is None:
            pid = self.vtierd.pid
            task = f"/proc/{pid}/task"
            for tid in sorted(os.listdir(task), key=int):
                try:
                    with open(f"{task}/{tid}/comm") as f:
                        comm = f.read().strip()
                    with open(f"{task}/{tid}/wchan") as f:
                        wchan = f.read().strip()
                except OSError:
                    continue
                print(f"# thread {tid} {comm}: waits in {wchan or '-'}")
            if shutil.which("gdb"):
                r = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx",
                                    "-ex", "thread apply all bt"],
                                   capture_output=True, text=True, timeout=120)
                sys.stdout.write("".join(f"# {line}\n" for line in r.stdout.splitlines()
                                         if line.startswith(("#", "Thread"))))
        try:
            self.stop_vtierd()
        except (TestFailure, subprocess.TimeoutExpired) as e:
            print(f"# vtierd did not stop: {e}")
            self.vtierd.kill()

    def call(self, *args, check=True):
        r = subprocess.run([os.path.join(self.tools, "vtierctl"), "--socket", self.ctl, "--json",
                            *args], capture_output=True, text=True, timeout=30)
        out = json.loads(r.stdout) if r.stdout.strip() else None
        if r.returncode:
            if check:
                raise TestFailure(f"vtierctl {' '.join(args)}: {r.stderr.strip()}")
            return out
        return out["result"]

    def vms(self):
        return {v["name"]: v for v in self.call("list")}

    def logged(self, text):
        with open(self.log) as f:
            return text in f.read()

    def domain_xml(self, name, policy):
        qmp = os.path.join(self.dir, f"{name}.qmp")
        meta = f"<metadata><vtier:policy xmlns:vtier='{NS}' {policy}/></metadata>" \
            if policy is not None else ""
        path = os.path.join(self.dir, f"{name}.xml")
        with open(path, "w") as f:
            f.write(f"""<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>{name}</name>
  <memory unit='MiB'>64</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  {meta}
  <devices><emulator>/usr/bin/qemu-system-x86_64</emulator></devices>
  <qemu:commandline>
    <qemu:arg value='-qmp'/>
    <qemu:arg value='unix:{qmp},server=on,wait=off'/>
  </qemu:commandline>
</domain>
""")
        return path


def test(env, t):
    env.start_vtierd()
    t0 = time.monotonic()
    virsh("create", env.domain_xml("lv-a", 'mode="off" dram_limit="256MiB"'))
    vm = wait_for("lv-a attached", lambda: env.vms().get("lv-a"), 20)
    result = {"attach_s": time.monotonic() - t0}
    t.ok(vm["attached_by"] == "libvirt" and len(vm["domain_uuid"]) == 36,
         f"started domain with a policy attached by its start event in "
         f"{time.monotonic() - t0:.2f} s, as a libvirt domain")
    t.ok(vm["policy"]["dram_limit"] == 256 << 20 and vm["policy"]["mode"] == "off",
         "the metadata's policy is the VM's")

    ctype, text = env.scrape()
    uuid = vm["domain_uuid"]
    t.ok(ctype.startswith("text/plain; version=0.0.4") and
         f'vtier_vm_info{{domain="lv-a",uuid="{uuid}",vm="lv-a",mode="off"' in text and
         'vtier_libvirt_connected 1' in text, "metrics: the domain with its uuid, libvirt up")
    t.ok(f'vtier_vm_ram_bytes{{domain="lv-a",uuid="{uuid}"}} 67108864\n' in text and
         "vtier_vm_memory_bytes{" not in text,
         "metrics: the domain's RAM; no per-tier bytes before a profiled window (mode=off)")
    free = re.findall(r'^vtier_host_tier_free_bytes\{tier="[^"]+",kind="numa",nodes="[0-9,]+"\} '
                      r'([0-9.e+]+)$', text, re.M)
    t.ok(f'vtier_host_info{{host="{socket.gethostname()}"}} 1\n' in text and free and
         all(float(x) > 0 for x in free),
         f"metrics: the host's view, its name and its tiers' free memory ({free})")
    if shutil.which("promtool"):
        r = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                           capture_output=True)
        t.ok(r.returncode == 0, f"promtool check metrics on a real scrape {r.stdout}{r.stderr}")

    with open(os.path.join(HERE, "..", "..", "docs", "grafana-vtier.json")) as f:
        wanted = {re.sub(r"_(bucket|sum|count)$", "", m)
                  for m in re.findall(r"vtier_[a-z0-9_]+", f.read())}
    served = set(re.findall(r"^# TYPE (\S+)", text, re.M))
    t.ok(wanted <= served, f"the Grafana dashboard reads only served metrics "
         f"(missing: {sorted(wanted - served)})")

    virsh("create", env.domain_xml("lv-b", None))
    time.sleep(1)
    t.ok("lv-b" not in env.vms(), "a domain without vtier policy is left alone")
    r = env.call("attach", "--domain", "lv-b", "mode=off")
    t.ok(r["name"] == "lv-b" and r["attached_by"] == "libvirt", "vtierctl attach --domain lv-b")
    r = env.call("attach", "--domain", "lv-nosuch", "mode=off", check=False)
    t.ok(r and not r["ok"] and r["errno"] == 2, f"attach --domain of no domain: {r and r['error']}")

    t0 = time.monotonic()
    virsh("metadata", "lv-a", "--uri", NS, "--key", "vtier", "--live",
          "--set", '<policy mode="off" dram_limit="128MiB" tco_alpha="0.3"/>')
    wait_for("the new dram_limit", lambda: env.call("policy", "lv-a")["dram_limit"] == 128 << 20, 5)
    result["live_policy_s"] = time.monotonic() - t0
    p = env.call("policy", "lv-a")
    t.ok(p["tco_alpha"] == 0.3, f"virsh metadata --live applied in {result['live_policy_s']:.2f} s")

    virsh("metadata", "lv-a", "--uri", NS, "--key", "vtier", "--live",
          "--set", '<policy mode="off" dram_limit="lots"/>')
    st = wait_for("the refusal in status", lambda: (lambda s: s if "dram_limit" in s["policy_refused"]
                                                    else None)(env.call("status", "lv-a")), 5)
    t.ok("the old one stays" in st["policy_refused"] and st["policy"]["dram_limit"] == 128 << 20,
         f"bad policy refused, old one kept: {st['policy_refused']}")
    t.ok(env.logged("lv-a: libvirt metadata policy refused"), "the refusal is in vtierd's log")
    virsh("metadata", "lv-a", "--uri", NS, "--key", "vtier", "--live",
          "--set", '<policy mode="off" tiers="dram,nosuch"/>')
    st = wait_for("the tiers refusal", lambda: (lambda s: s if "nosuch" in s["policy_refused"]
                                                 else None)(env.call("status", "lv-a")), 5)
    t.ok(st["policy"]["dram_limit"] == 128 << 20 and st["policy"]["tiers"] == "all",
         f"a policy naming a tier this host lacks is refused too: {st['policy_refused']}")

    # libvirtd restarts under vtierd: VMs stay, events come again
    t0 = time.monotonic()
    subprocess.run([os.environ["LIBVIRTD_NS_RESTART"]], check=True, timeout=60)
    wait_for("vtierd's reconnect", lambda: env.logged("connected, 2 running"), 40)
    result["reconnect_s"] = time.monotonic() - t0
    t.ok(set(env.vms()) == {"lv-a", "lv-b"}, "libvirtd restart: both VMs still attached")
    virsh("metadata", "lv-a", "--uri", NS, "--key", "vtier", "--live",
          "--set", '<policy mode="off" dram_limit="64MiB"/>')
    wait_for("policy after reconnect", lambda: env.call("policy", "lv-a")["dram_limit"] == 64 << 20, 5)
    t.ok(True, "metadata change after the restart applied (events registered again)")

    # libvirtd hangs (SIGSTOP): an attach --domain waits on its job, the loop answers
    with open(os.path.join(env.dir, "ns", "libvirtd.pid")) as f:
        lpid = int(f.read())
    os.kill(lpid, signal.SIGSTOP)
    try:
        att = subprocess.Popen([os.path.join(env.tools, "vtierctl"), "--socket", env.ctl,
                                "--json", "attach", "--domain", "lv-a"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        worst = 0
        for _ in range(20):
            t0 = time.monotonic()
            env.call("list")
            env.scrape()
            worst = max(worst, time.monotonic() - t0)
        t.ok(att.poll() is None and worst < 1,
             f"libvirtd stopped: attach --domain waits, list + scrape answer meanwhile "
             f"(worst {worst * 1000:.0f} ms)")
    finally:
        os.kill(lpid, signal.SIGCONT)
    out, _ = att.communicate(timeout=30)
    t.ok("already attached" in out, "libvirtd continued: the attach --domain answered (EEXIST)")
    # and vtierd stops on SIGTERM while libvirtd hangs under one of its calls
    os.kill(lpid, signal.SIGSTOP)
    try:
        att = subprocess.Popen([os.path.join(env.tools, "vtierctl"), "--socket", env.ctl,
                                "attach", "--domain", "lv-a"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        t0 = time.monotonic()
        log = env.log
        env.stop_vtierd()
        dt = time.monotonic() - t0
        with open(log) as f:
            said = "still waiting on libvirtd" in f.read()
        t.ok(dt < 5 and said, f"SIGTERM with libvirtd hung: vtierd exits 0 in {dt:.1f} s and "
             f"says what it left")
    finally:
        os.kill(lpid, signal.SIGCONT)
    att.wait(timeout=30)
    env.start_vtierd()
    wait_for("lv-a attached again", lambda: "lv-a" in env.vms(), 20)

    # A migration drives the VM's migration state from QEMU's MIGRATION events:
    # outgoing while it runs, failed when cancelled (the domain runs on, still
    # attached), completed by virsh save (QEMU migrates the domain into a
    # file); the restored domain (an incoming QEMU) starts with none. The
    # cancelled one goes through libvirt's monitor to a socket that is never
    # read, slowed to 4 KiB/s besides (virsh save runs at full speed: 64 MiB
    # of zeros take it milliseconds; libvirt's sandbox forbids exec:).
    def hmp(cmd, **args):
        return virsh("qemu-monitor-command", "lv-a",
                     json.dumps({"execute": cmd, "arguments": args}))

    image = os.path.join(env.dir, "lv-a.save")
    sink = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sink.bind(os.path.join(env.dir, "sink.mig"))
    sink.listen(8)
    hmp("migrate-set-parameters", **{"max-bandwidth": 4096})
    t0 = time.monotonic()
    hmp("migrate", uri=f"unix:{os.path.join(env.dir, 'sink.mig')}")
    wait_for("lv-a outgoing", lambda: env.call("status", "lv-a")["migration"]["state"] ==
             "outgoing", 20)
    result["outgoing_s"] = time.monotonic() - t0
    hmp("migrate_cancel")
    wait_for("lv-a's migration ended", lambda: env.call("status", "lv-a")["migration"]["state"] ==
             "none", 20)
    mig = wait_for("lv-a's migration counted", lambda: (lambda m: m if m["failed"] else None)(
        env.call("stats", "lv-a")["migration"]), 20)
    t.ok(mig["started"] == 1 and mig["failed"] == 1 and mig["completed"] == 0 and
         "lv-a" in env.vms() and virsh("domstate", "lv-a").stdout.strip() == "running",
         f"a migration cancelled: outgoing after {result['outgoing_s']:.2f} s, then failed; "
         f"still attached, the domain runs")
    t.ok(env.logged("lv-a: migration started (QMP)") and
         env.logged("lv-a: migration failed or cancelled (QMP)"),
         "vtierd's log says the migration started and failed")
    # vtierd (re)started during a migration: attached as outgoing at once
    hmp("migrate", uri=f"unix:{os.path.join(env.dir, 'sink.mig')}")
    env.stop_vtierd()
    env.start_vtierd()
    wait_for("lv-a attached again", lambda: "lv-a" in env.vms(), 20)
    st = env.call("status", "lv-a")["migration"]["state"]
    hmp("migrate_cancel")
    mig = wait_for("lv-a's migration counted", lambda: (lambda m: m if m["failed"] else None)(
        env.call("stats", "lv-a")["migration"]), 20)
    t.ok(st == "outgoing" and mig["started"] == 1 and
         env.logged("lv-a: migration started (QMP)"),
         f"attached during a migration: {st} from the start, then failed when cancelled")
    sink.close()
    hmp("migrate-set-parameters", **{"max-bandwidth": 134217728})
    virsh("save", "lv-a", image)
    wait_for("lv-a detached", lambda: "lv-a" not in env.vms(), 10)
    t.ok(env.logged("lv-a: migration completed (QMP)"), "virsh save: completed, then detached")
    virsh("restore", image)
    vm = wait_for("lv-a attached again", lambda: env.vms().get("lv-a"), 20)
    time.sleep(1)
    t.ok(env.call("status", "lv-a")["migration"]["state"] == "none" and
         env.call("stats", "lv-a")["migration"]["started"] == 0,
         "virsh restore (an incoming QEMU): attached, its own migration is not taken as outgoing")

    virsh("destroy", "lv-a")
    wait_for("lv-a detached", lambda: "lv-a" not in env.vms(), 10)
    t.ok(True, "virsh destroy detaches")

    # vtierd starts after the domains: attaches the running ones with a policy
    env.stop_vtierd()
    virsh("create", env.domain_xml("lv-c", 'mode="off"'))
    env.start_vtierd()
    wait_for("lv-c attached at connect", lambda: "lv-c" in env.vms(), 20)
    t.ok("lv-b" not in env.vms(), "vtierd started after the domains: lv-c (policy) attached, "
         "lv-b (none) not")

    # vtierd starts before libvirtd: connects when it comes
    env.stop_vtierd()
    subprocess.run([os.environ["LIBVIRTD_NS_RESTART"], "stop"], check=True, timeout=60)
    env.start_vtierd()
    time.sleep(1.5)
    t.ok(env.logged("retrying in"), "no libvirtd: vtierd says so and retries")
    subprocess.run([os.environ["LIBVIRTD_NS_RESTART"]], check=True, timeout=60)
    wait_for("lv-c attached after libvirtd came", lambda: "lv-c" in env.vms(), 40)
    t.ok(True, "vtierd started before libvirtd attaches once it comes")
    virsh("metadata", "lv-c", "--uri", NS, "--remove", "--live")
    wait_for("lv-c detached", lambda: "lv-c" not in env.vms(), 5)
    t.ok(env.logged("lv-c: detached: its libvirt domain's vtier policy was removed"),
         "virsh metadata --remove detaches")
    # [libvirt] attach = all: every running domain with a -qmp socket, policy or not,
    # with [policy]'s defaults
    env.stop_vtierd()
    conf = os.path.join(env.dir, "vtierd.conf")
    with open(conf, "w") as f:
        f.write("[libvirt]\nattach = all\n\n[policy]\nmode = off\ndram_share = 0.5\n")
    env.start_vtierd("--config", conf)
    wait_for("both attached", lambda: {"lv-b", "lv-c"} <= set(env.vms()), 20)
    p = env.vms()["lv-b"]["policy"]
    t.ok(p["mode"] == "off" and p["dram_share"] == 0.5,
         "[libvirt] attach = all: domains without a policy attached too, with [policy]'s defaults")
    virsh("destroy", "lv-b")
    virsh("destroy", "lv-c")
    wait_for("every VM detached", lambda: not env.vms(), 10)
    env.stop_vtierd()

    # the hook with vtierd down, then hung: domains start and stop as ever
    hook = "/etc/libvirt/hooks/qemu.d/50-vtier"
    t.ok(os.access(hook, os.X_OK), "the hook is installed in libvirtd's qemu.d")
    for state in ("down", "hung"):
        if state == "hung":
            hung = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            hung.bind(env.ctl)
            hung.listen(64)   # connections queue, nothing is ever read or answered
        t0 = time.monotonic()
        virsh("create", env.domain_xml("lv-h", 'mode="off"'))
        t1 = time.monotonic()
        virsh("destroy", "lv-h")
        t.ok(True, f"vtierd {state}: domain start {(t1 - t0) * 1000:.0f} ms and stop "
             f"{(time.monotonic() - t1) * 1000:.0f} ms through the hook")
        result[f"start_ms_vtierd_{state}"] = (t1 - t0) * 1000
        if state == "hung":
            hung.close()
            os.unlink(env.ctl)
    print("# RESULT-LIBVIRT-HOST " + " ".join(f"{k}={v:.2f}" for k, v in result.items()))


def main():
    if os.geteuid() != 0 or not shutil.which("libvirtd") or not shutil.which("virsh"):
        print("1..0 # SKIP needs root and libvirtd (scripts/deps.sh)")
        return 0
    tools = os.environ.get("VTIER_TOOLS")
    if not os.environ.get("LIBVIRTD_NS_INSIDE"):
        d = tempfile.mkdtemp(prefix="vtier-libvirt-", dir="/tmp")
        r = subprocess.run([os.path.join(HERE, "libvirtd-ns"), os.path.join(d, "ns"),
                            sys.executable, os.path.abspath(__file__), d])
        if r.returncode == 0:
            shutil.rmtree(d, ignore_errors=True)
        else:
            print(f"# scratch kept in {d}")
        return r.returncode
    env = Env(sys.argv[1], tools)
    t = Tap()
    try:
        test(env, t)
    except TestFailure as e:
        print(f"not ok {t.n + 1} - {e}", flush=True)
        print(f"1..{t.n + 1}")
        env.post_mortem()
        for i in range(1, env.starts + 1):
            with open(os.path.join(env.dir, f"vtierd.{i}.log")) as f:
                sys.stdout.write("".join(f"# {line}" for line in f.readlines()[-40:]))
        return 1
    finally:
        if env.vtierd:
            env.vtierd.kill()
    print(f"1..{t.n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
