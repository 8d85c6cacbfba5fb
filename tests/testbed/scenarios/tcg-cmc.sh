# tcg-cmc: the emulator under L1 must honour cross-modifying code. vtier-cmc
# rewrites an instruction on one vCPU while the other serializes (CPUID) and
# executes it; a stale result means TCG kept a translation that missed a
# store (tests/testbed/qemu-l1/0001, docs/testbed.md "The QEMU that runs L1").
# No guest is started: this tests L1's own CPUs, in TB_CMC_SECONDS (30).
command -v vtier-cmc >/dev/null || tb_skip "vtier-cmc not built"
tb_step "vtier-cmc for ${TB_CMC_SECONDS:-30} s on both vCPUs"
out=$(vtier-cmc "${TB_CMC_SECONDS:-30}") || tb_fail "stale code executed: $out"
tb_step "$out"
