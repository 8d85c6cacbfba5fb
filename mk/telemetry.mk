# Telemetry engine (host-agent/telemetry/, docs/telemetry.md).
#   make check-telemetry   accuracy and cost regression: Telescope on the built-in
#                          scenarios and tests/scenarios, each with bars (convergence
#                          windows, P and R, checks per window); about a minute
#   make bench-telemetry   the tables and plots of docs/telemetry.md (bench/telemetry.sh)
#   make bench-telemetry-seeds  check-telemetry's bars at TELEMETRY_SEEDS (default 1..10):
#                          how often each holds

VTIER_BENCH = $(BUILD)/host-agent/tools/vtier-bench

.PHONY: check-telemetry bench-telemetry bench-telemetry-seeds

# the bars and why they are where they are: tests/scenarios/telemetry-bars.sh
check-telemetry: build
	tests/scenarios/telemetry-bars.sh $(VTIER_BENCH)

# the same bars at several seeds (the sampler's and the simulator's random
# streams): how often they hold; about 3 min a seed. TELEMETRY_BARS="NAME ..."
# runs only those bars (their names: tests/scenarios/telemetry-bars.sh)
TELEMETRY_SEEDS ?= 1 2 3 4 5 6 7 8 9 10
bench-telemetry-seeds: build
	tests/scenarios/telemetry-bars.sh --report $(VTIER_BENCH) $(TELEMETRY_SEEDS)

bench-telemetry: build
	bench/telemetry.sh $(VTIER_BENCH) docs/results/raw

CHECK_TARGETS += check-telemetry
BENCH_TARGETS += bench-telemetry bench-telemetry-seeds
