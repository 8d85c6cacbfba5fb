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

# The encoding check's refusals: binary, so generated here (no binary files in git).
NS = "http://vtier.dev/xmlns/libvirt/policy/1"
doc = ("<?xml version='1.0' encoding='%s'?><!DOCTYPE p [<!ENTITY m 'auto'>]>"
       "<vtier:policy xmlns:vtier='" + NS + "' mode='&m;'/>")
encoded = {
    "enc-ebcdic-cp037": (doc % "IBM037").encode("cp037"),
    "enc-ebcdic-cp500": (doc % "EBCDIC-INT").encode("cp500"),
    "enc-utf16-bom": (doc % "UTF-16").encode("utf-16"),
    "enc-utf16le": (doc % "UTF-16LE").encode("utf-16-le"),
    "enc-utf16be": (doc % "UTF-16BE").encode("utf-16-be"),
    "enc-utf32-bom": (doc % "UTF-32").encode("utf-32"),
    "enc-latin1-decl": (doc % "ISO-8859-1").encode("latin-1"),
    "enc-utf8-bom": b"\xef\xbb\xbf" + ("<vtier:policy xmlns:vtier='" + NS + "' mode='auto'/>").encode(),
}
for name, data in encoded.items():
    for kind in (b"P", b"D"):
        with open(os.path.join(out, "%s-%s" % (kind.decode(), name)), "wb") as f:
            f.write(kind + data)
