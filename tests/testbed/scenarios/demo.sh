# demo (make demo): vtier's own methods on a real VM. In L1 (3 NUMA tiers,
# vtier_tdp.ko loaded), an L2 guest runs under the patched QEMU, its RAM a
# memfd handed off to vtierd. Its workload fills DEMO_WL_MIB (32) MiB with a
# mix of zero pages, text and binaries from L1's /usr and random bytes, and
# keeps the first quarter hot; the whole RAM starts spread over the DRAM,
# CXL-like and PMEM-like nodes. vtierd profiles with Telescope over the
# nested page table (the tdp access source of vtier_tdp.ko), moves the hot
# set to DRAM and the cold set into a compressed tier (lz4 x zsmalloc on the
# CXL node) through the hand-off (policy tiers=dram,lz4), one line per window.
# Where the pages are is read independently of vtierd: move_pages status of
# their guest-physical extents (vtier-tbnuma). The guest then reads every page
# back against its checksums; vtierd's TCO report and heatmap (SVG, in out/)
# end it.
#   RESULT-DEMO variant=vtier profiler= windows= hot_on_dram_pct=
#     cold_in_ctier_pct= ratio= host_bytes_saved= bad_pages=
# Passes when >= 90 % of the hot set is on DRAM and >= 70 % of the
# compressible cold memory is in the compressed tier within DEMO_WINDOWS (60)
# windows of 2 s, and no page is bad. make demo DEMO=stock runs vtierd-demo.sh
# (stock QEMU, NUMA nodes, the host's DAMON) instead.
W=2000
. /src/tests/testbed/scenarios/lib.sh
WL=${DEMO_WL_MIB:-32}
HOT=$((WL / 4))
WINDOWS=${DEMO_WINDOWS:-60}

tb_step "L1: vtier_tdp.ko, vtierd with a compressed tier (lz4 on the CXL node)"
[ -x "$QEMU" ] || fail "$QEMU missing (tests/vtierd/run-scenario copies the patched QEMU in)"
insmod /opt/vtier/vtier_tdp.ko || fail "insmod vtier_tdp.ko"
echo 0 > /proc/sys/kernel/numa_balancing
mkdir -p /run/vtier && chmod 700 /run/vtier
cat > /run/vtier/vtierd.conf <<EOF
[policy]
mode = observe
window_ms = $W
ctier_age_windows = 3
budget = 256MiB

[ctier.lz4]
codec = lz4
pool = zsmalloc
medium = node:1
EOF
start_vtierd --agent-socket "$AGENT" --config /run/vtier/vtierd.conf
vtierd_ready
ctl tiers

tb_step "L2 vm0 under the patched QEMU, its RAM (a memfd) handed off to vtierd"
TB_L2_BOOT_TIMEOUT=$((TB_L2_BOOT_TIMEOUT * 3))
tb_l2_start vm0 --mem 256M --memdev memfd --qemu "$QEMU" \
    --backend-opts ",tier-agent=$AGENT" -- -uuid 5a1e0000-1111-4222-8333-444455550000
tb_l2_check_kvm vm0
wait_adopted > /dev/null || fail "vm0 was not adopted by its hand-off within 20 s"
profiler=$(ctl status vm0 --get profiler)
echo "vm0: attached by its hand-off, profiler $profiler"
case $profiler in
telescope*) ;;
*) fail "vtierd profiles vm0 with '$profiler', not Telescope over tdp (vtier_tdp.ko loaded?)" ;;
esac
pid=$(tb_l2_pid vm0)
hva=$(ctl status vm0 --get gpa_map.0.hva)
tb_l2 vm0 "vtier-workload serve --size ${WL}M --mix $CORPUS > /run/wl.log 2>&1 &"
tb_l2 vm0 -t 300 'vtier-workload ctl --wait 280 info' > /dev/null ||
    fail "workload: $(tb_l2 vm0 'cat /run/wl.log')"
# the hot set's and the cold set's guest-physical extents (the guest's pagemap)
tb_l2 vm0 "vtier-workload ctl phase dist=uniform ranges=0-${HOT}M accesses=20000 write_pct=5" \
    > /dev/null || fail "first hot phase"
tb_l2 vm0 'vtier-workload ctl hotset source=ranges out=/run/hot.ext' > /dev/null ||
    fail "workload hotset"
tb_l2 vm0 'cat /run/hot.ext' > /run/hot.ext
kinds=$(tb_l2 vm0 "vtier-workload ctl kinds from=${HOT}M") || fail "workload kinds: $kinds"
cold_pages=$(( $(field "$kinds" zero) + $(field "$kinds" corpus) ))
tb_l2 vm0 "vtier-workload ctl extents from=${HOT}M out=/run/cold.ext" > /dev/null ||
    fail "workload extents"
tb_l2 vm0 'cat /run/cold.ext' > /run/cold.ext
echo "workload: ${WL} MiB, hot set 0-${HOT} MiB; the rest: $kinds (random bytes do not compress:" \
    "the tier refuses them)"
vtier-tbnuma spread "$pid" "$hva" $((256 * MIB)) 0,1,2 > /dev/null ||
    fail "vtier-tbnuma spread"
h=$(vtier-tbnuma where-gpa "$pid" "$hva" /run/hot.ext)
echo "start: guest RAM spread over nodes 0, 1, 2; hot set: $h"

tb_step "vtierd: mode=auto tiers=dram,lz4 (one line per window)"
tb_l2 vm0 "rm -f /run/A.stop; (while [ ! -e /run/A.stop ]; do
    vtier-workload ctl phase dist=uniform ranges=0-${HOT}M duration_ms=$((W * 2)) write_pct=5 ||
        { echo FAILED; exit 1; }; done; echo done) > /run/A.log 2>&1 &"
w0=$(vget vm0 windows)
ctl policy vm0 mode=auto tiers=dram,lz4 > /dev/null || fail "policy mode=auto tiers=dram,lz4"
chunk=$(ctl policy vm0 --get chunk)
printf '%-7s %-9s %-9s %-8s %-8s %-8s %-8s %-8s %s\n' window hot_MiB hot@DRAM DRAM_MiB \
    CXL_MiB PMEM_MiB lz4_MiB cold@lz4 backlog
done_at=""
last=-1
win=0
deadline=$(($(ms_now) + WINDOWS * W * 3))
while [ "$(ms_now)" -lt "$deadline" ]; do
    sleep 0.5
    s=$(vget vm0 windows hot_chunks tiers.dram.resident_bytes tiers.tier1.resident_bytes \
        tiers.tier2.resident_bytes tiers.lz4.resident_bytes 'backends.*.backlog') ||
        fail "vtierctl stats vm0: $s"
    set -- $s
    [ "$1" = "$last" ] && continue
    last=$1
    win=$(($1 - w0))
    h=$(vtier-tbnuma where-gpa "$pid" "$hva" /run/hot.ext) || fail "where-gpa: $h"
    c=$(vtier-tbnuma where-gpa "$pid" "$hva" /run/cold.ext) || fail "where-gpa: $c"
    hot_pct=$(( $(field "$h" node0) * 100 / $(field "$h" pages) ))
    cold_pct=$(( $(field "$c" absent) * 100 / cold_pages ))
    printf '%-7s %-9s %-9s %-8s %-8s %-8s %-8s %-8s %s\n' "$win" $(($2 * chunk / MIB)) "$hot_pct%" \
        $(($3 / MIB)) $(($4 / MIB)) $(($5 / MIB)) $(($6 / MIB)) "$cold_pct%" "$7"
    if [ "$hot_pct" -ge 90 ] && [ "$cold_pct" -ge 70 ]; then
        done_at=$win
        break
    fi
    [ "$win" -ge "$WINDOWS" ] && break
done
tb_l2 vm0 -t 300 'touch /run/A.stop; while ! grep -q "^done\|^FAILED" /run/A.log; do sleep 0.2; done
    ! grep -q FAILED /run/A.log' || fail "hot set phases failed: $(tb_l2 vm0 'tail -3 /run/A.log')"
[ -n "$done_at" ] || fail "after $win windows: hot set $hot_pct % on DRAM (want >= 90)," \
    "cold memory $cold_pct % in lz4 (want >= 70)"

tb_step "the guest reads every page back against its checksums"
v=$(tb_l2 vm0 -t 600 'vtier-workload ctl verify report=5') || true
echo "$v"
bad=$(field "$v" bad)
[ -n "$bad" ] || fail "no verify result: $v"
s=$(vget vm0 'backends.*.ctiers.*.stored_bytes' 'backends.*.ctiers.*.pool_bytes' \
    'backends.*.ctiers.*.bad_checksum') || fail "vtierctl stats vm0: $s"
set -- $s
stored=$1 pool=$2
[ "$3" = 0 ] || fail "$3 stored pages failed their checksum"
ratio=$(awk "BEGIN {printf \"%.2f\", $stored / ($pool > 0 ? $pool : 1)}")

tb_step "vtierctl report vm0 (memory TCO) and its heatmap"
ctl report vm0 || fail "vtierctl report vm0"
ctl heatmap vm0 --svg "$TB_OUT/demo-heatmap.svg" || fail "vtierctl heatmap vm0"
echo "heatmap: $(grep -c '<rect' "$TB_OUT/demo-heatmap.svg") rect elements in out/demo-heatmap.svg"

tb_step "summary"
echo "hot set (${HOT} MiB): $hot_pct % on DRAM; cold memory: $cold_pct % in lz4" \
    "(ratio $ratio, $(( (stored - pool) / MIB )) MiB of host memory saved) after $done_at windows of 2 s"
echo "guest memory: every page of the workload verified, $bad bad"
echo "RESULT-DEMO variant=vtier profiler=$profiler windows=$done_at hot_on_dram_pct=$hot_pct" \
    "cold_in_ctier_pct=$cold_pct ratio=$ratio host_bytes_saved=$((stored - pool)) bad_pages=$bad"
[ "$bad" = 0 ] || fail "$bad guest pages bad"
tb_l2_stop vm0
