# guest-hostile: a guest that lies and floods its hint channel next to an
# honest one, both under L1's stock QEMU (anonymous RAM, attached by QMP with
# hints=on). vm0 (honest) runs vtier_guest.ko and keeps a 128 MiB workload;
# vm1 has the hint device and no module: vtier-tbhostile writes its ring for
# GUEST_HOSTILE_SECONDS (60) at up to GUEST_HOSTILE_RATE (1000000) records/s:
# garbage, stale sequence numbers, ranges outside RAM, unaligned and huge
# ranges, unknown kinds, DEFLATEs of no balloon, a producer index far ahead,
# and FREE hints for its own pages in use. vtierd must stay within its caps
# (records read per second, CPU per window), vm0's windows go on at their
# pace and every page of vm0 verifies; vm1's lies may cost vm1 alone. Then
# the same lies at a pace the ring holds (GUEST_HOSTILE_PACED_RATE (2000)
# records/s for GUEST_HOSTILE_PACED_SECONDS (20)): read one by one, each kind
# refused for its own reason, and the FREE lies page vm1's own memory out.
#   RESULT-HOSTILE records= rejected= agent_cpu_pct= agent_rss_mib= other_vm_bad_pages=
#   (records: what vm1 wrote in both phases; rejected: what vtierd refused by reason (what
#   it skipped unread on a lying index is printed apart); agent_cpu_pct:
#   vtierd's CPU over the flood, % of one core, all of it (both VMs'
#   profiling too; the figure without the flood is printed next to it);
#   agent_rss_mib: its peak RSS; asserted: CPU at most 20 points over the figure
#   without the flood, RSS <= 32 MiB)
export LD_LIBRARY_PATH=/opt/vtier/lib
W=1000
SECS=${GUEST_HOSTILE_SECONDS:-60}
RATE=${GUEST_HOSTILE_RATE:-1000000}
PACED=${GUEST_HOSTILE_PACED_RATE:-2000}
PACED_SECS=${GUEST_HOSTILE_PACED_SECONDS:-20}
SOCK=/run/vtier/vtierd.sock
ctl() { vtierctl --socket "$SOCK" "$@"; }
field() { echo "$1" | sed -n "s/.*$2=\([0-9.]*\).*/\1/p"; }
jfirst() { echo "$1" | grep -o "\"$2\":[0-9]*" | head -1 | cut -d: -f2; }
jreject() { echo "$1" | grep -o '"rejected":{[^}]*}' | grep -o "\"$2\":[0-9]*" | cut -d: -f2; }
jobj_sum() { echo "$1" | grep -o "\"$2\":{[^}]*}" | grep -o ':[0-9]*' | tr -d : |
    awk '{s += $1} END {print s + 0}'; }
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
vtierd --socket "$SOCK" --config /run/vtier/vtierd.conf >> "$TB_OUT/vtierd.log" 2>&1 &
vtierd_pid=$!
for _ in $(seq 50); do ctl list > /dev/null 2>&1 && break; sleep 0.2; done
ctl list > /dev/null || fail "vtierd did not start: $(cat "$TB_OUT/vtierd.log")"

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
    [ "$(ctl --json stats vm0 | grep -c '"channel":"attached"')" = 1 ] &&
        [ "$(ctl --json stats vm1 | grep -c '"channel":"attached"')" = 1 ] && break
    sleep 1
done
ctl --json stats vm1 | grep -q '"channel":"attached"' || fail "vm1's channel not attached"
dev=$(hint_dev vm1) || true
[ -n "$dev" ] || fail "no ivshmem device in vm1"
tb_l2 vm1 "echo 1 > $dev/enable" || true

tb_step "baseline: 20 s without the flood"
b0=$(cpu_ticks)
sleep 20
base_pct=$(awk "BEGIN {printf \"%.1f\", ($(cpu_ticks) - $b0) / 100 / 20 * 100}")
echo "vtierd CPU without the flood: $base_pct % of a core (two VMs' profiling and placement)"
tb_step "vm1 floods for $SECS s at up to $RATE records/s"
w0=$(jfirst "$(ctl --json stats vm0)" windows)
c0=$(cpu_ticks)
tb_l2 vm1 "vtier-tbhostile $dev/resource2 $SECS $RATE > /run/hostile.log 2>&1 &"
t0=$(cut -d' ' -f1 /proc/uptime)
for i in $(seq 1 "$SECS"); do
    sleep 1
    [ $((i % 10)) = 0 ] && echo "t+$i s: vm0 windows $(( $(jfirst "$(ctl --json stats vm0)" windows) - w0 )), vtierd CPU $(( $(cpu_ticks) - c0 )) ticks, $(grep VmRSS "/proc/$vtierd_pid/status")"
done
tb_l2 vm1 -t 60 'while ! [ -s /run/hostile.log ]; do sleep 0.5; done; cat /run/hostile.log' > /run/hostile.out ||
    fail "vtier-tbhostile: $(tb_l2 vm1 'cat /run/hostile.log')"
t1=$(cut -d' ' -f1 /proc/uptime)
c1=$(cpu_ticks)
w1=$(jfirst "$(ctl --json stats vm0)" windows)
h=$(cat /run/hostile.out)
echo "vm1: $h"
records=$(field "$h" records)
[ -n "$records" ] || fail "vtier-tbhostile: $h"
js1=$(ctl --json stats vm1)
js0=$(ctl --json stats vm0)
ctl stats vm1 | sed -n '/^guest hints/,$p'
rejected=$(jobj_sum "$js1" rejected)
echo "vm1: $(jfirst "$js1" records) records read, $rejected refused by reason," \
    "$(jfirst "$js1" bad_index) lying producer indices ($(jfirst "$js1" skipped) indices skipped unread)," \
    "reader CPU $(( $(jfirst "$js1" cpu_ns) / 1000000 )) ms in all"
read1=$(jfirst "$js1" records)
cpu_pct=$(awk "BEGIN {printf \"%.1f\", ($c1 - $c0) / 100 / ($t1 - $t0) * 100}")
rss=$(awk '/^VmHWM:/ {print int($2 / 1024)}' "/proc/$vtierd_pid/status")
echo "vtierd read $read1 of vm1's records (cap 4096/s + 1024), vm0 went $((w1 - w0)) windows in $(awk "BEGIN {print $t1 - $t0}") s"
# The flood's producer index runs ahead of the ring between two polls, so the
# reader skips it unread (bad_index above). Lies at a pace the ring holds are
# read one by one (as many as the reader's caps allow): each kind must be
# refused for its own reason, and the only ones accepted (FREE hints for vm1's
# own pages in use) page vm1's own memory out.
tb_step "vm1 lies at a pace the ring holds: $PACED records/s for $PACED_SECS s"
js1a=$(ctl --json stats vm1)
h2=$(tb_l2 vm1 -t $((PACED_SECS + 60)) "vtier-tbhostile $dev/resource2 $PACED_SECS $PACED") ||
    fail "vtier-tbhostile (paced): $h2"
sleep $(( 3 * W / 1000 ))
js1b=$(ctl --json stats vm1)
echo "vm1 (paced): $h2"
read2=$(( $(jfirst "$js1b" records) - $(jfirst "$js1a" records) ))
echo "vm1 (paced): vtierd read $read2 records; refused by reason:" \
    "$(echo "$js1b" | grep -o '"rejected":{[^}]*}')"
[ "$read2" -gt 0 ] || fail "vtierd read none of vm1's paced records"
for reason in seq kind align size range arg; do
    n=$(( $(jreject "$js1b" $reason) - $(jreject "$js1a" $reason) ))
    [ "$n" -gt 0 ] || fail "no paced lie refused as '$reason' ($read2 records read)"
done
free_ok=$(( $(jfirst "$(echo "$js1b" | grep -o '"accepted":{[^}]*}')" free) -
    $(jfirst "$(echo "$js1a" | grep -o '"accepted":{[^}]*}')" free) ))
own=$(field "$h2" own_pages_changed)
out_b=$(( $(jfirst "$js1b" pageout_bytes) + $(jfirst "$js1b" discard_bytes) -
    $(jfirst "$js1a" pageout_bytes) - $(jfirst "$js1a" discard_bytes) ))
echo "vm1 (paced): $free_ok FREE lies accepted: $((out_b / 1024)) KiB of its RAM paged out or" \
    "discarded; $own of its own 4096 pages in use changed (stock QEMU's anonymous RAM is paged" \
    "out, not dropped: a lie costs the liar faults, not contents)"
[ "$free_ok" -gt 0 ] && [ "$out_b" -gt 0 ] ||
    fail "vm1's FREE lies about its own pages were not acted on: accepted $free_ok, $out_b bytes"
rejected=$(( rejected + $(jobj_sum "$js1b" rejected) - $(jobj_sum "$js1a" rejected) ))
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
r0=$(( $(jobj_sum "$js0" rejected) - $(jfirst "$js0" contradicted) ))
[ "$r0" = 0 ] || fail "vm0's honest hints were refused: $(echo "$js0" | grep -o '"rejected":{[^}]*}')"
tb_l2_stop vm1
tb_l2_stop vm0
