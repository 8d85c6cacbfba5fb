#!/bin/sh
# Build vtier_tdp.ko for the testbed's L1 kernel and run a tdp-* scenario in the
# testbed with the module, vtier-bench (and the libraries L1 lacks) and
# tdp-abi-test copied into L1.
#   tests/kmod/vm-tdp.sh [--build DIR] [SCENARIO] [runner options...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$repo/build
if [ "${1:-}" = --build ]; then build=$(cd "$2" && pwd); shift 2; fi
scenario=${1:-tdp-npt}
[ $# -gt 0 ] && shift
"$repo/host-kmod/build.sh" "$build/kmod"
ko=$build/kmod/host-kmod/vtier_tdp.ko
bench=$build/host-agent/tools/vtier-bench
abitest=$build/tests/kmod/tdp-abi-test
for f in "$ko" "$bench" "$abitest"; do
    [ -f "$f" ] || { echo "vm-tdp: $f missing (make build kmod)" >&2; exit 1; }
done
set -- --l1-file "$ko:/opt/vtier/vtier_tdp.ko" --l1-file "$bench:/opt/vtier/bin/vtier-bench" \
    --l1-file "$abitest:/usr/local/bin/tdp-abi-test" "$@"
# vtier-bench is dynamic (glib, json-glib); L1 has QEMU's libraries, not all of these.
for lib in $(ldd "$bench" | awk '$3 ~ /^\// {print $3}'); do
    case ${lib##*/} in libc.so.*|libm.so.*|ld-linux*) continue;; esac
    set -- "$@" --l1-file "$lib:/opt/vtier/lib/${lib##*/}"
done
exec "$repo/tests/testbed/run" --build "$build" "$@" "$scenario"
