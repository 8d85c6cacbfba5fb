# qemu-patches: the patched QEMU build, its integration tests and bench.
#   make qemu-build      build (or reuse from the cache) the patched QEMU
#   make qemu-build-base the same tree without the series (baseline)
# Builds are cached under $(VTIER_CACHE)/qemu/<hash of inputs>/ by
# qemu-patches/build.sh; a second run only hashes the inputs.

QEMU_BUILD_SH := ./qemu-patches/build.sh

.PHONY: qemu-build qemu-build-base

qemu-build: deps
	$(QEMU_BUILD_SH)

qemu-build-base: deps
	$(QEMU_BUILD_SH) --unpatched
