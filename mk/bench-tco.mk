# TCO placement benchmark in the testbed (tests/testbed/scenarios/bench-tco.sh,
# docs/bench-tco.md).
#   make bench-tco   boot L1, start a 512 MiB L2 VM whose RAM the patched QEMU hands
#                    to vtierd, and run one zipf workload under six placements:
#                    DRAM only, DRAM + one compressed tier, the waterfall over all
#                    tiers, and the analytical TCO model at alpha 0.1, 0.5, 0.9
#                    (TierScape's Fig. 8). About 15 minutes under TCG. Not part of
#                    make check (vtierd-tco there runs the model at alpha 0, 0.5, 1).

.PHONY: bench-tco

bench-tco: build testbed-images qemu-build
	tests/vtierd/run-scenario $(BUILD) bench-tco --timeout 2700

BENCH_TARGETS += bench-tco
