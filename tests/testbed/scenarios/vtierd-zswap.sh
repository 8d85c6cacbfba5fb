# vtierd-zswap: the stock-QEMU part of vtierd-ctier alone (RESULT-ZSWAP).
VTIERD_CTIER_PARTS=zswap
. /src/tests/testbed/scenarios/vtierd-ctier.sh
