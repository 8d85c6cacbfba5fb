#!/usr/bin/env bash
# Build QEMU 10.0.2 (x86_64-softmmu) with the vtier series applied, cached.
#
#   qemu-patches/build.sh              build if needed; print the build dir
#   qemu-patches/build.sh --unpatched  the same tree without the series
#   qemu-patches/build.sh --print-dir  print the build dir, build nothing
#   qemu-patches/build.sh --src DIR    unpack + apply into DIR (a git tree
#                                      with one commit per patch); no build
#
# The recipe (tarball from `apt-get source`, checked against BASE; the cache
# in $VTIER_CACHE/qemu/<key>/, <key> hashing RECIPE, the tarball, the meson
# version, the configure flags, the targets and every patch; ccache) is
# scripts/qemu-build.sh, shared with tests/testbed/qemu-l1/build.sh. This
# file says what differs: the series here, the configuration and the qtests.
#
# The printed directory holds build/qemu-system-x86_64 and the qtests of
# QTEST_TARGETS (vtier-memory-tiers-test only when patched). Run from
# there, QEMU finds its firmware in build/qemu-bundle/; QEMU's own qtests
# also need -L for Debian's qemu-system-data, seabios and ipxe-qemu
# (tests/qemu/run-qtest.sh).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
QB_NAME=qemu-patches/build.sh
QB_HELP_LINES=20
QB_KEY_PREFIX=
# Bump when the recipe below changes in a way that changes the output.
RECIPE=6

# shellcheck source=BASE
. <(grep -E '^[A-Z_0-9]+=' "$here/BASE")

CONFIGURE_FLAGS=(
    --target-list=x86_64-softmmu
    --without-default-features
    --enable-kvm --enable-tcg
    --enable-fdt=system
    --enable-vhost-user --enable-vhost-net
    --disable-tools --disable-docs --disable-guest-agent --disable-user
    --disable-download --disable-install-blobs
    --enable-werror
)
NINJA_TARGETS=(qemu-system-x86_64)
# The series' qtest, and QEMU's own qtests that exercise what the series
# touches (QMP/HMP commands, QOM properties, memory backends, migration);
# make check-qemu runs each (tests/qemu/meson.build).
QTEST_TARGETS=(
    tests/qtest/vtier-memory-tiers-test
    tests/qtest/qmp-cmd-test
    tests/qtest/test-hmp
    tests/qtest/qom-test
    tests/qtest/numa-test
    tests/qtest/device-introspect-test
    tests/qtest/migration-test
)

qb_list_patches() {
    find "$here" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' \
        ! -name '0000-cover-letter.patch' | LC_ALL=C sort
}

# shellcheck source=../scripts/qemu-build.sh
. "$here/../scripts/qemu-build.sh"
