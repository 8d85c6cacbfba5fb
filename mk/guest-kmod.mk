# guest-kmod (guest-kmod/, docs/abi-guest.md): vtier_guest.ko for the testbed's
# L2 kernel (the same Debian 6.12 bpo kernel as L1).
#   make guest-kmod             build it into $(BUILD)/kmod/guest-kmod/ (sources copied
#                               there), against `tests/testbed/images kdir`; in make check
#   make checkpatch-guest-kmod  scripts/checkpatch.pl --strict on the module and its ABI

GUEST_KMOD_BUILD = $(BUILD)/kmod
GUEST_KMOD_KDIR ?= $(shell tests/testbed/images kdir)
GUEST_CHECKPATCH ?= $(or $(VTIER_CACHE),/var/cache/vtier)/checkpatch/checkpatch.pl

.PHONY: guest-kmod checkpatch-guest-kmod

guest-kmod: testbed-images
	nice guest-kmod/build.sh $(GUEST_KMOD_BUILD) $(GUEST_KMOD_KDIR)
	@echo "guest-kmod: $(GUEST_KMOD_BUILD)/guest-kmod/vtier_guest.ko"

checkpatch-guest-kmod:
	[ -x $(GUEST_CHECKPATCH) ] || host-kmod/fetch-checkpatch.sh $(dir $(GUEST_CHECKPATCH))
	$(GUEST_CHECKPATCH) --strict --no-tree -f guest-kmod/vtier_guest.c include/vtier/guest.h

CHECK_TARGETS += guest-kmod
