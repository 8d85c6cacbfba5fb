"""Run testbed scenarios: boot L1 under TCG, let it run them, collect results.

The run directory (shared with L1 over 9p as tag "tb", mounted at /tb):
  in/    config.env, tb.sh, l1.sh, suite.sh, suite (the scenarios' names and
         attempt numbers, in order), scenarios/NAME.sh, shares, l1-overlay.cpio
         (unpacked over L1's root: the project's binaries), l2-overlay.cpio
         (appended to the L2 initramfs: l2.sh and the project's binaries)
  out/   written by L1: result, timings, scenario.log, l1-setup.log,
         l1-topology.txt, l1-dmesg.log, l2/NAME/{console.log,qemu.log};
         written here: l1-console.log, l1-qemu.log, l1-qemu-debug.log (QEMU's
         -d cpu_reset,guest_errors: "Triple fault" lands here), l1-events.log
         (L1's QMP events: the SHUTDOWN reason), attempts (on a rerun)
A suite (several scenarios in one boot, tb/suite.py) has each scenario's
result, timings, scenario.log, l1-dmesg.log, l1-reset.log and l2/ in
out/NAME/, and the L1 files in out/.
L1 is one QEMU process in its own process group; it is killed (group-wide) on
timeout, on any error, on SIGINT/SIGTERM, and if this process dies (PDEATHSIG).
"""

import ctypes
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

from . import cpio
from . import images
from . import rerun as tbrerun
from . import suite as tbsuite

HERE = images.HERE
REPO = os.path.dirname(os.path.dirname(HERE))
# The QEMU that runs L1 (TB_L1_QEMU): stock, or "patched", the build of
# tests/testbed/qemu-l1/ (Debian's 10.0.2 plus fixes to TCG, docs/testbed.md
# "Emulator faults"), or a path.
STOCK_QEMU = "/usr/bin/qemu-system-x86_64"
QEMU_L1_BUILD = os.path.join(HERE, "qemu-l1", "build.sh")
# Features of -cpu EPYC that TCG does not implement; dropped to keep the log clean.
TCG_MISSING = ["fxsr-opt", "misalignsse", "osvw", "topoext", "nrip-save", "xsavec"]
RESULT_RE = re.compile(r"^(PASS|SKIP|FAIL)\b ?(.*)$")
# A failure that the emulator caused (written by l1.sh for L2, by l1_exit_cause for L1).
EMULATOR_RESET_RE = tbsuite.EMULATOR_RESET_RE
# l1.sh's console marks in a suite: a scenario starts, ends (its out/NAME/result
# is written), and L1 stops on purpose (done, or the rest needs a fresh L1).
START_RE = re.compile(r"VTIER-TB-L1: scenario (\S+): start\b")
END_RE = re.compile(r"VTIER-TB-L1: scenario (\S+): end\b")
STOP_RE = re.compile(r"VTIER-TB-L1: suite: L1 (powers off|stops|not reusable)")


def log(msg):
    print(f"testbed: {msg}", flush=True)


def parse_size(s):
    m = re.fullmatch(r"(\d+)([KMGT]?)", s.strip().upper())
    if not m:
        raise ValueError(f"bad size '{s}' (want e.g. 512M, 3G)")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[m.group(2)]


def load_config():
    """Defaults from tests/testbed/config, overridden by the environment."""
    cfg = {}
    with open(os.path.join(HERE, "config")) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            k, _, v = line.partition("=")
            cfg[k.strip()] = v.strip().strip('"')
    for k, v in os.environ.items():
        if k.startswith("TB_"):
            cfg[k] = v
    return cfg


def qopt(path):
    """A path inside a QEMU option (commas are doubled)."""
    return path.replace(",", ",,")


def shell_quote(v):
    return "'" + v.replace("'", "'\\''") + "'"


def find_scenario(name):
    if os.path.sep in name or name.endswith(".sh"):
        path = os.path.abspath(name)
    else:
        path = os.path.join(HERE, "scenarios", name + ".sh")
    if not os.path.isfile(path):
        avail = sorted(f[:-3] for f in os.listdir(os.path.join(HERE, "scenarios"))
                       if f.endswith(".sh"))
        raise SystemExit(f"testbed: no scenario '{name}' (have: {', '.join(avail)})")
    return path


def find_binary(build, name):
    path = os.path.join(build, "tests/testbed", name)
    if not os.path.isfile(path):
        raise SystemExit(f"testbed: {path} missing: build first (make build, or "
                         f"meson compile -C {build})")
    out = subprocess.run(["ldd", path], text=True, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT).stdout
    if "not a dynamic executable" not in out:
        raise SystemExit(f"testbed: {path} is not static (a sanitizer build?): "
                         "the guests need the static build")
    return path


def parse_file_args(specs):
    """[(src, dest)] from SRC:/DEST specs; the same pair twice counts once (a
    suite's scenarios may each ask for a file), two sources for one
    destination are an error."""
    out = []
    for spec in specs:
        src, sep, dst = spec.partition(":")
        if not sep or not dst.startswith("/"):
            raise SystemExit(f"testbed: bad file spec '{spec}' (want SRC:/ABS/DEST)")
        if not os.path.isfile(src):
            raise SystemExit(f"testbed: {src}: no such file")
        pair = (os.path.abspath(src), dst)
        other = [s for s, d in out if d == dst]
        if other and other[0] != pair[0]:
            raise SystemExit(f"testbed: two files for {dst}: {other[0]} and {pair[0]}")
        if not other:
            out.append(pair)
    return out


def prepare_rundir(rundir, cfg, scenarios, build, l1_files, l2_files, shares):
    """scenarios: [(name, path, attempt)], run in this order."""
    indir = os.path.join(rundir, "in")
    os.makedirs(os.path.join(rundir, "out"))
    os.makedirs(indir)
    with open(os.path.join(indir, "config.env"), "w") as f:
        for k in sorted(cfg):
            f.write(f"{k}={shell_quote(cfg[k])}\n")
    shutil.copy(os.path.join(HERE, "l1/tb.sh"), indir)
    shutil.copy(os.path.join(HERE, "l1/l1.sh"), indir)
    shutil.copy(os.path.join(HERE, "l1/suite.sh"), indir)
    os.makedirs(os.path.join(indir, "scenarios"))
    for name, path, _ in scenarios:
        shutil.copy(path, os.path.join(indir, "scenarios", name + ".sh"))
    with open(os.path.join(indir, "suite"), "w") as f:
        f.write("".join(f"{name} {attempt}\n" for name, _, attempt in scenarios))
    with open(os.path.join(indir, "shares"), "w") as f:
        f.write("".join(s + "\n" for s in shares))
    # vtierd behind a wrapper that records the guests it may act on (l1/vtierd-mark)
    if any(dst == "/usr/local/bin/vtierd" for _, dst in l1_files):
        l1_files.append((os.path.join(HERE, "l1", "vtierd-mark"), "/usr/local/sbin/vtierd"))
    tools = [find_binary(build, "vtier-workload"), find_binary(build, "vtier-tbctl")]
    for t in tools:
        l1_files.append((t, "/usr/local/bin/" + os.path.basename(t)))
        l2_files.append((t, "/usr/bin/" + os.path.basename(t)))
    # L1 only, optional (scenario tcg-cmc skips without it)
    cmc = os.path.join(build, "tests/testbed", "vtier-cmc")
    if os.path.isfile(cmc):
        l1_files.append((find_binary(build, "vtier-cmc"), "/usr/local/bin/vtier-cmc"))
    # Archives rather than trees: L1 reads each with a few large 9p reads.
    with open(os.path.join(indir, "l1-overlay.cpio"), "wb") as f:
        w = cpio.CpioWriter(f)
        for src, dst in l1_files:
            w.add_file(dst, src)
        w.close()
    with open(os.path.join(indir, "l2-overlay.cpio"), "wb") as f:
        w = cpio.CpioWriter(f)
        w.add_file("etc/vtier-tb/l2.sh", os.path.join(HERE, "l2/l2.sh"), 0o644)
        for src, dst in l2_files:
            w.add_file(dst, src)
        w.close()


def l1_qemu(cfg):
    """(path, what it is) of the qemu-system-x86_64 that runs L1."""
    path = cfg.get("TB_L1_QEMU", "") or "stock"
    if path == "stock":
        return STOCK_QEMU, ("stock (Debian's 10.0.2; TB_L1_QEMU=patched runs the build of "
                            "tests/testbed/qemu-l1 with the TCG fixes)")
    if path == "patched":
        res = subprocess.run([QEMU_L1_BUILD, "--print-dir"], text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        built = os.path.join(res.stdout.strip(), "build", "qemu-system-x86_64")
        if res.returncode == 0 and os.access(built, os.X_OK):
            return built, "tests/testbed/qemu-l1: 10.0.2 with the L1 fixes"
        raise SystemExit("testbed: TB_L1_QEMU=patched but tests/testbed/qemu-l1 is not built "
                         "(make testbed-qemu-l1)")
    if not os.access(path, os.X_OK):
        raise SystemExit(f"testbed: TB_L1_QEMU={path} is not an executable")
    return path, "TB_L1_QEMU"


def qemu_command(cfg, imgdir, rundir, shares, interactive):
    out = os.path.join(rundir, "out")
    nodes = []   # (id, size, lat, bw)
    for i, kind in enumerate(["DRAM", "CXL", "PMEM"]):
        size = parse_size(cfg[f"TB_L1_{kind}_MEM"])
        if size or i == 0:
            nodes.append((len(nodes), size, cfg[f"TB_L1_{kind}_LAT_NS"], cfg[f"TB_L1_{kind}_BW"]))
    if not nodes[0][1]:
        raise SystemExit("testbed: TB_L1_DRAM_MEM must not be 0")
    total = sum(n[1] for n in nodes)
    cpus = int(cfg["TB_L1_CPUS"])
    cpu = cfg["TB_L1_CPU_MODEL"]
    if cpu == "EPYC":
        cpu += "," + ",".join("-" + f for f in TCG_MISSING)
    cmd = [cfg["TB_L1_QEMU_PATH"], "-name", "vtier-tb-l1", "-accel", f"tcg,thread={cfg['TB_L1_TCG_THREAD']}",
           "-cpu", cpu,
           "-smp", str(cpus), "-m", f"{total >> 20}M", "-machine", "q35,hmat=on",
           "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot"]
    for nid, size, lat, bw in nodes:
        cmd += ["-object", f"memory-backend-ram,id=m{nid},size={size >> 20}M"]
        node = f"node,nodeid={nid},memdev=m{nid}"
        node += f",cpus=0-{cpus - 1}" if nid == 0 else ",initiator=0"
        cmd += ["-numa", node]
    for a, _, _, _ in nodes:
        for b, _, _, _ in nodes:
            if a < b:
                cmd += ["-numa", f"dist,src={a},dst={b},val={10 + 10 * (b - a) if a == 0 else 20}"]
    for nid, _, lat, bw in nodes:
        hl = "-numa", f"hmat-lb,initiator=0,target={nid},hierarchy=memory,data-type="
        cmd += [hl[0], hl[1] + f"access-latency,latency={lat}"]
        cmd += [hl[0], hl[1] + f"access-bandwidth,bandwidth={bw}"]
    # no_timer_check: on a loaded host, TCG's timer interrupt may not arrive
    # within the kernel's boot-time check ("IO-APIC + timer doesn't work!",
    # a panic). KVM guests skip that check by themselves.
    append = ("console=ttyS0 panic=-1 rdinit=/init loglevel=4 mitigations=off no_timer_check "
              + cfg.get("TB_L1_CMDLINE_EXTRA", "")).strip()
    cmd += ["-kernel", os.path.join(imgdir, "vmlinuz"),
            "-initrd", qopt(os.path.join(imgdir, "l1.cpio")), "-append", append]
    log_path = os.path.join(out, "l1-console.log")
    if interactive:
        cmd += ["-chardev", f"stdio,id=con,mux=on,signal=off,logfile={qopt(log_path)}",
                "-serial", "chardev:con", "-mon", "chardev=con,mode=readline"]
    else:
        cmd += ["-chardev", f"file,id=con,path={qopt(log_path)}", "-serial", "chardev:con"]
    cmd += ["-virtfs", f"local,path={qopt(rundir)},mount_tag=tb,security_model=none,id=tb"]
    for tag, path in shares.items():
        cmd += ["-virtfs", f"local,path={qopt(path)},mount_tag={tag},security_model=none,"
                f"readonly=on,id={tag}"]
    swap = parse_size(cfg["TB_L1_SWAP"])
    if swap:
        img = os.path.join(rundir, "swap.img")
        with open(img, "wb") as f:
            f.truncate(swap)
        cmd += ["-drive", f"if=none,id=swap,file={qopt(img)},format=raw,cache=unsafe,discard=unmap",
                "-device", "virtio-blk-pci,drive=swap,serial=vtier-swap"]
    cmd += ["-qmp", f"unix:{qopt(os.path.join(rundir, 'l1.qmp'))},server=on,wait=off"]
    # Why L1 ends: its QMP events (a socket of the runner's own) and TCG's
    # reset log, which names a triple fault.
    cmd += ["-qmp", f"unix:{qopt(os.path.join(rundir, 'l1-watch.qmp'))},server=on,wait=off",
            "-d", "cpu_reset,guest_errors", "-D", os.path.join(out, "l1-qemu-debug.log")]
    return cmd


def _pdeathsig():
    # If the runner dies (even by SIGKILL), the kernel kills L1 too.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)   # PR_SET_PDEATHSIG


class L1:
    def __init__(self, cmd, rundir, interactive):
        self.rundir = rundir
        out = os.path.join(rundir, "out")
        self.qlog = open(os.path.join(out, "l1-qemu.log"), "w")
        self.proc = subprocess.Popen(
            cmd, start_new_session=True, preexec_fn=_pdeathsig,
            stdin=None if interactive else subprocess.DEVNULL,
            stdout=None if interactive else self.qlog,
            stderr=self.qlog)
        with open(os.path.join(out, "l1.pid"), "w") as f:
            f.write(f"{self.proc.pid}\n")

    def kill(self):
        """Kill L1's whole process group: TERM, a grace period, then KILL.
        (Once QEMU is reaped its group id may be reused: leave it alone then.)"""
        if self.proc.poll() is None:
            for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, None)):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    pass
        self.proc.wait()
        self.qlog.close()


class EventLog(threading.Thread):
    """Copies L1's QMP events to out/l1-events.log until QEMU closes the socket."""

    def __init__(self, rundir, t0):
        super().__init__(daemon=True)
        self.sock_path = os.path.join(rundir, "l1-watch.qmp")
        self.path = os.path.join(rundir, "out", "l1-events.log")
        self.t0 = t0
        self.shutdown = None   # data of the SHUTDOWN event: {"guest": bool, "reason": str}

    def run(self):
        deadline = time.monotonic() + 60
        with open(self.path, "a") as log:
            while True:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.connect(self.sock_path)
                    break
                except OSError as e:
                    sock.close()
                    if time.monotonic() > deadline:
                        log.write(f"cannot connect to {self.sock_path}: {e}\n")
                        return
                    time.sleep(0.1)
            with sock, sock.makefile("rwb", buffering=0) as f:
                f.write(b'{"execute":"qmp_capabilities"}\n')
                for raw in f:
                    try:
                        msg = json.loads(raw)
                    except ValueError:
                        continue
                    if "event" not in msg:
                        continue
                    log.write(f"[{time.monotonic() - self.t0:.2f} s] {raw.decode().strip()}\n")
                    log.flush()
                    if msg["event"] == "SHUTDOWN" and self.shutdown is None:
                        self.shutdown = msg.get("data", {})


def l1_exit_cause(rundir, events, scenario_out=None):
    """(emulator_reset, text): why L1 ended without writing a result, and
    whether that may be rerun (tb/rerun.py). An L1 fault is the emulator's
    only when proved by its signature: TCG's "Triple fault" log line for a
    silent reset, or the console text of a known panic; and even then it is
    not rerun when vtier_tdp.ko was loaded in this boot (out/vtier-l1, or
    the kernel's own taint O/E on the console), an assertion of the scenario
    failed, or vtier acted on any guest's memory in the scenario.
    scenario_out: the out directory of the scenario that was running (its
    L2 guests' events), when not out/ (a suite)."""
    out = os.path.join(rundir, "out")
    sout = scenario_out or out
    events.join(timeout=5)
    sd = events.shutdown
    if sd is None:
        return False, "no SHUTDOWN event (QEMU crashed or was killed?)"
    reason, guest = sd.get("reason", "?"), sd.get("guest")
    text = f"SHUTDOWN reason {reason}{' (guest)' if guest else ''}"
    try:
        with open(os.path.join(out, "l1-qemu-debug.log"), errors="replace") as f:
            triple = "Triple fault" in f.read()
    except OSError:
        triple = False
    try:
        with open(os.path.join(out, "l1-console.log"), errors="replace") as f:
            console = f.read()
    except OSError:
        console = ""
    announced = "Kernel panic" in console or "reboot: Restarting" in console
    proof = None
    if reason == "guest-reset" and guest:
        if triple and not announced:
            proof = "TCG logged a triple fault"
        else:
            proof = stock_kernel_panic(console) or panic_after_l2_triple_fault(
                console, [r.name for r in tbrerun.l2_resets(sout) if r.proof])
    if not proof:
        if reason == "guest-reset" and guest and not announced:
            return False, text + ", silent, but TCG logged no triple fault: no proof of an emulator fault"
        return False, text + (", TCG logged a triple fault" if triple else "")
    why = tbrerun.l1_refusal(sout, out)
    taint = kernel_taint(console)
    if taint:
        why.insert(0, f"the L1 kernel was tainted by an out-of-tree module ({taint}: vtier_tdp.ko)")
    if why:
        return False, f"{text}, {proof}; no rerun: {'; '.join(why)}"
    return True, (f"{text}, {proof}; rerun allowed: no assertion failed, vtier did nothing "
                  "to any guest's memory, vtier_tdp.ko not loaded")


def kernel_taint(console):
    """The taint flags of the L1 kernel's oops header if they name an
    out-of-tree (O) or unsigned (E) module, the only kind vtier's is."""
    for m in re.finditer(r"CPU: [^\n]* Tainted: ([A-Z ]+?)\s+\d", console):
        flags = m.group(1).replace(" ", "")
        if "O" in flags or "E" in flags:
            return f"Tainted: {flags}"
    return None


def panic_after_l2_triple_fault(console, l2_resets):
    """The L1 panic that KVM's handling of an L2 triple fault ends in, if it is one.

    The known pair (docs/testbed.md, "Emulator faults"): an L2 guest's stock
    kernel triple-faults on a fetch of its own kernel text (the emulator's
    fault), and in the same moment L1 panics with 'corrupted stack end
    detected inside scheduler' in that guest's vCPU thread ('CPU n/KVM'),
    the first time the thread schedules after running the guest. l2_resets:
    the guests whose triple fault is proved (tb/rerun.py). Recognised: the
    same message, in an L2 vCPU thread, after such a reset, and no frame of
    a vtier module in the trace; whether it may be rerun is l1_exit_cause's
    (never with vtier_tdp.ko loaded).
    """
    if not l2_resets:
        return None
    m = re.search(r"Kernel panic - not syncing: (corrupted stack end detected inside scheduler)\n"
                  r"[^\n]*CPU: \d+ UID: \d+ PID: \d+ Comm: (CPU \d+/KVM) ", console)
    if not m:
        return None
    trace = console[m.end():m.end() + 8000].split("---[ end", 1)[0]
    if re.search(r"\[vtier\w*\]", trace):
        return None
    return (f"L1 kernel '{m.group(1)}' in {m.group(2)} after L2 {', '.join(l2_resets)} "
            "reported a guest reset (the L2 triple fault's L1 panic)")


def stock_kernel_panic(console):
    """The L1 kernel's first oops or panic, if the kernel was 'Not tainted'.

    L1 runs Debian's kernel as shipped; our only kernel code is vtier_tdp.ko,
    and loading any out-of-tree module taints the kernel ('Tainted: ... O').
    An untainted kernel that oopses or panics did so with none of our kernel
    code loaded, and user space cannot corrupt a kernel (only crash it on
    purpose through sysrq, which is not excused): the fault is the
    emulation's (docs/testbed.md, "Emulator faults"). A tainted one is never
    excused.
    """
    m = re.search(r"(Kernel panic - not syncing: [^\n]*|Oops: [^\n]*|BUG: [^\n]*)\n"
                  r"(?:[^\n]*\n){0,3}?[^\n]*CPU: [^\n]*(Not tainted|Tainted)", console)
    if not m or m.group(2) != "Not tainted" or "sysrq triggered crash" in m.group(1):
        return None  # a deliberate crash (selftest-crash) is not the emulator's
    return f"L1 kernel '{m.group(1).strip()}' with no module of ours loaded (Not tainted)"


def tail(path, lines, upto=None):
    """The last lines of a file (of its first upto bytes, if given)."""
    try:
        with open(path, "rb") as f:
            data = io.StringIO(f.read(upto).decode(errors="replace"), newline=None).readlines()
    except OSError:
        return f"({path}: missing)\n"
    cut = data[-lines:]
    head = f"(last {len(cut)} of {len(data)} lines)\n" if len(data) > lines else ""
    return head + "".join(cut)


def attach_logs(rundir, scenario_out=None, console_upto=None):
    """Print the logs of a failed run. In a suite, scenario_out is the
    scenario's out/NAME (its guests) and console_upto the L1 console's size
    at the scenario's end (its part is the tail up to there)."""
    out = os.path.join(rundir, "out")
    parts = [("L1 console", os.path.join(out, "l1-console.log"), 150, console_upto),
             ("L1 QEMU", os.path.join(out, "l1-qemu.log"), 40, None),
             ("L1 QMP events", os.path.join(out, "l1-events.log"), 10, None),
             ("L1 setup", os.path.join(out, "l1-setup.log"), 40, None)]
    l2root = os.path.join(scenario_out or out, "l2")
    if os.path.isdir(l2root):
        for name in sorted(os.listdir(l2root)):
            for f in ("console.log", "qemu.log", "events.log"):
                parts.append((f"L2 {name} {f}", os.path.join(l2root, name, f), 80, None))
    for title, path, n, upto in parts:
        print(f"======== {title}: {path}")
        sys.stdout.write(tail(path, n, upto))
    # An L1 QEMU built with VTIER_L1_QEMU_DEBUG=1 (tests/testbed/qemu-l1/debug)
    # logs each vCPU's last events at a triple fault, and guest #PFs on
    # kernel addresses with the page walk re-done.
    debug = os.path.join(out, "l1-qemu-debug.log")
    try:
        with open(debug, errors="replace") as f:
            lines = [ln for ln in f if ln.startswith("vtier-debug:")]
    except OSError:
        lines = []
    if lines:
        print(f"======== L1 QEMU debug (vtier-debug lines, last 120 of {len(lines)}): {debug}")
        sys.stdout.write("".join(lines[-120:]))
    print("======== end of logs")


def keep_logs(name, outs, keep=30, max_file=32 << 20):
    """Copy the out/ of every attempt of a failed or rerun scenario (outs,
    oldest first) to $VTIER_CACHE/testbed/failed-runs/NAME/attemptN, which
    outlives the build directory (CI runs in a clean clone that is removed
    afterwards): the evidence of an emulator fault or a failure is read there
    later. Files over max_file are cut to their last max_file bytes. Returns
    the directory, or None."""
    root = os.path.join(images.cache_root(), "failed-runs")
    dest = os.path.join(root, name)
    try:
        os.makedirs(dest, exist_ok=True)
        for i, src in enumerate(outs, 1):
            for dirpath, _dirs, files in os.walk(src):
                rel = os.path.relpath(dirpath, src)
                to = os.path.normpath(os.path.join(dest, f"attempt{i}", rel))
                os.makedirs(to, exist_ok=True)
                for fn in files:
                    path = os.path.join(dirpath, fn)
                    if not os.path.isfile(path) or os.path.islink(path):
                        continue
                    with open(path, "rb") as f:
                        size = os.fstat(f.fileno()).st_size
                        if size > max_file:
                            f.seek(size - max_file)
                        data = f.read(max_file)
                    with open(os.path.join(to, fn), "wb") as f:
                        f.write(data)
    except OSError as e:
        log(f"could not keep the logs in {dest}: {e}")
        return None
    prune_runs(root, keep)
    return dest


def prune_runs(parent, keep=10):
    try:
        runs = sorted(d for d in os.listdir(parent) if os.path.isdir(os.path.join(parent, d)))
    except OSError:
        return
    for d in runs[:-keep]:
        shutil.rmtree(os.path.join(parent, d), ignore_errors=True)


def read_timings(path):
    timings = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.partition(" ")
                timings[k] = v.strip()
    except OSError:
        pass
    return timings


def l2_boot_times(timings):
    return [f"L2 {k[3:-7]} boot {float(v):.1f} s" for k, v in timings.items()
            if k.startswith("l2_") and k.endswith("_boot_s")]


def read_result(path):
    """(verdict, detail) from a result file, or None if there is none."""
    try:
        with open(path) as f:
            m = RESULT_RE.match(f.read().strip())
    except OSError:
        return None
    return (m.group(1), m.group(2)) if m else ("FAIL", "unreadable result")


def run_l1(args, cfg, st, paths, build, imgdir, rundir, report):
    """One boot of L1 running the scenarios st.pending(), in order (a single
    run: the one scenario, with out/ as its out directory). Calls
    report(rundir, name, verdict, detail, out, seconds, timings, console_upto)
    for each result as it comes; whatever ends L1 early is charged to the
    scenario that was running, or else to the first that had not started."""
    single = len(st.scenarios) == 1
    names = st.pending()
    st.boots += 1
    boot = st.boots
    t_start = time.monotonic()
    timeout = int(cfg["TB_TIMEOUT"])
    attempt_of = {n: len(st.get(n).attempts) + 1 for n in names}
    if single:
        cfg = dict(cfg, TB_ATTEMPT=str(attempt_of[names[0]]), TB_SUITE="0")
    else:
        # each scenario's attempt comes with its name (in/suite)
        cfg = dict(cfg, TB_SUITE="1")
        cfg.pop("TB_ATTEMPT", None)
    shares = {"src": REPO}
    if not build.startswith(REPO + os.sep):
        shares["build"] = build
    prepare_rundir(rundir, cfg, [(n, paths[n], attempt_of[n]) for n in names], build,
                   parse_file_args(args.l1_file), parse_file_args(args.l2_file), list(shares))
    cmd = qemu_command(cfg, imgdir, rundir, shares, args.shell)
    if args.print_cmd:
        print(" ".join(shell_quote(c) if re.search(r"[^\w,=./:+-]", c) else c for c in cmd))
    out = os.path.join(rundir, "out")
    if single:
        attempt = attempt_of[names[0]]
        log(f"scenario {names[0]}: run directory {rundir}"
            + (f" (attempt {attempt}/{st.max_attempts})" if attempt > 1 else ""))
    else:
        log(f"suite: L1 boot {boot}: run directory {rundir}: {', '.join(names)}")

    l1 = None
    events = None
    console = os.path.join(out, "l1-console.log")
    t_boot = None
    current, t_scenario, started, stopped = None, None, [], False
    detail = ""

    def charge(name, verdict, detail):
        if not st.get(name).final:
            report(rundir, name, verdict, detail, out if single else os.path.join(out, name),
                   time.monotonic() - (t_scenario if name == current else t_start),
                   read_timings(os.path.join(out if single else os.path.join(out, name), "timings")),
                   None)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        t0 = time.monotonic()
        l1 = L1(cmd, rundir, args.shell)
        events = EventLog(rundir, t0)
        events.start()
        deadline = None if args.shell else t0 + timeout
        pos = 0
        while True:
            # stream the L1 console (progress for humans and for test logs)
            if not args.shell:
                try:
                    with open(console, "rb") as f:
                        f.seek(pos)
                        chunk = f.read()
                except OSError:
                    chunk = b""
                end = chunk.rfind(b"\n") + 1
                for raw in chunk[:end].split(b"\n")[:-1]:
                    pos += len(raw) + 1
                    for line in raw.decode(errors="replace").splitlines():
                        if t_boot is None and "VTIER-TB-L1: init" in line:
                            t_boot = time.monotonic() - t0
                        print(f"L1| {line}", flush=True)
                        if single:
                            continue
                        m = START_RE.search(line)
                        if m and m.group(1) in names and m.group(1) not in started:
                            current, t_scenario = m.group(1), time.monotonic()
                            started.append(current)
                            deadline = t_scenario + timeout
                            attempt = attempt_of[current]
                            log(f"scenario {current}: run directory {rundir} (out/{current})"
                                + (f" (attempt {attempt}/{st.max_attempts})" if attempt > 1 else ""))
                        m = END_RE.search(line)
                        if m and m.group(1) == current:
                            name, sout = current, os.path.join(out, current)
                            verdict, text = read_result(os.path.join(sout, "result")) or (
                                "FAIL", "no result file after the scenario ended")
                            if verdict == "FAIL":
                                text = tbrerun.judge_l2(text, sout, out)[0]
                            report(rundir, name, verdict, text, sout, time.monotonic() - t_scenario,
                                   read_timings(os.path.join(sout, "timings")), pos)
                            current = None
                        if STOP_RE.search(line):
                            stopped = True
            if l1.proc.poll() is not None:
                break
            if deadline and time.monotonic() > deadline:
                if single or current is None:
                    detail = f"TIMEOUT: L1 still running after {timeout} s; killed"
                else:
                    detail = (f"TIMEOUT: L1 still running {timeout} s after scenario {current} "
                              "started; killed")
                break
            time.sleep(0.2)
        elapsed = time.monotonic() - t0
        rc_qemu = l1.proc.poll()
        l1.kill()
        timings = read_timings(os.path.join(out, "timings"))
        summary = [f"total {elapsed:.1f} s"]
        if t_boot is not None:
            summary.append(f"L1 kernel to init {t_boot:.1f} s (wall)")
        if "l1_ready_s" in timings:
            summary.append(f"L1 ready at {timings['l1_ready_s']} s (L1 uptime)")
        if single:
            summary += l2_boot_times(timings)
        log(f"timings: {'' if single else f'L1 boot {boot}: '}{'; '.join(summary)}")

        def exit_cause(scenario_out):
            emulator_reset, cause = l1_exit_cause(rundir, events, scenario_out)
            if emulator_reset:
                return True, f"EMULATOR-RESET L1: {cause}"
            return False, (f"L1 exited (QEMU status {rc_qemu}, {cause}) without a result: "
                           "kernel panic or init failure? see the L1 console")

        kind, who = ("scenario", names[0]) if single else tbsuite.l1_end(
            names, started, current, stopped, bool(detail))
        if kind == "scenario":
            if detail:
                verdict = "FAIL"
            elif current:
                verdict, detail = "FAIL", exit_cause(os.path.join(out, current))[1]
            else:
                # a single run's result, or L1's setup failure in a suite
                result = read_result(os.path.join(out, "result"))
                verdict, detail = result or ("FAIL", exit_cause(None)[1])
                if result and single and verdict == "FAIL":
                    detail = tbrerun.judge_l2(detail, out, out)[0]
                if not single:
                    verdict = "FAIL"
            charge(who, verdict, detail)
        elif kind == "fresh":
            log(f"suite: L1 stopped before {who}: the rest runs in a fresh L1")
        elif kind == "between":
            # in the reset after a scenario, or hung after the last one: no
            # scenario's failure, but the run's, unless the emulator's
            emulator_reset, cause = exit_cause(os.path.join(out, who))
            text = f"L1 ended after scenario {who}, not on purpose: {detail or cause}"
            if emulator_reset and not detail:
                log("!" * 72)
                log(f"{text}: the rest runs in a fresh L1")
                log("!" * 72)
            else:
                log(f"suite: {text}")
                st.l1_failure(boot, text)
                attach_logs(rundir)
    except KeyboardInterrupt as e:
        st.interrupted = True
        victim = current or next((n for n in names if n not in started), None)
        if victim:
            charge(victim, "FAIL", f"interrupted ({e})")
        st.abort(f"interrupted ({e})")
    finally:
        if l1:
            l1.kill()
        for s, h in old.items():
            signal.signal(s, h)
        try:
            os.unlink(os.path.join(rundir, "swap.img"))
        except OSError:
            pass


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(
        prog="tests/testbed/run",
        description="Boot the L1 host VM (TCG) and run SCENARIO in it; several scenarios "
                    "(a suite) run one after the other in one L1 boot, each with its own "
                    "deadline, out directory and result; see docs/testbed.md.")
    ap.add_argument("scenario", nargs="+",
                    help="name in tests/testbed/scenarios/ or a path to a .sh; several "
                         "(or NAME,NAME,...): a suite")
    ap.add_argument("--build", default=os.environ.get("VTIER_BUILD", os.path.join(REPO, "build")),
                    help="meson build directory with the static testbed tools (default: build)")
    ap.add_argument("--rundir", help="run directory (default: BUILD/testbed-runs/SCENARIO-TIME)")
    ap.add_argument("--shell", action="store_true",
                    help="interactive: L1 console on this terminal, a shell after the scenario")
    ap.add_argument("--l1-file", action="append", default=[], metavar="SRC:/DEST",
                    help="copy a file into L1's root for this run")
    ap.add_argument("--l2-file", action="append", default=[], metavar="SRC:/DEST",
                    help="add a file to the L2 initramfs for this run")
    ap.add_argument("--timeout", type=int,
                    help="seconds for the whole run (TB_TIMEOUT); in a suite, for each scenario")
    ap.add_argument("--print-cmd", action="store_true", help="print the L1 QEMU command")
    args = ap.parse_args(argv)

    cfg = load_config()
    if args.timeout:
        cfg["TB_TIMEOUT"] = str(args.timeout)
    timeout = int(cfg["TB_TIMEOUT"])
    # L1 gets a deadline of its own, so it can still stop its guests and report.
    if "TB_SCENARIO_TIMEOUT" not in os.environ:
        cfg["TB_SCENARIO_TIMEOUT"] = str(max(timeout - 60, timeout * 2 // 3))
    cfg["TB_SHELL"] = "1" if args.shell else "0"
    if parse_size(cfg["TB_L1_SWAP"]):
        cfg["TB_L1_SWAP_DEV_EXPECTED"] = "1"
    try:
        paths = [find_scenario(n) for n in tbsuite.parse_names(args.scenario)]
        names = tbsuite.parse_names([os.path.basename(p)[:-3] for p in paths])
    except ValueError as e:
        raise SystemExit(f"testbed: {e}")
    paths = dict(zip(names, paths))
    single = len(names) == 1
    if args.shell and not single:
        raise SystemExit("testbed: --shell runs one scenario, not a suite")
    build = os.path.abspath(args.build)
    t_images = time.monotonic()
    imgdir = images.ensure_images()
    t_images = time.monotonic() - t_images
    if args.rundir:
        base = os.path.abspath(args.rundir)
    else:
        parent = os.path.join(build, "testbed-runs")
        prune_runs(parent)
        base = os.path.join(parent, f"{time.strftime('%Y%m%d-%H%M%S')}-"
                            f"{names[0] if single else 'suite'}-{os.getpid()}")
    log(f"images {imgdir} ({t_images:.1f} s to check/build)")
    cfg["TB_L1_QEMU_PATH"], what = l1_qemu(cfg)
    log(f"L1 QEMU {cfg['TB_L1_QEMU_PATH']} ({what})")
    # An emulator fault proved by its signature, in a scenario where no
    # assertion failed and vtier touched neither that guest's memory nor the
    # L1 kernel (tb/rerun.py), gets the whole scenario rerun in a fresh L1, up
    # to TB_EMULATOR_ATTEMPTS attempts in all (2: one rerun); see
    # docs/testbed.md, "Emulator faults".
    attempts = max(1, int(cfg.get("TB_EMULATOR_ATTEMPTS", "2")))
    st = tbsuite.Suite(names, 1 if args.shell else attempts)
    if not single:
        log(f"suite: {len(names)} scenarios, one L1 boot while it stays healthy: {', '.join(names)}")

    def report(rundir, name, verdict, detail, out, seconds, timings, console_upto):
        if not single:
            log(f"timings: {name}: {seconds:.1f} s" + "".join(f"; {t}" for t in l2_boot_times(timings)))
        if verdict != "PASS" and not args.shell:
            attach_logs(rundir, None if single else out, console_upto)
        m = st.record(name, verdict, detail, out, seconds, st.boots)
        tried = st.get(name).attempts
        history = [a.line(i) for i, a in enumerate(tried, 1)]
        if len(history) > 1:
            os.makedirs(out, exist_ok=True)
            with open(os.path.join(out, "attempts"), "w") as f:
                f.write("".join(h + "\n" for h in history))
        if m:
            log("!" * 72)
            log(f"{m.group(1)} VM reset by the emulator (cause: {m.group(2)}): rerunning scenario"
                + ("" if single else f" {name} in a fresh L1")
                + f" (attempt {len(tried) + 1}/{st.max_attempts})")
            log("!" * 72)
            return
        if len(history) > 1:
            log(f"scenario {name}: ran {len(history)} times after emulator faults:")
            for h in history:
                log(f"  {h}")
        log(f"scenario {name}: {verdict}{' ' + detail if detail else ''} (logs: {out})")
        if (verdict == "FAIL" or len(history) > 1) and not args.shell:
            if single:
                kept = keep_logs(os.path.basename(base), [a.out for a in tried])
            else:
                # the whole boot's out/: the L1 logs are there
                kept = keep_logs(f"{os.path.basename(base)}-{name}",
                                 [os.path.dirname(a.out) for a in tried if a.out != "-"])
            if kept:
                log(f"scenario {name}: logs of every attempt kept in {kept}")

    while st.pending() and not st.interrupted:
        boot = st.boots + 1
        rundir = base if boot == 1 else f"{base}-{'attempt' if single else 'boot'}{boot}"
        if os.path.exists(rundir):
            raise SystemExit(f"testbed: {rundir} exists")
        run_l1(args, cfg, st, paths, build, imgdir, rundir, report)
    if not single:
        log(f"suite: {len(names)} scenarios in {st.boots} L1 boot(s):")
        for line in st.summary():
            log(f"  {line}")
    reruns = st.reruns()
    if reruns:
        log(f"{len(reruns)} rerun(s) after a proved emulator fault (counted in make check's summary)")
    # make check's summary (tests/testbed/check-summary): what ran, skipped, was rerun
    summary = os.environ.get("VTIER_CHECK_SUMMARY")
    if summary:
        with open(summary, "a") as f:
            f.write("".join(line + "\n" for line in st.check_lines()))
    return st.exit_status()
