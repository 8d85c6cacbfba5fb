# Runner self-test, expected to FAIL: the L1 kernel crashes; QEMU exits
# (panic=-1, -no-reboot) and the runner reports a run without a result.
tb_step "selftest: crashing L1 on purpose"
echo c > /proc/sysrq-trigger
sleep 60
