# bench-tco: TierScape's Fig. 8 on a real VM, the bench-tco part of
# vtierd-ctier alone (tests/testbed/scenarios/ctier/bench-tco.sh; make
# bench-tco; docs/bench-tco.md). RESULT-BENCH-TCO per placement.
VTIERD_CTIER_PARTS=bench-tco
. /src/tests/testbed/scenarios/vtierd-ctier.sh
