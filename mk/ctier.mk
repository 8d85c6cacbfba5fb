# Compressed tiers (host-agent/movers/ctier_*.c, docs/ctier.md).
#   make bench-ctier   the table of docs/bench-ctier.md: ratio, codec speed, metadata and
#                      userfaultfd fault latency per codec x pool x medium, next to a bare
#                      UFFDIO_COPY; the 1 TiB index. Needs userfaultfd (root). ~1 minute.
#   make bench-mover   faults on stored pages with the real mover idle and busy evicting and
#                      fetching elsewhere, per codec (docs/bench-ctier.md). Root. ~1 minute.

CTIER_BENCH = $(BUILD)/host-agent/tools/vtier-bench

.PHONY: bench-ctier bench-mover

bench-ctier: build
	nice -n 10 $(CTIER_BENCH) ctier

# three rounds per codec, so that host load shows as spread
bench-mover: build
	for round in 1 2 3; do for codec in lz4 zstd:3 deflate:6; do \
		$(CTIER_BENCH) mover --codec $$codec || exit 1; done; done

BENCH_TARGETS += bench-ctier bench-mover
