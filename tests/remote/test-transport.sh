#!/bin/bash
# The remote tier's datagram transports end to end (TAP): two network
# namespaces joined by a veth pair (MTU 4000, 4 queues: one XSK each), remote_echo as an echo server
# on the transport in one, a plain UDP client in the other; 10,000 datagrams
# of 64..3968 bytes echoed and every byte compared, per case:
#   1 afxdp              AF_XDP, need_wakeup on (the stats must say afxdp-copy
#                        and rx > 0: a silent fall back to UDP fails)
#   2 garbage            frames the XDP program steers but the transport refuses
#                        (IPv4 checksum, lengths, martian source), sent raw: counted
#                        by reason; ones it passes (options, fragments) never reach it
#   3 afxdp-burst        256 datagrams in flight: batches of 64 leave the rest in the ring
#   4 afxdp-no-wakeup    need_wakeup off
#   5 afxdp-busy-poll    SO_PREFER_BUSY_POLL + SO_BUSY_POLL + SO_BUSY_POLL_BUDGET
#   6 afxdp-skb          the program attached in skb (generic) mode
#   7 udp                the kernel UDP socket
#   8 auto-fallback      auto with an XDP program that cannot load: UDP, reason kept
#   9 second-program     another XDP program already on the interface: still
#                        there, the same program, after an AF_XDP server ran
#                        (libxdp's dispatcher) or fell back to UDP (no dispatcher)
#  10 loss-reorder       5 % loss + reordering both ways (netem, else impair.py in a
#                        namespace between the ends), AF_XDP, a client that resends:
#                        every datagram echoed intact
# Ping crosses the namespaces while the XDP program is attached (cases 1, 3-6).
# Prints "# RESULT-REMOTE-TRANSPORT mode=... datagrams=... p50_us=... p99_us=... bad=0"
# per echo case (a TAP comment). Usage: test-transport.sh REMOTE_ECHO MEMD_STEER_BPF_O
set -u
if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root (network namespaces, AF_XDP)"
	exit 0
fi
ECHO=$(realpath "$1")
PROG=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
COUNT=${REMOTE_TEST_COUNT:-10000}
PORT=7111
SADDR=10.77.0.1
CADDR=10.77.0.2

# shellcheck source=netns.sh
. "$HERE/netns.sh"
netns_need_bpffs "$@"
netns_init
LOGS=$(mktemp -d /tmp/vtier-remote-test.XXXXXX)
trap 'netns_cleanup; rm -rf "$LOGS"' EXIT

netns_new s && S=$NETNS_NAME && netns_new c && C=$NETNS_NAME &&
	netns_link "$S" vs0 "$SADDR/24" "$C" vc0 "$CADDR/24" 4000 4 || {
	echo "Bail out! network namespaces and veth could not be set up"
	exit 1
}
echo "1..10"
N=0
FAILED=0
ok() { N=$((N + 1)); echo "ok $N - $*"; }
not_ok() { N=$((N + 1)); FAILED=1; echo "not ok $N - $*"; }
skip() { N=$((N + 1)); echo "ok $N - $1 # SKIP $2"; }
# key=value from a line
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1" | head -1; }

SERVER_PID=
start_server() {	# LOG ARGS...
	local log=$1 i
	shift
	netns_spawn "$S" "$ECHO" server --addr "$SADDR" --port "$PORT" --if vs0 --xdp-prog "$PROG" "$@" \
		>"$log" 2>&1
	SERVER_PID=$NETNS_PID
	for i in $(seq 100); do
		grep -q '^READY' "$log" && return 0
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "# server did not start: $(tr '\n' ' ' <"$log")"
	kill -9 "$SERVER_PID" 2>/dev/null
	wait "$SERVER_PID" 2>/dev/null
	return 1
}
SERVER_RC=0
stop_server() {	# its exit status in SERVER_RC (a sanitizer's report makes it non-zero)
	kill -TERM "$SERVER_PID" 2>/dev/null
	wait "$SERVER_PID" 2>/dev/null
	SERVER_RC=$?
}

run_case() {	# NAME EXPECT_MODE CLIENT_ARGS -- SERVER_ARGS...
	local name=$1 want=$2 cargs=$3 slog="$LOGS/$1.server" clog="$LOGS/$1.client" rc stats client why= n
	shift 4
	if ! start_server "$slog" "$@"; then
		not_ok "$name: server did not start"
		return
	fi
	netns_run "$C" "$ECHO" client --addr "$SADDR" --port "$PORT" --count "$COUNT" $cargs >"$clog" 2>&1
	rc=$?
	if [ "${want#afxdp}" != "$want" ]; then
		netns_ping "$C" "$SADDR" 3 || why="$why ping failed while the XDP program was attached;"
	fi
	stop_server
	stats=$(grep '^STATS' "$slog")
	client=$(grep '^CLIENT' "$clog")
	echo "# server: $stats"
	echo "# client: $client"
	[ "$rc" = 0 ] || why="$why client exit $rc ($(grep -v '^CLIENT' "$clog" | tr '\n' ' '));"
	[ "$SERVER_RC" = 0 ] || why="$why server exit $SERVER_RC ($(grep -v '^libbpf\|^libxdp\|^READY\|^STATS' "$slog" | head -5 | tr '\n' ' '));"
	[ "$(kv "$stats" mode)" = "$want" ] || why="$why mode $(kv "$stats" mode), wanted $want;"
	n=$(sed -n 's/.*--count \([0-9]*\).*/\1/p' <<<"$cargs")
	n=${n:-$COUNT}
	[ "$(kv "$stats" rx)" -ge "$n" ] 2>/dev/null || why="$why server rx $(kv "$stats" rx) < $n;"
	[ "$(kv "$client" bad)" = 0 ] || why="$why bad $(kv "$client" bad);"
	if [ "${want#afxdp}" != "$want" ]; then
		[ "$(kv "$stats" queues)" = 4 ] || why="$why $(kv "$stats" queues) XSKs for vs0's 4 rx queues;"
		case " $* " in
		*" --skb "*) [ "$(kv "$stats" xdp_native)" = 0 ] || why="$why not in skb mode;" ;;
		*) [ "$(kv "$stats" xdp_native)" = 1 ] || why="$why not in native mode;" ;;
		esac
	fi
	for f in need_wakeup busy_poll; do
		case " $* " in
		*" --no-need-wakeup "*) [ $f = need_wakeup ] && [ "$(kv "$stats" $f)" != 0 ] && why="$why need_wakeup still on;" ;;
		esac
		case " $* " in
		*" --busy-poll "*) [ $f = busy_poll ] && [ "$(kv "$stats" $f)" != 1 ] && why="$why busy_poll off;" ;;
		esac
	done
	case "$cargs" in *--window*)
		# nothing on this path may drop: a resend means the server lost one
		[ "$(kv "$client" retries)" = 0 ] || why="$why $(kv "$client" retries) resends;"
		[ "$(kv "$stats" rx_kernel_dropped)" = 0 ] || why="$why rx_kernel_dropped $(kv "$stats" rx_kernel_dropped);"
		[ -n "$client" ] && echo "# burst: $(kv "$client" per_s) datagrams/s echoed, window $(kv "$client" window)"
		if [ -z "$why" ]; then ok "$name"; else not_ok "$name:$why"; fi
		return ;;
	esac
	[ -n "$client" ] && echo "# RESULT-REMOTE-TRANSPORT mode=$(kv "$stats" mode) datagrams=$(kv "$client" datagrams)" \
		"p50_us=$(kv "$client" p50_us) p99_us=$(kv "$client" p99_us) bad=$(kv "$client" bad)" \
		"case=$name need_wakeup=$(kv "$stats" need_wakeup) busy_poll=$(kv "$stats" busy_poll)" \
		"retries=$(kv "$client" retries) lost=$(kv "$client" lost)"
	if [ -z "$why" ]; then ok "$name"; else not_ok "$name:$why"; fi
}

run_case afxdp afxdp-copy "--retries 3 --timeout-ms 200" -- --mode afxdp
# Frames our XDP program steers to the XSK but the transport must refuse,
# sent raw from the client's namespace (AF_PACKET), COPIES of each: counted
# by reason; frames the program passes to the kernel (IP options, fragments,
# another port) never reach the XSK. Then the server still echoes.
COPIES=5
slog="$LOGS/garbage.server"
if start_server "$slog" --mode afxdp; then
	cmac=$(ip -n "$C" -o link show vc0 | sed -n 's/.*link\/ether \([^ ]*\).*/\1/p')
	smac=$(ip -n "$S" -o link show vs0 | sed -n 's/.*link\/ether \([^ ]*\).*/\1/p')
	netns_run "$C" python3 - "$HERE/../fuzz" "$smac" "$cmac" "$COPIES" <<'PY'
import socket, sys
sys.path.insert(0, sys.argv[1])
from make_corpus_remote_frame import frame
mac = lambda m: bytes(int(x, 16) for x in m.split(":"))
kw = dict(mac_dst=mac(sys.argv[2]), mac_src=mac(sys.argv[3]))
body = bytes(range(64))
bad = [frame(body, bad_csum=True, **kw), frame(body, ulen=60, **kw), frame(body, tot=1000, **kw),
       frame(body, sport=0, **kw), frame(body, src=bytes([127, 0, 0, 1]), **kw),
       frame(body, vihl=0x46, options=bytes(4), **kw), frame(body, frag=0x2000, **kw),
       frame(body, dport=7112, **kw)]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("vc0", 0))
for _ in range(int(sys.argv[4])):
    for f in bad:
        s.send(f)
PY
	prc=$?
	netns_run "$C" "$ECHO" client --addr "$SADDR" --port "$PORT" --count 100 >"$LOGS/garbage.client" 2>&1
	rc=$?
	stop_server
	stats=$(grep '^STATS' "$slog")
	echo "# server: $stats"
	why=
	[ "$prc" = 0 ] || why="$why the raw sender failed;"
	[ "$rc" = 0 ] || why="$why the echo after the garbage failed;"
	for k in bad-ip-checksum:$COPIES bad-length:$COPIES truncated:$COPIES bad-source:$((2 * COPIES)) \
		ip-options:0 fragment:0 wrong-port:0; do
		got=$(kv "$stats" "refused_${k%%:*}")
		[ "$got" = "${k#*:}" ] || why="$why refused_${k%%:*}=$got, wanted ${k#*:};"
	done
	[ "$(kv "$stats" rx)" = 100 ] || why="$why rx $(kv "$stats" rx), wanted 100;"
	if [ -z "$why" ]; then ok "garbage: refused and counted by reason"; else not_ok "garbage:$why"; fi
else
	not_ok "garbage: server did not start"
fi

# 256 in flight: the server's rx ring holds more than one batch of 64
run_case afxdp-burst afxdp-copy "--window 256 --retries 3 --timeout-ms 200" -- --mode afxdp
run_case afxdp-no-wakeup afxdp-copy "--retries 3 --timeout-ms 200" -- --mode afxdp --no-need-wakeup
run_case afxdp-busy-poll afxdp-copy "--retries 3 --timeout-ms 200" -- --mode afxdp --busy-poll
run_case afxdp-skb afxdp-copy "--count 2000 --retries 3 --timeout-ms 200" -- --mode afxdp --skb
run_case udp udp "--retries 3 --timeout-ms 200" -- --mode udp

# auto with a program that is not there: UDP, the reason in the stats
slog="$LOGS/fallback.server"
if start_server "$slog" --mode auto --xdp-prog /nonexistent/memd_steer.bpf.o; then
	netns_run "$C" "$ECHO" client --addr "$SADDR" --port "$PORT" --count 100 >"$LOGS/fallback.client" 2>&1
	rc=$?
	stop_server
	stats=$(grep '^STATS' "$slog")
	echo "# server: $stats"
	if [ "$rc" = 0 ] && [ "$(kv "$stats" mode)" = udp ] && grep -q 'fallback="AF_XDP on vs0: open /nonexistent' <<<"$stats"; then
		ok "auto-fallback: udp, reason kept"
	else
		not_ok "auto-fallback: client exit $rc, $stats"
	fi
else
	not_ok "auto-fallback: server did not start"
fi

# Someone else's XDP program on the interface first (xdp-filter's allow-all,
# from xdp-tools). With libxdp's dispatcher both run and ours leaves it
# alone; where the kernel refuses the dispatcher (libxdp falls back to one
# program per interface) ours must not replace it: auto falls back to UDP.
# Either way the other program is the same one, by id, before and after.
# (A memd_steer left by a server that died is replaced: test-memd.sh.)
OTHER=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/bpf/xdpfilt_alw_all.o
other_id() { netns_run "$S" xdp-loader status vs0 2>/dev/null | awk '$1 == "vs0" || $1 == "=>" { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/ && $(i-1) ~ /native|skb|xdpfilt/) { print $i; exit } }'; }
# (xdp-filter's program is not frags-aware: the link at MTU 1500 for this case)
ip -n "$S" link set vs0 mtu 1500 && ip -n "$C" link set vc0 mtu 1500
if ! netns_run "$S" xdp-loader load -m native vs0 "$OTHER" >"$LOGS/other" 2>&1; then
	not_ok "second-program: xdp-loader could not attach one: $(tr '\n' ' ' <"$LOGS/other")"
else
	before=$(netns_run "$S" xdp-loader status vs0 2>/dev/null | grep -c xdpfilt_alw_all)
	id_before=$(other_id)
	slog="$LOGS/second.server"
	if start_server "$slog" --mode auto; then
		netns_run "$C" "$ECHO" client --addr "$SADDR" --port "$PORT" --count 1000 --max 1400 \
			>"$LOGS/second.client" 2>&1
		rc=$?
		during=$(netns_run "$S" xdp-loader status vs0 2>/dev/null | grep -c memd_steer)
		stop_server
		stats=$(grep '^STATS' "$slog")
		after=$(netns_run "$S" xdp-loader status vs0 2>/dev/null | grep -c xdpfilt_alw_all)
		id_after=$(other_id)
		echo "# server: $stats"
		echo "# the other program on vs0 before/after: $before/$after, memd_steer during: $during; the other's id $id_before -> $id_after"
		mode=$(kv "$stats" mode)
		if [ "$rc" = 0 ] && [ -n "$id_before" ] && [ "$id_before" = "$id_after" ] && [ "$after" = "$before" ] &&
			{ { [ "$mode" = afxdp-copy ] && [ "$during" = 1 ]; } ||
			  { [ "$mode" = udp ] && grep -q 'fallback="AF_XDP on vs0: attach' <<<"$stats"; }; }; then
			ok "second-program: kept (ours ran as $mode)"
		else
			not_ok "second-program: client exit $rc, mode $mode, programs $before/$during/$after, id $id_before -> $id_after"
		fi
	else
		not_ok "second-program: server did not start"
	fi
	netns_run "$S" xdp-loader unload -a vs0 >/dev/null 2>&1
fi
ip -n "$S" link set vs0 mtu 4000 && ip -n "$C" link set vc0 mtu 4000

# 5 % loss and reordering both ways, a client that resends every 20 ms up to
# 250 times (5 s: a lost ARP request is retried after 1 s): netem on the
# pair where the kernel has it, else impair.py bridging a namespace between
# the two ends (the same loss and reordering, made in user space)
if netns_netem "$C" vc0 loss 5% delay 1ms reorder 25% 50% && netns_netem "$S" vs0 loss 5% delay 1ms reorder 25% 50%; then
	run_case loss-reorder afxdp-copy "--count 2000 --retries 250 --timeout-ms 20" -- --mode afxdp
else
	echo "# $NETNS_WHY: impair.py instead"
	netns_new r && R=$NETNS_NAME &&
		netns_link "$S" vs1 10.78.0.1/24 "$R" ra 0.0.0.0/32 4000 &&
		netns_link "$R" rb 0.0.0.0/32 "$C" vc1 10.78.0.2/24 4000 || {
		echo "Bail out! the impaired path could not be set up"
		exit 1
	}
	ip -n "$R" addr flush dev ra
	ip -n "$R" addr flush dev rb
	netns_impair "$R" ra rb 5 10 "$LOGS/impair" >"$LOGS/impair.log" 2>&1
	IMPAIR_PID=$NETNS_PID
	SADDR=10.78.0.1
	slog="$LOGS/loss.server"
	if netns_spawn "$S" "$ECHO" server --addr "$SADDR" --port "$PORT" --if vs1 --xdp-prog "$PROG" --mode afxdp \
		>"$slog" 2>&1 && SERVER_PID=$NETNS_PID && sleep 0.3 && grep -q '^READY' "$slog"; then
		netns_run "$C" "$ECHO" client --addr "$SADDR" --port "$PORT" --count 2000 --retries 250 \
			--timeout-ms 20 >"$LOGS/loss.client" 2>&1
		rc=$?
		# 16 in flight: datagrams overtake each other both ways
		netns_run "$C" "$ECHO" client --addr "$SADDR" --port "$PORT" --count 2000 --retries 250 \
			--timeout-ms 20 --window 16 >"$LOGS/loss-window.client" 2>&1
		wrc=$?
		stop_server
		kill -TERM "$IMPAIR_PID"
		wait "$IMPAIR_PID" 2>/dev/null
		stats=$(grep '^STATS' "$slog")
		client=$(grep '^CLIENT' "$LOGS/loss.client")
		impair=$(cat "$LOGS/impair" 2>/dev/null)
		echo "# server: $stats"
		echo "# client: $client"
		echo "# impair.py: $impair"
		echo "# client, 16 in flight: $(grep '^CLIENT' "$LOGS/loss-window.client")"
		echo "# RESULT-REMOTE-TRANSPORT mode=$(kv "$stats" mode) datagrams=$(kv "$client" datagrams)" \
			"p50_us=$(kv "$client" p50_us) p99_us=$(kv "$client" p99_us) bad=$(kv "$client" bad)" \
			"case=loss-reorder retries=$(kv "$client" retries) lost=$(kv "$client" lost)"
		why=
		[ "$rc" = 0 ] || why="$why client exit $rc;"
		[ "$wrc" = 0 ] || why="$why client with 16 in flight exit $wrc;"
		[ "$(kv "$stats" mode)" = afxdp-copy ] || why="$why mode $(kv "$stats" mode);"
		[ "$(kv " $impair" dropped)" -gt 0 ] 2>/dev/null || why="$why nothing dropped ($impair);"
		[ "$(kv " $impair" reordered)" -gt 0 ] 2>/dev/null || why="$why nothing reordered ($impair);"
		[ "$(kv "$client" retries)" -gt 0 ] 2>/dev/null || why="$why no resend was needed;"
		if [ -z "$why" ]; then ok "loss-reorder: every datagram echoed intact through impair.py"; else not_ok "loss-reorder:$why"; fi
	else
		kill -TERM "$IMPAIR_PID" 2>/dev/null
		not_ok "loss-reorder: server did not start: $(tr '\n' ' ' <"$slog")"
	fi
fi
exit $FAILED
