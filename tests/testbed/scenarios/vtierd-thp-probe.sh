# vtierd-thp-probe: what the host's accessed bits show of a VM whose RAM is
# backed by transparent huge pages (L1 THP at the testbed default, always), the
# evidence behind docs/vtierd.md "THP-backed guest RAM". Not part of any suite.
#   1. the NPT census after the VM's RAM is spread over L1's nodes (whole THPs
#      migrate: thp_migration_success, no split)
#   2. the idle VM: which 2 MiB frames read young, per 1 s window (its own
#      kernel's hot pages, seen at 2 MiB)
#   3. hot set A (64 MiB) running: precision and recall of `linear` at 4 KiB
#      against A's guest-physical extents (needs VTIER_TDP_HUGE_LEAVES: without
#      it every 4 KiB probe under a 2 MiB leaf reads absent and recall is 0)
#   tests/vtierd/run-scenario build vtierd-thp-probe \
#       --l1-file build/host-agent/tools/vtier-bench:/usr/local/bin/vtier-bench \
#       --l1-file build/kmod/host-kmod/vtier_tdp.ko:/opt/vtier/vtier_tdp.ko   (make kmod first)
. /src/tests/testbed/scenarios/lib.sh
K=/sys/kernel/mm/transparent_hugepage
thp() {
    echo "THP[$1] $(grep AnonHugePages /proc/$pid/smaps_rollup | tr -s ' ')" \
        "$(grep -E '^thp_(migration_success|migration_split|split_page|collapse_alloc) ' /proc/vmstat | tr '\n' ' ')"
}
bench() { # WINDOWS [HOTSET]
    vtier-bench tdp --pid "$pid" --profiler linear --windows "$1" --window-us 1000000 \
        --sample-us 100000 --regions ${2:+--hotset "$2"} 2>&1 |
        grep -v '^# \(cost\|linear per\)\|^$'
}
insmod /opt/vtier/vtier_tdp.ko
echo 0 > /proc/sys/kernel/numa_balancing
echo "THP: $(cat $K/enabled)"
tb_l2_start vm0 --mem 1G
tb_l2 vm0 'vtier-workload serve --size 512M > /run/wl.log 2>&1 &'
tb_l2 vm0 'vtier-workload ctl --wait 300 info'
mkdir -p /run/vtier && chmod 700 /run/vtier
start_vtierd
vtierd_ready
# attached with mode=off only to read the RAM block's HVA
ctl attach /run/tb/vm0.agent.qmp --name vm0 mode=off
pid=$(tb_l2_pid vm0)
hva=$(ctl status vm0 --get ram.0.hva)
tb_step "1. spread"
thp boot
vtier-tbnuma spread "$pid" "$hva" $((1024 * MIB)) 0,1,2 || true
thp spread
tb_step "2. idle VM: young 2 MiB frames"
bench 3
tb_step "3. hot set A running"
tb_l2 vm0 -t 300 'vtier-workload ctl phase dist=uniform ranges=0-64M accesses=50000 write_pct=10'
tb_l2 vm0 'vtier-workload ctl hotset source=ranges out=/run/hotA.txt'
tb_l2 vm0 'cat /run/hotA.txt' > /tmp/hotA.txt
cat /tmp/hotA.txt
tb_l2 vm0 -t 900 'vtier-workload ctl phase dist=uniform ranges=0-64M duration_ms=30000 write_pct=5' \
    > /tmp/pa.log 2>&1 &
sleep 2
bench 3 /tmp/hotA.txt
wait $! || true
cat /tmp/pa.log
thp end
tb_l2_stop vm0
