#!/bin/sh
# vtierd on bad command lines: a clear message, exit 2, nothing started; and
# the shipped config with only [policy] uncommented starts it.
# usage: test_vtierd_cli.sh VTIERD SCRATCH_DIR SHIPPED_CONF   (TAP output)
vtierd=$1
dir=$2
conf=$3
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

echo "1..14"
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

# The shipped vtierd.conf with "#[policy]" uncommented and nothing else: vtierd
# serves (its [libvirt] and [metrics] overridden to stay on this test's own).
n=$((n + 1))
rm -rf "$dir/run" "$dir/store"
sed 's/^#\[policy\]$/[policy]/' "$conf" > "$dir/policy-only.conf"
if ! grep -q '^\[policy\]$' "$dir/policy-only.conf"; then
	echo "not ok $n - no '#[policy]' line in $conf"
	fail=1
else
	"$vtierd" --socket "$dir/run/ctl.sock" --agent-socket none --store-dir "$dir/store" \
		--config "$dir/policy-only.conf" --metrics-listen 127.0.0.1:0 \
		--libvirt-uri test:///default >/dev/null 2>"$dir/err" &
	pid=$!
	i=0
	while [ ! -S "$dir/run/ctl.sock" ] && kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if [ -S "$dir/run/ctl.sock" ]; then
		echo "ok $n - shipped config with an empty [policy] serves"
	else
		echo "not ok $n - shipped config with an empty [policy]: $(head -c 300 "$dir/err")"
		fail=1
	fi
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
fi
exit $fail
