# Testbed (tests/testbed/, docs/testbed.md): an L1 host VM under TCG with
# three memory tiers, L2 guests under KVM with nested paging inside it.
#   make testbed-images              build the cached images (VTIER_CACHE, default /var/cache/vtier)
#   make check-vm                    the real-VM tests (meson suite "vm"); part of make check
#   make testbed-run SCENARIO=NAME   run tests/testbed/scenarios/NAME.sh (the demo uses this)
#   make testbed-shell               interactive shell in L1 (tb_l2_shell NAME for an L2 console)

SCENARIO ?= smoke

.PHONY: testbed-images check-vm testbed-run testbed-shell

testbed-images: deps
	tests/testbed/images path

check-vm: build testbed-images
	$(MESON) test -C $(BUILD) --suite vm --print-errorlogs

testbed-run: build testbed-images
	tests/testbed/run --build $(BUILD) $(SCENARIO)

testbed-shell: build testbed-images
	tests/testbed/run --build $(BUILD) --shell shell

CHECK_TARGETS += check-vm
