#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Live migration of a tiered VM between two patched QEMUs on this machine,
each handing its RAM to a vtierd of its own (own sockets, store and tier
files, as two hosts would have), no testbed. The test guest (tests/qemu/guest)
fills all of its region, 16 MiB to the top MiB of a 256 MiB guest (below it
run the guest's own code and data, above it the firmware's tables: every other
page of guest RAM), with compressible content, and checks every page wherever
it runs after each migration. vtierd A places the region's upper three
quarters in its compressed tiers, then:
  1. cancel: A's VM migrates to a scratch QEMU at a limited bandwidth; once A
     says the migration is outgoing, migrate_cancel: the source runs on with
     all its pages, A counts the migration failed and keeps no outgoing state.
     The check reads every page back in: A places the cold pages again.
  2. src (A) -> d1 (B): A writes its profile at MIGRATION, QEMU sends it at the
     migration's setup (PREPARE), B takes the early hand-off (PRECOPY), seeds the
     VM's engine from it and places the cold chunks while the RAM arrives;
     ARRIVED when the guest runs. Placement (>= 70 % of the cold pages out of
     QEMU's memfd, read from the memfd with SEEK_HOLE, not from vtierd) at the
     destination's window placed_window. QEMU's HELLO brought a zero map: A
     marks the never-written pages in it (here most of the 16 MiB below the
     region), and the migration sends them without reading them, so A
     zero-fills at most a tenth as many as it marked.
  3. d1 (B) -> d2 (C, --ignore-migration-profiles): the same migration without
     the profile, windows_without.
  4. d2 (C) -> d3 (B) at a limited bandwidth: vtierd C, the source's, killed
     -9 once it says the migration is outgoing, restarted (QEMU hands over
     again with RECONNECT and MIGRATION started); vtierd B, the destination's,
     killed -9 once it adopted the VM during the precopy, restarted (RECONNECT
     | PRECOPY). Each kill counts only if the source QEMU's migration was still
     active both when it was made and when the successor had the VM again.
  5. d3 (B) -> d4 (D, --precopy-placement=copy): copies made during the
     precopy (PREPARE without the early hand-off), used at the switch-over.
  6. the same guest without a tier agent, p0 -> p1: total_s_ratio is the
     migration 2's total time over this one's.
Prints RESULT-MIGRATE-HOST placed_window= windows_without= precopy_kills=
total_s_ratio= bad_pages= (and the seconds of each migration)."""

import os
import time

from vtier_qemu import Harness, Tap, TestFailure, Vtierd, log, main, wait_for

MEM_MB = 256
REGION = 16 << 20
# every page of guest RAM above the guest's 16 MiB and below the top MiB that
# the guest keeps away from (the firmware's tables): it refuses more
PAGES = 61152           # what the guest takes in 256 MiB (it refuses more)
COLD_FROM = PAGES // 4          # the region's upper three quarters go cold
UUID = "5a1e0000-1111-4222-8333-444455550000"
WINDOW_MS = 500
# vtierd C profiles from scratch: at most this many windows to place
MAX_WINDOWS = 60
# bandwidth of the legs whose vtierds are killed: the migration of 256 MiB
# lasts several seconds, far longer than a kill and restart take
SLOW_BPS = 24 << 20
# total_s_ratio bound. Measured on this machine (2 shared cores, TCG, 256 MiB,
# the cold three quarters held compressed): 0.38, 0.65 and 0.77 in three runs
# (migrations of about a second, as noisy as that makes them). Without a
# profiler here (no host-kmod, the host's DAMON in use) vtierd A has no
# profile and says so at once; before QEMU understood that (flag NO_PROFILE)
# its setup waited 500 ms for one, and the ratio was 1.65-2.25. 3.0 leaves
# room for a loaded machine: a source that stalls on its store shows up as
# several times.
MAX_TOTAL_S_RATIO = 3.0
UNLIMITED = 1 << 40
POLICY = (f"mode = auto\nwindow_ms = {WINDOW_MS}\nbudget = 256MiB\n"
          "ctier_age_windows = 3\n")


def memfd_path(pid, size):
    """/proc path of QEMU's memfd of @size bytes (guest RAM)."""
    fddir = f"/proc/{pid}/fd"
    for fd in os.listdir(fddir):
        p = os.path.join(fddir, fd)
        try:
            if os.readlink(p).startswith("/memfd:") and os.stat(p).st_size == size:
                return p
        except OSError:
            continue
    raise TestFailure(f"no memfd of {size} bytes in QEMU pid {pid}")


def resident_pages(q, start, end):
    """Pages of guest-physical [start, end) present in QEMU's memfd (the rest is
    a hole: evicted to a compressed tier, or never written)."""
    fd = os.open(memfd_path(q.proc.pid, MEM_MB << 20), os.O_RDONLY)
    try:
        n, at = 0, start
        while at < end:
            try:
                d = os.lseek(fd, at, os.SEEK_DATA)
            except OSError:
                break
            if d >= end:
                break
            hole = min(os.lseek(fd, d, os.SEEK_HOLE), end)
            n += (hole - d) // 4096
            at = hole
        return n
    finally:
        os.close(fd)


def cold_out_pct(q):
    """Share of the cold pages out of QEMU's memfd."""
    start, end = REGION + COLD_FROM * 4096, REGION + PAGES * 4096
    total = (end - start) // 4096
    return 100 * (total - resident_pages(q, start, end)) // total


def the_vm(d, q):
    """vtierd @d's name of the VM of QEMU @q, once adopted by its hand-off."""
    return wait_for(f"{d.name} adopting {q.name}", lambda: next(
        (v["name"] for v in (d.run("list", check=False) or [])
         if v["pid"] == q.proc.pid and v["attached_by"] == "hand-off"), None), 60)


def stats(d, vm):
    return d.run("stats", vm)


def mig(d, vm):
    """The VM's migration object in vtierd @d's stats."""
    s = stats(d, vm)
    return s.get("migration_state"), s.get("migration", {})


def backlog_empty(d, vm):
    s = stats(d, vm)
    return all(b["backlog"] == 0 for b in s["backends"]) and s


def zero_figures(d, vm):
    """The source's zero-page figures, summed over the VM's backends: whether
    QEMU sent a zero map, the pages marked in it, the never-written pages
    faulted in (zero-filled, by a fault or around one) and those a migration
    read punched again, and the stored pages read through."""
    bs = stats(d, vm)["backends"]
    f = {k: sum(b.get(k, 0) for b in bs) for k in
         ("zero_map_set", "faults_zero", "zero_filled_around", "zero_repunched",
          "read_through")}
    f["zero_map"] = bool(bs) and all(b.get("zero_map") for b in bs)
    return f


def start_migration(h, src, dst, bps=None):
    # unlimited (QEMU's default is 128 MiB/s) unless @bps
    src.command("migrate-set-parameters", **{"max-bandwidth": bps or UNLIMITED})
    src.command("migrate", uri=f"unix:{h.dir}/{dst.name}.mig")


def migration_status(src):
    return src.command("query-migrate")


def finish_migration(src, timeout=300):
    def done():
        st = migration_status(src)
        return st if st.get("status") in ("completed", "failed", "cancelled") else None
    return wait_for(f"{src.name}'s migration to end", done, timeout, interval=0.1)


def active(src):
    return migration_status(src).get("status") == "active"


def verify_all(t, q, what):
    v = q.guest("verify", timeout=300)
    bad = int(v["bad"])
    t.ok(bad == 0 and v["pages"] == str(PAGES),
         f"{what}: every page of the guest's {PAGES} verified on {q.name}, bad={bad}")
    return bad


def demote_cold(d, vm, q):
    """vtierd @d places the cold three quarters of @q's region in its
    compressed tiers; the percentage of them out of the memfd once done."""
    lo = REGION + COLD_FROM * 4096
    d.run("demote", vm, "tier=lz4", f"gpa={lo}", f"len={REGION + PAGES * 4096 - lo}")
    wait_for(f"{d.name}'s demotion done", lambda: backlog_empty(d, vm) and
             cold_out_pct(q) >= 70, 120, interval=0.2)
    return cold_out_pct(q)


def windows_to_place(d, vm, q):
    """The destination's windows (since it adopted the VM) when the cold pages
    are out, polled twice a window; MAX_WINDOWS past the first look if never."""
    w0 = None
    deadline = time.monotonic() + MAX_WINDOWS * WINDOW_MS / 1000 * 2
    while True:
        w = stats(d, vm)["windows"]
        w0 = w if w0 is None else w0
        pct = cold_out_pct(q)
        if pct >= 70:
            log(f"{d.name}: placed at window {w} ({pct} % of the cold pages out)")
            return w
        if w >= w0 + MAX_WINDOWS or time.monotonic() > deadline:
            log(f"{d.name}: not placed after {w} windows ({pct} % of the cold pages out)")
            return w0 + MAX_WINDOWS
        time.sleep(WINDOW_MS / 2000)


def test():
    t = Tap(25)
    with Harness("migrate-vtierd") as h:
        a = Vtierd(h, "vtierd-a", POLICY)
        b = Vtierd(h, "vtierd-b", POLICY)
        c = Vtierd(h, "vtierd-c", POLICY, ["--ignore-migration-profiles"])
        dd = Vtierd(h, "vtierd-d", POLICY, ["--precopy-placement=copy"])
        ds = (a, b, c, dd)
        try:
            run(t, h, a, b, c, dd)
        except Exception:
            for d in ds:
                if d.starts:
                    print(d.logs())
            raise


def qemu(h, name, d, incoming=False):
    q = h.qemu(name, d.agent if d else None, mem_mb=MEM_MB, pages=PAGES,
               incoming=f"unix:{h.dir}/{name}.mig" if incoming else None,
               extra=["-uuid", UUID])
    q.connect()
    return q


def engine_trouble(d, vm):
    """Why vtierd @d cannot profile VM @vm (its engine did not start), or None."""
    st = d.run("status", vm)
    if st.get("state") in ("tiering", "observing"):
        return None
    with open(os.path.join(d.h.dir, f"{d.name}.{d.starts}.log")) as f:
        why = [x for x in f.read().splitlines() if "engine:" in x]
    return why[-1].split("engine:", 1)[1].strip() if why else f"state {st.get('state')}"


def leg_done(t, h, src, dst, what):
    st = finish_migration(src)
    t.ok(st["status"] == "completed", f"{what}: completed in {st.get('total-time')} ms, "
         f"setup {st.get('setup-time')} ms, downtime {st.get('downtime')} ms")
    return st.get("total-time", 0)


def run(t, h, a, b, c, dd):
    t0 = time.monotonic()
    bad = 0
    for d in (a, b, c, dd):
        d.start()
    src = qemu(h, "src", a)
    src.wait_ready()
    vm = the_vm(a, src)
    src.guest("content mixed")
    src.guest("fill 0x5eed", timeout=300)
    # vtierd A places the cold three quarters in its compressed tiers (the
    # idle test guest gives a profiler nothing to tell apart); its windows
    # meanwhile give the engine the state the profile is written from
    src_pct = demote_cold(a, vm, src)
    t.ok(src_pct >= 70, f"vtierd A placed the cold pages: {src_pct} % out of the memfd")
    # The migration profile is written from the VM's engine state, and the
    # destination seeds it into its engine: both vtierds must profile. With
    # damon-kernel that is one vtierd per host at most (DAMON's sysfs is one
    # object; host-agent/telemetry/damon_kernel.c refuses a kdamond it did not
    # start), so the profile's checks need host-kmod (tdp) or a free DAMON.
    no_profile = None
    try:
        wait_for("two windows of vtierd A", lambda: stats(a, vm)["windows"] >= 2 or
                 engine_trouble(a, vm), 10)
        no_profile = engine_trouble(a, vm)
    except TestFailure:
        no_profile = engine_trouble(a, vm) or "vtierd A ran no window in 10 s"
    if no_profile:
        no_profile = f"the migration profile needs vtierd to profile the VM, and here: {no_profile}"
        log(no_profile)

    # 1. a cancelled migration: the source runs on with all its pages
    scratch = qemu(h, "scratch", b, incoming=True)
    start_migration(h, src, scratch, SLOW_BPS)
    wait_for("vtierd A saying outgoing", lambda: mig(a, vm)[0] == "outgoing" and
             active(src), 30, interval=0.05)
    src.command("migrate_cancel")
    st = finish_migration(src, 60)
    state, m = wait_for("vtierd A hearing the cancel", lambda: (
        (x := mig(a, vm)) and x[1].get("failed", 0) >= 1 and x), 30)
    t.ok(st["status"] == "cancelled" and state == "none" and m["started"] == 1,
         f"migrate_cancel: {st['status']}, vtierd A's state {state}, started "
         f"{m['started']} failed {m['failed']}")
    bad += verify_all(t, src, "after the cancel, on the source")
    scratch.proc.kill()
    scratch.proc.wait()
    # the verify read every page back in: the cold pages go out again, so that
    # the next migration is a tiered VM's
    demote_cold(a, vm, src)

    # 2. src (A) -> d1 (B), with the profile, the early hand-off
    d1 = qemu(h, "d1", b, incoming=True)
    z0 = zero_figures(a, vm)
    start_migration(h, src, d1)
    tiered_ms = leg_done(t, h, src, d1, "src -> d1")
    # vtierd A answers MIGRATION started with its profile, or with an empty
    # one when it has none: QEMU's setup does not wait out its 500 ms
    setup_ms = migration_status(src).get("setup-time", 0)
    t.ok(setup_ms < 500, f"src -> d1: the setup took {setup_ms} ms (QEMU waits at most 500 "
         "for vtierd A's answer)")
    z1 = zero_figures(a, vm)
    zd = {k: z1[k] - z0[k] for k in z1 if k != "zero_map"}
    fills = zd["faults_zero"] + zd["zero_filled_around"] + zd["zero_repunched"]
    t.ok(z1["zero_map"] and zd["zero_map_set"] > 0 and fills * 10 <= zd["zero_map_set"],
         f"src -> d1: QEMU sent a zero map ({z1['zero_map']}), vtierd A marked "
         f"{zd['zero_map_set']} pages zero in it and zero-filled {fills} for the migration "
         f"(at most a tenth of those marked); {zd['read_through']} stored pages read through")
    vm1 = the_vm(b, d1)
    placed = without = "skipped"
    no_seed = no_profile
    if no_profile:
        for _ in range(4):
            t.skip(no_profile)
    else:
        _, ma = mig(a, vm)
        t.ok(ma["profiles_written"] >= 1 and ma["profile_bytes"] > 0,
             f"vtierd A wrote its profile at MIGRATION ({ma['profile_bytes']} bytes)")
        with open(os.path.join(h.dir, f"{b.name}.{b.starts}.log")) as f:
            blog = f.read()
        arrived = [x for x in blog.splitlines() if "arrived, the guest runs" in x]
        t.ok("during the precopy" in blog and arrived and "not made during" not in arrived[-1],
             "QEMU sent the profile at the setup (PREPARE), vtierd B took the early hand-off "
             "during the precopy (PRECOPY) and heard ARRIVED")
        # seeding needs vtierd B's engine, so a profiler of its own: with
        # damon-kernel, vtierd A's kdamond (still running) stops it
        trouble = engine_trouble(b, vm1)
        if trouble:
            no_seed = ("the destination seeds the profile into its engine, which needs a "
                       f"profiler, and here: {trouble}")
            log(no_seed)
            t.skip(no_seed)
            t.skip(no_seed)
        else:
            placed = windows_to_place(b, vm1, d1)
            _, mb = mig(b, vm1)
            t.ok(mb["profiles_seeded"] == 1 and mb["seeded_chunks"] > 0,
                 f"vtierd B seeded the VM from it: {mb['seeded_chunks']} chunks, plan orders "
                 f"{mb.get('plan_orders')}, at the hand-off {mb.get('handoff_orders')}")
            t.ok(placed <= 1, f"the destination placed the cold pages at window {placed} "
                 "(at most 1)")
    src.command("quit")
    src.proc.wait(timeout=30)
    bad += verify_all(t, d1, "src -> d1")
    cur, cur_d, cur_vm = d1, b, vm1

    # 3. d1 (B) -> d2 (C, profiles ignored): the baseline
    if no_seed:
        for _ in range(3):
            t.skip(no_seed)
    else:
        d2 = qemu(h, "d2", c, incoming=True)
        start_migration(h, d1, d2)
        leg_done(t, h, d1, d2, "d1 -> d2")
        vm2 = the_vm(c, d2)
        without = windows_to_place(c, vm2, d2)
        _, mc = mig(c, vm2)
        t.ok(mc.get("profiles_seeded", 0) == 0 and placed < without,
             f"without the profile: placed at window {without} (with it: {placed})")
        d1.command("quit")
        d1.proc.wait(timeout=30)
        bad += verify_all(t, d2, "d1 -> d2")
        cur, cur_d, cur_vm = d2, c, vm2

    # 4. cur -> d3 (A or B): the source's vtierd and the destination's killed -9
    # during the precopy, each when it says so: the source's once it reports
    # the migration outgoing, the destination's once it holds the VM from the
    # early hand-off while the source still sends RAM
    dest_d = a if cur_d is b else b
    kills = 0
    d3 = qemu(h, "d3", dest_d, incoming=True)
    start_migration(h, cur, d3, SLOW_BPS)
    # (QEMU's status is "setup" until the RAM is being sent: the precopy is "active")
    wait_for(f"{cur_d.name} saying outgoing during the precopy", lambda: mig(
        cur_d, cur_vm)[0] == "outgoing" and active(cur), 30, interval=0.05)
    during = active(cur)
    cur_d.kill9()
    log(f"{cur_d.name} (the source's) killed -9 during the precopy")
    cur_d.start()
    vm_s = the_vm(cur_d, cur)
    wait_for(f"{cur_d.name}'s successor saying outgoing",
             lambda: mig(cur_d, vm_s)[0] == "outgoing", 30, interval=0.05)
    after = migration_status(cur).get("status")
    src_kill = during and after == "active"
    kills += src_kill
    t.ok(src_kill, f"{cur_d.name}, the source's vtierd, killed -9 during the precopy: the "
         f"migration active before the kill ({during}) and when the successor said outgoing "
         f"({after})")
    if no_seed:
        # (this leg's source writes the profile from its engine)
        t.skip(f"the destination's vtierd holds the VM during the precopy only by the early "
               f"hand-off: {no_seed}")
    else:
        vm3 = the_vm(dest_d, d3)
        # adopted while the source still sends RAM: the guest has not run here
        # (its windows have not started)
        during = active(cur) and stats(dest_d, vm3)["windows"] == 0
        dest_d.kill9()
        log(f"{dest_d.name} (the destination's) killed -9 during the precopy")
        dest_d.start()
        the_vm(dest_d, d3)
        dst_kill = during and active(cur)
        kills += dst_kill
        with open(os.path.join(h.dir, f"{dest_d.name}.{dest_d.starts}.log")) as f:
            took = "during the precopy" in f.read()
        t.ok(dst_kill and took, f"{dest_d.name}, the destination's vtierd, killed -9 during "
             "the precopy, its successor took the VM back during it (RECONNECT | PRECOPY)")
    cur.command("migrate-set-parameters", **{"max-bandwidth": UNLIMITED})
    leg_done(t, h, cur, d3, f"{cur.name} -> d3 with the kills")
    cur.command("quit")
    cur.proc.wait(timeout=30)
    bad += verify_all(t, d3, f"{cur.name} -> d3 with the kills")

    # 5. d3 -> d4 (D, --precopy-placement=copy)
    if no_seed:
        # (d3's vtierd writes the profile of this migration from its engine)
        for _ in range(3):
            t.skip(f"--precopy-placement=copy copies the profile's cold chunks: {no_seed}")
    else:
        d4 = qemu(h, "d4", dd, incoming=True)
        start_migration(h, d3, d4)
        leg_done(t, h, d3, d4, "d3 -> d4")
        vm4 = the_vm(dd, d4)
        placed4 = windows_to_place(dd, vm4, d4)
        s4 = wait_for("vtierd D's mover idle", lambda: backlog_empty(dd, vm4), 60)
        prepared = sum(x.get("prepared_pages", 0) for x in s4["backends"])
        used = sum(x.get("prepared_used", 0) for x in s4["backends"])
        t.ok(prepared > 0 and used > 0 and placed4 < without,
             f"--precopy-placement=copy: {prepared} copies made during the precopy, {used} "
             f"used at the switch-over, placed at window {placed4}")
        d3.command("quit")
        d3.proc.wait(timeout=30)
        bad += verify_all(t, d4, "d3 -> d4")

    # 6. the same guest without a tier agent
    p0 = qemu(h, "p0", None)
    p0.wait_ready()
    p0.guest("content mixed")
    p0.guest("fill 0x5eed", timeout=300)
    p1 = qemu(h, "p1", None, incoming=True)
    start_migration(h, p0, p1)
    plain_ms = leg_done(t, h, p0, p1, "p0 -> p1 (no tier agent)")
    bad += verify_all(t, p1, "p0 -> p1")
    ratio = tiered_ms / max(plain_ms, 1)
    t.ok(ratio <= MAX_TOTAL_S_RATIO,
         f"total time with vtier {tiered_ms} ms, without {plain_ms} ms: ratio {ratio:.2f} "
         f"(at most {MAX_TOTAL_S_RATIO})")
    t.ok(bad == 0, f"{bad} bad pages in all")
    print(f"# RESULT-MIGRATE-HOST placed_window={placed} windows_without={without} "
          f"precopy_kills={kills} total_s_ratio={ratio:.2f} bad_pages={bad} "
          f"total_ms={tiered_ms} total_ms_plain={plain_ms} "
          f"test_s={time.monotonic() - t0:.0f}", flush=True)


if __name__ == "__main__":
    main(test)
