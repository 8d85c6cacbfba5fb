#!/bin/sh
# vtierctl's command line: usage errors exit 2 with a clear message before
# vtierd is asked; options anywhere on the line (--opt VALUE or --opt=VALUE);
# the forms the scenario scripts use still parse; demote's sizes judged by
# vtierd (exit 1 naming the key). Runs its own vtierd (no VM attached).
# usage: test_vtierctl_cli.sh VTIERCTL VTIERD SCRATCH_DIR   (TAP output)
vtierctl=$1
vtierd=$2
dir=$3
rm -rf "$dir"
mkdir -p "$dir"
sock=$dir/run/ctl.sock
n=0
fail=0

# expect STATUS PATTERN ARGS...: vtierctl exits STATUS with PATTERN on stdout or stderr
expect() {
	want=$1
	pattern=$2
	shift 2
	n=$((n + 1))
	timeout 20 "$vtierctl" "$@" >"$dir/out" 2>"$dir/err"
	got=$?
	if [ "$got" -eq "$want" ] && cat "$dir/out" "$dir/err" | grep -q -- "$pattern"; then
		echo "ok $n - $* -> $got"
	else
		echo "not ok $n - $*: exit $got (want $want), want '$pattern'," \
			"out: $(head -c 200 "$dir/out") err: $(head -c 300 "$dir/err")"
		fail=1
	fi
}

"$vtierd" --socket "$sock" --agent-socket none --store-dir "$dir/store" \
	>/dev/null 2>"$dir/vtierd.err" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
i=0
while [ ! -S "$sock" ] && kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
if [ ! -S "$sock" ]; then
	echo "1..0 # vtierd did not start: $(tail -c 300 "$dir/vtierd.err")"
	exit 1
fi

echo "1..32"
# usage errors: exit 2, the reason, vtierd not asked (the socket need not exist)
nosock=$dir/nowhere.sock
expect 2 "usage: vtierctl" --socket "$nosock"
expect 2 "bad command line for 'bogus'" --socket "$nosock" bogus
expect 2 "bad command line for 'status'" --socket "$nosock" status
expect 2 "unknown option --frobnicate" status vm0 --frobnicate --socket "$nosock"
expect 2 "\-\-socket needs a value" status vm0 --socket
expect 2 "\-\-socket needs a value" status vm0 --socket=
expect 2 "\-\-json takes no value" list --json=yes --socket "$nosock"
expect 2 "\-\-svg and --max only go with heatmap" list --svg x.svg --socket "$nosock"
expect 2 "\-\-all only goes with report" list --all --socket "$nosock"
expect 2 "KEY=VALUE only goes with" list mode=auto --socket "$nosock"
expect 2 "\-\-get goes without --json" stats vm0 --get vm --json --socket "$nosock"
expect 2 "cannot reach vtierd" list --socket "$nosock"
expect 0 "usage: vtierctl" status --help
# options before, between and after the command's words
expect 0 '"ok":true' --socket "$sock" --json list
expect 0 '"ok":true' list --socket "$sock" --json
expect 0 '"ok":true' list --json --socket="$sock"
expect 0 '"name"' tiers --socket="$sock" --json
expect 1 "no VM named 'vm0'" status vm0 --json --socket "$sock"
expect 1 "no VM named 'vm0'" --json status --socket "$sock" vm0
expect 1 "no VM named 'vm0'" --socket "$sock" status -- vm0
# the forms tests/ and the scenario scripts use
expect 1 "no VM named 'vm0'" --socket "$sock" --json stats vm0
expect 1 "no VM named 'vm0'" --socket "$sock" stats vm0 --get vm.windows
expect 1 "no VM named 'vm0'" --socket "$sock" policy vm0 balloon=256MiB
expect 1 "no VM named 'vm0'" --socket "$sock" report vm0
expect 1 "no VM named 'vm0'" --socket "$sock" heatmap vm0
expect 1 "cannot connect to QMP socket" --socket "$sock" attach "$dir/none.qmp" --name vm0 \
	mode=off
# demote's gpa=/len=: the policy keys' size grammar, refused naming the key
# (the command named once: "vtierctl: demote: gpa: ...")
expect 1 "^vtierctl: demote: gpa: invalid size '-1': negative" --socket "$sock" demote vm0 \
	tier=lz4 gpa=-1 len=4096
expect 1 "^vtierctl: demote: len: invalid size '99999999999999999999'.*out of range" \
	--socket "$sock" demote vm0 tier=lz4 len=99999999999999999999
expect 1 "^vtierctl: demote: gpa=1 len=18446744073709551615 ends beyond 2^64" \
	--socket "$sock" demote vm0 tier=lz4 gpa=1 len=0xffffffffffffffff
expect 1 "^vtierctl: demote: len: invalid size '17179869184GiB': too large" \
	--socket "$sock" demote vm0 tier=lz4 len=17179869184GiB
expect 1 "no VM named 'vm0'" --socket "$sock" demote vm0 tier=lz4 len=512M
expect 1 "no VM named 'vm0'" --socket "$sock" demote vm0 tier=lz4 gpa=0x100000 len=4096
exit $fail
