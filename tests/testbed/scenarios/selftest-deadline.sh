# Runner self-test, expected to FAIL: the scenario outlives its deadline in
# L1 (TB_SCENARIO_TIMEOUT); L1 stops it and its guest and reports the timeout.
tb_l2_start vm0 --mem 256M --no-wait
tb_step "selftest: sleeping past the deadline on purpose"
sleep 100000
