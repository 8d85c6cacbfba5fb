# bench-move: the NUMA mover's throughput (make bench-move, docs/bench-move.md).
# For each backing of guest RAM -- 4 KiB pages (L1's THP set to never while
# the L2 VM starts and runs) and THP (L1's default, always) -- boots a 1 GiB
# L2 VM whose vtier-workload fills 512 MiB, then runs `vtier-bench move` on
# its QEMU process: vtier's mover (vt_numa_move per 2 MiB chunk), move_pages
# loops and a memcpy of the same bytes, between node 0 and nodes 1 and 2,
# alternating round by round. Prints each table and one RESULT-MOVE line per
# backing and node pair. Absolute MB/s under TCG mean little: read the ratios.
# Knobs (environment of tests/testbed/run; only TB_* reach L1):
# TB_BENCH_MOVE_MIB (default 64), TB_BENCH_MOVE_ROUNDS (5),
# TB_BENCH_MOVE_NODES (1,2), TB_BENCH_MOVE_BACKINGS ("4k thp").
export LD_LIBRARY_PATH=/opt/vtier/lib
BENCH=/opt/vtier/bin/vtier-bench
MIBS=${TB_BENCH_MOVE_MIB:-64}
ROUNDS=${TB_BENCH_MOVE_ROUNDS:-5}
NODES=${TB_BENCH_MOVE_NODES:-1,2}
THP_FILE=/sys/kernel/mm/transparent_hugepage/enabled

[ -x "$BENCH" ] || tb_fail "$BENCH missing (tests/vtierd/run-scenario copies it in)"
"$BENCH" move --usage > /dev/null || tb_fail "vtier-bench has no 'move' subcommand (or a library is missing)"
# the kernel's NUMA balancing would move the pages too
echo 0 > /proc/sys/kernel/numa_balancing
THP0=$(sed -n 's/.*\[\(.*\)\].*/\1/p' $THP_FILE)
echo "L1 THP at start: $THP0; nodes: $(cat /sys/devices/system/node/online)"
: > /tmp/results
for backing in ${TB_BENCH_MOVE_BACKINGS:-4k thp}; do
    vm=bm$backing
    case $backing in
    4k) echo never > $THP_FILE ;;
    thp) echo always > $THP_FILE ;;
    *) tb_fail "unknown backing $backing" ;;
    esac
    tb_step "backing $backing: L1 THP $(sed -n 's/.*\[\(.*\)\].*/\1/p' $THP_FILE), L2 $vm 1 GiB"
    tb_l2_start "$vm" --mem 1G
    tb_l2_check_kvm "$vm"
    tb_l2 "$vm" 'vtier-workload serve --size 512M > /run/wl.log 2>&1 &'
    tb_l2 "$vm" 'vtier-workload ctl --wait 300 info' > /dev/null || tb_fail "$vm: workload did not start"
    pid=$(tb_l2_pid "$vm")
    echo "QEMU pid $pid: $(grep -E '^AnonHugePages' /proc/$pid/smaps_rollup)"
    out=$(nice -n 0 "$BENCH" move --pid "$pid" --guest-size 1G --backing "$backing" \
        --region-mib "$MIBS" --rounds "$ROUNDS" --nodes "$NODES" 2>&1)
    st=$?
    echo "$out"
    [ "$st" = 0 ] || tb_fail "vtier-bench move ($backing) failed: $(echo "$out" | tail -1)"
    echo "$out" | grep '^RESULT-MOVE' >> /tmp/results
    tb_l2_stop "$vm" || echo "tb_l2_stop $vm: status $?"
done
echo "$THP0" > $THP_FILE
tb_step "result"
cat /tmp/results
[ "$(grep -c '^RESULT-MOVE' /tmp/results)" -ge 2 ] || tb_fail "fewer than two RESULT-MOVE lines"
tb_step "bench-move: done"
