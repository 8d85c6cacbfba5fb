# The skewed workload of parts tco and bench-tco (sourced), and how they
# measure a placement: the guest runs zipf phases over its whole region
# without pause (a few MiB take most accesses, a long tail the rest), each
# followed by a control phase over one page, each phase logging its rate to
# /run/T.log. The machine's speed under the emulation swings by several times
# within minutes (other work on the host, L1's own threads): a zipf rate means
# something only next to the control rate measured in the same minute on the
# same vCPU, so a placement's figure is zipf rate / control rate.
# Needs from vtierd-ctier.sh: lib.sh (ctl, cget, vget, fail, ms_now, MIB), W, WL.

SKEWED_PHASES=${VTIERD_SKEWED_PHASES:-4}
SKEWED_ZIPF_S=${VTIERD_SKEWED_ZIPF_S:-1.0}

# "NAME=MiB ..." of vm0's report's tiers (fastest first)
report_tier_mib() {
    local i=0 t out=""
    while t=$(cget report vm0 "tiers.$i.tier" "tiers.$i.bytes" 2> /dev/null); do
        # shellcheck disable=SC2086
        set -- $t
        out="$out${out:+ }$1=$(($2 / MIB))"
        i=$((i + 1))
    done
    echo "$out"
}
# the median rate (accesses/s) of the phases of dist $2 logged after line $1 of /run/T.log
skewed_rate_after() {
    tb_l2 vm0 "tail -n +$(($1 + 1)) /run/T.log" | grep "dist=$2 " |
        sed -n 's/.* rate=\([0-9]*\)\/s.*/\1/p' |
        sort -n | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]; else print 0}'
}
# slowdown in % of (normalized) rate $2 against the reference $1 (parentheses: in
# awk's printf a bare > is a redirection)
slowdown_pct() { awk "BEGIN {printf \"%.1f\", ($2 > 0 ? 100 * ($1 / $2 - 1) : 1e9)}"; }
# lines in /run/T.log, and zipf phases logged after line $1
skewed_lines() { tb_l2 vm0 'wc -l < /run/T.log'; }
skewed_zipf_after() { tb_l2 vm0 "tail -n +$(($1 + 1)) /run/T.log | grep -c 'dist=zipf .* rate=' || true"; }

skewed_start() {
    tb_l2 vm0 "rm -f /run/T.stop; (while [ ! -e /run/T.stop ]; do
        vtier-workload ctl phase dist=zipf zipf_s=$SKEWED_ZIPF_S ranges=0-${WL}M \
            duration_ms=$((W * 2)) write_pct=5 || { echo FAILED; exit 1; }
        vtier-workload ctl phase dist=uniform ranges=0-4K duration_ms=$((W / 2)) \
            write_pct=5 || { echo FAILED; exit 1; }; done; echo done) \
        > /run/T.log 2>&1 &"
}
skewed_stop() {
    tb_l2 vm0 -t 300 'touch /run/T.stop; while ! grep -q "^done\|^FAILED" /run/T.log; do sleep 0.2; done
        ! grep -q FAILED /run/T.log' || fail "zipf phases failed: $(tb_l2 vm0 'tail -3 /run/T.log')"
}

# Let the placement settle: at most $1 windows, until two in a row with
# nothing misplaced (placement=tco), no order queued to a mover (backlog) and
# nothing moved between NUMA nodes. Prints one line per window; $2 labels them.
placement_settle() {
    local max=$1 label=$2 i s mis backlog moved refused calm=0
    for i in $(seq 1 "$max"); do
        sleep "$(awk "BEGIN {print $W / 1000}")"
        s=$(vget vm0 tco_misplaced_bytes "backends.*.backlog" last_window_bytes refused_chunks) ||
            fail "stats vm0: $s"
        # shellcheck disable=SC2086
        set -- $s
        mis=$1 backlog=$2 moved=$3 refused=$4
        if [ "$mis" = 0 ] && [ "$backlog" = 0 ] && [ "$moved" = 0 ]; then
            calm=$((calm + 1))
        else
            calm=0
        fi
        echo "$label window $i: misplaced $((mis / MIB)) MiB, backlog $backlog," \
            "moved $((moved / MIB)) MiB, refused chunks $refused"
        [ "$calm" -ge 2 ] && return 0
    done
    echo "$label: not settled after $max windows (faults bring pages back as the placement" \
        "sends them down); measuring anyway"
}

# Measure the placement as it is now, over the next SKEWED_PHASES phases
# ($1 names it in errors). Sets m_rate (median accesses/s of the zipf
# phases), m_ctl (of the control phases), m_norm (m_rate / m_ctl), m_faults (store
# faults/s), and from the VM's TCO report m_saving (%), m_dram (% of its bytes
# on the fastest tier), m_tiers ("NAME=MiB ..."), m_est_fault, m_est_numa.
# No subshell: a failure here fails the scenario.
skewed_measure() {
    local l0 n=0 f0 f1 t0 t1 r dram total
    l0=$(skewed_lines)
    f0=$(vget vm0 "backends.*.faults_stored") || fail "stats vm0: $f0"
    t0=$(ms_now)
    for _ in $(seq 1 $((SKEWED_PHASES * 20))); do
        sleep 0.5
        n=$(skewed_zipf_after "$l0")
        [ "$n" -ge "$SKEWED_PHASES" ] && break
    done
    [ "$n" -ge "$SKEWED_PHASES" ] || fail "$1: only $n workload phases" \
        "in $((SKEWED_PHASES * 10)) s: $(tb_l2 vm0 'tail -3 /run/T.log')"
    f1=$(vget vm0 "backends.*.faults_stored") || fail "stats vm0: $f1"
    t1=$(ms_now)
    m_rate=$(skewed_rate_after "$l0" zipf)
    m_ctl=$(skewed_rate_after "$l0" uniform)
    m_norm=$(awk "BEGIN {printf \"%.6f\", ($m_ctl > 0 ? $m_rate / $m_ctl : 0)}")
    # one report: the saving, the fastest tier's bytes and all bytes, the estimates
    r=$(cget report vm0 saving_pct tiers.0.bytes bytes slowdown.fault_time_pct \
        slowdown.numa_extra_latency_pct) || fail "vtierctl report vm0: $r"
    # shellcheck disable=SC2086
    set -- "$1" $r
    m_saving=$2 dram=$3 total=$4 m_est_fault=$5 m_est_numa=$6
    # % of the report's bytes on its fastest tier
    m_dram=$(awk "BEGIN {printf \"%.1f\", ($total > 0 ? 100 * $dram / $total : 0)}")
    m_tiers=$(report_tier_mib)
    m_faults=$(( (f1 - f0) * 1000 / (t1 - t0 > 0 ? t1 - t0 : 1) ))
    [ -n "$m_rate" ] && [ -n "$m_saving" ] && [ "$m_ctl" -gt 0 ] ||
        fail "$1: no rate, control rate or saving: $m_rate $m_ctl $(ctl report vm0)"
}
