// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target of a migration profile mapped onto the destination's tiers
 * (host-agent/handoff/migration_profile.c): what a destination does with a profile
 * from another host once it reads as valid. Input: 10 bytes of the
 * destination's tiers (byte 0: memory tiers 1..4, byte 1: compressed tiers
 * 0..4, bytes 2..9: each tier's name from a list, so that names match the
 * profile's or not), then what fuzz_profile takes (a byte, then the profile).
 * The profile's tiers must map onto the destination's by the rules (same kind,
 * or a compressed tier onto a memory tier), the seeding must name only chunks
 * of the VM and tiers below the fastest, and the orders at the hand-off only
 * compressed tiers, inside the VM, within the room given.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "migration_profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR 10
#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

static const char *const names[] = { "dram", "cxl", "pmem", "lz4", "zstd", "disk",
				     "lz4hc", "node1" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[VT_PROFILE_ERR_LEN] = "";
	struct vt_profile_tier ours[VTIER_PROFILE_TIERS_MAX];
	int map[VTIER_PROFILE_TIERS_MAX];
	uint64_t room[VT_MTM_MAX_TIERS];
	uint64_t backend = 64ull << 20, hva = 0x7f0000000000ull;
	unsigned int nm, nc, n_ours, seeded;
	struct vt_profile p;
	struct vt_range r;
	struct vt_mtm *m;
	GArray *plan, *out;
	uint8_t *buf;
	size_t len;

	if (size < HDR + 1)
		return 0;
	nm = data[0] % 4 + 1;
	nc = data[1] % 5;
	n_ours = nm + nc;
	memset(ours, 0, sizeof(ours));
	for (unsigned int i = 0; i < n_ours; i++) {
		g_strlcpy(ours[i].name, names[data[2 + i] % G_N_ELEMENTS(names)], sizeof(ours[i].name));
		ours[i].kind = i < nm ? VTIER_PROFILE_TIER_NUMA : VTIER_PROFILE_TIER_COMPRESSED;
	}
	data += HDR;
	size -= HDR;
	if ((data[0] & 1) && size >= 1 + 16)
		memcpy(&backend, data + 1 + 8, sizeof(backend));
	/* a VM of up to 1 GiB: the MTM state is per 2 MiB chunk */
	if (!backend || backend > (1ull << 30))
		return 0;
	len = size - 1;
	buf = malloc(len ? len : 1);	/* exact size: ASan sees any overread */
	memcpy(buf, data + 1, len);
	if (vt_profile_read(buf, len, backend, &p, err, sizeof(err))) {
		free(buf);
		return 0;
	}
	vt_migration_profile_map_tiers(&p, ours, n_ours, map);
	for (unsigned int t = 0; t < p.n_tiers; t++) {
		CHECK(map[t] >= -1 && map[t] < (int)n_ours);
		if (map[t] >= 0)
			CHECK(ours[map[t]].kind == p.tiers[t].kind ||
			      (p.tiers[t].kind == VTIER_PROFILE_TIER_COMPRESSED &&
			       ours[map[t]].kind == VTIER_PROFILE_TIER_NUMA));
	}
	r = (struct vt_range){ hva, hva + backend };
	m = vt_mtm_new(&r, 1, 2ull << 20, 4096, n_ours);
	plan = g_array_new(FALSE, FALSE, sizeof(struct vt_seed_order));
	out = g_array_new(FALSE, FALSE, sizeof(struct vt_mtm_order));
	seeded = vt_migration_profile_seed(m, hva, &p, map, nm, plan);
	CHECK(seeded <= m->chunks->len);
	for (unsigned int i = 0; i < plan->len; i++) {
		const struct vt_seed_order *o = &g_array_index(plan, struct vt_seed_order, i);

		CHECK(o->chunk < m->chunks->len);
		CHECK(o->tier > 0 && o->tier < (int)n_ours);
	}
	for (unsigned int t = 0; t < VT_MTM_MAX_TIERS; t++)
		room[t] = ((uint64_t)data[0] + 1) << 24;	/* 16 MiB .. 4 GiB a tier */
	vt_migration_profile_at_handoff(m, plan, 0, nm, ~0u, hva, hva + backend, room, out);
	for (unsigned int i = 0; i < out->len; i++) {
		const struct vt_mtm_order *o = &g_array_index(out, struct vt_mtm_order, i);

		CHECK(o->chunk < m->chunks->len && o->bulk && !o->promote);
		CHECK(o->to_tier >= (int)nm && o->to_tier < (int)n_ours);
	}
	g_array_free(out, TRUE);
	g_array_free(plan, TRUE);
	vt_mtm_free(m);
	free(buf);
	return 0;
}
