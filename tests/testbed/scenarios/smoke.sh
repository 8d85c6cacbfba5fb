# smoke: L1 is a tiered KVM host with nested paging; an L2 guest boots under
# KVM (not TCG); the workload fills, runs a zipf phase with writes, reports
# its hot set's guest-physical addresses and verifies every page.
tb_step "L1: kvm_amd with nested paging"
[ "$(cat /sys/module/kvm_amd/parameters/npt)" = Y ] || tb_fail "kvm_amd npt is not Y"

tb_step "L1: memory tiers $(tb_tiers)"
t0=$(tb_node_tier 0) || tb_fail "node 0 is in no memory tier"
for n in $(tb_expand_list "$(cat /sys/devices/system/node/has_memory)"); do
    [ "$n" = 0 ] && continue
    tn=$(tb_node_tier "$n") || tb_fail "node $n is in no memory tier"
    [ "$tn" != "$t0" ] || tb_fail "CPU-less node $n shares $t0 with DRAM node 0 (HMAT not applied?)"
done

tb_step "L1: swap and zswap"
[ "$(sed -n 2p /proc/swaps)" ] || tb_fail "no swap in L1"
[ "$(cat /sys/module/zswap/parameters/enabled)" = Y ] || tb_fail "zswap is not enabled"

tb_l2_start vm0 --mem 512M
tb_l2_check_kvm vm0
vtier-tbctl qmp /run/tb/vm0.agent.qmp '{"execute":"query-status"}' | grep -q '"running"' ||
    tb_fail "vm0: the agent's QMP socket does not answer"

tb_step "L2 vm0: workload"
tb_l2 vm0 'vtier-workload serve --size 256M > /run/wl.log 2>&1 &'
tb_l2 vm0 'vtier-workload ctl --wait 120 info'
tb_l2 vm0 -t 300 'vtier-workload ctl phase dist=zipf ranges=0-50% accesses=300000 write_pct=20 scatter=1'
tb_l2 vm0 'vtier-workload ctl hotset source=accessed min_accesses=4 out=/run/hot.txt'
extents=$(tb_l2 vm0 'wc -l < /run/hot.txt')
[ "$extents" -gt 0 ] || tb_fail "empty hot set"
tb_l2 vm0 'head -3 /run/hot.txt'
out=$(tb_l2 vm0 -t 300 'vtier-workload ctl verify') || tb_fail "verify failed: $out"
echo "$out"
echo "$out" | grep -q 'bad=0 ' || tb_fail "verify did not report bad=0: $out"

tb_l2_stop vm0
tb_l2_alive vm0 && tb_fail "vm0 still running after tb_l2_stop"
tb_step "smoke: done"
