#!/bin/sh
# Fetch scripts/checkpatch.pl (+ the two data files it reads) from the source
# of the testbed's L1 kernel, with apt-get source (deb-src from scripts/deps.sh).
#   host-kmod/fetch-checkpatch.sh DESTDIR
set -eu
dest=$1
ver=$(basename "$(dirname "$(dirname "$(dirname "$(dirname "$(tests/testbed/images kdir)")")")")")
ver=$(echo "${ver#*_}" | tr _ '~')   # kernel-PKG_VERSION (~ stored as _) -> VERSION
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get source --download-only "linux=$ver" > /dev/null)
up=${ver%%-*}
mkdir -p "$dest"
tar -C "$tmp" -xJf "$tmp"/linux_"$up".orig.tar.xz "linux-$up/scripts/checkpatch.pl" \
    "linux-$up/scripts/spelling.txt" "linux-$up/scripts/const_structs.checkpatch"
cp "$tmp/linux-$up/scripts/checkpatch.pl" "$tmp/linux-$up/scripts/spelling.txt" \
    "$tmp/linux-$up/scripts/const_structs.checkpatch" "$dest/"
echo "checkpatch.pl from linux $ver in $dest"
