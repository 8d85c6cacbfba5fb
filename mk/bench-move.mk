# NUMA mover throughput in the testbed (tests/testbed/scenarios/bench-move.sh,
# docs/bench-move.md).
#   make bench-move   boot L1, run `vtier-bench move` on a 1 GiB L2 VM with THP- and 4 KiB-
#                     backed RAM: vtier's mover against move_pages loops and memcpy,
#                     nodes 0<->1 and 0<->2 (about 10-20 minutes under TCG; knobs
#                     TB_BENCH_MOVE_MIB, TB_BENCH_MOVE_ROUNDS, TB_BENCH_MOVE_NODES in the scenario).
#                     Not part of make check.

.PHONY: bench-move

bench-move: build testbed-images
	TB_L2_BOOT_TIMEOUT=$${TB_L2_BOOT_TIMEOUT:-600} \
	    tests/vtierd/run-scenario $(BUILD) bench-move --timeout 2400

BENCH_TARGETS += bench-move
