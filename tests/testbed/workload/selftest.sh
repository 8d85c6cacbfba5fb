#!/bin/sh
# vtier-workload's own checks, without a VM: content survives phases with
# writes, the checker finds exactly the pages corrupted behind its back, the
# socket server and client agree, and the hot set maps to guest-physical pages.
set -u
wl=${1:?usage: selftest.sh path/to/vtier-workload}
tmp=$(mktemp -d)
srv=
cleanup() {
    [ -n "$srv" ] && kill "$srv" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
check() {   # check NAME EXPECTED_RC PATTERN -- CMD...
    name=$1 want_rc=$2 pattern=$3
    shift 4
    "$@" >"$tmp/out" 2>&1
    rc=$?
    if [ "$rc" -ne "$want_rc" ] || ! grep -Eq -- "$pattern" "$tmp/out"; then
        echo "FAIL $name: rc=$rc (want $want_rc), want /$pattern/ in:"
        sed 's/^/    /' "$tmp/out" | tail -20
        fails=$((fails + 1))
    else
        echo "ok   $name"
    fi
}

check "write mix keeps every page verifiable" 0 'ok verify pages=4096 bad=0' -- \
    "$wl" run --size 16M \
    "phase dist=zipf ranges=0-50% accesses=300000 write_pct=30 scatter=1" \
    "phase dist=gaussian accesses=200000 write_pct=50 sigma=0.05" \
    "phase dist=uniform ranges=1M-2M,8M-9M accesses=100000 write_pct=100" \
    "phase dist=seq ranges=0p-100p accesses=1000 write_pct=10" \
    verify
# mixed content (zero, corpus, random pages) regenerates exactly as well
head -c 262144 "$wl" > "$tmp/corpus"
check "mixed content survives writes" 0 'ok verify pages=4096 bad=0' -- \
    "$wl" run --size 16M --mix "$tmp/corpus" \
    "phase dist=uniform ranges=0-8M accesses=40000 write_pct=50" verify
check "mixed content: the checker finds the corrupted pages" 1 'fail verify pages=2048 bad=5 ' -- \
    "$wl" run --size 8M --mix "$tmp/corpus" "corrupt pages=5 seed=9" verify
check "mixed content: kinds counts each page's content" 0 \
    'ok kinds zero=[34][0-9][0-9] random=[23][0-9][0-9] corpus=1[0-9][0-9][0-9]$' -- \
    "$wl" run --size 8M --mix "$tmp/corpus" kinds
check "mixed content: kinds from half the region" 0 \
    'ok kinds zero=[12][0-9][0-9] random=1[0-9][0-9] corpus=[5-7][0-9][0-9]$' -- \
    "$wl" run --size 8M --mix "$tmp/corpus" "kinds from=4M"
if [ "$(id -u)" = 0 ]; then
    check "extents of the second half" 0 'ok extents pages=1024 extents=[0-9]+ bytes=4194304 not_present=0' -- \
        "$wl" run --size 8M "extents from=4M out=$tmp/ext"
    check "extents: the file names every page" 0 '^1024$' -- \
        sh -c "sed 's/.*bytes=//' $tmp/ext | while read -r b; do echo \$((b / 4096)); done | awk '{s += \$1} END {print s}'"
fi
check "extents: out= is required" 2 'err extents: out=FILE is required' -- \
    "$wl" run --size 8M "extents from=4M"
check "kinds without a mix: every page random" 0 'ok kinds zero=0 random=2048 corpus=0' -- \
    "$wl" run --size 8M kinds
check "kinds: a start past the region is an error" 2 'err kinds: bad from=9M' -- \
    "$wl" run --size 8M "kinds from=9M"
check "mixed content: a bad corpus is refused" 2 'a file of >= 64 KiB' -- \
    "$wl" run --size 8M --mix /dev/null verify
check "checker finds exactly the corrupted pages" 1 'fail verify pages=2048 bad=7 ' -- \
    "$wl" run --size 8M "corrupt pages=7 seed=3" verify
check "checker reports what a bad page holds" 1 'bad page=[0-9]+ content differs' -- \
    "$wl" run --size 8M "corrupt pages=1" verify
check "refill at a new version verifies" 0 'ok verify pages=256 bad=0' -- \
    "$wl" run --size 1M "fill version=7" "phase dist=uniform accesses=1000 write_pct=50" verify
check "phase counts every access" 0 'ok phase dist=uniform accesses=5000 reads=5000 writes=0' -- \
    "$wl" run --size 1M "phase accesses=5000"
check "bad phase key is an error" 2 'err phase: unknown phase key' -- \
    "$wl" run --size 1M "phase colour=blue"
check "range outside the region is an error" 2 'err phase: range' -- \
    "$wl" run --size 1M "phase ranges=0-2M"
check "hotset before any phase is an error" 2 'err hotset: no phase' -- \
    "$wl" run --size 1M hotset

if [ "$(id -u)" -eq 0 ]; then
    # ranges hot set: exactly the 256 pages of 1M-2M, all present, real PFNs
    check "hotset of the phase ranges" 0 'ok hotset source=ranges pages=256 .* not_present=0' -- \
        "$wl" run --size 4M "phase ranges=1M-2M accesses=10000" "hotset out=$tmp/hot"
    if ! grep -Eq '^gpa=0x[0-9a-f]+ bytes=0x[0-9a-f]+$' "$tmp/hot"; then
        echo "FAIL hotset file format"; fails=$((fails + 1))
    fi
    check "pagemap dump" 0 'ok pagemap pages=256 present=256' -- \
        "$wl" run --size 1M "pagemap out=$tmp/pm"
    # the progress page counts every access of every phase, at a real address
    check "progress counts every phase's accesses" 0 'ok progress gpa=0x[0-9a-f]*[1-9a-f][0-9a-f]* addr=0x[0-9a-f]+ cookie=0x[0-9a-f]+ accesses=7000$' -- \
        "$wl" run --size 1M "phase accesses=5000" "phase dist=zipf accesses=2000 write_pct=10" progress
    check "progress before any phase counts nothing" 0 'ok progress gpa=0x[0-9a-f]+ addr=0x[0-9a-f]+ cookie=0x[0-9a-f]+ accesses=0$' -- \
        "$wl" run --size 1M progress
else
    echo "skip hotset/pagemap checks: PFNs need root (CAP_SYS_ADMIN)"
    check "progress needs root for its address" 2 'err progress: /proc/self/pagemap hides PFNs' -- \
        "$wl" run --size 1M progress
fi

# server + client
sock=$tmp/wl.sock
"$wl" serve --size 8M --socket "$sock" >"$tmp/serve.log" 2>&1 &
srv=$!
check "server answers info" 0 'ok info pages=2048' -- "$wl" ctl --socket "$sock" --wait 30 info
check "server runs a phase" 0 'ok phase dist=zipf' -- \
    "$wl" ctl --socket "$sock" phase dist=zipf accesses=20000 write_pct=20
check "server verifies" 0 'ok verify pages=2048 bad=0' -- "$wl" ctl --socket "$sock" verify
check "server reports corruption with status 1" 1 'fail verify pages=2048 bad=3' -- \
    sh -c "'$wl' ctl --socket '$sock' corrupt pages=3 && '$wl' ctl --socket '$sock' verify"
check "server rejects unknown commands" 2 'err unknown command' -- \
    "$wl" ctl --socket "$sock" frobnicate
check "server quits" 0 'ok quit' -- "$wl" ctl --socket "$sock" quit
wait "$srv"
srv=
[ -e "$sock" ] && { echo "FAIL server left its socket"; fails=$((fails + 1)); }

if [ "$fails" -ne 0 ]; then
    echo "workload selftest: $fails failed"
    exit 1
fi
echo "workload selftest: all passed"
