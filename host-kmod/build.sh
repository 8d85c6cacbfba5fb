#!/bin/sh
# Build vtier_tdp.ko out of the source tree: copy the sources to OUTDIR and run
# Kbuild there against KDIR (default: the testbed's L1 kernel headers).
#   host-kmod/build.sh OUTDIR [KDIR]      -> OUTDIR/host-kmod/vtier_tdp.ko
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$1
kdir=${2:-$("$repo/tests/testbed/images" kdir)}
[ -d "$kdir" ] || { echo "host-kmod: no kernel headers at '$kdir' (make testbed-images)" >&2; exit 1; }
mkdir -p "$out/host-kmod" "$out/include/vtier"
cp -u "$repo"/host-kmod/*.c "$repo"/host-kmod/*.h "$repo/host-kmod/Kbuild" "$repo/host-kmod/Makefile" \
    "$out/host-kmod/"
cp -u "$repo/include/vtier/tdp.h" "$out/include/vtier/"
make -s -C "$out/host-kmod" KDIR="$kdir" >&2
