# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers of the QEMU hand-off integration tests: start the patched QEMU
with the test guest, the reference peer, talk to QMP, the guest's serial
console and the peer's control socket, and clean every process up whatever
happens (each test runs inside `with Harness(...) as h:`)."""

import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


class TestFailure(Exception):
    pass


_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    # In the child, before exec: if the test process dies in any way
    # (even SIGKILL from a meson timeout), the kernel kills this child too.
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _sigterm(signum, frame):
    raise TestFailure(f"killed by signal {signum}")


def log(msg):
    print(f"# {msg}", flush=True)


def wait_for(what, cond, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise TestFailure(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def connect_unix(path, timeout=10):
    def try_connect():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            return None
    return wait_for(f"socket {path}", try_connect, timeout)


class LineSocket:
    """A unix socket spoken one line at a time."""

    def __init__(self, path, timeout=10):
        self.sock = connect_unix(path, timeout)
        self.buf = b""

    def send(self, line):
        self.sock.sendall(line.encode() + b"\n")

    def readline(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                return None
            if not data:
                raise TestFailure("connection closed")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace").rstrip("\r")

    def close(self):
        self.sock.close()


def parse_kv(line):
    return dict(w.split("=", 1) for w in line.split()[1:] if "=" in w)


class Peer:
    """The reference agent (tests/qemu/peer), killable and restartable."""

    def __init__(self, h, name):
        self.h = h
        self.name = name
        self.socket = os.path.join(h.dir, f"{name}.sock")
        self.control = os.path.join(h.dir, f"{name}.ctl")
        self.store = os.path.join(h.dir, f"{name}-store")
        self.proc = None
        self.log = None
        self.starts = 0

    def start(self, slow_us=0):
        self.starts += 1
        self.log = open(os.path.join(self.h.dir, f"{self.name}.{self.starts}.log"), "w")
        if os.path.exists(self.control):
            os.unlink(self.control)
        self.proc = self.h.spawn([self.h.peer_bin, "--socket", self.socket,
                                  "--control", self.control, "--store", self.store,
                                  "--slow-us", str(slow_us)], self.log)
        wait_for(f"{self.name} control socket", lambda: os.path.exists(self.control), 10)

    def cmd(self, line, timeout=120):
        c = LineSocket(self.control)
        try:
            c.send(line)
            reply = c.readline(timeout)
        finally:
            c.close()
        if reply is None:
            raise TestFailure(f"{self.name}: no reply to '{line}'")
        if not reply.startswith("OK"):
            raise TestFailure(f"{self.name}: '{line}' -> {reply}")
        return parse_kv(reply)

    def status(self):
        try:
            return self.cmd("status", timeout=10)
        except TestFailure:
            return None

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.h.procs.remove(self.proc)
        self.proc = None

    def logs(self):
        out = []
        for i in range(1, self.starts + 1):
            p = os.path.join(self.h.dir, f"{self.name}.{i}.log")
            with open(p) as f:
                out.append(f"--- {self.name} run {i}\n" + f.read())
        return "\n".join(out)


class Qemu:
    """One patched QEMU running the test guest under TCG."""

    def __init__(self, h, name, agent, mem_mb=128, pages=16384, required=True,
                 incoming=None, extra=(), backend_id="mem0"):
        self.h = h
        self.name = name
        self.qmp_path = os.path.join(h.dir, f"{name}.qmp")
        self.serial_path = os.path.join(h.dir, f"{name}.serial")
        self.log = open(os.path.join(h.dir, f"{name}.log"), "w")
        self.backend_id = backend_id
        # agent None: a plain memfd backend, no tier agent
        backend = f"memory-backend-memfd,id={backend_id},size={mem_mb}M,share=on"
        if agent:
            backend += f",tier-agent={agent},tier-agent-required={'on' if required else 'off'}"
        args = [h.qemu_bin, "-accel", "tcg", "-M", f"pc,memory-backend={backend_id}",
                "-m", f"{mem_mb}M", "-object", backend, "-nodefaults", "-vga", "none",
                "-display", "none", "-name", f"vtier-{name}",
                "-chardev", f"socket,id=ser0,path={self.serial_path},server=on,wait=off",
                "-serial", "chardev:ser0",
                "-qmp", f"unix:{self.qmp_path},server=on,wait=off",
                "-kernel", h.guest_elf, "-append", f"pages={pages}"]
        if incoming:
            args += ["-incoming", incoming]
        args += list(extra)
        self.proc = h.spawn(args, self.log)
        self.qmp = None
        self.serial = None
        self.events = []

    def connect(self):
        self.qmp = LineSocket(self.qmp_path)
        line = self.qmp.readline(10)
        if line is None:
            raise TestFailure(f"{self.qmp_path}: no QMP greeting within 10 s")
        try:
            greeting = json.loads(line)
        except ValueError:
            greeting = None
        if not isinstance(greeting, dict) or "QMP" not in greeting:
            # a CI run once read something else first here: say what
            raise TestFailure(f"{self.qmp_path}: the first line is not QMP's greeting: "
                              f"{line[:400]!r}")
        self.command("qmp_capabilities")
        self.serial = LineSocket(self.serial_path)

    def command(self, cmd, **args):
        msg = {"execute": cmd}
        if args:
            msg["arguments"] = args
        self.qmp.send(json.dumps(msg))
        while True:
            line = self.qmp.readline(60)
            if line is None:
                raise TestFailure(f"{self.name}: no QMP reply to {cmd}")
            r = json.loads(line)
            if "event" in r:
                self.events.append(r)
                continue
            if "error" in r:
                raise TestFailure(f"{self.name}: {cmd}: {r['error']['desc']}")
            return r["return"]

    def wait_event(self, name, timeout, match=lambda e: True):
        def seen():
            for e in self.events:
                if e["event"] == name and match(e):
                    self.events.remove(e)
                    return e
            line = self.qmp.readline(0.1)
            if line:
                self.events.append(json.loads(line))
            return None
        return wait_for(f"{self.name}: event {name}", seen, timeout, interval=0)

    def guest(self, line, timeout=120):
        """One command to the test guest, one 'OK ...' line back."""
        self.serial.send(line)
        return self.guest_reply(timeout, line)

    def guest_reply(self, timeout, what="reply"):
        deadline = time.monotonic() + timeout
        while True:
            reply = self.serial.readline(max(0.01, deadline - time.monotonic()))
            if reply is None:
                raise TestFailure(f"{self.name}: guest gave no answer to '{what}' in {timeout} s")
            if reply.startswith("OK") or reply.startswith("ERR") or \
               reply.startswith("FATAL"):
                break
        if not reply.startswith("OK"):
            raise TestFailure(f"{self.name}: guest: '{what}' -> {reply}")
        return parse_kv(reply)

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            line = self.serial.readline(max(0.01, deadline - time.monotonic()))
            if line is None:
                raise TestFailure(f"{self.name}: guest did not boot in {timeout} s")
            if "READY" in line:
                return parse_kv(line[line.index("READY"):])
            if "FATAL" in line:
                raise TestFailure(f"{self.name}: guest: {line}")

    def tiers(self):
        return {t["id"]: t for t in self.command("query-memory-tiers")}


class Vtierd:
    """vtierd (built beside the tests) with three compressed tiers: lz4 in memory
    (node 0), zstd and lz4 ("disk") in files; its control by vtierctl --json.
    @name gives several instances their own sockets, store, files and logs (two
    hosts' vtierds); @policy is a [policy] section's lines, @args more options,
    @extra_config more groups appended to the config file (a [remote.NAME] tier)."""

    def __init__(self, h, name="vtierd", policy="", args=(), extra_config=""):
        self.h = h
        self.name = name
        first = name == "vtierd"
        self.ctl = os.path.join(h.dir, f"{name}.ctl")
        self.agent = os.path.join(h.dir, "agent.sock" if first else f"{name}.agent")
        self.store = os.path.join(h.dir, "store" if first else f"{name}-store")
        self.config = os.path.join(h.dir, f"{name}.conf")
        self.disk = os.path.join(h.dir, "disk" if first else f"{name}-disk")
        cold = os.path.join(h.dir, "cold" if first else f"{name}-cold")
        self.args = list(args)
        with open(self.config, "w") as f:
            if policy:
                f.write(f"[policy]\n{policy}\n")
            f.write("[ctier.lz4]\ncodec = lz4\npool = zsmalloc\nmedium = node:0\n\n"
                    f"[ctier.zstd]\ncodec = zstd:3\npool = zbud\nmedium = file:{cold}\n\n"
                    f"[ctier.disk]\ncodec = lz4\npool = zbud\nmedium = file:{self.disk}\n")
            if extra_config:
                f.write(f"\n{extra_config.rstrip()}\n")
        os.makedirs(cold, exist_ok=True)
        os.makedirs(self.disk, exist_ok=True)
        self.bin = os.path.join(os.environ["VTIER_TEST_BUILD"], "..", "..", "host-agent",
                                "tools")
        self.proc = None
        self.starts = 0

    def start(self):
        self.starts += 1
        self.log = open(os.path.join(self.h.dir, f"{self.name}.{self.starts}.log"), "w")
        if os.path.exists(self.ctl):
            os.unlink(self.ctl)
        self.proc = self.h.spawn([os.path.join(self.bin, "vtierd"), "--socket", self.ctl,
                                  "--agent-socket", self.agent, "--store-dir", self.store,
                                  "--config", self.config, "--verbose", *self.args], self.log)
        wait_for(f"{self.name}'s control socket", lambda: os.path.exists(self.ctl) and
                 self.run("list", check=False) is not None, 10)

    def run(self, *args, check=True):
        r = subprocess.run([os.path.join(self.bin, "vtierctl"), "--socket", self.ctl, "--json",
                            *args], capture_output=True, text=True, timeout=10)
        if r.returncode:
            if check:
                raise TestFailure(f"vtierctl {' '.join(args)}: {r.stderr.strip()}")
            return None
        return json.loads(r.stdout)["result"]

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.h.procs.remove(self.proc)

    def logs(self):
        out = []
        for i in range(1, self.starts + 1):
            with open(os.path.join(self.h.dir, f"{self.name}.{i}.log")) as f:
                out.append(f"--- {self.name} run {i}\n" + f.read())
        return "\n".join(out)


class Harness:
    """Owns a scratch directory and every process a test starts."""

    def __init__(self, name):
        self.name = name
        build = os.environ.get("VTIER_TEST_BUILD")
        qemu_dir = os.environ.get("VTIER_QEMU_DIR")
        if not build or not qemu_dir:
            print("1..0 # SKIP VTIER_QEMU_DIR/VTIER_TEST_BUILD not set: run `make check-qemu`")
            sys.exit(77)
        self.qemu_bin = os.path.join(qemu_dir, "build", "qemu-system-x86_64")
        self.peer_bin = os.path.join(build, "vtier-test-peer")
        self.guest_elf = os.path.join(build, "vtier-test-guest.elf")
        for f in (self.qemu_bin, self.peer_bin, self.guest_elf):
            if not os.access(f, os.X_OK if f != self.guest_elf else os.R_OK):
                raise TestFailure(f"missing {f}")
        # A timeout's SIGTERM goes through __exit__, which cleans up.
        signal.signal(signal.SIGTERM, _sigterm)
        # Socket paths must stay under 108 bytes.
        self.dir = tempfile.mkdtemp(prefix=f"vtier-{name}-", dir="/tmp")
        self.procs = []
        self.peers = []
        self.qemus = []

    def spawn(self, args, logf):
        p = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True,
                             preexec_fn=_die_with_parent)
        self.procs.append(p)
        return p

    def peer(self, name="peer", slow_us=0):
        p = Peer(self, name)
        p.start(slow_us)
        self.peers.append(p)
        return p

    def qemu(self, name, agent, **kw):
        q = Qemu(self, name, agent, **kw)
        self.qemus.append(q)
        return q

    def __enter__(self):
        return self

    def __exit__(self, etype, e, tb):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if etype is not None:
            for q in self.qemus:
                with open(os.path.join(self.dir, f"{q.name}.log")) as f:
                    sys.stdout.write(f"--- {q.name} log\n{f.read()}\n")
            for p in self.peers:
                sys.stdout.write(p.logs() + "\n")
            log(f"scratch kept in {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        return False


class Tap:
    """TAP output: one line per check, a failing check ends the test."""

    def __init__(self, planned):
        self.n = 0
        print(f"1..{planned}", flush=True)

    def ok(self, cond, what):
        self.n += 1
        if not cond:
            print(f"not ok {self.n} - {what}", flush=True)
            raise TestFailure(what)
        print(f"ok {self.n} - {what}", flush=True)

    def skip(self, why):
        """A check this host cannot make: counted, never a pass."""
        self.n += 1
        print(f"ok {self.n} # SKIP {why}", flush=True)


def main(test):
    """Run test(); any exception is a failed test with its reason."""
    try:
        test()
    except TestFailure as e:
        print(f"not ok - {e}", flush=True)
        sys.exit(1)
