# bench-move: the NUMA mover's throughput (make bench-move, docs/bench-move.md).
# Boots a 1 GiB L2 VM (L1's THP at Debian's default, always) whose
# vtier-workload fills 512 MiB, then runs `vtier-bench move` on its QEMU
# process: vtier's mover (vt_numa_move per 2 MiB chunk), move_pages loops and
# a memcpy of the same bytes, between node 0 and nodes 1 and 2, alternating
# round by round. First on THP-backed guest RAM; then L1's THP goes to never,
# the same guest RAM's THPs are split into 4 KiB pages in place (debugfs
# split_huge_pages) and the benchmark runs again on 4 KiB-backed memory.
# (An L2 started under THP=never boots and fills its RAM one 4 KiB nested
# page fault at a time: under TCG on a loaded machine it did not boot within
# 240 s.) Prints each table and one RESULT-MOVE line per backing and node pair.
# Absolute MB/s under TCG mean little: read the ratios.
# Knobs (environment of tests/testbed/run; only TB_* reach L1):
# TB_BENCH_MOVE_MIB (default 64), TB_BENCH_MOVE_ROUNDS (5),
# TB_BENCH_MOVE_NODES (1,2).
export LD_LIBRARY_PATH=/opt/vtier/lib
BENCH=/opt/vtier/bin/vtier-bench
MIBS=${TB_BENCH_MOVE_MIB:-64}
ROUNDS=${TB_BENCH_MOVE_ROUNDS:-5}
NODES=${TB_BENCH_MOVE_NODES:-1,2}
THP_FILE=/sys/kernel/mm/transparent_hugepage/enabled
thp_mode() { sed -n 's/.*\[\(.*\)\].*/\1/p' $THP_FILE; }

[ -x "$BENCH" ] || tb_fail "$BENCH missing (tests/vtierd/run-scenario copies it in)"
"$BENCH" move --usage > /dev/null || tb_fail "vtier-bench has no 'move' subcommand (or a library is missing)"
# the kernel's NUMA balancing would move the pages too
echo 0 > /proc/sys/kernel/numa_balancing
THP0=$(thp_mode)
echo "L1 THP at start: $THP0; nodes: $(cat /sys/devices/system/node/online)"
echo always > $THP_FILE
: > /tmp/results

tb_step "L2 bm: 1 GiB, vtier-workload fills 512 MiB (L1 THP $(thp_mode))"
tb_l2_start bm --mem 1G
tb_l2_check_kvm bm
tb_l2 bm 'vtier-workload serve --size 512M > /run/wl.log 2>&1 &'
tb_l2 bm -t 600 'vtier-workload ctl --wait 600 info' > /dev/null || tb_fail "bm: workload did not start"
pid=$(tb_l2_pid bm)

bench() { # BACKING [OPTIONS]
    b=$1
    shift
    st=0
    out=$("$BENCH" move --pid "$pid" --guest-size 1G --backing "$b" \
        --region-mib "$MIBS" --rounds "$ROUNDS" --nodes "$NODES" "$@" 2>&1) || st=$?
    echo "$out"
    echo "$out" | grep '^RESULT-MOVE' >> /tmp/results || true
    [ "$st" = 0 ] || tb_fail "vtier-bench move ($b) failed: $(echo "$out" | tail -1)"
}

tb_step "backing thp: QEMU pid $pid, $(grep -E '^AnonHugePages' /proc/$pid/smaps_rollup)"
bench thp

tb_step "backing 4k: L1 THP never, guest RAM's THPs split in place"
echo never > $THP_FILE
[ -e /sys/kernel/debug/split_huge_pages ] || mount -t debugfs none /sys/kernel/debug ||
    tb_fail "cannot mount debugfs (split_huge_pages)"
bench 4k --split-thp
echo "QEMU pid $pid after: $(grep -E '^AnonHugePages' /proc/$pid/smaps_rollup)"

out=$(tb_l2 bm -t 600 'vtier-workload ctl verify') || tb_fail "verify failed: $out"
echo "$out"
echo "$out" | grep -q 'bad=0 ' || tb_fail "guest memory changed: $out"
tb_l2_stop bm || echo "tb_l2_stop bm: status $?"
echo "$THP0" > $THP_FILE
tb_step "result"
cat /tmp/results
[ "$(grep -c '^RESULT-MOVE' /tmp/results)" -ge 2 ] || tb_fail "fewer than two RESULT-MOVE lines"
tb_step "bench-move: done"
