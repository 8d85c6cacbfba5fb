// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target of the hand-off message checks (host-agent/iface/handoff_proto.c):
 * the input is a stream of messages as QEMU would write them on the socket,
 * each a header, its payload, and (first byte after the header, consumed)
 * the number of fds that came with it (0..5). Every message must be either
 * accepted with all its pointers inside the payload, or refused with a
 * reason; nothing may be read outside the input. STATS, which the agent
 * sends, goes through vt_handoff_check_stats() as well, and SENT through
 * vt_handoff_sent_init() (its status, count and text as the agent's).
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "handoff_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_inside(const void *p, size_t len, const uint8_t *base, size_t size)
{
	const uint8_t *q = p;

	assert(q >= base && len <= size && q - base <= (ptrdiff_t)(size - len));
}

/* An accepted HELLO: a send map only with a zero map, and each with its fd. */
static void check_hello_fds(uint32_t flags, unsigned int nfds)
{
	unsigned int want = VTIER_HANDOFF_HELLO_NFDS;

	if (flags & VTIER_HELLO_F_PREPARE)
		want = VTIER_HANDOFF_PREPARE_NFDS;
	else if (flags & VTIER_HELLO_F_SEND_MAP)
		want = VTIER_HANDOFF_SEND_MAP_NFDS;
	else if (flags & VTIER_HELLO_F_ZERO_MAP)
		want = VTIER_HANDOFF_ZERO_MAP_NFDS;
	assert(!(flags & VTIER_HELLO_F_SEND_MAP) || (flags & VTIER_HELLO_F_ZERO_MAP));
	assert(nfds == want);
}

/* A SENT as the agent builds it from a status, a count and a text of any length. */
static void check_sent(const uint8_t *payload, size_t len)
{
	const size_t at = offsetof(struct vtier_handoff_sent, message);
	struct vtier_handoff_sent in, out;
	char *text;

	if (len < at)
		return;
	text = malloc(len - at + 1);
	memcpy(&in, payload, at);
	memcpy(text, payload + at, len - at);
	text[len - at] = '\0';
	assert(vt_handoff_sent_init(&out, in.status, in.pages, text) == sizeof(out));
	assert(out.status == (in.status > 0 ? -EINVAL : in.status));
	assert(!out.reserved && out.pages == in.pages);
	assert(memchr(out.message, 0, sizeof(out.message)));
	assert(!strncmp(out.message, text, sizeof(out.message) - 1));
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	while (size >= sizeof(struct vtier_handoff_hdr) + 1) {
		struct vtier_handoff_hdr hdr;
		char err[VT_HANDOFF_ERR_LEN];
		struct vt_handoff_msg msg;
		unsigned int nfds;
		uint8_t *payload;
		size_t len;
		int ret;

		memcpy(&hdr, data, sizeof(hdr));
		nfds = data[sizeof(hdr)] % 6;
		data += sizeof(hdr) + 1;
		size -= sizeof(hdr) + 1;

		err[0] = '\0';
		ret = vt_handoff_check_hdr(&hdr, err, sizeof(err));
		assert(ret <= 0 && (!ret || err[0]));
		len = hdr.size < size ? hdr.size : size;	/* truncated if short */
		/* An exact-size copy, so that ASan sees any overread. */
		payload = malloc(len ? len : 1);
		memcpy(payload, data, len);
		err[0] = '\0';
		ret = vt_handoff_parse(&hdr, payload, len, nfds, &msg, err, sizeof(err));
		assert(ret <= 0 && (!ret || err[0]));
		if (!ret && hdr.type == VTIER_HANDOFF_HELLO) {
			const struct vtier_handoff_hello *h = msg.hello.fixed;

			check_inside(h, sizeof(*h), payload, len);
			check_inside(msg.hello.ranges, h->n_ranges * sizeof(msg.hello.ranges[0]),
				     payload, len);
			if (msg.hello.profile) {
				check_inside(msg.hello.profile, h->profile_size, payload, len);
				vt_handoff_check_profile(msg.hello.profile, h->profile_size,
							 h->size_bytes, err, sizeof(err));
			}
			for (uint32_t i = 0; i < h->n_ranges; i++)
				assert(msg.hello.ranges[i].offset + msg.hello.ranges[i].size <=
				       h->size_bytes);
			assert(memchr(h->backend_id, 0, sizeof(h->backend_id)));
			assert(vt_handoff_name_safe(h->backend_id));	/* never a path */
			check_hello_fds(h->flags, nfds);
		}
		if (!ret && hdr.type == VTIER_HANDOFF_POLICY) {
			const struct vtier_handoff_policy *p = msg.policy.fixed;

			check_inside(p, sizeof(*p), payload, len);
			/* the dram min is there exactly when its flag says so, inside the payload */
			assert(!(p->flags & VTIER_POLICY_F_DRAM_MIN) == !msg.policy.min);
			if (msg.policy.min)
				check_inside(msg.policy.min, sizeof(*msg.policy.min), payload, len);
			assert(p->flags & VTIER_POLICY_F_WEIGHT ?
			       p->weight >= 1 && p->weight <= VTIER_POLICY_WEIGHT_MAX : !p->weight);
		}
		if (!ret && hdr.type == VTIER_HANDOFF_RANGES)
			check_inside(msg.ranges.ranges,
				     msg.ranges.fixed->n_ranges * sizeof(msg.ranges.ranges[0]),
				     payload, len);
		if (hdr.type == VTIER_HANDOFF_STATS) {
			/* Agent -> QEMU: the check the agent runs before sending. */
			struct vt_handoff_stats st;

			err[0] = '\0';
			ret = vt_handoff_check_stats(payload, len, &st, err, sizeof(err));
			assert(ret <= 0 && (!ret || err[0]));
			if (!ret && st.tiers_v2)
				check_inside(st.tiers_v2, st.fixed->n_tiers * sizeof(st.tiers_v2[0]),
					     payload, len);
			else if (!ret)
				check_inside(st.tiers, st.fixed->n_tiers * sizeof(st.tiers[0]),
					     payload, len);
			if (!ret && st.tco) {
				uint64_t bytes = 0;

				check_inside(st.tco, sizeof(*st.tco), payload, len);
				check_inside(st.tco_tiers, st.tco->n_tiers * sizeof(st.tco_tiers[0]),
					     payload, len);
				for (uint32_t i = 0; i < st.tco->n_tiers; i++)
					bytes += st.tco_tiers[i].bytes;
				assert(bytes == st.tco->bytes);	/* what QEMU checks too */
			}
		}
		if (hdr.type == VTIER_HANDOFF_SENT)
			check_sent(payload, len);	/* agent -> QEMU */
		if (!ret && hdr.type == VTIER_HANDOFF_MIGRATION)
			assert(msg.migration->event >= VTIER_MIGRATION_START &&
			       msg.migration->event <= VTIER_MIGRATION_SEND_END);
		free(payload);
		data += len;
		size -= len;
	}
	return 0;
}
