#!/usr/bin/env bash
# Telescope's bars on the built-in scenarios and this directory's specs: each
# line settles within N windows of every phase change (--expect-converge),
# holds P and R (means after settling) at or above X (--expect-pr) and spends
# at most M checks a window on average (--expect-checks), for both telescope
# profilers. `make check-telemetry` runs them at seed 1; `make
# bench-telemetry-seeds` at several seeds, which the bars do not all hold
# (docs/telemetry.md, "Seeds").
#
# usage: [TELEMETRY_BARS="NAME..."] [TELEMETRY_JOBS=N] telemetry-bars.sh [--report] VTIER_BENCH [SEED...]
# (default: every bar, seed 1)
# Every line runs at every seed: one summary line each, then the tally. Exit 1
# if a run failed its bars, unless --report (a benchmark: the tally is the
# result); exit 2 if vtier-bench could not run.
#
# Why the bars are where they are: issue 11's target is 5 windows everywhere;
# scattered-200 meets it since cold pieces join their neighbours near the
# region cap (4 / 4 from a cold start, ~38k checks; 10 / 10 and ~43k before).
# The vm-* scenarios imitate the testbed's real-VM run, where v2 once lost
# precision: their P bar is 0.98 (0.957 and 0.65 before the fixes). The
# islands-* scenarios (issue 33: 150 sub-PUD islands moved by unaligned
# distances, in islands-scattered each by its own) hold issue 33's 5 windows
# since the region cap goes to coarse cuts first (10 / 17 windows after the
# 41 MiB move before, 8-11 in islands-scattered).
set -uo pipefail
report=0
if [ "${1:-}" = --report ]; then
    report=1
    shift
fi
bench=${1:?usage: telemetry-bars.sh [--report] VTIER_BENCH [SEED...]}
shift
[ -x "$bench" ] || { echo "telemetry-bars.sh: $bench: not an executable" >&2; exit 2; }
seeds=("${@:-1}")
dir=$(dirname "$0")
both=(--profiler telescope-bounded --profiler telescope-flex)
# the testbed's tdp-npt run samples every 50 ms in 1 s windows
testbed=(--sample-us 50000 --window-us 1000000)
runs=0 failed=0
# Each run is one simulator process on one core: up to TELEMETRY_JOBS of them
# at once (default: the machine's cores). Their summaries print in the order
# of the bars below, whatever order they end in.
jobs=${TELEMETRY_JOBS:-$(nproc)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
order=()

# run_one IDX NAME CONVERGE PR CHECKS SEED ARGS...: vtier-bench's output in
# $tmp/IDX.out, its exit status in $tmp/IDX.rc, the line's name in $tmp/IDX.name
run_one() {
    local idx=$1 name=$2 conv=$3 pr=$4 checks=$5 seed=$6
    shift 6
    echo "$name $seed" > "$tmp/$idx.name"
    "$bench" telemetry --seed "$seed" "${both[@]}" "$@" --expect-converge "$conv" \
        --expect-pr "$pr" --expect-checks "$checks" > "$tmp/$idx.out" 2>&1
    echo $? > "$tmp/$idx.rc"
}

# bar NAME CONVERGE PR CHECKS ARGS...: queue the line's run at every seed
bar() {
    local name=$1 conv=$2 pr=$3 checks=$4 seed idx
    shift 4
    case " ${TELEMETRY_BARS:-$name} " in *" $name "*) ;; *) return 0 ;; esac
    for seed in "${seeds[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
        idx=${#order[@]}
        order+=("$idx")
        run_one "$idx" "$name" "$conv" "$pr" "$checks" "$seed" "$@" &
    done
}

# report IDX: the run's summary line; its output too if it failed its bars
report_one() {
    local idx=$1 name seed out rc
    read -r name seed < "$tmp/$idx.name"
    out=$(cat "$tmp/$idx.out")
    rc=$(cat "$tmp/$idx.rc" 2>/dev/null || echo 2)
    runs=$((runs + 1))
    # 1 with a FAIL line: a bar missed; any other failure: the run itself
    if [ "$rc" != 0 ] && { [ "$rc" != 1 ] || ! grep -q '^FAIL' <<< "$out"; }; then
        echo "$out" >&2
        echo "telemetry-bars.sh: $name, seed $seed: vtier-bench exited $rc" >&2
        exit 2
    fi
    # per profiler, the worst over its scenarios and phases: the slowest
    # settle ("never": not settled), the lowest P and R means, checks a window
    echo "$out" | awk -v n="$name" -v s="$seed" -v rc="$rc" '
        function worse(a, b) { return a == "never" || b == "never" ? "never" : (b + 0 > a + 0 ? b : a) }
        function low(a, b) { return b + 0 < a + 0 ? b : a }
        /^telescope-/ { p = $1
            if (!(p in c)) { o[++np] = p; c[p] = $3; P[p] = $5; R[p] = $6; k[p] = $9; next }
            c[p] = worse(c[p], $3); P[p] = low(P[p], $5); R[p] = low(R[p], $6)
            if ($9 + 0 > k[p] + 0) k[p] = $9
            next }
        /^ +[0-9]+ +(-?[0-9]+|never) / && p != "" {
            c[p] = worse(c[p], $2); P[p] = low(P[p], $4); R[p] = low(R[p], $5) }
        END { printf "%-18s seed %-3s %s", n, s, rc == 0 ? "pass" : "FAIL"
              for (i = 1; i <= np; i++)
                  printf "  %s settle %s P %s R %s checks %s", substr(o[i], 11), c[o[i]],
                         P[o[i]], R[o[i]], k[o[i]]
              printf "\n" }'
    if [ "$rc" != 0 ]; then
        failed=$((failed + 1))
        echo "$out" | sed 's/^/    /'
    fi
}

bar builtin 5 0.95 3000 --scenario multi-phase --scenario multi-phase-5l --scenario subtb
bar mixed-patterns 5 0.95 5000 --spec "$dir/mixed-patterns.json"
bar moved-half 5 0.95 25000 --spec "$dir/moved-half.json"
bar lukewarm 5 0.95 3000 --spec "$dir/lukewarm.json"
bar drift 5 0.95 15000 --spec "$dir/drift.json"
bar huge-2m 5 0.95 6000 --spec "$dir/huge-2m.json"
bar scattered-200 5 0.95 42000 --spec "$dir/scattered-200.json"
bar vm-like 5 0.98 12000 --spec "$dir/vm-like.json" "${testbed[@]}"
bar vm-lukewarm 5 0.98 8000 --spec "$dir/vm-lukewarm.json" "${testbed[@]}"
bar islands-moved 5 0.95 75000 --spec "$dir/islands-moved.json"
bar islands-some-moved 5 0.95 70000 --spec "$dir/islands-some-moved.json"
bar islands-scattered 5 0.95 115000 --spec "$dir/islands-scattered.json"
wait
for idx in "${order[@]}"; do report_one "$idx"; done
echo "bars: $failed of $runs runs failed (seeds: ${seeds[*]})"
[ "$failed" = 0 ] || [ "$report" = 1 ]
