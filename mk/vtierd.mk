# vtierd and vtierctl (host-agent/daemon, host-agent/tools, docs/vtierd.md).
#   make demo-vm        boot the testbed, run an L2 VM with a hot set, attach vtierd and
#                       watch the hot set land on the DRAM node (first run: image build,
#                       a few minutes; then about 2-3 minutes)
#   make check-vtierd   just the vtierd scenarios in the testbed (meson suite vtierd-vm:
#                       vm-vtierd-tiering with damon-kernel, vm-vtierd-tdp with host-kmod,
#                       each in an L1 of its own); make check (check-vm) runs both in
#                       suite vm's shared L1 (docs/testbed.md, "Suites")
#   make vtierd-table   run both scenarios and print one table: damon-kernel and
#                       Telescope over tdp side by side (tests/vtierd/result-table)

#   make check-vtierd-ctier  vtierd as the patched QEMU's tier agent in the testbed:
#                       compressed tiers, zswap, kill -9 (tests/testbed/scenarios/
#                       vtierd-ctier.sh in an L1 of its own; about 4 min under TCG;
#                       make check-vm runs it in the shared L1)

.PHONY: demo-vm check-vtierd vtierd-table check-vtierd-ctier

demo-vm: build testbed-images
	@echo "vtier demo: an L2 VM (1 GiB, hot set 64 MiB) on a 3-tier L1 host (DRAM, CXL-like,"
	@echo "PMEM-like nodes); vtierd moves the hot set to DRAM under a 256 MiB DRAM limit."
	@echo "Boots L1 under TCG (~15 s) and the L2 VM (~15-20 s), then a live table per window."
	tests/vtierd/run-scenario $(BUILD) vtierd-demo --timeout 900

check-vtierd: build testbed-images
	$(MESON) test -C $(BUILD) --suite vtierd-vm --print-errorlogs

vtierd-table: build testbed-images
	tests/vtierd/result-table $(BUILD)

check-vtierd-ctier: build testbed-images qemu-build
	$(MESON) test -C $(BUILD) --suite vtierd-ctier --print-errorlogs
