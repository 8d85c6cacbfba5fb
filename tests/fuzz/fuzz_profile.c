// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target of the migration profile reader (host-agent/iface/profile_format.c):
 * a profile comes from another host through two QEMUs. The first input byte
 * picks the backend size the destination has (bit 0 set: the size the
 * profile claims, so that the checks past it are reached; else 64 MiB); the
 * rest is the profile. It must be refused with a reason, or accepted with
 * every chunk inside the buffer, every tier index inside its table, a stream
 * section (VTIER_PROFILE_F_STREAM) only as the reader's rules allow, and a
 * v2 profile written again from what was read, its stream section too, must
 * read back the same, byte for byte. The log string of a section holds
 * nothing of its secret.
 */
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* An accepted stream section: the rules of the reader, and a log string without the secret. */
static void check_stream(const struct vt_profile_stream *s)
{
	char text[VT_PROFILE_STREAM_STR_LEN];

	assert(!all_zero(s->secret, sizeof(s->secret)));
	assert(!all_zero(s->stream_id, sizeof(s->stream_id)));
	assert(s->port);
	if (s->family == VTIER_PROFILE_STREAM_IPV4) {
		assert(all_zero(s->addr + 4, sizeof(s->addr) - 4));
		assert(!all_zero(s->addr, 4) && (s->addr[0] & 0xf0) != 0xe0);
	} else {
		assert(s->family == VTIER_PROFILE_STREAM_IPV6);
		assert(!all_zero(s->addr, sizeof(s->addr)) && s->addr[0] != 0xff);
		assert(!(s->addr[0] == 0xfe && (s->addr[1] & 0xc0) == 0x80));
	}
	vt_profile_stream_str(s, text, sizeof(text));
	assert(text[0] && text[0] != '(');
	assert(!memmem(text, strlen(text), s->secret, sizeof(s->secret)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[VT_PROFILE_ERR_LEN] = "", err2[VT_PROFILE_ERR_LEN] = "";
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
	       (size_t)p.n_chunks * (p.version == 1 ? 1 : sizeof(struct vtier_profile_chunk)) +
	       (p.has_stream ? sizeof(struct vtier_profile_stream) : 0));
	assert(!p.has_stream || p.version == 2);
	if (p.has_stream)
		check_stream(&p.stream);
	for (unsigned int t = 0; t < p.n_tiers; t++)
		assert(vt_profile_tier_name_ok(p.tiers[t].name));
	if (p.version == 2) {
		len = vt_profile_v2_bytes(p.size_bytes, p.n_tiers, p.chunk_shift) +
		      (p.has_stream ? sizeof(struct vtier_profile_stream) : 0);
		again = malloc(len);
		assert(vt_profile_v2_init(again, p.size_bytes, p.chunk_shift, p.tiers, p.n_tiers,
					  p.windows) == 0);
		if (p.has_stream)
			assert(!vt_profile_v2_set_stream(again, len, &p.stream, err2, sizeof(err2)));
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
		assert(q.has_stream == p.has_stream);
		assert(memcmp(again, buf, len) == 0);
		free(again);
	}
	free(buf);
	return 0;
}
