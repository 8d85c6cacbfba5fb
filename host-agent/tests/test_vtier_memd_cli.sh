#!/bin/sh
# vtier-memd on bad command lines and bad key files: a clear message naming
# the option (or file) and what is accepted, exit 2, nothing served; and
# --show-key makes the key pair once and prints the same key after.
# usage: test_vtier_memd_cli.sh VTIER_MEMD SCRATCH_DIR   (TAP output)
memd=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
n=0
fail=0

# expect PATTERN ARGS...: exit status 2 and PATTERN on stderr
expect() {
	pattern=$1
	shift
	n=$((n + 1))
	timeout 10 "$memd" --state-dir "$dir/state" --transport udp "$@" >/dev/null 2>"$dir/err"
	got=$?
	if [ "$got" -eq 2 ] && grep -q -- "$pattern" "$dir/err"; then
		echo "ok $n - $* -> $got"
	else
		echo "not ok $n - $*: exit $got (want 2), stderr: $(head -c 300 "$dir/err")"
		fail=1
	fi
}

echo "1..22"
expect "listen ADDR:PORT is required"
expect "'10.0.0.1': expected IPV4:PORT" --listen 10.0.0.1
expect "'10.0.0.1:0': expected IPV4:PORT (port 1-65535)" --listen 10.0.0.1:0
expect "'10.0.0.1:70000': expected IPV4:PORT" --listen 10.0.0.1:70000
expect "'eth0' is not an IPv4 address" --listen eth0:7500
expect "transport 'rdma': expected auto, afxdp or udp" --listen 127.0.0.1:7500 --transport rdma
expect "xdp-bind 'fast': expected auto, copy or zerocopy" --listen 127.0.0.1:7500 --xdp-bind fast
expect "invalid size" --listen 127.0.0.1:7500 --ns-cap lots
expect "frag max 100" --listen 127.0.0.1:7500 --frag-max 100
expect "client-cap '0': 0 bytes (accepted: a size above 0" --listen 127.0.0.1:7500 --client-cap 0
expect "client-cap: invalid size 'lots'" --listen 127.0.0.1:7500 --client-cap lots
expect "client-cap '': empty (accepted: a size above 0" --listen 127.0.0.1:7500 --client-cap ''
expect "client-cap: invalid size '-1GiB': negative" --listen 127.0.0.1:7500 --client-cap -1GiB
expect "client-cap: invalid size '3 parsecs': unknown unit" --listen 127.0.0.1:7500 --client-cap '3 parsecs'
expect "ns-cap '0x0': 0 bytes" --listen 127.0.0.1:7500 --ns-cap 0x0
expect "server-cap: invalid size" --listen 127.0.0.1:7500 --server-cap 1.5GiB
expect "ns-per-client -1: 1-4096 accepted" --listen 127.0.0.1:7500 --ns-per-client -1
expect "ns-per-client 5000: 1-4096 accepted" --listen 127.0.0.1:7500 --ns-per-client 5000
expect "unexpected argument 'extra'" --listen 127.0.0.1:7500 extra

# the key pair: made once, the same after; a key file others may read is refused
n=$((n + 1))
k1=$("$memd" --state-dir "$dir/keys" --show-key 2>/dev/null)
k2=$("$memd" --state-dir "$dir/keys" --show-key 2>/dev/null)
if [ ${#k1} -eq 64 ] && [ "$k1" = "$k2" ] && [ "$(stat -c %a "$dir/keys/server.key")" = 600 ]; then
	echo "ok $n - --show-key: one key pair (0600), the same public key twice"
else
	echo "not ok $n - --show-key: '$k1' then '$k2'"
	fail=1
fi
chmod 0644 "$dir/keys/server.key"
n=$((n + 1))
"$memd" --state-dir "$dir/keys" --show-key >/dev/null 2>"$dir/err"
got=$?
if [ "$got" -eq 2 ] && grep -q "server.key" "$dir/err"; then
	echo "ok $n - a key file of mode 0644 refused, naming it: $(head -c 200 "$dir/err")"
else
	echo "not ok $n - a 0644 key file: exit $got, $(head -c 300 "$dir/err")"
	fail=1
fi
head -c 10 /dev/zero > "$dir/keys/server.key"
chmod 0600 "$dir/keys/server.key"
n=$((n + 1))
"$memd" --state-dir "$dir/keys" --show-key >/dev/null 2>"$dir/err"
got=$?
if [ "$got" -eq 2 ] && grep -q "server.key" "$dir/err"; then
	echo "ok $n - a key file of 10 bytes refused: $(head -c 200 "$dir/err")"
else
	echo "not ok $n - a short key file: exit $got, $(head -c 300 "$dir/err")"
	fail=1
fi
rm -rf "$dir"
exit $fail
