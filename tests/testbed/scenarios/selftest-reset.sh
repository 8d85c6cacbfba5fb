# Runner self-test, expected to FAIL after the last rerun (3 attempts). An emulator
# fault is simulated by a silent hardware reset (writing 6 to the ICH9 reset
# control register, I/O port 0xcf9): no kernel message, as with a triple
# fault. Attempt 1 resets an L2 guest, the later ones reset L1 itself; all
# must be recognised as emulator resets, rerun, and the last one fail.
reset='printf "\006" | dd of=/dev/port bs=1 seek=3321 count=1 2>/dev/null; sleep 30'
if [ "$TB_ATTEMPT" = 1 ]; then
    tb_l2_start vm0 --mem 256M
    tb_step "selftest: resetting L2 vm0 on purpose"
    tb_l2 vm0 "$reset"
    tb_step "selftest: not reached (L2)"
else
    tb_step "selftest: resetting L1 on purpose"
    sh -c "$reset"
    tb_step "selftest: not reached (L1)"
fi
