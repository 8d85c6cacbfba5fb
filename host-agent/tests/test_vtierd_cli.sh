#!/bin/sh
# vtierd on bad command lines: a clear message, exit 2, nothing started.
# usage: test_vtierd_cli.sh VTIERD SCRATCH_DIR   (TAP output)
vtierd=$1
dir=$2
mkdir -p "$dir"
n=0
fail=0

# expect PATTERN ARGS...: exit status 2 and PATTERN on stderr, no control socket
expect() {
	pattern=$1
	shift
	n=$((n + 1))
	rm -f "$dir/ctl.sock"
	timeout 10 "$vtierd" --socket "$dir/ctl.sock" --agent-socket "$dir/agent.sock" \
		--store-dir "$dir/store" "$@" >/dev/null 2>"$dir/err"
	got=$?
	if [ "$got" -eq 2 ] && grep -q -- "$pattern" "$dir/err" && [ ! -e "$dir/ctl.sock" ]; then
		echo "ok $n - $* -> $got"
	else
		echo "not ok $n - $*: exit $got (want 2), stderr: $(head -c 300 "$dir/err")"
		fail=1
	fi
}

echo "1..13"
expect "not in 1..8" --placement-threads 9
expect "not in 1..8" --placement-threads -1
expect "not in 1..8" --placement-threads 2147483647
expect "Cannot parse integer" --placement-threads eight
expect "out of range" --placement-threads 99999999999999999999
expect "unexpected argument 'extra'" extra
expect "max-peer-bytes 'banana': invalid size" --max-peer-bytes banana
expect "max-peer-backends '-3'.*a count in 0..1000000000" --max-peer-backends -3
expect "max-threads '1000000001'.*a count" --max-threads 1000000001
expect "reconnect-grace 90000: not in 0..86400" --reconnect-grace 90000
expect "precopy-placement sideways: evict or copy" --precopy-placement sideways
expect "localhost:9477' is not ADDR:PORT: host names are not resolved, give an IP address" \
	--metrics-listen localhost:9477
expect "'9477' is not ADDR:PORT" --metrics-listen 9477

exit $fail
