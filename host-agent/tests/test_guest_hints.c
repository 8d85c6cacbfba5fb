// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the guest hint ring reader (host-agent/iface/guest_hints.c)
 * on a region in ordinary memory, with this file playing the guest: honest
 * records of each kind, then one record per refusal reason, a lying producer
 * index, floods over the caps, a guest that rewrites a record while the
 * agent is checking it, and a second thread writing random bytes everywhere.
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "guest_hints.h"

#define REGION (64u << 10)		/* 1024 records */
#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define SEC 1000000000ull

/* A guest with 1 GiB below the PCI hole and 1 GiB at 4 GiB. */
static const struct vt_ghint_ram ram[] = {
	{ .gpa = 0, .size = GIB },
	{ .gpa = 4 * GIB, .size = GIB },
};

#define ALL_KINDS (VTIER_GUEST_HOST_FREE | VTIER_GUEST_HOST_COLD | VTIER_GUEST_HOST_HOT | \
		   VTIER_GUEST_HOST_RECLAIM)

struct fix {
	int fd;
	uint8_t *mem;
	struct vtier_guest_host *host;
	struct vtier_guest_guest *guest;
	struct vtier_guest_hint *ring;
	struct vt_ghint_chan *ch;
	uint32_t prod;
	struct vt_ghint out[2048];
};

static void guest_hello(struct fix *f)
{
	f->guest->abi_version = htole16(VTIER_GUEST_ABI_VERSION);
	f->guest->header_size = htole16(sizeof(*f->guest));
	f->guest->magic = htole32(VTIER_GUEST_GUEST_MAGIC);
}

static void push_raw(struct fix *f, uint32_t seq, uint16_t kind, uint16_t flags, uint64_t gpa,
		     uint64_t size, uint64_t arg)
{
	struct vtier_guest_hint *r = &f->ring[f->prod & 1023];

	r->seq = htole32(seq);
	r->kind = htole16(kind);
	r->flags = htole16(flags);
	r->gpa = htole64(gpa);
	r->size_bytes = htole64(size);
	r->arg = htole64(arg);
	f->prod++;
	__atomic_store_n(&f->guest->prod, htole32(f->prod), __ATOMIC_RELEASE);
}

static void push(struct fix *f, uint16_t kind, uint16_t flags, uint64_t gpa, uint64_t size,
		 uint64_t arg)
{
	push_raw(f, f->prod, kind, flags, gpa, size, arg);
}

static void fix_attach(struct fix *f, const struct vt_ghint_limits *lim, uint32_t flags)
{
	char err[VT_GHINT_ERR_LEN] = "";

	assert_int_equal(vt_ghint_attach(&f->ch, f->fd, REGION, ram, 2, lim, flags, 0,
					 err, sizeof(err)), 0);
	assert_string_equal(err, "");
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	/* the region's file, as QEMU's; this test maps it to play the guest */
	f->fd = memfd_create("vtier-hints-test", MFD_CLOEXEC);
	assert_true(f->fd >= 0);
	assert_int_equal(ftruncate(f->fd, REGION), 0);
	f->mem = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	assert_true(f->mem != MAP_FAILED);
	f->host = (void *)(f->mem + VTIER_GUEST_HOST_OFFSET);
	f->guest = (void *)(f->mem + VTIER_GUEST_GUEST_OFFSET);
	f->ring = (void *)(f->mem + VTIER_GUEST_RING_OFFSET);
	guest_hello(f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	vt_ghint_detach(f->ch);
	munmap(f->mem, REGION);
	close(f->fd);
	free(f);
	return 0;
}

static uint64_t total_rejected(const struct vt_ghint_stats *s)
{
	uint64_t n = 0;

	for (int i = 0; i < VT_GHINT_R_COUNT; i++)
		n += s->rejected[i];
	return n;
}

static uint64_t total_accepted(const struct vt_ghint_stats *s)
{
	uint64_t n = 0;

	for (int i = 0; i <= VTIER_GUEST_KIND_MAX; i++)
		n += s->accepted[i];
	return n;
}

static void test_attach_refuses(void **state)
{
	struct fix *f = *state;
	struct vt_ghint_chan *ch = (void *)1;
	char err[VT_GHINT_ERR_LEN];
	static const struct vt_ghint_ram overlap[] = { { 0, GIB }, { GIB / 2, GIB } };
	static const struct vt_ghint_ram unaligned[] = { { 0x800, GIB } };
	static const struct vt_ghint_ram wraps[] = { { UINT64_MAX - 4095, 8192 } };
	static const struct vt_ghint_ram empty[] = { { 0, 0 } };
	static const struct {
		size_t size;
		int fd;		/* 0: the fixture's */
		const struct vt_ghint_ram *ram;
		size_t n_ram;
		uint32_t flags;
		const char *needle;
	} cases[] = {
		{ REGION - 4096, 0, ram, 2, 0, "power of 2" },
		{ 8192, 0, ram, 2, 0, "power of 2" },
		{ 128u << 20, 0, ram, 2, 0, "power of 2" },
		{ REGION, -1, ram, 2, 0, "no file" },
		{ REGION, 0, ram, 0, 0, "pieces" },
		{ REGION, 0, ram, 65, 0, "pieces" },
		{ REGION, 0, overlap, 2, 0, "overlap" },
		{ REGION, 0, unaligned, 1, 0, "unaligned" },
		{ REGION, 0, wraps, 1, 0, "wraps" },
		{ REGION, 0, empty, 1, 0, "empty" },
		{ REGION, 0, ram, 2, 1u << 20, "host flags" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		assert_int_equal(vt_ghint_attach(&ch, cases[i].fd ?: f->fd, cases[i].size,
						 cases[i].ram, cases[i].n_ram, NULL,
						 cases[i].flags, 0, err, sizeof(err)), -EINVAL);
		assert_null(ch);
		assert_non_null(strstr(err, cases[i].needle));
	}
}

static void test_attach_writes_host_page(void **state)
{
	struct fix *f = *state;

	/* a previous agent's epoch and records it never read */
	f->host->epoch = htole32(41);
	f->prod = 12345;
	f->guest->prod = htole32(f->prod);
	fix_attach(f, NULL, VTIER_GUEST_HOST_FREE);
	assert_int_equal(le32toh(f->host->magic), VTIER_GUEST_HOST_MAGIC);
	assert_int_equal(le16toh(f->host->abi_version), VTIER_GUEST_ABI_VERSION);
	assert_int_equal(le16toh(f->host->header_size), sizeof(struct vtier_guest_host));
	assert_int_equal(le32toh(f->host->ring_offset), VTIER_GUEST_RING_OFFSET);
	/* (64 KiB - 8 KiB) / 32 = 1792 slots -> 1024 */
	assert_int_equal(le32toh(f->host->ring_records), 1024);
	assert_int_equal(le32toh(f->host->record_size), 32);
	assert_int_equal(le32toh(f->host->cons), 12345);
	assert_int_equal(le32toh(f->host->epoch), 42);
	assert_int_equal(le32toh(f->host->flags), VTIER_GUEST_HOST_ACTIVE | VTIER_GUEST_HOST_FREE);
	/* nothing pending: the old records were acknowledged unread */
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 16, 0), 0);
	assert_int_equal(vt_ghint_stats(f->ch)->records, 0);
}

static void test_accepts_each_kind(void **state)
{
	struct fix *f = *state;
	const struct vt_ghint_stats *s;

	fix_attach(f, NULL, ALL_KINDS);
	vt_ghint_set_balloon_target(f->ch, 256);
	assert_int_equal(le64toh(f->host->balloon_target_pages), 256);
	assert_int_equal(le32toh(f->host->reclaim_seq), 1);

	push(f, VTIER_GUEST_FREE, 0, 2 * MIB, 2 * MIB, 0);
	push(f, VTIER_GUEST_COLD, VTIER_GUEST_HINT_CLEAN, 4 * GIB, 4096, 30000);
	push(f, VTIER_GUEST_HOT, 0, 5 * GIB - 8192, 8192, 10);
	push(f, VTIER_GUEST_INFLATE, 0, 64 * MIB, MIB, 1);
	push(f, VTIER_GUEST_DEFLATE, 0, 64 * MIB, MIB, 1);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 16, 1), 5);
	assert_int_equal(f->out[0].kind, VTIER_GUEST_FREE);
	assert_int_equal(f->out[0].gpa, 2 * MIB);
	assert_int_equal(f->out[0].size_bytes, 2 * MIB);
	assert_int_equal(f->out[1].kind, VTIER_GUEST_COLD);
	assert_int_equal(f->out[1].flags, VTIER_GUEST_HINT_CLEAN);
	assert_int_equal(f->out[1].arg, 30000);
	assert_int_equal(f->out[2].gpa, 5 * GIB - 8192);
	assert_int_equal(f->out[3].kind, VTIER_GUEST_INFLATE);
	assert_int_equal(f->out[4].kind, VTIER_GUEST_DEFLATE);

	/* acknowledged only at commit */
	assert_int_equal(le32toh(f->host->cons), 0);
	vt_ghint_commit(f->ch);
	assert_int_equal(le32toh(f->host->cons), 5);
	assert_int_equal(le64toh(f->host->heartbeat), 1);

	s = vt_ghint_stats(f->ch);
	assert_int_equal(s->records, 5);
	assert_int_equal(total_rejected(s), 0);
	for (int k = 1; k <= VTIER_GUEST_KIND_MAX; k++)
		assert_int_equal(s->accepted[k], 1);
	assert_int_equal(s->accepted_bytes[VTIER_GUEST_FREE], 2 * MIB);
	assert_int_equal(s->balloon_bytes, 0);
}

struct reject_case {
	const char *name;
	enum vt_ghint_reject reason;
	uint32_t seq_delta;
	uint16_t kind, flags;
	uint64_t gpa, size, arg;
};

static bool say_contradicted(void *opaque, const struct vt_ghint *h)
{
	(void)opaque;
	return h->kind == VTIER_GUEST_COLD && h->gpa == 8 * MIB;
}

static void test_rejects_by_reason(void **state)
{
	struct fix *f = *state;
	static const struct reject_case cases[] = {
		{ "stale seq", VT_GHINT_R_SEQ, 1024, VTIER_GUEST_FREE, 0, 0, 4096, 0 },
		{ "kind 0", VT_GHINT_R_KIND, 0, 0, 0, 0, 4096, 0 },
		{ "kind 99", VT_GHINT_R_KIND, 0, 99, 0, 0, 4096, 0 },
		{ "hot not asked", VT_GHINT_R_UNWANTED, 0, VTIER_GUEST_HOT, 0, 0, 4096, 0 },
		{ "free with CLEAN", VT_GHINT_R_FLAGS, 0, VTIER_GUEST_FREE, 1, 0, 4096, 0 },
		{ "cold flag 2", VT_GHINT_R_FLAGS, 0, VTIER_GUEST_COLD, 2, 0, 4096, 0 },
		{ "gpa unaligned", VT_GHINT_R_ALIGN, 0, VTIER_GUEST_FREE, 0, 512, 4096, 0 },
		{ "size unaligned", VT_GHINT_R_ALIGN, 0, VTIER_GUEST_FREE, 0, 0, 4097, 0 },
		{ "size 0", VT_GHINT_R_SIZE, 0, VTIER_GUEST_FREE, 0, 0, 0, 0 },
		{ "size 2 GiB", VT_GHINT_R_SIZE, 0, VTIER_GUEST_COLD, 0, 0, 2 * GIB, 0 },
		{ "in the hole", VT_GHINT_R_RANGE, 0, VTIER_GUEST_FREE, 0, 2 * GIB, 4096, 0 },
		{ "past the end", VT_GHINT_R_RANGE, 0, VTIER_GUEST_FREE, 0, GIB - 4096, 8192, 0 },
		{ "wraps", VT_GHINT_R_RANGE, 0, VTIER_GUEST_FREE, 0, UINT64_MAX - 4095, 8192, 0 },
		{ "after RAM", VT_GHINT_R_RANGE, 0, VTIER_GUEST_COLD, 0, 5 * GIB, 4096, 0 },
		{ "free arg", VT_GHINT_R_ARG, 0, VTIER_GUEST_FREE, 0, 0, 4096, 7 },
		{ "inflate arg 0", VT_GHINT_R_ARG, 0, VTIER_GUEST_INFLATE, 0, 0, 4096, 0 },
		{ "inflate future seq", VT_GHINT_R_ARG, 0, VTIER_GUEST_INFLATE, 0, 0, 4096, 2 },
		{ "deflate not inflated", VT_GHINT_R_BALLOON, 0, VTIER_GUEST_DEFLATE, 0, 0, 4096, 1 },
		{ "contradicted", VT_GHINT_R_CONTRADICTED, 0, VTIER_GUEST_COLD, 0, 8 * MIB, 4096, 0 },
		{ "over discard budget", VT_GHINT_R_RATE, 0, VTIER_GUEST_FREE, 0, 0, GIB, 0 },
	};
	const struct vt_ghint_limits lim = { .discard_burst_bytes = 512 * MIB };

	fix_attach(f, &lim, VTIER_GUEST_HOST_FREE | VTIER_GUEST_HOST_COLD);
	vt_ghint_set_contradicts(f->ch, say_contradicted, NULL);
	vt_ghint_set_balloon_target(f->ch, 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct reject_case *c = &cases[i];
		struct vt_ghint_stats before = *vt_ghint_stats(f->ch);
		const struct vt_ghint_stats *s;

		push_raw(f, f->prod + c->seq_delta, c->kind, c->flags, c->gpa, c->size, c->arg);
		/* one good record after it: a refusal must not stop the reader */
		push(f, VTIER_GUEST_COLD, 0, 4096, 4096, 0);
		if (vt_ghint_poll(f->ch, f->out, 16, 0) != 1 || f->out[0].gpa != 4096)
			fail_msg("case '%s': the good record after it was not returned", c->name);
		s = vt_ghint_stats(f->ch);
		for (int r = 0; r < VT_GHINT_R_COUNT; r++)
			if (s->rejected[r] != before.rejected[r] + (r == (int)c->reason))
				fail_msg("case '%s': reason %s counted %llu -> %llu", c->name,
					 vt_ghint_reject_name(r),
					 (unsigned long long)before.rejected[r],
					 (unsigned long long)s->rejected[r]);
	}
	assert_string_equal(vt_ghint_reject_name(VT_GHINT_R_CONTRADICTED), "contradicted");
	assert_string_equal(vt_ghint_reject_name(VT_GHINT_R_COUNT), "?");
}

static void test_guest_header_checked(void **state)
{
	struct fix *f = *state;
	const struct vt_ghint_stats *s;

	fix_attach(f, NULL, ALL_KINDS);
	s = vt_ghint_stats(f->ch);
	push(f, VTIER_GUEST_FREE, 0, 0, 4096, 0);
	f->guest->magic = 0;
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 16, 0), 0);
	f->guest->magic = htole32(VTIER_GUEST_GUEST_MAGIC);
	f->guest->abi_version = htole16(2);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 16, 0), 0);
	f->guest->abi_version = htole16(1);
	f->guest->header_size = htole16(8);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 16, 0), 0);
	assert_int_equal(s->bad_header, 3);
	assert_int_equal(s->records, 0);
	/* the record waited in the ring and is read once the header is right */
	guest_hello(f);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 16, 0), 1);
}

static void test_lying_producer_index(void **state)
{
	struct fix *f = *state;
	const struct vt_ghint_stats *s;

	fix_attach(f, NULL, ALL_KINDS);
	s = vt_ghint_stats(f->ch);
	/* claims 1025 records in a ring of 1024 */
	f->prod = 1025;
	f->guest->prod = htole32(f->prod);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 2048, 0), 0);
	assert_int_equal(s->bad_index, 1);
	assert_int_equal(s->skipped, 1025);
	assert_int_equal(s->records, 0);
	vt_ghint_commit(f->ch);
	assert_int_equal(le32toh(f->host->cons), 1025);
	/* a producer index behind the consumer is the same lie */
	f->guest->prod = htole32(1000);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 2048, 0), 0);
	assert_int_equal(s->bad_index, 2);
	/* then honest again */
	f->prod = 1000;
	push(f, VTIER_GUEST_COLD, 0, 0, 4096, 0);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 2048, 0), 1);
}

static void test_index_wraps(void **state)
{
	struct fix *f = *state;

	f->prod = UINT32_MAX - 15;
	f->guest->prod = htole32(f->prod);
	fix_attach(f, NULL, ALL_KINDS);
	for (int i = 0; i < 32; i++)
		push(f, VTIER_GUEST_COLD, 0, (uint64_t)i * 4096, 4096, 0);
	assert_int_equal(f->prod, 16);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 64, 0), 32);
	assert_int_equal(f->out[31].gpa, 31 * 4096);
	vt_ghint_commit(f->ch);
	assert_int_equal(le32toh(f->host->cons), 16);
}

static void test_flood_capped(void **state)
{
	struct fix *f = *state;
	const struct vt_ghint_limits lim = {
		.max_records_per_poll = 100, .records_per_sec = 1000, .burst_records = 300,
		.discard_bytes_per_sec = 64 * MIB, .discard_burst_bytes = 64 * MIB,
	};
	const struct vt_ghint_stats *s;
	uint64_t now = 0, got = 0;

	fix_attach(f, &lim, ALL_KINDS);
	s = vt_ghint_stats(f->ch);
	for (int i = 0; i < 1000; i++)
		push(f, VTIER_GUEST_COLD, 0, 4096, 4096, 0);
	/* per poll, and the caller's array, cap each read */
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 2048, now), 100);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 7, now), 7);
	assert_int_equal(s->deferred, 2);
	/* then the per-second budget: 300 at once, 1000/s after */
	for (int i = 0; i < 10; i++)
		got += vt_ghint_poll(f->ch, f->out, 2048, now);
	assert_int_equal(got, 300 - 107);
	now += SEC / 10;
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 2048, now), 100);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 2048, now), 0);
	/* a long pause refills the burst only */
	now += 3600 * SEC;
	got = 0;
	for (int i = 0; i < 10; i++)
		got += vt_ghint_poll(f->ch, f->out, 2048, now);
	assert_int_equal(got, 300);
	/* a clock going back refills nothing */
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 2048, now - SEC), 0);
	assert_int_equal(s->records, 700);
	vt_ghint_commit(f->ch);
	assert_int_equal(le32toh(f->host->cons), 700);

	/* what the flood left in the ring */
	now += 10 * SEC;
	for (int i = 0; i < 3; i++)
		assert_int_equal(vt_ghint_poll(f->ch, f->out, 2048, now), 100);
	assert_int_equal(s->records, 1000);

	/* discard bytes: 64 MiB at once; the rest is refused, not queued */
	now += 10 * SEC;
	for (int i = 0; i < 100; i++)
		push(f, VTIER_GUEST_FREE, 0, 0, MIB, 0);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 2048, now), 64);
	assert_int_equal(s->rejected[VT_GHINT_R_RATE], 36);
	/* refilled at 64 MiB/s */
	now += SEC / 2;
	for (int i = 0; i < 100; i++)
		push(f, VTIER_GUEST_FREE, 0, 0, MIB, 0);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 2048, now), 32);
	assert_int_equal(s->accepted_bytes[VTIER_GUEST_FREE], 96 * MIB);
}

/* The guest rewrites the record while the agent is checking it. */
struct rewrite {
	struct fix *f;
	int calls;
};

static bool rewrite_behind(void *opaque, const struct vt_ghint *h)
{
	struct rewrite *rw = opaque;
	struct vtier_guest_hint *r = &rw->f->ring[rw->calls++];

	(void)h;
	r->kind = htole16(77);
	r->gpa = htole64(3 * GIB + 512);
	r->size_bytes = htole64(UINT64_MAX);
	r->seq = htole32(99);
	return false;
}

static void test_record_copied_once(void **state)
{
	struct fix *f = *state;
	struct rewrite rw = { .f = f };

	fix_attach(f, NULL, ALL_KINDS);
	vt_ghint_set_contradicts(f->ch, rewrite_behind, &rw);
	push(f, VTIER_GUEST_FREE, 0, 16 * MIB, 2 * MIB, 0);
	push(f, VTIER_GUEST_COLD, 0, 4 * GIB, 4096, 5);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 16, 0), 2);
	assert_int_equal(rw.calls, 2);
	/* what was checked is what is returned, not what the ring holds now */
	assert_int_equal(f->out[0].kind, VTIER_GUEST_FREE);
	assert_int_equal(f->out[0].gpa, 16 * MIB);
	assert_int_equal(f->out[0].size_bytes, 2 * MIB);
	assert_int_equal(f->out[1].kind, VTIER_GUEST_COLD);
	assert_int_equal(f->out[1].gpa, 4 * GIB);
	assert_int_equal(vt_ghint_stats(f->ch)->accepted_bytes[VTIER_GUEST_FREE], 2 * MIB);
}

static void test_host_page_rewritten(void **state)
{
	struct fix *f = *state;

	fix_attach(f, NULL, VTIER_GUEST_HOST_COLD);
	push(f, VTIER_GUEST_COLD, 0, 0, 4096, 0);
	/* the guest scribbles over the host's page: nothing the host uses is read back */
	memset(f->host, 0xff, sizeof(*f->host));
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 16, 0), 1);
	vt_ghint_commit(f->ch);
	assert_int_equal(le32toh(f->host->cons), 1);
	assert_int_equal(le32toh(f->host->flags), VTIER_GUEST_HOST_ACTIVE | VTIER_GUEST_HOST_COLD);
	assert_int_equal(le32toh(f->host->epoch), 1);
}

static void test_detach_acks_all(void **state)
{
	struct fix *f = *state;

	fix_attach(f, NULL, ALL_KINDS);
	for (int i = 0; i < 10; i++)
		push(f, VTIER_GUEST_FREE, 0, 0, 4096, 0);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 4, 0), 4);
	vt_ghint_detach(f->ch);
	f->ch = NULL;
	assert_int_equal(le32toh(f->host->flags), 0);
	assert_int_equal(le32toh(f->host->cons), 10);
}

/*
 * The region's owner shrinks the file: attach refuses a short file; a read
 * past the new end fails the channel with its reason, and from then on it
 * reads and writes nothing (no access through a mapping: no SIGBUS).
 */
static void test_region_shrunk(void **state)
{
	struct fix *f = *state;
	struct vt_ghint_chan *ch = (void *)1;
	char err[VT_GHINT_ERR_LEN] = "";
	struct stat st;

	assert_int_equal(vt_ghint_attach(&ch, f->fd, 2 * REGION, ram, 2, NULL, 0, 0, err,
					 sizeof(err)), -ESTALE);
	assert_null(ch);
	assert_non_null(strstr(err, "shrank"));

	fix_attach(f, NULL, ALL_KINDS);
	push(f, VTIER_GUEST_FREE, 0, 0, 4096, 0);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 16, 0), 1);
	vt_ghint_commit(f->ch);
	assert_int_equal(vt_ghint_error(f->ch, err, sizeof(err)), 0);
	/* the ring goes: the guest's page stays, the records do not */
	assert_int_equal(ftruncate(f->fd, VTIER_GUEST_RING_OFFSET), 0);
	f->guest->prod = htole32(f->prod + 5);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 16, 0), 0);
	assert_int_equal(vt_ghint_error(f->ch, err, sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "read of"));
	assert_non_null(strstr(err, "shrank"));
	/* then the file is cut to nothing: nothing is read or written any more */
	assert_int_equal(ftruncate(f->fd, 0), 0);
	assert_int_equal(vt_ghint_poll(f->ch, f->out, 16, 0), 0);
	vt_ghint_commit(f->ch);
	vt_ghint_set_balloon_target(f->ch, 7);
	assert_int_equal(fstat(f->fd, &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(vt_ghint_stats(f->ch)->records, 1);
	vt_ghint_detach(f->ch);
	f->ch = NULL;
	assert_int_equal(fstat(f->fd, &st), 0);
	assert_int_equal(st.st_size, 0);
	/* the fixture's mapping is past the end now: give it its size back */
	assert_int_equal(ftruncate(f->fd, REGION), 0);
}

/* A second thread writes random bytes over the guest's page and the ring. */
struct chaos {
	struct fix *f;
	volatile int stop;
	uint64_t writes;
};

static void *chaos_thread(void *opaque)
{
	struct chaos *c = opaque;
	uint8_t *guest = (uint8_t *)c->f->guest;
	uint8_t *ring = (uint8_t *)c->f->ring;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		switch (x % 4) {
		case 0:	/* a byte of the producer index */
			__atomic_store_n(&guest[offsetof(struct vtier_guest_guest, prod) +
						(x >> 8) % 4], (uint8_t)(x >> 16),
					 __ATOMIC_RELAXED);
			break;
		case 1:	/* a plausible record at the next slot, then publish it */
		{
			uint32_t prod = le32toh(__atomic_load_n(&c->f->guest->prod,
								__ATOMIC_RELAXED));
			struct vtier_guest_hint *r = &c->f->ring[prod & 1023];

			__atomic_store_n(&r->seq, htole32(prod), __ATOMIC_RELAXED);
			__atomic_store_n(&r->kind, htole16(1 + (x >> 20) % 6), __ATOMIC_RELAXED);
			__atomic_store_n(&r->flags, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&r->gpa, htole64(((x >> 24) % (6 * GIB)) & ~4095ull),
					 __ATOMIC_RELAXED);
			__atomic_store_n(&r->size_bytes, htole64(((x >> 40) % (4 * MIB)) & ~4095ull),
					 __ATOMIC_RELAXED);
			__atomic_store_n(&r->arg, htole64((x >> 60) % 2), __ATOMIC_RELAXED);
			__atomic_store_n(&c->f->guest->prod, htole32(prod + 1), __ATOMIC_RELEASE);
			break;
		}
		default:	/* any byte of the ring */
			__atomic_store_n(&ring[(x >> 8) % (1024 * 32)], (uint8_t)(x >> 32),
					 __ATOMIC_RELAXED);
			break;
		}
		__atomic_fetch_add(&c->writes, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_hostile_thread(void **state)
{
	struct fix *f = *state;
	const struct vt_ghint_limits lim = { .max_records_per_poll = 1024, .burst_records = 4096 };
	struct chaos c = { .f = f };
	const struct vt_ghint_stats *s;
	uint64_t accepted = 0, polls = 0;
	pthread_t th;

	fix_attach(f, &lim, ALL_KINDS);
	vt_ghint_set_balloon_target(f->ch, 1000);
	s = vt_ghint_stats(f->ch);
	assert_int_equal(pthread_create(&th, NULL, chaos_thread, &c), 0);
	/*
	 * Run until both sides have done enough, whatever the scheduler does:
	 * the agent polls, the guest's honest part (here) publishes a record
	 * now and then at whatever index the chaos left, the chaos thread
	 * writes. No outcome depends on timing; only the invariants are checked.
	 */
	for (uint64_t now = 0; polls < 20000 || accepted == 0 ||
	     __atomic_load_n(&c.writes, __ATOMIC_RELAXED) < 100000; now += SEC / 100, polls++) {
		if (polls % 4 == 0) {
			uint32_t prod = le32toh(__atomic_load_n(&f->guest->prod, __ATOMIC_RELAXED));
			struct vtier_guest_hint *r = &f->ring[prod & 1023];

			__atomic_store_n(&r->seq, htole32(prod), __ATOMIC_RELAXED);
			__atomic_store_n(&r->kind, htole16(VTIER_GUEST_COLD), __ATOMIC_RELAXED);
			__atomic_store_n(&r->flags, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&r->gpa, htole64(4 * GIB), __ATOMIC_RELAXED);
			__atomic_store_n(&r->size_bytes, htole64(4096), __ATOMIC_RELAXED);
			__atomic_store_n(&r->arg, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&f->guest->prod, htole32(prod + 1), __ATOMIC_RELEASE);
		}
		size_t n = vt_ghint_poll(f->ch, f->out, 2048, now);

		for (size_t i = 0; i < n; i++) {
			const struct vt_ghint *h = &f->out[i];
			bool in = false;

			assert_true(h->kind >= 1 && h->kind <= VTIER_GUEST_KIND_MAX);
			assert_int_equal((h->gpa | h->size_bytes) % 4096, 0);
			assert_true(h->size_bytes > 0 && h->size_bytes <= VTIER_GUEST_RANGE_MAX);
			for (int r = 0; r < 2; r++)
				in |= h->gpa >= ram[r].gpa &&
				      h->gpa + h->size_bytes <= ram[r].gpa + ram[r].size;
			assert_true(in);
			assert_true(h->flags == 0 ||
				    (h->kind == VTIER_GUEST_COLD && h->flags == VTIER_GUEST_HINT_CLEAN));
		}
		accepted += n;
		vt_ghint_commit(f->ch);
		if (polls > 100000000)
			fail_msg("%llu polls: %llu accepted, %llu chaos writes", (unsigned long long)polls,
				 (unsigned long long)accepted,
				 (unsigned long long)__atomic_load_n(&c.writes, __ATOMIC_RELAXED));
	}
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	assert_int_equal(s->records, total_accepted(s) + total_rejected(s));
	assert_int_equal(accepted, total_accepted(s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_attach_refuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attach_writes_host_page, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accepts_each_kind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rejects_by_reason, setup, teardown),
		cmocka_unit_test_setup_teardown(test_guest_header_checked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lying_producer_index, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_wraps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flood_capped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_record_copied_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_page_rewritten, setup, teardown),
		cmocka_unit_test_setup_teardown(test_detach_acks_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_region_shrunk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_thread, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
