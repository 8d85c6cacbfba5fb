# Part "tco" of vtierd-ctier (sourced by it; vtierd-tco.sh runs it alone):
# TierScape's analytical model on a real VM. The guest runs a skewed workload
# without pause (zipf over its whole region: a few MiB take most accesses, a
# long tail the rest) while vtierd places it with placement=tco, first at
# alpha 1 (the fastest placement: everything touched in DRAM, the reference),
# then at alpha 0, 0.5 and 1. For each alpha, once the model has placed the VM
# (tco_misplaced_bytes 0 for two windows, or VTIERD_TCO_SETTLE_MAX windows),
# the workload's rate over the next VTIERD_TCO_PHASES phases (median) against
# the reference's is the measured slowdown, and the VM's TCO report gives the
# saving against all-DRAM; then the guest verifies every page. One line per
# alpha: RESULT-TCO alpha= tco_saving_pct= slowdown_pct= bad_pages=
# Checks: alpha 1 puts at least 90 % of the VM's bytes in DRAM; alpha 0 saves
# at least 10 points more than alpha 1; the saving does not grow with alpha
# (2 points of slack: the bytes move a little while the report is read).
# Needs from vtierd-ctier.sh: ctl, fail, field, jfirst, W, WL, MIB.

TCO_PHASES=${VTIERD_TCO_PHASES:-4}
TCO_SETTLE_MAX=${VTIERD_TCO_SETTLE_MAX:-40}
TCO_ZIPF_S=${VTIERD_TCO_ZIPF_S:-1.0}

# first "KEY":NUMBER of JSON $1, decimals kept
jnum() { echo "$1" | grep -o "\"$2\":-\?[0-9][0-9.e+-]*" | head -1 | cut -d: -f2; }
# bytes of the report $1 on its fastest tier (the first) and on all tiers
tco_dram_pct() {
    awk -v d="$(echo "$1" | grep -o '"bytes":[0-9]*' | head -1 | cut -d: -f2)" \
        -v a="$(echo "$1" | grep -o '"bytes":[0-9]*' | tail -1 | cut -d: -f2)" \
        'BEGIN {printf "%.1f", a > 0 ? 100 * d / a : 0}'
}
# the median rate (accesses/s) of the phases logged after line $1 of /run/T.log
tco_rate_after() {
    tb_l2 vm0 "tail -n +$(($1 + 1)) /run/T.log" | sed -n 's/.* rate=\([0-9]*\)\/s.*/\1/p' |
        sort -n | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]; else print 0}'
}
tco_phases_logged() { tb_l2 vm0 'grep -c " rate=" /run/T.log || true'; }

# Set alpha $1, wait until the model has placed the VM, measure. Sets
# tco_rate tco_saving tco_dram tco_faults tco_est_fault tco_est_numa (no
# subshell: a failure here fails the scenario).
tco_run() {
    local alpha=$1 i js mis calm=0 n0 n f0 f1 t0 t1 rep
    ctl policy vm0 placement=tco tco_alpha="$alpha" > /dev/null || fail "policy tco_alpha=$alpha"
    for i in $(seq 1 "$TCO_SETTLE_MAX"); do
        sleep "$(awk "BEGIN {print $W / 1000}")"
        js=$(ctl --json stats vm0)
        mis=$(jfirst "$js" tco_misplaced_bytes)
        [ "${mis:-1}" = 0 ] && calm=$((calm + 1)) || calm=0
        echo "tco alpha=$alpha window $i: misplaced $((${mis:-0} / MIB)) MiB," \
            "moved $(($(jfirst "$js" last_window_bytes) / MIB)) MiB"
        [ "$calm" -ge 2 ] && break
    done
    [ "$calm" -ge 2 ] || echo "tco alpha=$alpha: not settled after $TCO_SETTLE_MAX windows" \
        "(faults bring pages back as fast as the model sends them down); measuring anyway"
    n0=$(tco_phases_logged)
    f0=$(jsum "$(ctl --json stats vm0)" faults_stored)
    t0=$(ms_now)
    for _ in $(seq 1 $((TCO_PHASES * 20))); do
        sleep 0.5
        n=$(tco_phases_logged)
        [ "$n" -ge $((n0 + TCO_PHASES)) ] && break
    done
    [ "$n" -ge $((n0 + TCO_PHASES)) ] || fail "alpha=$alpha: only $((n - n0)) workload phases" \
        "in $((TCO_PHASES * 10)) s: $(tb_l2 vm0 'tail -3 /run/T.log')"
    f1=$(jsum "$(ctl --json stats vm0)" faults_stored)
    t1=$(ms_now)
    tco_rate=$(tco_rate_after "$n0")
    rep=$(ctl --json report vm0) || fail "vtierctl report vm0"
    tco_saving=$(jnum "$rep" saving_pct)
    tco_dram=$(tco_dram_pct "$rep")
    tco_faults=$(( (f1 - f0) * 1000 / (t1 - t0 > 0 ? t1 - t0 : 1) ))
    tco_est_fault=$(jnum "$rep" fault_time_pct)
    tco_est_numa=$(jnum "$rep" numa_extra_latency_pct)
    [ -n "$tco_rate" ] && [ -n "$tco_saving" ] || fail "alpha=$alpha: no rate or saving: $rep"
}

tb_step "tco: placement=tco under a zipf workload; alpha 1 (reference), 0, 0.5, 1"
tb_l2 vm0 "rm -f /run/T.stop; (while [ ! -e /run/T.stop ]; do
    vtier-workload ctl phase dist=zipf zipf_s=$TCO_ZIPF_S ranges=0-${WL}M \
        duration_ms=$((W * 2)) write_pct=5 || { echo FAILED; exit 1; }; done; echo done) \
    > /run/T.log 2>&1 &"
ctl policy vm0 mode=auto > /dev/null || fail "policy mode=auto"
tco_run 1
ref=$tco_rate
echo "tco reference (alpha 1): rate $ref/s, saving $tco_saving %, $tco_dram % of the bytes" \
    "in DRAM, $tco_faults store faults/s"
[ "$ref" -gt 0 ] || fail "the workload reported no rate"
awk "BEGIN {exit !($tco_dram >= 90)}" || fail "alpha=1 left only $tco_dram % of the VM's bytes in DRAM"
printf '%-6s %-12s %-12s %-9s %-9s %-9s %-14s %s\n' alpha rate/s slowdown% saving% dram% \
    faults/s est_fault_time% est_numa_extra%
savings=""
for alpha in 0 0.5 1; do
    tco_run "$alpha"
    slow=$(awk "BEGIN {printf \"%.1f\", $tco_rate > 0 ? 100 * ($ref / $tco_rate - 1) : 1e9}")
    printf '%-6s %-12s %-12s %-9s %-9s %-9s %-14s %s\n' "$alpha" "$tco_rate" "$slow" \
        "$tco_saving" "$tco_dram" "$tco_faults" "$tco_est_fault" "$tco_est_numa"
    v=$(tb_l2 vm0 -t 900 'vtier-workload ctl verify report=5') || true
    bad=$(field "$v" bad)
    [ -n "$bad" ] || fail "alpha=$alpha: no verify result: $v"
    echo "RESULT-TCO alpha=$alpha tco_saving_pct=$tco_saving slowdown_pct=$slow bad_pages=$bad"
    [ "$bad" = 0 ] || fail "alpha=$alpha: $bad guest pages bad: $v"
    savings="$savings $tco_saving"
done
tb_l2 vm0 -t 300 'touch /run/T.stop; while ! grep -q "^done\|^FAILED" /run/T.log; do sleep 0.2; done
    ! grep -q FAILED /run/T.log' || fail "zipf phases failed: $(tb_l2 vm0 'tail -3 /run/T.log')"
ctl report vm0
# shellcheck disable=SC2086
set -- $savings
awk "BEGIN {exit !($1 >= $3 + 10)}" ||
    fail "alpha=0 saved $1 %, not 10 points more than alpha=1 ($3 %)"
awk "BEGIN {exit !($1 + 2 >= $2 && $2 + 2 >= $3)}" ||
    fail "the saving grows with alpha: $savings (alpha 0, 0.5, 1)"
ctl policy vm0 placement=waterfall > /dev/null
