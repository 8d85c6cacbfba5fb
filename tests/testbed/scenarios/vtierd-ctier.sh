# vtierd-ctier: vtierd as the tier agent of real VMs. The patched QEMU inside
# L1 hands an L2 guest's RAM (memory-backend-memfd, tier-agent=) to vtierd,
# which attaches the VM by the hand-off alone, profiles it (Telescope over the
# tdp source: host-kmod is loaded) and spreads it over L1's three NUMA nodes
# and three compressed tiers (lz4 x zsmalloc on the CXL node, zstd x zbud on
# the PMEM node, deflate x zbud in files). The guest's workload fills
# VTIERD_CTIER_WL_MIB (128) MiB with a mix of zero pages, text and binaries
# from L1's /usr, and random bytes, and keeps the first quarter hot.
#   part compress (VTIERD_CTIER_PARTS has "compress"): at least 70 % of the
#     cold memory (the workload's pages past its hot quarter but the random
#     ones, which do not compress and which the tiers refuse by design) ends
#     up in compressed tiers (not mapped in QEMU: move_pages status of their
#     guest-physical extents); the guest verifies every page;
#     RESULT-COMPRESS cold_in_ctier_pct= host_bytes_saved= ratio=
#     fault_p50_us= fault_p99_us= bare_copy_p50_us= bad_pages= bare_copy_p99_us=
#     stored_faults= beside_span_faults= (faults served from the store in the VM's
#     life, and those of them served while the mover stored a span)
#     readback_stored_bytes= readback_pool_bytes= (what the tiers hold after the
#     read-back, which brought most pages home) stored_ahead= (stored pages
#     served ahead of their fault in the VM's life: store-ahead, docs/vtierd.md)
#     idle_faults= idle_fault_p50_us= idle_fault_p99_us= (the stored faults
#     served while the mover had no work, the read-back's among them, and
#     their p50 and p99: the fault path without compression beside it)
#     (ratio and host_bytes_saved: guest bytes stored / host bytes their pools use,
#     and their difference, when the cold memory is in the tiers, before the
#     read-back; fault latency:
#     vtierd's fault thread, read to UFFDIO_COPY done, on store faults;
#     bare_copy: vtier-tbuffd's bare UFFDIO_COPY loop, same span, same L1);
#     asserted: ratio >= 2.0, fault p50 <= 6x bare_copy p50, fault p99 <= 40 ms
#   part zswap ("zswap"): a second L2 guest under L1's stock QEMU (no hand-off,
#     anonymous RAM) attached by QMP gets the host's zswap as its compressed
#     tier: its cold memory is paged out (VmSwap of its QEMU grows, vtierd's
#     residency sees it in tier "zswap") and every page verifies;
#     RESULT-ZSWAP swapped_mib= zswap_tier_mib= bad_pages= (asserted: zswap_tier_mib > 0)
#   part kill ("kill"): the guest writes and reads its whole workload while vtierd is
#     killed with SIGKILL at random moments (>= 20 times) and restarted; no page
#     is lost or reads as zeros; RESULT-KILL kills= bad_pages= zero_pages=
#     resume_p99_ms= (resume: vtierd started -> the VM re-adopted by its hand-off;
#     asserted <= 5000 ms)
#   part tco ("tco"): placement=tco at alpha 1, 0, 0.5, 1 under a zipf workload
#     (ctier/tco.sh); RESULT-TCO alpha= tco_saving_pct= slowdown_pct= bad_pages=
#     per alpha
#   part bench-tco ("bench-tco", make bench-tco): TierScape's Fig. 8 on this VM
#     (ctier/bench-tco.sh, docs/bench-tco.md); RESULT-BENCH-TCO per placement
#   part remote ("remote"): the remote tier on three vtier-memd in L1 network
#     namespaces, a server killed -9 during a read-back (ctier/remote.sh);
#     RESULT-REMOTE-L2 pages= fetch_p50_us= fetch_p99_us= fault_p50_us= server_kills=
#     bad_pages= zero_pages= transport=
# vtierd-compress.sh, vtierd-kill.sh, vtierd-tco.sh, vtierd-remote.sh and bench-tco.sh run
# one part each.
PARTS=${VTIERD_CTIER_PARTS:-compress zswap kill tco}
W=${VTIERD_WINDOW_MS:-1000}
. /src/tests/testbed/scenarios/lib.sh
WL=${VTIERD_CTIER_WL_MIB:-128}
HOT=$((WL / 4))
# Called by tb.sh's hang report when a guest stops answering: vtierd's view.
tb_on_hang() {
    local t
    timeout 5 vtierctl --socket "$SOCK" --json stats "$1" 2>&1 | head -c 4000
    echo
    [ -n "${vtierd_pid:-}" ] && for t in /proc/"$vtierd_pid"/task/*; do
        echo "vtierd thread $(cat "$t/comm"): $(sed 's/^.*) //' "$t/stat" | cut -d' ' -f1) wchan $(cat "$t/wchan" 2>/dev/null)"
    done
    tail -20 "$TB_OUT/vtierd.log"
}
# vm0's hand-off (its first backend): --get keys for vget
B=backends.0

tb_step "L1: host-kmod, the patched QEMU, the compressed tiers"
[ -x "$QEMU" ] || fail "$QEMU missing (tests/vtierd/run-scenario copies the patched QEMU in)"
insmod /opt/vtier/vtier_tdp.ko || fail "insmod vtier_tdp.ko"
echo 0 > /proc/sys/kernel/numa_balancing
mkdir -p /run/vtier /var/lib/vtier/cold && chmod 700 /run/vtier
cat > /run/vtier/vtierd.conf <<EOF
[policy]
mode = observe
window_ms = $W
ctier_age_windows = 1
budget = 256MiB

[ctier.lz4]
codec = lz4
pool = zsmalloc
medium = node:1

[ctier.zstd]
codec = zstd:3
pool = zbud
medium = node:2

[ctier.cold]
codec = deflate:1
pool = zbud
medium = file:/var/lib/vtier/cold
EOF
if has_part remote; then
    . /src/tests/testbed/scenarios/ctier/remote.sh
    remote_servers_start >> /run/vtier/vtierd.conf
fi
start_vtierd --agent-socket "$AGENT" --config /run/vtier/vtierd.conf
vtierd_ready
ctl tiers || fail "vtierd did not start: $(cat "$TB_OUT/vtierd.log")"
grep -q "compressed, lz4" "$TB_OUT/vtierd.log" || fail "vtierd did not load the compressed tiers"

tb_step "L2 vm0 under the patched QEMU, RAM handed to vtierd"
# guest RAM on a memfd has 4 KiB pages (no THP): under the emulated nested
# paging an L2 boot takes minutes, not seconds (150 s measured on a quiet host)
TB_L2_BOOT_TIMEOUT=$((TB_L2_BOOT_TIMEOUT * 3))
tb_l2_start vm0 --mem 512M --memdev memfd --qemu "$QEMU" \
    --backend-opts ",tier-agent=$AGENT" -- -uuid 5a1e0000-1111-4222-8333-444455556666
tb_l2_check_kvm vm0
tb_l2 vm0 "[ -s $CORPUS ]" || fail "$CORPUS missing in L2 (run-scenario builds it from /usr)"
# what the boot cost in first touches served by vtierd (zero-filled, with fault-around)
s=$(vget vm0 $B.faults_zero $B.zero_filled_around $B.zero_fault_p50_ns) || fail "stats vm0: $s"
set -- $s
echo "boot: $1 zero faults, $2 pages zero-filled, zero fault p50 $(($3 / 1000)) us"
wait_adopted > /dev/null || fail "vm0 was not adopted by its hand-off within 20 s"
path=$(ctl status vm0 --get ctier_path) || fail "vtierd did not name the VM vm0 (-name): $(ctl list)"
case $path in hand-off*) ;; *) fail "vm0 not on the hand-off path: $path" ;; esac
pid=$(tb_l2_pid vm0)
hva=$(ctl status vm0 --get gpa_map.0.hva)
tb_l2 vm0 "vtier-workload serve --size ${WL}M --mix $CORPUS > /run/wl.log 2>&1 &"
tb_l2 vm0 -t 900 'vtier-workload ctl --wait 850 info' ||
    fail "workload: $(tb_l2 vm0 'cat /run/wl.log')"
# The cold memory: the workload's pages past its hot quarter, but the random
# ones (no codec compresses them: the tiers refuse them by design). Where they
# are is read independently of vtierd: their guest-physical extents (the
# guest's pagemap) at QEMU's RAM mapping, with move_pages(2) status queries
# (an evicted page is not mapped).
kinds=$(tb_l2 vm0 "vtier-workload ctl kinds from=${HOT}M") || fail "workload kinds: $kinds"
echo "workload, cold part: $kinds"
cold_pages=$(( $(field "$kinds" zero) + $(field "$kinds" corpus) ))
tb_l2 vm0 "vtier-workload ctl extents from=${HOT}M out=/run/cold.ext" ||
    fail "workload extents"
tb_l2 vm0 "cat /run/cold.ext" > /run/cold.ext || fail "copying the cold extents out of vm0"
echo "cold extents: $(wc -l < /run/cold.ext)"
# placement from here on (observe while the guest filled its memory)
ctl policy vm0 mode=auto > /dev/null || fail "policy mode=auto"

if has_part compress; then
    tb_step "compress: hot set 0-${HOT}M, the rest ages into the compressed tiers"
    tb_l2 vm0 "rm -f /run/A.stop; (while [ ! -e /run/A.stop ]; do
        vtier-workload ctl phase dist=uniform ranges=0-${HOT}M duration_ms=$((W * 2)) write_pct=5 ||
            { echo FAILED; exit 1; }; done; echo done) > /run/A.log 2>&1 &"
    pct=0
    # the mover's work since the last line: pages evicted, runs, ms spent
    # protecting+copying / storing (compression) / punching, pages fetched
    # back on order, faults served from the store
    printf '%-6s %-10s %-11s %-8s %-7s %-5s %-7s %-5s %-16s %-7s %s\n' window stored_MiB \
        present_MiB pool_MiB backlog pct evicted runs prot/store/punch fetched faults
    last=""
    for i in $(seq 1 300); do
        sleep "$(awk "BEGIN {print $W / 1000}")"
        s=$(vget vm0 "$B.ctiers.*.stored_bytes" "$B.ctiers.*.pool_bytes" $B.backlog \
            $B.evicted $B.evict_runs $B.evict_protect_ns $B.evict_store_ns $B.evict_punch_ns \
            $B.fetched $B.faults_stored) || fail "stats vm0: $s"
        set -- $s
        stored=$1 pool=$2 backlog=$3
        shift 3
        present=$(memfd_bytes "$pid")
        where=$(vtier-tbnuma where-gpa "$pid" "$hva" /run/cold.ext) ||
            fail "vtier-tbnuma where-gpa: $where"
        pct=$(( $(field "$where" absent) * 100 / cold_pages ))
        now="$*"
        # shellcheck disable=SC2086
        delta=$(echo "$now ${last:-0 0 0 0 0 0 0}" | awk '{printf "%d %d %d/%d/%d %d %d",
            $1 - $8, $2 - $9, ($3 - $10) / 1e6, ($4 - $11) / 1e6, ($5 - $12) / 1e6,
            $6 - $13, $7 - $14}')
        last=$now
        # shellcheck disable=SC2086
        printf '%-6s %-10s %-11s %-8s %-7s %-5s %-7s %-5s %-16s %-7s %s\n' "$i" $((stored / MIB)) \
            $((present / MIB)) $((pool / MIB)) "$backlog" "$pct%" $delta
        [ "$pct" -ge 70 ] && [ "$backlog" = 0 ] && break
    done
    # per compressed tier: puts, refusals (and those known from the memo), time compressing
    for t in lz4 zstd cold; do
        set -- $(vget vm0 $B.ctiers.$t.pages $B.ctiers.$t.rejected_e2big \
            $B.ctiers.$t.rejected_memo $B.ctiers.$t.puts $B.ctiers.$t.compress_ns)
        echo "$t: pages $1 rejected_e2big $2 rejected_memo $3 puts $4 compress_ns $5"
    done
    [ "$pct" -ge 70 ] || fail "only $pct % of the cold memory in compressed tiers after 300 windows"
    tb_l2 vm0 -t 300 'touch /run/A.stop; while ! grep -q "^done\|^FAILED" /run/A.log; do sleep 0.2; done
        ! grep -q FAILED /run/A.log' || fail "hot set phases failed: $(tb_l2 vm0 'tail -3 /run/A.log')"
    ctl stats vm0
    # The read-back measures the fault path: with placement on, the waterfall
    # went on storing the chunks still aging on the NUMA tiers while the guest
    # read, and on L1's two CPUs the fault thread then waits for the mover's
    # compression: 80 % of a CI run's read-back faults were served beside a
    # span being stored, p50 6.1x the bare copy's (docs/results/
    # 2026-11-30-ctier-readback-busy.md). mode=observe orders nothing new (the
    # backlog is 0 here); faults are served as ever. Placement on again after.
    ctl policy vm0 mode=observe > /dev/null || fail "policy mode=observe"
    tb_step "compress: the guest reads every page back (placement paused)"
    v=$(tb_l2 vm0 -t 900 'vtier-workload ctl verify report=5') || true
    echo "$v"
    bad=$(field "$v" bad)
    [ -n "$bad" ] || fail "no verify result: $v"
    s=$(vget vm0 $B.fault_p50_ns $B.fault_p99_ns "$B.ctiers.*.stored_bytes" \
        "$B.ctiers.*.pool_bytes" "backends.*.poisoned" $B.faults_stored $B.span_faults \
        $B.stored_ahead $B.idle_faults $B.idle_fault_p50_ns $B.idle_fault_p99_ns) ||
        fail "stats vm0: $s"
    set -- $s
    # the ratio is the compression phase's (stored, pool above): after the
    # read-back the tiers hold what was not read back, in pools the frees
    # left sparse (1.70 in a CI run: 11 MiB stored in 6.6 MiB of pool)
    p50=$1 p99=$2 rb_stored=$3 rb_pool=$4 poisoned=$5 nstored=$6 beside=$7 ahead=$8
    nidle=$9 ip50=${10} ip99=${11}
    bare=$(vtier-tbuffd bare-copy 20000) || fail "bare UFFDIO_COPY loop failed"
    echo "baseline: $bare"
    [ "$poisoned" = 0 ] || fail "pages poisoned: checksum failures"
    ratio=$(awk "BEGIN {printf \"%.2f\", $stored / ($pool > 0 ? $pool : 1)}")
    us() { awk "BEGIN {printf \"%.1f\", $1 / 1000}"; }	# ns -> us, one decimal
    echo "RESULT-COMPRESS cold_in_ctier_pct=$pct host_bytes_saved=$((stored - pool))" \
        "ratio=$ratio fault_p50_us=$(us "$p50") fault_p99_us=$(us "$p99")" \
        "bare_copy_p50_us=$(field "$bare" bare_copy_p50_us) bad_pages=$bad" \
        "bare_copy_p99_us=$(field "$bare" bare_copy_p99_us)" \
        "stored_faults=$nstored beside_span_faults=$beside" \
        "readback_stored_bytes=$rb_stored readback_pool_bytes=$rb_pool stored_ahead=$ahead" \
        "idle_faults=$nidle idle_fault_p50_us=$(us "$ip50") idle_fault_p99_us=$(us "$ip99")"
    [ "$bad" = 0 ] || fail "$bad guest pages bad after compression"
    # The figures the docs quote, each with a bound set from the RESULT-COMPRESS
    # lines recorded in docs/results/2026-11-24-vtierd-ctier.md and
    # 2026-11-29-isolation.md (quiet runs, and make check under load with the
    # scenario 3.5x slower): ratio 2.64-3.00; fault p50 1.6-3.9x the bare
    # UFFDIO_COPY loop's p50; fault p99 1.5-15.2 ms. The bounds leave room for
    # that noise: ratio >= 2.0, p50 <= 6x bare, p99 <= 40 ms. Since
    # store-ahead the read-back takes ~1 100 faults, not ~18 000, and the
    # lifetime p50 weighs the compression phase's; the idle mover's p50 (the
    # read-back's faults and those between orders) is held to the same 6x:
    # 1.33-2.97x in five runs (docs/results/2026-12-03-store-ahead-streams.md).
    awk "BEGIN {exit !($ratio >= 2.0)}" ||
        fail "compression ratio $ratio (stored / pool bytes) below its bound 2.0"
    b50=$(field "$bare" bare_copy_p50_us)
    awk "BEGIN {exit !($b50 > 0 && $p50 / 1000 <= 6 * $b50)}" ||
        fail "fault p50 $((p50 / 1000)) us over its bound 6x the bare copy's p50 $b50 us"
    [ "$nidle" -gt 0 ] || fail "no stored fault served with the mover idle (the read-back's)"
    awk "BEGIN {exit !($ip50 / 1000 <= 6 * $b50)}" ||
        fail "idle mover's fault p50 $((ip50 / 1000)) us over its bound 6x the bare copy's p50 $b50 us"
    [ "$p99" -le 40000000 ] || fail "fault p99 $((p99 / 1000)) us over its bound 40000 us"
    # the operator's views of this VM: its TCO report and its heatmap
    ctl report vm0 || fail "vtierctl report vm0"
    ctl heatmap vm0 --svg "$TB_OUT/heatmap-vm0.svg" || fail "vtierctl heatmap vm0"
    echo "heatmap: $(grep -c '<rect' "$TB_OUT/heatmap-vm0.svg") rect elements in out/heatmap-vm0.svg"
    ctl policy vm0 mode=auto > /dev/null || fail "policy mode=auto"
fi

if has_part zswap; then
    tb_step "zswap: stock QEMU, anonymous RAM, attached by QMP"
    grep -q . /proc/swaps || fail "L1 has no swap"
    [ "$(cat /sys/module/zswap/parameters/enabled)" = Y ] || fail "L1's zswap is off"
    tb_l2_start vm1 --mem 512M
    tb_l2_check_kvm vm1
    tb_l2 vm1 "vtier-workload serve --size ${WL}M --mix $CORPUS > /run/wl.log 2>&1 &"
    tb_l2 vm1 -t 900 'vtier-workload ctl --wait 850 info' > /dev/null || fail "vm1 workload"
    ctl attach /run/tb/vm1.agent.qmp --name vm1 mode=auto > /dev/null || fail "attach vm1"
    case $(ctl status vm1 --get ctier_path) in
    zswap*) ;;
    *) fail "vm1 not on the zswap path: $(ctl status vm1 --get ctier_path)" ;;
    esac
    pid1=$(tb_l2_pid vm1)
    swapped=0
    for i in $(seq 1 60); do
        sleep "$(awk "BEGIN {print $W / 1000}")"
        swapped=$(awk '/^VmSwap:/ {print int($2 / 1024)}' "/proc/$pid1/status")
        ztier=$(vget vm1 tiers.zswap.resident_bytes 2> /dev/null) || ztier=0
        echo "window $i: VmSwap ${swapped} MiB, tier zswap $((${ztier:-0} / MIB)) MiB"
        [ "$swapped" -ge $((WL / 2)) ] && [ "${ztier:-0}" -gt 0 ] && break
    done
    [ "$swapped" -ge $((WL / 2)) ] || fail "only $swapped MiB of vm1 paged out to zswap"
    v=$(tb_l2 vm1 -t 900 'vtier-workload ctl verify report=5') || true
    echo "$v"
    bad=$(field "$v" bad)
    [ -n "$bad" ] || fail "no verify result from vm1: $v"
    echo "RESULT-ZSWAP swapped_mib=$swapped zswap_tier_mib=$((${ztier:-0} / MIB)) bad_pages=$bad"
    [ "$bad" = 0 ] || fail "$bad pages of vm1 bad after zswap"
    # vtierd reports the zswap tier at all (measured 45-126 MiB of 65-131 MiB
    # swapped, docs/results/2026-11-24-vtierd-ctier.md)
    [ "${ztier:-0}" -gt 0 ] ||
        fail "vtierd's tier zswap holds 0 bytes of vm1 after 60 windows (VmSwap $swapped MiB), bound > 0"
    ctl detach vm1 > /dev/null
    tb_l2_stop vm1
fi

if has_part kill; then
    KILLS=${VTIERD_KILLS:-20}
    tb_step "kill: $KILLS x kill -9 of vtierd while the guest writes and reads every page"
    # A fault storm: the whole region goes to the lz4 tier after every start
    # of vtierd, and the guest's uniform phases fault it back, 20 % writes.
    ctl demote vm0 tier=lz4 > /dev/null || fail "demote vm0"
    tb_l2 vm0 "rm -f /run/S.stop; (while [ ! -e /run/S.stop ]; do
        vtier-workload ctl phase dist=uniform ranges=0-${WL}M accesses=100000 write_pct=20 ||
            { echo FAILED; exit 1; }; done; echo done) > /run/S.log 2>&1 &"
    resume=""
    faults=0
    for k in $(seq 1 "$KILLS"); do
        sleep "$(awk "BEGIN {srand($k * 7919); print 0.5 + rand() * 2.5}")"
        # store faults this vtierd served (its counters go with it)
        n=$(vget vm0 $B.faults_stored 2>/dev/null) || n=0
        faults=$((faults + ${n:-0}))
        kill -9 "$vtierd_pid"
        wait "$vtierd_pid" 2> /dev/null || true   # 137: killed, as meant
        sleep "$(awk "BEGIN {srand($k * 104729); print rand() * 0.5}")"
        start_vtierd --agent-socket "$AGENT" --config /run/vtier/vtierd.conf
        ms=$(wait_adopted) || fail "vtierd restart $k: the VM was not re-adopted within 20 s"
        resume="$resume $ms"
        ctl demote vm0 tier=lz4 > /dev/null || fail "demote after restart $k"
        echo "kill $k: re-adopted after $ms ms; $(grep 'hand-off of' "$TB_OUT/vtierd.log" |
            grep accepted | tail -1 | sed 's/.*generation/generation/')"
    done
    echo "store faults served by the killed vtierds: $faults"
    tb_l2 vm0 -t 300 'touch /run/S.stop; while ! grep -q "^done\|^FAILED" /run/S.log; do sleep 0.2; done
        ! grep -q FAILED /run/S.log' || fail "storm phases failed: $(tb_l2 vm0 'tail -3 /run/S.log')"
    v=$(tb_l2 vm0 -t 900 'vtier-workload ctl verify report=20') || true
    echo "$v"
    bad=$(field "$v" bad)
    [ -n "$bad" ] || fail "no verify result: $v"
    zero=$(echo "$v" | grep -c "all zeros" || true)
    p99=$(echo "$resume" | tr ' ' '\n' | grep . | sort -n | awk '{a[NR] = $1}
        END {i = int(NR * 0.99 + 0.999); if (i < 1) i = 1; print a[i]}')
    echo "RESULT-KILL kills=$KILLS bad_pages=$bad zero_pages=$zero resume_p99_ms=$p99"
    [ "$bad" = 0 ] || fail "$bad guest pages bad after $KILLS kills"
    # resume p99 measured 650-1190 ms in quiet runs, 2450 ms in make check under
    # load (docs/results/2026-11-24-vtierd-ctier.md, 2026-11-29-isolation.md)
    [ "$p99" -le 5000 ] ||
        fail "resume p99 after kill -9 $p99 ms (vtierd started -> re-adopted) over its bound 5000 ms"
fi
if has_part remote; then
    remote_part
fi
if has_part tco; then
    . /src/tests/testbed/scenarios/ctier/tco.sh
fi
if has_part bench-tco; then
    . /src/tests/testbed/scenarios/ctier/bench-tco.sh
fi
tb_l2_stop vm0
grep -c "accepted" "$TB_OUT/vtierd.log" | sed 's/^/hand-offs accepted: /'
