#!/usr/bin/env python3
# vtierctl --get KEY: values picked out of vtierd's reply by a dotted path
# (members, array indices, an element's "name"/"tier", "*" summing), and the
# refusals: a key the reply lacks exits 2 naming the step and what exists.
# A stand-in vtierd on a unix socket answers each request with a fixed reply
# of the shape vtierd sends (core/vm_json.c, core/backend.c) and records the
# request, so the test also sees what vtierctl asked for.
# usage: test_vtierctl_get.py VTIERCTL SCRATCH_DIR   (TAP output)
import json
import os
import socket
import subprocess
import sys
import threading

STATS = {
    "name": "vm0", "mode": "auto", "profiler": "telescope-flex", "windows": 17,
    "promotions": 3, "demotions": 40, "hot_threshold_used": 0.05, "hot_chunks": 8,
    "tiers": [
        {"tier": "dram", "resident_bytes": 16777216, "promoted_in": 3},
        {"tier": "tier1", "resident_bytes": 0, "promoted_in": 0},
        {"tier": "lz4", "resident_bytes": 41943040, "promoted_in": 0},
    ],
    "backends": [
        {"backlog": 0, "faults_stored": 120, "ctiers": [
            {"name": "lz4", "pages": 10240, "stored_bytes": 41943040, "pool_bytes": 12582912},
            {"name": "zstd", "pages": 5, "stored_bytes": 20480, "pool_bytes": 4096}]},
        {"backlog": 7, "faults_stored": 30, "ctiers": [
            {"name": "lz4", "pages": 1, "stored_bytes": 4096, "pool_bytes": 1024}]},
    ],
    "hints": {"accepted_bytes": {"free": 4096, "deflate": 0}, "enabled": False},
    "migration": {"state": "none"},
}
LIST = [{"name": "vm0", "attached_by": "hand-off", "pid": 41},
        {"name": "vm1", "attached_by": "qmp", "pid": 42}]


class FakeVtierd(threading.Thread):
    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.requests = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)

    def run(self):
        while True:
            c, _ = self.sock.accept()
            buf = b""
            while not buf.endswith(b"\n"):
                d = c.recv(65536)
                if not d:
                    break
                buf += d
            req = json.loads(buf)
            self.requests.append(req)
            if req.get("vm") == "gone":
                rep = {"ok": False, "error": "no VM named gone"}
            elif req["cmd"] == "list":
                rep = {"ok": True, "result": LIST}
            else:
                rep = {"ok": True, "result": STATS}
            c.sendall(json.dumps(rep).encode() + b"\n")
            c.close()


def main():
    vtierctl, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    path = os.path.join(scratch, "ctl.sock")
    if os.path.exists(path):
        os.unlink(path)
    srv = FakeVtierd(path)
    srv.start()
    n = 0
    failed = 0

    def run(*args):
        return subprocess.run([vtierctl, "--socket", path, *args], capture_output=True,
                              text=True, timeout=20)

    def check(args, code, out=None, err=None):
        nonlocal n, failed
        n += 1
        r = run(*args)
        good = r.returncode == code and (out is None or r.stdout == out) and \
            (err is None or err in r.stderr)
        if good:
            print(f"ok {n} - {' '.join(args)} -> {code} {r.stdout.strip()!r}")
        else:
            failed = 1
            print(f"not ok {n} - {' '.join(args)}: exit {r.returncode} (want {code}), "
                  f"stdout {r.stdout!r} (want {out!r}), stderr {r.stderr.strip()!r} "
                  f"(want {err!r})")

    tests = [
        (["stats", "vm0", "--get", "windows"], 0, "17\n", None),
        (["stats", "vm0", "--get", "profiler"], 0, "telescope-flex\n", None),
        (["stats", "vm0", "--get", "hot_threshold_used"], 0, "0.05\n", None),
        (["stats", "vm0", "--get", "hints.enabled"], 0, "false\n", None),
        (["stats", "vm0", "--get", "hints.accepted_bytes.free"], 0, "4096\n", None),
        (["stats", "vm0", "--get", "tiers.lz4.resident_bytes"], 0, "41943040\n", None),
        (["stats", "vm0", "--get", "tiers.0.tier"], 0, "dram\n", None),
        (["stats", "vm0", "--get", "backends.1.backlog"], 0, "7\n", None),
        (["stats", "vm0", "--get", "backends.0.ctiers.zstd.pool_bytes"], 0, "4096\n", None),
        # "*": the numbers reached, summed; an empty array sums to 0
        (["stats", "vm0", "--get", "backends.*.ctiers.*.stored_bytes"], 0, "41967616\n", None),
        (["stats", "vm0", "--get", "backends.*.ctiers.lz4.pool_bytes"], 0, "12583936\n", None),
        (["stats", "vm0", "--get", "tiers.*.promoted_in"], 0, "3\n", None),
        # several keys: one line each, in order
        (["stats", "vm0", "--get", "windows", "--get", "backends.0.faults_stored"], 0,
         "17\n120\n", None),
        (["stats", "vm0", "--get", "migration"], 0, '{"state":"none"}\n', None),
        (["list", "--get", "vm0.attached_by"], 0, "hand-off\n", None),
        (["list", "--get", "1.pid"], 0, "42\n", None),
        (["status", "vm0", "--get", "name"], 0, "vm0\n", None),
        # absent keys: exit 2, the step and what exists named
        (["stats", "vm0", "--get", "ctier.faults"], 2, "",
         "--get ctier.faults: no member 'ctier' in the result (members: name mode"),
        (["stats", "vm0", "--get", "backends.0.nope"], 2, "",
         "no member 'nope' in backends.0 (members: backlog faults_stored ctiers)"),
        (["stats", "vm0", "--get", "backends.2.backlog"], 2, "",
         "no element 2 in backends (2 elements)"),
        (["stats", "vm0", "--get", "tiers.cxl.resident_bytes"], 2, "",
         "no element 'cxl' in tiers (an index below 3, *, or a name: dram tier1 lz4)"),
        (["stats", "vm0", "--get", "windows.x"], 2, "",
         "windows is a value, not an object or an array: no step 'x' into it"),
        (["stats", "vm0", "--get", "backends..backlog"], 2, "", "empty step 2"),
        (["stats", "vm0", "--get", ""], 2, "", "--get '': empty step 1"),
        (["stats", "vm0", "--get", "backends.*.ctiers"], 2, "",
         "a path through * sums numbers, and element 0 reaches JsonArray"),
        (["stats", "vm0", "--get", "tiers.*.tier"], 2, "",
         "a path through * sums numbers, and element 0 reaches gchararray"),
        # the first key prints, the second is refused
        (["stats", "vm0", "--get", "windows", "--get", "nope"], 2, "17\n", "no member 'nope'"),
        # not with --json or --svg; a refusal by vtierd stays exit 1
        (["--json", "stats", "vm0", "--get", "windows"], 2, "", "--get goes without --json"),
        (["heatmap", "vm0", "--svg", os.path.join(scratch, "x.svg"), "--get", "windows"], 2, "",
         "--get goes without --json and --svg"),
        (["stats", "gone", "--get", "windows"], 1, "", "stats: no VM named gone"),
    ]
    print(f"1..{len(tests) + 1}")
    for args, code, out, err in tests:
        check(args, code, out, err)
    n += 1
    asked = [r for r in srv.requests if r.get("cmd") == "stats"]
    if asked and all(r.get("vm") in ("vm0", "gone") for r in asked):
        print(f"ok {n} - the requests named the VM ({len(asked)} stats requests)")
    else:
        failed = 1
        print(f"not ok {n} - requests seen: {srv.requests[:3]}")
    return failed


if __name__ == "__main__":
    sys.exit(main())
