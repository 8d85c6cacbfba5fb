# Telemetry engine (host-agent/telemetry/, docs/telemetry.md).
#   make check-telemetry   accuracy regression: Telescope settles within 10 windows
#                          of every phase change on multi-phase (5 TiB, 64 TiB) and subtb
#   make bench-telemetry   the tables and plots of docs/telemetry.md (bench/telemetry.sh)
#   make fuzz              libFuzzer on every fuzz target, FUZZ_SECONDS each (clang)

VTIER_BENCH = $(BUILD)/host-agent/tools/vtier-bench
FUZZ_SECONDS ?= 60
FUZZ_BUILD ?= build-fuzz

.PHONY: check-telemetry bench-telemetry fuzz

check-telemetry: build
	$(VTIER_BENCH) telemetry --scenario multi-phase --scenario multi-phase-5l \
	    --scenario subtb --profiler telescope-bounded --profiler telescope-flex \
	    --expect-converge 10

bench-telemetry: build
	bench/telemetry.sh $(VTIER_BENCH) docs/bench

fuzz: deps
	[ -f $(FUZZ_BUILD)/build.ninja ] || CC=clang $(MESON) setup $(FUZZ_BUILD) \
	    -Db_sanitize=address,undefined -Db_lundef=false -Dvm_tests=false -Dfuzzing=true \
	    -Dc_args=-fsanitize=fuzzer-no-link
	$(MESON) compile -C $(FUZZ_BUILD)
	@set -e; for t in $(FUZZ_BUILD)/tests/fuzz/fuzz-*; do \
	    case $$t in *replay*|*.p) continue;; esac; \
	    name=$${t##*/fuzz-}; corpus=$$(mktemp -d); \
	    cp tests/fuzz/corpus/$$name/* $$corpus/; \
	    echo "==> fuzzing $$name for $(FUZZ_SECONDS) s"; \
	    $$t -max_total_time=$(FUZZ_SECONDS) -max_len=4096 $$corpus; \
	    rm -rf $$corpus; done

CHECK_TARGETS += check-telemetry
BENCH_TARGETS += bench-telemetry
