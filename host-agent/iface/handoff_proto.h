/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The agent's side of the QEMU hand-off protocol (include/vtier/handoff.h):
 * checking what QEMU sends and building what the agent answers. Pure
 * functions, no I/O: the socket code is handoff_server.h, the fuzz target
 * calls vt_handoff_parse() directly.
 *
 * QEMU is a separate, possibly buggy or hostile, process: every message is
 * checked completely (sizes, counts, strings, ranges) before any of it is
 * used, and a bad one gives a negative errno plus a one-line reason.
 */
#ifndef VTIER_IFACE_HANDOFF_PROTO_H
#define VTIER_IFACE_HANDOFF_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vtier/handoff.h>

#define VT_HANDOFF_ERR_LEN 160

/* A checked HELLO; the pointers point into the payload it was parsed from. */
struct vt_handoff_hello {
	const struct vtier_handoff_hello *fixed;
	const struct vtier_handoff_range *ranges;	/* fixed->n_ranges */
	const uint8_t *profile;				/* fixed->profile_size */
};

/*
 * A checked STATS report (what QEMU would accept): entries are @tiers, or
 * @tiers_v2 when fixed->flags has VTIER_STATS_F_TIER_V2 (the other is NULL);
 * @tco and @tco_tiers with VTIER_STATS_F_TCO, @migration with
 * VTIER_STATS_F_MIGRATION, else NULL.
 */
struct vt_handoff_stats {
	const struct vtier_handoff_stats *fixed;
	const struct vtier_handoff_tier *tiers;		/* fixed->n_tiers */
	const struct vtier_handoff_tier_v2 *tiers_v2;	/* fixed->n_tiers */
	const struct vtier_handoff_tco *tco;
	const struct vtier_handoff_tco_tier *tco_tiers;	/* tco->n_tiers */
	const struct vtier_handoff_migration_stats *migration;
};

/*
 * A checked POLICY: @min is the dram min that follows the policy with
 * VTIER_POLICY_F_DRAM_MIN, else NULL.
 */
struct vt_handoff_policy {
	const struct vtier_handoff_policy *fixed;
	const struct vtier_handoff_policy_min *min;
};

/* Any checked message QEMU may send to an agent. */
struct vt_handoff_msg {
	struct vtier_handoff_hdr hdr;
	union {
		struct vt_handoff_hello hello;
		struct vt_handoff_policy policy;
		const struct vtier_handoff_migration *migration;
		struct {
			const struct vtier_handoff_ranges *fixed;
			const struct vtier_handoff_range *ranges;	/* fixed->n_ranges */
		} ranges;
	};
};

/*
 * Check a header before reading its payload: magic, version, a type QEMU may
 * send, and a size within that type's bounds. Returns 0, -EPROTO (magic,
 * version, type) or -EMSGSIZE, with @err set.
 */
int vt_handoff_check_hdr(const struct vtier_handoff_hdr *hdr, char *err, size_t err_len);

/*
 * Check a whole message from QEMU: @hdr (already checked or not), its payload
 * of exactly hdr->size bytes (@size is how many were received) and the number
 * of fds that came with it (HELLO needs VTIER_HANDOFF_HELLO_NFDS, with
 * VTIER_HELLO_F_ZERO_MAP VTIER_HANDOFF_ZERO_MAP_NFDS, with that and
 * VTIER_HELLO_F_SEND_MAP VTIER_HANDOFF_SEND_MAP_NFDS, a PREPARE
 * VTIER_HANDOFF_PREPARE_NFDS; others none; SEND_MAP without ZERO_MAP is
 * refused). On success fills @msg, whose pointers refer into @payload.
 * Returns 0 or -EPROTO / -EMSGSIZE / -EBADMSG / -ERANGE with @err set.
 */
int vt_handoff_parse(const struct vtier_handoff_hdr *hdr, const void *payload, size_t size,
		     unsigned int nfds, struct vt_handoff_msg *msg, char *err, size_t err_len);

/*
 * Check a hotness profile in the vtier format (VTIER_PROFILE_MAGIC) against
 * the backend it claims to describe. Returns 0, -EBADMSG or -ERANGE.
 */
int vt_handoff_check_profile(const void *profile, size_t size, uint64_t backend_size,
			     char *err, size_t err_len);

/*
 * May @s become part of a file name (backend ids key stores on disk)?
 * 1..63 of [A-Za-z0-9._-], not starting with '.' or '-', no "..". VM names
 * are display only: sanitise them (vt_text_printable) instead.
 */
bool vt_handoff_name_safe(const char *s);

/*
 * Check a STATS payload of @size bytes as QEMU does: known flags, at most
 * VTIER_HANDOFF_TIERS_MAX entries of the form the flags say, a size that
 * matches, every tier named; a TCO block whose tiers are named, of a known
 * kind and add up to its total, whose percentages and counters are in
 * range (docs/abi-handoff.md). The agent checks its own reports with it before
 * sending, since QEMU drops the connection on a bad one. Returns 0 (with
 * @out filled, pointing into @payload) or -EBADMSG / -EMSGSIZE / -ERANGE with
 * @err set.
 */
int vt_handoff_check_stats(const void *payload, size_t size, struct vt_handoff_stats *out,
			   char *err, size_t err_len);

/*
 * Fill a SENT payload, the agent's answer to MIGRATION SEND_END (its header's
 * seq is the MIGRATION's): @status 0 when every page the agent marked in the
 * send map was delivered, else a negative errno (a positive one becomes
 * -EINVAL); @pages delivered in this migration; @message cut to fit its
 * field, NUL-terminated (NULL: ""). Returns the payload's size.
 */
size_t vt_handoff_sent_init(struct vtier_handoff_sent *sent, int status, uint64_t pages,
			    const char *message);

/* Fill a header for a message of @type with @size payload bytes. */
void vt_handoff_hdr_init(struct vtier_handoff_hdr *hdr, uint16_t type, uint32_t seq,
			 uint32_t size);

/* Human-readable name of a message type ("HELLO"), "unknown" otherwise. */
const char *vt_handoff_type_name(uint16_t type);

#endif /* VTIER_IFACE_HANDOFF_PROTO_H */
