# Runner self-test (suites): passes only in an L1 as fresh as after its setup.
# Run after selftest-dirty in the same L1, it checks that the reset between
# scenarios (l1/suite.sh) undid everything selftest-dirty left behind.
if [ -e /tb/out/selftest-dirty/result ]; then
    tb_step "selftest: clean after selftest-dirty in this L1"
else
    tb_step "selftest: clean in a fresh L1"
fi
for p in /proc/[0-9]*; do
    case "$(tr '\0' ' ' 2>/dev/null < "$p/cmdline")" in
        "sleep 100007 ") tb_fail "selftest: the leftover process ${p#/proc/} still runs" ;;
    esac
done
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled)
[ "$thp" = "${TB_L1_THP:-always}" ] || tb_fail "selftest: THP is $thp"
[ "$(cat /proc/sys/kernel/numa_balancing)" = 1 ] || tb_fail "selftest: numa_balancing is not 1"
grep -q ' /mnt/selftest ' /proc/mounts && tb_fail "selftest: /mnt/selftest still mounted"
for f in /tmp/selftest-leftover /run/selftest-leftover /run/tb/selftest-leftover; do
    [ -e "$f" ] && tb_fail "selftest: $f still there"
done
[ "$(cat /sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds)" = 0 ] || tb_fail "selftest: a kdamond is left"
tb_step "selftest: nothing left behind"
