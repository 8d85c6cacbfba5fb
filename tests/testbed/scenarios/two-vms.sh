# two-vms: two L2 guests under KVM at once in one L1 host, each running the
# workload concurrently (zipf with writes), both verified page by page.
# Booted one after the other: two L2 kernels booting at once on L1's two
# vCPUs hit the emulator's nested-SVM faults far more often (docs/testbed.md,
# "Emulator faults"); they run side by side from then on.
tb_l2_start vm0 --mem 512M
tb_l2_start vm1 --mem 512M --memdev memfd
tb_step "both guests answer"
for vm in vm0 vm1; do
    tb_l2_check_kvm "$vm"
    tb_l2 "$vm" 'vtier-workload serve --size 192M > /run/wl.log 2>&1 &'
done
for vm in vm0 vm1; do
    tb_l2 "$vm" 'vtier-workload ctl --wait 120 info'
done
tb_step "phases in both guests at once"
# (wait for these jobs by pid: a bare `wait` would also wait for the guests' QEMUs)
jobs=""
for vm in vm0 vm1; do
    tb_l2 "$vm" -t 300 'vtier-workload ctl phase dist=zipf accesses=200000 write_pct=30 scatter=1' \
        > "/tmp/$vm.phase" 2>&1 &
    jobs="$jobs $!"
done
for j in $jobs; do
    wait "$j" || true
done
for vm in vm0 vm1; do
    cat "/tmp/$vm.phase"
    grep -q '^ok phase' "/tmp/$vm.phase" || tb_fail "phase failed in $vm"
done
for vm in vm0 vm1; do
    out=$(tb_l2 "$vm" -t 300 'vtier-workload ctl verify') || tb_fail "$vm: verify failed: $out"
    echo "$vm: $out"
done
pids="$(tb_l2_pid vm0) $(tb_l2_pid vm1)"
tb_step "QEMU pids in L1: $pids; RSS: $(for p in $pids; do awk '/VmRSS/ {print $2 " kB"}' /proc/$p/status; done | tr '\n' ' ')"
tb_l2_stop vm0
tb_l2_stop vm1
for p in $pids; do
    kill -0 "$p" 2>/dev/null && tb_fail "QEMU $p still running after tb_l2_stop"
done
tb_step "two-vms: done"
