# The QEMU build recipe shared by qemu-patches/build.sh (the product series)
# and tests/testbed/qemu-l1/build.sh (the testbed's L1 QEMU), sourced by both
# after they set (bash, set -euo pipefail):
#   QB_NAME            the caller's name, for messages
#   QB_HELP_LINES      the last line of the caller's header comment (--help)
#   QB_KEY_PREFIX      the cache directory's prefix ("" or "l1-")
#   RECIPE             bumped by the caller when its recipe's output changes
#   CONFIGURE_FLAGS, NINJA_TARGETS, QTEST_TARGETS (may be empty): arrays
#   qb_list_patches    a function printing the patches to apply, in order
# and read BASE (TARBALL, TARBALL_SHA256, QEMU_VERSION, DEB_SOURCE_VERSION,
# MESON_VERSION, PYCOTAP_VERSION). Options: --unpatched, --print-dir, --src DIR.
#
# The upstream tarball comes from `apt-get source --download-only` (Debian's
# bookworm-backports package; only the .orig tarball is needed, the debian
# part may 404) and is checked against the sha256 in BASE, then unpacked with
# one git commit per patch. Output lives outside the git tree in
# $VTIER_CACHE/qemu/<prefix><key>/ (default VTIER_CACHE=/var/cache/vtier),
# where <key> hashes RECIPE, the tarball checksum, the meson and pycotap
# versions, the configure flags, the targets and every patch (not this
# script: moving the recipe rebuilds nothing). A second run with the same
# inputs only hashes and prints. ccache (when installed) makes a rebuild after
# a series change much cheaper than a cold build. Run from the printed
# directory, QEMU finds its firmware in build/qemu-bundle/ (SeaBIOS from
# Debian's seabios package, the option ROMs -kernel needs built from source).

cache=${VTIER_CACHE:-/var/cache/vtier}/qemu
jobs=${VTIER_QEMU_JOBS:-$(nproc)}

die() { echo "$QB_NAME: $*" >&2; exit 1; }
log() { echo "$QB_NAME: $*" >&2; }

mode=build
srcdir=
patched=1
while [ $# -gt 0 ]; do
    case "$1" in
        --unpatched) patched=0 ;;
        --print-dir) mode=print ;;
        --src) mode=src; srcdir=${2:?--src needs a directory}; shift ;;
        -h|--help) sed -n "2,${QB_HELP_LINES}p" "$0"; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift
done

patches=()
if [ "$patched" = 1 ]; then
    while IFS= read -r p; do
        patches+=("$p")
    done < <(qb_list_patches)
fi

cache_key() {
    {
        echo "recipe $RECIPE"
        echo "tarball $TARBALL_SHA256"
        echo "meson $MESON_VERSION pycotap $PYCOTAP_VERSION"
        echo "configure ${CONFIGURE_FLAGS[*]}"
        # (no trailing blank without qtests: the key stays what it was)
        echo "targets ${NINJA_TARGETS[*]}${QTEST_TARGETS[*]:+ ${QTEST_TARGETS[*]}}"
        for p in "${patches[@]}"; do
            echo "patch $(basename "$p") $(sha256sum < "$p" | cut -d' ' -f1)"
        done
    } | sha256sum | cut -c1-16
}

key=$(cache_key)
if [ "$patched" = 1 ]; then key="$QB_KEY_PREFIX$key"; else key="${QB_KEY_PREFIX}unpatched-$key"; fi
out=$cache/$key

if [ "$mode" = print ]; then
    echo "$out"
    [ -f "$out/DONE" ] || exit 1
    exit 0
fi

fetch_tarball() {
    local dir=$cache/src tb
    tb=$dir/$TARBALL
    mkdir -p "$dir"
    if [ ! -f "$tb" ]; then
        log "fetching $TARBALL with apt-get source (qemu=$DEB_SOURCE_VERSION)"
        command -v dpkg-source >/dev/null ||
            die "dpkg-dev is missing: run scripts/deps.sh"
        # The .dsc/.debian.tar.xz may be gone from the mirror: only the
        # upstream tarball matters, so judge by its presence, not apt's status.
        (cd "$dir" && apt-get source --download-only \
             "qemu=$DEB_SOURCE_VERSION" >&2) || true
        if [ ! -f "$tb" ]; then
            (cd "$dir" && apt-get source --download-only \
                 -t bookworm-backports qemu >&2) || true
        fi
        [ -f "$tb" ] || die "could not fetch $TARBALL: is deb-src for bookworm-backports configured (scripts/deps.sh adds it)?"
    fi
    local sum
    sum=$(sha256sum "$tb" | cut -d' ' -f1)
    if [ "$sum" != "$TARBALL_SHA256" ]; then
        mv "$tb" "$tb.bad"
        die "$TARBALL has sha256 $sum, BASE says $TARBALL_SHA256 (moved aside to $tb.bad)"
    fi
    echo "$tb"
}

# Unpack into $1 and apply the series, one git commit per patch, so that
# `git log` in the tree shows the series and each step can be built alone.
prepare_src() {
    local dst=$1 tb
    tb=$(fetch_tarball)
    rm -rf "$dst"
    mkdir -p "$dst"
    tar -xf "$tb" -C "$dst" --strip-components=1
    (
        cd "$dst"
        export GIT_AUTHOR_NAME=vtier GIT_AUTHOR_EMAIL=vtier@localhost
        export GIT_COMMITTER_NAME=vtier GIT_COMMITTER_EMAIL=vtier@localhost
        # Debian's +ds tarball drops the prebuilt EDK2 images that
        # pc-bios/meson.build still lists. x86_64 boots SeaBIOS here and we
        # never build the edk2 targets: empty stand-ins let meson configure.
        for f in $(sed -n "s/^ *'\(edk2-[a-z0-9_-]*\.fd\)',\$/\1/p" pc-bios/meson.build); do
            [ -e "pc-bios/$f.bz2" ] || : > "pc-bios/$f.bz2"
        done
        git init -q
        git add -A -f
        git commit -q -m "QEMU $QEMU_VERSION ($TARBALL)"
        git tag base
        if [ "${#patches[@]}" -gt 0 ]; then
            git am -q --keep-cr "${patches[@]}" ||
                die "the series does not apply to $TARBALL (see git am output above)"
        fi
    ) >&2
}

meson_venv() {
    local venv=$cache/venv-meson-$MESON_VERSION
    if [ ! -f "$venv/.complete" ]; then
        log "creating $venv (meson $MESON_VERSION from PyPI)"
        rm -rf "$venv"
        /usr/bin/python3 -m venv "$venv" >&2 ||
            die "python3 -m venv failed: is python3-venv installed (scripts/deps.sh)?"
        "$venv/bin/pip" install -q "meson==$MESON_VERSION" \
            "pycotap==$PYCOTAP_VERSION" >&2 ||
            die "pip install meson==$MESON_VERSION failed (PyPI reachable?)"
        touch "$venv/.complete"
    fi
    echo "$venv"
}

if [ "$mode" = src ]; then
    prepare_src "$srcdir"
    log "source ready in $srcdir"
    exit 0
fi

# Keep the newest $VTIER_QEMU_KEEP builds of each kind (patched, unpatched);
# a build in use by another run holds its lock and is left alone.
prune_old_builds() {
    local keep=${VTIER_QEMU_KEEP:-3} pattern d n=0
    if [ "$patched" = 1 ]; then
        pattern="$QB_KEY_PREFIX"'[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
    else
        pattern="${QB_KEY_PREFIX}unpatched-*"
    fi
    while IFS= read -r d; do
        n=$((n + 1))
        [ "$n" -le "$keep" ] && continue
        [ "$d" = "$out" ] && continue
        (
            flock -n 8 || exit 0
            rm -rf "$d" "$d.lock"
            log "removed old build $d"
        ) 8>>"$d.lock"
    done < <(ls -1dt "$cache"/$pattern/ 2>/dev/null | sed 's:/$::')
}

mkdir -p "$cache"
exec 9>"$cache/$key.lock"
if ! flock -n 9; then
    log "another build of $key is running; waiting for it"
    flock 9
fi
if [ -f "$out/DONE" ]; then
    prune_old_builds
    echo "$out"
    exit 0
fi

start=$(date +%s)
rm -rf "$out"
mkdir -p "$out"
log "building $out (${#patches[@]} patches), log in $out/build.log"
prepare_src "$out/src"
venv=$(meson_venv)
bios=/usr/share/seabios/bios-256k.bin
[ -f "$bios" ] || die "$bios missing: install seabios (scripts/deps.sh)"

cc=cc
if command -v ccache >/dev/null; then
    cc="ccache cc"
    export CCACHE_DIR=${CCACHE_DIR:-$cache/ccache}
    # Each key has its own tree: hash relative paths so trees share objects.
    export CCACHE_BASEDIR=$out CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
fi

# set -e does not apply inside a subshell whose status is tested with ||:
# run it as a plain command and look at $? afterwards.
set +e
(
    set -e
    mkdir -p "$out/build"
    cd "$out/build"
    nice -n 10 ../src/configure --cc="$cc" --python="$venv/bin/python3" \
        "${CONFIGURE_FLAGS[@]}"
    targets=("${NINJA_TARGETS[@]}")
    for t in ${QTEST_TARGETS[@]+"${QTEST_TARGETS[@]}"}; do
        if [ -f "../src/$t.c" ]; then
            targets+=("$t")
        fi
    done
    nice -n 10 ninja -j"$jobs" "${targets[@]}"
    # -kernel needs linuxboot_dma.bin / multiboot_dma.bin: 32-bit code built
    # by make, not ninja (configure only sets it up with gcc-multilib).
    [ -f pc-bios/optionrom/config.mak ] || {
        echo "configure found no 32-bit x86 compiler for pc-bios/optionrom: install gcc-multilib (scripts/deps.sh)"
        exit 1
    }
    nice -n 10 make -C pc-bios/optionrom
    # A QEMU run from the build tree looks for firmware in its qemu-bundle.
    fw=qemu-bundle/usr/local/share/qemu
    mkdir -p "$fw"
    ln -sf "$bios" "$fw/bios-256k.bin"
    for r in linuxboot_dma.bin multiboot_dma.bin pvh.bin kvmvapic.bin; do
        ln -sf "$PWD/pc-bios/optionrom/$r" "$fw/$r"
    done
) > "$out/build.log" 2>&1
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
    tail -40 "$out/build.log" >&2
    die "build failed; full log in $out/build.log"
fi

end=$(date +%s)
{
    echo "key=$key"
    echo "patches=${#patches[@]}"
    echo "build_seconds=$((end - start))"
    echo "jobs=$jobs"
    echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$out/DONE"
log "built in $((end - start)) s"
prune_old_builds
echo "$out"
