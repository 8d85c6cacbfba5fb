# tdp-npt: vtier_tdp.ko on a live L2 guest under KVM with nested paging (NPT).
# The ABI's error paths; unloading while a client holds the device; Telescope
# over the `tdp` source finding a 64 MiB hot set inside a 2 GiB guest and
# following it when it moves, with linear for cost; a VM that exits while
# attached. Files come from tests/kmod/vm-tdp.sh (--l1-file): the module in
# /opt/vtier/, vtier-bench with its libraries, tdp-abi-test.
# The profiler first runs TDP_WARMUP windows on the idle guest (a profiler is
# attached before an application starts), then hot set A starts.
# Then both profilers again on hot set B, without and with the TLB flush once
# per window (VTIER_TDP_FLUSH_TLB): convergence and cost side by side, one
# RESULT-TDP line per profiler and run (vtier-bench tdp --result-tag).
# Knobs (defaults below): windows per profiler, the window after which the hot
# set moves, windows allowed to converge, hot set size, guest RAM, sampling
# interval and window, windows per profiler of the flush comparison (its
# figures are the flush's count and cost a window: 10 windows measure them)
# and of the A/B below. Sampling is 10x the paper's (50 ms / 1 s) because L2 runs
# nested under TCG, ~1-2 M accesses/s over the hot set (measured each run).
TDP_WINDOWS=${TDP_WINDOWS:-30}
TDP_SWITCH=${TDP_SWITCH:-15}
TDP_WARMUP=${TDP_WARMUP:-5}
TDP_WITHIN=${TDP_WITHIN:-10}
TDP_HOT=${TDP_HOT:-64M}
TDP_MEM=${TDP_MEM:-2G}
TDP_SAMPLE_US=${TDP_SAMPLE_US:-50000}
TDP_WINDOW_US=${TDP_WINDOW_US:-1000000}
TDP_BENCH_ARGS=${TDP_BENCH_ARGS:---regions}
TDP_FLUSH_WINDOWS=${TDP_FLUSH_WINDOWS:-10}
TDP_AB_WINDOWS=${TDP_AB_WINDOWS:-20}
KO=/opt/vtier/vtier_tdp.ko
BENCH="env LD_LIBRARY_PATH=/opt/vtier/lib /opt/vtier/bin/vtier-bench"

tdp_dmesg_clean() {
    if dmesg | grep -E 'BUG:|WARNING:|Oops|general protection|KASAN|kmemleak|vtier_tdp.*(err|layout)'; then
        tb_fail "kernel log shows a problem (above)"
    fi
}

tb_step "load $KO"
[ -f "$KO" ] || tb_fail "$KO missing (run through tests/kmod/vm-tdp.sh)"
insmod "$KO"
[ -c /dev/vtier-tdp ] || tb_fail "no /dev/vtier-tdp after insmod"
mount -t debugfs none /sys/kernel/debug 2>/dev/null || true

tb_step "ABI error paths (own VM, no vCPU)"
tdp-abi-test errors

tb_step "unload while a client holds the device"
exec 3<> /dev/vtier-tdp
if rmmod vtier_tdp 2> /tmp/rmmod.err; then
    tb_fail "rmmod succeeded while /dev/vtier-tdp was open"
fi
echo "rmmod refused: $(cat /tmp/rmmod.err)"
exec 3>&-
rmmod vtier_tdp
insmod "$KO"
tdp_dmesg_clean

# Automatic NUMA balancing (on by default in this 3-node L1) unmaps QEMU's pages
# to take hinting faults, and KVM zaps their NPT entries on each such change:
# the entries come back absent and their accessed bits are lost. vtier places
# memory itself, so it runs with NUMA balancing off.
echo "L1 numa_balancing was $(cat /proc/sys/kernel/numa_balancing); setting 0"
echo 0 > /proc/sys/kernel/numa_balancing

# Before THP goes off: the test's 2 MiB leaves need THP-backed memory.
tb_step "ABI on a VM of our own whose vCPU writes known pages (THP $(cat /sys/kernel/mm/transparent_hugepage/enabled))"
tdp-abi-test guest
tdp_dmesg_clean

# 4 KiB NPT leaves: KVM maps a 2 MiB NPT leaf only where QEMU's memory is a THP.
echo never > /sys/kernel/mm/transparent_hugepage/enabled
tb_l2_start vm0 --mem "$TDP_MEM" --no-wait
sleep 2
pid=$(tb_l2_pid vm0)
if ! kill -0 "$pid" 2> /dev/null; then
    wait "$pid" || echo "QEMU exited with status $?"
    dmesg | tail -20
fi
tb_l2_wait vm0
tb_l2_check_kvm vm0

tb_step "L2 vm0: two workloads (A and B), hot sets of $TDP_HOT each"
for w in a b; do
    tb_l2 vm0 "vtier-workload serve --size 128M --seed $([ $w = a ] && echo 11 || echo 12) --socket /run/$w.sock > /run/$w.log 2>&1 & echo \$! > /run/$w.pid"
done
for w in a b; do
    tb_l2 vm0 "vtier-workload ctl --socket /run/$w.sock --wait 120 info"
    tb_l2 vm0 "vtier-workload ctl --socket /run/$w.sock phase dist=uniform ranges=0-$TDP_HOT accesses=1000"
    tb_l2 vm0 "vtier-workload ctl --socket /run/$w.sock hotset source=ranges out=/run/hot-$w.txt"
    tb_l2 vm0 "cat /run/hot-$w.txt" | grep '^gpa=' > "/tmp/hot-$w.txt"
    echo "hot set $w: $(wc -l < /tmp/hot-$w.txt) extents"
    cp "/tmp/hot-$w.txt" "$TB_OUT/"
done

tb_step "L2 access rate (calibration: 500000 uniform accesses over the hot set)"
tb_l2 vm0 -t 300 "vtier-workload ctl --socket /run/a.sock phase dist=uniform ranges=0-$TDP_HOT accesses=500000"

tb_step "ABI on the live VM"
tdp-abi-test live "$pid"

tb_step "Telescope over tdp: $TDP_WARMUP windows on the idle guest, hot set A, B after window $TDP_SWITCH; then linear"
tb_l2 vm0 'grep -E "thp_(fault_alloc|collapse_alloc|migration)|compact_(migrate_scanned|success)|pgmigrate_success" /proc/vmstat; cat /sys/kernel/mm/transparent_hugepage/enabled' || true
cat > /tmp/start.sh <<EOS
. /tb/in/config.env; . /tb/in/tb.sh
tb_l2 vm0 'setsid vtier-workload ctl --socket /run/a.sock phase dist=uniform ranges=0-$TDP_HOT duration_ms=3600000 > /run/pa.log 2>&1 &'
EOS
cat > /tmp/switch.sh <<EOS
. /tb/in/config.env; . /tb/in/tb.sh
tb_l2 vm0 'kill -STOP \$(cat /run/a.pid); setsid vtier-workload ctl --socket /run/b.sock phase dist=uniform ranges=0-$TDP_HOT duration_ms=3600000 > /run/pb.log 2>&1 &'
EOS
$BENCH tdp --qmp "/run/tb/vm0.qmp" --profiler telescope-bounded --profiler linear \
    --windows "$TDP_WINDOWS" --sample-us "$TDP_SAMPLE_US" --window-us "$TDP_WINDOW_US" \
    --hotset /tmp/hot-a.txt --hotset /tmp/hot-b.txt \
    --warmup "$TDP_WARMUP" --start-cmd "sh /tmp/start.sh" \
    --switch-after "$TDP_SWITCH" --switch-cmd "sh /tmp/switch.sh" \
    --expect-within "$TDP_WITHIN" --result-tag main ${TDP_BENCH_ARGS:-} > /tmp/bench.txt 2>&1 || bench_rc=$?
cat /tmp/bench.txt
cp /tmp/bench.txt "$TB_OUT/tdp-bench.txt"

tb_step "the other profilers over tdp, unchanged (hot set B, 5 windows each, scored, no bar)"
$BENCH tdp --qmp "/run/tb/vm0.qmp" --profiler telescope-flex --profiler scan --profiler damon-like \
    --windows 5 --sample-us "$TDP_SAMPLE_US" --window-us "$TDP_WINDOW_US" \
    --hotset /tmp/hot-b.txt > /tmp/bench-others.txt 2>&1 || others_rc=$?
grep -v '^  region' /tmp/bench-others.txt
cp /tmp/bench-others.txt "$TB_OUT/tdp-bench-others.txt"
[ "${others_rc:-0}" = 0 ] || tb_fail "vtier-bench tdp (other profilers): exit status $others_rc"
tb_step "TLB flush once per window, off then on: telescope-bounded and linear on hot set B, $TDP_FLUSH_WINDOWS windows each"
for f in off on; do
    $BENCH tdp --qmp "/run/tb/vm0.qmp" --profiler telescope-bounded --profiler linear \
        --windows "$TDP_FLUSH_WINDOWS" --sample-us "$TDP_SAMPLE_US" --window-us "$TDP_WINDOW_US" \
        --hotset /tmp/hot-b.txt --result-tag "flush-$f" $([ $f = on ] && echo --flush-tlb) \
        > "/tmp/bench-flush-$f.txt" 2>&1 || flush_rc=$?
    grep -v '^  region' "/tmp/bench-flush-$f.txt"
    cp "/tmp/bench-flush-$f.txt" "$TB_OUT/tdp-bench-flush-$f.txt"
    [ "${flush_rc:-0}" = 0 ] || tb_fail "vtier-bench tdp (flush $f): exit status $flush_rc"
done
# A/B (not in make check): TB_TDP_BENCH_B=PATH given to tests/vtierd/run-scenario
# copies another tree's vtier-bench in as vtier-bench-b; both then attach
# afresh to hot set B, as the flush-off run did, alternately, twice each:
# a Telescope change side by side with what it changes, in one L1 (RESULT-TDP
# tags ab-a1, ab-b1, ab-a2, ab-b2: a is this tree). Then the main run's
# protocol for each, alternately, twice each (tags ab-main-a1 ...): both
# workloads stopped (an idle guest) for the warm-up, A continued at window 0,
# stopped and B continued after window TDP_SWITCH. TB_TDP_AB_PROFILER names
# the profiler both sides run (telescope-bounded unless set; a change to
# telescope-flex alone is measured with telescope-flex).
AB_PROFILER=${TB_TDP_AB_PROFILER:-telescope-bounded}
if [ -x /opt/vtier/bin/vtier-bench-b ]; then
    cat > /tmp/ab-start.sh <<EOS
. /tb/in/config.env; . /tb/in/tb.sh
tb_l2 vm0 'kill -CONT \$(cat /run/a.pid)'
EOS
    cat > /tmp/ab-switch.sh <<EOS
. /tb/in/config.env; . /tb/in/tb.sh
tb_l2 vm0 'kill -STOP \$(cat /run/a.pid); kill -CONT \$(cat /run/b.pid)'
EOS
    tb_step "A/B: this tree's vtier-bench (a) and vtier-bench-b (b), $AB_PROFILER on hot set B, $TDP_AB_WINDOWS windows, alternately"
    for round in 1 2; do
        for side in a b; do
            bin=/opt/vtier/bin/vtier-bench
            [ $side = b ] && bin=/opt/vtier/bin/vtier-bench-b
            env LD_LIBRARY_PATH=/opt/vtier/lib "$bin" tdp --qmp "/run/tb/vm0.qmp" \
                --profiler "$AB_PROFILER" --windows "$TDP_AB_WINDOWS" \
                --sample-us "$TDP_SAMPLE_US" --window-us "$TDP_WINDOW_US" \
                --hotset /tmp/hot-b.txt --result-tag "ab-$side$round" \
                > "/tmp/bench-ab-$side$round.txt" 2>&1 || tb_fail "vtier-bench tdp (A/B, $side$round): exit status $?"
            cp "/tmp/bench-ab-$side$round.txt" "$TB_OUT/tdp-bench-ab-$side$round.txt"
            grep -h '^RESULT-TDP' "/tmp/bench-ab-$side$round.txt"
        done
    done
    for round in 1 2; do
        for side in a b; do
            bin=/opt/vtier/bin/vtier-bench
            [ $side = b ] && bin=/opt/vtier/bin/vtier-bench-b
            tb_l2 vm0 'kill -STOP $(cat /run/a.pid) $(cat /run/b.pid)'
            env LD_LIBRARY_PATH=/opt/vtier/lib "$bin" tdp --qmp "/run/tb/vm0.qmp" \
                --profiler "$AB_PROFILER" --windows "$TDP_WINDOWS" \
                --sample-us "$TDP_SAMPLE_US" --window-us "$TDP_WINDOW_US" \
                --hotset /tmp/hot-a.txt --hotset /tmp/hot-b.txt \
                --warmup "$TDP_WARMUP" --start-cmd "sh /tmp/ab-start.sh" \
                --switch-after "$TDP_SWITCH" --switch-cmd "sh /tmp/ab-switch.sh" \
                --result-tag "ab-main-$side$round" ${TDP_BENCH_ARGS:-} \
                > "/tmp/bench-ab-main-$side$round.txt" 2>&1 ||
                tb_fail "vtier-bench tdp (A/B main, $side$round): exit status $?"
            cp "/tmp/bench-ab-main-$side$round.txt" "$TB_OUT/tdp-bench-ab-main-$side$round.txt"
            grep -h '^RESULT-TDP' "/tmp/bench-ab-main-$side$round.txt"
        done
    done
    tb_l2 vm0 'kill -CONT $(cat /run/a.pid) $(cat /run/b.pid)'
fi
# The flag reached the module on the real VM, and only when asked for.
grep -h '^RESULT-TDP' /tmp/bench.txt /tmp/bench-flush-off.txt /tmp/bench-flush-on.txt
if grep -h '^RESULT-TDP .* flush=on ' /tmp/bench-flush-on.txt | grep -q ' flushes=0.00 '; then
    tb_fail "--flush-tlb: a profiler's windows made no TLB flush"
fi
if grep -h '^RESULT-TDP' /tmp/bench-flush-off.txt | grep -vq ' flushes=0.00 '; then
    tb_fail "without --flush-tlb the module flushed"
fi
[ "$(grep -c '^RESULT-TDP' /tmp/bench-flush-on.txt)" = 2 ] || tb_fail "flush on: no RESULT-TDP lines"
tdp_dmesg_clean

tb_l2 vm0 'grep State /proc/$(cat /run/a.pid)/status; grep -E "thp_(fault_alloc|collapse_alloc|migration)|compact_(migrate_scanned|success)|pgmigrate_success|numa" /proc/vmstat' || true
tdp_dmesg_clean

tb_step "the VM exits while attached"
tdp-abi-test orphan "$pid"
wait "$pid" 2> /dev/null || true    # reap the QEMU it killed (status 137)
tb_l2_stop vm0 || true             # its pid is already reaped
tdp_dmesg_clean
rmmod vtier_tdp
[ "${bench_rc:-0}" = 0 ] || tb_fail "vtier-bench tdp: exit status $bench_rc (above)"
tb_step "tdp-npt: done"
