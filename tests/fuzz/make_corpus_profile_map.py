#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpus of fuzz_profile_map into the directory given: the
profile seeds of make_corpus_profile.py, each behind destination tiers that
share its tiers' names, lack them, have fewer or more of a kind, or give its
names to tiers of the other kind (10 bytes:
memory tiers, compressed tiers, a name index per tier)."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# names: 0 dram 1 cxl 2 pmem 3 lz4 4 zstd 5 disk 6 lz4hc 7 node1
DESTS = {
    "same": bytes([0, 2, 0, 3, 4, 0, 0, 0, 0, 0]),        # dram | lz4 zstd
    "renamed": bytes([1, 3, 0, 1, 6, 5, 3, 0, 0, 0]),     # dram cxl | lz4hc disk lz4
    "no-ctier": bytes([2, 0, 0, 1, 2, 0, 0, 0, 0, 0]),    # dram cxl pmem | -
    "one-ctier": bytes([0, 1, 0, 5, 0, 0, 0, 0, 0, 0]),   # dram | disk
    # the source's names on tiers of the other kind: lz4 a memory tier, dram compressed
    "kinds-swapped": bytes([1, 2, 3, 4, 0, 1, 0, 0, 0, 0]),  # lz4 zstd | dram cxl
    # more tiers of each kind than the source has: the widest destination
    "wide": bytes([3, 4, 0, 1, 2, 7, 3, 4, 6, 5]),        # dram cxl pmem node1 | lz4 zstd lz4hc disk
}

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([sys.executable, os.path.join(HERE, "make_corpus_profile.py"), tmp], check=True)
    for seed in sorted(os.listdir(tmp)):
        with open(os.path.join(tmp, seed), "rb") as f:
            data = f.read()
        for dname, hdr in DESTS.items():
            with open(os.path.join(out, f"{dname}-{seed}"), "wb") as f:
                f.write(hdr + data)
