#!/usr/bin/env bash
# The telemetry benchmark behind docs/telemetry.md: accuracy and convergence
# on the paper's scenarios, cost against footprint, and the plots.
# usage: bench/telemetry.sh VTIER_BENCH OUTDIR
set -euo pipefail
bench=${1:?vtier-bench path}
out=${2:?output directory}
mkdir -p "$out"

machine() {
    echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
         "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), kernel $(uname -r)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown), date: $(date -u +%F)"
}

run() {
    local name=$1; shift
    echo "==> $name: vtier-bench telemetry $*"
    {
        machine
        echo "command: vtier-bench telemetry $*"
        /usr/bin/time -f "wall %e s, max RSS %M KiB" "$bench" telemetry "$@" 2>&1
    } | tee "$out/telemetry-$name.txt"
}

run multi-phase --scenario multi-phase \
    --profiler telescope-bounded --profiler telescope-flex --profiler damon-like \
    --json "$out/telemetry-multi-phase.json" --svg "$out/telemetry-multi-phase.svg"
run multi-phase-5l --scenario multi-phase-5l \
    --profiler telescope-bounded --profiler telescope-flex --profiler damon-like \
    --json "$out/telemetry-multi-phase-5l.json" --svg "$out/telemetry-multi-phase-5l.svg"
run subtb --scenario subtb \
    --profiler telescope-bounded --profiler telescope-flex --profiler damon-like \
    --profiler scan --profiler linear --json "$out/telemetry-subtb.json"
run scan-5tib --scenario multi-phase --profiler scan --windows 50
run budget-3000 --scenario multi-phase --profiler telescope-bounded --profiler telescope-flex \
    --budget 3000
run budget-1500 --scenario multi-phase --profiler telescope-bounded --profiler telescope-flex \
    --budget 1500
run scaling --scaling --profiler telescope-bounded --profiler telescope-flex \
    --profiler damon-like --windows 100
run scattered-200 --spec "$(dirname "$0")/../tests/scenarios/scattered-200.json" \
    --profiler telescope-bounded --profiler telescope-flex --profiler damon-like
for spec in moved-half lukewarm drift huge-2m mixed-patterns; do
    run "$spec" --spec "$(dirname "$0")/../tests/scenarios/$spec.json" \
        --profiler telescope-bounded --profiler telescope-flex
done
