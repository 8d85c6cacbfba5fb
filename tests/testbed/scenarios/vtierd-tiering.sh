# vtierd-tiering: vtierd attaches to a 1 GiB L2 VM whose RAM starts spread over
# L1's three nodes (DRAM, CXL-like, PMEM-like), profiles it with the host
# kernel's DAMON (damon-kernel: no host-kmod here) and moves its hot set to the
# DRAM node under a DRAM limit. Placement is checked with vtier-tbnuma
# (move_pages status queries, no code shared with vtierd), every window.
#   1. mode=off attaches without profiling; mode=observe moves nothing
#   2. hot set A (64 MiB), dram_limit=256MiB: >= 90 % of A on node 0 and the
#      VM's node-0 use <= 256 MiB within 20 windows
#   2b. dram_limit lowered to BASE + 80 MiB while A is hot: node-0 use comes
#      down to it and A stays (>= 90 %) on node 0. BASE is the idle VM's own
#      hot memory as vtierd sees it (part 1): with THP-backed guest RAM (L1's
#      THP at Debian's default, always) the accessed bits are per 2 MiB and the
#      guest kernel's scattered hot pages fill tens of MiB of 2 MiB frames
#   3. phase change to hot set B (A and B cannot both stay under BASE + 80 MiB):
#      B >= 90 % on node 0, A <= 50 %, within 20 windows; no 2 MiB chunk of A
#      or B changes node more than once meanwhile (no ping-pong; counted from
#      the end of the window that was running when B started)
#   4. mode=off detaches profiling (no kdamond left)
#   5. bad input: unknown VM, malformed policy, a socket that is not QEMU, a
#      second vtierd on the same socket, a VM killed while attached: each a
#      clear error, vtierd keeps serving vm0
#   6. verify: 0 bad pages in the guest
# Window length: VTIERD_WINDOW_MS (default 2000). vtierd-tdp.sh runs the same
# with host-kmod loaded (Telescope over the tdp source).
W=${VTIERD_WINDOW_MS:-2000}
. /src/tests/testbed/scenarios/lib.sh
# windows promotions demotions move_fail_busy orders_failed of vm0, one line
counters() { echo $(vget vm0 windows promotions demotions move_fail_busy orders_failed); }
# A hot set that stays hot until phase_stop: back-to-back phases of two windows
# in the guest. (One long phase would end on the clock; under load the checks
# of a part can outlast it, and a hot set that went cold is demoted rightly.)
phase_start() { # NAME RANGES
    tb_l2 vm0 "rm -f /run/$1.stop; (while [ ! -e /run/$1.stop ]; do
        vtier-workload ctl phase dist=uniform ranges=$2 duration_ms=$((W * 2)) write_pct=5 ||
            { echo FAILED; exit 1; }; done; echo done) > /run/$1.log 2>&1 &"
}
phase_running() { # NAME
    tb_l2 vm0 "! grep -q '^done\|^FAILED' /run/$1.log"
}
phase_stop() { # NAME: stop, wait, and fail unless every phase passed
    out=$(tb_l2 vm0 -t 300 "touch /run/$1.stop
        while ! grep -q '^done\|^FAILED' /run/$1.log; do sleep 0.2; done
        echo \"\$(grep -c '^ok phase' /run/$1.log) phases\"; ! grep -q FAILED /run/$1.log") ||
        fail "phase $1 failed: $out $(tb_l2 vm0 "tail -3 /run/$1.log")"
    echo "phase $1: $out"
}
# on failure: the agent's view and the kernel's DAMON state, then fail
# (lib.sh's fail, with DAMON's state)
fail() {
    ctl stats vm0 2>&1 || true
    k=/sys/kernel/mm/damon/admin/kdamonds
    echo "nr_kdamonds=$(cat $k/nr_kdamonds 2>/dev/null)"
    for d in $k/[0-9]*; do
        [ -d "$d" ] || continue
        c=$d/contexts/0
        echo "$d: state=$(cat $d/state) ops=$(cat $c/operations)" \
            "pid=$(cat $c/targets/0/pid_target) tried=$(ls $c/schemes/0/tried_regions 2>/dev/null | wc -l)"
        for r in $(ls $c/schemes/0/tried_regions 2>/dev/null | grep '^[0-9]' | head -8); do
            echo "  region $r: $(cat $c/schemes/0/tried_regions/$r/start)-$(cat $c/schemes/0/tried_regions/$r/end)" \
                "acc=$(cat $c/schemes/0/tried_regions/$r/nr_accesses) age=$(cat $c/schemes/0/tried_regions/$r/age)"
        done
    done
    tail -20 "$TB_OUT/vtierd.log"
    tb_fail "$@"
}

# VTIERD_TDP=1 (set by vtierd-tdp.sh): load host-kmod, expect Telescope over tdp
if [ "${VTIERD_TDP:-0}" = 1 ]; then
    PROF=telescope-flex
    tb_step "L1: host-kmod"
    [ -f /opt/vtier/vtier_tdp.ko ] || fail "/opt/vtier/vtier_tdp.ko missing (run-scenario builds it)"
    insmod /opt/vtier/vtier_tdp.ko
    [ -c /dev/vtier-tdp ] || fail "no /dev/vtier-tdp after insmod"
else
    PROF=damon-kernel
fi
# debugfs, as a Debian host mounts it at boot (sys-kernel-debug.mount; L1's init
# does not): vtierd reads KVM's TLB flush counters of the VM there
[ -d /sys/kernel/debug/kvm ] || mount -t debugfs debugfs /sys/kernel/debug ||
    fail "cannot mount debugfs"
tb_step "L1: DAMON sysfs and NUMA"
[ "$PROF" != damon-kernel ] || [ -d /sys/kernel/mm/damon/admin ] || tb_skip "L1 kernel has no DAMON sysfs"
# the kernel's own NUMA balancing would move guest pages to the CPUs' node too;
# with it on, placement could not be credited to vtierd
echo 0 > /proc/sys/kernel/numa_balancing
echo "numa_balancing=$(cat /proc/sys/kernel/numa_balancing)"
# THP stays at the testbed's default (Debian's: always), as on a real host
THP=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled)
echo "THP: $THP"

mkdir -p /run/vtier && chmod 700 /run/vtier
# -v: every order carried out is in the log (chunk, tiers, EMA), for the ping-pong check
start_vtierd -v
vtierd_ready
ctl tiers
# three tiers: a third, no fourth
{ ctl tiers --get 2.name && ! ctl tiers --get 3.name 2> /dev/null; } > /dev/null ||
    fail "vtierd does not see 3 tiers"

tb_l2_start vm0 --mem 1G
tb_l2_check_kvm vm0
tb_l2 vm0 'vtier-workload serve --size 512M > /run/wl.log 2>&1 &'
tb_l2 vm0 'vtier-workload ctl --wait 300 info'

tb_step "1. attach with mode=off, spread RAM over nodes 0,1,2, then observe"
ctl attach /run/tb/vm0.agent.qmp --name vm0 mode=off window_ms="$W" budget=32MiB
pid=$(tb_l2_pid vm0)
hva=$(ctl status vm0 --get ram.0.hva)
[ -n "$hva" ] || fail "no HVA in vtierctl status"
ctl status vm0 | head -4
spread=$(vtier-tbnuma spread "$pid" "$hva" $((1024 * MIB)) 0,1,2)
echo "spread: $spread"
for n in 0 1 2; do
    [ "$(field "$spread" node$n)" -gt 20000 ] || fail "spread left node $n nearly empty: $spread"
done
tb_l2 vm0 -t 300 'vtier-workload ctl phase dist=uniform ranges=0-64M accesses=50000 write_pct=10'
tb_l2 vm0 'vtier-workload ctl hotset source=ranges out=/run/hotA.txt'
tb_l2 vm0 'cat /run/hotA.txt' > /tmp/hotA.txt
cp /tmp/hotA.txt "$TB_OUT/hotA.txt"
before=$(vtier-tbnuma where "$pid" "$hva" $((1024 * MIB)))
w0=$(vget vm0 windows)
ctl policy vm0 mode=observe > /dev/null
ctl status vm0 | sed -n 2p
[ "$(ctl status vm0 --get profiler)" = "$PROF" ] || fail "vtierd did not choose $PROF"
grep "profiler $PROF" "$TB_OUT/vtierd.log" || fail "no log line saying which profiler and why"
# The idle VM's own hot memory at the granularity of the host's accessed bits
# (chunks above the default hot_threshold after 5 windows). Parts 2b and 3 leave
# room for it plus 80 MiB: A (64 MiB) fits, A and B do not. Five of vtierd's
# windows, not of the clock: under load (L1 is TCG) four took 10 s, and a
# coarse first report had not decayed yet (278 MiB).
for _ in $(seq 20); do
    [ "$(vget vm0 windows)" -ge $(( ${w0:-0} + 5 )) ] && break
    sleep_window
done
[ "$(vget vm0 windows)" -ge $(( ${w0:-0} + 5 )) ] || fail "vtierd ran fewer than 5 windows in 20"
BASE=$(( $(vget vm0 hot_chunks) * 2 ))
LIM=$(( BASE + 80 ))
echo "idle VM: ${BASE} MiB hot (THP $THP); parts 2b and 3 run under dram_limit=${LIM}MiB"
[ "$BASE" -le 192 ] || fail "the idle VM reads ${BASE} MiB hot: too much for this scenario"
# hot set A runs until the end of part 2b
phase_start A 0-64M
for _ in 1 2 3 4; do sleep_window; done
after=$(vtier-tbnuma where "$pid" "$hva" $((1024 * MIB)))
echo "observe: before $before"
echo "observe: after  $after"
[ "$(vget vm0 bytes_moved)" = 0 ] || fail "mode=observe moved $(vget vm0 bytes_moved) bytes"
[ "$(vget vm0 windows)" -ge 2 ] || fail "mode=observe ran no windows"
[ "$(vget vm0 observe_bytes)" -gt 0 ] || fail "mode=observe decided nothing (no profile?)"
for n in 1 2; do
    [ "$(field "$after" node$n)" = "$(field "$before" node$n)" ] ||
        fail "node $n pages changed under mode=observe"
done

tb_step "2. mode=auto dram_limit=256MiB: hot set A to node 0"
ctl policy vm0 mode=auto dram_limit=256MiB > /dev/null
w0=$(vget vm0 windows)
printf '%-7s %-8s %-9s %-9s %-9s %-6s %-6s %-8s %s\n' window "A@node0" "node0MiB" "node1MiB" \
    "node2MiB" promo demo busy "failed"
ok_a=""
for i in $(seq 1 24); do
    sleep_window
    a=$(vtier-tbnuma where-gpa "$pid" "$hva" /tmp/hotA.txt)
    v=$(vtier-tbnuma where "$pid" "$hva" $((1024 * MIB)))
    set -- $(counters)
    win=$(($1 - w0))
    pct=$(( $(field "$a" node0) * 100 / $(field "$a" pages) ))
    n0=$(( $(field "$v" node0) * 4096 / MIB ))
    printf '%-7s %-8s %-9s %-9s %-9s %-6s %-6s %-8s %s\n' "$win" "$pct%" "$n0" \
        $(( $(field "$v" node1) * 4096 / MIB )) $(( $(field "$v" node2) * 4096 / MIB )) \
        "$2" "$3" "$4" "$5"
    if [ "$pct" -ge 90 ] && [ "$n0" -le 256 ]; then
        ok_a=$win
        break
    fi
done
[ -n "$ok_a" ] || fail "hot set A not >= 90 % on node 0 within the DRAM limit after 20+ windows"
[ "$ok_a" -le 20 ] || fail "hot set A took $ok_a windows (> 20)"
echo "RESULT $PROF hotA_windows=$ok_a"
ctl stats vm0

tb_step "2b. dram_limit=${LIM}MiB while A is hot: cold data leaves node 0, A stays"
ctl policy vm0 dram_limit=${LIM}MiB > /dev/null
ok_lim=""
for i in $(seq 1 30); do
    sleep_window
    a=$(vtier-tbnuma where-gpa "$pid" "$hva" /tmp/hotA.txt)
    v=$(vtier-tbnuma where "$pid" "$hva" $((1024 * MIB)))
    pct=$(( $(field "$a" node0) * 100 / $(field "$a" pages) ))
    n0=$(( $(field "$v" node0) * 4096 / MIB ))
    echo "node0 ${n0} MiB, A@node0 ${pct}%"
    if [ "$n0" -le "$LIM" ]; then
        ok_lim=1
        break
    fi
done
[ -n "$ok_lim" ] || fail "node-0 use did not come down to the $LIM MiB limit"
[ "$pct" -ge 90 ] || fail "the hot set was demoted to meet the limit (A@node0 $pct%)"
phase_running A || fail "hot set A stopped before the end of part 2b: $(tb_l2 vm0 'tail -3 /run/A.log')"
phase_stop A

tb_step "3. phase change to hot set B (256M-320M) under dram_limit=${LIM}MiB"
tb_l2 vm0 -t 300 'vtier-workload ctl phase dist=uniform ranges=256M-320M accesses=50000 write_pct=10'
tb_l2 vm0 'vtier-workload ctl hotset source=ranges out=/run/hotB.txt'
tb_l2 vm0 'cat /run/hotB.txt' > /tmp/hotB.txt
cp /tmp/hotB.txt "$TB_OUT/hotB.txt"
phase_start B 256M-320M
w0=$(vget vm0 windows)
ok_b=""
# independent ping-pong count: the node of every 2 MiB of A and B, each check,
# from the end of the window that was running when B started (its counter
# moves after its moves are done). That window decided on a profile that saw B
# for part of it or not at all: part 2b's demotions still under way then may
# take a chunk of B that is still on node 0 as cold, and B brings it back once
# seen: the old phase's move, not a ping-pong.
for _ in $(seq 100); do
    [ "$(vget vm0 windows)" -gt "$w0" ] && break
    sleep "$(awk "BEGIN {print $W / 10000}")"
done
[ "$(vget vm0 windows)" -gt "$w0" ] || fail "vtierd ran no window in 10 window lengths after B started"
vtier-tbnuma chunks "$pid" "$hva" /tmp/hotA.txt > "$TB_OUT/chunks.log"
vtier-tbnuma chunks "$pid" "$hva" /tmp/hotB.txt >> "$TB_OUT/chunks.log"
printf '%-7s %-9s %-9s %-10s %-6s %-6s %-8s %s\n' window "B@node0" "A@node0" "node0MiB" promo demo busy failed
for i in $(seq 1 24); do
    sleep_window
    a=$(vtier-tbnuma where-gpa "$pid" "$hva" /tmp/hotA.txt)
    b=$(vtier-tbnuma where-gpa "$pid" "$hva" /tmp/hotB.txt)
    v=$(vtier-tbnuma where "$pid" "$hva" $((1024 * MIB)))
    vtier-tbnuma chunks "$pid" "$hva" /tmp/hotA.txt >> "$TB_OUT/chunks.log"
    vtier-tbnuma chunks "$pid" "$hva" /tmp/hotB.txt >> "$TB_OUT/chunks.log"
    set -- $(counters)
    win=$(($1 - w0))
    pa=$(( $(field "$a" node0) * 100 / $(field "$a" pages) ))
    pb=$(( $(field "$b" node0) * 100 / $(field "$b" pages) ))
    n0=$(( $(field "$v" node0) * 4096 / MIB ))
    printf '%-7s %-9s %-9s %-10s %-6s %-6s %-8s %s\n' "$win" "$pb%" "$pa%" "$n0" \
        "$2" "$3" "$4" "$5"
    if [ "$pb" -ge 90 ] && [ "$pa" -le 50 ] && [ "$n0" -le "$LIM" ]; then
        ok_b=$win
        break
    fi
done
[ -n "$ok_b" ] || fail "phase change: B not promoted / A not demoted within 20+ windows" \
    "(hot set B $(phase_running B && echo running || echo stopped))"
[ "$ok_b" -le 20 ] || fail "phase change took $ok_b windows (> 20)"
# lines alternate A, B (chunks.log): per chunk position over the checks,
# its node changes and its nodes check by check ("-", none present, skipped)
awk 'NR % 2 { set = "A" } !(NR % 2) { set = "B" }
    { n = length($0); for (i = 1; i <= n; i++) if (substr($0, i, 1) != "-")
        seq[set " " i] = seq[set " " i] substr($0, i, 1) }
    END { for (k in seq) { s = seq[k]; c = 0
        for (j = 2; j <= length(s); j++) if (substr(s, j, 1) != substr(s, j - 1, 1)) c++
        print c, k, s } }' "$TB_OUT/chunks.log" > "$TB_OUT/chunk-changes.log"
flips=$(awk 'BEGIN { m = 0 } $1 > m { m = $1 } END { print m }' "$TB_OUT/chunk-changes.log")
moves=$(vget vm0 max_moves_per_chunk)
echo "RESULT $PROF phase_change_windows=$ok_b max_node_changes_per_chunk=$flips" \
    "agent_max_moves_per_chunk_since_attach=$moves"
if [ "$flips" -gt 1 ]; then
    # which chunks, their nodes check by check, and vtierd's moves of them (-v)
    awk '$1 > 1 { print $2, $3, $4 }' "$TB_OUT/chunk-changes.log" |
    while read -r set i s; do
        gpa=$(k=0; sed -n 's/^gpa=\(0x[0-9a-f]*\) bytes=\(0x[0-9a-f]*\).*/\1 \2/p' /tmp/hot$set.txt |
            while read -r g n; do
                for o in $(seq 0 $((2 * MIB)) $((n - 1))); do
                    k=$((k + 1)); [ "$k" = "$i" ] && { echo $((g + o)); break 2; }
                done
            done)
        h=$(printf '0x%x' $((hva + gpa)))
        echo "chunk $i of $set (gpa $(printf '0x%x' "$gpa"), hva $h): nodes $s"
        grep -F "($h)" "$TB_OUT/vtierd.log" | sed 's/^.*DEBUG: /  /'
    done
    fail "ping-pong: a 2 MiB chunk of A or B changed node $flips times during the phase change"
fi
ctl stats vm0
phase_stop B
# the kernel's TLB flush counters (docs/abi-control.md, stats.tlb): KVM's for
# this VM are read (L1 mounts debugfs) and count in the windows that moved
k=kvm_remote_tlb_flushes
t=$(vget vm0 tlb.$k.available tlb.$k.in_moving_windows tlb.$k.moved_bytes \
    tlb.$k.per_gib_moved tlb.host_tlb_shootdowns.per_gib_moved) || fail "stats tlb: $t"
# shellcheck disable=SC2086
set -- $t
echo "RESULT-TLB $PROF kvm_flushes_moving=$2 moved_mib=$(($3 / MIB)) kvm_flushes_per_gib=$4" \
    "host_shootdowns_per_gib=$5"
[ "$1" = true ] || fail "KVM's remote TLB flushes of the VM not read (stats tlb: $t)"
[ "$3" -gt 0 ] && [ "$2" -gt 0 ] ||
    fail "no KVM remote TLB flush counted in windows that moved memory (stats tlb: $t)"

tb_step "4. mode=off detaches profiling"
ctl policy vm0 mode=off > /dev/null
ctl status vm0 | head -2
[ "$(ctl status vm0 --get profiler)" = none ] || fail "mode=off kept a profiler"
if [ "$PROF" = damon-kernel ]; then
    [ "$(cat /sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds)" = 0 ] ||
        fail "mode=off left a kdamond: $(cat /sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds)"
fi

tb_step "4b. the kernel's own migration of guest RAM, its TLB flushes beside vtierd's"
# vtierd is off: the same VM's KVM counters (debugfs) around move_pages of a
# 256 MiB range by vtier-tbnuma, in one call, then back in 2 MiB calls (as
# vtierd's movers do); per GiB of pages that changed node. The range holds
# hot set B (256M-320M), run as during vtierd's phase change: the vCPUs hold
# translations a flush must drop, as they did for vtierd's moves. Then the
# memory vtierd moved (same-memory-out, -in: A and B).
kvm_dir=$(ls -d /sys/kernel/debug/kvm/"$pid"-* 2>/dev/null | head -1)
[ -n "$kvm_dir" ] || fail "no KVM debugfs directory for pid $pid"
kflush() { echo "$(cat "$kvm_dir/remote_tlb_flush") $(cat "$kvm_dir/remote_tlb_flush_requests" 2>/dev/null || echo 0)"; }
kmove() { # NAME NODE CMD...: moves, prints NAME's flushes per GiB moved
    local name=$1 node=$2 b a k0 k1 mib f r
    shift 2
    # pages of guest RAM 0-512M on NODE before and after (A, B and the range below)
    b=$(vtier-tbnuma where "$pid" "$hva" $((512 * MIB)))
    k0=$(kflush)
    "$@" > /dev/null || fail "$name: $*"
    k1=$(kflush)
    a=$(vtier-tbnuma where "$pid" "$hva" $((512 * MIB)))
    mib=$(( ($(field "$a" node$node) - $(field "$b" node$node)) * 4096 / MIB ))
    [ "$mib" -gt 0 ] || fail "$name moved nothing to node $node ($b -> $a)"
    f=$(( ${k1% *} - ${k0% *} ))
    r=$(( ${k1#* } - ${k0#* } ))
    echo "RESULT-TLB-KERNEL $name moved_mib=$mib kvm_flushes=$f kvm_flush_requests=$r" \
        "kvm_flushes_per_gib=$((f * 1024 / mib)) kvm_flush_requests_per_gib=$((r * 1024 / mib))"
}
phase_start B 256M-320M
sleep 2
kmove one-call 2 vtier-tbnuma move "$pid" $((hva + 256 * MIB)) $((256 * MIB)) 2
kmove per-2mib 1 vtier-tbnuma spread "$pid" $((hva + 256 * MIB)) $((256 * MIB)) 1
# The same memory as vtierd's phase change, in the same state: hot set B
# running, A used just before (its pages mapped in the VM's nested page
# table, as when vtierd demoted it) and idle; both off node 0 and back, each
# in one call, as vtierd moved B in and A out. vtier-tbnuma moves them to
# node 0 first (untimed) so that each timed call moves all of its set.
both() { # NODE: A and B to NODE, one move_pages call each
    vtier-tbnuma move "$pid" "$hva" $((64 * MIB)) "$1" &&
        vtier-tbnuma move "$pid" $((hva + 256 * MIB)) $((64 * MIB)) "$1"
}
touch_a() { # A used again, then idle
    tb_l2 vm0 -t 300 'vtier-workload ctl phase dist=uniform ranges=0-64M accesses=50000 write_pct=10' \
        > /dev/null || fail "a phase over A"
}
both 0 > /dev/null || fail "moving A and B to node 0"
touch_a
kmove same-memory-out 1 both 1
touch_a
kmove same-memory-in 0 both 0
phase_stop B

tb_step "5. bad input"
out=$(ctl stats nosuchvm 2>&1) && fail "stats of an unknown VM succeeded"
echo "$out"; echo "$out" | grep -q "no VM named 'nosuchvm'" || fail "unclear error: $out"
out=$(ctl policy vm0 budget=banana 2>&1) && fail "malformed policy accepted"
echo "$out"; echo "$out" | grep -q "budget" || fail "unclear error: $out"
out=$(vtierd --socket "$SOCK" 2>&1) && fail "a second vtierd on the same socket started"
echo "$out"; echo "$out" | grep -q "another vtierd" || fail "unclear error: $out"
mkdir -p /run/vtier2 && chmod 700 /run/vtier2
vtierd --socket /run/vtier2/s > /dev/null 2>&1 &
other=$!
sleep 1
out=$(ctl attach /run/vtier2/s 2>&1) && fail "attached a socket that is not QEMU"
echo "$out"; echo "$out" | grep -q "QMP" || fail "unclear error: $out"
kill "$other"; wait "$other" || true
# A VM killed while attached: its QEMU is enough (vtierd attaches by QMP and
# maps its RAM, which QEMU allocates before the guest runs), so vm1 is not
# waited for to boot (an L2 boot is 15-20 s under TCG); attached once its QMP
# socket answers.
tb_l2_start vm1 --mem 256M --no-wait
for _ in $(seq 100); do
    tb_qmp -t 5 vm1 '{"execute":"query-status"}' > /dev/null 2>&1 && break
    sleep 0.2
done
ctl attach /run/tb/vm1.agent.qmp --name vm1 mode=observe window_ms="$W" > /dev/null ||
    fail "attach vm1"
ctl list | grep -q '^vm1 ' || fail "vm1 not listed after its attach"
kill -9 "$(tb_l2_pid vm1)"
for _ in $(seq 20); do ctl list | grep -q '^vm1 ' || break; sleep 0.5; done
ctl list
ctl list | grep -q '^vm1 ' && fail "vm1 still listed after its QEMU died"
grep "vm1: detached" "$TB_OUT/vtierd.log" || fail "no log line for vm1's exit"
ctl status vm0 > /dev/null || fail "vtierd stopped serving vm0"
tb_l2_stop vm1 || true   # its QEMU was killed: wait reports 137

tb_step "6. verify guest memory"
out=$(tb_l2 vm0 -t 600 'vtier-workload ctl verify') || fail "verify failed: $out"
echo "$out"
echo "$out" | grep -q 'bad=0 ' || fail "verify did not report bad=0: $out"

ctl detach vm0
kill "$vtierd_pid"; wait "$vtierd_pid" || true
bad=$(echo "$out" | sed -n 's/.* bad=\([0-9]*\) .*/\1/p')
tb_step "result"
printf '%-14s %-10s %-13s %-19s %-10s %-8s %s\n' profiler "to A" "phase change" \
    "node changes/chunk" "bad pages" "L1 THP" "idle VM hot"
printf '%-14s %-10s %-13s %-19s %-10s %-8s %s\n' "$PROF" "$ok_a" "$ok_b" "$flips" "$bad" "$THP" \
    "$BASE MiB"
# read by tests/vtierd/result-table: profiler, windows to A, windows to follow
# the phase change, max node changes per 2 MiB chunk, bad guest pages, L1 THP,
# the idle VM's hot MiB (parts 2b and 3 ran under 80 MiB above it)
echo "RESULT-ROW $PROF $ok_a $ok_b $flips $bad $THP $BASE"
# (the runner stops it anyway; its status says nothing about vtierd)
tb_l2_stop vm0 || echo "tb_l2_stop vm0: status $?"
tb_step "vtierd-tiering: done"
