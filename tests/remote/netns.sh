# shellcheck shell=bash
# Network namespaces for the remote tier's tests, sourced (tests/remote/).
# Needs root. Every namespace made here is removed by netns_cleanup, which
# netns_init traps on EXIT (and INT/TERM): a failing test leaves nothing.
# Names are unique per run (vtr<pid><random>...), so runs never collide.
#
#   netns_init                   a run prefix in NETNS_PREFIX; the cleanup trap
#   netns_new NAME               a namespace ${NETNS_PREFIX}NAME, lo up; its name in
#                                NETNS_NAME (not printed: $(...) would lose it for cleanup)
#   netns_link NSA IFA ADDRA NSB IFB ADDRB [MTU] [QUEUES]
#                                a veth pair between two of them, ADDR as a.b.c.d/len, up;
#                                QUEUES rx and tx queues each end (default 1)
#   netns_run NS CMD...          CMD in NS's network namespace only (nsenter --net:
#                                the mount namespace, so bpffs, stays ours)
#   netns_spawn NS CMD...        CMD in NS in the background; its pid in NETNS_PID
#                                (CMD's own: nsenter execs it, no subshell between)
#   netns_ping NS ADDR [COUNT]   ICMP echo from NS to ADDR (ping, else python3 raw socket)
#   netns_netem NS IF ARGS...    tc netem on IF's egress ("loss 5% reorder 25% delay 1ms");
#                                returns 3 with NETNS_WHY set when the kernel has no netem
#   netns_impair NS IFA IFB LOSS REORDER STATS
#                                where netem is missing: impair.py in NS bridges IFA and
#                                IFB (two veths of NS), dropping LOSS % and reordering
#                                REORDER % of the frames; its pid in NETNS_PID; on
#                                SIGTERM it writes frames=/dropped=/reordered= to STATS
#   netns_need_bpffs             re-runs the caller under its own mount namespace
#                                with a bpffs on /sys/fs/bpf when none is mounted
#                                (libxdp's dispatcher pins its programs there)
#   netns_cleanup                removes every namespace of this run

NETNS_PREFIX=
NETNS_LIST=()

netns_init() {
	NETNS_PREFIX="vtr$$$((RANDOM % 1000))"
	NETNS_LIST=()
	trap netns_cleanup EXIT
	trap 'exit 130' INT TERM
}

netns_new() {
	local ns="${NETNS_PREFIX}$1"
	ip netns add "$ns" || return 1
	NETNS_LIST+=("$ns")
	NETNS_NAME=$ns
	ip -n "$ns" link set lo up
}

netns_link() {
	local nsa=$1 ifa=$2 addra=$3 nsb=$4 ifb=$5 addrb=$6 mtu=${7:-1500} q=${8:-1}
	ip -n "$nsa" link add "$ifa" mtu "$mtu" numrxqueues "$q" numtxqueues "$q" type veth \
		peer name "$ifb" mtu "$mtu" numrxqueues "$q" numtxqueues "$q" netns "$nsb" || return 1
	ip -n "$nsa" addr add "$addra" dev "$ifa" &&
	ip -n "$nsb" addr add "$addrb" dev "$ifb" &&
	ip -n "$nsa" link set "$ifa" up &&
	ip -n "$nsb" link set "$ifb" up
}

netns_run() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" "$@"
}

netns_spawn() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" "$@" &
	NETNS_PID=$!
}

netns_ping() {
	local ns=$1 addr=$2 count=${3:-3}
	if command -v ping >/dev/null; then
		netns_run "$ns" ping -c "$count" -W 1 -q "$addr" >/dev/null
		return
	fi
	netns_run "$ns" python3 - "$addr" "$count" <<'PY'
import os, socket, struct, sys, time
addr, count = sys.argv[1], int(sys.argv[2])
def csum(b):
    if len(b) % 2: b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.settimeout(1.0)
ident, ok = os.getpid() & 0xffff, 0
for seq in range(count):
    body = b'vtier-ping' * 4
    hdr = struct.pack('!BBHHH', 8, 0, 0, ident, seq)
    pkt = struct.pack('!BBHHH', 8, 0, csum(hdr + body), ident, seq) + body
    s.sendto(pkt, (addr, 0))
    end = time.time() + 1.0
    while time.time() < end:
        try:
            data, src = s.recvfrom(2048)
        except socket.timeout:
            break
        ihl = (data[0] & 0xf) * 4
        t, _, _, i, q = struct.unpack('!BBHHH', data[ihl:ihl + 8])
        if t == 0 and i == ident and q == seq and src[0] == addr and data[ihl + 8:] == body:
            ok += 1
            break
sys.exit(0 if ok == count else 1)
PY
}

netns_netem() {
	local ns=$1 dev=$2
	shift 2
	local err
	if ! err=$(netns_run "$ns" tc qdisc replace dev "$dev" root netem "$@" 2>&1); then
		NETNS_WHY="tc netem on $dev: ${err:-failed} (sch_netem missing from this kernel?)"
		return 3
	fi
}

netns_impair() {
	local ns=$1 ifa=$2 ifb=$3 loss=$4 reorder=$5 stats=$6
	netns_spawn "$ns" python3 "$(dirname "${BASH_SOURCE[0]}")/impair.py" "$ifa" "$ifb" \
		"$loss" "$reorder" "$$" "$stats"
}

netns_need_bpffs() {
	if [ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" = bpf_fs ]; then
		return 0
	fi
	if [ -n "${NETNS_IN_UNSHARE:-}" ]; then
		mount -t bpf bpf /sys/fs/bpf
		return
	fi
	NETNS_IN_UNSHARE=1 exec unshare --mount --propagation private "$0" "$@"
}

netns_cleanup() {
	local ns
	for ns in "${NETNS_LIST[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	NETNS_LIST=()
}
