# The remote tier (host-agent/remote/README.md).
#   make check-remote    its datagram transports between two network namespaces
#                        (tests/remote/test-transport.sh: AF_XDP with need_wakeup
#                        on and off and busy-poll, UDP, the fallback, garbage
#                        frames counted; RESULT-REMOTE-TRANSPORT lines), then
#                        three vtier-memd and one VM's client with two copies
#                        (tests/remote/test-memd.sh: a server killed -9 in a read
#                        storm, repair, restart, a rogue client, garbage; every
#                        page compared; the RESULT-REMOTE line); root
CHECK_TARGETS += check-remote

.PHONY: check-remote
check-remote: build
	$(MESON) test -C $(BUILD) --suite remote --print-errorlogs

# make bench-remote      the remote tier's 4 KiB page fetch side by side on one
#                        veth pair between two network namespaces: vtier-memd on
#                        AF_XDP (copy mode) and on UDP, a TCP baseline asleep
#                        and spinning (tcp, tcp-busy), a local
#                        compressed tier, both ends on AF_XDP (afxdp2) and with
#                        busy-poll (afxdp2-busy) (tests/remote/bench-remote.sh;
#                        p50/p99, pages/s, pages per server core-second, client
#                        CPU per page; RESULT-REMOTE-BENCH lines, medians of 7
#                        rounds, about 2-3 minutes; knobs BENCH_REMOTE_* in the
#                        script).
#                        Then vtierd itself (make bench-remote-vtierd): its faults
#                        served by three vtier-memd over a bridge, vtierd's end on
#                        UDP, on AF_XDP (copy) and AF_XDP with busy-poll, fault
#                        and fetch p50/p99 as vtierd's stats say them
#                        (tests/qemu/bench_remote_vtierd.py, the patched QEMU's
#                        test guest; RESULT-REMOTE-VTIERD-BENCH lines, medians of
#                        5 rounds, about a minute; knobs BENCH_REMOTE_VTIERD_*).
#                        Root. Not part of make check.
.PHONY: bench-remote bench-remote-vtierd
bench-remote: build bench-remote-vtierd
	tests/remote/bench-remote.sh $(BUILD)/host-agent/tools/vtier-memd \
	    $(BUILD)/host-agent/tools/vtier-bench $(BUILD)/host-agent/remote/memd_steer.bpf.o

bench-remote-vtierd: build qemu-build
	VTIER_TEST_BUILD=$(abspath $(BUILD))/tests/qemu \
	VTIER_QEMU_DIR=$$($(QEMU_BUILD_SH) --print-dir) PYTHONPATH=tests/qemu \
	    tests/qemu/bench_remote_vtierd.py $(BUILD)/host-agent/remote/memd_steer.bpf.o

BENCH_TARGETS += bench-remote
