# vtier testbed: the reset between the scenarios of a suite (several scenarios
# in one L1 boot, docs/testbed.md "Suites"). Sourced by l1.sh after tb.sh.
#   tb_suite_baseline   right after the L1 setup: record what a fresh L1 looks like
#   tb_suite_reset      after a scenario: bring L1 back to the baseline and check it;
#                       returns 1 (last line: why) when it cannot, and l1.sh then
#                       leaves the remaining scenarios to a fresh L1
# What a scenario may leave behind, and what undoes it:
#   processes it started (vtierd, vtier-bench, a QEMU that setsid'd)  killed: every
#       process that was not there at the baseline (kernel threads aside)
#   mounts (debugfs)                                    unmounted
#   knobs (numa_balancing, THP, demotion, zswap, ...)   written back
#   DAMON kdamonds (vtierd's damon-kernel)              turned off, nr_kdamonds 0
#   modules (vtier_tdp.ko)                              rmmod'ed
#   files in /tmp, /run, /run/tb, /dev/shm              removed
# and then page cache dropped and memory compacted. What it cannot undo: the
# kernel's taint (a module of ours, once loaded, taints the kernel for good),
# which decides whether the runner excuses an L1 panic as the emulator's; so
# scenarios that load vtier_tdp.ko go last in a suite.

TB_SUITE_BASE=/run/tb/l1/baseline
TB_SUITE_KNOBS="/proc/sys/kernel/numa_balancing /sys/kernel/mm/numa/demotion_enabled
    /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag
    /sys/module/zswap/parameters/enabled /sys/module/zswap/parameters/compressor
    /sys/module/zswap/parameters/max_pool_percent /proc/sys/vm/swappiness
    /proc/sys/vm/overcommit_memory"
TB_SUITE_DIRS="/tmp /run /run/tb /dev/shm"

# The value of a knob ("always [madvise] never" -> madvise).
tb_knob() {
    local v
    v=$(cat "$1") || return 1
    case "$v" in
        *\[*\]*) v=${v#*\[}; v=${v%%\]*} ;;
    esac
    echo "$v"
}

# Pids of the user-space processes alive now (kernel threads and zombies have
# no exe). Builtins only: no process of its own shows up in the list.
tb_suite_pids() {
    local p
    for p in /proc/[0-9]*; do
        [ -e "$p/exe" ] && echo "${p#/proc/}"
    done
}

# Processes alive now that were not at the baseline, this shell aside. Run
# in a command substitution, i.e. a subshell of its own, which reads its pid
# from /proc/self (builtins only, so no child of its own is listed either).
tb_suite_new_pids() {
    local p pid base me x
    base=" "
    while read -r x; do base="$base$x "; done < "$TB_SUITE_BASE/pids"
    read -r me x < /proc/self/stat
    for p in /proc/[0-9]*; do
        pid=${p#/proc/}
        [ -e "$p/exe" ] || continue
        case "$base" in *" $pid "*) continue ;; esac
        [ "$pid" = "$me" ] || [ "$pid" = $$ ] || echo "$pid"
    done
}

tb_suite_comm() { cat "/proc/$1/comm" 2>/dev/null || echo "?"; }

tb_suite_baseline() {
    local k d
    mkdir -p "$TB_SUITE_BASE"
    tb_suite_pids > "$TB_SUITE_BASE/pids"
    cut -d' ' -f1 /proc/modules | sort > "$TB_SUITE_BASE/modules"
    cut -d' ' -f2 /proc/mounts > "$TB_SUITE_BASE/mounts"
    : > "$TB_SUITE_BASE/knobs"
    for k in $TB_SUITE_KNOBS; do
        [ -e "$k" ] && echo "$k $(tb_knob "$k")" >> "$TB_SUITE_BASE/knobs"
    done
    for d in $TB_SUITE_DIRS; do
        ls -A "$d" > "$TB_SUITE_BASE/files$(echo "$d" | tr / _)"
    done
    sed -n '2,$p' /proc/swaps | cut -d' ' -f1 > "$TB_SUITE_BASE/swaps"
    echo "baseline: $(wc -l < "$TB_SUITE_BASE/pids") processes," \
        "modules $(wc -l < "$TB_SUITE_BASE/modules"), knobs: $(cut -d' ' -f2 "$TB_SUITE_BASE/knobs" | tr '\n' ' ')"
}

tb_suite_reset() {
    local t0 pids p sig m n k want have d e dmn i left
    t0=$(tb_uptime)
    left=
    # 1. processes: TERM, then KILL; whatever a scenario started, in any session
    for sig in TERM KILL; do
        pids=$(tb_suite_new_pids)
        [ -n "$pids" ] || break
        for p in $pids; do
            echo "kill -$sig $p ($(tb_suite_comm "$p"))"
        done
        kill "-$sig" $pids 2>/dev/null
        for i in 1 2 3 4 5 6 7 8 9 10; do
            [ -z "$(tb_suite_new_pids)" ] && break
            sleep 0.3
        done
    done
    pids=$(tb_suite_new_pids)
    for p in $pids; do
        echo "process $p ($(tb_suite_comm "$p")) survived SIGKILL"
        return 1
    done
    for p in $(cat "$TB_SUITE_BASE/pids"); do
        [ "$p" = $$ ] && continue
        [ -d "/proc/$p" ] || { echo "process $p of the set-up L1 is gone"; return 1; }
    done
    # 2. mounts, the latest first
    for m in $(cut -d' ' -f2 /proc/mounts | sed -n '1!G;h;$p'); do
        grep -qx "$m" "$TB_SUITE_BASE/mounts" && continue
        echo "umount $m"
        umount "$m" || { echo "cannot unmount $m"; return 1; }
    done
    # 3. knobs
    while read -r k want; do
        have=$(tb_knob "$k")
        [ "$have" = "$want" ] && continue
        echo "$k: $have -> $want"
        echo "$want" > "$k" 2>/dev/null
        [ "$(tb_knob "$k")" = "$want" ] || { echo "cannot set $k back to $want"; return 1; }
    done < "$TB_SUITE_BASE/knobs"
    # 4. DAMON (a kdamond whose vtierd was killed keeps running)
    d=/sys/kernel/mm/damon/admin/kdamonds
    if [ -e "$d/nr_kdamonds" ] && [ "$(cat "$d/nr_kdamonds")" != 0 ]; then
        for dmn in "$d"/[0-9]*; do
            [ "$(cat "$dmn/state")" = off ] || echo off > "$dmn/state"
        done
        echo 0 > "$d/nr_kdamonds"
        [ "$(cat "$d/nr_kdamonds")" = 0 ] || { echo "cannot remove the kdamonds"; return 1; }
        echo "DAMON: kdamonds removed"
    fi
    # 5. modules (a few rounds: one may hold another)
    for i in 1 2 3; do
        for m in $(cut -d' ' -f1 /proc/modules); do
            grep -qx "$m" "$TB_SUITE_BASE/modules" && continue
            rmmod "$m" 2>/dev/null && echo "rmmod $m"
        done
    done
    for m in $(cut -d' ' -f1 /proc/modules); do
        grep -qx "$m" "$TB_SUITE_BASE/modules" && continue
        # a module the kernel loaded on demand may stay; one of ours may not
        if [ -n "$(cat "/sys/module/$m/taint" 2>/dev/null)" ]; then
            echo "cannot unload module $m (taint $(cat "/sys/module/$m/taint"))"
            return 1
        fi
        echo "module $m (the kernel's) stays loaded"
    done
    # 6. files
    for d in $TB_SUITE_DIRS; do
        for e in $(ls -A "$d"); do
            grep -qxF "$e" "$TB_SUITE_BASE/files$(echo "$d" | tr / _)" && continue
            echo "rm -r $d/$e"
            rm -rf "${d:?}/$e"
        done
    done
    # 7. swap still on, memory as after boot
    [ "$(sed -n '2,$p' /proc/swaps | cut -d' ' -f1)" = "$(cat "$TB_SUITE_BASE/swaps")" ] ||
        { echo "swap changed: $(sed -n '2,$p' /proc/swaps | cut -d' ' -f1 | tr '\n' ' ')"; return 1; }
    sync
    echo 3 > /proc/sys/vm/drop_caches
    echo 1 > /proc/sys/vm/compact_memory
    for n in /sys/devices/system/node/node[0-9]*; do
        left="$left ${n##*/} $(awk '/MemFree/ {print int($4 / 1024)}' "$n/meminfo") MiB free,"
    done
    echo "reset in $(awk "BEGIN {print $(tb_uptime) - $t0}") s:$left" \
        "swap used $(sed -n '2p' /proc/swaps | awk '{print $4}') KiB, kernel taint $(cat /proc/sys/kernel/tainted)"
}
