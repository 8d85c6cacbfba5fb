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
