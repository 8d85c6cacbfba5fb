# Runner self-test, expected to FAIL: a command failing inside an L2 guest
# fails the run, with the guest's console log attached.
tb_l2_start vm0 --mem 256M
# First the hang report, on a guest paused on purpose: tb_l2 must give up,
# and the report must come back (each QMP call bounded) with the vCPU
# threads' kernel stacks.
tb_qmp vm0 '{"execute":"stop"}' > /dev/null
( tb_l2 vm0 -t 3 true ) 2>&1 | sed 's/^VTIER-TB-FAIL: /selftest: paused guest: /'
tb_qmp vm0 '{"execute":"cont"}' > /dev/null
sed 's/^/selftest: hang.log: /' "$TB_OUT/l2/vm0/hang.log"
tb_l2 vm0 'echo "selftest: failing on purpose in L2" > /dev/console; exit 3'
tb_step "selftest: not reached"
