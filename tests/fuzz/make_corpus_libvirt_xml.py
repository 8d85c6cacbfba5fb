#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpus of fuzz_libvirt_xml into the directory given: the
golden files of host-agent/tests/libvirt-xml/, each behind the byte that
picks its parser ('P' even: the policy element alone, 'D' odd: a domain),
so that the seeds and the golden tests never drift apart."""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
golden = os.path.join(here, "..", "..", "host-agent", "tests", "libvirt-xml")
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name in sorted(os.listdir(golden)):
    if not name.endswith(".xml"):
        continue
    with open(os.path.join(golden, name), "rb") as f:
        xml = f.read()
    with open(os.path.join(out, name), "wb") as f:
        f.write((b"P" if name.startswith("policy-") else b"D") + xml)
