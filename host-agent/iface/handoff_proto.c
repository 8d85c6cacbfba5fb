// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Checking QEMU's hand-off messages. See handoff_proto.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "errbuf.h"
#include "handoff_proto.h"

#define HELLO_SIZE_MAX (sizeof(struct vtier_handoff_hello) + \
			VTIER_HANDOFF_RANGES_MAX * sizeof(struct vtier_handoff_range) + \
			VTIER_HANDOFF_PROFILE_MAX)

_Static_assert(HELLO_SIZE_MAX <= VTIER_HANDOFF_PAYLOAD_MAX, "payload max too small");

const char *vt_handoff_type_name(uint16_t type)
{
	switch (type) {
	case VTIER_HANDOFF_HELLO:
		return "HELLO";
	case VTIER_HANDOFF_HELLO_REPLY:
		return "HELLO_REPLY";
	case VTIER_HANDOFF_STATS:
		return "STATS";
	case VTIER_HANDOFF_POLICY:
		return "POLICY";
	case VTIER_HANDOFF_POLICY_REPLY:
		return "POLICY_REPLY";
	case VTIER_HANDOFF_MIGRATION:
		return "MIGRATION";
	case VTIER_HANDOFF_PROFILE:
		return "PROFILE";
	case VTIER_HANDOFF_RANGES:
		return "RANGES";
	case VTIER_HANDOFF_SENT:
		return "SENT";
	}
	return "unknown";
}

void vt_handoff_hdr_init(struct vtier_handoff_hdr *hdr, uint16_t type, uint32_t seq, uint32_t size)
{
	*hdr = (struct vtier_handoff_hdr) {
		.magic = VTIER_HANDOFF_MAGIC,
		.version = VTIER_HANDOFF_VERSION,
		.type = type,
		.size = size,
		.seq = seq,
	};
}

int vt_handoff_check_hdr(const struct vtier_handoff_hdr *hdr, char *err, size_t err_len)
{
	size_t min, max;

	if (hdr->magic != VTIER_HANDOFF_MAGIC)
		return vt_err_set(-EPROTO, err, err_len, "bad magic 0x%08x (want 0x%08x)",
			          hdr->magic, VTIER_HANDOFF_MAGIC);
	if (hdr->version != VTIER_HANDOFF_VERSION)
		return vt_err_set(-EPROTO, err, err_len,
				  "protocol version %u not supported (this agent speaks %u)",
				  hdr->version, VTIER_HANDOFF_VERSION);
	switch (hdr->type) {
	case VTIER_HANDOFF_HELLO:
		min = sizeof(struct vtier_handoff_hello);
		max = HELLO_SIZE_MAX;
		break;
	case VTIER_HANDOFF_POLICY:
		/* the dram min follows with VTIER_POLICY_F_DRAM_MIN: checked against the flags */
		min = sizeof(struct vtier_handoff_policy);
		max = min + sizeof(struct vtier_handoff_policy_min);
		break;
	case VTIER_HANDOFF_MIGRATION:
		min = max = sizeof(struct vtier_handoff_migration);
		break;
	case VTIER_HANDOFF_RANGES:
		min = sizeof(struct vtier_handoff_ranges);
		max = min + VTIER_HANDOFF_RANGES_MAX * sizeof(struct vtier_handoff_range);
		break;
	default:
		return vt_err_set(-EPROTO, err, err_len, "message type %u (%s) is not one QEMU sends",
			          hdr->type, vt_handoff_type_name(hdr->type));
	}
	if (hdr->size < min || hdr->size > max)
		return vt_err_set(-EMSGSIZE, err, err_len, "%s of %u bytes (must be %zu..%zu)",
			          vt_handoff_type_name(hdr->type), hdr->size, min, max);
	return 0;
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

bool vt_handoff_name_safe(const char *s)
{
	size_t len = strnlen(s, VTIER_HANDOFF_ID_LEN);

	if (!len || len >= VTIER_HANDOFF_ID_LEN || s[0] == '.' || s[0] == '-' || strstr(s, ".."))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

static bool terminated(const char *s, size_t len)
{
	return memchr(s, '\0', len) != NULL;
}

/*
 * Ranges are checked against @backend_size when it is known (HELLO); a
 * RANGES message only carries ranges, checked against the HELLO's size by
 * the caller (backend_size 0 here: shape only).
 */
static int check_ranges(const char *what, const struct vtier_handoff_range *r, uint32_t n,
			uint64_t backend_size, char *err, size_t err_len)
{
	for (uint32_t i = 0; i < n; i++) {
		if (!r[i].size || r[i].size % 4096 || r[i].gpa % 4096 || r[i].offset % 4096)
			return vt_err_set(-EBADMSG, err, err_len, "%s: range %u not 4 KiB aligned", what, i);
		if (r[i].offset + r[i].size < r[i].offset ||
		    (backend_size && (r[i].offset > backend_size ||
				      r[i].size > backend_size - r[i].offset)))
			return vt_err_set(-ERANGE, err, err_len, "%s: range %u outside the backend", what, i);
		if (r[i].gpa + r[i].size < r[i].gpa)
			return vt_err_set(-ERANGE, err, err_len, "%s: range %u wraps around", what, i);
	}
	return 0;
}

static int check_hello(const void *payload, size_t size, struct vt_handoff_hello *out,
		       char *err, size_t err_len)
{
	const struct vtier_handoff_hello *h = payload;
	const struct vtier_handoff_range *r = (const void *)(h + 1);
	uint64_t want;
	int ret;

	if (h->n_ranges > VTIER_HANDOFF_RANGES_MAX)
		return vt_err_set(-EMSGSIZE, err, err_len, "HELLO with %u ranges (max %u)",
			          h->n_ranges, VTIER_HANDOFF_RANGES_MAX);
	if (h->profile_size > VTIER_HANDOFF_PROFILE_MAX)
		return vt_err_set(-EMSGSIZE, err, err_len, "HELLO with a %u-byte profile (max %u)",
			          h->profile_size, VTIER_HANDOFF_PROFILE_MAX);
	want = sizeof(*h) + (uint64_t)h->n_ranges * sizeof(*r) + h->profile_size;
	if (want != size)
		return vt_err_set(-EBADMSG, err, err_len, "HELLO of %zu bytes, its counts say %llu",
			          size, (unsigned long long)want);
	if (h->flags & ~VTIER_HELLO_F_KNOWN)
		return vt_err_set(-EBADMSG, err, err_len, "HELLO with unknown flags 0x%x", h->flags);
	if (h->flags & VTIER_HELLO_F_PREPARE) {
		if (!(h->flags & VTIER_HELLO_F_INCOMING) ||
		    h->flags & (VTIER_HELLO_F_RECONNECT | VTIER_HELLO_F_WP))
			return vt_err_set(-EBADMSG, err, err_len, "PREPARE with flags 0x%x (INCOMING, "
				          "neither RECONNECT nor WP)", h->flags);
		if (h->hva || h->uffd_features || h->uffd_ioctls)
			return vt_err_set(-EBADMSG, err, err_len, "PREPARE with a mapping or "
				          "userfaultfd features (it hands over the memfd alone)");
		if (h->flags & (VTIER_HELLO_F_PRECOPY | VTIER_HELLO_F_ZERO_MAP |
				VTIER_HELLO_F_SEND_MAP | VTIER_HELLO_F_NO_PROFILE))
			return vt_err_set(-EBADMSG, err, err_len, "PREPARE with flag %s (a HELLO's)",
				          h->flags & VTIER_HELLO_F_PRECOPY ? "PRECOPY" :
				          h->flags & VTIER_HELLO_F_ZERO_MAP ? "ZERO_MAP" :
				          h->flags & VTIER_HELLO_F_SEND_MAP ? "SEND_MAP" : "NO_PROFILE");
	} else if (!(h->flags & VTIER_HELLO_F_WP)) {
		return vt_err_set(-EBADMSG, err, err_len, "HELLO: userfaultfd not registered for write-protect");
	} else if (h->flags & VTIER_HELLO_F_EARLY) {
		return vt_err_set(-EBADMSG, err, err_len, "HELLO with flag EARLY (a PREPARE's)");
	} else if ((h->flags & VTIER_HELLO_F_PRECOPY) && !(h->flags & VTIER_HELLO_F_INCOMING)) {
		return vt_err_set(-EBADMSG, err, err_len, "HELLO with flag PRECOPY but not INCOMING");
	}
	if (!terminated(h->vm_name, sizeof(h->vm_name)) ||
	    !terminated(h->backend_id, sizeof(h->backend_id)) || !h->backend_id[0])
		return vt_err_set(-EBADMSG, err, err_len, "HELLO: VM name or backend id not a string");
	if (!vt_handoff_name_safe(h->backend_id))
		return vt_err_set(-EBADMSG, err, err_len, "HELLO: backend id is not [A-Za-z0-9._-]{1,63} "
			          "without a leading '.' or '-' or '..': rename the memory backend");
	if (!is_pow2(h->page_size) || h->page_size < 4096 || h->page_size > (1ull << 30))
		return vt_err_set(-EBADMSG, err, err_len, "HELLO: page size %llu",
			          (unsigned long long)h->page_size);
	if (!h->size_bytes || h->size_bytes % h->page_size)
		return vt_err_set(-EBADMSG, err, err_len, "HELLO: size %llu is not a multiple of page size %llu",
			          (unsigned long long)h->size_bytes, (unsigned long long)h->page_size);
	if (h->hva % h->page_size || h->fd_offset % h->page_size)
		return vt_err_set(-EBADMSG, err, err_len, "HELLO: mapping or file offset not page aligned");
	if (h->hva + h->size_bytes < h->hva || h->fd_offset + h->size_bytes < h->fd_offset)
		return vt_err_set(-ERANGE, err, err_len, "HELLO: mapping wraps around");
	if (!h->generation)
		return vt_err_set(-EBADMSG, err, err_len, "HELLO: generation 0");
	ret = check_ranges("HELLO", r, h->n_ranges, h->size_bytes, err, err_len);
	if (ret)
		return ret;
	out->fixed = h;
	out->ranges = r;
	out->profile = h->profile_size ? (const uint8_t *)(r + h->n_ranges) : NULL;
	return 0;
}

static int check_policy(const void *payload, size_t size, struct vt_handoff_policy *out,
			char *err, size_t err_len)
{
	const struct vtier_handoff_policy *p = payload;
	bool has_min = p->flags & VTIER_POLICY_F_DRAM_MIN;
	size_t want = sizeof(*p) + (has_min ? sizeof(struct vtier_handoff_policy_min) : 0);

	if (p->mode > VTIER_POLICY_MODE_AUTO)
		return vt_err_set(-EBADMSG, err, err_len, "POLICY: mode %u", p->mode);
	if (p->flags & ~VTIER_POLICY_F_KNOWN)
		return vt_err_set(-EBADMSG, err, err_len, "POLICY: unknown flags 0x%x (known 0x%x)",
			          p->flags, VTIER_POLICY_F_KNOWN);
	if (size != want)
		return vt_err_set(-EBADMSG, err, err_len, "POLICY of %zu bytes, its flags 0x%x say %zu "
			          "(the dram min follows only with flag 0x%x)", size, p->flags, want,
			          VTIER_POLICY_F_DRAM_MIN);
	if (p->flags & VTIER_POLICY_F_WEIGHT) {
		if (p->weight < 1 || p->weight > VTIER_POLICY_WEIGHT_MAX)
			return vt_err_set(-ERANGE, err, err_len, "POLICY: weight %u (must be 1..%u)",
				          p->weight, VTIER_POLICY_WEIGHT_MAX);
	} else if (p->weight) {
		return vt_err_set(-EBADMSG, err, err_len, "POLICY: weight %u without flag 0x%x "
			          "(must be 0)", p->weight, VTIER_POLICY_F_WEIGHT);
	}
	if (!terminated(p->tiers, sizeof(p->tiers)))
		return vt_err_set(-EBADMSG, err, err_len, "POLICY: tier list not a string");
	if (p->flags & VTIER_POLICY_F_TIERS) {
		if (!p->tiers[0])
			return vt_err_set(-EBADMSG, err, err_len, "POLICY: empty tier list");
		for (const char *c = p->tiers; *c; c++) {
			if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
			      *c == ',' || *c == '-' || *c == '_' || *c == ':'))
				return vt_err_set(-EBADMSG, err, err_len,
					          "POLICY: tier list has character 0x%02x", (unsigned char)*c);
		}
	}
	out->fixed = p;
	out->min = has_min ? (const void *)(p + 1) : NULL;
	return 0;
}

/* The fds a HELLO with @flags carries; @what names them and the flags that say so. */
static unsigned int hello_fds(uint32_t flags, const char **what)
{
	if (flags & VTIER_HELLO_F_PREPARE) {
		*what = " in a PREPARE: its memfd";
		return VTIER_HANDOFF_PREPARE_NFDS;
	}
	if (flags & VTIER_HELLO_F_SEND_MAP) {
		*what = " with flags ZERO_MAP | SEND_MAP: memfd, userfaultfd, zero map, send map";
		return VTIER_HANDOFF_SEND_MAP_NFDS;
	}
	if (flags & VTIER_HELLO_F_ZERO_MAP) {
		*what = " with flag ZERO_MAP: memfd, userfaultfd, zero map";
		return VTIER_HANDOFF_ZERO_MAP_NFDS;
	}
	*what = " without ZERO_MAP: memfd, userfaultfd";
	return VTIER_HANDOFF_HELLO_NFDS;
}

int vt_handoff_parse(const struct vtier_handoff_hdr *hdr, const void *payload, size_t size,
		     unsigned int nfds, struct vt_handoff_msg *msg, char *err, size_t err_len)
{
	unsigned int want_fds = 0;
	const char *fds_what = "";
	int ret;

	ret = vt_handoff_check_hdr(hdr, err, err_len);
	if (ret)
		return ret;
	if (size != hdr->size)
		return vt_err_set(-EBADMSG, err, err_len, "%s truncated: %zu of %u bytes",
			          vt_handoff_type_name(hdr->type), size, hdr->size);
	if (hdr->type == VTIER_HANDOFF_HELLO) {
		uint32_t flags = size >= sizeof(struct vtier_handoff_hello) ?
				 ((const struct vtier_handoff_hello *)payload)->flags : 0;

		if ((flags & VTIER_HELLO_F_SEND_MAP) && !(flags & VTIER_HELLO_F_ZERO_MAP))
			return vt_err_set(-EBADMSG, err, err_len, "HELLO with flags 0x%x: SEND_MAP "
				          "(0x%x) without ZERO_MAP (0x%x); a send map comes only with "
				          "a zero map", flags, VTIER_HELLO_F_SEND_MAP,
				          VTIER_HELLO_F_ZERO_MAP);
		want_fds = hello_fds(flags, &fds_what);
	}
	if (nfds != want_fds)
		return vt_err_set(-EBADMSG, err, err_len, "%s with %u fds (want %u%s)",
			          vt_handoff_type_name(hdr->type), nfds, want_fds, fds_what);

	memset(msg, 0, sizeof(*msg));
	msg->hdr = *hdr;
	switch (hdr->type) {
	case VTIER_HANDOFF_HELLO:
		return check_hello(payload, size, &msg->hello, err, err_len);
	case VTIER_HANDOFF_POLICY:
		return check_policy(payload, size, &msg->policy, err, err_len);
	case VTIER_HANDOFF_MIGRATION:
		msg->migration = payload;
		if (msg->migration->event < VTIER_MIGRATION_START ||
		    msg->migration->event > VTIER_MIGRATION_SEND_END || msg->migration->reserved)
			return vt_err_set(-EBADMSG, err, err_len, "MIGRATION: event %u, reserved %u "
				          "(events %u..%u, reserved 0)", msg->migration->event,
				          msg->migration->reserved, VTIER_MIGRATION_START,
				          VTIER_MIGRATION_SEND_END);
		return 0;
	case VTIER_HANDOFF_RANGES: {
		const struct vtier_handoff_ranges *rs = payload;

		if (rs->n_ranges > VTIER_HANDOFF_RANGES_MAX || rs->reserved ||
		    size != sizeof(*rs) + (uint64_t)rs->n_ranges * sizeof(struct vtier_handoff_range))
			return vt_err_set(-EBADMSG, err, err_len, "RANGES of %zu bytes with %u ranges",
				          size, rs->n_ranges);
		msg->ranges.fixed = rs;
		msg->ranges.ranges = (const void *)(rs + 1);
		return check_ranges("RANGES", msg->ranges.ranges, rs->n_ranges, 0, err, err_len);
	}
	}
	return vt_err_set(-EPROTO, err, err_len, "message type %u", hdr->type);
}

size_t vt_handoff_sent_init(struct vtier_handoff_sent *sent, int status, uint64_t pages,
			    const char *message)
{
	*sent = (struct vtier_handoff_sent) {
		.status = status > 0 ? -EINVAL : status,
		.pages = pages,
	};
	if (message)
		snprintf(sent->message, sizeof(sent->message), "%s", message);
	return sizeof(*sent);
}

/* A TCO block whose size was checked: its figures must add up. */
static int check_tco(const struct vtier_handoff_tco *tco, char *err, size_t err_len)
{
	const struct vtier_handoff_tco_tier *tiers = (const void *)(tco + 1);
	uint64_t bytes = 0;

	if (!terminated(tco->placement, sizeof(tco->placement)))
		return vt_err_set(-EBADMSG, err, err_len, "STATS: TCO placement not terminated");
	if (tco->saving_pct_milli > 100000 || tco->tco_alpha_milli > 1000 ||
	    tco->hour_samples > VTIER_TCO_HOUR_SAMPLES_MAX)
		return vt_err_set(-ERANGE, err, err_len, "STATS: TCO saving %d, alpha %u or "
				  "hour samples %u out of range", tco->saving_pct_milli,
				  tco->tco_alpha_milli, tco->hour_samples);
	if (tco->windows_since_phase_change > tco->windows || tco->phase_changes > tco->windows)
		return vt_err_set(-ERANGE, err, err_len, "STATS: TCO phase counts above %llu windows",
				  (unsigned long long)tco->windows);
	for (uint32_t i = 0; i < tco->n_tiers; i++) {
		const struct vtier_handoff_tco_tier *t = &tiers[i];

		if (!terminated(t->name, sizeof(t->name)) || !t->name[0])
			return vt_err_set(-EBADMSG, err, err_len, "STATS: TCO tier %u has no name", i);
		if (t->kind > VTIER_TCO_TIER_COMPRESSED || !t->ratio_milli)
			return vt_err_set(-EBADMSG, err, err_len, "STATS: TCO tier %u of kind %u, "
					  "ratio %u", i, t->kind, t->ratio_milli);
		if (tco->hour_samples && t->bytes_hour_avg > t->bytes_hour_max)
			return vt_err_set(-ERANGE, err, err_len, "STATS: TCO tier %u: hour average "
					  "above the maximum", i);
		if (t->bytes > UINT64_MAX - bytes)
			return vt_err_set(-ERANGE, err, err_len, "STATS: TCO tier bytes overflow");
		bytes += t->bytes;
	}
	if (bytes != tco->bytes)
		return vt_err_set(-ERANGE, err, err_len, "STATS: TCO tiers hold %llu bytes, the "
				  "total says %llu", (unsigned long long)bytes,
				  (unsigned long long)tco->bytes);
	return 0;
}

/* The migration block: a known state, counts that add up. */
static int check_migration(const struct vtier_handoff_migration_stats *m, char *err, size_t err_len)
{
	if (m->state > VTIER_MIGRATION_STATE_PLACING || m->reserved)
		return vt_err_set(-EBADMSG, err, err_len, "STATS: migration state %u, reserved %u",
				  m->state, m->reserved);
	if (m->completed > m->started || m->failed > m->started - m->completed)
		return vt_err_set(-ERANGE, err, err_len, "STATS: %llu migrations completed and "
				  "%llu failed of %llu started", (unsigned long long)m->completed,
				  (unsigned long long)m->failed, (unsigned long long)m->started);
	return 0;
}

int vt_handoff_check_stats(const void *payload, size_t size, struct vt_handoff_stats *out,
			   char *err, size_t err_len)
{
	const struct vtier_handoff_stats *s = payload;
	const char *entries = (const char *)(s + 1);
	const struct vtier_handoff_tco *tco = NULL;
	const struct vtier_handoff_migration_stats *mig = NULL;
	bool v2;
	size_t entry_size, want;
	int ret;

	if (size < sizeof(*s))
		return vt_err_set(-EBADMSG, err, err_len, "STATS of %zu bytes", size);
	if (s->flags & ~VTIER_STATS_F_KNOWN)
		return vt_err_set(-EBADMSG, err, err_len, "STATS with unknown flags 0x%x", s->flags);
	if (s->n_tiers > VTIER_HANDOFF_TIERS_MAX)
		return vt_err_set(-EMSGSIZE, err, err_len, "STATS with %u tiers (max %u)",
			    s->n_tiers, VTIER_HANDOFF_TIERS_MAX);
	v2 = s->flags & VTIER_STATS_F_TIER_V2;
	entry_size = v2 ? sizeof(struct vtier_handoff_tier_v2) : sizeof(struct vtier_handoff_tier);
	want = sizeof(*s) + s->n_tiers * entry_size;
	if (s->flags & VTIER_STATS_F_TCO) {
		/* the TCO block follows the tiers, its own tiers follow it */
		tco = (const void *)(entries + s->n_tiers * entry_size);
		if (size < want + sizeof(*tco))
			return vt_err_set(-EBADMSG, err, err_len, "STATS of %zu bytes has no room "
					  "for its TCO block", size);
		if (tco->n_tiers > VTIER_HANDOFF_TIERS_MAX)
			return vt_err_set(-EMSGSIZE, err, err_len, "STATS with %u TCO tiers (max %u)",
					  tco->n_tiers, VTIER_HANDOFF_TIERS_MAX);
		want += sizeof(*tco) + tco->n_tiers * sizeof(struct vtier_handoff_tco_tier);
	}
	if (s->flags & VTIER_STATS_F_MIGRATION) {
		/* last: after the tiers and the TCO block */
		if (size != want + sizeof(*mig))
			return vt_err_set(-EBADMSG, err, err_len, "STATS of %zu bytes: its counts "
					  "and a migration block say %zu", size, want + sizeof(*mig));
		mig = (const void *)((const char *)payload + want);
		want += sizeof(*mig);
	}
	if (size != want)
		return vt_err_set(-EBADMSG, err, err_len, "STATS of %zu bytes, its counts say %zu",
			    size, want);
	/* Both entry forms start with the name. */
	for (uint32_t i = 0; i < s->n_tiers; i++) {
		const char *name = entries + i * entry_size;

		if (!terminated(name, VTIER_HANDOFF_TIER_NAME_LEN) || !name[0])
			return vt_err_set(-EBADMSG, err, err_len, "STATS: tier %u has no name", i);
	}
	if (tco && (ret = check_tco(tco, err, err_len)))
		return ret;
	if (mig && (ret = check_migration(mig, err, err_len)))
		return ret;
	*out = (struct vt_handoff_stats) {
		.fixed = s,
		.tiers = v2 ? NULL : (const void *)entries,
		.tiers_v2 = v2 ? (const void *)entries : NULL,
		.tco = tco,
		.tco_tiers = tco ? (const void *)(tco + 1) : NULL,
		.migration = mig,
	};
	return 0;
}

int vt_handoff_check_profile(const void *profile, size_t size, uint64_t backend_size,
			     char *err, size_t err_len)
{
	const struct vtier_profile_v1 *p = profile;
	uint64_t chunk, want_chunks;

	if (size < sizeof(*p))
		return vt_err_set(-EBADMSG, err, err_len, "profile of %zu bytes has no header", size);
	if (p->magic != VTIER_PROFILE_MAGIC || p->version != VTIER_PROFILE_VERSION)
		return vt_err_set(-EBADMSG, err, err_len, "not a vtier profile v%u", VTIER_PROFILE_VERSION);
	if (p->chunk_shift < 12 || p->chunk_shift > 30 || p->reserved || p->reserved2)
		return vt_err_set(-EBADMSG, err, err_len, "profile chunk shift %u", p->chunk_shift);
	if (p->size_bytes != backend_size)
		return vt_err_set(-ERANGE, err, err_len, "profile of a %llu-byte backend, this one has %llu",
			          (unsigned long long)p->size_bytes, (unsigned long long)backend_size);
	chunk = 1ull << p->chunk_shift;
	want_chunks = (p->size_bytes + chunk - 1) / chunk;
	if (p->n_chunks != want_chunks || size != sizeof(*p) + (uint64_t)p->n_chunks)
		return vt_err_set(-EBADMSG, err, err_len, "profile with %u chunks in %zu bytes (want %llu)",
			          p->n_chunks, size, (unsigned long long)want_chunks);
	return 0;
}
