# vtierd-compress: the compression part of vtierd-ctier alone (RESULT-COMPRESS).
VTIERD_CTIER_PARTS=compress
. /src/tests/testbed/scenarios/vtierd-ctier.sh
