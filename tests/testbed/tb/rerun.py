"""Whether a failed scenario may run again: the proof of an emulator fault.

No VM here (unit-tested by tests/testbed/test-suite). A rerun turns a failure
into a pass, and a silent L2 triple fault is exactly what a vtier memory bug
looks like (a wrong or zero page served), so a failure is rerun only when all
of these hold (docs/testbed.md, "Emulator faults"):

  - the emulator fault is proved by its signature, not presumed from a reset:
    for an L2 guest, the CPU state its watcher dumped shows a vCPU that KVM put
    back at the reset vector (RIP=fff0, CS base ffff0000: what L1's KVM does on
    an SVM SHUTDOWN exit, i.e. a triple fault; a reset the guest asks for
    leaves its registers where it was under -action reboot=shutdown); for L1,
    TCG's "Triple fault" log line or the console text of the known panics
    (tb/runner.py l1_exit_cause);
  - no failed assertion: no VTIER-TB-FAIL line in the scenario's log other
    than the harness's own "L2 NAME: QEMU ended" for a guest that reset;
  - vtier did nothing to that guest's memory: the scenario helpers (l1/tb.sh)
    write out/l2/NAME/vtier when the guest's RAM is handed to a tier agent,
    when it runs on the patched QEMU, when vtierd or vtier-bench runs while the
    guest does (moves, NUMA moves included, hints, balloon), when vtier_guest.ko
    is loaded in it; for an L1 fault, nothing at all in the scenario;
  - vtier_tdp.ko was never loaded in this L1 boot (out/vtier-l1).
"""

import os
import re

# A guest's console when its kernel ended it on purpose (then it is no triple fault).
ANNOUNCED = ("Kernel panic", "reboot: Restarting")
ASSERT_RE = re.compile(r"VTIER-TB-FAIL: (.*)$")
# The harness's own line when a command meets a guest that is gone (tb_l2, tb_l2_wait).
GUEST_ENDED_RE = re.compile(r"^L2 (\S+): QEMU ended\b")
CAUSE_RE = re.compile(r"^cause (\S+) (\S+) ([0-9.]+)$")
# RIP= in 64-bit mode, EIP= otherwise (after KVM's reset: real mode)
RIP_RE = re.compile(r"^[RE]IP=([0-9a-f]+)")
CS_RE = re.compile(r"^CS =([0-9a-f]+) ([0-9a-f]+)")
CPU_RE = re.compile(r"^CPU#(\d+)")


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _lines(path):
    text = _read(path)
    return [ln for ln in text.splitlines() if ln.strip()] if text else []


def timings(sout):
    out = {}
    for line in _lines(os.path.join(sout, "timings")):
        k, _, v = line.partition(" ")
        try:
            out[k] = float(v)
        except ValueError:
            pass
    return out


def reset_vector_cpus(events):
    """vCPUs (indices) that the dump after a guest's SHUTDOWN shows at the
    reset vector. A dump without CPU# headers (`info registers`) is CPU 0's."""
    dump = events.split("---- CPU state after", 1)
    if len(dump) < 2:
        return []
    cpus, cpu, rip = [], 0, None
    for line in dump[1].splitlines():
        m = CPU_RE.match(line)
        if m:
            cpu, rip = int(m.group(1)), None
            continue
        m = RIP_RE.match(line)
        if m:
            rip = int(m.group(1), 16)
            continue
        m = CS_RE.match(line)
        if m and rip == 0xfff0 and m.group(1) == "f000" and int(m.group(2), 16) == 0xffff0000:
            cpus.append(cpu)
            rip = None
    return cpus


class Reset:
    """A silent reset of one L2 guest (its watcher's events.log)."""

    def __init__(self, name, t, proof, marks):
        self.name, self.t, self.proof, self.marks = name, t, proof, marks


def l2_resets(sout):
    """The guests of a scenario (out dir sout) that reset on their own with
    nothing on their console, before the scenario ended: [Reset], by time."""
    t = timings(sout)
    t_end = t.get("scenario_exit_s", t.get("scenario_end_s"))
    root = os.path.join(sout, "l2")
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    found = []
    for name in names:
        d = os.path.join(root, name)
        events = _read(os.path.join(d, "events.log")) or ""
        cause = next((m for m in map(CAUSE_RE.match, events.splitlines()) if m), None)
        if not cause or cause.group(1) != "guest-reset" or cause.group(2) != "guest":
            continue
        at = float(cause.group(3))
        if t_end is not None and at > t_end:
            continue
        console = _read(os.path.join(d, "console.log")) or ""
        if any(a in console for a in ANNOUNCED):
            continue
        cpus = reset_vector_cpus(events)
        up = f"VTIER-TB-L2: {name} up" in console
        # (an AP of a guest still booting sits at the reset vector anyway:
        # another vCPU than 0 counts once the guest is up)
        proof = None
        if 0 in cpus or (cpus and up):
            proof = (f"vCPU {0 if 0 in cpus else cpus[0]} at the reset vector (RIP=fff0, "
                     "CS base ffff0000): KVM's SHUTDOWN exit, a triple fault")
        found.append(Reset(name, at, proof, _lines(os.path.join(d, "vtier"))))
    return sorted(found, key=lambda r: r.t)


def assertions(sout, reset_names=()):
    """The scenario's failed assertions: its VTIER-TB-FAIL lines, but for the
    harness's report that a guest in reset_names is gone."""
    found = []
    for line in _lines(os.path.join(sout, "scenario.log")):
        m = ASSERT_RE.search(line)
        if not m:
            continue
        g = GUEST_ENDED_RE.match(m.group(1))
        if g and g.group(1) in reset_names:
            continue
        found.append(m.group(1).strip())
    return found


def l1_marks(l1_out):
    """What vtier put into the L1 kernel during this boot (out/vtier-l1)."""
    return _lines(os.path.join(l1_out, "vtier-l1"))


def guest_marks(sout):
    """{guest: [what vtier did to its memory]} for every guest of the scenario."""
    root = os.path.join(sout, "l2")
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return {}
    marks = {}
    for name in names:
        lines = _lines(os.path.join(root, name, "vtier"))
        if lines:
            marks[name] = lines
    return marks


def _mark_text(line):
    """'123.45 what' -> 'what' (the uptime is for people reading the file)."""
    head, _, rest = line.partition(" ")
    try:
        float(head)
        return rest
    except ValueError:
        return line


def judge_l2(detail, sout, l1_out):
    """(detail, rerun) for a scenario that failed with detail (its result).

    Unchanged (detail, False) when no guest reset silently before it ended.
    Otherwise ("EMULATOR-RESET L2 NAME: ...; rerun allowed: ...", True) when
    every rule holds, else (detail + "; L2 NAME reset silently at T s, no
    rerun: WHY", False)."""
    resets = l2_resets(sout)
    if not resets:
        return detail, False
    names = [r.name for r in resets]
    first = resets[0]
    why = []
    failed = assertions(sout, names)
    if failed:
        why.append(f"an assertion failed ({failed[0]})")
    kmod = l1_marks(l1_out)
    if kmod:
        why.append(f"vtier_tdp.ko was loaded in L1 ({_mark_text(kmod[0])})")
    for r in resets:
        if r.marks:
            why.append(f"vtier acted on {r.name}'s memory ({_mark_text(r.marks[0])})")
        if not r.proof:
            why.append(f"no triple-fault signature for {r.name} (no vCPU of the guest "
                       "at the reset vector in its watcher's CPU state)")
    if why:
        return (f"{detail}; L2 {', '.join(names)} reset silently at {first.t:.2f} s, "
                f"no rerun: {'; '.join(why)}"), False
    return (f"EMULATOR-RESET L2 {first.name}: guest-reset at {first.t:.2f} s, silent, "
            f"{first.proof}; rerun allowed: no assertion failed, vtier did nothing to "
            f"{', '.join(names)}'s memory, vtier_tdp.ko not loaded; then {detail}"), True


def l1_refusal(sout, l1_out):
    """Why an L1 emulator fault (proved by its signature) may still not be
    rerun: [] when it may. sout: the out dir of the scenario that ran."""
    why = []
    kmod = l1_marks(l1_out)
    if kmod:
        why.append(f"vtier_tdp.ko was loaded in L1 ({_mark_text(kmod[0])})")
    failed = assertions(sout, [r.name for r in l2_resets(sout)])
    if failed:
        why.append(f"an assertion failed ({failed[0]})")
    for name, marks in guest_marks(sout).items():
        why.append(f"vtier acted on {name}'s memory ({_mark_text(marks[0])})")
    return why
