# Runner self-test, expected to FAIL after its one rerun (TB_EMULATOR_ATTEMPTS,
# 2 attempts). An emulator fault is simulated by a real triple fault, the
# signature the runner wants (tb/rerun.py): sysrq b with the kernel's reboot
# method "triple" (an empty IDT, then int3), which prints no "reboot:
# Restarting" and no panic. Attempt 1 triple-faults an L2 guest that vtier
# never touched (L1's KVM puts its vCPU back at the reset vector: rerun);
# attempt 2 triple-faults L1 itself (TCG logs "Triple fault": proved, but the
# last attempt, so the run fails).
fault='echo triple > /sys/kernel/reboot/type; echo b > /proc/sysrq-trigger; sleep 30'
if [ "$TB_ATTEMPT" = 1 ]; then
    tb_l2_start vm0 --mem 256M --append reboot=t
    tb_step "selftest: triple-faulting L2 vm0 on purpose"
    tb_l2 vm0 "$fault"
    tb_step "selftest: not reached (L2)"
else
    tb_step "selftest: triple-faulting L1 on purpose"
    sh -c "$fault"
    tb_step "selftest: not reached (L1)"
fi
