# vtier testbed: shell library for scenarios, sourced in L1 (busybox sh).
# A scenario is a shell script run with `set -e` in /tb/out; it passes when it
# returns 0, is skipped by tb_skip, and fails on any failing command or tb_fail.
#
#   tb_step TEXT                 log a step (shows in the runner's output)
#   tb_fail TEXT / tb_skip TEXT  end the scenario
#   tb_l2_start NAME [--mem SIZE] [--cpus N] [--memdev ram|memfd] [--node N]
#               [--append 'KERNEL ARGS'] [--modules m1,m2] [--no-wait] [-- QEMU ARGS...]
#                                boot an L2 guest under KVM and wait for its agent
#   tb_l2 NAME [-t SEC] 'CMD'    run CMD with sh -c in the guest; its output and status
#   tb_qmp NAME JSON...          QMP commands to the guest's QEMU; prints the replies
#   tb_l2_check_kvm NAME         fail unless the guest runs under KVM (not TCG)
#   tb_l2_stop NAME, tb_l2_stop_all
#   tb_l2_shell NAME [opts]      (interactive) boot a guest with its console here
#   tb_vtier_mark NAME TEXT      record that vtier acts on guest NAME's memory (the
#                                runner never reruns a failure after that guest's reset)
# Guests are background jobs of the scenario shell: wait for your own jobs by
# pid (`wait $pid`); a bare `wait` also waits for every guest QEMU.
# Per guest: QMP /run/tb/NAME.qmp (tb_qmp) and /run/tb/NAME.agent.qmp (a second
# monitor for the vtier agent: QEMU serves one client per QMP socket), control
# /run/tb/NAME.ctl (one command at a time: run long jobs in the background in the
# guest), QEMU pid /run/tb/NAME.pid, logs in /tb/out/l2/NAME/ (console.log, qemu.log).

PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
# A scenario's out directory: /tb/out, or /tb/out/NAME in a suite (l1.sh).
TB_OUT=${VTIER_TB_OUT:-/tb/out}
TB_RUN=/run/tb
TB_L2_KERNEL=/opt/vtier-tb/l2/vmlinuz
TB_L2_INITRD=$TB_RUN/l2.initrd

tb_uptime() { cut -d' ' -f1 /proc/uptime; }
# (builtins only: the scenario's deadline loop in l1.sh runs it every 0.2 s)
tb_uptime_b() { local u x; read -r u x < /proc/uptime; echo "$u"; }
tb_uptime_s() { cut -d. -f1 /proc/uptime; }
tb_mark() { echo "VTIER-TB-L1: $*"; }
tb_step() { echo "VTIER-TB-STEP: [$(tb_uptime) s] $*"; }
tb_fail() { echo "VTIER-TB-FAIL: $*"; exit 1; }
tb_skip() { echo "VTIER-TB-SKIP: $*"; exit 77; }

# ------------------------------------------------------------------ L1 host setup

tb_swap_dev() {
    local b
    for b in /sys/block/vd*; do
        [ -e "$b/serial" ] && [ "$(cat "$b/serial")" = vtier-swap ] && echo "/dev/${b##*/}" && return 0
    done
    return 1
}

# Run once by l1.sh before the scenario; any failure here fails the run. (It
# runs as an `if` condition, where set -e does not apply: every step checks.)
tb_l1_setup() {
    local t npt dev want
    for t in vtier-tbctl vtier-workload qemu-system-x86_64; do
        command -v "$t" > /dev/null || { echo "$t missing from L1"; return 1; }
    done
    # kvm.ignore_msrs=1: a guest's write to an MSR KVM does not handle (the
    # L2 kernel's PMU probe) is dropped instead of answered with an injected
    # #GP (an experiment: it did not prevent L2 triple faults, docs/testbed.md).
    if [ "${TB_L1_KVM_IGNORE_MSRS:-0}" = 1 ]; then
        modprobe kvm ignore_msrs=1 report_ignored_msrs=0 ||
            { echo "modprobe kvm ignore_msrs=1 failed"; return 1; }
    fi
    modprobe kvm_amd || { echo "modprobe kvm_amd failed"; return 1; }
    [ -c /dev/kvm ] || { echo "no /dev/kvm after modprobe kvm_amd"; return 1; }
    npt=$(cat /sys/module/kvm_amd/parameters/npt)
    [ "$npt" = Y ] || { echo "kvm_amd loaded with npt=$npt: no nested paging (L1 CPU lacks NPT?)"; return 1; }
    echo "[$(tb_uptime) s] kvm_amd: npt=$npt nested=$(cat /sys/module/kvm_amd/parameters/nested)" \
        "tdp_mmu=$(cat /sys/module/kvm/parameters/tdp_mmu)" \
        "ignore_msrs=$(cat /sys/module/kvm/parameters/ignore_msrs)"
    if [ "${TB_L1_HOLD_VM:-1}" = 1 ]; then
        # One VM held for L1's lifetime (see vtier-tbctl.c, hold-vm): KVM's
        # static keys stop flipping as guests come and go.
        : > /run/tb/l1/hold-vm.log
        vtier-tbctl hold-vm < /dev/null > /run/tb/l1/hold-vm.log 2>&1 &
        for t in 1 2 3 4 5 6 7 8 9 10; do
            grep -q holding /run/tb/l1/hold-vm.log && break
            sleep 0.2
        done
        grep -q holding /run/tb/l1/hold-vm.log ||
            { echo "vtier-tbctl hold-vm failed: $(cat /run/tb/l1/hold-vm.log)"; return 1; }
    fi
    if [ -n "${TB_L1_SWAP_DEV_EXPECTED:-}" ]; then
        modprobe virtio_blk || { echo "modprobe virtio_blk failed"; return 1; }
        dev=""
        for t in 1 2 3 4 5 6 7 8 9 10; do
            dev=$(tb_swap_dev) && break
            sleep 0.2
        done
        [ -n "$dev" ] || { echo "swap disk (virtio serial vtier-swap) not found"; return 1; }
        mkswap "$dev" > /dev/null && swapon "$dev" || { echo "mkswap/swapon $dev failed"; return 1; }
        echo "[$(tb_uptime) s] swap: $dev $(sed -n 2p /proc/swaps | awk '{print $3}') KiB"
    fi
    if [ "${TB_L1_ZSWAP:-0}" = 1 ]; then
        if [ -n "${TB_L1_ZSWAP_COMPRESSOR:-}" ]; then
            modprobe "$TB_L1_ZSWAP_COMPRESSOR" 2>/dev/null
            echo "$TB_L1_ZSWAP_COMPRESSOR" > /sys/module/zswap/parameters/compressor ||
                { echo "zswap compressor $TB_L1_ZSWAP_COMPRESSOR refused"; return 1; }
        fi
        echo Y > /sys/module/zswap/parameters/enabled || { echo "cannot enable zswap"; return 1; }
        echo "[$(tb_uptime) s] zswap: enabled=$(cat /sys/module/zswap/parameters/enabled)" \
            "compressor=$(cat /sys/module/zswap/parameters/compressor)" \
            "zpool=$(cat /sys/module/zswap/parameters/zpool)"
    fi
    if [ -n "${TB_L1_THP:-}" ]; then
        echo "$TB_L1_THP" > /sys/kernel/mm/transparent_hugepage/enabled ||
            { echo "THP mode $TB_L1_THP refused"; return 1; }
    fi
    echo "[$(tb_uptime) s] THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
    # Diagnostics, TB_L1_KVM_TRACE=1 (l1-kvm-trace.log): the guest RIP of every
    # SVM SHUTDOWN exit (127: a guest's triple fault) and every exception KVM
    # injects. Off by default: the filter runs on every exit.
    t=/sys/kernel/tracing
    if [ "${TB_L1_KVM_TRACE:-0}" != 1 ]; then
        echo "[$(tb_uptime) s] KVM trace: off (TB_L1_KVM_TRACE=1 for SHUTDOWN exits)"
    elif mount -t tracefs tracefs "$t" 2>/dev/null &&
        echo 'exit_reason == 127' > "$t/events/kvm/kvm_exit/filter" &&
        echo 1 > "$t/events/kvm/kvm_exit/enable" &&
        echo 1 > "$t/events/kvm/kvm_inj_exception/enable"; then
        echo "[$(tb_uptime) s] KVM trace: SHUTDOWN exits and injected exceptions"
    else
        echo "[$(tb_uptime) s] KVM trace: not available (no tracefs or kvm events)"
    fi
    tb_topology > "$TB_OUT/l1-topology.txt"
    echo "[$(tb_uptime) s] memory tiers: $(tb_tiers)"
    { cat /opt/vtier-tb/l2/l2.cpio && dd if=/tb/in/l2-overlay.cpio bs=512k 2>/dev/null; } \
        > "$TB_L2_INITRD" || { echo "cannot assemble the L2 initramfs"; return 1; }
    want=$(( $(wc -c < /opt/vtier-tb/l2/l2.cpio) + $(wc -c < /tb/in/l2-overlay.cpio) ))
    [ "$(wc -c < "$TB_L2_INITRD")" = "$want" ] || { echo "L2 initramfs truncated"; return 1; }
}

# "memory_tierN:nodes ..." as the L1 kernel sees them.
tb_tiers() {
    local t
    for t in /sys/devices/virtual/memory_tiering/memory_tier*; do
        [ -e "$t/nodelist" ] && printf '%s:%s ' "${t##*/}" "$(cat "$t/nodelist")"
    done
    echo
}

# Tier (memory_tierN) of a node.
tb_node_tier() {
    local t n
    for t in /sys/devices/virtual/memory_tiering/memory_tier*; do
        [ -e "$t/nodelist" ] || continue
        for n in $(tb_expand_list "$(cat "$t/nodelist")"); do
            [ "$n" = "$1" ] && echo "${t##*/}" && return 0
        done
    done
    return 1
}

# "0-2,4" -> "0 1 2 4"
tb_expand_list() {
    echo "$1" | tr , '\n' | while IFS=- read -r a b; do
        [ -n "$a" ] && seq "$a" "${b:-$a}"
    done | tr '\n' ' '
}

tb_topology() {
    local n id a f p
    echo "== memory tiers"
    tb_tiers
    echo "== nodes"
    for n in /sys/devices/system/node/node[0-9]*; do
        id=${n##*node}
        printf 'node%s cpus=%s mem_kb=%s tier=%s distance=%s' "$id" "$(cat "$n/cpulist")" \
            "$(awk '/MemTotal/ {print $4}' "$n/meminfo")" "$(tb_node_tier "$id")" \
            "$(cat "$n/distance" | tr ' ' ,)"
        for a in read_latency write_latency read_bandwidth write_bandwidth; do
            f=$(ls "$n"/access0/initiators/$a 2>/dev/null)
            [ -n "$f" ] && printf ' %s=%s' "$a" "$(cat "$f")"
        done
        echo
    done
    echo "== numa_balancing=$(cat /proc/sys/kernel/numa_balancing)" \
        "demotion_enabled=$(cat /sys/kernel/mm/numa/demotion_enabled 2>/dev/null)"
    echo "== thp enabled: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
    echo "== swaps"
    cat /proc/swaps
    echo "== zswap"
    for p in enabled compressor zpool max_pool_percent; do
        echo "$p=$(cat /sys/module/zswap/parameters/$p)"
    done
    echo "== kvm"
    for p in npt nested avic; do echo "kvm_amd.$p=$(cat /sys/module/kvm_amd/parameters/$p)"; done
    echo "kvm.tdp_mmu=$(cat /sys/module/kvm/parameters/tdp_mmu)"
    echo "== kernel $(uname -r)"
}

# ------------------------------------------------------------------ what vtier did
# A failure is rerun only when vtier had no part in it (tb/rerun.py,
# docs/testbed.md "Emulator faults"). The facts, on the 9p share so that they
# outlive an L1 crash: out/l2/NAME/vtier, one line per thing vtier did to the
# guest NAME's memory (its RAM handed to a tier agent, the patched QEMU,
# vtierd or vtier-bench running while the guest runs, vtier_guest.ko in it,
# vtier_tdp.ko in L1); /tb/out/vtier-l1, vtier_tdp.ko loaded in this L1 boot
# (the kernel keeps the taint across a suite's scenarios). Written before the
# action where a helper does it (tb_l2_start, insmod, the vtierd wrapper
# l1/vtierd-mark), and by l1.sh's watch of /proc and /sys/module every second.

# tb_vtier_mark NAME TEXT: vtier acts on guest NAME's memory.
tb_vtier_mark() {
    local name
    name=$1
    shift
    mkdir -p "$TB_OUT/l2/$name"
    echo "$(tb_uptime_b) $*" >> "$TB_OUT/l2/$name/vtier"
}

# The guests started by tb_l2_start and not stopped yet.
tb_l2_names() {
    local p n
    for p in "$TB_RUN"/*.pid; do
        [ -e "$p" ] || continue
        n=${p##*/}
        echo "${n%.pid}"
    done
}

# tb_vtier_mark_running TEXT: every guest whose QEMU runs now.
tb_vtier_mark_running() {
    local n
    for n in $(tb_l2_names); do
        tb_l2_alive "$n" && tb_vtier_mark "$n" "$*"
    done
    return 0
}

# tb_vtier_l1_mark TEXT: vtier's kernel code in L1 (every running guest's
# nested page tables are in its reach).
tb_vtier_l1_mark() {
    echo "$(tb_uptime_b) $*" >> "${TB_L1_OUT:-/tb/out}/vtier-l1"
    tb_vtier_mark_running "$*"
}

# Pids and names of vtier's host programs running now ("123:vtierd ...").
# Builtins only (l1.sh runs it every second).
tb_vtier_procs() {
    local p c out
    out=""
    for p in /proc/[0-9]*; do
        # a process that exits meanwhile: the shell's own "can't open" goes to
        # the group's stderr (a redirection fails before 2> of the same command)
        { read -r c < "$p/comm"; } 2>/dev/null || continue
        case "$c" in
            vtierd|vtier-bench|vtier-bench-b) out="$out ${p#/proc/}:$c" ;;
        esac
    done
    echo "${out# }"
}

# Every module a scenario loads in L1 goes through here (a function shadows
# busybox's insmod in the scenario's shell and its subshells).
insmod() {
    case "$*" in
        *vtier*) tb_vtier_l1_mark "insmod $*" ;;
    esac
    command insmod "$@"
}

# ------------------------------------------------------------------ L2 guests

tb_l2_start() {
    local name mem cpus memdev node append modules wait stdio dir backend cmdline console qemu bopts procs
    name=$1
    shift
    mem=$TB_L2_MEM cpus=$TB_L2_CPUS memdev=ram node="" append="" modules="" wait=1 stdio=0
    qemu=qemu-system-x86_64 bopts=""
    while [ $# -gt 0 ]; do
        case "$1" in
            --mem) mem=$2; shift 2 ;;
            --cpus) cpus=$2; shift 2 ;;
            --memdev) memdev=$2; shift 2 ;;
            --node) node=$2; shift 2 ;;
            --append) append=$2; shift 2 ;;
            --modules) modules=$2; shift 2 ;;
            --no-wait) wait=0; shift ;;
            --console-stdio) stdio=1; shift ;;
            # another QEMU binary (e.g. the patched one; it finds L1's firmware by -L)
            --qemu) qemu=$2; shift 2 ;;
            # more properties of the memory backend object (",tier-agent=PATH")
            --backend-opts) bopts=$2; shift 2 ;;
            --) shift; break ;;
            *) tb_fail "tb_l2_start: unknown option $1" ;;
        esac
    done
    dir=$TB_OUT/l2/$name
    [ -e "$TB_RUN/$name.pid" ] && tb_fail "tb_l2_start: $name is already running"
    mkdir -p "$dir"
    rm -f "$TB_RUN/$name.qmp" "$TB_RUN/$name.agent.qmp" "$TB_RUN/$name.ctl"
    case "$memdev" in
        ram) backend="memory-backend-ram,id=ram,size=$mem" ;;
        memfd) backend="memory-backend-memfd,id=ram,size=$mem,share=on" ;;
        *) tb_fail "tb_l2_start: --memdev is ram or memfd" ;;
    esac
    [ -n "$node" ] && backend="$backend,host-nodes=$node,policy=bind"
    backend="$backend$bopts"
    [ "$qemu" = qemu-system-x86_64 ] || set -- -L /usr/share/qemu -L /usr/share/seabios "$@"
    cmdline="console=ttyS0 panic=-1 rdinit=/init loglevel=4 mitigations=off vtier.name=$name"
    [ -n "$modules" ] && cmdline="$cmdline vtier.modules=$modules"
    [ -n "$append" ] && cmdline="$cmdline $append"
    tb_uptime > "$TB_RUN/$name.started"
    rm -f "$dir/events.log"
    # what vtier will do to its memory, written before QEMU starts
    case "$bopts" in
        *tier-agent=*) tb_vtier_mark "$name" "hand-off: its RAM served by the tier agent ($bopts)" ;;
    esac
    [ "$qemu" = qemu-system-x86_64 ] || tb_vtier_mark "$name" "runs the patched QEMU $qemu"
    procs=$(tb_vtier_procs)
    [ -z "$procs" ] || tb_vtier_mark "$name" "started while vtier runs in L1 ($procs)"
    [ ! -d /sys/module/vtier_tdp ] || tb_vtier_mark "$name" "started with vtier_tdp.ko loaded in L1"
    if [ "$stdio" = 1 ]; then
        console="stdio,id=con,mux=on,signal=off,logfile=$dir/console.log"
        set -- -mon chardev=con,mode=readline -no-reboot "$@"
    else
        console="file,id=con,path=$dir/console.log"
        # A guest that resets (triple fault) or powers off stops instead of
        # exiting: its watcher (vtier-tbctl watch) logs why, dumps its CPU
        # state and quits it. See docs/testbed.md, "Emulator faults".
        set -- -action reboot=shutdown,shutdown=pause \
            -qmp "unix:$TB_RUN/$name.watch.qmp,server=on,wait=off" "$@"
    fi
    set -- "$qemu" -name "$name,debug-threads=on" -accel kvm -cpu host -smp "$cpus" -m "$mem" \
        -machine q35,memory-backend=ram -object "$backend" \
        -nodefaults -no-user-config -display none \
        -kernel "$TB_L2_KERNEL" -initrd "$TB_L2_INITRD" -append "$cmdline" \
        -chardev "$console" -serial chardev:con \
        -device virtio-serial-pci \
        -chardev "socket,id=ctl,path=$TB_RUN/$name.ctl,server=on,wait=off" \
        -device virtserialport,chardev=ctl,name=vtier.ctl \
        -qmp "unix:$TB_RUN/$name.qmp,server=on,wait=off" \
        -qmp "unix:$TB_RUN/$name.agent.qmp,server=on,wait=off" "$@"
    echo "$*" > "$dir/cmdline"
    if [ "$stdio" = 1 ]; then
        echo "L2 $name console here; Ctrl-A X quits QEMU, Ctrl-A C its monitor"
        "$@"
        return
    fi
    "$@" < /dev/null > "$dir/qemu.log" 2>&1 &
    echo $! > "$TB_RUN/$name.pid"
    vtier-tbctl watch "$TB_RUN/$name.watch.qmp" "$dir/events.log" < /dev/null > /dev/null 2>&1 &
    echo $! > "$TB_RUN/$name.watcher"
    tb_step "L2 $name: started (mem $mem, cpus $cpus, memdev $memdev${node:+, node $node})"
    [ "$wait" = 1 ] || return 0
    tb_l2_wait "$name"
}

tb_l2_pid() { cat "$TB_RUN/$1.pid" 2>/dev/null; }

# Why a guest's QEMU ended (one line), from its watcher's log: the QMP SHUTDOWN
# reason, and for a reset whether the guest's kernel said anything first (the
# kernel announces its own reboots and panics). Whether a silent reset was a
# triple fault, and the emulator's, is the runner's to prove (tb/rerun.py;
# docs/testbed.md, "Emulator faults").
tb_l2_exit_cause() {
    local dir cause reason who t rip
    dir=$TB_OUT/l2/$1
    cause=$(grep '^cause ' "$dir/events.log" 2>/dev/null | head -1)
    if [ -z "$cause" ]; then
        echo "QEMU ended without a SHUTDOWN event (killed, or crashed: see its qemu.log)"
        return 0
    fi
    set -- $cause
    reason=$2 who=$3 t=$4
    rip=$(sed -n 's/^\([RE]IP=[0-9a-f]*\).*/\1/p' "$dir/events.log" | head -1)
    # KVM resets the vCPU on a SHUTDOWN exit: the RIP is in L1's trace then.
    case "$rip" in RIP=000000000000fff0|EIP=0000fff0) rip="" ;; esac
    [ -z "$rip" ] &&
        rip=$(grep -h 'kvm_exit:' /sys/kernel/tracing/trace 2>/dev/null |
            tail -1 | sed -n 's/.*\(rip 0x[0-9a-f]*\).*/L1 KVM trace: SHUTDOWN exit at \1/p')
    if [ "$reason" = guest-reset ] && [ "$who" = guest ]; then
        if grep -q -e 'Kernel panic' -e 'reboot: Restarting' "$dir/console.log" 2>/dev/null; then
            echo "guest-reset at ${t} s after its kernel panicked or rebooted (see its console.log)"
        else
            echo "silent guest-reset at ${t} s (nothing on its console)${rip:+, $rip}"
        fi
    else
        echo "$reason ($who) at ${t} s${rip:+ ($rip)}"
    fi
}

# A guest whose QEMU runs but whose agent does not answer: record in
# l2/NAME/hang.log what its vCPU does (L1 thread states and CPU time, KVM's
# exit counters, registers, twice 2 s apart; its virtio queues), then whether
# a new request is answered, and if not whether an NMI wakes it.
# Prints a one-line summary.
tb_l2_hang_report() {
    local name pid f vm i t hmp
    name=$1
    pid=$(tb_l2_pid "$name")
    f=$TB_OUT/l2/$name/hang.log
    [ -d /sys/kernel/debug/kvm ] || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
    vm=$(ls -d /sys/kernel/debug/kvm/"$pid"-* 2>/dev/null | head -1)
    hmp='{"execute":"human-monitor-command","arguments":{"command-line":"info registers"}}'
    # Kernel-side facts first: a vCPU stuck in the kernel (a fault nobody
    # serves) cannot answer QMP, and each QMP call is bounded (-t).
    {
        for i in 1 2; do
            echo "== sample $i at $(tb_uptime) s"
            for t in /proc/"$pid"/task/*; do
                echo "thread $(cat "$t/comm"): state/utime/stime $(sed 's/^.*) //' "$t/stat" | cut -d' ' -f1,12,13) wchan $(cat "$t/wchan" 2>/dev/null)"
            done
            if [ "$i" = 1 ]; then
                for t in /proc/"$pid"/task/*; do
                    case $(cat "$t/comm") in
                    CPU*) echo "-- kernel stack of $(cat "$t/comm")"
                          cat "$t/stack" 2>/dev/null ;;
                    esac
                done
            fi
            tb_qmp -t 5 "$name" '{"execute":"query-status"}'
            tb_qmp -t 5 "$name" "$hmp" | sed 's/\\r\\n/\n/g' | grep -e 'RIP=' -e 'CR0=' -e 'EFER='
            [ -n "$vm" ] && for t in "$vm"/*; do
                [ -f "$t" ] && printf '%s=%s ' "${t##*/}" "$(cat "$t" 2>/dev/null)"
            done
            echo
            [ "$i" = 1 ] && sleep 2
        done
        # A scenario may add what it knows (its agent's state): tb_on_hang NAME.
        if command -v tb_on_hang > /dev/null 2>&1; then
            echo "== scenario's report"
            tb_on_hang "$name"
        fi
        # Which side holds the lost message: a guest avail idx QEMU has not
        # consumed (a lost kick) or a used idx the guest has not seen (a lost
        # interrupt), per queue. Then a new request before any NMI: one that
        # is answered says the channel works and one message was lost.
        echo "== virtio queues at $(tb_uptime) s"
        vtier-tbctl virtio -t 10 "$TB_RUN/$name.qmp"
        echo "== a new request, no NMI, at $(tb_uptime) s"
        if vtier-tbctl exec -t 10 "$TB_RUN/$name.ctl" true > /dev/null 2>&1; then
            echo "== virtio queues after it, at $(tb_uptime) s"
            vtier-tbctl virtio -t 10 "$TB_RUN/$name.qmp"
            echo "answers a new request without an NMI"
        else
            echo "== NMI at $(tb_uptime) s"
            tb_qmp -t 5 "$name" '{"execute":"inject-nmi"}'
            if vtier-tbctl exec -t 10 "$TB_RUN/$name.ctl" true > /dev/null 2>&1; then
                echo "answers after the NMI"
            else
                echo "still no answer 10 s after the NMI"
            fi
        fi
    } > "$f" 2>&1
    echo "$(grep -m1 'RIP=' "$f" | sed 's/ RFL.*HLT=/ HLT=/');" \
        "vCPU thread state/utime/stime: $(grep 'thread CPU' "$f" | sed 's/.*stime //' | tr '\n' ' ');" \
        "KVM exits: $(grep -o ' exits=[0-9]*' "$f" | tr -d '\n');" \
        "halt wakeups: $(grep -o 'halt_wakeup=[0-9]*' "$f" | tr '\n' ' ');" \
        "$(tail -1 "$f") (l2/$name/hang.log)"
}

# Gone: its QEMU exited, or stopped itself (a watcher is about to end it).
tb_l2_gone() {
    ! tb_l2_alive "$1" || grep -q '^cause [^ ]* guest ' "$TB_OUT/l2/$1/events.log" 2>/dev/null
}

tb_l2_alive() {
    local pid
    pid=$(tb_l2_pid "$1")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# Wait until the guest's agent answers, or fail with its logs.
tb_l2_wait() {
    local name timeout deadline boot
    name=$1 timeout=${2:-$TB_L2_BOOT_TIMEOUT}
    deadline=$(( $(tb_uptime_s) + timeout ))
    while :; do
        if tb_l2_gone "$name"; then
            sleep 1
            tb_l2_dump "$name"
            tb_fail "L2 $name: QEMU ended during boot: $(tb_l2_exit_cause "$name")"
        fi
        if [ -S "$TB_RUN/$name.ctl" ] &&
            vtier-tbctl exec -t 5 "$TB_RUN/$name.ctl" true > /dev/null 2>&1; then
            boot=$(awk "BEGIN {print $(tb_uptime) - $(cat "$TB_RUN/$name.started")}")
            echo "l2_${name}_boot_s $boot" >> "$TB_OUT/timings"
            tb_step "L2 $name: up in $boot s"
            return 0
        fi
        if [ "$(tb_uptime_s)" -ge "$deadline" ]; then
            tb_l2_dump "$name"
            tb_fail "L2 $name: agent did not answer within $timeout s: $(tb_l2_hang_report "$name")"
        fi
        sleep 0.5
    done
}

tb_l2_dump() {
    local f
    for f in qemu.log console.log; do
        echo "---- L2 $1 $f (last 40 lines)"
        tail -40 "$TB_OUT/l2/$1/$f" 2>/dev/null
    done
    echo "----"
}

# tb_l2 NAME [-t SEC] 'CMD': run CMD in the guest (sh -c); output and status pass through.
tb_l2() {
    local name t
    name=$1
    shift
    t=120
    if [ "$1" = -t ]; then
        t=$2
        shift 2
    fi
    case "$*" in
        *vtier_guest*) tb_vtier_mark "$name" "vtier_guest.ko: $*" ;;
    esac
    tb_l2_gone "$name" || {
        vtier-tbctl exec -t "$t" "$TB_RUN/$name.ctl" "$*" && return 0
        t=$?
        if [ "$t" = 125 ] && ! tb_l2_gone "$name"; then
            echo "VTIER-TB-FAIL: L2 $name: no answer from the guest: $(tb_l2_hang_report "$name")" >&2
            exit 1
        fi
        tb_l2_gone "$name" || return "$t"
    }
    # (stderr: the caller may be capturing the output)
    sleep 1
    echo "VTIER-TB-FAIL: L2 $name: QEMU ended: $(tb_l2_exit_cause "$name")" >&2
    exit 1
}

# tb_qmp [-t SEC] NAME JSON...: QMP commands to an L2 QEMU (default 30 s for all).
tb_qmp() {
    local name t
    t=30
    if [ "$1" = -t ]; then
        t=$2
        shift 2
    fi
    name=$1
    shift
    vtier-tbctl qmp -t "$t" "$TB_RUN/$name.qmp" "$@"
}

tb_l2_check_kvm() {
    local out hv
    out=$(tb_qmp "$1" '{"execute":"query-kvm"}') || tb_fail "L2 $1: query-kvm failed: $out"
    echo "$out" | grep -q '"enabled": *true' || tb_fail "L2 $1 is not running under KVM: $out"
    hv=$(tb_l2 "$1" "dmesg | sed -n 's/.*Hypervisor detected: //p'") || tb_fail "L2 $1: dmesg failed"
    [ "$hv" = KVM ] || tb_fail "L2 $1: guest kernel sees hypervisor '$hv', not KVM"
    tb_step "L2 $1: runs under KVM (QMP query-kvm enabled, guest sees $hv)"
}

# Stop a guest: QMP quit, then SIGTERM, then SIGKILL; its logs stay in /tb/out/l2/NAME.
tb_l2_stop() {
    local name pid sig
    name=$1
    pid=$(tb_l2_pid "$name")
    [ -n "$pid" ] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        # a QEMU on its way out (a failed incoming migration) refuses the
        # connection: vtier-tbctl exits 2, which set -e must not take as the
        # scenario's end
        vtier-tbctl qmp -t 5 "$TB_RUN/$name.qmp" '{"execute":"quit"}' > /dev/null 2>&1 || true
        for sig in 0 0 0 0 0 0 0 0 0 0 TERM 0 0 0 0 0 KILL; do
            kill -0 "$pid" 2>/dev/null || break
            [ "$sig" != 0 ] && kill "-$sig" "$pid" 2>/dev/null
            sleep 0.3
        done
    fi
    # its exit status is not ours: an incoming QEMU whose migration failed
    # has exited with 1 already (set -e would end the scenario here)
    wait "$pid" 2>/dev/null || true
    # Its watcher ends with QEMU's QMP connection (kill it only if stuck).
    pid=$(cat "$TB_RUN/$name.watcher" 2>/dev/null)
    if [ -n "$pid" ]; then
        for sig in 0 0 0 0 0 0 0 0 0 0 KILL; do
            kill -0 "$pid" 2>/dev/null || break
            [ "$sig" != 0 ] && kill "-$sig" "$pid" 2>/dev/null
            sleep 0.1
        done
        wait "$pid" 2>/dev/null || true
    fi
    rm -f "$TB_RUN/$name.pid" "$TB_RUN/$name.qmp" "$TB_RUN/$name.agent.qmp" \
        "$TB_RUN/$name.watch.qmp" "$TB_RUN/$name.watcher" "$TB_RUN/$name.ctl" \
        "$TB_RUN/$name.started"
}

tb_l2_stop_all() {
    local n
    for n in $(tb_l2_names); do
        tb_l2_stop "$n"
    done
}

# Interactive: boot a guest with its console on this terminal, a shell in it
# (the agent runs too). Returns when QEMU exits (Ctrl-A X, or poweroff -f in L2).
tb_l2_shell() {
    local name
    name=$1
    shift
    tb_l2_start "$name" --console-stdio --append vtier.shell=1 "$@"
}
