#!/bin/sh
# Runs a qtest from the cached build of the patched QEMU: the series' own
# (vtier-memory-tiers-test, with its fake agent, the default) or one of
# QEMU's that qemu-patches/build.sh builds (QTEST_TARGETS). TAP on stdout.
#   run-qtest.sh [NAME [QTEST ARGS...]]   e.g. run-qtest.sh migration-test -p /x86_64/migration/precopy
#
# QEMU's own qtests start machines with NICs and VGA: their option ROMs and
# VGA BIOS come from Debian's qemu-system-data, seabios and ipxe-qemu
# (scripts/deps/qemu.pkgs), given with -L after the build's own qemu-bundle.
name=${1:-vtier-memory-tiers-test}
[ $# -gt 0 ] && shift
if [ -z "$VTIER_QEMU_DIR" ]; then
    echo "1..0 # SKIP VTIER_QEMU_DIR not set: run \`make check-qemu\`"
    exit 77
fi
cd "$VTIER_QEMU_DIR/build" || exit 1
[ -x "tests/qtest/$name" ] || {
    echo "Bail out! $VTIER_QEMU_DIR has no tests/qtest/$name (qemu-patches/build.sh builds it)"
    exit 1
}
fw=
for d in /usr/share/qemu /usr/share/seabios /usr/lib/ipxe/qemu; do
    [ -d "$d" ] || {
        echo "Bail out! $d missing: install qemu-system-data, seabios and ipxe-qemu (scripts/deps.sh)"
        exit 1
    }
    fw="$fw -L $d"
done
# libqtest takes the target from what follows the last '-' of
# QTEST_QEMU_BINARY, so the -L options cannot go there: a wrapper named
# qemu-system-x86_64 adds them (and exec keeps the pid libqtest kills).
wrap=$(mktemp -d "${TMPDIR:-/tmp}/vtier-qtest-XXXXXX") || exit 1
trap 'rm -rf "$wrap"' EXIT
printf '#!/bin/sh\nexec %s/qemu-system-x86_64%s "$@"\n' "$PWD" "$fw" > "$wrap/qemu-system-x86_64"
chmod +x "$wrap/qemu-system-x86_64"
# PYTHON (a full path: it is exec'd): migration-test's analyze-script case
# runs scripts/analyze-migration.py on a migration stream.
PYTHON=${PYTHON:-$(command -v python3)} QTEST_QEMU_BINARY="$wrap/qemu-system-x86_64" \
    "./tests/qtest/$name" --tap -k "$@"
