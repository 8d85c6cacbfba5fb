# What vtier costs a guest, against an untiered twin in the same run
# (tests/testbed/scenarios/bench-slowdown.sh, docs/bench-slowdown.md).
#   make bench-slowdown   boot L1, two identical L2 VMs running the same skewed workload at
#                         once, one under vtier; each case twice with the roles swapped,
#                         the A/A case first (the method's noise floor); one
#                         RESULT-SLOWDOWN line per case (about an hour under TCG;
#                         knobs TB_SLOWDOWN_CASES, TB_SLOWDOWN_SECONDS, TB_SLOWDOWN_MEM_MIB,
#                         TB_SLOWDOWN_WL_MIB, TB_SLOWDOWN_HANDOFF_CASES in the scenario). Not part of make check.
#   make check-slowdown   its short variant (tests/testbed/scenarios/slowdown-check.sh) in an
#                         L1 of its own: A/A, profiling alone, 25 % off DRAM, each within its
#                         target plus the short run's slack; make check-vm runs it in the
#                         shared L1

.PHONY: bench-slowdown check-slowdown

bench-slowdown: build testbed-images
	tests/vtierd/run-scenario $(BUILD) bench-slowdown --timeout 5400

check-slowdown: build testbed-images qemu-build
	$(MESON) test -C $(BUILD) --suite slowdown-check --print-errorlogs

BENCH_TARGETS += bench-slowdown
