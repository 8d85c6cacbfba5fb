# Testbed (tests/testbed/, docs/testbed.md): an L1 host VM under TCG with
# three memory tiers, L2 guests under KVM with nested paging inside it.
#   make testbed-images              build the cached images (VTIER_CACHE, default /var/cache/vtier)
#                                    and the QEMU that runs L1 (testbed-qemu-l1)
#   make check-vm                    the real-VM tests (meson suite "vm": the scenarios in
#                                    one shared L1, and the runner selftest); part of make check
#   make testbed-run SCENARIO=NAME   run tests/testbed/scenarios/NAME.sh (the demo uses this)
#   make testbed-shell               interactive shell in L1 (tb_l2_shell NAME for an L2 console)
#   make testbed-qemu-l1             build (or find cached) the QEMU that runs L1 (tests/testbed/qemu-l1)
#   make testbed-soak [SOAK_N=10] [SOAK_SCENARIOS=two-vms] [SOAK_L1=patched|stock]
#                                    run scenarios N times, one L1 at a time, and count the
#                                    emulator resets per attempt by kind (tests/testbed/soak)

SCENARIO ?= smoke
SOAK_N ?= 10
SOAK_SCENARIOS ?= two-vms

.PHONY: testbed-images check-vm testbed-run testbed-shell testbed-qemu-l1 testbed-soak

testbed-images: deps testbed-qemu-l1
	tests/testbed/images path

check-vm: build testbed-images
	$(MESON) test -C $(BUILD) --suite vm --print-errorlogs || \
		{ tests/testbed/failure-digest $(BUILD)/meson-logs/testlog.txt; exit 1; }

testbed-run: build testbed-images
	tests/testbed/run --build $(BUILD) $(SCENARIO)

testbed-shell: build testbed-images
	tests/testbed/run --build $(BUILD) --shell shell

testbed-qemu-l1: deps
	tests/testbed/qemu-l1/build.sh

# SOAK_L1=stock soaks Debian's QEMU instead of tests/testbed/qemu-l1's
SOAK_L1 ?= patched
testbed-soak: build testbed-images
	TB_L1_QEMU=$(SOAK_L1) nice -n 10 tests/testbed/soak --build $(BUILD) --n $(SOAK_N) $(SOAK_SCENARIOS)

CHECK_TARGETS += check-vm
