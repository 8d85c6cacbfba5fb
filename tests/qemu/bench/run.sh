#!/usr/bin/env bash
# The fault round-trip benchmark of docs/bench-handoff.md, side by side in one
# run: the bare in-process UFFDIO_COPY loop, the same faults served by the
# reference peer through the hand-off (3 rounds each, interleaved), then a
# TCG guest on the patched QEMU timing its own reads with rdtsc.
#   tests/qemu/bench/run.sh BUILDDIR QEMU_CACHE_DIR
set -euo pipefail
build=${1:?usage: run.sh BUILDDIR QEMU_CACHE_DIR}
qdir=${2:?usage: run.sh BUILDDIR QEMU_CACHE_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$build/tests/qemu
pages=${BENCH_PAGES:-20000}
tmp=$(mktemp -d /tmp/vtier-bench-XXXXXX)
peer_pid=
cleanup() {
    [ -n "$peer_pid" ] && kill "$peer_pid" 2>/dev/null && wait "$peer_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -r), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin/vtier-test-peer" --socket "$tmp/peer.sock" --control "$tmp/peer.ctl" \
    --store "$tmp/store" > "$tmp/peer.log" 2>&1 &
peer_pid=$!
for _ in $(seq 50); do [ -S "$tmp/peer.ctl" ] && break; sleep 0.1; done
for round in 1 2 3; do
    "$bin/vtier-handoff-bench" inproc --pages "$pages"
    "$bin/vtier-handoff-bench" handoff --pages "$pages" \
        --socket "$tmp/peer.sock" --control "$tmp/peer.ctl" 2>/dev/null
done
VTIER_TEST_BUILD=$bin VTIER_QEMU_DIR=$qdir PYTHONPATH=$here/.. python3 "$here/bench_guest.py"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
