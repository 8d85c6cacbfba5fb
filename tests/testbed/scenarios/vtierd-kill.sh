# vtierd-kill: the kill -9 part of vtierd-ctier alone (RESULT-KILL).
VTIERD_CTIER_PARTS=kill
. /src/tests/testbed/scenarios/vtierd-ctier.sh
