# bench-slowdown: what vtier costs a guest, against an untiered twin in the
# same seconds (issue 33 item 1; make bench-slowdown, docs/bench-slowdown.md).
# Two identical L2 VMs (tw0, tw1: 1 vCPU, $MEM MiB on L1's DRAM node), both
# pinned to one L1 vCPU (twins_start says why), run the same skewed workload
# (zipf phases over $WL MiB of corpus pages, 5 % writes) at the same time;
# one is under vtier, the other not. The roles swap every round, so that
# whatever favours one VM cancels: $ROUNDS rounds, tw0 tiered in the even
# ones, tw1 in the odd ones, and
#   slowdown = 1 - geometric mean over the rounds of (tiered rate / untiered rate)
# (rates: accesses per second between two instants $MEASURE_S s apart, both
# twins' counts read at each instant from L1: measure, below),
# with the standard error of the mean ratio. The A/A case (neither tiered),
# computed the same way, is the method's noise floor; every line quotes it.
# Two groups, each on its own twins, each with its A/A case first:
#   stock ($TB_SLOWDOWN_CASES): stock QEMU, the tiered twin attached over QMP
#     aa             neither VM under vtier
#     observe-damon  vtierd profiles the VM (mode=observe, the host's DAMON):
#                    profiling alone
#     observe-tdp    the same with Telescope over host-kmod's tdp source
#     observe-tdp-flush  observe-tdp with tdp_flush=window (the module flushes
#                    the VM's TLBs once a window after clearing accessed bits)
#     numa-25        mode=auto, dram_limit 75 % of the memory the VM holds: 25 %
#                    of it on the CXL-like node 1 once placed (measured after
#                    placement settles)
#     numa-25-hold   numa-25 with move_hold=10 (a chunk moved on or off DRAM
#                    stays 10 windows)
#     numa-25-holdN  numa-25 with move_hold=N (numa-25-hold4: 4 windows)
#     numa-50        the same at 50 %
#     burst          a demotion burst: dram_limit drops from all of it to 50 %
#                    as the measurement starts (moved in its first windows)
#   hand-off ($TB_SLOWDOWN_HANDOFF_CASES): the patched QEMU, both twins' RAM
#     handed to vtierd (adopted in mode=off); the phases run over the first
#     three quarters of the region, the rest is cold
#     aa             (printed as aa-handoff) neither in a mode other than off
#     ctier-25       mode=auto, tiers=dram,lz4, dram_limit 75 % of what the VM
#                    holds: the rest compressed, faulted back when touched
#     ctier-50       the same at 50 %
#     tco-0, tco-05  mode=auto, placement=tco at tco_alpha 0 (the cheapest
#                    placement) and 0.5: TierScape's model places the VM over
#                    every tier of the host (vtierd-tco's slowdown, measured
#                    here against the twin instead of phases minutes apart);
#                    measured once two windows in a row had nothing misplaced,
#                    queued or moved (at most 40 windows, then measured anyway)
# Under L1's TCG the NUMA nodes share the same host DRAM, so numa-* measure
# vtier's own costs (profiling, moves, TLB flushes), not a slower medium.
# Prints one line per case:
#   RESULT-SLOWDOWN case=... slowdown_pct=... se_pct=... noise_pct=... tlb_flushes_per_gib=...
#     ratios=R,R,... moved_mib=... kvm_flushes=... store_faults_per_s=... stored_mib=...
#     agent_cpu_pct=...
#     pinned=yes kvm_flushes_per_window=... tco_saving_pct=...
#     l1_swap_pages=... l1_nodes_free_mib=A/B/C,... promotions=... demotions=...
#     max_moves_per_chunk=... thp_mib=T/U,... agent_window_us=P/R/D/M,... bad_pages=0
# (l1_swap_pages: L1's swap-ins and -outs over the measured seconds of all
# rounds; l1_nodes_free_mib: each node's free MiB as each round started;
# promotions, demotions: the tiered VM's chunk orders carried out over the
# measured seconds; max_moves_per_chunk: the most any one chunk of it moved,
# since it was attached, at the end of the last round; thp_mib: per round, the
# tiered and the untiered twin's MiB on huge pages in L1 as it ended;
# agent_window_us: per round, vtierd's CPU for the tiered VM in its last window
# as the round ended, us: profiler/residency/policy/mover)
# Fails on a bad page, a placement that never settles, or a missing result;
# the targets (profiling <= 1 %, 25 % off DRAM <= 5 %, noise <= 2 points) are
# reported, not asserted (a benchmark); slowdown-check.sh, its short variant in
# make check, asserts them plus a slack (SLOWDOWN_ASSERT, at the end).
W=${TB_SLOWDOWN_WINDOW_MS:-1000}
. /src/tests/testbed/scenarios/lib.sh
MEM=${TB_SLOWDOWN_MEM_MIB:-768}
WL=${TB_SLOWDOWN_WL_MIB:-512}
MEASURE_S=${TB_SLOWDOWN_SECONDS:-20}
PHASE_MS=${TB_SLOWDOWN_PHASE_MS:-2000}
# rounds per case, the roles swapped each round (even: each VM tiered as often)
ROUNDS=${TB_SLOWDOWN_ROUNDS:-6}
# the stock group (stock QEMU, attached over QMP) and the hand-off group
# (the patched QEMU, RAM handed to vtierd; the untiered twin in mode=off)
CASES=${TB_SLOWDOWN_CASES-aa observe-damon numa-25 numa-25-hold numa-50 burst}
HANDOFF_CASES=${TB_SLOWDOWN_HANDOFF_CASES-aa ctier-25 ctier-50 tco-0 tco-05}
FAIL_VM=tw0

echo 0 > /proc/sys/kernel/numa_balancing
[ -d /sys/kernel/debug/kvm ] || mount -t debugfs debugfs /sys/kernel/debug ||
    tb_fail "cannot mount debugfs"
case " $CASES " in
    *" observe-tdp "*|*" observe-tdp-flush "*)
        insmod /opt/vtier/vtier_tdp.ko || tb_fail "insmod vtier_tdp.ko"
        [ -c /dev/vtier-tdp ] || tb_fail "no /dev/vtier-tdp after insmod" ;;
esac
mkdir -p /run/vtier && chmod 700 /run/vtier
cat > /run/vtier/vtierd.conf <<EOF
[policy]
mode = off
window_ms = $W

[ctier.lz4]
codec = lz4
pool = zsmalloc
medium = node:1
EOF
start_vtierd --agent-socket "$AGENT" --config /run/vtier/vtierd.conf
vtierd_ready

# pin every thread of process $1 to L1 CPU $2
pin() {
    local t
    for t in /proc/"$1"/task/*; do
        taskset -p "$((1 << $2))" "${t##*/}" > /dev/null || return 1
    done
}
# boot the twins: $1 stock (stock QEMU, anonymous RAM) or handoff (the
# patched QEMU, memfd RAM handed to vtierd, adopted in mode=off); the
# workload's pages from the corpus (text and binaries: compressible, as a
# compressed tier needs), the same in both
twins_start() {
    local vm n=0
    for vm in tw0 tw1; do
        n=$((n + 1))
        if [ "$1" = handoff ]; then
            tb_l2_start "$vm" --mem "${MEM}M" --memdev memfd --qemu "$QEMU" \
                --backend-opts ",tier-agent=$AGENT" -- -uuid "5a1e0000-1111-4222-8333-44445555000$n"
        else
            tb_l2_start "$vm" --mem "${MEM}M"
        fi
        tb_l2_check_kvm "$vm"
        tb_l2 "$vm" "vtier-workload serve --size ${WL}M --mix $CORPUS > /run/wl.log 2>&1 &"
        tb_l2 "$vm" -t 900 'vtier-workload ctl --wait 850 info' > /dev/null ||
            tb_fail "$vm: the workload did not start"
        if [ "$1" = handoff ]; then
            wait_adopted "$vm" > /dev/null || fail "$vm was not adopted by its hand-off within 20 s"
        fi
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
    echo "twins ($1): tw0 QEMU $(tb_l2_pid tw0), tw1 QEMU $(tb_l2_pid tw1), both on L1 CPU 1," \
        "vtierd on CPU 0: $PINNED"
    # what backs each twin's RAM in huge pages (a difference is an asymmetry
    # the swapped roles must cancel)
    for vm in tw0 tw1; do
        echo "$vm: $(grep -h 'AnonHugePages\|ShmemPmdMapped\|FilePmdMapped' \
            "/proc/$(tb_l2_pid "$vm")/smaps_rollup" | tr -s ' \n' ' ')"
    done
}
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
# each twin's progress page as vtier-tbprogress reads it: "PID:HVA:COOKIE"
# (the guest RAM's address in QEMU plus the page's guest-physical address)
progress_spec() {
    local pid p base gpa cookie
    pid=$(tb_l2_pid "$1")
    p=$(tb_l2 "$1" 'vtier-workload ctl progress') || fail "$1: progress: $p"
    gpa=$(echo "$p" | sed -n 's/.* gpa=\(0x[0-9a-f]*\) .*/\1/p')
    cookie=$(echo "$p" | sed -n 's/.* cookie=\(0x[0-9a-f]*\) .*/\1/p')
    base=$(vtier-tbprogress ram "$pid" $((MEM * MIB))) || fail "$1: guest RAM of QEMU $pid: $base"
    [ -n "$gpa" ] && [ -n "$cookie" ] || fail "$1: progress: $p"
    echo "$pid:$((base + gpa)):$cookie"
}
# "PROCESS VCPU": CPU ticks of VM $1's QEMU and of its vCPU thread ("CPU 0/KVM")
qemu_ticks() {
    local p t v=0
    p=/proc/$(tb_l2_pid "$1")
    for t in "$p"/task/*; do
        case $(cat "$t/comm" 2> /dev/null) in "CPU "*) v=$(awk '{print $14 + $15}' "$t/stat") ;; esac
    done
    echo "$(awk '{print $14 + $15}' "$p/stat") $v"
}
# both VMs run zipf phases of $PHASE_MS back to back; their access counts are
# read from L1 at one instant once both run, and again $MEASURE_S s later
# (vtier-tbprogress: the two reads of a pair are microseconds apart); writes
# "RATE_tw0 RATE_tw1" to /tmp/rates: each one's accesses per second between
# the two instants. (Rates from each guest's own phase log covered spans a
# guest command's latency apart, 0.2-1 s under TCG, while the host's speed
# swung 2-4x within seconds: A/A rounds off by up to 14 %.)
measure() {
    local vm spec s0 s1 c0 c1
    spec="$(progress_spec tw0) $(progress_spec tw1)"
    for vm in tw0 tw1; do
        tb_l2 "$vm" "rm -f /run/S.stop; (while [ ! -e /run/S.stop ]; do
            vtier-workload ctl phase dist=zipf zipf_s=1.0 ranges=0-${RANGE}M \
                duration_ms=$PHASE_MS write_pct=5 || { echo FAILED; exit 1; }; done; echo done) \
            > /run/S.log 2>&1 &"
    done
    # both in their first phase (a phase's set-up, the zipf table, is part of the work)
    sleep 1
    # shellcheck disable=SC2086
    s0=$(vtier-tbprogress read $spec) || fail "reading the twins' progress: $s0"
    c0="$(qemu_ticks tw0) $(qemu_ticks tw1)"
    sleep "$MEASURE_S"
    # shellcheck disable=SC2086
    s1=$(vtier-tbprogress read $spec) || fail "reading the twins' progress: $s1"
    c1="$(qemu_ticks tw0) $(qemu_ticks tw1)"
    for vm in tw0 tw1; do tb_l2 "$vm" 'touch /run/S.stop'; done
    for vm in tw0 tw1; do
        tb_l2 "$vm" -t 120 'while ! grep -q "^done\|^FAILED" /run/S.log; do sleep 0.2; done
            ! grep -q FAILED /run/S.log' || fail "$vm: phases failed: $(tb_l2 "$vm" 'tail -3 /run/S.log')"
    done
    # the CPU each twin's QEMU and its vCPU thread got meanwhile (L1's clock
    # ticks, 10 ms): a round's ratio beside the twins' shares of their CPU
    # shellcheck disable=SC2086
    set -- $c0 $c1
    echo "progress: $s0 -> $s1; QEMU CPU ticks tw0 $(($5 - $1)) (vCPU $(($6 - $2)))," \
        "tw1 $(($7 - $3)) (vCPU $(($8 - $4)))"
    # both counts moved on (a twin whose count stood still did not run)
    echo "$s0 $s1" | awk '{split($1, t0, "="); split($3, a, "[=,]"); split($4, u1, "="); split($6, b, "[=,]")
        ms = (u1[2] - t0[2]) / 1e6
        if (ms <= 0 || b[2] <= a[2] || b[3] <= a[3]) exit 1
        printf "%.0f %.0f ", (b[2] - a[2]) * 1000 / ms, (b[3] - a[3]) * 1000 / ms}' > /tmp/rates ||
        fail "a twin did not progress between the reads ($s0 -> $s1)"
}
ratio() { awk "BEGIN {printf \"%.4f\", ($2 > 0 ? $1 / $2 : 0)}"; }
# "SLOWDOWN SE" of the comma-separated ratios $1, in %: 100 * (1 - their
# geometric mean), and the standard error of that mean from the pairs of
# rounds (tw0 tiered, then tw1): each pair's geometric mean cancels what
# favours one VM, which alternates round to round and is not noise;
# 100 * sd(pairs) / sqrt(pairs). (L1's busybox awk has no sqrt or log: roots
# by Newton's method.)
slowdown() {
    echo "$1" | tr , '\n' | awk '
        function root(x, k,   r, i, j, q) {
            if (x <= 0) return 0
            r = 1; for (i = 0; i < 200; i++) {q = 1; for (j = 1; j < k; j++) q *= r; r = r - (q * r - x) / (k * q)}
            return r }
        {r[NR] = $1; p = (NR == 1 ? $1 : p * $1); n = NR}
        END {np = int(n / 2)
             for (k = 1; k <= np; k++) {g = root(r[2 * k - 1] * r[2 * k], 2); s += g; ss += g * g}
             v = (np > 1 ? (ss - s * s / np) / (np - 1) : 0)
             printf "%.2f %.2f", 100 * (1 - root(p, n)), 100 * root((v > 0 ? v : 0) / (np > 0 ? np : 1), 2)}'
}

# set vtier up on VM $2 for case $1; sets HVA (for restore)
case_start() {
    local c=$1 t=$2 lim w i n0 prev moved st pst="" calm=0 a
    HVA=""
    case $c in
        aa) return 0 ;;
        observe-damon) ctl attach "/run/tb/$t.agent.qmp" --name "$t" mode=observe \
            window_ms="$W" profiler=damon-kernel > /dev/null || fail "attach $t" ;;
        observe-tdp) ctl attach "/run/tb/$t.agent.qmp" --name "$t" mode=observe \
            window_ms="$W" profiler=telescope-flex > /dev/null || fail "attach $t" ;;
        observe-tdp-flush) ctl attach "/run/tb/$t.agent.qmp" --name "$t" mode=observe \
            window_ms="$W" profiler=telescope-flex tdp_flush=window > /dev/null ||
            fail "attach $t" ;;
        numa-25|numa-25-hold|numa-25-hold[0-9]*|numa-50|burst)
            # the share of what the VM holds (present pages), not of -m
            ctl attach "/run/tb/$t.agent.qmp" --name "$t" mode=off window_ms="$W" > /dev/null ||
                fail "attach $t"
            HVA=$(ctl status "$t" --get ram.0.hva) || fail "status $t: $HVA"
            HELD=$(held_mib "$t" "$HVA")
            case $c in numa-25*) lim=$((HELD * 3 / 4)) ;; *) lim=$((HELD / 2)) ;; esac
            [ "$c" = burst ] && lim=$((HELD + 64))
            hold=0
            case $c in
                numa-25-hold) hold=10 ;;
                numa-25-hold[0-9]*) hold=${c#numa-25-hold}
                    case $hold in *[!0-9]*) tb_fail "case $c: the hold is not a number of windows" ;; esac ;;
            esac
            echo "$c: $t holds $HELD MiB, $(node0_mib "$t" "$HVA") MiB on node 0; dram_limit=${lim}MiB"
            # the NUMA tiers only (the lz4 tier is the hand-off group's)
            # the waterfall's aging off: dram_limit alone decides what leaves
            # DRAM (with it, chunks the zipf tail left alone for a window went
            # down too: 62-156 MiB of 475 stayed on node 0 at ctier_age_windows=1)
            ctl policy "$t" mode=auto tiers=dram,tier1,tier2 dram_limit="${lim}MiB" \
                ctier_age_windows=0 move_hold=$hold > /dev/null || fail "policy $t" ;;
        ctier-25|ctier-50)
            # hand-off group: the VM is adopted in mode=off; DRAM and lz4 only
            HVA=$(ctl status "$t" --get gpa_map.0.hva) || fail "status $t: $HVA"
            HELD=$(held_mib "$t" "$HVA")
            case $c in ctier-25) lim=$((HELD * 3 / 4)) ;; *) lim=$((HELD / 2)) ;; esac
            echo "$c: $t holds $HELD MiB; dram_limit=${lim}MiB, tiers=dram,lz4"
            ctl policy "$t" mode=auto tiers=dram,lz4 dram_limit="${lim}MiB" \
                ctier_age_windows=1 > /dev/null || fail "policy $t" ;;
        tco-0|tco-05)
            HVA=$(ctl status "$t" --get gpa_map.0.hva) || fail "status $t: $HVA"
            a=0
            [ "$c" = tco-05 ] && a=0.5
            echo "$c: $t holds $(held_mib "$t" "$HVA") MiB; placement=tco tco_alpha=$a"
            ctl policy "$t" mode=auto placement=tco tco_alpha="$a" > /dev/null ||
                fail "policy $t" ;;
        *) tb_fail "unknown case $c (cases: aa observe-damon observe-tdp observe-tdp-flush numa-25 numa-25-hold numa-25-holdN numa-50 burst;" \
            "hand-off group: aa ctier-25 ctier-50 tco-0 tco-05)" ;;
    esac
    [ -n "$HVA" ] || HVA=$(ctl status "$t" --get ram.0.hva) || fail "status $t: $HVA"
    # the profile's first windows, and for numa-* the placement: until the
    # VM's node-0 use is within 16 MiB of its limit and a window moved < 8 MiB
    prev=$(vget "$t" bytes_moved)
    for i in $(seq 1 120); do
        sleep_window
        [ "$i" -ge 5 ] || continue
        case $c in observe-*|burst) break ;; esac
        # tco-*: the model's placement done (as vtierd-tco's placement_settle)
        if [ "${c#tco-}" != "$c" ]; then
            st=$(vget "$t" tco_misplaced_bytes backends.0.backlog last_window_bytes) ||
                fail "stats $t: $st"
            if [ "$(numsum "$st")" = 0 ]; then calm=$((calm + 1)); else calm=0; fi
            [ "$calm" -ge 2 ] && break
            [ "$i" -lt 40 ] && continue
            echo "$c: $t not settled after 40 windows ($st); measuring anyway"
            break
        fi
        moved=$(vget "$t" bytes_moved)
        n0=$(node0_mib "$t" "$HVA")
        # ctier-*: stored pages leave the memfd (on no node); what does not
        # compress stays (E2BIG): placed when node-0 use is within 32 MiB of
        # the limit or the tier stopped growing (less than 1 MiB a window, 3
        # windows in a row: one quiet window stopped a run at 47 of ~110 MiB)
        if [ "${c#ctier-}" != "$c" ]; then
            st=$(vget "$t" backends.0.ctiers.0.pages) || fail "stats $t: $st"
            [ "$n0" -le $((lim + 32)) ] && break
            if [ -n "$pst" ] && [ $((st - pst)) -lt 256 ]; then
                calm=$((calm + 1))
                [ "$calm" -ge 3 ] && break
            else
                calm=0
            fi
            pst=$st
            continue
        fi
        [ "$n0" -le $((lim + 16)) ] && [ $((moved - prev)) -lt $((8 * MIB)) ] && break
        prev=$moved
    done
    [ "$i" -lt 120 ] || fail "$c: $t's placement did not settle in 120 windows"
    case $c in numa-*|ctier-*|tco-*) echo "$c: $t placed after $i windows, $(node0_mib "$t" "$HVA") MiB on node 0" ;; esac
    # burst: the limit drops as the measurement starts
    [ "$c" != burst ] || ctl policy "$t" dram_limit="$((HELD / 2))MiB" > /dev/null ||
        fail "policy $t"
}
# undo case $1 on VM $2: detach it (stock) and put its RAM back on node 0;
# hand-off: mode=off and every stored page faulted back by a verify
case_end() {
    local v
    [ "$1" = aa ] && return 0
    case $1 in
        ctier-*|tco-*)
            ctl policy "$2" mode=off tiers=all dram_limit=none ctier_age_windows=3 \
                placement=waterfall > /dev/null || fail "policy $2"
            v=$(tb_l2 "$2" -t 900 'vtier-workload ctl verify') || fail "$2: verify: $v"
            [ "$(field "$v" bad)" = 0 ] || fail "$2: bad pages after $1: $v"
            echo "$1: $2 back in mode=off, every page faulted back and verified: $v"
            if [ "${1#tco-}" != "$1" ]; then
                # what the model put on nodes 1-2 back on node 0 (a page vtierd
                # has mapped too stays: MPOL_MF_MOVE moves only pages QEMU
                # alone maps; under TCG the nodes are the same host DRAM)
                w=$(vtier-tbnuma move "$(tb_l2_pid "$2")" "$HVA" $((MEM * MIB)) 0) ||
                    fail "moving $2 back to node 0: $w"
                echo "$1: $2's RAM moved back to node 0: $w, $(node0_mib "$2" "$HVA") MiB there"
            fi
            return 0 ;;
    esac
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
# L1's swap-ins + swap-outs so far, pages (/proc/vmstat): a guest's shmem
# paged out by L1's reclaim faults in behind vtierd's back
l1_swap() { awk '$1 == "pswpin" || $1 == "pswpout" {n += $2} END {print n + 0}' /proc/vmstat; }
# MiB of a VM's QEMU mapped by huge pages in L1 (anonymous, shmem or file PMD
# mappings): a twin whose RAM was split into 4 KiB pages by moves pays longer
# nested page walks than one still on 2 MiB pages
thp_mib() {
    local f
    f=/proc/$(tb_l2_pid "$1")/smaps_rollup
    [ -r "$f" ] || { echo na; return; }
    awk '/^(AnonHugePages|ShmemPmdMapped|FilePmdMapped):/ {k += $2} END {print int(k / 1024)}' "$f"
}
# vtierd's CPU for VM $1 in its last window by stage, us (the stats' *_cpu_ns
# are the last window's): profiler/residency/policy/mover
stage_us() {
    local k out=""
    for k in profiler_cpu_ns residency_cpu_ns policy_cpu_ns mover_cpu_ns; do
        out="$out${out:+/}$(($(vget "$1" "$k") / 1000))"
    done
    echo "$out"
}
# each NUMA node's free MiB, "A/B/C"
nodes_free() {
    local f out=""
    for f in /sys/devices/system/node/node*/meminfo; do
        out="$out${out:+/}$(awk '/MemFree:/ {print int($4 / 1024)}' "$f")"
    done
    echo "$out"
}

# run the cases $2 of group $1 (stock, handoff) on the twins
run_cases() {
    local group=$1 c name round t u f0 f1 m0 m1 q0 q1 k0 k1 s0 s1 rt ru rr ratios flushes mb faults
    local ticks secs slow se fpg cpu fpw sv savings tsave w0 w1 swaps free
    NOISE=""
    for c in $2; do
        name=$c
        [ "$group" = handoff ] && [ "$c" = aa ] && name=aa-handoff
        tb_step "case $name"
        ratios="" flushes=0 mb=0 faults=0 ticks=0 secs=0 stored=0 savings="" swaps=0 free=""
        ups=0 downs=0 most=0 thp="" stages=""
        for round in $(seq 0 $((ROUNDS - 1))); do
            t=tw$((round % 2))
            u=$(other "$t")
            case_start "$c" "$t"
            f0=0 m0=0 q0=0 p0=0 d0=0
            if [ "$c" != aa ]; then
                f0=$(vget "$t" tlb.kvm_remote_tlb_flushes.total) || f0=0
                m0=$(vget "$t" bytes_moved)
                p0=$(vget "$t" promotions) d0=$(vget "$t" demotions)
                if [ "$group" = handoff ]; then
                    q0=$(vget "$t" backends.0.faults_stored)
                    stored=$((stored + $(vget "$t" backends.0.ctiers.0.pages)))
                fi
            fi
            free="$free${free:+,}$(nodes_free)"
            k0=$(cpu_ticks) s0=$(ms_now) w0=$(l1_swap)
            measure
            set -- $(cat /tmp/rates)
            k1=$(cpu_ticks) s1=$(ms_now) w1=$(l1_swap)
            swaps=$((swaps + w1 - w0))
            [ -n "$1" ] && [ -n "$2" ] && [ "$1" -gt 0 ] && [ "$2" -gt 0 ] ||
                fail "$c: no rates ($*)"
            # tw0's rate is $1, tw1's $2: the tiered one over the other
            if [ "$t" = tw0 ]; then rt=$1 ru=$2; else rt=$2 ru=$1; fi
            rr=$(ratio "$rt" "$ru")
            ratios="$ratios${ratios:+,}$rr"
            if [ "${c#tco-}" != "$c" ]; then
                sv=$(cget report "$t" saving_pct) || fail "vtierctl report $t: $sv"
                savings="$savings${savings:+,}$sv"
            fi
            if [ "$c" != aa ]; then
                f1=$(vget "$t" tlb.kvm_remote_tlb_flushes.total) || f1=$f0
                m1=$(vget "$t" bytes_moved)
                ups=$((ups + $(vget "$t" promotions) - p0))
                downs=$((downs + $(vget "$t" demotions) - d0))
                most=$(vget "$t" max_moves_per_chunk)
                stages="$stages${stages:+,}$(stage_us "$t")"
                thp="$thp${thp:+,}$(thp_mib "$t")/$(thp_mib "$u")"
                q1=$q0
                [ "$group" = stock ] || q1=$(vget "$t" backends.0.faults_stored)
                flushes=$((flushes + f1 - f0)) mb=$((mb + m1 - m0)) faults=$((faults + q1 - q0))
            fi
            ticks=$((ticks + k1 - k0)) secs=$((secs + s1 - s0))
            echo "$name, round $round: $t under vtier, $u not: rates $rt and $ru accesses/s, ratio $rr"
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
        # the TCO report's saving against all-DRAM, mean over the rounds (tco-*)
        tsave=na
        [ -z "$savings" ] || tsave=$(echo "$savings" | tr , '\n' |
            awk '{s += $1; n++} END {printf "%.1f", s / n}')
        # KVM's remote TLB flushes of the tiered VM per window of the measured seconds
        fpw=$(awk "BEGIN {printf \"%.2f\", ($secs > 0 ? $flushes * $W / $secs : 0)}")
        echo "slowdown: case=$name slowdown_pct=$slow se_pct=$se noise_pct=${NOISE:-na}" \
            "tlb_flushes_per_gib=$fpg ratios=$ratios moved_mib=$((mb / MIB)) kvm_flushes=$flushes" \
            "store_faults_per_s=$((faults * 1000 / (secs > 0 ? secs : 1)))" \
            "stored_mib=$((stored / 256 / ROUNDS)) agent_cpu_pct=$cpu" \
            "pinned=$PINNED kvm_flushes_per_window=$fpw tco_saving_pct=$tsave" \
            "l1_swap_pages=$swaps l1_nodes_free_mib=$free promotions=$ups demotions=$downs" \
            "max_moves_per_chunk=$most thp_mib=${thp:-na} agent_window_us=${stages:-na}" |
            tee -a /tmp/results
    done
}

# every page of both twins (checksums), then the twins stopped
twins_verify_stop() {
    local vm v b
    tb_step "every page of both VMs verified"
    for vm in tw0 tw1; do
        v=$(tb_l2 "$vm" -t 900 'vtier-workload ctl verify') || fail "$vm: verify: $v"
        echo "$vm: $v"
        b=$(field "$v" bad)
        [ "$b" = 0 ] || fail "$vm: bad pages (or no count): $v"
    done
    tb_l2_stop tw0
    tb_l2_stop tw1
}

: > /tmp/results
if [ -n "$CASES" ]; then
    twins_start stock
    # the whole region in use: a warm tail as long as the hot head
    RANGE=$WL
    run_cases stock "$CASES"
    twins_verify_stop
fi
if [ -n "$HANDOFF_CASES" ]; then
    [ -x "$QEMU" ] || tb_fail "$QEMU missing (tests/vtierd/run-scenario copies the patched QEMU in)"
    TB_L2_BOOT_TIMEOUT=$((TB_L2_BOOT_TIMEOUT * 3))
    twins_start handoff
    # a quarter of the region never touched while measuring: cold, as what a
    # compressed tier holds is (over the whole region, zipf's tail touched
    # every chunk within a few windows and each fault brought it back: the
    # placement demoted the same chunks every window)
    RANGE=$((WL * 3 / 4))
    run_cases handoff "$HANDOFF_CASES"
    twins_verify_stop
fi
tb_step "results"
sed 's/^slowdown: /RESULT-SLOWDOWN /; s/$/ bad_pages=0/' /tmp/results

# slowdown-check.sh (make check): the targets plus the short run's slack
if [ "${SLOWDOWN_ASSERT:-}" = yes ]; then
    tb_step "bounds (targets plus $SLACK points)"
    case_pct() { sed -n "s/^slowdown: case=$1 slowdown_pct=\([-0-9.]*\) .*/\1/p" /tmp/results; }
    n=$(case_pct aa) o=$(case_pct observe-damon) h=$(case_pct numa-25-hold)
    [ -n "$n" ] && [ -n "$o" ] && [ -n "$h" ] ||
        fail "a case without its result (aa '$n', observe-damon '$o', numa-25-hold '$h')"
    echo "RESULT-SLOWDOWN-CHECK noise_pct=$n observe_pct=$o numa25_pct=$h slack_pct=$SLACK bad_pages=0"
    awk "BEGIN {exit !($n <= $SLACK && $n >= -$SLACK)}" ||
        fail "A/A slowdown $n % outside +-$SLACK points: the method's noise is over its bound"
    awk "BEGIN {exit !($o <= 1 + $SLACK)}" ||
        fail "profiling alone (observe-damon) costs $o %, over its target 1 % plus $SLACK points"
    awk "BEGIN {exit !($h <= 5 + $SLACK)}" ||
        fail "25 % off DRAM (numa-25-hold) costs $h %, over its target 5 % plus $SLACK points"
fi
