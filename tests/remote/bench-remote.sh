#!/bin/bash
# make bench-remote: the remote tier's 4 KiB page fetch over each transport,
# side by side on one veth pair between two network namespaces (docs/remote.md,
# "Benchmark"). Per round, in turn (afxdp udp tcp tcp-busy local afxdp2 afxdp2-busy, afxdp
# udp ... so the machine's drift hits each alike), the transport's server is
# started in the server namespace, `vtier-bench remote` runs one round as the
# client in the client namespace, and the server is stopped (so no XDP program is
# on the veth while udp and tcp run; the client's own, afxdp2's, goes with it):
#   afxdp  vtier-memd on AF_XDP (copy mode: veth has no zero-copy), the client
#          library on a kernel UDP socket (so what AF_XDP gains is the server's)
#   udp    vtier-memd on its UDP socket (--transport udp), the same client
#   tcp    `vtier-bench remote --tcp-serve`: the same GET bodies and sealed blobs
#          over one TCP connection (TCP_NODELAY, blocking I/O)
#   tcp-busy the same with both ends spinning on their socket (recv MSG_DONTWAIT,
#          the CPU yielded between looks; the server --tcp-busy-poll) instead of
#          sleeping in read(): the spin of afxdp2-busy, given to TCP too
#   local  the same pages from a compressed tier (lz4 x zsmalloc x node:0)
#   afxdp2 both ends on AF_XDP (copy mode): vtier-memd as in afxdp, the client
#          library's own end an XSK on the client's veth with the same XDP program
#   afxdp2-busy  the same with busy-poll at both ends: vtier-memd --busy-poll
#          (preferred busy polling on its XSK, and its loop spins on its rings,
#          never sleeping in poll(), yielding the CPU between looks), the client
#          --client-busy-poll (the same socket options, and it spins on its rx ring
#          while it waits for a reply instead of poll(), yielding the CPU too)
# Prints each round ("# round K: ROUND ..."), then per transport the median of
# the rounds:
#   RESULT-REMOTE-BENCH transport=T p50_us= p99_us= pages_per_s=
#                       server_pages_per_core_s= client_cpu_us_per_page=
# and whether the issue's targets are met (never a failure: a benchmark).
# Fails only when a page came back wrong, a server did not start, afxdp's
# server (afxdp2's: both ends) ran on anything but AF_XDP, or afxdp2-busy's ends
# did not busy-poll.
# Usage: bench-remote.sh VTIER_MEMD VTIER_BENCH MEMD_STEER_BPF_O
# Knobs (environment): BENCH_REMOTE_ROUNDS (7), BENCH_REMOTE_FETCHES (timed single
# fetches per round, 4000), BENCH_REMOTE_WARMUP (per round, 500),
# BENCH_REMOTE_BATCH_MS (the batched phase per round, 1000), BENCH_REMOTE_BATCH (32),
# BENCH_REMOTE_PAGES (1024), BENCH_REMOTE_MTU (1500; datagram bodies of MTU - 100
# bytes, at most 3968, on both ends), BENCH_REMOTE_TRANSPORTS
# ("afxdp udp tcp tcp-busy local afxdp2 afxdp2-busy"), BENCH_REMOTE_MEMD_OPTS (more options for
# vtier-memd, e.g. "--busy-poll" or "--no-need-wakeup"), BENCH_REMOTE_CLIENT_OPTS (more
# options for the client's AF_XDP end in afxdp2 and afxdp2-busy, e.g.
# "--client-no-need-wakeup"), BENCH_REMOTE_NICE (a prefix for every process, e.g.
# "nice -n 19"; empty by default).
set -u
if [ "$(id -u)" != 0 ]; then
	echo "bench-remote: needs root (network namespaces, AF_XDP)" >&2
	exit 1
fi
MEMD=$(realpath "$1")
BENCH=$(realpath "$2")
PROG=$(realpath "$3")
HERE=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${BENCH_REMOTE_ROUNDS:-7}
FETCHES=${BENCH_REMOTE_FETCHES:-4000}
WARMUP=${BENCH_REMOTE_WARMUP:-500}
BATCH_MS=${BENCH_REMOTE_BATCH_MS:-1000}
BATCH=${BENCH_REMOTE_BATCH:-32}
PAGES=${BENCH_REMOTE_PAGES:-1024}
MTU=${BENCH_REMOTE_MTU:-1500}
# the largest datagram body, both ends: what the MTU holds past IPv4, UDP and the
# protocol's header and tag (1400 at MTU 1500), at most one 4 KiB AF_XDP frame's
FRAG=$(( MTU - 100 > 3968 ? 3968 : MTU - 100 ))
TRANSPORTS=${BENCH_REMOTE_TRANSPORTS:-afxdp udp tcp tcp-busy local afxdp2 afxdp2-busy}
read -r -a NICE <<<"${BENCH_REMOTE_NICE:-}"
read -r -a MEMD_OPTS <<<"${BENCH_REMOTE_MEMD_OPTS:-}"
read -r -a CLIENT_OPTS <<<"${BENCH_REMOTE_CLIENT_OPTS:-}"
PORT=7500
TCP_PORT=7501
SRV=10.78.0.2
CLI=10.78.0.1
CLI_PORT=7600

# shellcheck source=netns.sh
. "$HERE/netns.sh"
netns_need_bpffs "$@"
netns_init
LOGS=$(mktemp -d /tmp/vtier-bench-remote.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null; netns_cleanup; rm -rf "$LOGS"' EXIT

fail() {
	echo "bench-remote: $*" >&2
	for f in "$LOGS"/*.log; do
		[ -s "$f" ] && sed "s|^|# $(basename "$f"): |" "$f" >&2
	done
	exit 1
}

netns_new c && C=$NETNS_NAME && netns_new s && S=$NETNS_NAME &&
	netns_link "$C" vc "$CLI/24" "$S" vs "$SRV/24" "$MTU" ||
	fail "network namespaces and veth could not be set up"
netns_ping "$C" "$SRV" 3 || fail "no ping across the veth pair"
PK=$("$MEMD" --state-dir "$LOGS/state" --show-key) || fail "vtier-memd --show-key"

echo "# bench-remote: $(nproc) cores, kernel $(uname -r), veth MTU $MTU (datagram bodies of" \
	"$FRAG bytes at most); vtier-memd ${MEMD_OPTS[*]:-with its defaults}; $ROUNDS rounds of" \
	"$FETCHES timed fetches (after $WARMUP) and ${BATCH_MS} ms of GETs of $BATCH pages," \
	"$PAGES pages; transports in turn: $TRANSPORTS"
echo "# afxdp: vtier-memd's AF_XDP socket runs in copy mode (veth has no zero-copy: that" \
	"needs a NIC whose driver has it); the client is a kernel UDP socket in both afxdp" \
	"and udp, so what AF_XDP gains here is the server's side only; afxdp2 and" \
	"afxdp2-busy run the client's own end on AF_XDP too (copy mode), afxdp2-busy with" \
	"busy-poll at both ends (the client spinning on its rx ring, yielding the CPU" \
	"between looks)"

# the server of transport $1 in the server namespace: its pid in SPID
start_server() {
	local t=$1 i
	rm -f "$LOGS/stats.json"
	case $t in
	afxdp | udp | afxdp2 | afxdp2-busy)
		local mt=udp want=udp mode busy=() bwant=
		case $t in
		afxdp*) mt=afxdp want=afxdp-copy ;;
		esac
		[ "$t" = afxdp2-busy ] && busy=(--busy-poll) bwant=True
		netns_spawn "$S" "${NICE[@]}" "$MEMD" --listen "$SRV:$PORT" --interface vs \
			--transport "$mt" --xdp-bind copy --xdp-prog "$PROG" --frag-max "$FRAG" \
			--state-dir "$LOGS/state" --stats-file "$LOGS/stats.json" "${MEMD_OPTS[@]}" \
			"${busy[@]}" >>"$LOGS/memd.log" 2>&1
		SPID=$NETNS_PID
		for i in $(seq 100); do
			[ -s "$LOGS/stats.json" ] && break
			sleep 0.05
		done
		mode=$(python3 -c 'import json,sys
t = json.load(open(sys.argv[1]))["transport"]
print(t["mode"], t["busy_poll"])' "$LOGS/stats.json" 2>/dev/null)
		[ "${mode% *}" = "$want" ] ||
			fail "vtier-memd --transport $mt ($t) runs '${mode% *}', not $want"
		[ -z "$bwant" ] || [ "${mode#* }" = "$bwant" ] ||
			fail "vtier-memd --busy-poll ($t): its stats say busy_poll ${mode#* }"
		;;
	tcp | tcp-busy)
		local spin=()
		[ "$t" = tcp-busy ] && spin=(--tcp-busy-poll)
		: >"$LOGS/tcp.log"
		netns_spawn "$S" "${NICE[@]}" "$BENCH" remote --tcp-serve "$SRV:$TCP_PORT" \
			"${spin[@]}" >>"$LOGS/tcp.log" 2>&1
		SPID=$NETNS_PID
		for i in $(seq 100); do
			grep -q "^serving" "$LOGS/tcp.log" && break
			sleep 0.05
		done
		grep -q "^serving" "$LOGS/tcp.log" || fail "the TCP server did not start"
		;;
	local)
		SPID=
		;;
	esac
}

stop_server() {
	[ -n "$SPID" ] || return 0
	kill -TERM "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
	SPID=
}

: >"$LOGS/rounds"
for k in $(seq "$ROUNDS"); do
	for t in $TRANSPORTS; do
		start_server "$t"
		args=(remote --transport "$t" --pages "$PAGES" --fetches "$FETCHES" --warmup "$WARMUP"
			--batch "$BATCH" --batch-ms "$BATCH_MS" --seed "$k")
		case $t in
		afxdp | udp) args+=(--server "$SRV:$PORT/$PK" --server-pid "$SPID" --frag-max "$FRAG") ;;
		afxdp2 | afxdp2-busy)
			args+=(--server "$SRV:$PORT/$PK" --server-pid "$SPID" --frag-max "$FRAG"
				--client-listen "$CLI:$CLI_PORT" --client-interface vc
				--client-xdp-prog "$PROG" --client-xdp-bind copy "${CLIENT_OPTS[@]}")
			;;
		tcp | tcp-busy) args+=(--server "$SRV:$TCP_PORT" --server-pid "$SPID") ;;
		esac
		out=$(netns_run "$C" "${NICE[@]}" "$BENCH" "${args[@]}" 2>"$LOGS/client.log")
		rc=$?
		stop_server
		[ "$rc" = 0 ] && grep -q "^ROUND " <<<"$out" ||
			fail "round $k, $t: the client exited $rc: $(cat "$LOGS/client.log")"
		# the client's own end as its transport's stats say (afxdp2: not a silent UDP)
		cwant=
		case $t in
		afxdp | udp) cwant="client_mode=udp client_busy_poll=0" ;;
		afxdp2) cwant="client_mode=afxdp-copy client_busy_poll=0" ;;
		afxdp2-busy) cwant="client_mode=afxdp-copy client_busy_poll=1" ;;
		esac
		[ -z "$cwant" ] || grep -q " $cwant\( \|$\)" <<<"$out" ||
			fail "round $k, $t: the client's end is not '$cwant': $out"
		# the server's transport counters at its exit (a lost datagram or a busy
		# tx ring against a late reply: a retry in the client's figures)
		srv=
		case $t in
		afxdp | udp | afxdp2 | afxdp2-busy) srv=$(python3 -c 'import json,sys
t = json.load(open(sys.argv[1]))["transport"]
print(" | server rx=%d tx=%d rx_dropped=%d tx_busy=%d tx_lost=%d" % tuple(
    t[k] for k in ("rx", "tx", "rx_dropped", "tx_busy", "tx_lost")))' "$LOGS/stats.json" 2>/dev/null) ;;
		esac
		echo "# round $k: $out$srv"
		echo "$out" >>"$LOGS/rounds"
	done
done

python3 - "$LOGS/rounds" "$TRANSPORTS" <<'EOF'
import statistics, sys
keys = ["p50_us", "p99_us", "pages_per_s", "server_pages_per_core_s", "client_cpu_us_per_page"]
rows = {}
for line in open(sys.argv[1]):
    kv = dict(f.split("=", 1) for f in line.split()[1:])
    rows.setdefault(kv["transport"], []).append(kv)
med = {}
for t in sys.argv[2].split():
    rs = rows.get(t, [])
    m = {}
    for k in keys:
        v = [float(r[k]) for r in rs if r[k] != "na"]
        m[k] = statistics.median(v) if v else None
    med[t] = m
    fmt = lambda k, d: "na" if m[k] is None else "%.*f" % (d, m[k])
    print("RESULT-REMOTE-BENCH transport=%s p50_us=%s p99_us=%s pages_per_s=%s "
          "server_pages_per_core_s=%s client_cpu_us_per_page=%s" %
          (t, fmt("p50_us", 1), fmt("p99_us", 1), fmt("pages_per_s", 0),
           fmt("server_pages_per_core_s", 0), fmt("client_cpu_us_per_page", 2)))
t = med.get("tcp")
for name in ("afxdp", "afxdp2", "afxdp2-busy"):
    a = med.get(name)
    if a and t and a["p50_us"] and t["p50_us"]:
        ok = a["p50_us"] <= t["p50_us"] / 2
        print("# target: %s p50 at most half of tcp's: %s (%.1f us against %.1f us)" %
              (name, "met" if ok else "not met", a["p50_us"], t["p50_us"]))
    if a and a["p50_us"]:
        ok = a["p99_us"] <= 3 * a["p50_us"]
        print("# target: %s p99 within 3x its p50: %s (%.1f us, 3 x %.1f us = %.1f us)" %
              (name, "met" if ok else "not met", a["p99_us"], a["p50_us"], 3 * a["p50_us"]))
tb = med.get("tcp-busy")
a = med.get("afxdp2-busy")
if a and tb and a["p50_us"] and tb["p50_us"]:
    print("# beside: afxdp2-busy p50 against tcp-busy's (both ends spinning in both): "
          "%.1f us against %.1f us (%.2fx)" % (a["p50_us"], tb["p50_us"], a["p50_us"] / tb["p50_us"]))
print("# median of %d rounds each; veth runs AF_XDP in copy mode (zero-copy needs a real NIC); "
      "the client is a kernel UDP socket in afxdp and udp, AF_XDP in afxdp2 and afxdp2-busy" %
      max(len(r) for r in rows.values()))
EOF
