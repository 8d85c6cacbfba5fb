# What vtier costs a guest, against an untiered twin in the same run
# (tests/testbed/scenarios/bench-slowdown.sh, docs/bench-slowdown.md).
#   make bench-slowdown   boot L1, two identical L2 VMs running the same skewed workload at
#                         once, one under vtier; each case twice with the roles swapped,
#                         the A/A case first (the method's noise floor); one
#                         RESULT-SLOWDOWN line per case (about an hour under TCG;
#                         knobs TB_SLOWDOWN_CASES, TB_SLOWDOWN_SECONDS, TB_SLOWDOWN_MEM_MIB,
#                         TB_SLOWDOWN_WL_MIB, TB_SLOWDOWN_HANDOFF_CASES in the scenario). Not part of make check.

.PHONY: bench-slowdown

bench-slowdown: build testbed-images
	tests/vtierd/run-scenario $(BUILD) bench-slowdown --timeout 5400

BENCH_TARGETS += bench-slowdown
