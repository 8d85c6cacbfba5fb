# tdp-npt: vtier_tdp.ko on a live L2 guest under KVM with nested paging (NPT).
# The ABI's error paths; unloading while a client holds the device; Telescope
# over the `tdp` source finding a 32 MiB hot set inside a 1 GiB guest and
# following it when it moves, with linear for cost; a VM that exits while
# attached. Files come from tests/kmod/vm-tdp.sh (--l1-file): the module in
# /opt/vtier/, vtier-bench with its libraries, tdp-abi-test.
# Knobs (environment): TDP_WINDOWS (per profiler, 30), TDP_SWITCH (15),
# TDP_WITHIN (10), TDP_HOT (32M), TDP_SAMPLE_US (20000), TDP_WINDOW_US (500000).
TDP_WINDOWS=${TDP_WINDOWS:-30}
TDP_SWITCH=${TDP_SWITCH:-15}
TDP_WITHIN=${TDP_WITHIN:-10}
TDP_HOT=${TDP_HOT:-32M}
TDP_SAMPLE_US=${TDP_SAMPLE_US:-20000}
TDP_WINDOW_US=${TDP_WINDOW_US:-500000}
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

# 4 KiB NPT leaves: KVM maps a 2 MiB NPT leaf only where QEMU's memory is a THP.
echo never > /sys/kernel/mm/transparent_hugepage/enabled
tb_l2_start vm0 --mem 1G --no-wait
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
    tb_l2 vm0 "vtier-workload serve --size 64M --seed $([ $w = a ] && echo 11 || echo 12) --socket /run/$w.sock > /run/$w.log 2>&1 & echo \$! > /run/$w.pid"
done
for w in a b; do
    tb_l2 vm0 "vtier-workload ctl --socket /run/$w.sock --wait 120 info"
    tb_l2 vm0 "vtier-workload ctl --socket /run/$w.sock phase dist=uniform ranges=0-$TDP_HOT accesses=1000"
    tb_l2 vm0 "vtier-workload ctl --socket /run/$w.sock hotset source=ranges out=/run/hot-$w.txt"
    tb_l2 vm0 "cat /run/hot-$w.txt" | grep '^gpa=' > "/tmp/hot-$w.txt"
    echo "hot set $w: $(wc -l < /tmp/hot-$w.txt) extents"
done

tb_step "ABI on the live VM"
tdp-abi-test live "$pid"

tb_step "phase A running; Telescope over tdp, phase change after window $TDP_SWITCH, then linear"
tb_l2 vm0 "setsid vtier-workload ctl --socket /run/a.sock phase dist=uniform ranges=0-$TDP_HOT duration_ms=3600000 > /run/pa.log 2>&1 &"
cat > /tmp/switch.sh <<EOS
. /tb/in/config.env; . /tb/in/tb.sh
tb_l2 vm0 'kill -STOP \$(cat /run/a.pid); setsid vtier-workload ctl --socket /run/b.sock phase dist=uniform ranges=0-$TDP_HOT duration_ms=3600000 > /run/pb.log 2>&1 &'
EOS
sleep 2
$BENCH tdp --qmp "/run/tb/vm0.qmp" --profiler telescope-bounded --profiler linear \
    --windows "$TDP_WINDOWS" --sample-us "$TDP_SAMPLE_US" --window-us "$TDP_WINDOW_US" \
    --hotset /tmp/hot-a.txt --hotset /tmp/hot-b.txt \
    --switch-after "$TDP_SWITCH" --switch-cmd "sh /tmp/switch.sh" \
    --expect-within "$TDP_WITHIN" > /tmp/bench.txt 2>&1 || bench_rc=$?
cat /tmp/bench.txt
cp /tmp/bench.txt "$TB_OUT/tdp-bench.txt"
tdp_dmesg_clean

tb_step "the VM exits while attached"
tdp-abi-test orphan "$pid"
wait "$pid" 2> /dev/null || true    # reap the QEMU it killed (status 137)
tb_l2_stop vm0
tdp_dmesg_clean
rmmod vtier_tdp
[ "${bench_rc:-0}" = 0 ] || tb_fail "vtier-bench tdp: exit status $bench_rc (above)"
tb_step "tdp-npt: done"
