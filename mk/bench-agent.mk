# vtierd's CPU per window against guest RAM (host-agent/tools/bench_agent.c,
# docs/bench-agent.md).
#   make bench-agent   `vtier-bench agent` from 1 GiB to 1 TiB of sparse guest RAM in
#                      this process, residency full and round-robin side by side; raw
#                      output in docs/bench/bench-agent.txt (a few minutes: the full
#                      residency reads 64 Mi pages per window at 1 TiB). No VM, no root.

.PHONY: bench-agent

bench-agent: build
	nice $(BUILD)/host-agent/tools/vtier-bench agent --sizes 1,4,16,64,256,1024 --windows 10 \
	    | tee docs/bench/bench-agent.txt

BENCH_TARGETS += bench-agent
