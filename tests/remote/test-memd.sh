#!/bin/bash
# The remote tier end to end without a VM (TAP): three vtier-memd servers on
# AF_XDP, each in a network namespace of its own joined to a client namespace
# by a veth pair; remote_pages plays one VM's client (remote_client.h) with
# copies = 2:
#   1 servers          each serves on AF_XDP (its stats say afxdp-copy: a silent
#                      fall back to UDP fails; so does its metrics file, which
#                      promtool check metrics takes)
#   2 victim           2048 pages stored on two servers each and read back; a read
#                      storm during which one server is killed -9; its copies
#                      re-created on the live ones; the server restarted (empty)
#                      and back in the pool; every read compared byte for byte
#   3 rogue            another VM's client asks its own namespace for the victim's
#                      page ids (ENOENT) and the victim's namespace with its own tag
#                      (dropped as forged, no reply): nothing disclosed
#   4 garbage          random and oversize datagrams at a server: dropped and
#                      counted, and the victim's pages are still served after
#   5 afxdp-client     the client on AF_XDP too (its peer's MAC from the kernel's
#                      neighbour table): 512 pages with server 2, read back
#   6 loss-reorder     a fourth server behind 5 % loss and 10 % reordering both ways
#                      (netem where the kernel has it, else impair.py in a namespace
#                      between): 512 pages stored and read back through the retries;
#                      a read whose six tries were all lost (about one in 20000 reads
#                      here) is asked again, as vtierd's fault service asks a waiting
#                      fault again, for up to 2 s (the count printed as waited=)
#   7 busy-poll        a fifth server with --busy-poll (its loop spins, never sleeping in
#                      poll()): its stats say busy_poll, 256 pages stored and read back,
#                      and idle it still takes CPU (>= 0.1 s in 0.5 s: it spins)
# Prints "# RESULT-REMOTE pages=... fetch_p50_us=... fetch_p99_us=...
# server_kills=... bad_pages=0 zero_pages=0 disclosed=0".
# Usage: test-memd.sh VTIER_MEMD REMOTE_PAGES MEMD_STEER_BPF_O
set -u
if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root (network namespaces, AF_XDP)"
	exit 0
fi
MEMD=$(realpath "$1")
PAGES=$(realpath "$2")
PROG=$(realpath "$3")
HERE=$(cd "$(dirname "$0")" && pwd)
NPAGES=${REMOTE_TEST_PAGES:-2048}
LOSS_PAGES=${REMOTE_LOSS_PAGES:-512}	# case 6's pages (more: rarer losses seen)
PORT=7500

# shellcheck source=netns.sh
. "$HERE/netns.sh"
netns_need_bpffs "$@"
netns_init
LOGS=$(mktemp -d /tmp/vtier-remote-memd.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null; netns_cleanup; rm -rf "$LOGS"' EXIT

netns_new c && C=$NETNS_NAME || { echo "Bail out! no network namespace"; exit 1; }
declare -a NS PID PK
for k in 1 2 3; do
	netns_new "s$k" && NS[k]=$NETNS_NAME &&
		netns_link "$C" "vc$k" "10.79.$k.1/24" "${NS[k]}" "vs$k" "10.79.$k.2/24" || {
		echo "Bail out! network namespaces and veth could not be set up"
		exit 1
	}
done
echo "1..7"
N=0
FAILED=0
ok() { N=$((N + 1)); echo "ok $N - $*"; }
not_ok() { N=$((N + 1)); FAILED=1; echo "not ok $N - $*"; }
# what remote_pages said was wrong (its stderr lines), on one line for a not ok
why() { grep '^remote_pages:' <<<"$1" | tr '\n' ' '; }
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1" | head -1; }
# a number from a server's stats file: jget K KEY (dotted: transport.mode)
jget() {
	python3 -c 'import json,sys
v=json.load(open(sys.argv[1]))
for p in sys.argv[2].split("."): v=v[p]
print(v if not isinstance(v, dict) else sum(v.values()))' "$LOGS/s$1.json" "$2" 2>/dev/null
}

# the command that starts server K (its key kept in its state dir across restarts;
# MEMD_EXTRA: more options)
MEMD_EXTRA=
memd_cmd() {
	echo "nsenter --net=/run/netns/${NS[$1]} $MEMD --listen 10.79.$1.2:$PORT --interface vs$1" \
		"--transport afxdp --xdp-prog $PROG --state-dir $LOGS/state$1" \
		"--stats-file $LOGS/s$1.json --metrics-file $LOGS/m$1.prom $MEMD_EXTRA"
}
start_memd() {
	rm -f "$LOGS/s$1.json"
	# shellcheck disable=SC2046
	$(memd_cmd "$1") >>"$LOGS/memd$1.log" 2>&1 &
	PID[$1]=$!
}
wait_serving() {
	for _ in $(seq 100); do
		[ -s "$LOGS/s$1.json" ] && return 0
		sleep 0.1
	done
	return 1
}
# server K's metrics file: written, its transport AF_XDP copy mode, promtool takes it
metrics_ok() {
	for _ in $(seq 50); do
		[ -s "$LOGS/m$1.prom" ] && break
		sleep 0.1
	done
	grep -q '^vtier_memd_transport_info{mode="afxdp-copy",' "$LOGS/m$1.prom" &&
		promtool check metrics <"$LOGS/m$1.prom" >"$LOGS/promtool$1.log" 2>&1
}

# 1: three servers on AF_XDP
up=0
for k in 1 2 3; do
	PK[k]=$("$MEMD" --state-dir "$LOGS/state$k" --show-key) || break
	start_memd "$k"
	wait_serving "$k" && [ "$(jget "$k" transport.mode)" = afxdp-copy ] && metrics_ok "$k" &&
		up=$((up + 1))
done
if [ "$up" = 3 ]; then
	ok "servers: three vtier-memd on AF_XDP (afxdp-copy in the stats and the metrics," \
		"promtool check metrics passes), keys made at first start"
else
	not_ok "servers: $up of 3 serving on AF_XDP with their metrics"
	for k in 1 2 3; do sed 's/^/# /' "$LOGS/memd$k.log" "$LOGS/promtool$k.log" 2>/dev/null; done
	exit 1
fi
SERVERS=()
for k in 1 2 3; do SERVERS+=(--server "10.79.$k.2:$PORT/${PK[k]}"); done

# 2: the victim: stored, storm with server 1 killed, repair, restart
out=$(nsenter --net="/run/netns/$C" "$PAGES" victim "${SERVERS[@]}" --copies 2 \
	--pages "$NPAGES" --kill-pid "${PID[1]}" --storm-ms 3000 \
	--restart "rm -f $LOGS/s1.json; $(memd_cmd 1) >>$LOGS/memd1.log 2>&1 &" 2>&1)
rc=$?
sed 's/^\([^#]\)/# \1/' <<<"$out"
victim=$(grep "^# victim:" <<<"$out")
VNS=$(sed -n 's/^# ns=//p' <<<"$out")
wait_serving 1 && [ "$(jget 1 transport.mode)" = afxdp-copy ] ||
	not_ok "server 1 did not restart on AF_XDP"
# what each server holds for the victim is what the client counts there: no copy
# lost, none left behind (stale versions freed, the restarted server reset)
sleep 1.2	# the stats files are written every second
held_ok=1
for k in 1 2 3; do
	mine=$(sed -n "s/^# server $((k - 1)): .* pages=\([0-9]*\) .*/\1/p" <<<"$out")
	theirs=$(python3 -c 'import json,sys
v=json.load(open(sys.argv[1]))
print(sum(n["pages"] for n in v["per_namespace"] if n["ns"] == sys.argv[2]))' "$LOGS/s$k.json" "$VNS")
	echo "# server $k holds $theirs of the victim's pages, the client counts $mine"
	[ -n "$mine" ] && [ "$mine" = "$theirs" ] || held_ok=0
done
if [ "$rc" = 0 ] && [ "$(kv "$victim" bad_pages)" = 0 ] && [ "$(kv "$victim" zero_pages)" = 0 ] &&
	[ "$held_ok" = 1 ]; then
	ok "victim: $NPAGES pages on 2 of 3 servers, server 1 killed -9 in a read storm:" \
		"$(kv "$victim" repaired) copies re-created, every page intact"
else
	not_ok "victim: exit $rc, the servers hold what the client counts: $held_ok; $(why "$out")"
fi

# 3: a rogue client (another VM's key) at server 2, which holds victim pages
forged0=$(jget 2 drops.forged)
out=$(nsenter --net="/run/netns/$C" "$PAGES" rogue --server "10.79.2.2:$PORT/${PK[2]}" \
	--pages 256 --key-seed 2 --victim-ns "$VNS" 2>&1)
rc=$?
sed 's/^\([^#]\)/# \1/' <<<"$out"
sleep 1.2	# the stats file is written every second
forged=$(( $(jget 2 drops.forged) - forged0 ))
DISCLOSED=$(sed -n 's/.* disclosed=\([0-9]*\).*/\1/p' <<<"$out")
if [ "$rc" = 0 ] && [ "${DISCLOSED:-x}" = 0 ] && [ "$forged" -ge 4 ]; then
	ok "rogue: 256 ids ENOENT in its own namespace, $forged requests in the victim's" \
		"dropped as forged, 0 disclosed"
else
	not_ok "rogue: exit $rc, disclosed=${DISCLOSED:-?}, forged=$forged; $(why "$out")"
fi

# 4: garbage at server 3, then a client stores and reads again: 500 datagrams
# that fit one frame (payload up to 1472 bytes at MTU 1500), counted by the
# server, and 20 oversize ones (IP fragments: the XDP program passes them to the
# kernel, which has no socket on the port) that never reach it
drops0=$(( $(jget 3 drops) + $(jget 3 transport.rx_dropped) ))
nsenter --net="/run/netns/$C" python3 - "10.79.3.2" "$PORT" <<'EOF'
import os, random, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
random.seed(3)
for i in range(520):
    n = 9000 if i % 26 == 25 else random.choice([1, 16, 47, 48, 64, 200, 1400, 1472])
    b = bytearray(os.urandom(n))
    if i % 2 and n >= 8:
        b[0:5] = b"VTRM\x01"          # past the magic and version, then garbage
    s.sendto(bytes(b), (sys.argv[1], int(sys.argv[2])))
EOF
sleep 1.2
drops=$(( $(jget 3 drops) + $(jget 3 transport.rx_dropped) - drops0 ))
out=$(nsenter --net="/run/netns/$C" "$PAGES" victim "${SERVERS[@]}" --copies 2 --pages 256 \
	--key-seed 3 2>&1)
rc=$?
sed 's/^\([^#]\)/# \1/' <<<"$out"
if [ "$rc" = 0 ] && [ "$drops" = 500 ]; then
	ok "garbage: 500 datagrams dropped and counted, 20 oversize left to the kernel;" \
		"pages stored and read after"
else
	not_ok "garbage: $drops counted where 500 were sent, the client after it exited $rc"
fi

# 5: the client's own end on AF_XDP (one interface, so one server)
out=$(nsenter --net="/run/netns/$C" "$PAGES" victim --server "10.79.2.2:$PORT/${PK[2]}" \
	--copies 1 --pages 512 --key-seed 5 --client 10.79.2.1:7600 --client-if vc2 \
	--client-xdp "$PROG" 2>&1)
rc=$?
sed 's/^\([^#]\)/# \1/' <<<"$out"
if [ "$rc" = 0 ]; then
	ok "afxdp-client: 512 pages stored and read back with the client on AF_XDP too"
else
	not_ok "afxdp-client: exit $rc; $(why "$out")"
fi

# 6: a lossy, reordering path to a fourth server
if netns_new s4 && NS[4]=$NETNS_NAME && netns_new r && R=$NETNS_NAME &&
	netns_link "$C" vc4 10.79.4.1/24 "$R" ra 0.0.0.0/32 &&
	netns_link "$R" rb 0.0.0.0/32 "${NS[4]}" vs4 10.79.4.2/24; then
	ip -n "$R" addr flush dev ra
	ip -n "$R" addr flush dev rb
	if netns_netem "$C" vc4 loss 5% delay 1ms reorder 10% 50% &&
		netns_netem "${NS[4]}" vs4 loss 5% delay 1ms reorder 10% 50%; then
		IMPAIR_PID=
		ip -n "$R" link add br0 type bridge && ip -n "$R" link set ra master br0 &&
			ip -n "$R" link set rb master br0 && ip -n "$R" link set br0 up
	else
		netns_impair "$R" ra rb 5 10 "$LOGS/impair" >"$LOGS/impair.log" 2>&1
		IMPAIR_PID=$NETNS_PID
	fi
	PK[4]=$("$MEMD" --state-dir "$LOGS/state4" --show-key 2>/dev/null)
	start_memd 4
	wait_serving 4
	# the path is up (the impairer running, the neighbours resolved) before the client:
	# one echo of a few (some are lost on purpose)
	for _ in 1 2 3 4 5; do netns_ping "$C" 10.79.4.2 1 && break; done
	out=$(nsenter --net="/run/netns/$C" "$PAGES" victim --server "10.79.4.2:$PORT/${PK[4]}" \
		--copies 1 --pages "$LOSS_PAGES" --key-seed 6 --put-again 5 --wait-ms 2000 2>&1)
	rc=$?
	sed 's/^\([^#]\)/# \1/' <<<"$out"
	retries=$(sed -n 's/^# server 0: .* retries=\([0-9]*\) .*/\1/p' <<<"$out")
	impaired=yes
	if [ -n "$IMPAIR_PID" ]; then
		kill -TERM "$IMPAIR_PID"
		wait "$IMPAIR_PID" 2>/dev/null
		echo "# impair.py: $(cat "$LOGS/impair" 2>/dev/null)"
		[ "$(kv " $(cat "$LOGS/impair" 2>/dev/null)" dropped)" -gt 0 ] 2>/dev/null || impaired=no
	fi
	if [ "$rc" = 0 ] && [ "${retries:-0}" -gt 0 ] && [ "$impaired" = yes ]; then
		ok "loss-reorder: $LOSS_PAGES pages stored and read back through 5 % loss and reordering" \
			"($retries retries, $(kv "$(grep "^# victim:" <<<"$out")" waited) reads asked again)"
	else
		not_ok "loss-reorder: exit $rc, retries ${retries:-?}, frames dropped: $impaired;" \
			"$(why "$out")"
	fi
else
	not_ok "loss-reorder: the impaired path could not be set up"
fi

# 7: a server whose loop spins (--busy-poll)
if netns_new s5 && NS[5]=$NETNS_NAME &&
	netns_link "$C" vc5 10.79.5.1/24 "${NS[5]}" vs5 10.79.5.2/24; then
	PK[5]=$("$MEMD" --state-dir "$LOGS/state5" --show-key 2>/dev/null)
	MEMD_EXTRA=--busy-poll
	start_memd 5
	MEMD_EXTRA=
	busy=no
	wait_serving 5 && [ "$(jget 5 transport.busy_poll)" = True ] && busy=yes
	out=$(nsenter --net="/run/netns/$C" "$PAGES" victim --server "10.79.5.2:$PORT/${PK[5]}" \
		--copies 1 --pages 256 --key-seed 7 2>&1)
	rc=$?
	sed 's/^\([^#]\)/# \1/' <<<"$out"
	# its CPU ticks (utime + stime) over half a second with no client
	t0=$(awk '{print $14 + $15}' "/proc/${PID[5]}/stat" 2>/dev/null)
	sleep 0.5
	t1=$(awk '{print $14 + $15}' "/proc/${PID[5]}/stat" 2>/dev/null)
	spun=$(( (${t1:-0} - ${t0:-0}) * 1000 / $(getconf CLK_TCK) ))
	kill "${PID[5]}" 2>/dev/null
	if [ "$rc" = 0 ] && [ "$busy" = yes ] && [ "$spun" -ge 100 ]; then
		ok "busy-poll: 256 pages stored and read back from a server whose loop spins" \
			"($spun ms of CPU in 500 ms idle)"
	else
		not_ok "busy-poll: exit $rc, busy_poll in its stats: $busy, $spun ms of CPU in" \
			"500 ms idle (>= 100 when it spins); $(why "$out")" \
			"$(tail -3 "$LOGS/memd5.log" | tr '\n' ' ')"
	fi
else
	not_ok "busy-poll: the fifth server's link could not be set up"
fi

echo "# RESULT-REMOTE pages=$NPAGES fetch_p50_us=$(kv "$victim" fetch_p50_us)" \
	"fetch_p99_us=$(kv "$victim" fetch_p99_us) server_kills=1" \
	"bad_pages=$(kv "$victim" bad_pages) zero_pages=$(kv "$victim" zero_pages)" \
	"disclosed=${DISCLOSED:-?}"
for k in 1 2 3 4; do kill "${PID[k]}" 2>/dev/null; done
exit $FAILED
