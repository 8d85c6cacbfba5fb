# Part "bench-tco" of vtierd-ctier (sourced by it; bench-tco.sh runs it
# alone; make bench-tco; the table in docs/bench-tco.md): TierScape's Fig. 8
# on one real VM. The guest runs the skewed workload of ctier/skewed.sh
# without pause while vtierd places it, one placement after the other:
#   dram-only      everything the guest touched in DRAM (placement=tco alpha 1
#                  until placed, then mode=observe: nothing moves)
#   waterfall-all  placement=waterfall over every tier (3 NUMA nodes, 3
#                  compressed tiers)
#   dram+1ctier    placement=waterfall, tiers=DRAM,lz4 (what is elsewhere
#                  moves back: the policy's evacuation)
#   tco-0.1/0.5/0.9  placement=tco, every tier, alpha 0.1, 0.5, 0.9
# Each settles (placement_settle: nothing misplaced, queued or moved for two
# windows; at most VTIERD_BENCH_SETTLE windows), is measured over the next
# VTIERD_SKEWED_PHASES phases (median rate over the control rate of the same
# minutes, ctier/skewed.sh; its slowdown against dram-only),
# and the guest verifies every page after it. One line each:
#   RESULT-BENCH-TCO config= tco_saving_pct= slowdown_pct= faults_per_s=
#     dram_pct= bad_pages=
# Needs from vtierd-ctier.sh: lib.sh (ctl, fail, field, MIB), W.

. /src/tests/testbed/scenarios/ctier/skewed.sh
BENCH_SETTLE=${VTIERD_BENCH_SETTLE:-40}
bench_rows=""


# measure the placement now as config $1, verify every page, print its line
bench_row() {
    local slow v bad
    skewed_measure "$1"
    [ -n "${bench_ref:-}" ] || bench_ref=$m_norm
    slow=$(slowdown_pct "$bench_ref" "$m_norm")
    v=$(tb_l2 vm0 -t 900 'vtier-workload ctl verify report=5') || true
    bad=$(field "$v" bad)
    [ -n "$bad" ] || fail "$1: no verify result: $v"
    echo "  $1: rate $m_rate/s, control $m_ctl/s, MiB per tier: $m_tiers; est. fault time $m_est_fault %," \
        "est. NUMA extra latency $m_est_numa %"
    echo "RESULT-BENCH-TCO config=$1 tco_saving_pct=$m_saving slowdown_pct=$slow" \
        "faults_per_s=$m_faults dram_pct=$m_dram bad_pages=$bad"
    [ "$bad" = 0 ] || fail "$1: $bad guest pages bad: $v"
    bench_rows="$bench_rows$1 $m_saving $slow $m_faults $m_dram
"
}

tb_step "bench-tco: the same zipf workload under six placements"
fastest=$(ctl tiers --get 0.name) || fail "vtierctl tiers: no first tier"
skewed_start

echo "dram-only: placement=tco alpha=1 until placed, then mode=observe"
ctl policy vm0 mode=auto placement=tco tco_alpha=1 > /dev/null || fail "policy alpha=1"
placement_settle 40 dram-only
ctl policy vm0 mode=observe > /dev/null || fail "policy mode=observe"
placement_settle 4 dram-only
bench_row dram-only
awk "BEGIN {exit !($m_dram >= 90)}" || fail "dram-only: only $m_dram % of the bytes in DRAM"

echo "waterfall-all: placement=waterfall over every tier"
ctl policy vm0 mode=auto placement=waterfall > /dev/null || fail "policy waterfall"
placement_settle "$BENCH_SETTLE" waterfall-all
bench_row waterfall-all

echo "dram+1ctier: placement=waterfall, tiers=$fastest,lz4"
ctl policy vm0 tiers="$fastest,lz4" > /dev/null || fail "policy tiers=$fastest,lz4"
placement_settle "$BENCH_SETTLE" dram+1ctier
bench_row dram+1ctier
elsewhere=$(echo "$m_tiers" | tr ' ' '\n' | grep -v "^$fastest=\|^lz4=" | cut -d= -f2 |
    awk '{s += $1} END {print s + 0}')
[ "$elsewhere" -le 2 ] ||
    fail "dram+1ctier: $elsewhere MiB still outside $fastest and lz4: $m_tiers"

for alpha in 0.1 0.5 0.9; do
    echo "tco-$alpha: placement=tco over every tier, alpha $alpha"
    ctl policy vm0 placement=tco tco_alpha="$alpha" tiers=all > /dev/null ||
        fail "policy tco alpha=$alpha"
    placement_settle "$BENCH_SETTLE" "tco-$alpha"
    bench_row "tco-$alpha"
done
skewed_stop
ctl policy vm0 placement=waterfall > /dev/null

echo "bench-tco: $WL MiB zipf (s=$SKEWED_ZIPF_S) workload, window $W ms," \
    "$SKEWED_PHASES phases of $((W * 2)) ms per figure"
printf '%-14s %-10s %-12s %-9s %s\n' config saving% slowdown% faults/s dram%
echo "$bench_rows" | grep . | while read -r c s d f r; do
    printf '%-14s %-10s %-12s %-9s %s\n' "$c" "$s" "$d" "$f" "$r"
done
