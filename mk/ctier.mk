# Compressed tiers (host-agent/movers/ctier_*.c, docs/ctier.md).
#   make bench-ctier   the table of docs/bench-ctier.md: ratio, codec speed, metadata and
#                      userfaultfd fault latency per codec x pool x medium, next to a bare
#                      UFFDIO_COPY; the 1 TiB index. Needs userfaultfd (root). ~1 minute.

CTIER_BENCH = $(BUILD)/host-agent/tools/vtier-bench

.PHONY: bench-ctier

bench-ctier: build
	nice -n 10 $(CTIER_BENCH) ctier

BENCH_TARGETS += bench-ctier
