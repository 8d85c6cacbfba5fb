# One vtierd and 100 patched QEMUs on this host (issue 32 item 2, docs/bench-host.md).
#   make bench-host   attach 100 QEMUs at once (4 running the test guest with a load, the
#                     others paused), vtierctl latency, vtierd CPU and RSS per VM, one QEMU
#                     stopped with SIGSTOP, vtierd killed -9 and re-adopting all; prints
#                     RESULT-HOST and fails when a target of the issue is missed.
#                     VTIER_BENCH_HOST_VMS=N runs smaller. Root; about 4 minutes, ~4 GiB RAM.

.PHONY: bench-host

bench-host: build qemu-build
	tests/qemu/bench/host.sh $(BUILD) $$($(QEMU_BUILD_SH) --print-dir)

BENCH_TARGETS += bench-host
