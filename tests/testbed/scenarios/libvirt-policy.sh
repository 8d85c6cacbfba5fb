# libvirt-policy: libvirtd runs in L1 and starts an L2 domain under KVM whose
# <metadata> holds a vtier policy; vtierd attaches it by its libvirt events and
# tiers it (damon-kernel, NUMA mover). Issue 14's end-to-end test:
#   1. vtierd starts before libvirtd: it waits, connects when libvirtd comes,
#      and attaches the domain at its start (attach_s: virsh create to
#      vtierctl list); the hook (qemu.d/50-vtier) runs at the start
#   2. the policy of the metadata is the VM's; under dram_limit=512MiB the
#      VM's node-0 use comes within it
#   3. virsh metadata --live sets dram_limit=192MiB: the first window after
#      the call already acts on it (live_policy_windows: windows from the call
#      to the first window that demotes) and node-0 use comes within it
#      (limit_windows), as vtier-tbnuma sees it (move_pages, not vtierd's word)
#   4. a bad policy (dram_limit="lots") is refused where the operator sees it
#      (vtierctl status, vtierd's log) and the old one stays in force
#   5. libvirtd restarts: the VM stays attached, a metadata change after it
#      is applied (events registered again)
#   6. metrics: a scrape of --metrics-listen has the domain's per-tier bytes
#      and passes promtool check metrics
#   7. vtierd restarts after libvirtd: it attaches the running domain again
#   8. the hook as libvirt runs it, 100 times each with vtierd up, down and
#      hung (SIGSTOP): it exits 0 every time, p99 fork to exit <= 1000 ms in
#      L1 (under TCG; the 100 ms bound is the host's test, tests/libvirt/test_hook.py);
#      a domain starts while vtierd is hung, which stays hung until libvirtd
#      drops its connection for missed keepalives; vtierd then still exits 0
#   9. every guest page verified; virsh destroy detaches the VM
# One line:
#   RESULT-LIBVIRT attach_s= live_policy_windows= hook_p99_ms_up= hook_p99_ms_down=
#                  hook_p99_ms_hung= bad_pages=
# run-scenario copies in libvirtd, virsh, the QEMU driver, their libraries, the
# hook, promtool and vtier-tbtimes. Window: VTIERD_WINDOW_MS (default 2000).
export PATH=/opt/vtier/bin:$PATH
W=${VTIERD_WINDOW_MS:-2000}
. /src/tests/testbed/scenarios/lib.sh
VLOG=/dev/null
URI=qemu:///system
NS=http://vtier.dev/xmlns/libvirt/policy/1
METRICS=127.0.0.1:9477
lv() { virsh -c "$URI" "$@"; }
field() { echo "$1" | sed -n "s/.*$2=\([0-9]*\).*/\1/p"; }
# vm0's dram_limit in bytes is $1
limit_is() { [ "$(ctl status vm0 --get policy.dram_limit)" = "$1" ]; }
# lib.sh's fail, with libvirtd's and this vtierd's log
fail() {
    ctl status vm0 2>&1 || true
    tail -20 "$VLOG" 2>/dev/null
    tail -20 "$TB_OUT/libvirtd.log" 2>/dev/null
    tb_fail "$@"
}
# wait_for SECONDS WHAT CMD...: until CMD succeeds, or fail
wait_for() {
    local t=$1 what=$2 i
    shift 2
    for i in $(seq $((t * 5))); do
        "$@" > /dev/null 2>&1 && return 0
        sleep 0.2
    done
    fail "$what: not within $t s"
}
listed() { ctl list 2>/dev/null | grep -q "^$1 "; }
# vm0's node-0 MiB as move_pages sees it (its whole RAM mapping)
node0_mib() {
    local v
    v=$(vtier-tbnuma where "$(tb_l2_pid vm0)" "$hva" $((1024 * MIB))) || return 1
    echo $(( $(field "$v" node0) * 4096 / MIB ))
}

tb_step "L1: libvirt's directories and configuration"
echo 0 > /proc/sys/kernel/numa_balancing
# the metrics endpoint listens on loopback, which L1's init leaves down
ip link set lo up || fail "cannot bring lo up"
[ -d /sys/kernel/mm/damon/admin ] || tb_skip "L1 kernel has no DAMON sysfs"
command -v libvirtd > /dev/null || fail "no libvirtd in L1 (run-scenario copies it in)"
mkdir -p /etc/libvirt/hooks/qemu.d /var/lib/libvirt/qemu /var/log/libvirt/qemu \
    /var/cache/libvirt /run/libvirt /run/vtier "$TB_OUT/l2/vm0" "$TB_OUT/l2/vm1"
chmod 700 /run/vtier
cp /opt/vtier/bin/vtier-libvirt-hook /etc/libvirt/hooks/qemu.d/50-vtier
# the QEMU driver resolves its built-in default user before it reads qemu.conf
grep -q '^libvirt-qemu:' /etc/passwd ||
    echo 'libvirt-qemu:x:64055:64055:libvirt-qemu:/var/lib/libvirt:/bin/false' >> /etc/passwd
grep -q '^libvirt-qemu:' /etc/group || echo 'libvirt-qemu:x:64055:' >> /etc/group
grep -q '^kvm:' /etc/group || echo 'kvm:x:108:' >> /etc/group
cat > /etc/libvirt/qemu.conf <<CONF
stdio_handler = "file"
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
seccomp_sandbox = 0
cgroup_controllers = [ ]
namespaces = [ ]
CONF
cat > /etc/libvirt/libvirtd.conf <<CONF
auth_unix_rw = "none"
auth_unix_ro = "none"
log_outputs = "3:file:$TB_OUT/libvirtd.log"
CONF
start_libvirtd() {
    libvirtd --pid-file /run/libvirtd.pid --config /etc/libvirt/libvirtd.conf \
        >> "$TB_OUT/libvirtd.out" 2>&1 < /dev/null &
    wait_for 60 "libvirtd answering" lv version
}
stop_libvirtd() {
    local pid
    pid=$(cat /run/libvirtd.pid 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    fail "libvirtd did not stop on SIGTERM"
}
vtierd_n=0
start_vtierd() {
    vtierd_n=$((vtierd_n + 1))
    VLOG=$TB_OUT/vtierd.$vtierd_n.log
    vtierd --socket "$SOCK" --agent-socket none --libvirt-uri "$URI" \
        --metrics-listen "$METRICS" > "$VLOG" 2>&1 < /dev/null &
    vtierd_pid=$!
    wait_for 20 "vtierd's control socket" ctl list
}
stop_vtierd() {
    kill "$vtierd_pid" 2>/dev/null
    wait "$vtierd_pid" || fail "vtierd exited $? on SIGTERM"
}
# The testbed's L2 guest as a libvirt domain: its kernel, initrd and command
# line, the testbed's control port as a virtio channel, and (qemu:commandline)
# vtierd's QMP socket (libvirt holds the domain's own monitor; vtierd refuses
# a domain with two -qmp sockets, so the scenario asks QEMU through libvirt).
domain_xml() { # NAME MIB POLICY-ATTRS|"" > FILE
    local meta=""
    [ -n "$3" ] && meta="<metadata><vtier:policy xmlns:vtier='$NS' $3/></metadata>"
    cat <<XML
<domain type='kvm' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>$1</name>
  <memory unit='MiB'>$2</memory>
  <vcpu>$TB_L2_CPUS</vcpu>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <kernel>$TB_L2_KERNEL</kernel>
    <initrd>$TB_L2_INITRD</initrd>
    <cmdline>console=ttyS0 panic=-1 rdinit=/init loglevel=4 mitigations=off vtier.name=$1</cmdline>
  </os>
  <cpu mode='host-passthrough'/>
  <on_reboot>destroy</on_reboot>
  $meta
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <serial type='file'><source path='$TB_OUT/l2/$1/console.log'/></serial>
    <channel type='unix'>
      <source mode='bind' path='$TB_RUN/$1.ctl'/>
      <target type='virtio' name='vtier.ctl'/>
    </channel>
    <memballoon model='none'/>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-qmp'/><qemu:arg value='unix:$TB_RUN/$1.agent.qmp,server=on,wait=off'/>
  </qemu:commandline>
</domain>
XML
}
# libvirt started it: the testbed's helpers (tb_l2, tb_l2_stop) find it by pid
adopt() { # NAME
    wait_for 30 "$1's pid file" test -s "/run/libvirt/qemu/$1.pid"
    cat "/run/libvirt/qemu/$1.pid" > "$TB_RUN/$1.pid"
    tb_uptime > "$TB_RUN/$1.started"
}

tb_step "1. vtierd before libvirtd; the domain attached at its start"
start_vtierd
wait_for 30 "vtierd saying it waits for libvirtd" grep -q "retrying in" "$VLOG"
start_libvirtd
lv version | head -3
wait_for 40 "vtierd connected to libvirtd" grep -q "connected, 0 running" "$VLOG"
domain_xml vm0 1024 "mode='auto' dram_limit='512MiB' window_ms='$W' budget='64MiB'" > /tmp/vm0.xml
t0=$(tb_uptime)
lv create /tmp/vm0.xml || fail "virsh create vm0 failed: $(tail -5 "$TB_OUT/libvirtd.log")"
wait_for 60 "vm0 attached by vtierd" listed vm0
attach_s=$(awk "BEGIN {printf \"%.2f\", $(tb_uptime) - $t0}")
echo "attached ${attach_s} s after virsh create"
adopt vm0
tb_l2_wait vm0
kvm=$(lv qemu-monitor-command vm0 '{"execute":"query-kvm"}') || fail "query-kvm through libvirt failed"
echo "$kvm" | grep -q '"enabled":true' || fail "vm0 is not running under KVM: $kvm"
hv=$(tb_l2 vm0 "dmesg | sed -n 's/.*Hypervisor detected: //p'")
[ "$hv" = KVM ] || fail "vm0's kernel sees hypervisor '$hv', not KVM"
tb_step "L2 vm0: runs under KVM (query-kvm through libvirt, guest sees $hv)"
grep "hook" "$TB_OUT/libvirtd.log" | tail -3 || true

tb_step "2. the metadata's policy is the VM's; node-0 use within dram_limit=512MiB"
by=$(ctl status vm0 --get attached_by) || fail "status vm0: $by"
[ "$by" = libvirt ] || fail "vm0 not attached as a libvirt domain: attached by $by"
limit_is 536870912 || fail "the metadata's dram_limit is not vm0's: $(ctl status vm0 --get policy)"
ctl status vm0 | head -6
hva=$(ctl status vm0 --get ram.0.hva) || fail "no HVA in vtierctl status: $hva"
tb_l2 vm0 'vtier-workload serve --size 512M > /run/wl.log 2>&1 &'
tb_l2 vm0 'vtier-workload ctl --wait 300 info'
tb_l2 vm0 "rm -f /run/A.stop; (while [ ! -e /run/A.stop ]; do
    vtier-workload ctl phase dist=uniform ranges=0-64M duration_ms=$((W * 2)) write_pct=5 ||
        { echo FAILED; exit 1; }; done; echo done) > /run/A.log 2>&1 &"
ok=""
for i in $(seq 1 30); do
    sleep_window
    n0=$(node0_mib) || fail "vtier-tbnuma where failed"
    s=$(vget vm0 windows demotions promotions) || fail "stats vm0: $s"
    # shellcheck disable=SC2086
    set -- $s
    echo "window $1: node0 ${n0} MiB, demotions $2, promotions $3"
    if [ "$n0" -le 520 ] && [ "$1" -ge 3 ]; then ok=$i; break; fi
done
[ -n "$ok" ] || fail "node-0 use not within dram_limit=512MiB after 30 windows (${n0} MiB)"

tb_step "3. virsh metadata --live: dram_limit=192MiB"
s=$(vget vm0 windows demotions) || fail "stats vm0: $s"
# shellcheck disable=SC2086
set -- $s
w0=$1 d0=$2
lv metadata vm0 --uri "$NS" --key vtier --live \
    --set "<policy mode='auto' dram_limit='192MiB' window_ms='$W' budget='64MiB'/>" ||
    fail "virsh metadata --live failed"
live=""
limit=""
for i in $(seq 1 40); do
    sleep_window
    s=$(vget vm0 windows demotions dram_allowance) || fail "stats vm0: $s"
    n0=$(node0_mib) || fail "vtier-tbnuma where failed"
    # shellcheck disable=SC2086
    set -- $s
    w=$(($1 - w0))
    echo "window +$w: node0 ${n0} MiB, demotions $2, dram_allowance $3"
    [ -z "$live" ] && [ "$2" -gt "$d0" ] && live=$w
    [ -z "$limit" ] && [ "$n0" -le 200 ] && limit=$w
    [ -n "$live" ] && [ -n "$limit" ] && break
done
ctl policy vm0
[ -n "$live" ] || fail "no window demoted anything after dram_limit=192MiB"
[ -n "$limit" ] || fail "node-0 use not within 192 MiB (+8) after 40 windows: ${n0} MiB"
echo "live policy: first demoting window +$live, node-0 within the limit at +$limit"
[ "$live" -le 2 ] || fail "the live policy took $live windows to act on (the window running at the call, then the next)"

tb_step "4. a bad policy is refused and the old one kept"
lv metadata vm0 --uri "$NS" --key vtier --live --set "<policy mode='auto' dram_limit='lots'/>" ||
    fail "virsh metadata --live (bad) failed"
wait_for 10 "the refusal in vtierctl status" sh -c "vtierctl --socket $SOCK status vm0 | grep -q 'refused'"
ctl status vm0 | grep -i -e error -e refused
limit_is 201326592 || fail "the old policy did not stay: $(ctl status vm0 --get policy)"
grep -q "vm0: libvirt metadata policy refused" "$VLOG" || fail "no refusal in vtierd's log"

tb_step "5. libvirtd restarts under vtierd"
stop_libvirtd
start_libvirtd
wait_for 60 "vtierd reconnected" sh -c "grep -c 'connected, 1 running' '$VLOG' | grep -q '^[1-9]'"
listed vm0 || fail "vm0 not attached after the libvirtd restart"
lv metadata vm0 --uri "$NS" --key vtier --live \
    --set "<policy mode='auto' dram_limit='256MiB' window_ms='$W' budget='64MiB'/>" ||
    fail "virsh metadata --live after the restart failed"
wait_for 10 "the policy after the restart" limit_is 268435456
echo "metadata after the restart applied"

tb_step "6. metrics"
wget -q -O "$TB_OUT/metrics.txt" "http://$METRICS/metrics" || fail "no metrics at $METRICS"
grep -q 'vtier_vm_memory_bytes{domain="vm0",uuid="[0-9a-f-]\{36\}",tier=' "$TB_OUT/metrics.txt" ||
    fail "no per-tier bytes of vm0 in the metrics: $(grep vm0 "$TB_OUT/metrics.txt" | head -5)"
grep -q '^vtier_libvirt_connected 1' "$TB_OUT/metrics.txt" || fail "metrics: libvirt not connected"
promtool check metrics < "$TB_OUT/metrics.txt" || fail "promtool check metrics failed"
grep '^vtier_vm_memory_bytes' "$TB_OUT/metrics.txt"

tb_step "7. vtierd restarts after libvirtd: the running domain attached again"
stop_vtierd
t0=$(tb_uptime)
start_vtierd
wait_for 60 "vm0 attached by the new vtierd" listed vm0
reattach_s=$(awk "BEGIN {printf \"%.2f\", $(tb_uptime) - $t0}")
limit_is 268435456 || fail "the new vtierd did not take the metadata's policy"
echo "a vtierd started after libvirtd attached vm0 in ${reattach_s} s"

tb_step "8. the hook with vtierd up, down and hung"
lv dumpxml vm0 > /tmp/vm0.live.xml
HOOK=/etc/libvirt/hooks/qemu.d/50-vtier
hook_times() { # KIND
    local r
    r=$(vtier-tbtimes -n 100 -w 5 -i /tmp/vm0.live.xml -- "$HOOK" vm0 prepare begin -) ||
        fail "vtier-tbtimes failed"
    echo "hook, vtierd $1: $r" >&2
    [ "$(field "$r" failed)" = 0 ] || fail "the hook failed with vtierd $1: $r"
    echo "$r" | sed -n 's/.*p99_ms=\([0-9.]*\).*/\1/p'
}
p99_up=$(hook_times up)
# libvirtd's count of clients it dropped for missed keepalives
dropped() { grep -c "keepalive timeout" "$TB_OUT/libvirtd.log" || true; }
drops0=$(dropped)
dropped_since() { [ "$(dropped)" -gt "$drops0" ]; }
kill -STOP "$vtierd_pid"
p99_hung=$(hook_times hung)
# a domain starts while vtierd is hung (the hook runs at prepare, start, started)
domain_xml vm1 256 "mode='off'" > /tmp/vm1.xml
t0=$(tb_uptime)
lv create /tmp/vm1.xml || { kill -CONT "$vtierd_pid"; fail "virsh create with vtierd hung failed"; }
echo "vm1 created with vtierd hung in $(awk "BEGIN {printf \"%.2f\", $(tb_uptime) - $t0}") s"
lv destroy vm1 > /dev/null || fail "virsh destroy vm1 failed"
# Stay hung until libvirtd drops vtierd for its missed keepalives (5 s x 5):
# vtierd must then take the closed connection as an error and still detach
# and exit 0 below (it died of SIGPIPE at its next libvirt write before).
wait_for 60 "libvirtd dropping the hung vtierd's connection" dropped_since
kill -CONT "$vtierd_pid"
stop_vtierd
p99_down=$(hook_times down)
# The hook's p99 in L1, fork to exit under TCG (its 100 ms bound is the host's
# test). Measured: up 73.8-97.5 ms, down 41.8-68.3, hung 42.4-53.3 in quiet runs
# (docs/results/2026-11-27-libvirt-policy.md); 323.6, 202.0 and 156.2 in make
# check under load (2026-11-29). Bound: 1000 ms each, 3x the worst.
hook_bound() { # KIND P99
    awk "BEGIN {exit !($2 <= 1000)}" ||
        fail "the hook's p99 in L1 with vtierd $1: $2 ms, over its bound 1000 ms"
}
hook_bound up "$p99_up"
hook_bound hung "$p99_hung"
hook_bound down "$p99_down"
start_vtierd
wait_for 60 "vm0 attached again" listed vm0

tb_step "9. verify guest memory; virsh destroy detaches"
tb_l2 vm0 -t 300 "touch /run/A.stop; while ! grep -q '^done\|^FAILED' /run/A.log; do sleep 0.2; done
    ! grep -q FAILED /run/A.log" || fail "the hot-set phases failed: $(tb_l2 vm0 'tail -3 /run/A.log')"
out=$(tb_l2 vm0 -t 600 'vtier-workload ctl verify') || fail "verify failed: $out"
echo "$out"
echo "$out" | grep -q 'bad=0 ' || fail "verify did not report bad=0: $out"
bad=$(echo "$out" | sed -n 's/.* bad=\([0-9]*\) .*/\1/p')
lv destroy vm0 || fail "virsh destroy vm0 failed"
rm -f "$TB_RUN/vm0.pid"
wait_for 30 "vm0 detached after virsh destroy" sh -c "! vtierctl --socket $SOCK list | grep -q '^vm0 '"
stop_vtierd
stop_libvirtd
echo "RESULT-LIBVIRT attach_s=$attach_s live_policy_windows=$live limit_windows=$limit" \
    "reattach_s=$reattach_s hook_p99_ms_up=$p99_up hook_p99_ms_down=$p99_down" \
    "hook_p99_ms_hung=$p99_hung bad_pages=$bad"
tb_step "libvirt-policy: done"
