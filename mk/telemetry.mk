# Telemetry engine (host-agent/telemetry/, docs/telemetry.md).
#   make check-telemetry   accuracy and cost regression: Telescope on the built-in
#                          scenarios and tests/scenarios, each with bars (convergence
#                          windows, P and R, checks per window); about a minute
#   make bench-telemetry   the tables and plots of docs/telemetry.md (bench/telemetry.sh)

VTIER_BENCH = $(BUILD)/host-agent/tools/vtier-bench

.PHONY: check-telemetry bench-telemetry

TELESCOPE_BOTH = --profiler telescope-bounded --profiler telescope-flex
# the testbed's tdp-npt run samples every 50 ms in 1 s windows
TESTBED_TIMING = --sample-us 50000 --window-us 1000000
SCENARIOS = tests/scenarios

# Each line's bars: settle within N windows of every phase change, P and R
# (means after settling) >= 0.95, mean checks per window at most M. Issue 11's
# target is 5 windows everywhere; scattered-200 meets it since cold pieces
# join their neighbours near the region cap (4 / 4 from a cold start, ~38k
# checks; 10 / 10 and ~43k before). The vm-* scenarios imitate the testbed's
# real-VM run, where v2 once lost precision: their P bar is 0.98 (0.957 and
# 0.65 before the fixes). The islands-* scenarios (issue 33: 150 sub-PUD
# islands moved by unaligned distances, in islands-scattered each by its own)
# hold issue 33's 5 windows since the region cap goes to coarse cuts first
# (10 / 17 windows after the 41 MiB move before, 8-11 in islands-scattered).
check-telemetry: build
	$(VTIER_BENCH) telemetry --scenario multi-phase --scenario multi-phase-5l \
	    --scenario subtb $(TELESCOPE_BOTH) --expect-converge 5 --expect-pr 0.95 \
	    --expect-checks 3000
	$(VTIER_BENCH) telemetry --spec $(SCENARIOS)/mixed-patterns.json $(TELESCOPE_BOTH) \
	    --expect-converge 5 --expect-pr 0.95 --expect-checks 5000
	$(VTIER_BENCH) telemetry --spec $(SCENARIOS)/moved-half.json $(TELESCOPE_BOTH) \
	    --expect-converge 5 --expect-pr 0.95 --expect-checks 25000
	$(VTIER_BENCH) telemetry --spec $(SCENARIOS)/lukewarm.json $(TELESCOPE_BOTH) \
	    --expect-converge 5 --expect-pr 0.95 --expect-checks 3000
	$(VTIER_BENCH) telemetry --spec $(SCENARIOS)/drift.json $(TELESCOPE_BOTH) \
	    --expect-converge 5 --expect-pr 0.95 --expect-checks 15000
	$(VTIER_BENCH) telemetry --spec $(SCENARIOS)/huge-2m.json $(TELESCOPE_BOTH) \
	    --expect-converge 5 --expect-pr 0.95 --expect-checks 6000
	$(VTIER_BENCH) telemetry --spec $(SCENARIOS)/scattered-200.json $(TELESCOPE_BOTH) \
	    --expect-converge 5 --expect-pr 0.95 --expect-checks 42000
	$(VTIER_BENCH) telemetry --spec $(SCENARIOS)/vm-like.json $(TELESCOPE_BOTH) $(TESTBED_TIMING) \
	    --expect-converge 5 --expect-pr 0.98 --expect-checks 12000
	$(VTIER_BENCH) telemetry --spec $(SCENARIOS)/vm-lukewarm.json $(TELESCOPE_BOTH) $(TESTBED_TIMING) \
	    --expect-converge 5 --expect-pr 0.98 --expect-checks 8000
	$(VTIER_BENCH) telemetry --spec $(SCENARIOS)/islands-moved.json $(TELESCOPE_BOTH) \
	    --expect-converge 5 --expect-pr 0.95 --expect-checks 75000
	$(VTIER_BENCH) telemetry --spec $(SCENARIOS)/islands-some-moved.json $(TELESCOPE_BOTH) \
	    --expect-converge 5 --expect-pr 0.95 --expect-checks 70000
	$(VTIER_BENCH) telemetry --spec $(SCENARIOS)/islands-scattered.json $(TELESCOPE_BOTH) \
	    --expect-converge 5 --expect-pr 0.95 --expect-checks 115000

bench-telemetry: build
	bench/telemetry.sh $(VTIER_BENCH) docs/results/raw

CHECK_TARGETS += check-telemetry
BENCH_TARGETS += bench-telemetry
