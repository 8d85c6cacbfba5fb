# bench-slowdown: what vtier costs a guest, against an untiered twin in the
# same seconds (issue 33 item 1; make bench-slowdown, docs/bench-slowdown.md).
# Two identical L2 VMs (tw0, tw1: 1 vCPU, $MEM MiB, stock QEMU, RAM on L1's
# DRAM node), both pinned to one L1 vCPU (below), run the same skewed workload
# (zipf phases over $WL MiB, 5 % writes) at the same time; one is under vtier,
# the other not. A case is measured twice with the roles swapped, so that
# whatever favours one vCPU slot cancels: $ROUNDS rounds, tw0 tiered in the
# even ones, tw1 in the odd ones, and
#   slowdown = 1 - geometric mean over the rounds of (tiered rate / untiered rate)
# (rates: accesses per second of the phases both ran in the same $MEASURE_S s).
# The A/A case (neither tiered) computed the same way is the method's noise
# floor; every case's line quotes it.
# Cases ($TB_SLOWDOWN_CASES, aa first):
#   aa             neither VM under vtier
#   observe-damon  vtierd profiles the VM (mode=observe, the host's DAMON):
#                  profiling alone
#   observe-tdp    the same with Telescope over host-kmod's tdp source
#   numa-25        mode=auto, dram_limit 75 % of the memory the VM holds: 25 %
#                  of it on the CXL-like node 1 once placed (measured after
#                  placement settles)
#   numa-50        the same at 50 %
#   burst          a demotion burst: dram_limit drops from all of it to 50 %
#                  as the measurement starts (moved in its first windows)
# Under L1's TCG the NUMA nodes share the same host DRAM, so numa-* measure
# vtier's own costs (profiling, moves, TLB flushes), not a slower medium.
# Prints one line per case:
#   RESULT-SLOWDOWN case=... slowdown_pct=... se_pct=... noise_pct=... tlb_flushes_per_gib=...
#     ratios=R,R,... moved_mib=... kvm_flushes=... agent_cpu_pct=... pinned=yes bad_pages=0
# Fails on a bad page, a placement that never settles, or a missing result;
# the targets (profiling <= 1 %, 25 % off DRAM <= 5 %, noise <= 2 points) are
# reported, not asserted (a benchmark).
W=${TB_SLOWDOWN_WINDOW_MS:-1000}
. /src/tests/testbed/scenarios/lib.sh
MEM=${TB_SLOWDOWN_MEM_MIB:-768}
WL=${TB_SLOWDOWN_WL_MIB:-512}
MEASURE_S=${TB_SLOWDOWN_SECONDS:-20}
PHASE_MS=${TB_SLOWDOWN_PHASE_MS:-2000}
# rounds per case, the roles swapped each round (even: each VM tiered as often)
ROUNDS=${TB_SLOWDOWN_ROUNDS:-6}
CASES=${TB_SLOWDOWN_CASES:-aa observe-damon numa-25 numa-50 burst}
FAIL_VM=tw0

echo 0 > /proc/sys/kernel/numa_balancing
[ -d /sys/kernel/debug/kvm ] || mount -t debugfs debugfs /sys/kernel/debug ||
    tb_fail "cannot mount debugfs"
case " $CASES " in
    *" observe-tdp "*)
        insmod /opt/vtier/vtier_tdp.ko || tb_fail "insmod vtier_tdp.ko"
        [ -c /dev/vtier-tdp ] || tb_fail "no /dev/vtier-tdp after insmod" ;;
esac
mkdir -p /run/vtier && chmod 700 /run/vtier
start_vtierd
vtierd_ready

# pin every thread of process $1 to L1 CPU $2
pin() {
    local t
    for t in /proc/"$1"/task/*; do
        taskset -p "$((1 << $2))" "${t##*/}" > /dev/null || return 1
    done
}
for vm in tw0 tw1; do
    tb_l2_start "$vm" --mem "${MEM}M"
    tb_l2_check_kvm "$vm"
    tb_l2 "$vm" "vtier-workload serve --size ${WL}M > /run/wl.log 2>&1 &"
    tb_l2 "$vm" -t 600 'vtier-workload ctl --wait 600 info' > /dev/null ||
        tb_fail "$vm: the workload did not start"
done
# Both twins share L1's CPU 1, everything else (this shell's children:
# vtierd, vtierctl, the guests' control) stays on CPU 0. Two vCPU threads on
# one CPU get fair shares of the same instants, so what the emulation does to
# that CPU's speed falls on both alike; a twin on each CPU compared two CPUs
# whose speeds drifted apart by up to 2x within a minute (A/A ratios 0.49 and
# 1.41 in one run). And the agent's own CPU is not taken from the guests, as
# on a host with a core to spare for it.
PINNED=no
if command -v taskset > /dev/null && pin $$ 0 && pin "$vtierd_pid" 0 &&
    pin "$(tb_l2_pid tw0)" 1 && pin "$(tb_l2_pid tw1)" 1; then
    PINNED=yes
fi
echo "twins: tw0 QEMU $(tb_l2_pid tw0), tw1 QEMU $(tb_l2_pid tw1), both on L1 CPU 1, vtierd on CPU 0: $PINNED"

other() { [ "$1" = tw0 ] && echo tw1 || echo tw0; }
node0_mib() { # VM HVA: MiB of its guest RAM on node 0 (move_pages status)
    local w
    w=$(vtier-tbnuma where "$(tb_l2_pid "$1")" "$2" $((MEM * MIB))) || fail "where: $w"
    echo $(($(field "$w" node0) / 256))
}
held_mib() { # VM HVA: MiB of its guest RAM present on any node
    local w
    w=$(vtier-tbnuma where "$(tb_l2_pid "$1")" "$2" $((MEM * MIB))) || fail "where: $w"
    echo $(( ($(field "$w" node0) + $(field "$w" node1) + $(field "$w" node2)) / 256 ))
}
# both VMs run zipf phases of $PHASE_MS until $MEASURE_S s have passed;
# writes "RATE_tw0 RATE_tw1" to /tmp/rates: accesses per second of each one's
# phases (no subshell: a failure here fails the scenario)
measure() {
    local vm
    for vm in tw0 tw1; do
        tb_l2 "$vm" "rm -f /run/S.stop; (while [ ! -e /run/S.stop ]; do
            vtier-workload ctl phase dist=zipf zipf_s=1.0 ranges=0-${WL}M \
                duration_ms=$PHASE_MS write_pct=5 || { echo FAILED; exit 1; }; done; echo done) \
            > /run/S.log 2>&1 &"
    done
    sleep "$MEASURE_S"
    for vm in tw0 tw1; do tb_l2 "$vm" 'touch /run/S.stop'; done
    for vm in tw0 tw1; do
        tb_l2 "$vm" -t 120 'while ! grep -q "^done\|^FAILED" /run/S.log; do sleep 0.2; done
            ! grep -q FAILED /run/S.log' || fail "$vm: phases failed: $(tb_l2 "$vm" 'tail -3 /run/S.log')"
    done
    # the phases that ended while both ran: drop each one's last (it ran on
    # alone after the other's stop) and first (its start was not together)
    : > /tmp/rates
    for vm in tw0 tw1; do
        tb_l2 "$vm" 'grep "^ok phase" /run/S.log' > /tmp/phases || fail "$vm: no phase log"
        sed '1d;$d' /tmp/phases |
            awk '{for (i = 1; i <= NF; i++) {split($i, kv, "="); if (kv[1] == "accesses") a += kv[2];
                 if (kv[1] == "ms") m += kv[2]}} END {printf "%.0f ", (m > 0 ? a * 1000 / m : 0)}' >> /tmp/rates
    done
}
ratio() { awk "BEGIN {printf \"%.4f\", ($2 > 0 ? $1 / $2 : 0)}"; }
# "SLOWDOWN SE" of the comma-separated ratios $1, in %: 100 * (1 - their
# geometric mean), and the standard error of their mean, 100 * sd / sqrt(n)
# (L1's busybox awk has no sqrt or log: roots by Newton's method)
slowdown() {
    echo "$1" | tr , '\n' | awk '
        function root(x, k,   r, i, j, q) {
            if (x <= 0) return 0
            r = 1; for (i = 0; i < 200; i++) {q = 1; for (j = 1; j < k; j++) q *= r; r = r - (q * r - x) / (k * q)}
            return r }
        {p = (NR == 1 ? $1 : p * $1); s += $1; ss += $1 * $1; n = NR}
        END {v = (n > 1 ? (ss - s * s / n) / (n - 1) : 0)
             printf "%.2f %.2f", 100 * (1 - root(p, n)), 100 * root(v / n, 2)}'
}

# set vtier up on VM $2 for case $1; sets HVA (for restore)
case_start() {
    local c=$1 t=$2 lim w i n0 prev moved
    HVA=""
    case $c in
        aa) return 0 ;;
        observe-damon) ctl attach "/run/tb/$t.agent.qmp" --name "$t" mode=observe \
            window_ms="$W" profiler=damon-kernel > /dev/null || fail "attach $t" ;;
        observe-tdp) ctl attach "/run/tb/$t.agent.qmp" --name "$t" mode=observe \
            window_ms="$W" profiler=telescope-flex > /dev/null || fail "attach $t" ;;
        numa-25|numa-50|burst)
            # the share of what the VM holds (present pages), not of -m
            ctl attach "/run/tb/$t.agent.qmp" --name "$t" mode=off window_ms="$W" > /dev/null ||
                fail "attach $t"
            HVA=$(ctl status "$t" --get ram.0.hva) || fail "status $t: $HVA"
            HELD=$(held_mib "$t" "$HVA")
            case $c in numa-25) lim=$((HELD * 3 / 4)) ;; *) lim=$((HELD / 2)) ;; esac
            [ "$c" = burst ] && lim=$((HELD + 64))
            echo "$c: $t holds $HELD MiB, $(node0_mib "$t" "$HVA") MiB on node 0; dram_limit=${lim}MiB"
            ctl policy "$t" mode=auto dram_limit="${lim}MiB" > /dev/null || fail "policy $t" ;;
        *) tb_fail "unknown case $c (cases: aa observe-damon observe-tdp numa-25 numa-50 burst)" ;;
    esac
    HVA=$(ctl status "$t" --get ram.0.hva) || fail "status $t: $HVA"
    # the profile's first windows, and for numa-* the placement: until the
    # VM's node-0 use is within 16 MiB of its limit and a window moved < 8 MiB
    prev=$(vget "$t" bytes_moved)
    for i in $(seq 1 120); do
        sleep_window
        [ "$i" -ge 5 ] || continue
        case $c in observe-*|burst) break ;; esac
        moved=$(vget "$t" bytes_moved)
        n0=$(node0_mib "$t" "$HVA")
        [ "$n0" -le $((lim + 16)) ] && [ $((moved - prev)) -lt $((8 * MIB)) ] && break
        prev=$moved
    done
    [ "$i" -lt 120 ] || fail "$c: $t's placement did not settle in 120 windows"
    case $c in numa-*) echo "$c: $t placed after $i windows, $(node0_mib "$t" "$HVA") MiB on node 0" ;; esac
    # burst: the limit drops as the measurement starts
    [ "$c" != burst ] || ctl policy "$t" dram_limit="$((HELD / 2))MiB" > /dev/null ||
        fail "policy $t"
}
# detach VM $2 and put its RAM back on node 0
case_end() {
    [ "$1" = aa ] && return 0
    ctl detach "$2" > /dev/null || fail "detach $2"
    case $1 in
        numa-*|burst)
            # (move_pages leaves a page it cannot isolate at that instant where it is)
            w=$(vtier-tbnuma move "$(tb_l2_pid "$2")" "$HVA" $((MEM * MIB)) 0) ||
                fail "moving $2 back to node 0: $w"
            echo "$1: $2 detached, its RAM moved back to node 0: $w" ;;
    esac
}
cpu_ticks() { awk '{print $14 + $15}' /proc/"$vtierd_pid"/stat; }

NOISE=""
: > /tmp/results
for c in $CASES; do
    tb_step "case $c"
    ratios="" flushes=0 mb=0 ticks=0 secs=0
    for round in $(seq 0 $((ROUNDS - 1))); do
        t=tw$((round % 2))
        u=$(other "$t")
        case_start "$c" "$t"
        f0=0 m0=0
        if [ "$c" != aa ]; then
            f0=$(vget "$t" tlb.kvm_remote_tlb_flushes.total) || f0=0
            m0=$(vget "$t" bytes_moved)
        fi
        k0=$(cpu_ticks) s0=$(ms_now)
        measure
        set -- $(cat /tmp/rates)
        k1=$(cpu_ticks) s1=$(ms_now)
        [ -n "$1" ] && [ -n "$2" ] && [ "$1" -gt 0 ] && [ "$2" -gt 0 ] ||
            fail "$c: no rates ($*)"
        # tw0's rate is $1, tw1's $2: the tiered one over the other
        if [ "$t" = tw0 ]; then rt=$1 ru=$2; else rt=$2 ru=$1; fi
        rr=$(ratio "$rt" "$ru")
        ratios="$ratios${ratios:+,}$rr"
        if [ "$c" != aa ]; then
            f1=$(vget "$t" tlb.kvm_remote_tlb_flushes.total) || f1=$f0
            m1=$(vget "$t" bytes_moved)
            flushes=$((flushes + f1 - f0)) mb=$((mb + m1 - m0))
        fi
        ticks=$((ticks + k1 - k0)) secs=$((secs + s1 - s0))
        echo "$c, round $round: $t under vtier, $u not: rates $rt and $ru accesses/s, ratio $rr"
        case_end "$c" "$t"
    done
    set -- $(slowdown "$ratios")
    slow=$1 se=$2
    if [ "$c" = aa ]; then
        # neither tiered: the estimator's own spread, as a magnitude
        NOISE=$(echo "$slow" | tr -d -)
    fi
    # flushes per GiB moved (0: nothing moved); the agent's CPU in % of one L1 CPU
    fpg=$(awk "BEGIN {printf \"%.0f\", ($mb > 0 ? $flushes / ($mb / 1073741824) : 0)}")
    cpu=$(awk "BEGIN {printf \"%.2f\", ($secs > 0 ? 100 * $ticks * 10 / $secs : 0)}")
    echo "slowdown: case=$c slowdown_pct=$slow se_pct=$se noise_pct=${NOISE:-na}" \
        "tlb_flushes_per_gib=$fpg ratios=$ratios" \
        "moved_mib=$((mb / MIB)) kvm_flushes=$flushes agent_cpu_pct=$cpu pinned=$PINNED" | tee -a /tmp/results
done

tb_step "every page of both VMs verified"
bad=0
for vm in tw0 tw1; do
    v=$(tb_l2 "$vm" -t 900 'vtier-workload ctl verify') || fail "$vm: verify: $v"
    echo "$vm: $v"
    b=$(field "$v" bad)
    [ -n "$b" ] || fail "$vm: no bad= in: $v"
    bad=$((bad + b))
done
[ "$bad" = 0 ] || fail "$bad bad pages"
echo "bad_pages=$bad"
tb_step "results"
sed 's/^slowdown: /RESULT-SLOWDOWN /; s/$/ bad_pages=0/' /tmp/results
tb_l2_stop tw0
tb_l2_stop tw1
