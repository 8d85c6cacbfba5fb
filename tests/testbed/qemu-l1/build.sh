#!/usr/bin/env bash
# Build the QEMU that runs the testbed's L1 host (TCG, x86_64-softmmu) with
# the fixes in this directory applied, cached. Not the product series
# (qemu-patches/): these patches fix TCG's emulation of SVM/NPT, which only
# the testbed needs (docs/testbed.md, "Emulator faults").
#
#   tests/testbed/qemu-l1/build.sh              build if needed; print the build dir
#   tests/testbed/qemu-l1/build.sh --unpatched  the same tree without the patches
#   tests/testbed/qemu-l1/build.sh --print-dir  print the build dir, build nothing
#   tests/testbed/qemu-l1/build.sh --src DIR    unpack + apply into DIR (a git
#                                               tree, one commit per patch)
#   VTIER_L1_QEMU_DEBUG=1 ...                   also apply debug/*.patch (a log of
#                                               each vCPU's last exceptions and
#                                               vmexits at a triple fault; its own
#                                               cache key)
#
# The recipe is scripts/qemu-build.sh, shared with qemu-patches/build.sh (the
# tarball checked against qemu-patches/BASE, one git commit per patch, ccache).
# Output in $VTIER_CACHE/qemu/l1-<key>/. The configuration is what
# tb/runner.py's qemu_command uses: TCG (multi-threaded), q35 + HMAT,
# virtio-9p (libattr, libcap-ng), virtio-blk, file/unix chardevs, and the
# option ROMs -kernel needs. The printed directory holds
# build/qemu-system-x86_64; run from there, QEMU finds its firmware in
# build/qemu-bundle/.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
QB_NAME=qemu-l1/build.sh
QB_HELP_LINES=24
QB_KEY_PREFIX=l1-
# Bump when the recipe below changes in a way that changes the output.
RECIPE=1

# shellcheck source=../../../qemu-patches/BASE
. <(grep -E '^[A-Z_0-9]+=' "$here/../../../qemu-patches/BASE")

CONFIGURE_FLAGS=(
    --target-list=x86_64-softmmu
    --without-default-features
    --enable-tcg
    --enable-virtfs --enable-attr --enable-cap-ng
    --disable-tools --disable-docs --disable-guest-agent --disable-user
    --disable-download --disable-install-blobs
    --enable-werror
)
NINJA_TARGETS=(qemu-system-x86_64)
QTEST_TARGETS=()

qb_list_patches() {
    find "$here" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' \
        ! -name '0000-cover-letter.patch' | LC_ALL=C sort
    if [ "${VTIER_L1_QEMU_DEBUG:-0}" = 1 ]; then
        find "$here/debug" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' | LC_ALL=C sort
    fi
}

# shellcheck source=../../../scripts/qemu-build.sh
. "$here/../../../scripts/qemu-build.sh"
