/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one tier-name rule: [tier.NAME] and [ctier.NAME] config groups, the
 * tiers= policy key, the STATS wire and the migration profile all take the
 * same names, so that every tier the config makes can be chosen with tiers=
 * and reaches QEMU (16-byte name fields, include/vtier/) unshortened.
 */
#ifndef VTIER_UTIL_TIER_NAME_H
#define VTIER_UTIL_TIER_NAME_H

#include <stdbool.h>

/* The longest name: the wire's name fields hold 16 bytes with the NUL. */
#define VT_TIER_NAME_MAX 15
/* The rule in words, for refusals. */
#define VT_TIER_NAME_RULE "1..15 characters of A-Z a-z 0-9 . _ : -"

/* @name is 1..VT_TIER_NAME_MAX of [A-Za-z0-9._:-]: safe in JSON, logs, lists. */
bool vt_tier_name_ok(const char *name);

#endif
