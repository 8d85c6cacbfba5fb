# shellcheck shell=sh
# The remote tier part of vtierd-ctier (sourced; VTIERD_CTIER_PARTS has "remote";
# vtierd-remote.sh runs it alone): three vtier-memd memory servers, each in a
# network namespace of L1 of its own, joined to L1's own namespace by a veth
# pair (busybox: the namespace is held by a process, the veth's end moved into
# it), serve vm0's remote tier [remote.far] (lz4, two copies a page). The cold
# part of vm0's workload (its guest-physical extents, /run/cold.ext) is demoted
# to it and the guest reads its whole workload back (every page checked);
# during a second read-back one server is killed -9: faults are served from
# the other copy, vtierd logs it lost and re-creates its copies; restarted, it
# is regained. RESULT-REMOTE-L2 pages= fetch_p50_us= fetch_p99_us=
# fault_p50_us= server_kills=1 bad_pages= zero_pages= transport=
# (asserted: bad_pages=0, zero_pages=0, pages > 0, the lost and regained lines).
#   remote_servers_start   before vtierd starts: the servers; prints the config group
#   remote_part            the part itself (vm0 up, its workload filled)

REMOTE_PORT=7600
remote_ns_pid() { cat "/run/vtier-remote/ns$1.pid"; }
remote_memd_start() {
    local k=$1
    nsenter -t "$(remote_ns_pid "$k")" -n vtier-memd --listen "10.83.$k.2:$REMOTE_PORT" \
        --interface "vs$k" --transport auto --xdp-prog /opt/vtier/memd_steer.bpf.o \
        --state-dir "/run/vtier-remote/state$k" --stats-file "/run/vtier-remote/s$k.json" \
        >> "$TB_OUT/memd$k.log" 2>&1 &
    echo $! > "/run/vtier-remote/memd$k.pid"
    for _ in $(seq 100); do
        [ -s "/run/vtier-remote/s$k.json" ] && return 0
        sleep 0.1
    done
    fail "vtier-memd $k did not start: $(tail -5 "$TB_OUT/memd$k.log")"
}
remote_servers_start() {
    local k pid servers=""
    mkdir -p /run/vtier-remote /sys/fs/bpf
    grep -q " /sys/fs/bpf bpf" /proc/mounts || mount -t bpf bpf /sys/fs/bpf ||
        echo "no bpffs: AF_XDP may fall back to UDP" >&2
    modprobe veth 2>/dev/null || true
    for k in 1 2 3; do
        # the namespace: held by a process of its own
        unshare -n sleep 100000 &
        pid=$!
        echo "$pid" > "/run/vtier-remote/ns$k.pid"
        sleep 0.2
        ip link add "vr$k" type veth || fail "veth: $(ip link add vr$k type veth 2>&1)"
        # busybox names the peer veth0 (it takes no peer name)
        ip link set veth0 name "vs$k" && ip link set "vs$k" netns "$pid" ||
            fail "moving the veth end into server $k's namespace"
        ip addr add "10.83.$k.1/24" dev "vr$k" && ip link set "vr$k" up ||
            fail "vr$k up"
        nsenter -t "$pid" -n sh -c "ip addr add 10.83.$k.2/24 dev vs$k && ip link set vs$k up &&
            ip link set lo up" || fail "vs$k up in server $k's namespace"
        ping -c 1 -W 2 "10.83.$k.2" > /dev/null || fail "no route to server $k's namespace"
        mkdir -p "/run/vtier-remote/state$k"
        pk=$(vtier-memd --state-dir "/run/vtier-remote/state$k" --show-key) ||
            fail "vtier-memd --show-key"
        remote_memd_start "$k"
        servers="$servers${servers:+, }10.83.$k.2:$REMOTE_PORT/$pk"
    done
    printf '\n[remote.far]\nservers = %s\ncopies = 2\ncodec = lz4\n' "$servers"
}
remote_mode() {
    sed -n 's/.*"mode": *"\([a-z-]*\)".*/\1/p' "/run/vtier-remote/s$1.json" | head -1
}
# the pages all three servers hold (each server's total, every namespace)
remote_held() {
    sed -n 's/.*"namespaces": *[0-9]*, *"pages": *\([0-9]*\).*/\1/p' /run/vtier-remote/s1.json \
        /run/vtier-remote/s2.json /run/vtier-remote/s3.json | awk '{s += $1} END {print s + 0}'
}
# the workload's cold extents (gpa=HEX bytes=HEX lines) demoted to far; wait for the mover
remote_demote() {
    local l gpa bytes
    while read -r l; do
        gpa=$(echo "$l" | sed -n 's/.*gpa=\(0x\)\{0,1\}\([0-9a-f]*\).*/\2/p')
        bytes=$(echo "$l" | sed -n 's/.*bytes=\(0x\)\{0,1\}\([0-9a-f]*\).*/\2/p')
        [ -n "$gpa" ] && [ -n "$bytes" ] || continue
        ctl demote vm0 tier=far gpa=$((0x$gpa)) len=$((0x$bytes)) > /dev/null ||
            fail "demote vm0 tier=far gpa=0x$gpa len=0x$bytes"
    done < /run/cold.ext
    sleep 1
    for _ in $(seq 600); do
        [ "$(vget vm0 $B.backlog)" = 0 ] && return 0
        sleep 1
    done
    fail "the demotion to far did not end within 600 s"
}
remote_verify() {
    local v bad
    v=$(tb_l2 vm0 -t 1200 'vtier-workload ctl verify report=20') || true
    echo "$v" >&2
    bad=$(field "$v" bad)
    [ -n "$bad" ] || fail "no verify result: $v"
    echo "bad=$bad zero=$(echo "$v" | grep -c 'all zeros' || true)"
}
remote_part() {
    local s far held r bad zero t0 mode
    tb_step "remote: vm0's cold memory demoted to the remote tier on three vtier-memd in L1 namespaces"
    ctl policy vm0 mode=off > /dev/null || fail "policy mode=off"
    mode=$(remote_mode 1)
    echo "server 1 serves on: $mode"
    t0=$(ms_now)
    remote_demote
    echo "demoted in $(($(ms_now) - t0)) ms"
    s=$(vget vm0 $B.ctiers.far.pages $B.ctiers.far.zero_pages $B.ctiers.far.same_pages \
        $B.ctiers.far.compressed_bytes $B.ctiers.far.remote.servers_up) || fail "stats: $s"
    echo "far: pages zero same compressed_bytes servers_up: $s"
    set -- $s
    far=$1
    [ "$far" -gt 0 ] || fail "no page of vm0 in the remote tier"
    sleep 1.2   # the servers' stats files: every second
    held=$(remote_held)
    echo "the servers hold $held pages (two copies of $(($1 - $2 - $3)) compressed ones)"
    [ "$held" -ge $((2 * ($1 - $2 - $3))) ] ||
        fail "the servers hold $held pages, fewer than two copies of $(($1 - $2 - $3))"
    tb_step "remote: the guest reads every page back"
    r=$(remote_verify)
    [ "$(field "$r" bad)" = 0 ] && [ "$(field "$r" zero)" = 0 ] || fail "read back: $r"

    tb_step "remote: demoted again, server 1 killed -9 while the guest reads everything"
    remote_demote
    (remote_verify > /run/vtier-remote/verify.out 2>/run/vtier-remote/verify.log) &
    t0=$!
    sleep 3
    kill -9 "$(cat /run/vtier-remote/memd1.pid)"
    wait "$t0" || true
    r=$(cat /run/vtier-remote/verify.out)
    cat /run/vtier-remote/verify.log
    bad=$(field "$r" bad)
    zero=$(field "$r" zero)
    [ -n "$bad" ] || fail "no verify result after the kill: $(cat /run/vtier-remote/verify.log)"
    for _ in $(seq 50); do
        grep -q "remote tier far: server 10.83.1.2:$REMOTE_PORT lost" "$TB_OUT/vtierd.log" && break
        sleep 0.2
    done
    grep "remote tier far" "$TB_OUT/vtierd.log" | tail -3
    grep -q "remote tier far: server 10.83.1.2:$REMOTE_PORT lost" "$TB_OUT/vtierd.log" ||
        fail "vtierd did not log server 1 lost"
    s=$(vget vm0 $B.fault_p50_ns $B.ctiers.far.remote.fetch_p50_ns \
        $B.ctiers.far.remote.fetch_p99_ns $B.ctiers.far.remote.get_fallbacks \
        $B.ctiers.far.remote.repaired $B.poisoned) || fail "stats: $s"
    echo "fault_p50_ns fetch_p50_ns fetch_p99_ns get_fallbacks repaired poisoned: $s"
    set -- $s
    echo "RESULT-REMOTE-L2 pages=$far fetch_p50_us=$(($2 / 1000)) fetch_p99_us=$(($3 / 1000))" \
        "fault_p50_us=$(($1 / 1000)) server_kills=1 bad_pages=$bad zero_pages=$zero" \
        "transport=$mode"
    [ "$bad" = 0 ] && [ "$zero" = 0 ] || fail "$bad bad and $zero zero pages after server 1's kill"
    [ "$6" = 0 ] || fail "$6 pages poisoned"

    tb_step "remote: server 1 restarted, regained, the tier takes pages again"
    remote_memd_start 1
    for _ in $(seq 100); do
        grep -q "remote tier far: server 10.83.1.2:$REMOTE_PORT regained" "$TB_OUT/vtierd.log" &&
            break
        sleep 0.2
    done
    grep -q "remote tier far: server 10.83.1.2:$REMOTE_PORT regained" "$TB_OUT/vtierd.log" ||
        fail "vtierd did not log server 1 regained within 20 s"
    remote_demote
    r=$(remote_verify)
    [ "$(field "$r" bad)" = 0 ] && [ "$(field "$r" zero)" = 0 ] || fail "read back: $r"
    ctl policy vm0 mode=auto > /dev/null || fail "policy mode=auto"
}
