# Fuzzing (tests/fuzz/): every parser of untrusted or operator input.
#   make fuzz                          each target FUZZ_SECONDS under libFuzzer (clang)
#   make fuzz FUZZ_TARGETS="handoff"   only these targets
#   make check-fuzz                    make check's pass: each target FUZZ_CHECK_SECONDS,
#                                      on a temporary copy of its seeds (the tree is
#                                      not written); a crash fails it, its reproducer
#                                      is kept in $(FUZZ_BUILD)/tests/fuzz/artifacts/NAME/
#   make fuzz-merge                    fuzz FUZZ_SECONDS, then add what reaches new
#                                      coverage to tests/fuzz/corpus/NAME/ (minimised)
# Seeds also replay in make check (suite unit); new crashers go to tests/fuzz/corpus/NAME/.
# -max_len per target: tests/fuzz/fuzz-pass.

FUZZ_SECONDS ?= 60
# 24 targets x 5 s (+ 1-2 s each to start), as many at once as the machine has
# cores (FUZZ_JOBS; tests/fuzz/fuzz-pass): about 80 s on 2 cores after the build
# (make fuzz for long runs)
FUZZ_CHECK_SECONDS ?= 5
FUZZ_BUILD ?= build-fuzz
FUZZ_TARGETS ?=

.PHONY: fuzz fuzz-build check-fuzz fuzz-merge
fuzz-build: deps
	[ -f $(FUZZ_BUILD)/build.ninja ] || CC=clang $(MESON) setup $(FUZZ_BUILD) \
	    -Db_sanitize=address,undefined -Db_lundef=false -Dvm_tests=false -Dfuzzing=true \
	    -Dc_args=-fsanitize=fuzzer-no-link
	$(NINJA) -C $(FUZZ_BUILD) build.ninja   # (meson.build changed: targets listed afresh)
	$(MESON) compile -C $(FUZZ_BUILD) $$(cd $(FUZZ_BUILD) && $(NINJA) -t targets all | \
	    grep -o '^tests/fuzz/\(fuzz-[a-z_]*\|[a-z_]*-corpus\)' | grep -v replay | sort -u)

fuzz: fuzz-build
	tests/fuzz/fuzz-pass run $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

check-fuzz: fuzz-build
	tests/fuzz/fuzz-pass check $(FUZZ_BUILD) $(FUZZ_CHECK_SECONDS) $(FUZZ_TARGETS)

fuzz-merge: fuzz-build
	tests/fuzz/fuzz-pass merge $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

CHECK_TARGETS += check-fuzz
