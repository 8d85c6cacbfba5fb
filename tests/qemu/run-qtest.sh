#!/bin/sh
# Runs the series' qtest (tests/qtest/vtier-memory-tiers-test, with its fake
# agent) from the cached build of the patched QEMU. TAP on stdout.
if [ -z "$VTIER_QEMU_DIR" ]; then
    echo "1..0 # SKIP VTIER_QEMU_DIR not set: run \`make check-qemu\`"
    exit 77
fi
cd "$VTIER_QEMU_DIR/build" || exit 1
[ -x tests/qtest/vtier-memory-tiers-test ] || {
    echo "Bail out! $VTIER_QEMU_DIR has no tests/qtest/vtier-memory-tiers-test"
    exit 1
}
QTEST_QEMU_BINARY=./qemu-system-x86_64 exec ./tests/qtest/vtier-memory-tiers-test --tap -k
