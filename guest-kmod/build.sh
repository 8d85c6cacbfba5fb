#!/bin/sh
# Build vtier_guest.ko out of the source tree: copy the sources to OUTDIR and
# run Kbuild there against KDIR (default: the testbed's kernel headers, which
# L1 and L2 share).
#   guest-kmod/build.sh OUTDIR [KDIR]      -> OUTDIR/guest-kmod/vtier_guest.ko
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$1
kdir=${2:-$("$repo/tests/testbed/images" kdir)}
[ -d "$kdir" ] || { echo "guest-kmod: no kernel headers at '$kdir' (make testbed-images)" >&2; exit 1; }
mkdir -p "$out/guest-kmod" "$out/include/vtier"
cp -u "$repo"/guest-kmod/*.c "$repo/guest-kmod/Kbuild" "$repo/guest-kmod/Makefile" "$out/guest-kmod/"
cp -u "$repo/include/vtier/guest.h" "$out/include/vtier/"
make -s -C "$out/guest-kmod" KDIR="$kdir" >&2
