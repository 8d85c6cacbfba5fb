# Telemetry engine (host-agent/telemetry/, docs/telemetry.md).
#   make check-telemetry   accuracy regression: Telescope settles within 10 windows
#                          of every phase change on multi-phase (5 TiB, 64 TiB) and subtb
#   make bench-telemetry   the tables and plots of docs/telemetry.md (bench/telemetry.sh)

VTIER_BENCH = $(BUILD)/host-agent/tools/vtier-bench

.PHONY: check-telemetry bench-telemetry

check-telemetry: build
	$(VTIER_BENCH) telemetry --scenario multi-phase --scenario multi-phase-5l \
	    --scenario subtb --profiler telescope-bounded --profiler telescope-flex \
	    --expect-converge 10

bench-telemetry: build
	bench/telemetry.sh $(VTIER_BENCH) docs/bench

CHECK_TARGETS += check-telemetry
BENCH_TARGETS += bench-telemetry
