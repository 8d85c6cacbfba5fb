#!/bin/sh
# The RelaxNG schema of vtier:policy agrees with vtier's parser on the golden
# files: every policy-good-* validates; every policy-bad-* whose .out says
# "error:" (a structural refusal) does not. Values the parser takes but
# vtierd's policy refuses ("refused:", e.g. sample_ms > window_ms) are
# vtierd's to judge, not the schema's. TAP output.
set -u
rng=$1 dir=$2
command -v xmllint >/dev/null || { echo "1..0 # SKIP xmllint missing (scripts/deps.sh)"; exit 0; }
n=0 bad=0
for f in "$dir"/policy-*.xml; do
    base=${f%.xml}
    case $base in
    *-good-*) want=valid ;;
    *) if grep -q '^error: ' "$base.out"; then want=invalid; else continue; fi ;;
    esac
    n=$((n + 1))
    if xmllint --noout --nonet --relaxng "$rng" "$f" >/dev/null 2>&1; then got=valid; else got=invalid; fi
    if [ "$got" = "$want" ]; then
        echo "ok $n - $(basename "$f") $got"
    else
        echo "not ok $n - $(basename "$f"): schema says $got, parser says $want"
        bad=$((bad + 1))
    fi
done
echo "1..$n"
[ "$bad" = 0 ]
