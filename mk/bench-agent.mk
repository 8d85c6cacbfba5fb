# vtierd's CPU per window against guest RAM (host-agent/tools/bench_agent.c,
# docs/bench-agent.md).
#   make bench-agent   `vtier-bench agent` from 1 GiB to 1 TiB of sparse guest RAM in this
#                      process, on vtierd before issue 11 item 3 (built once from git in
#                      $(BUILD)/agent-baseline) and now, size after size; raw output in
#                      docs/results/raw/bench-agent.txt. About 10 minutes (the baseline reads 64 Mi
#                      pages per window at 1 TiB). No VM, no root.

.PHONY: bench-agent

bench-agent: build
	bench/agent-before-after.sh $(BUILD) | tee docs/results/raw/bench-agent.txt

BENCH_TARGETS += bench-agent
