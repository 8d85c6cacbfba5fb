# migrate-kill: the kill part of migrate-tiered alone (RESULT-MIGRATE-KILL):
# a tiered VM migrated while the source's vtierd, then the destination's, is
# killed -9 at random moments (issue 15).
MIGRATE_PARTS=kill
. /src/tests/testbed/scenarios/migrate-tiered.sh
