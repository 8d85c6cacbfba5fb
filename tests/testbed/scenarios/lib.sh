# What the vtierd scenarios share, sourced after tb.sh (busybox sh in L1):
#   . /src/tests/testbed/scenarios/lib.sh
# Values from vtierd come from `vtierctl ... --get KEY` (a dotted path into
# the --json reply; an absent key fails the command with exit 2 and its name),
# not from scraping the JSON text.
#
#   ctl ARGS...                 vtierctl on vtierd's socket ($SOCK)
#   cget CMD VM KEY...          `ctl CMD VM --get KEY [--get KEY...]`: one value a line, all
#                               from one reply
#   vget VM KEY...              cget stats VM KEY...
#   osum VM KEY                 the sum of the members of the flat object at KEY of
#                               `ctl stats VM` (names without digits, numbers as values:
#                               hints.rejected); status 2 when KEY is not there
#   numsum TEXT                 the sum of the numbers in TEXT (such an object as --get prints it)
#   field TEXT KEY              the number after KEY= in TEXT (vtier-tbnuma, workload lines)
#   start_vtierd [ARGS...]      vtierd on $SOCK in the background (log: $TB_OUT/vtierd.log,
#                               appended), its pid in $vtierd_pid; vtierd_ready waits for it
#   wait_adopted [VM]           until VM (vm0) is attached by its hand-off; prints the ms
#                               (status 1 after 20 s: the caller fails, with its words)
#   vtier_dump [VM]             vtierd's view of VM and the end of its log (for failures)
#   fail TEXT                   vtier_dump $FAIL_VM (vm0), then tb_fail
#   has_part NAME               NAME is in $PARTS
#   sleep_window                sleep one window ($W ms)
#   ms_now                      milliseconds of L1 uptime (busybox date has no %N)
#   memfd_bytes PID             bytes allocated in QEMU PID's guest-RAM memfd (>= 256 MiB)
export LD_LIBRARY_PATH=/opt/vtier/lib
SOCK=${SOCK:-/run/vtier/vtierd.sock}
AGENT=${AGENT:-/run/vtier/agent.sock}
QEMU=/opt/vtier/qemu/qemu-system-x86_64
CORPUS=/opt/vtier/corpus
MIB=1048576
W=${W:-1000}
FAIL_VM=${FAIL_VM:-vm0}

ctl() { vtierctl --socket "$SOCK" "$@"; }
cget() {
    local cmd=$1 vm=$2 n=$(($# - 2)) k
    shift 2
    for k in "$@"; do set -- "$@" --get "$k"; done
    shift "$n"
    ctl "$cmd" "$vm" "$@"
}
vget() { cget stats "$@"; }
numsum() { echo "$1" | tr -cs '0-9' '\n' | awk '{s += $1} END {print s + 0}'; }
osum() {
    local o
    o=$(ctl stats "$1" --get "$2") || return 2
    numsum "$o"
}
field() { echo "$1" | sed -n "s/.*$2=\([0-9.]*\).*/\1/p"; }
has_part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
sleep_window() { sleep "$(awk "BEGIN {print $W / 1000}")"; }
ms_now() { awk '{printf "%d", $1 * 1000}' /proc/uptime; }

start_vtierd() {
    vtierd --socket "$SOCK" "$@" >> "$TB_OUT/vtierd.log" 2>&1 &
    vtierd_pid=$!
}
vtierd_ready() {
    for _ in $(seq 50); do ctl list > /dev/null 2>&1 && return 0; sleep 0.2; done
    fail "vtierd did not answer on $SOCK within 10 s: $(tail -5 "$TB_OUT/vtierd.log")"
}
wait_adopted() {
    local vm=${1:-vm0} t0
    t0=$(ms_now)
    for _ in $(seq 1000); do
        [ "$(ctl list --get "$vm.attached_by" 2>/dev/null)" = hand-off ] && break
        sleep 0.02
    done
    [ "$(ctl list --get "$vm.attached_by" 2>/dev/null)" = hand-off ] || return 1
    echo $(($(ms_now) - t0))
}
vtier_dump() {
    ctl stats "${1:-vm0}" 2>&1 | tail -30 || true
    ctl --json stats "${1:-vm0}" 2>&1 | head -c 6000 || true
    echo
    tail -30 "$TB_OUT/vtierd.log" 2>&1 || true
}
fail() {
    vtier_dump "$FAIL_VM"
    tb_fail "$@"
}
memfd_bytes() {
    local fd
    for fd in /proc/"$1"/fd/*; do
        case $(readlink "$fd") in
        /memfd:*)
            set -- $(stat -L -c '%s %b' "$fd")
            [ "$1" -ge $((256 * MIB)) ] && { echo $(($2 * 512)); return; } ;;
        esac
    done
    echo 0
}
