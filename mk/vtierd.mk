# vtierd and vtierctl (host-agent/daemon, host-agent/tools, docs/vtierd.md).
#   make demo-vm        (= make demo) boot the testbed with vtier_tdp.ko, run an L2 VM on
#                       the patched QEMU with its RAM handed off to vtierd: Telescope over
#                       the nested page table finds the hot set, vtierd moves it to DRAM
#                       and the cold set into a compressed tier (lz4), every page verified;
#                       the TCO report and a heatmap (BUILD/demo-heatmap.svg). First run:
#                       image and QEMU builds; then about 5 minutes on 2 cores.
#                       DEMO=stock: stock QEMU, NUMA nodes only, the host's DAMON
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
#   make check-host-share  vtierd's host-wide DRAM sharing in the testbed: three L2 VMs
#                       under one [host] dram_budget, one hot set growing
#                       (tests/testbed/scenarios/host-share.sh in an L1 of its own)
#   make check-vtierd-remote  the remote tier in the testbed: an L2 VM's RAM on three
#                       vtier-memd in L1 network namespaces, one killed -9 during a
#                       read-back (tests/testbed/scenarios/vtierd-remote.sh, its own L1)

.PHONY: demo-vm check-vtierd vtierd-table check-vtierd-ctier check-vtierd-remote check-host-share

DEMO ?= vtier
demo-vm: build testbed-images $(if $(filter stock,$(DEMO)),,qemu-build)
ifeq ($(DEMO),stock)
	@echo "vtier demo (stock): an L2 VM (1 GiB, hot set 64 MiB) under stock QEMU on a 3-tier L1"
	@echo "host (DRAM, CXL-like, PMEM-like nodes); vtierd profiles it with the host's DAMON and"
	@echo "moves the hot set to DRAM under a 256 MiB DRAM limit."
	tests/vtierd/run-scenario $(BUILD) vtierd-demo --timeout 900
else ifeq ($(DEMO),vtier)
	@echo "vtier demo: an L2 VM (256 MiB, workload 32 MiB, hot set 8 MiB) under the patched QEMU"
	@echo "on a 3-tier L1 host, its RAM handed off to vtierd; Telescope over the nested page table"
	@echo "(vtier_tdp.ko) finds the hot set, vtierd moves it to DRAM and the cold set into an lz4"
	@echo "compressed tier. Boots L1 under TCG and the L2 VM, then one line per window."
	tests/vtierd/run-scenario $(BUILD) demo --timeout 900
	@svg=$$(ls -t $(BUILD)/testbed-runs/*-demo-*/out/demo-heatmap.svg 2>/dev/null | head -1); \
	[ -n "$$svg" ] || { echo "demo: no heatmap in $(BUILD)/testbed-runs" >&2; exit 1; }; \
	cp "$$svg" $(BUILD)/demo-heatmap.svg && echo "heatmap: $(abspath $(BUILD))/demo-heatmap.svg"
else
	@echo "make demo: DEMO=$(DEMO): use DEMO=vtier (the default) or DEMO=stock" >&2; exit 2
endif

check-vtierd: build testbed-images
	$(MESON) test -C $(BUILD) --suite vtierd-vm --print-errorlogs

vtierd-table: build testbed-images
	tests/vtierd/result-table $(BUILD)

check-vtierd-ctier: build testbed-images qemu-build
	$(MESON) test -C $(BUILD) --suite vtierd-ctier --print-errorlogs

check-vtierd-remote: build testbed-images qemu-build
	$(MESON) test -C $(BUILD) --suite vtierd-remote --print-errorlogs

check-host-share: build testbed-images
	$(MESON) test -C $(BUILD) --suite host-share --print-errorlogs
