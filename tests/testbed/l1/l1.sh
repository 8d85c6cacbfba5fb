# vtier testbed, L1 main. Copied into each run directory (/tb/in) by the
# runner and started by the image's /init, so editing it needs no image rebuild.
# Sets up the tiered KVM host, runs the scenario under a deadline, stops every
# L2 guest, and leaves the result in /tb/out/result.
# A suite (TB_SUITE=1, several scenarios in one boot; docs/testbed.md,
# "Suites") runs the scenarios of /tb/in/suite one after the other, each with
# its own deadline and its own /tb/out/NAME/ (result, scenario.log, l2/...),
# and brings L1 back to its state after setup between them (suite.sh).
. /tb/in/config.env
. /tb/in/tb.sh
. /tb/in/suite.sh

mkdir -p /run/tb/l1
[ "${TB_SUITE:-0}" = 1 ] || mkdir -p "$TB_OUT/l2"
echo $$ > /run/tb/l1/pid
tb_mark "L1 up at $(tb_uptime) s"
echo "l1_init_s $(tb_uptime)" >> "$TB_OUT/timings"

# The project's binaries for this run, and the optional read-only shares.
# (dd: large reads; 9p round trips are slow under TCG)
dd if=/tb/in/l1-overlay.cpio bs=512k 2>/dev/null | (cd / && cpio -idmu 2>/dev/null)
for share in src build; do
    mkdir -p "/$share"
    if grep -qx "$share" /tb/in/shares 2>/dev/null; then
        mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576,ro "$share" "/$share" ||
            tb_mark "cannot mount share $share"
    fi
done

# Runs one scenario script with $TB_OUT as its out directory, under
# TB_SCENARIO_TIMEOUT; stops its guests and kills its session. Sets $result.
tb_run_scenario() {
    local script pipe_pid deadline t_end pgid rc d name t tick kmod_seen procs procs_seen
    script=$1
    rm -f /run/tb/l1/scenario.rc /run/tb/l1/scenario.pgid
    echo "scenario_start_s $(tb_uptime)" >> "$TB_OUT/timings"
    # The scenario runs in its own session so that everything it started can
    # be killed at its deadline; its output goes to the console and to a log.
    (
        setsid sh -c 'echo $$ > /run/tb/l1/scenario.pgid
            sh -c "set -e; . /tb/in/config.env; . /tb/in/tb.sh; cd \"\$TB_OUT\"; . $0"
            echo $? > /run/tb/l1/scenario.rc' "$script" 2>&1 | tee "$TB_OUT/scenario.log"
    ) &
    pipe_pid=$!
    deadline=$(( $(tb_uptime_s) + TB_SCENARIO_TIMEOUT ))
    tick=0 kmod_seen="" procs_seen=""
    while [ ! -f /run/tb/l1/scenario.rc ]; do
        if [ "$(tb_uptime_s)" -ge "$deadline" ]; then
            tb_mark "scenario deadline ($TB_SCENARIO_TIMEOUT s) reached: stopping it"
            echo 143 > /run/tb/l1/scenario.rc
            break
        fi
        # What vtier does, seen from the kernel (besides the helpers' own
        # marks, for whatever bypasses them): tb.sh, "what vtier did".
        tick=$((tick + 1))
        if [ $((tick % 5)) = 0 ]; then
            if [ -z "$kmod_seen" ] && [ -d /sys/module/vtier_tdp ]; then
                kmod_seen=1
                tb_vtier_l1_mark "vtier_tdp.ko loaded (seen in /sys/module)"
            fi
            procs=$(tb_vtier_procs)
            if [ -n "$procs" ] && [ "$procs" != "$procs_seen" ]; then
                procs_seen=$procs
                tb_vtier_mark_running "vtier runs in L1 while the guest runs ($procs)"
            fi
        fi
        sleep 0.2
    done
    t_end=$(tb_uptime)
    echo "scenario_exit_s $t_end" >> "$TB_OUT/timings"
    tb_l2_stop_all
    pgid=$(cat /run/tb/l1/scenario.pgid 2>/dev/null)
    if [ -n "$pgid" ] && kill -TERM "-$pgid" 2>/dev/null; then
        sleep 1
        kill -KILL "-$pgid" 2>/dev/null
    fi
    wait "$pipe_pid"
    rc=$(cat /run/tb/l1/scenario.rc 2>/dev/null || echo 255)
    case "$rc" in
        0) result=PASS ;;
        77) result="SKIP $(sed -n 's/^VTIER-TB-SKIP: //p' "$TB_OUT/scenario.log" | tail -1)" ;;
        143) result="FAIL scenario timed out after $TB_SCENARIO_TIMEOUT s in L1" ;;
        *) result="FAIL scenario exited with $rc: $(sed -n 's/^VTIER-TB-FAIL: //p' "$TB_OUT/scenario.log" | tail -1)" ;;
    esac
    # A guest that reset silently before the scenario ended: the runner
    # decides whether that proves an emulator fault that may be rerun
    # (tb/rerun.py: the CPU state in its events.log, what vtier did to it in
    # l2/NAME/vtier, the scenario's assertions); a suite's L1 stops after it
    # (the L1 panic that may follow is not the next scenario's).
    l2_reset=""
    if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
        for d in "$TB_OUT"/l2/*/; do
            name=$(basename "$d")
            case "$(tb_l2_exit_cause "$name")" in
                "silent guest-reset"*) ;;
                *) continue ;;
            esac
            t=$(sed -n 's/^cause [^ ]* [^ ]* //p' "$d/events.log" | head -1)
            if awk "BEGIN {exit !($t <= $t_end)}"; then
                l2_reset="$l2_reset $name"
            fi
        done
    fi
    echo "scenario_end_s $(tb_uptime)" >> "$TB_OUT/timings"
}

# The scenarios of a suite, each in /tb/out/NAME; L1 stops early (the runner
# runs the rest in a fresh L1) after an emulator fault or a failed reset.
tb_run_suite() {
    local name n i
    set -- $(cat /tb/in/suite)
    n=$(( $# / 2 ))
    i=0
    tb_suite_baseline > /tb/out/suite-baseline.log 2>&1
    while [ $# -gt 0 ]; do
        name=$1
        TB_ATTEMPT=$2
        shift 2
        i=$((i + 1))
        TB_OUT=/tb/out/$name
        export VTIER_TB_OUT=$TB_OUT TB_ATTEMPT
        mkdir -p "$TB_OUT/l2"
        tb_mark "scenario $name: start ($i of $n) at $(tb_uptime) s, kernel taint $(cat /proc/sys/kernel/tainted)"
        tb_run_scenario "/tb/in/scenarios/$name.sh"
        dmesg > "$TB_OUT/l1-dmesg.log" 2>&1
        echo "$result" > "$TB_OUT/result"
        sync
        tb_mark "scenario $name: end at $(tb_uptime) s: $result"
        TB_OUT=/tb/out
        unset VTIER_TB_OUT
        if [ -n "$l2_reset" ]; then
            tb_mark "suite: L1 stops after a silent reset of L2$l2_reset; the rest runs in a fresh L1"
            return 0
        fi
        [ "$i" = "$n" ] && break
        if tb_suite_reset > "/tb/out/$name/l1-reset.log" 2>&1; then
            tb_mark "suite: L1 reset after $name: $(tail -1 "/tb/out/$name/l1-reset.log")"
        else
            tb_mark "suite: L1 not reusable after $name: $(tail -1 "/tb/out/$name/l1-reset.log");" \
                "the rest runs in a fresh L1"
            return 0
        fi
    done
}

result="FAIL setup"
if tb_l1_setup > "$TB_OUT/l1-setup.log" 2>&1; then
    cat "$TB_OUT/l1-setup.log"
    tb_mark "L1 ready at $(tb_uptime) s"
    echo "l1_ready_s $(tb_uptime)" >> "$TB_OUT/timings"
    if [ "${TB_SUITE:-0}" = 1 ]; then
        tb_run_suite
        result=""
    else
        tb_run_scenario "/tb/in/scenarios/$(cut -d' ' -f1 /tb/in/suite).sh"
    fi
else
    cat "$TB_OUT/l1-setup.log"
    result="FAIL L1 setup: $(tail -1 "$TB_OUT/l1-setup.log")"
    echo "scenario_end_s $(tb_uptime)" >> "$TB_OUT/timings"
fi

if [ "${TB_SHELL:-0}" = 1 ]; then
    tb_mark "scenario result: $result"
    tb_mark "interactive shell in L1 (exit or Ctrl-D powers off; Ctrl-A X kills QEMU)"
    setsid cttyhack sh -l
fi

tb_l2_stop_all
dmesg > "$TB_OUT/l1-dmesg.log" 2>&1
cat /sys/kernel/tracing/trace > "$TB_OUT/l1-kvm-trace.log" 2>/dev/null
if [ -n "$result" ]; then
    echo "$result" > "$TB_OUT/result"
    sync
    tb_mark "RESULT $result"
else
    sync
    tb_mark "suite: L1 powers off"
fi
