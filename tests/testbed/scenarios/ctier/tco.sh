# Part "tco" of vtierd-ctier (sourced by it; vtierd-tco.sh runs it alone):
# TierScape's analytical model on a real VM. The guest runs a skewed workload
# without pause (zipf over its whole region: a few MiB take most accesses, a
# long tail the rest) while vtierd places it with placement=tco, first at
# alpha 1 (the fastest placement: everything touched in DRAM, the reference),
# then at alpha 0, 0.5 and 1. For each alpha, once the model has placed the VM
# (two windows with nothing misplaced, queued or moved: placement_settle,
# at most VTIERD_TCO_SETTLE_MAX windows),
# the workload's rate over the next VTIERD_SKEWED_PHASES phases (median, over
# the control rate of the same minutes: ctier/skewed.sh) against the
# reference's is the measured slowdown, and the VM's TCO report gives the
# saving against all-DRAM. After the last alpha the guest verifies every page
# once: each page has been in the tiers alpha 0 and 0.5 chose and has come back
# to DRAM at alpha 1 through vtierd's promotions (the compress part verifies
# through the fault path). One line per alpha, printed after that verify:
# RESULT-TCO alpha= tco_saving_pct= slowdown_pct= bad_pages= (bad_pages: the
# one verify's count, the same on each line). A verify per alpha took about
# 200 s of make check (every compressed page faulted back), and pulled the
# whole region into DRAM before the next alpha had to settle.
# Checks: query-memory-tiers of the patched QEMU shows vtierd's report (the
# saving within 2 points: a window may pass between the two reads); alpha 1
# puts at least 90 % of the VM's bytes in DRAM; alpha 0 and alpha 0.5 each
# save at least 10 points more than alpha 1 (alpha 0 against 0.5: see below).
# Needs from vtierd-ctier.sh: lib.sh (ctl, vget, fail, field, MIB), W, WL; the
# workload and the measurement: ctier/skewed.sh.

. /src/tests/testbed/scenarios/ctier/skewed.sh
TCO_SETTLE_MAX=${VTIERD_TCO_SETTLE_MAX:-40}

# Set alpha $1, wait until the model has placed the VM, measure (skewed_measure).
tco_run() {
    ctl policy vm0 placement=tco tco_alpha="$1" > /dev/null || fail "policy tco_alpha=$1"
    placement_settle "$TCO_SETTLE_MAX" "tco alpha=$1"
    skewed_measure "alpha=$1"
}

tb_step "tco: placement=tco under a zipf workload; alpha 1 (reference), 0, 0.5, 1"
skewed_start
ctl policy vm0 mode=auto > /dev/null || fail "policy mode=auto"
tco_run 1
ref=$m_norm
echo "tco reference (alpha 1): rate $m_rate/s (control $m_ctl/s), saving $m_saving %, $m_dram % of the bytes" \
    "in DRAM, $m_faults store faults/s; MiB per tier: $m_tiers"
awk "BEGIN {exit !($ref > 0)}" || fail "the workload reported no rate"
awk "BEGIN {exit !($m_dram >= 90)}" || fail "alpha=1 left only $m_dram % of the VM's bytes in DRAM"
printf '%-6s %-12s %-12s %-12s %-9s %-9s %-9s %-14s %s\n' alpha rate/s control/s slowdown% \
    saving% dram% faults/s est_fault_time% est_numa_extra%
savings=""
results=""
for alpha in 0 0.5 1; do
    tco_run "$alpha"
    slow=$(slowdown_pct "$ref" "$m_norm")
    printf '%-6s %-12s %-12s %-12s %-9s %-9s %-9s %-14s %s\n' "$alpha" "$m_rate" "$m_ctl" "$slow" \
        "$m_saving" "$m_dram" "$m_faults" "$m_est_fault" "$m_est_numa"
    echo "       MiB per tier: $m_tiers"
    results="$results $alpha:$m_saving:$slow"
    savings="$savings $m_saving"
done
v=$(tb_l2 vm0 -t 900 'vtier-workload ctl verify report=5') || true
bad=$(field "$v" bad)
[ -n "$bad" ] || fail "tco: no verify result: $v"
for r in $results; do
    echo "RESULT-TCO alpha=${r%%:*} tco_saving_pct=$(echo "$r" | cut -d: -f2)" \
        "slowdown_pct=${r##*:} bad_pages=$bad"
done
[ "$bad" = 0 ] || fail "tco: $bad guest pages bad after alpha 0, 0.5 and 1: $v"
skewed_stop
ctl report vm0
# QEMU shows the same report: vtierd sends it with the backend's STATS after
# each window (query-memory-tiers' tco, docs/abi-handoff.md)
rep=$(cget report vm0 saving_pct tco_alpha) || fail "vtierctl report vm0: $rep"
# shellcheck disable=SC2086
set -- $rep
r_save=$1 r_alpha=$2
q=$(tb_qmp vm0 '{"execute":"query-memory-tiers"}') || fail "query-memory-tiers: $q"
qsave=$(echo "$q" | tr -d ' \n' | grep -o '"saving-pct":[0-9.e+-]*' | head -1 | cut -d: -f2)
qalpha=$(echo "$q" | tr -d ' \n' | grep -o '"tco-alpha":[0-9.e+-]*' | head -1 | cut -d: -f2)
echo "query-memory-tiers: saving-pct $qsave, tco-alpha $qalpha; vtierctl report: saving_pct" \
    "$r_save, tco_alpha $r_alpha"
[ -n "$qsave" ] || fail "query-memory-tiers has no tco report: $q"
awk "BEGIN {d = $qsave - $r_save; exit !(d < 2 && d > -2 && $qalpha == 1)}" ||
    fail "query-memory-tiers' TCO report differs from vtierctl report's: $q"
# shellcheck disable=SC2086
set -- $savings
awk "BEGIN {exit !($1 >= $3 + 10)}" ||
    fail "alpha=0 saved $1 %, not 10 points more than alpha=1 ($3 %)"
# alpha 0.5 saves 10 points more than alpha 1 too. Not asserted: alpha 0
# against 0.5.
# Their placements' savings are a few points apart on this workload (alpha 0
# compresses what compresses and leaves the random chunks where the tiers'
# refusals, learnt one tier and one mover round at a time, have got to within
# the settle's 40 windows; alpha 0.5 uses the NUMA tiers, which refuse
# nothing): 50.6-58.9 % against 48.2-48.9 % in three CI runs, 41.8 against
# 48.8 in a fourth (docs/results/2026-11-30-tco-alpha0-refusals.md). The
# model's own monotony in alpha is test_monotone_in_alpha's (host-agent/tests).
awk "BEGIN {exit !($2 >= $3 + 10)}" ||
    fail "alpha=0.5 saved $2 %, not 10 points more than alpha=1 ($3 %)"
ctl policy vm0 placement=waterfall > /dev/null
