# vtierd-tco: the TCO part of vtierd-ctier alone (RESULT-TCO, one line per alpha;
# tests/testbed/scenarios/ctier/tco.sh).
VTIERD_CTIER_PARTS=tco
. /src/tests/testbed/scenarios/vtierd-ctier.sh
