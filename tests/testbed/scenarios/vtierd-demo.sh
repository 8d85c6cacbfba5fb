# vtierd-demo (make demo-vm): a 1 GiB L2 VM whose RAM starts spread over L1's
# DRAM, CXL-like and PMEM-like nodes runs a 64 MiB hot set; vtierd (damon-kernel
# profiler) moves it to the DRAM node under a 256 MiB DRAM limit. The table is
# measured independently of vtierd (move_pages status queries by vtier-tbnuma).
# make demo DEMO=stock; make demo runs demo.sh (vtier's own methods).
#   RESULT-DEMO variant=stock profiler= windows= hot_on_dram_pct= dram_mib= bad_pages=
. /src/tests/testbed/scenarios/lib.sh

echo 0 > /proc/sys/kernel/numa_balancing
mkdir -p /run/vtier && chmod 700 /run/vtier
start_vtierd
vtierd_ready
tb_step "the host's tiers, as vtierd sees them"
ctl tiers
tb_l2_start vm0 --mem 1G
tb_l2 vm0 'vtier-workload serve --size 512M > /run/wl.log 2>&1 &'
tb_l2 vm0 'vtier-workload ctl --wait 300 info'
ctl attach /run/tb/vm0.agent.qmp --name vm0 mode=off window_ms=2000 budget=16MiB > /dev/null
pid=$(tb_l2_pid vm0)
hva=$(ctl status vm0 --get ram.0.hva)
tb_step "spread the VM's RAM over nodes 0, 1, 2 (the starting point)"
vtier-tbnuma spread "$pid" "$hva" $((1024 * MIB)) 0,1,2
tb_l2 vm0 -t 300 'vtier-workload ctl phase dist=uniform ranges=0-64M accesses=50000 write_pct=10' > /dev/null
tb_l2 vm0 'vtier-workload ctl hotset source=ranges out=/run/hot.txt' > /dev/null
tb_l2 vm0 'cat /run/hot.txt' > /tmp/hot.txt
tb_l2 vm0 -t 900 'vtier-workload ctl phase dist=uniform ranges=0-64M duration_ms=60000 write_pct=5' \
    > /tmp/phase.log 2>&1 &
phase=$!
tb_step "vtierd: mode=auto dram_limit=256MiB (live, one line per check)"
ctl policy vm0 mode=auto dram_limit=256MiB > /dev/null
profiler=$(ctl status vm0 --get profiler)
ctl status vm0 | sed -n 2p
printf '%-7s %-16s %-10s %-10s %-10s %-6s %s\n' window "hot set on DRAM" "DRAM MiB" "CXL MiB" \
    "PMEM MiB" promo demo
done_at=""
for i in $(seq 1 30); do
    sleep 2
    a=$(vtier-tbnuma where-gpa "$pid" "$hva" /tmp/hot.txt)
    v=$(vtier-tbnuma where "$pid" "$hva" $((1024 * MIB)))
    s=$(vget vm0 windows promotions demotions) || fail "vtierctl stats vm0: $s"
    set -- $s
    pct=$(( $(field "$a" node0) * 100 / $(field "$a" pages) ))
    n0=$(( $(field "$v" node0) * 4096 / MIB ))
    printf '%-7s %-16s %-10s %-10s %-10s %-6s %s\n' "$1" "$pct%" "$n0" \
        $(( $(field "$v" node1) * 4096 / MIB )) $(( $(field "$v" node2) * 4096 / MIB )) "$2" "$3"
    if [ "$pct" -ge 90 ] && [ "$n0" -le 256 ]; then
        done_at=$1
        break
    fi
done
ctl stats vm0
wait "$phase" || true
tb_step "checksums of every guest page"
out=$(tb_l2 vm0 -t 600 'vtier-workload ctl verify') || tb_fail "verify failed: $out"
echo "$out"
ctl detach vm0 > /dev/null
kill "$vtierd_pid"; wait "$vtierd_pid" || true
tb_step "summary"
if [ -n "$done_at" ]; then
    echo "hot set: >= 90 % on the DRAM node after $done_at windows of 2 s; VM's DRAM use <= 256 MiB"
else
    tb_fail "the hot set did not reach the DRAM node in 30 checks"
fi
echo "$out" | grep -q 'bad=0 ' || tb_fail "guest memory damaged: $out"
echo "guest memory: every page verified, 0 bad"
echo "RESULT-DEMO variant=stock profiler=$profiler windows=$done_at hot_on_dram_pct=$pct" \
    "dram_mib=$n0 bad_pages=0"
tb_l2_stop vm0
