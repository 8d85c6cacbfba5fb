# shell: nothing to run; with `tests/testbed/run --shell shell` the L1 console
# drops to a shell once the host is set up. tb.sh is not sourced there: run
# `. /tb/in/config.env; . /tb/in/tb.sh` first, then e.g. `tb_l2_shell vm0`.
tb_step "L1 is ready: $(tb_tiers)"
