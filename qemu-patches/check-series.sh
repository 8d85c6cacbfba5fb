#!/usr/bin/env bash
# Checks every patch of the series on its own: checkpatch.pl clean (QEMU's own
# script, from the tree), Signed-off-by present, and the tree builds
# (qemu-system-x86_64, plus the qtest once it exists) after each patch in
# turn, with -Werror. Uses an incremental build in a scratch tree, so after
# the first patch each step rebuilds only what the patch touched.
#   qemu-patches/check-series.sh [WORKDIR]   (default $VTIER_CACHE/qemu/check-series)
# VTIER_QEMU_JOBS caps ninja's jobs, as for build.sh (default: ninja's own).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=${1:-${VTIER_CACHE:-/var/cache/vtier}/qemu/check-series}
venv=${VTIER_CACHE:-/var/cache/vtier}/qemu/venv-meson-$(sed -n 's/^MESON_VERSION=//p' "$here/BASE")
flags=$(sed -n '/^CONFIGURE_FLAGS=(/,/^)/p' "$here/build.sh" | sed '1d;$d' | xargs)

"$here/build.sh" --src "$work/src"
[ -x "$venv/bin/python3" ] || { echo "check-series.sh: run qemu-patches/build.sh once first (it makes $venv)"; exit 1; }
cd "$work/src"
mapfile -t commits < <(git rev-list --reverse base..HEAD)
mkdir -p "$work/build"
export CCACHE_DIR=${CCACHE_DIR:-${VTIER_CACHE:-/var/cache/vtier}/qemu/ccache} CCACHE_BASEDIR=$work CCACHE_NOHASHDIR=1
fail=0
for i in "${!commits[@]}"; do
    c=${commits[$i]}
    subject=$(git log -1 --format=%s "$c")
    git checkout -q "$c"
    if ! git log -1 --format=%B "$c" | grep -q '^Signed-off-by: '; then
        echo "not ok $((i + 1)) - $subject: no Signed-off-by"; fail=1; continue
    fi
    if ! git format-patch -1 --stdout "$c" | ./scripts/checkpatch.pl - > "$work/checkpatch.log" 2>&1; then
        echo "not ok $((i + 1)) - $subject: checkpatch"; cat "$work/checkpatch.log"; fail=1; continue
    fi
    (
        cd "$work/build"
        [ -f build.ninja ] || ../src/configure --cc="ccache cc" --python="$venv/bin/python3" $flags
        targets=(qemu-system-x86_64)
        [ -f ../src/tests/qtest/vtier-memory-tiers-test.c ] && targets+=(tests/qtest/vtier-memory-tiers-test)
        nice -n 10 ninja ${VTIER_QEMU_JOBS:+-j"$VTIER_QEMU_JOBS"} "${targets[@]}"
    ) > "$work/build-$((i + 1)).log" 2>&1 || {
        echo "not ok $((i + 1)) - $subject: build failed, see $work/build-$((i + 1)).log"; fail=1; continue
    }
    echo "ok $((i + 1)) - $subject"
done
git checkout -q master 2>/dev/null || true
exit $fail
