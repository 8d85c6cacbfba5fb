// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target of the migration profile reader (host-agent/iface/profile_format.c):
 * a profile comes from another host through two QEMUs. The first input byte
 * picks the backend size the destination has (bit 0 set: the size the
 * profile claims, so that the checks past it are reached; else 64 MiB); the
 * rest is the profile. It must be refused with a reason, or accepted with
 * every chunk inside the buffer, every tier index inside its table, and a
 * v2 profile written again from what was read must read back the same.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[VT_PROFILE_ERR_LEN] = "";
	uint64_t backend = 64ull << 20;
	struct vt_profile p, q;
	uint8_t *buf, *again;
	size_t len;
	int ret;

	if (size < 1)
		return 0;
	if ((data[0] & 1) && size >= 1 + 16)
		memcpy(&backend, data + 1 + 8, sizeof(backend));
	len = size - 1;
	buf = malloc(len ? len : 1);	/* exact size, so that ASan sees any overread */
	memcpy(buf, data + 1, len);
	ret = vt_profile_read(buf, len, backend, &p, err, sizeof(err));
	assert(ret <= 0 && (!ret || err[0]));
	if (ret) {
		free(buf);
		return 0;
	}
	assert(p.version == 1 || p.version == 2);
	assert(p.size_bytes == backend && p.n_chunks);
	assert(p.chunk_shift >= VTIER_PROFILE_SHIFT_MIN && p.chunk_shift <= VTIER_PROFILE_SHIFT_MAX);
	assert(p.chunks >= buf && p.chunks <= buf + len);
	assert((size_t)(buf + len - p.chunks) ==
	       (size_t)p.n_chunks * (p.version == 1 ? 1 : sizeof(struct vtier_profile_chunk)));
	for (unsigned int t = 0; t < p.n_tiers; t++)
		assert(vt_profile_tier_name_ok(p.tiers[t].name));
	if (p.version == 2) {
		len = vt_profile_v2_bytes(p.size_bytes, p.n_tiers, p.chunk_shift);
		again = malloc(len);
		assert(vt_profile_v2_init(again, p.size_bytes, p.chunk_shift, p.tiers, p.n_tiers,
					  p.windows) == 0);
	} else {
		again = NULL;
	}
	for (uint32_t i = 0; i < p.n_chunks; i++) {
		struct vt_profile_chunk c;

		vt_profile_chunk(&p, i, &c);
		assert(c.ema >= 0 && c.ema <= 1);
		assert(c.tier >= -1 && c.tier < (int)p.n_tiers);
		if (again)
			vt_profile_v2_set(again, i, &c);
	}
	if (again) {
		assert(vt_profile_read(again, len, backend, &q, err, sizeof(err)) == 0);
		assert(memcmp(again + sizeof(struct vtier_profile_v2),
			      buf + sizeof(struct vtier_profile_v2),
			      len - sizeof(struct vtier_profile_v2)) == 0);
		free(again);
	}
	free(buf);
	return 0;
}
