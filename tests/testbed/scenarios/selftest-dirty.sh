# Runner self-test (suites), expected to FAIL: leaves behind in L1 what a
# scenario may leave (a process in a session of its own, changed knobs, a
# mount, files, a running DAMON kdamond), then fails. selftest-clean, next in
# the same L1, must find none of it (l1/suite.sh, the reset between scenarios).
tb_step "selftest: leaving things behind on purpose"
setsid sleep 100007 < /dev/null > /dev/null 2>&1 &
echo never > /sys/kernel/mm/transparent_hugepage/enabled
echo 0 > /proc/sys/kernel/numa_balancing
mkdir -p /mnt/selftest
mount -t tmpfs tmpfs /mnt/selftest
touch /tmp/selftest-leftover /run/selftest-leftover /run/tb/selftest-leftover
d=/sys/kernel/mm/damon/admin/kdamonds
echo 1 > $d/nr_kdamonds
echo 1 > $d/0/contexts/nr_contexts
echo paddr > $d/0/contexts/0/operations
echo 1 > $d/0/contexts/0/targets/nr_targets
echo on > $d/0/state
tb_step "selftest: kdamond $(cat $d/0/state), THP $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
tb_fail "selftest: failing on purpose after leaving things behind"
