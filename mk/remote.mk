# The remote tier (host-agent/remote/README.md).
#   make check-remote    its datagram transports between two network namespaces
#                        (tests/remote/test-transport.sh: AF_XDP with need_wakeup
#                        on and off and busy-poll, UDP, the fallback, garbage
#                        frames counted; RESULT-REMOTE-TRANSPORT lines); root
CHECK_TARGETS += check-remote

.PHONY: check-remote
check-remote: build
	$(MESON) test -C $(BUILD) --suite remote --print-errorlogs
