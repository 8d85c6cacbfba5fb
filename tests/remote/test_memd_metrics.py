#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""vtier-memd's Prometheus textfile (--metrics-file) against what was done
to a real server: a real vtier-memd on a UDP socket on 127.0.0.1 (no root,
no namespaces), the remote tier's real client (remote_pages) storing and
reading back pages, garbage datagrams from a plain socket. Checks the
series' values against the pages stored (their charged bytes computed from
remote_pages' page sizes), the garbage sent and the caps given, that they
agree with the stats JSON written at the same moment, and that
`promtool check metrics` takes the file. The second server has a client cap
that 100 pages overflow: the refusals are counted for 127.0.0.1, nothing
over the cap is held.

usage: test_memd_metrics.py VTIER_MEMD REMOTE_PAGES PROMTOOL SCRATCH_DIR   (TAP)
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

memd, remote_pages, promtool, scratch = sys.argv[1:5]
PAGE, SEAL_OVERHEAD, PAGE_OVERHEAD = 4096, 40, 64
n_test = 0
failed = False


def ok(cond, what):
    global n_test, failed
    n_test += 1
    what = what.replace("\n", " | ")  # one TAP line
    print(("ok %d - %s" if cond else "not ok %d - %s") % (n_test, what))
    failed |= not cond


def charge(page_id):
    """What remote_pages' page @page_id costs against the caps (its content())."""
    plain = PAGE - (1024 if page_id % 7 == 0 else 0)
    return plain + SEAL_OVERHEAD + PAGE_OVERHEAD


SAMPLE = re.compile(r'^([a-z_]+)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-z_]+)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """{(name, frozenset of label pairs): value}, and the families with HELP and TYPE."""
    samples, help_, type_ = {}, set(), set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            help_.add(line.split()[2])
        elif line.startswith("# TYPE "):
            type_.add(line.split()[2])
        elif line:
            m = SAMPLE.match(line)
            assert m, "not a sample line: %r" % line
            labels = frozenset(LABEL.findall(m.group(2) or ""))
            samples[(m.group(1), labels)] = float(m.group(3))
    return samples, help_, type_


def get(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(tag, *opts):
    """A vtier-memd on 127.0.0.1 (a port found free; another if it was taken meanwhile)."""
    d = os.path.join(scratch, tag)
    os.makedirs(d)
    for _ in range(5):
        port = free_port()
        log = open(os.path.join(d, "log"), "w")
        p = subprocess.Popen([memd, "--state-dir", os.path.join(scratch, "state"),
                              "--listen", "127.0.0.1:%d" % port, "--transport", "udp",
                              "--stats-file", os.path.join(d, "stats.json"),
                              "--metrics-file", os.path.join(d, "memd.prom"), *opts],
                             stderr=log, preexec_fn=lambda: os.umask(0o077))
        deadline = time.time() + 10
        while time.time() < deadline and p.poll() is None:
            if "serving" in open(os.path.join(d, "log")).read():
                return p, port, d
            time.sleep(0.05)
        p.kill()
        p.wait()
    sys.exit("vtier-memd did not start: " + open(os.path.join(d, "log")).read())


def stop(p, d):
    """SIGTERM: both files are written at exit, from one state."""
    p.send_signal(signal.SIGTERM)
    ok(p.wait(timeout=20) == 0, "%s: vtier-memd exits 0 on SIGTERM" % os.path.basename(d))
    text = open(os.path.join(d, "memd.prom")).read()
    r = subprocess.run([promtool, "check", "metrics"], input=text, text=True,
                       capture_output=True)
    ok(r.returncode == 0, "%s: promtool check metrics takes it %s%s"
       % (os.path.basename(d), r.stdout, r.stderr))
    samples, help_, type_ = parse(text)
    names = {n for n, _ in samples}
    ok(all(n.startswith("vtier_memd_") for n in names | help_) and names <= help_ and
       names <= type_ and help_ == type_,
       "%s: %d families, every one vtier_memd_* with HELP and TYPE"
       % (os.path.basename(d), len(help_)))
    modes = {f: os.stat(os.path.join(d, f)).st_mode & 0o777 for f in os.listdir(d)}
    ok(modes == {"log": modes["log"], "memd.prom": 0o644, "stats.json": 0o600},
       "under umask 0077 (the unit's) the metrics file is 0644 for node_exporter's user, "
       "the JSON 0600, no temporary file left: %s" % {f: oct(m) for f, m in modes.items()})
    return samples, json.load(open(os.path.join(d, "stats.json")))


def clients(port, pk, pages, expect_ok):
    r = subprocess.run([remote_pages, "victim", "--server", "127.0.0.1:%d/%s" % (port, pk),
                        "--copies", "1", "--pages", str(pages)],
                       capture_output=True, text=True, timeout=120)
    ok((r.returncode == 0) == expect_ok, "remote_pages stored %d pages: exit %d (%s) %s"
       % (pages, r.returncode, "want 0" if expect_ok else "want a failure: over the cap",
          r.stderr.strip()[-300:]))
    return re.search(r"^# ns=([0-9a-f]{32})$", r.stdout, re.M).group(1)


def same_as_json(samples, js, ns):
    """Every counter the JSON has, the same in the series."""
    pairs = [("vtier_memd_pages", {}, js["pages"]), ("vtier_memd_bytes", {}, js["bytes"]),
             ("vtier_memd_namespaces", {}, js["namespaces"]),
             ("vtier_memd_clients", {}, js["clients"]),
             ("vtier_memd_over_cap_pages_total", {}, js["over_cap"]),
             ("vtier_memd_over_client_cap_pages_total", {}, js["client_over_cap"]),
             ("vtier_memd_hellos_total", {"outcome": "ok"}, js["hello_ok"]),
             ("vtier_memd_hellos_total", {"outcome": "refused"}, js["hello_refused"]),
             ("vtier_memd_hellos_total", {"outcome": "ns_full"}, js["ns_full"]),
             ("vtier_memd_hellos_total", {"outcome": "ns_addr_full"}, js["ns_addr_full"]),
             ("vtier_memd_resets_total", {}, js["resets"]),
             ("vtier_memd_byes_total", {}, js["byes"]),
             ("vtier_memd_byes_unknown_total", {}, js["byes_unknown"]),
             ("vtier_memd_expired_requests_total", {}, js["expired"]),
             ("vtier_memd_cap_bytes", {"cap": "server"}, js["server_cap"]),
             ("vtier_memd_cap_bytes", {"cap": "client"}, js["client_cap"])]
    t = js["transport"]
    for k in ("rx", "tx"):
        pairs.append(("vtier_memd_transport_%s_datagrams_total" % k, {"mode": t["mode"]}, t[k]))
    pairs += [("vtier_memd_transport_rx_dropped_datagrams_total", {"mode": t["mode"]},
               t["rx_dropped"]),
              ("vtier_memd_transport_tx_busy_datagrams_total", {"mode": t["mode"]},
               t["tx_busy"]),
              ("vtier_memd_transport_tx_lost_replies_total", {"mode": t["mode"]},
               t["tx_lost"])]
    pairs += [("vtier_memd_stats_%s_seconds" % k, {}, js[k + "_ns"] / 1e9)
              for k in ("write", "write_max", "snapshot", "snapshot_max")]
    for reason, v in js["drops"].items():
        pairs.append(("vtier_memd_dropped_datagrams_total", {"reason": reason}, v))
    for n in js["per_namespace"]:
        for key, name in (("pages", "namespace_pages"), ("bytes", "namespace_bytes"),
                          ("puts", "namespace_stored_pages_total"),
                          ("gets", "namespace_served_pages_total"),
                          ("frees", "namespace_freed_pages_total")):
            pairs.append(("vtier_memd_" + name, {"namespace": n["ns"]}, n[key]))
    for c in js["per_client"]:
        for key in ("namespaces", "pages", "bytes"):
            pairs.append(("vtier_memd_client_" + key, {"client": c["addr"]}, c[key]))
        pairs.append(("vtier_memd_client_over_cap_pages_total", {"client": c["addr"]},
                      c["over_cap"]))
    bad = [(n, l, get(samples, n, **l), v) for n, l, v in pairs if get(samples, n, **l) != v]
    ok(not bad and js["per_namespace"] and js["per_namespace"][0]["ns"] == ns,
       "%d series equal the stats JSON's counters %s" % (len(pairs), bad[:4]))


def main():
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    print("1..25")
    pk = subprocess.run([memd, "--state-dir", os.path.join(scratch, "state"), "--show-key"],
                        capture_output=True, text=True, check=True).stdout.strip()

    # 1. 100 pages stored and read back, 3 garbage datagrams
    t0 = time.time()
    p, port, d = start("plain", "--server-cap", "64MiB")
    ns = clients(port, pk, 100, True)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _ in range(3):
            s.sendto(b"\0" * 100, ("127.0.0.1", port))
    time.sleep(0.3)
    t1 = time.time()
    samples, js = stop(p, d)
    want = sum(charge(i) for i in range(100))
    ok(get(samples, "vtier_memd_pages") == 100 and get(samples, "vtier_memd_bytes") == want,
       "held: 100 pages, %d bytes (%s, %s)" % (want, get(samples, "vtier_memd_pages"),
                                               get(samples, "vtier_memd_bytes")))
    ok(get(samples, "vtier_memd_namespace_pages", namespace=ns) == 100 and
       get(samples, "vtier_memd_namespace_bytes", namespace=ns) == want,
       "the VM's namespace %s: 100 pages, %d bytes" % (ns, want))
    ok(get(samples, "vtier_memd_namespace_stored_pages_total", namespace=ns) >= 100 and
       get(samples, "vtier_memd_namespace_served_pages_total", namespace=ns) >= 100 and
       get(samples, "vtier_memd_namespace_freed_pages_total", namespace=ns) == 0,
       "its pages: at least 100 stored, 100 served (each read back once), none freed")
    ok(get(samples, "vtier_memd_client_pages", client="127.0.0.1") == 100 and
       get(samples, "vtier_memd_client_bytes", client="127.0.0.1") == want and
       get(samples, "vtier_memd_client_namespaces", client="127.0.0.1") == 1 and
       get(samples, "vtier_memd_clients") == 1,
       "client 127.0.0.1: one namespace, 100 pages, %d bytes" % want)
    ok(get(samples, "vtier_memd_dropped_datagrams_total", reason="magic") == 3 and
       sum(v for (n, _), v in samples.items() if n == "vtier_memd_dropped_datagrams_total")
       == 3, "the 3 garbage datagrams: dropped, reason magic, nothing else dropped")
    ok(get(samples, "vtier_memd_transport_info", mode="udp", need_wakeup="0", busy_poll="0",
           xdp_native="0", fallback="0") == 1 and
       get(samples, "vtier_memd_transport_rx_datagrams_total", mode="udp") >=
       get(samples, "vtier_memd_rx_datagrams_total") >= 100 + 3,
       "transport: udp, at least the 100 pages' and 3 garbage datagrams received")
    ok(get(samples, "vtier_memd_cap_bytes", cap="server") == 64 << 20 and
       get(samples, "vtier_memd_cap_bytes", cap="client") == 32 << 20 and
       get(samples, "vtier_memd_cap_bytes", cap="namespace") == 1 << 30,
       "caps: server 64 MiB as given, client half of it (the default), namespace 1 GiB")
    ok(get(samples, "vtier_memd_over_cap_pages_total") == 0 and
       get(samples, "vtier_memd_hellos_total", outcome="ok") >= 1,
       "nothing refused, the HELLO answered")
    start_time = get(samples, "vtier_memd_start_time_seconds")
    ok(t0 - 1 <= start_time <= t1 and 0 < get(samples, "vtier_memd_uptime_seconds") <
       time.time() - t0 + 1, "start time %s within the run [%.1f, %.1f], uptime %s"
       % (start_time, t0, t1, get(samples, "vtier_memd_uptime_seconds")))
    ok(any(n == "vtier_memd_build_info" and dict(l).get("version") for n, l in samples),
       "build info with a version")
    same_as_json(samples, js, ns)

    # 2. a client cap of 200 KiB: the pages past it refused, counted for 127.0.0.1
    cap = 200 << 10
    p, port, d = start("client-cap", "--server-cap", "64MiB", "--client-cap", "200KiB")
    ns = clients(port, pk, 100, False)
    samples, js = stop(p, d)
    held = get(samples, "vtier_memd_client_bytes", client="127.0.0.1")
    refused = get(samples, "vtier_memd_client_over_cap_pages_total", client="127.0.0.1")
    ok(get(samples, "vtier_memd_cap_bytes", cap="client") == cap and
       cap - charge(1) < held <= cap,
       "client 127.0.0.1 holds %s bytes: up to the cap %d, within a page of it" % (held, cap))
    ok(refused and refused >= 1 and
       get(samples, "vtier_memd_over_client_cap_pages_total") == refused and
       get(samples, "vtier_memd_over_cap_pages_total") == refused and
       get(samples, "vtier_memd_namespace_refused_total", namespace=ns, reason="over_cap")
       == refused,
       "%s page(s) refused, all by the client cap: for the client, the server and the "
       "namespace alike" % refused)
    ok(get(samples, "vtier_memd_pages") == get(samples, "vtier_memd_namespace_pages",
                                               namespace=ns) < 100,
       "held: %s of the 100 pages, nothing evicted to make room"
       % get(samples, "vtier_memd_pages"))
    same_as_json(samples, js, ns)
    shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failed else 0


sys.exit(main())
