# host-kmod (host-kmod/, docs/host-kmod.md): vtier_tdp.ko for the testbed's L1 kernel.
#   make kmod             build it into $(BUILD)/kmod/host-kmod/ (sources copied there,
#                         so the tree stays clean), against `tests/testbed/images kdir`
#   make check-kmod       the VM test: tests/kmod/vm-tdp.sh tdp-npt (module in L1,
#                         an L2 guest under KVM/NPT, Telescope over tdp)
#   make checkpatch-kmod  scripts/checkpatch.pl --strict on the module's sources
#                         (checkpatch from the L1 kernel's source, fetched once)

KMOD_BUILD = $(BUILD)/kmod
KMOD_KDIR ?= $(shell tests/testbed/images kdir)
CHECKPATCH ?= $(or $(VTIER_CACHE),/var/cache/vtier)/checkpatch/checkpatch.pl

.PHONY: kmod check-kmod checkpatch-kmod

kmod: testbed-images
	host-kmod/build.sh $(KMOD_BUILD) $(KMOD_KDIR)

check-kmod: build kmod
	tests/kmod/vm-tdp.sh --build $(BUILD) tdp-npt

checkpatch-kmod:
	[ -x $(CHECKPATCH) ] || host-kmod/fetch-checkpatch.sh $(dir $(CHECKPATCH))
	$(CHECKPATCH) --strict --no-tree -f $(wildcard host-kmod/*.c host-kmod/*.h) include/vtier/tdp.h
