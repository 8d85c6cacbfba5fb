#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Write islands-moved.json and islands-some-moved.json (issue 33, item 5).

Many hot islands smaller than a PUD in a 4 TiB space, some smaller than a PMD,
at offsets aligned to no page-table level (neither end on a 2 MiB boundary),
stable for 20 s and then moved by an unaligned distance:

  islands-moved       all 150 move by +41 MiB 292 KiB (less than the larger
                      islands' size: their new place overlaps the old), then
                      all by +3 GiB 517 MiB 44 KiB
  islands-some-moved  50 of the 150 move by +7 GiB 301 MiB 20 KiB, then back
  islands-scattered   each of the 150 moves by a distance of its own, three
                      times (6 s apart), up or down by 4 KiB to 6 GiB
                      (the 5-window bar of make check-telemetry)

Each island gets an equal share of the accesses (small islands are denser),
2e8 page walks a second in all. Deterministic (seeded): run it again and the
files come out the same.

    tests/scenarios/gen-islands.py tests/scenarios
"""
import json
import os
import random
import sys

KIB, MIB, GIB, TIB = 1 << 10, 1 << 20, 1 << 30, 1 << 40
FOOTPRINT = 4 * TIB
RATE = 2e8
PMD = 2 * MIB


def size_str(n):
    parts = []
    for unit, name in ((TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if n >= unit:
            parts.append(f"{n // unit}{name}")
            n %= unit
    assert n == 0
    return "+".join(parts) if parts else "0"


def unaligned(start, size):
    return start % PMD and (start + size) % PMD


D1 = 41 * MIB + 292 * KIB
D2 = 3 * GIB + 517 * MIB + 44 * KIB
D3 = 7 * GIB + 301 * MIB + 20 * KIB


def islands(rng):
    """150 islands: 40 of 1-2 MiB, 60 of 3-100 MiB, 50 of 100-900 MiB,
    unaligned where they are and wherever they move."""
    sizes = ([rng.randrange(256, 512) * 4 * KIB for _ in range(40)] +
             [rng.randrange(3 * 256, 100 * 256) * 4 * KIB for _ in range(60)] +
             [rng.randrange(100 * 256, 900 * 256) * 4 * KIB for _ in range(50)])
    rng.shuffle(sizes)
    # one island per slot of FOOTPRINT / 160, at a random place inside it,
    # leaving room for the largest move (the last slots stay empty)
    slot = FOOTPRINT // 160 // (4 * KIB) * 4 * KIB
    out = []
    for i, size in enumerate(sizes):
        while True:
            start = i * slot + rng.randrange(0, (slot - size - 8 * GIB) // (4 * KIB)) * 4 * KIB
            if all(unaligned(start + d, size) for d in (0, D1, D1 + D2, D3)):
                break
        out.append((start, size))
    return out


def phase(name, isl, duration=20):
    hot = [{"start": size_str(s), "size": size_str(n)} for s, n in sorted(isl)]
    ends = sorted(isl)
    for (s0, n0), (s1, _) in zip(ends, ends[1:]):
        assert s0 + n0 <= s1, "islands overlap"
    assert all(s + n <= FOOTPRINT for s, n in isl)
    return {"name": name, "duration_s": duration, "access_rate": RATE, "hot": hot}


def moved(isl, dist, which=None):
    out = [(s + dist, n) if which is None or i in which else (s, n)
           for i, (s, n) in enumerate(isl)]
    assert all(unaligned(s, n) for s, n in out)
    return out


def scattered(rng, isl):
    """Each island moved by a distance of its own, within its slot (one
    island per FOOTPRINT / 160), both ends still on no 2 MiB boundary."""
    slot = FOOTPRINT // 160 // (4 * KIB) * 4 * KIB
    out = []
    for s, n in isl:
        lo, hi = s // slot * slot, s // slot * slot + slot - n
        while True:
            d = rng.randrange(1, 6 * GIB // (4 * KIB)) * 4 * KIB * rng.choice((-1, 1))
            if lo <= s + d <= hi and unaligned(s + d, n):
                break
        out.append((s + d, n))
    return out


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)
    rng = random.Random(33)
    isl = islands(rng)
    d1, d2, d3 = D1, D2, D3
    specs = {
        "islands-moved": [phase("150 islands", isl),
                          phase("all moved by 41 MiB 292 KiB", moved(isl, d1)),
                          phase("all moved by 3 GiB 517 MiB 44 KiB more",
                                moved(moved(isl, d1), d2))],
    }
    some = set(rng.sample(range(len(isl)), 50))
    specs["islands-some-moved"] = [phase("150 islands", isl),
                                   phase("50 moved by 7 GiB 301 MiB 20 KiB", moved(isl, d3, some)),
                                   phase("moved back", isl)]
    rng3 = random.Random(335)
    sc = [isl]
    for _ in range(3):
        sc.append(scattered(rng3, sc[-1]))
    specs["islands-scattered"] = [phase("150 islands", sc[0], 6)] + [
        phase(f"each moved by its own distance ({k})", sc[k], 6) for k in (1, 2, 3)]
    for name, phases in specs.items():
        with open(os.path.join(outdir, name + ".json"), "w") as f:
            json.dump({"name": name, "footprint": size_str(FOOTPRINT), "phases": phases}, f,
                      indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
