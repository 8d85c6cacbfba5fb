# guest-hostile: a guest that lies and floods its hint channel next to an
# honest one, both under L1's stock QEMU (anonymous RAM, attached by QMP with
# hints=on). vm0 (honest) runs vtier_guest.ko and keeps a 128 MiB workload;
# vm1 has the hint device and no module: vtier-tbhostile writes its ring for
# GUEST_HOSTILE_SECONDS (30) at up to GUEST_HOSTILE_RATE (1000000) records/s:
# garbage, stale sequence numbers, ranges outside RAM, unaligned and huge
# ranges, unknown kinds, DEFLATEs of no balloon, a producer index far ahead,
# and FREE hints for its own pages in use. vtierd must stay within its caps
# (records read per second, CPU per window), vm0's windows go on at their
# pace and every page of vm0 verifies; vm1's lies may cost vm1 alone. Then
# the same lies at a pace the ring holds (GUEST_HOSTILE_PACED_RATE (2000)
# records/s for GUEST_HOSTILE_PACED_SECONDS (10)): read one by one, each kind
# refused for its own reason, and the FREE lies page vm1's own memory out.
#   RESULT-HOSTILE records= rejected= agent_cpu_pct= agent_rss_mib= other_vm_bad_pages=
#   (records: what vm1 wrote in both phases; rejected: what vtierd refused by reason (what
#   it skipped unread on a lying index is printed apart); agent_cpu_pct:
#   vtierd's CPU over the flood, % of one core, all of it (both VMs'
#   profiling too; the figure without the flood is printed next to it);
#   agent_rss_mib: its peak RSS; asserted: CPU at most 20 points over the figure
#   without the flood (GUEST_HOSTILE_BASE_SECONDS (10) before it), RSS <= 32 MiB)
W=1000
SECS=${GUEST_HOSTILE_SECONDS:-30}
BASE_SECS=${GUEST_HOSTILE_BASE_SECONDS:-10}
RATE=${GUEST_HOSTILE_RATE:-1000000}
PACED=${GUEST_HOSTILE_PACED_RATE:-2000}
PACED_SECS=${GUEST_HOSTILE_PACED_SECONDS:-10}
. /src/tests/testbed/scenarios/lib.sh
# the reasons vtier-tbhostile's paced lies must each be refused for
REASONS="seq kind align size range arg"
# vm1's hint figures at one instant, one line: records, FREE hints accepted,
# bytes paged out, bytes discarded, then one refusal count per $REASONS
hint_snap() {
    local k v keys="hints.records hints.accepted.free hints.pageout_bytes hints.discard_bytes"
    for k in $REASONS; do keys="$keys hints.rejected.$k"; done
    # shellcheck disable=SC2086
    v=$(vget vm1 $keys) || return 2
    echo $v
}
# lib.sh's fail, with the hint channels' view
fail() {
    ctl stats vm0 2>&1 | sed -n '/^guest hints/,$p' || true
    ctl stats vm1 2>&1 | sed -n '/^guest hints/,$p' || true
    tail -30 "$TB_OUT/vtierd.log" 2>&1 || true
    tb_fail "$@"
}
# vtierd's CPU time (utime + stime) in clock ticks
cpu_ticks() { awk '{print $14 + $15}' "/proc/$vtierd_pid/stat"; }
hint_dev() {
    tb_l2 "$1" 'for d in /sys/bus/pci/devices/*; do
        [ "$(cat $d/vendor)" = 0x1af4 ] && [ "$(cat $d/device)" = 0x1110 ] && echo $d; done; true'
}

tb_step "L1: host-kmod, vtierd"
insmod /opt/vtier/vtier_tdp.ko || fail "insmod vtier_tdp.ko"
mkdir -p /run/vtier && chmod 700 /run/vtier
printf '[policy]\nmode = auto\nwindow_ms = %s\n' "$W" > /run/vtier/vtierd.conf
start_vtierd --config /run/vtier/vtierd.conf
vtierd_ready

tb_step "L2 vm0 (honest, vtier_guest.ko) and vm1 (hostile), each with a hint device"
for vm in vm0 vm1; do
    tb_l2_start $vm --mem 512M -- \
        -object memory-backend-file,id=vtier-hints,mem-path=/dev/shm/vtier-hints-$vm,size=1M,share=on \
        -device ivshmem-plain,memdev=vtier-hints
    tb_l2_check_kvm $vm
done
tb_l2 vm0 "insmod /opt/vtier/vtier_guest.ko poll_ms=200" || fail "insmod vtier_guest.ko in vm0"
tb_l2 vm0 "vtier-workload serve --size 128M > /run/wl.log 2>&1 &"
tb_l2 vm0 -t 600 'vtier-workload ctl --wait 550 info' > /dev/null || fail "vm0 workload"
for vm in vm0 vm1; do
    ctl attach /run/tb/$vm.agent.qmp --name $vm mode=auto hints=on > /dev/null || fail "attach $vm"
done
for _ in $(seq 30); do
    [ "$(vget vm0 hints.channel)" = attached ] && [ "$(vget vm1 hints.channel)" = attached ] && break
    sleep 1
done
[ "$(vget vm1 hints.channel)" = attached ] || fail "vm1's channel not attached"
dev=$(hint_dev vm1) || true
[ -n "$dev" ] || fail "no ivshmem device in vm1"
tb_l2 vm1 "echo 1 > $dev/enable" || true

tb_step "baseline: $BASE_SECS s without the flood"
b0=$(cpu_ticks)
sleep "$BASE_SECS"
base_pct=$(awk "BEGIN {printf \"%.1f\", ($(cpu_ticks) - $b0) / 100 / $BASE_SECS * 100}")
echo "vtierd CPU without the flood: $base_pct % of a core (two VMs' profiling and placement)"
tb_step "vm1 floods for $SECS s at up to $RATE records/s"
w0=$(vget vm0 windows) || fail "stats vm0: $w0"
c0=$(cpu_ticks)
tb_l2 vm1 "vtier-tbhostile $dev/resource2 $SECS $RATE > /run/hostile.log 2>&1 &"
t0=$(cut -d' ' -f1 /proc/uptime)
for i in $(seq 1 "$SECS"); do
    sleep 1
    [ $((i % 10)) = 0 ] && echo "t+$i s: vm0 windows $(( $(vget vm0 windows) - w0 )), vtierd CPU $(( $(cpu_ticks) - c0 )) ticks, $(grep VmRSS "/proc/$vtierd_pid/status")"
done
tb_l2 vm1 -t 60 'while ! [ -s /run/hostile.log ]; do sleep 0.5; done; cat /run/hostile.log' > /run/hostile.out ||
    fail "vtier-tbhostile: $(tb_l2 vm1 'cat /run/hostile.log')"
t1=$(cut -d' ' -f1 /proc/uptime)
c1=$(cpu_ticks)
w1=$(vget vm0 windows) || fail "stats vm0: $w1"
h=$(cat /run/hostile.out)
echo "vm1: $h"
records=$(field "$h" records)
[ -n "$records" ] || fail "vtier-tbhostile: $h"
s1=$(vget vm1 hints.records hints.bad_index hints.skipped hints.cpu_ns) || fail "stats vm1: $s1"
rejected=$(osum vm1 hints.rejected) || fail "stats vm1: hints.rejected"
# vm0's refusals now: any but "contradicted" is vm1's doing (checked at the end)
s0=$(vget vm0 hints.rejected hints.rejected.contradicted) || fail "stats vm0: $s0"
r0_why=$(echo "$s0" | head -1)
r0=$(($(numsum "$r0_why") - $(echo "$s0" | tail -1)))
ctl stats vm1 | sed -n '/^guest hints/,$p'
# shellcheck disable=SC2086
set -- $s1
read1=$1
echo "vm1: $1 records read, $rejected refused by reason, $2 lying producer indices" \
    "($3 indices skipped unread), reader CPU $(($4 / 1000000)) ms in all"
cpu_pct=$(awk "BEGIN {printf \"%.1f\", ($c1 - $c0) / 100 / ($t1 - $t0) * 100}")
rss=$(awk '/^VmHWM:/ {print int($2 / 1024)}' "/proc/$vtierd_pid/status")
echo "vtierd read $read1 of vm1's records (cap 4096/s + 1024), vm0 went $((w1 - w0)) windows in $(awk "BEGIN {print $t1 - $t0}") s"
# The flood's producer index runs ahead of the ring between two polls, so the
# reader skips it unread (bad_index above). Lies at a pace the ring holds are
# read one by one (as many as the reader's caps allow): each kind must be
# refused for its own reason, and the only ones accepted (FREE hints for vm1's
# own pages in use) page vm1's own memory out.
tb_step "vm1 lies at a pace the ring holds: $PACED records/s for $PACED_SECS s"
a=$(hint_snap) || fail "stats vm1: $a"
ra=$(osum vm1 hints.rejected) || fail "stats vm1: hints.rejected"
h2=$(tb_l2 vm1 -t $((PACED_SECS + 60)) "vtier-tbhostile $dev/resource2 $PACED_SECS $PACED") ||
    fail "vtier-tbhostile (paced): $h2"
sleep $(( 3 * W / 1000 ))
b=$(hint_snap) || fail "stats vm1: $b"
rb=$(osum vm1 hints.rejected) || fail "stats vm1: hints.rejected"
echo "vm1 (paced): $h2"
# per figure of hint_snap: after - before
# shellcheck disable=SC2086
set -- $(echo "$b $a" | awk '{n = NF / 2; for (i = 1; i <= n; i++) printf "%d ", $i - $(i + n)}')
read2=$1 free_ok=$2 out_b=$(($3 + $4))
shift 4
echo "vm1 (paced): vtierd read $read2 records; refused by reason: $(vget vm1 hints.rejected)"
[ "$read2" -gt 0 ] || fail "vtierd read none of vm1's paced records"
for reason in $REASONS; do
    [ "$1" -gt 0 ] || fail "no paced lie refused as '$reason' ($read2 records read)"
    shift
done
own=$(field "$h2" own_pages_changed)
echo "vm1 (paced): $free_ok FREE lies accepted: $((out_b / 1024)) KiB of its RAM paged out or" \
    "discarded; $own of its own 4096 pages in use changed (stock QEMU's anonymous RAM is paged" \
    "out, not dropped: a lie costs the liar faults, not contents)"
[ "$free_ok" -gt 0 ] && [ "$out_b" -gt 0 ] ||
    fail "vm1's FREE lies about its own pages were not acted on: accepted $free_ok, $out_b bytes"
rejected=$((rejected + rb - ra))
records=$(( records + $(field "$h2" records) ))

tb_step "vm0 verifies every page"
v=$(tb_l2 vm0 -t 900 'vtier-workload ctl verify report=5') || true
echo "vm0: $v" | tail -3
bad=$(field "$v" bad)
[ -n "$bad" ] || fail "no verify result from vm0: $v"
echo "RESULT-HOSTILE records=$records rejected=$rejected agent_cpu_pct=$cpu_pct agent_rss_mib=$rss" \
    "other_vm_bad_pages=$bad"
echo "(agent_cpu_pct without the flood: $base_pct)"
[ "$bad" = 0 ] || fail "vm0 lost pages while vm1 lied"
[ "$read1" -le $(( (SECS + 15) * 4096 + 1024 )) ] || fail "vtierd read $read1 records of vm1: over its cap"
[ $((w1 - w0)) -ge $((SECS * 8 / 10)) ] || fail "vm0 did only $((w1 - w0)) windows in $SECS s"
# vtierd's CPU and RSS under the flood. Measured (docs/results/2026-11-27-guest-hints.md):
# 8.7 % of a core over the flood against 8.2 % without it, peak RSS 4 MiB. Under
# make check's load L1 runs its work up to 3.5x slower (2026-11-29-isolation.md),
# which raises both CPU figures alike: the bound is on what the flood adds, 20 points
# (measured 0.5), and on the peak RSS, 32 MiB.
awk "BEGIN {exit !($cpu_pct <= $base_pct + 20)}" ||
    fail "vtierd's CPU over the flood $cpu_pct % of a core: over its bound," \
        "20 points above the $base_pct % without it"
[ "$rss" -le 32 ] || fail "vtierd's peak RSS $rss MiB under the flood: over its bound 32 MiB"
# an honest guest's COLD range over memory the host sees hot is refused as
# contradicted (telemetry wins): any other refusal is vm1's doing
[ "$r0" = 0 ] || fail "vm0's honest hints were refused: $r0_why"
tb_l2_stop vm1
tb_l2_stop vm0
