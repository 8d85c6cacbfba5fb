# vtierd-tdp: vtierd-tiering with host-kmod loaded: vtierd must choose Telescope
# (telescope-flex) over the tdp source, map guest-physical regions to QEMU's
# host-virtual addresses and pass the same checks. Needs vtier_tdp.ko in
# /opt/vtier (tests/vtierd/run-scenario builds and copies it).
VTIERD_TDP=1
. /src/tests/testbed/scenarios/vtierd-tiering.sh
