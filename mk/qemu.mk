# qemu-patches (docs/qemu-patches.md): the patched QEMU, its integration
# tests and the hand-off latency benchmark.
#   make qemu-build       build (or reuse from the cache) the patched QEMU
#   make qemu-build-base  the same tree without the series (baseline)
#   make check-qemu       header in sync, integration tests (suite "qemu")
#   make bench-handoff    fault round trip through the hand-off (docs/bench-handoff.md)
# Builds are cached under $(VTIER_CACHE)/qemu/<hash of inputs>/ by
# qemu-patches/build.sh; a second run only hashes the inputs.

QEMU_BUILD_SH := ./qemu-patches/build.sh

.PHONY: qemu-build qemu-build-base check-qemu

qemu-build: deps
	$(QEMU_BUILD_SH)

qemu-build-base: deps
	$(QEMU_BUILD_SH) --unpatched

# The series carries a copy of the hand-off ABI: it must be this one.
check-qemu: build qemu-build
	@qdir=$$($(QEMU_BUILD_SH) --print-dir) && \
	cmp include/vtier/handoff.h $$qdir/src/include/system/vtier-handoff.h || \
	{ echo "check-qemu: include/vtier/handoff.h differs from the series' include/system/vtier-handoff.h"; exit 1; }
	VTIER_QEMU_DIR=$$($(QEMU_BUILD_SH) --print-dir) \
	    $(MESON) test -C $(BUILD) --suite qemu --print-errorlogs

.PHONY: bench-handoff
bench-handoff: build qemu-build
	tests/qemu/bench/run.sh $(BUILD) $$($(QEMU_BUILD_SH) --print-dir)

CHECK_TARGETS += check-qemu
BENCH_TARGETS += bench-handoff
