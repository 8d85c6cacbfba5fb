# The testbed runner's own selftests (tests/testbed/selftest-runner): make
# check runs the short form (suite vm, test vm-runner-selftest); all the cases:
#   make check-runner-selftest
.PHONY: check-runner-selftest
check-runner-selftest: build testbed-images
	$(MESON) test -C $(BUILD) --suite vm-runner-full --print-errorlogs
