# exec-storm: the L2 hang's reproducer (docs/testbed.md, "A hang, not a
# reset"). Two guests as in two-vms, each running the workload's server, and
# one loop per guest sending exec requests back to back for TB_STORM_S seconds
# (default 600): an empty command, one whose output (5000 lines) is checked,
# and a short workload phase. The first request not answered fails the run
# with the hang report (its virtio queues: which side lost the message).
# Not in make check: `tests/testbed/soak --n N exec-storm`, or
# `make testbed-run SCENARIO=exec-storm`. One line:
#   RESULT-STORM requests=... seconds=... per_s=...
dur=${TB_STORM_S:-600}
tb_l2_start vm0 --mem 512M
tb_l2_start vm1 --mem 512M --memdev memfd
for vm in vm0 vm1; do
    tb_l2 "$vm" 'vtier-workload serve --size 128M > /run/wl.log 2>&1 &'
    tb_l2 "$vm" 'vtier-workload ctl --wait 120 info' > /dev/null
done

# storm VM: requests until the deadline; the count in /tmp/storm.VM
storm() {
    local vm n end out
    vm=$1
    n=0
    end=$(( $(tb_uptime_s) + dur ))
    while [ "$(tb_uptime_s)" -lt "$end" ]; do
        case $((n % 3)) in
        0) tb_l2 "$vm" -t 30 true || tb_fail "$vm: request $n: true failed" ;;
        1) out=$(tb_l2 "$vm" -t 30 'seq 1 5000') || tb_fail "$vm: request $n: seq failed"
           [ "$(echo "$out" | wc -l)" = 5000 ] && [ "$(echo "$out" | tail -1)" = 5000 ] ||
               tb_fail "$vm: request $n: seq's output arrived cut or garbled" ;;
        2) tb_l2 "$vm" -t 60 'vtier-workload ctl phase dist=zipf accesses=20000 write_pct=30' \
               > /dev/null || tb_fail "$vm: request $n: workload phase failed" ;;
        esac
        n=$((n + 1))
    done
    echo "$n" > "/tmp/storm.$vm"
}

tb_step "exec storm: one request loop per guest for $dur s"
t0=$(tb_uptime_s)
jobs=""
for vm in vm0 vm1; do
    storm "$vm" &
    jobs="$jobs $!"
done
failed=0
for j in $jobs; do
    wait "$j" || failed=1
done
[ "$failed" = 0 ] || tb_fail "exec storm: a request loop failed (its VTIER-TB-FAIL line above)"
secs=$(( $(tb_uptime_s) - t0 ))
total=$(( $(cat /tmp/storm.vm0) + $(cat /tmp/storm.vm1) ))
for vm in vm0 vm1; do
    out=$(tb_l2 "$vm" -t 300 'vtier-workload ctl verify') || tb_fail "$vm: verify failed: $out"
    echo "$vm: $out"
done
echo "RESULT-STORM requests=$total seconds=$secs per_s=$(awk -v n="$total" -v s="$secs" 'BEGIN { printf "%.1f", n / (s ? s : 1) }')"
tb_l2_stop vm0
tb_l2_stop vm1
tb_step "exec-storm: done"
