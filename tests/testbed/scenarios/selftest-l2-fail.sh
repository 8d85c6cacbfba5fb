# Runner self-test, expected to FAIL: a command failing inside an L2 guest
# fails the run, with the guest's console log attached.
tb_l2_start vm0 --mem 256M
tb_l2 vm0 'echo "selftest: failing on purpose in L2" > /dev/console; exit 3'
tb_step "selftest: not reached"
