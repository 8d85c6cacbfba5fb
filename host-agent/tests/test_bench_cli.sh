#!/bin/sh
# vtier-bench on bad input: a clear message, a non-zero exit, no crash; agent runs.
# usage: test_bench_cli.sh VTIER_BENCH SCRATCH_DIR   (TAP output)
bench=$1
dir=$2
mkdir -p "$dir"
n=0
fail=0

# expect STATUS PATTERN ARGS...: exit status STATUS and PATTERN on stderr
expect() {
	want=$1 pattern=$2
	shift 2
	n=$((n + 1))
	"$bench" "$@" >/dev/null 2>"$dir/err"
	got=$?
	if [ "$got" -eq "$want" ] && grep -q -- "$pattern" "$dir/err"; then
		echo "ok $n - $* -> $got"
	else
		echo "not ok $n - $*: exit $got (want $want), stderr: $(head -c 300 "$dir/err")"
		fail=1
	fi
}

printf '{"footprint":"1GiB","phases":[{"duration_s":1,"access_rate":1,"hot":[{"start":0,"size":"2GiB"}]}]}' >"$dir/outside.json"
printf '{"footprint":' >"$dir/truncated.json"
printf '\377\376garbage' >"$dir/binary.json"

echo "1..37"
expect 2 "unknown subcommand" frobnicate
expect 2 "give --scenario" telemetry
expect 2 "unknown profiler 'nope'" telemetry --scenario subtb-1g --profiler nope
expect 1 "unknown scenario 'nope'" telemetry --scenario nope
expect 2 "--flex pud=2" telemetry --scenario subtb-1g --flex pud=2
expect 2 "must not be negative" telemetry --scenario subtb-1g --budget -5
expect 1 "inside the footprint" telemetry --spec "$dir/outside.json"
expect 1 "not valid JSON" telemetry --spec "$dir/truncated.json"
expect 1 "not valid JSON" telemetry --spec "$dir/binary.json"
expect 1 "No such file" telemetry --spec "$dir/missing.json"
expect 2 "unknown scenario 'nope'" telemetry --dump-spec nope
expect 2 "unexpected argument" telemetry --scenario subtb-1g extra
expect 2 "is not KIND=WEIGHT" ctier --mix nope=1 --no-1tib
expect 2 "--pages must be" ctier --pages 1 --no-1tib
expect 2 "unexpected argument" ctier extra
expect 1 "unknown codec 'lzo'" ctier --codec lzo --pool zbud --medium node:0 --no-1tib
expect 2 "'0' is not a size in GiB" agent --sizes 1,0
expect 2 "--refresh: full, round-robin or both" agent --refresh some
expect 2 "unknown profiler 'nope'" agent --profiler nope
expect 2 "must be positive" agent --windows 0
expect 2 "--transport afxdp|udp|afxdp2|afxdp2-busy|tcp|tcp-busy|local is required" remote
# the client's own end: AF_XDP only in afxdp2 and afxdp2-busy, each option named
srv="10.0.0.1:7500/6f5b82310968323f30da1a1f3cc3bfdfb63fc15068dc710af3523a66df3d723b"
expect 1 "--client-busy-poll: only with --transport afxdp2 or afxdp2-busy" remote \
	--transport udp --server "$srv" --client-busy-poll --pages 8
expect 1 "--client-busy-poll: not with --transport afxdp2 (that is afxdp2-busy)" remote \
	--transport afxdp2 --server "$srv" --client-busy-poll --pages 8
expect 1 "--client-transport 'udp': --transport afxdp2 runs the client on AF_XDP" remote \
	--transport afxdp2 --server "$srv" --client-transport udp --pages 8
expect 1 "--client-xdp-bind 'fast': expected auto, copy or zerocopy" remote \
	--transport afxdp2 --server "$srv" --client-xdp-bind fast --pages 8
expect 1 "--client-listen '10.0.0.2': --transport afxdp2-busy needs the client's own" remote \
	--transport afxdp2-busy --server "$srv" --client-listen 10.0.0.2 --pages 8
expect 1 "--client-interface: only with --transport afxdp2 or afxdp2-busy (tcp's client end" \
	remote --transport tcp --server 127.0.0.1:1 --client-interface lo --pages 8
expect 2 "given 'sctp'" remote --transport sctp
expect 2 "--batch 1-64" remote --transport udp --batch 65
expect 1 "expected IPV4:PORT/PUBKEYHEX" remote --transport udp --server 10.0.0.1:7500 --pages 8
expect 1 "TCP to 127.0.0.1:1: Connection refused" remote --transport tcp --server 127.0.0.1:1 --pages 8
expect 2 "--tcp-serve '127.0.0.1': expected IPV4:PORT" remote --tcp-serve 127.0.0.1
expect 2 "--tcp-busy-poll: only with --tcp-serve" remote --transport tcp-busy --tcp-busy-poll

# the engine itself, 1 GiB, both refreshes: one RESULT-AGENT line each
n=$((n + 1))
if "$bench" agent --sizes 1 --windows 2 --present-mib 0 >"$dir/agent" 2>"$dir/err" &&
   [ "$(grep -c '^RESULT-AGENT ram_gib=1 us_per_window=[0-9.]* core_pct=[0-9.]* refresh=' "$dir/agent")" -eq 2 ]; then
	echo "ok $n - agent --sizes 1"
else
	echo "not ok $n - agent --sizes 1: $(head -c 300 "$dir/err") $(head -c 600 "$dir/agent")"
	fail=1
fi

# one round from a local compressed tier: every page compared
n=$((n + 1))
if "$bench" remote --transport local --pages 64 --fetches 200 --warmup 10 --batch-ms 50 \
	--store-dir "$dir/store" >"$dir/local" 2>"$dir/err" &&
   grep -q '^ROUND transport=local p50_us=[0-9.]* .* bad_pages=0 lz4_bytes=[0-9]*$' "$dir/local"; then
	echo "ok $n - remote --transport local"
else
	echo "not ok $n - remote --transport local: $(head -c 300 "$dir/err") $(head -c 600 "$dir/local")"
	fail=1
fi

# the TCP baseline's server: a frame of an unknown op is answered EINVAL, one
# over the bound ends its connection, and it serves a whole round after both
n=$((n + 1))
port=$((40000 + $$ % 20000))
"$bench" remote --tcp-serve "127.0.0.1:$port" >"$dir/tcp-server" 2>&1 &
spid=$!
for _ in $(seq 50); do
	grep -q '^serving' "$dir/tcp-server" && break
	sleep 0.1
done
if python3 - "$port" >"$dir/tcp-bad" 2>&1 <<'PY' &&
import socket, struct, sys
def conn():
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    return s
s = conn()
s.sendall(struct.pack("<IBBH", 3, 9, 0, 0) + b"abc")
h = s.recv(8)
ln, op, _, st = struct.unpack("<IBBH", h)
assert (ln, op, st) == (0, 0x89, 22), (ln, op, st)
s.sendall(struct.pack("<IBBH", 1 << 31, 3, 0, 0))
assert s.recv(8) == b"", "connection kept after a frame over the bound"
PY
   "$bench" remote --transport tcp --server "127.0.0.1:$port" --server-pid "$spid" --pages 64 \
	--fetches 200 --warmup 10 --batch-ms 50 >"$dir/tcp" 2>"$dir/err" &&
   grep -q '^ROUND transport=tcp p50_us=[0-9.]* .* bad_pages=0 lz4_bytes=[0-9]*$' "$dir/tcp"; then
	echo "ok $n - remote --transport tcp: bad frames refused, then a round served"
else
	echo "not ok $n - remote tcp: $(head -c 300 "$dir/tcp-bad") $(head -c 300 "$dir/err")" \
		"$(head -c 600 "$dir/tcp")"
	fail=1
fi
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null

# tcp-busy: both ends' reads spin (the server --tcp-busy-poll); a round served, every page intact
n=$((n + 1))
port=$((port + 1))
"$bench" remote --tcp-serve "127.0.0.1:$port" --tcp-busy-poll >"$dir/tcp-busy-server" 2>&1 &
spid=$!
for _ in $(seq 50); do
	grep -q '^serving' "$dir/tcp-busy-server" && break
	sleep 0.1
done
if "$bench" remote --transport tcp-busy --server "127.0.0.1:$port" --server-pid "$spid" \
	--pages 64 --fetches 200 --warmup 10 --batch-ms 50 >"$dir/tcp-busy" 2>"$dir/err" &&
   grep -q '^ROUND transport=tcp-busy p50_us=[0-9.]* .* bad_pages=0 lz4_bytes=[0-9]*$' \
	"$dir/tcp-busy"; then
	echo "ok $n - remote --transport tcp-busy: a round served with both ends spinning"
else
	echo "not ok $n - remote tcp-busy: $(head -c 300 "$dir/err") $(head -c 600 "$dir/tcp-busy")"
	fail=1
fi
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
exit $fail
