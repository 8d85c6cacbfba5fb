"""Several scenarios, one L1 boot: which scenarios the next boot runs, what each
result means for the others, and the summary (docs/testbed.md, "Suites").

No VM here. tb/runner.py boots L1 with the scenarios `pending()` names, in
that order, and hands each scenario's result to `record()` as it comes. A
scenario fails alone; L1 goes on with the next one. A run lost to an
emulator fault (EMULATOR-RESET: proved, and vtier had no part in it,
tb/rerun.py) is run again, in a fresh L1, up to `attempts` times in all, as a
single run is; the scenarios after it
run in that fresh L1 too. A failure of L1 itself between two scenarios (its
reset) is no scenario's: it is kept apart (`l1_failure()`) and fails the run.
A single run is a suite of one.
"""

import re

# A failure that the emulator caused (written by l1.sh for L2, by the
# runner's l1_exit_cause for L1).
EMULATOR_RESET_RE = re.compile(r"^EMULATOR-RESET (L1|L2 \S+): (.*)$")


def parse_names(args):
    """Scenario names from the command line ("a b", "a,b" or both), in order."""
    names = [n for a in args for n in a.split(",") if n]
    if not names:
        raise ValueError("no scenario named")
    seen = set()
    for n in names:
        if n in seen:
            raise ValueError(f"scenario '{n}' named twice (each has one out directory)")
        seen.add(n)
    return names


def l1_end(names, started, current, stopped, timed_out):
    """What the end of an L1 boot means for its scenarios (names, in order;
    started: those that began, current: the one running, if any; stopped:
    l1.sh said it was stopping on purpose; timed_out: the runner killed it):
      ("scenario", NAME)  charged to NAME: the one running, or the first if
                          none began (a boot panic, a setup failure)
      ("between", NAME)   L1 ended between two scenarios, in the reset after
                          NAME, or hung after the last: the run's failure
      ("fresh", NAME)     L1 stopped on purpose before NAME: the rest goes on
                          in a fresh L1
      ("done", None)      every scenario ran
    """
    if current:
        return "scenario", current
    rest = [n for n in names if n not in started]
    if not started:
        return "scenario", rest[0]
    if rest and stopped and not timed_out:
        return "fresh", rest[0]
    if rest or timed_out:
        return "between", started[-1]
    return "done", None


class Attempt:
    def __init__(self, verdict, detail, out, seconds, boot):
        self.verdict, self.detail, self.out = verdict, detail, out
        self.seconds, self.boot = seconds, boot

    def line(self, n):
        return f"attempt {n}: {self.verdict} {self.detail} (logs: {self.out})"


class Scenario:
    def __init__(self, name):
        self.name = name
        self.attempts = []      # Attempt, oldest first
        self.final = False

    @property
    def verdict(self):
        return self.attempts[-1].verdict if self.attempts else "FAIL"


class Suite:
    def __init__(self, names, attempts):
        self.scenarios = [Scenario(n) for n in names]
        self.max_attempts = max(1, attempts)
        self.l1_failures = []   # (boot, text)
        self.boots = 0
        self.interrupted = False

    def get(self, name):
        for s in self.scenarios:
            if s.name == name:
                return s
        raise KeyError(name)

    def pending(self):
        """Names still to run, in the suite's order (a rerun goes first: the
        ones before it are done)."""
        return [s.name for s in self.scenarios if not s.final]

    def record(self, name, verdict, detail, out, seconds, boot):
        """One attempt's result. Returns the emulator-fault match when the
        scenario runs again, else None (its result is final)."""
        s = self.get(name)
        if s.final:
            raise ValueError(f"scenario {name} already has its result")
        s.attempts.append(Attempt(verdict, detail, out, seconds, boot))
        m = EMULATOR_RESET_RE.match(detail) if verdict == "FAIL" else None
        if m and len(s.attempts) < self.max_attempts:
            return m
        s.final = True
        return None

    def reruns(self):
        """[(scenario, why)]: each attempt that was run again (its detail
        says what proved the emulator fault and why vtier had no part in it)."""
        return [(s.name, a.detail) for s in self.scenarios for a in s.attempts[:-1]]

    def check_lines(self):
        """make check's summary lines of this run (tests/testbed/check-summary):
        one "scenario" line per scenario, one "rerun" line per rerun, and a
        failed check for each failure of L1 between scenarios."""
        key = "+".join(s.name for s in self.scenarios)
        lines = []
        for s in self.scenarios:
            last = s.attempts[-1] if s.attempts else Attempt("FAIL", "did not run", "-", 0.0, 0)
            seconds = sum(a.seconds for a in s.attempts)
            detail = " ".join(last.detail.split())
            lines.append(f"scenario {key} {s.name} {s.verdict} {seconds:.0f} {len(s.attempts)} {detail}".rstrip())
        for name, why in self.reruns():
            lines.append(f"rerun {key} {name} {' '.join(why.split())}")
        for boot, text in self.l1_failures:
            lines.append(f"fail {key}:l1-boot-{boot} {' '.join(text.split())}")
        return lines

    def l1_failure(self, boot, text):
        self.l1_failures.append((boot, text))

    def abort(self, detail):
        """Every scenario still pending fails with detail (an interrupt)."""
        for s in self.scenarios:
            if not s.final:
                s.attempts.append(Attempt("FAIL", detail, "-", 0.0, self.boots))
                s.final = True

    def exit_status(self):
        """1 if anything failed, else 77 if every scenario was skipped, else 0.
        A scenario's skip marks that scenario, not the suite: it is in the
        summary table and in make check's lines (check_lines), where
        tests/SKIPS judges it; the suite's scenarios that ran still count."""
        verdicts = [s.verdict for s in self.scenarios]
        if self.l1_failures or "FAIL" in verdicts or any(not s.final for s in self.scenarios):
            return 1
        return 77 if verdicts and all(v == "SKIP" for v in verdicts) else 0

    def summary(self):
        """The table printed at the end of a suite: one row per scenario."""
        rows = [("scenario", "result", "attempts", "L1 boot", "seconds")]
        for s in self.scenarios:
            rows.append((s.name, s.verdict, str(len(s.attempts)),
                         ",".join(str(a.boot) for a in s.attempts),
                         " + ".join(f"{a.seconds:.1f}" for a in s.attempts)))
        width = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, width)).rstrip() for r in rows]
        for boot, text in self.l1_failures:
            lines.append(f"L1 boot {boot} failed between scenarios: {text}")
        return lines
