// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Guest hint ring, agent side: see guest_hints.h and docs/abi-guest.md.
 */
#include "guest_hints.h"

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errbuf.h"

#define NSEC_PER_SEC 1000000000ull
#define MAX_RAM_PIECES 64
#define READ_BATCH 128		/* records per read (4 KiB on the stack) */

/* A budget that refills at @rate per second up to @burst. */
struct bucket {
	uint64_t tokens;
	uint64_t rate;
	uint64_t burst;
	uint64_t rem;		/* fraction of a token, in token-nanoseconds */
	uint64_t last_ns;
};

struct vt_ghint_chan {
	int fd;			/* the region's file: the caller's, open until detach */
	uint32_t ring_records;
	uint32_t cons;		/* next record to read: the host's own copy */
	uint32_t epoch;
	uint32_t reclaim_seq;
	uint32_t host_flags;
	uint64_t heartbeat;
	uint64_t balloon_target;
	uint32_t max_per_poll;
	struct bucket records;
	struct bucket discard;
	struct vt_ghint_ram ram[MAX_RAM_PIECES];
	size_t n_ram;
	vt_ghint_contradicts_fn contradicts;
	void *contradicts_opaque;
	struct vt_ghint_stats stats;
	int failed;		/* 0, or the -errno of the access that failed: closed to I/O */
	char why[VT_GHINT_ERR_LEN];
};

static const char *const reject_names[VT_GHINT_R_COUNT] = {
	[VT_GHINT_R_SEQ] = "seq",
	[VT_GHINT_R_KIND] = "kind",
	[VT_GHINT_R_UNWANTED] = "unwanted",
	[VT_GHINT_R_FLAGS] = "flags",
	[VT_GHINT_R_ALIGN] = "align",
	[VT_GHINT_R_SIZE] = "size",
	[VT_GHINT_R_RANGE] = "range",
	[VT_GHINT_R_ARG] = "arg",
	[VT_GHINT_R_BALLOON] = "balloon",
	[VT_GHINT_R_RATE] = "rate",
	[VT_GHINT_R_CONTRADICTED] = "contradicted",
};

const char *vt_ghint_reject_name(enum vt_ghint_reject r)
{
	return (unsigned int)r < VT_GHINT_R_COUNT ? reject_names[r] : "?";
}

/*
 * The region is read and written with pread/pwrite on its file, never through
 * a mapping: the file's owner (QEMU) may shrink it at any moment, and an
 * access through a mapping past the new end is SIGBUS for the whole agent.
 * Here it is a short read: the channel fails, closed to any further access,
 * and says why (vt_ghint_error). Each read is a copy: every check and every
 * use sees the same bytes, whatever the guest writes meanwhile.
 */
static bool region_io(struct vt_ghint_chan *ch, bool write, uint64_t off, void *buf, size_t len)
{
	ssize_t n;
	int ret;

	if (ch->failed)
		return false;
	do
		n = write ? pwrite(ch->fd, buf, len, (off_t)off) : pread(ch->fd, buf, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)len)
		return true;
	/* a short read: past the end. A short write: no room (a full tmpfs) */
	ret = n >= 0 ? (write ? -ENOSPC : -ESTALE) : -errno;
	ch->failed = ret;
	vt_err_set(ret, ch->why, sizeof(ch->why), "hint region %s of %zu bytes at 0x%llx: %s",
		   write ? "write" : "read", len, (unsigned long long)off,
		   ret == -ESTALE ? "past the end of the file: its owner shrank it" : strerror(-ret));
	return false;
}

static bool region_read(struct vt_ghint_chan *ch, uint64_t off, void *buf, size_t len)
{
	return region_io(ch, false, off, buf, len);
}

/*
 * A write past the end of a shrunk file extends it (by at most the 72 bytes
 * of the host's page): harmless, and the next read fails the channel.
 */
static bool region_write(struct vt_ghint_chan *ch, uint64_t off, const void *buf, size_t len)
{
	return region_io(ch, true, off, (void *)buf, len);
}

/* One little-endian field of the host's page. */
#define HOST_OFF(field) (VTIER_GUEST_HOST_OFFSET + offsetof(struct vtier_guest_host, field))

static bool host_write32(struct vt_ghint_chan *ch, size_t off, uint32_t v)
{
	__le32 le = htole32(v);

	return region_write(ch, off, &le, sizeof(le));
}

static bool host_write64(struct vt_ghint_chan *ch, size_t off, uint64_t v)
{
	__le64 le = htole64(v);

	return region_write(ch, off, &le, sizeof(le));
}

/* The host's page as the channel has it (magic 0: attach stores it last). */
static void host_page(const struct vt_ghint_chan *ch, struct vtier_guest_host *h)
{
	*h = (struct vtier_guest_host){
		.abi_version = htole16(VTIER_GUEST_ABI_VERSION),
		.header_size = htole16(sizeof(struct vtier_guest_host)),
		.flags = htole32(ch->host_flags),
		.ring_offset = htole32(VTIER_GUEST_RING_OFFSET),
		.ring_records = htole32(ch->ring_records),
		.record_size = htole32(sizeof(struct vtier_guest_hint)),
		.cons = htole32(ch->cons),
		.epoch = htole32(ch->epoch),
		.heartbeat = htole64(ch->heartbeat),
		.balloon_target_pages = htole64(ch->balloon_target),
		.reclaim_seq = htole32(ch->reclaim_seq),
		.max_records_per_sec = htole32((uint32_t)ch->records.rate),
	};
}

static void bucket_init(struct bucket *b, uint64_t rate, uint64_t burst, uint64_t now_ns)
{
	*b = (struct bucket) { .tokens = burst, .rate = rate, .burst = burst, .last_ns = now_ns };
}

static void bucket_refill(struct bucket *b, uint64_t now_ns)
{
	unsigned __int128 add;

	if (now_ns <= b->last_ns)
		return;		/* a clock going back refills nothing */
	add = (unsigned __int128)(now_ns - b->last_ns) * b->rate + b->rem;
	b->last_ns = now_ns;
	if (add / NSEC_PER_SEC >= b->burst - b->tokens) {
		b->tokens = b->burst;
		b->rem = 0;
		return;
	}
	b->tokens += (uint64_t)(add / NSEC_PER_SEC);
	b->rem = (uint64_t)(add % NSEC_PER_SEC);
}

static int check_ram(const struct vt_ghint_ram *ram, size_t n_ram, char *err, size_t err_len)
{
	if (!ram || n_ram == 0 || n_ram > MAX_RAM_PIECES)
		return vt_err_set(-EINVAL, err, err_len, "guest RAM: %zu pieces (1..%d)",
				  n_ram, MAX_RAM_PIECES);
	for (size_t i = 0; i < n_ram; i++) {
		const struct vt_ghint_ram *r = &ram[i];

		if (r->size == 0 || (r->gpa | r->size) % VTIER_GUEST_PAGE_SIZE ||
		    r->gpa + r->size < r->gpa)
			return vt_err_set(-EINVAL, err, err_len,
					  "guest RAM piece %zu [0x%llx +0x%llx) is empty, unaligned or wraps",
					  i, (unsigned long long)r->gpa,
					  (unsigned long long)r->size);
		for (size_t j = 0; j < i; j++)
			if (r->gpa < ram[j].gpa + ram[j].size && ram[j].gpa < r->gpa + r->size)
				return vt_err_set(-EINVAL, err, err_len,
						  "guest RAM pieces %zu and %zu overlap", j, i);
	}
	return 0;
}

int vt_ghint_attach(struct vt_ghint_chan **out, int fd, size_t size,
		    const struct vt_ghint_ram *ram, size_t n_ram,
		    const struct vt_ghint_limits *lim, uint32_t host_flags,
		    uint64_t now_ns, char *err, size_t err_len)
{
	const struct vt_ghint_limits def = {
		.max_records_per_poll = 256, .records_per_sec = 4096, .burst_records = 1024,
		.discard_bytes_per_sec = 1ull << 30, .discard_burst_bytes = 1ull << 30,
	};
	struct vtier_guest_host host;
	struct vt_ghint_chan *ch;
	__le32 old_epoch, prod;
	uint64_t records;
	int ret;

	*out = NULL;
	if (fd < 0)
		return vt_err_set(-EINVAL, err, err_len, "hint region: no file");
	if (size < VTIER_GUEST_REGION_MIN || size > VTIER_GUEST_REGION_MAX || (size & (size - 1)))
		return vt_err_set(-EINVAL, err, err_len,
				  "hint region of %zu bytes: must be a power of 2, %u..%u", size,
				  VTIER_GUEST_REGION_MIN, VTIER_GUEST_REGION_MAX);
	if (host_flags & ~(uint32_t)(VTIER_GUEST_HOST_FREE | VTIER_GUEST_HOST_COLD |
				     VTIER_GUEST_HOST_HOT | VTIER_GUEST_HOST_RECLAIM))
		return vt_err_set(-EINVAL, err, err_len, "unknown host flags 0x%x", host_flags);
	ret = check_ram(ram, n_ram, err, err_len);
	if (ret)
		return ret;

	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return vt_err_set(-ENOMEM, err, err_len, "out of memory");
	ch->fd = fd;
	records = (size - VTIER_GUEST_RING_OFFSET) / sizeof(struct vtier_guest_hint);
	ch->ring_records = 1;
	while ((uint64_t)ch->ring_records * 2 <= records && ch->ring_records < VTIER_GUEST_RING_MAX)
		ch->ring_records *= 2;
	memcpy(ch->ram, ram, n_ram * sizeof(*ram));
	ch->n_ram = n_ram;
	if (!lim)
		lim = &def;
	ch->max_per_poll = lim->max_records_per_poll ?: def.max_records_per_poll;
	bucket_init(&ch->records, lim->records_per_sec ?: def.records_per_sec,
		    lim->burst_records ?: def.burst_records, now_ns);
	bucket_init(&ch->discard, lim->discard_bytes_per_sec ?: def.discard_bytes_per_sec,
		    lim->discard_burst_bytes ?: def.discard_burst_bytes, now_ns);
	ch->host_flags = host_flags | VTIER_GUEST_HOST_ACTIVE;

	/*
	 * The old epoch is only a counter to step past (the guest may have
	 * written it). Whatever sits in the ring now was written for another
	 * agent: acknowledge it unread, which is always safe for the guest.
	 * The whole region is read once: a file shorter than @size fails here.
	 */
	{
		char last;

		region_read(ch, size - 1, &last, 1);
	}
	region_read(ch, HOST_OFF(epoch), &old_epoch, sizeof(old_epoch));
	region_read(ch, VTIER_GUEST_GUEST_OFFSET + offsetof(struct vtier_guest_guest, prod),
		    &prod, sizeof(prod));
	ch->epoch = le32toh(old_epoch) + 1;
	ch->cons = le32toh(prod);

	/* the magic last: a guest that sees it sees the rest */
	host_page(ch, &host);
	host.heartbeat = 0;
	host_write32(ch, HOST_OFF(magic), 0);
	region_write(ch, VTIER_GUEST_HOST_OFFSET, &host, sizeof(host));
	host_write32(ch, HOST_OFF(magic), VTIER_GUEST_HOST_MAGIC);
	if (ch->failed) {
		ret = vt_err_set(ch->failed, err, err_len, "%s", ch->why);
		free(ch);
		return ret;
	}
	*out = ch;
	return 0;
}

void vt_ghint_detach(struct vt_ghint_chan *ch)
{
	__le32 prod;

	if (!ch)
		return;
	host_write32(ch, HOST_OFF(flags), 0);
	if (region_read(ch, VTIER_GUEST_GUEST_OFFSET + offsetof(struct vtier_guest_guest, prod),
			&prod, sizeof(prod)))
		host_write32(ch, HOST_OFF(cons), le32toh(prod));
	free(ch);
}

void vt_ghint_set_contradicts(struct vt_ghint_chan *ch, vt_ghint_contradicts_fn fn, void *opaque)
{
	ch->contradicts = fn;
	ch->contradicts_opaque = opaque;
}

void vt_ghint_set_balloon_target(struct vt_ghint_chan *ch, uint64_t pages)
{
	ch->reclaim_seq++;
	ch->balloon_target = pages;
	/* the target before its sequence number: a guest that sees the new seq sees it */
	host_write64(ch, HOST_OFF(balloon_target_pages), pages);
	host_write32(ch, HOST_OFF(reclaim_seq), ch->reclaim_seq);
	if (!(ch->host_flags & VTIER_GUEST_HOST_RECLAIM)) {
		ch->host_flags |= VTIER_GUEST_HOST_RECLAIM;
		host_write32(ch, HOST_OFF(flags), ch->host_flags);
	}
}

const struct vt_ghint_stats *vt_ghint_stats(const struct vt_ghint_chan *ch)
{
	return &ch->stats;
}

int vt_ghint_error(const struct vt_ghint_chan *ch, char *err, size_t err_len)
{
	return ch->failed ? vt_err_set(ch->failed, err, err_len, "%s", ch->why) : 0;
}

static bool inside_ram(const struct vt_ghint_chan *ch, uint64_t gpa, uint64_t size)
{
	for (size_t i = 0; i < ch->n_ram; i++)
		if (gpa >= ch->ram[i].gpa && size <= ch->ram[i].size &&
		    gpa - ch->ram[i].gpa <= ch->ram[i].size - size)
			return true;
	return false;
}

static uint32_t kind_host_flag(uint16_t kind)
{
	switch (kind) {
	case VTIER_GUEST_FREE:
		return VTIER_GUEST_HOST_FREE;
	case VTIER_GUEST_COLD:
		return VTIER_GUEST_HOST_COLD;
	case VTIER_GUEST_HOT:
		return VTIER_GUEST_HOST_HOT;
	default:
		return VTIER_GUEST_HOST_RECLAIM;
	}
}

/* Check one copied record read at index @idx; -1 when good, else a reason. */
static int check_hint(struct vt_ghint_chan *ch, const struct vtier_guest_hint *rec,
		      uint32_t idx, struct vt_ghint *h)
{
	h->kind = le16toh(rec->kind);
	h->flags = le16toh(rec->flags);
	h->gpa = le64toh(rec->gpa);
	h->size_bytes = le64toh(rec->size_bytes);
	h->arg = le64toh(rec->arg);

	if (le32toh(rec->seq) != idx)
		return VT_GHINT_R_SEQ;
	if (h->kind == 0 || h->kind > VTIER_GUEST_KIND_MAX)
		return VT_GHINT_R_KIND;
	if (!(ch->host_flags & kind_host_flag(h->kind)))
		return VT_GHINT_R_UNWANTED;
	if (h->flags & ~(h->kind == VTIER_GUEST_COLD ? VTIER_GUEST_HINT_CLEAN : 0))
		return VT_GHINT_R_FLAGS;
	if ((h->gpa | h->size_bytes) % VTIER_GUEST_PAGE_SIZE)
		return VT_GHINT_R_ALIGN;
	if (h->size_bytes == 0 || h->size_bytes > VTIER_GUEST_RANGE_MAX)
		return VT_GHINT_R_SIZE;
	if (!inside_ram(ch, h->gpa, h->size_bytes))
		return VT_GHINT_R_RANGE;
	switch (h->kind) {
	case VTIER_GUEST_FREE:
		if (h->arg != 0)
			return VT_GHINT_R_ARG;
		break;
	case VTIER_GUEST_INFLATE:
	case VTIER_GUEST_DEFLATE:
		/* answers a request the host made */
		if (h->arg == 0 || h->arg > ch->reclaim_seq)
			return VT_GHINT_R_ARG;
		if (h->kind == VTIER_GUEST_DEFLATE && h->size_bytes > ch->stats.balloon_bytes)
			return VT_GHINT_R_BALLOON;
		break;
	default:
		break;
	}
	if (ch->contradicts && ch->contradicts(ch->contradicts_opaque, h))
		return VT_GHINT_R_CONTRADICTED;
	if (h->kind == VTIER_GUEST_FREE || h->kind == VTIER_GUEST_INFLATE) {
		if (ch->discard.tokens < h->size_bytes)
			return VT_GHINT_R_RATE;
		ch->discard.tokens -= h->size_bytes;
	}
	return -1;
}

/* Records [@idx, +@n) of the ring (@n <= ring_records) into @recs, in one or two reads. */
static bool read_records(struct vt_ghint_chan *ch, uint32_t idx, uint32_t n,
			 struct vtier_guest_hint *recs)
{
	uint32_t slot = idx & (ch->ring_records - 1);
	uint32_t first = n < ch->ring_records - slot ? n : ch->ring_records - slot;
	const size_t rec = sizeof(struct vtier_guest_hint);

	if (!region_read(ch, VTIER_GUEST_RING_OFFSET + (uint64_t)slot * rec, recs, first * rec))
		return false;
	return first == n || region_read(ch, VTIER_GUEST_RING_OFFSET, recs + first,
					 (n - first) * rec);
}

size_t vt_ghint_poll(struct vt_ghint_chan *ch, struct vt_ghint *out, size_t max,
		     uint64_t now_ns)
{
	struct vtier_guest_hint recs[READ_BATCH];
	struct vtier_guest_guest g;
	uint32_t prod, avail, n;
	size_t k = 0;

	if (ch->failed)
		return 0;
	bucket_refill(&ch->records, now_ns);
	bucket_refill(&ch->discard, now_ns);

	if (!region_read(ch, VTIER_GUEST_GUEST_OFFSET, &g, sizeof(g)))
		return 0;
	prod = le32toh(g.prod);
	if (le32toh(g.magic) != VTIER_GUEST_GUEST_MAGIC ||
	    le16toh(g.abi_version) != VTIER_GUEST_ABI_VERSION ||
	    le16toh(g.header_size) < sizeof(g)) {
		ch->stats.bad_header++;
		return 0;
	}
	avail = prod - ch->cons;
	if (avail > ch->ring_records) {
		/*
		 * The guest claims more than the ring holds: skip to its index
		 * (acknowledging unread records is safe) and read on next time.
		 */
		ch->stats.bad_index++;
		ch->stats.skipped += avail;
		ch->cons = prod;
		return 0;
	}
	n = avail;
	if (n > ch->max_per_poll)
		n = ch->max_per_poll;
	if (n > max)
		n = (uint32_t)max;
	if (n > ch->records.tokens)
		n = (uint32_t)ch->records.tokens;
	if (n < avail)
		ch->stats.deferred++;
	ch->records.tokens -= n;

	for (uint32_t done = 0; done < n;) {
		uint32_t batch = n - done < READ_BATCH ? n - done : READ_BATCH;

		if (!read_records(ch, ch->cons + done, batch, recs))
			return k;	/* the region is gone: nothing more is read */
		for (uint32_t i = 0; i < batch; i++) {
			int reason = check_hint(ch, &recs[i], ch->cons + done + i, &out[k]);

			if (reason >= 0) {
				ch->stats.rejected[reason]++;
				continue;
			}
			ch->stats.accepted[out[k].kind]++;
			ch->stats.accepted_bytes[out[k].kind] += out[k].size_bytes;
			if (out[k].kind == VTIER_GUEST_INFLATE)
				ch->stats.balloon_bytes += out[k].size_bytes;
			else if (out[k].kind == VTIER_GUEST_DEFLATE)
				ch->stats.balloon_bytes -= out[k].size_bytes;
			k++;
		}
		ch->stats.records += batch;
		done += batch;
	}
	ch->cons += n;
	return k;
}

void vt_ghint_commit(struct vt_ghint_chan *ch)
{
	struct vtier_guest_host host;
	const size_t from = offsetof(struct vtier_guest_host, flags);
	const size_t to = offsetof(struct vtier_guest_host, balloon_target_pages);

	/* the guest may have scribbled over them: written again, in one write */
	ch->heartbeat++;
	host_page(ch, &host);
	region_write(ch, VTIER_GUEST_HOST_OFFSET + from, (const char *)&host + from, to - from);
}
