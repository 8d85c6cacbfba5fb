# vtierd-remote: the remote tier part of vtierd-ctier alone (RESULT-REMOTE-L2).
VTIERD_CTIER_PARTS=remote
. /src/tests/testbed/scenarios/vtierd-ctier.sh
