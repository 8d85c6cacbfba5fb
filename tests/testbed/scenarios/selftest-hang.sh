# Runner self-test, expected to FAIL: L1 stops responding (its own deadline
# logic is frozen); the runner's timeout must kill L1 and its process group.
tb_step "selftest: freezing L1's main script on purpose"
kill -STOP "$(cat /run/tb/l1/pid)"
sleep 100000
