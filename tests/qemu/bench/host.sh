#!/usr/bin/env bash
# 100 VMs on one vtierd (docs/bench-host.md): `make bench-host`.
#   tests/qemu/bench/host.sh BUILDDIR QEMU_CACHE_DIR
# VTIER_BENCH_HOST_VMS=N runs smaller (bench_host.py lists the other knobs).
# Root: vtierd runs DAMON and moves QEMU's pages.
set -euo pipefail
build=${1:?usage: host.sh BUILDDIR QEMU_CACHE_DIR}
qdir=${2:?usage: host.sh BUILDDIR QEMU_CACHE_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%d MiB", $2/1024}' /proc/meminfo): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
VTIER_TEST_BUILD=$build/tests/qemu VTIER_QEMU_DIR=$qdir PYTHONPATH=$here/.. \
    python3 "$here/bench_host.py"
