// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the hand-off message checks (host-agent/iface/handoff_proto.c):
 * one well-formed message of each kind, then a table of malformed,
 * truncated and oversized ones that must each give a specific errno and a
 * reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "handoff_peer.h"
#include "handoff_proto.h"
#include "map_memfd.h"

#define BACKEND_SIZE (64ull << 20)

/* A HELLO with two ranges and a vtier profile, as QEMU would send it. */
struct hello_buf {
	struct vtier_handoff_hello h;
	struct vtier_handoff_range r[2];
	struct vtier_profile_v1 prof;
	uint8_t heat[32];
};

static void make_hello(struct hello_buf *b)
{
	memset(b, 0, sizeof(*b));
	b->h.flags = VTIER_HELLO_F_WP | VTIER_HELLO_F_UUID;
	b->h.n_ranges = 2;
	b->h.size_bytes = BACKEND_SIZE;
	b->h.page_size = 4096;
	b->h.hva = 0x7f0000000000ull;
	b->h.generation = 1;
	b->h.qemu_pid = 1234;
	b->h.profile_size = sizeof(b->prof) + sizeof(b->heat);
	strcpy(b->h.vm_name, "vm0");
	strcpy(b->h.backend_id, "mem0");
	b->r[0] = (struct vtier_handoff_range) { .gpa = 0, .offset = 0, .size = 32ull << 20 };
	b->r[1] = (struct vtier_handoff_range) {
		.gpa = 1ull << 32, .offset = 32ull << 20, .size = 32ull << 20,
	};
	b->prof = (struct vtier_profile_v1) {
		.magic = VTIER_PROFILE_MAGIC, .version = VTIER_PROFILE_VERSION,
		.chunk_shift = 21, .size_bytes = BACKEND_SIZE, .n_chunks = 32,
	};
}

static int parse(uint16_t type, const void *payload, size_t size, unsigned int nfds,
		 struct vt_handoff_msg *msg, char *err)
{
	struct vtier_handoff_hdr hdr;

	vt_handoff_hdr_init(&hdr, type, 7, size);
	err[0] = '\0';
	return vt_handoff_parse(&hdr, payload, size, nfds, msg, err, VT_HANDOFF_ERR_LEN);
}

static void test_hello_ok(void **state)
{
	struct hello_buf b;
	struct vt_handoff_msg msg;
	char err[VT_HANDOFF_ERR_LEN];

	(void)state;
	make_hello(&b);
	assert_int_equal(parse(VTIER_HANDOFF_HELLO, &b, sizeof(b), 2, &msg, err), 0);
	assert_int_equal(msg.hdr.seq, 7);
	assert_ptr_equal(msg.hello.fixed, &b.h);
	assert_int_equal(msg.hello.fixed->n_ranges, 2);
	assert_int_equal(msg.hello.ranges[1].gpa, 1ull << 32);
	assert_ptr_equal(msg.hello.profile, (uint8_t *)&b.prof);
	assert_int_equal(vt_handoff_check_profile(msg.hello.profile, b.h.profile_size,
						  BACKEND_SIZE, err, sizeof(err)), 0);

	/* a zero map comes as a third fd */
	b.h.flags |= VTIER_HELLO_F_ZERO_MAP;
	assert_int_equal(parse(VTIER_HANDOFF_HELLO, &b, sizeof(b), 3, &msg, err), 0);
	/* ... and a send map with it as a fourth, as the patched QEMU sends every HELLO */
	b.h.flags |= VTIER_HELLO_F_SEND_MAP;
	assert_int_equal(parse(VTIER_HANDOFF_HELLO, &b, sizeof(b), 4, &msg, err), 0);
	assert_int_equal(msg.hello.fixed->flags & (VTIER_HELLO_F_ZERO_MAP | VTIER_HELLO_F_SEND_MAP),
			 VTIER_HELLO_F_ZERO_MAP | VTIER_HELLO_F_SEND_MAP);
	b.h.flags |= VTIER_HELLO_F_RECONNECT | VTIER_HELLO_F_INCOMING | VTIER_HELLO_F_NO_PROFILE;
	assert_int_equal(parse(VTIER_HANDOFF_HELLO, &b, sizeof(b), 4, &msg, err), 0);
	b.h.flags &= ~(VTIER_HELLO_F_ZERO_MAP | VTIER_HELLO_F_SEND_MAP | VTIER_HELLO_F_RECONNECT |
		       VTIER_HELLO_F_INCOMING | VTIER_HELLO_F_NO_PROFILE);

	/* No ranges and no profile (a backend not yet mapped) is fine too. */
	b.h.n_ranges = 0;
	b.h.profile_size = 0;
	assert_int_equal(parse(VTIER_HANDOFF_HELLO, &b, sizeof(b.h), 2, &msg, err), 0);
	assert_null(msg.hello.profile);
}

/* A PREPARE: the same HELLO, flags PREPARE | INCOMING, no mapping or userfaultfd, one fd. */
static void make_prepare(struct hello_buf *b)
{
	make_hello(b);
	b->h.flags = VTIER_HELLO_F_PREPARE | VTIER_HELLO_F_INCOMING | VTIER_HELLO_F_UUID;
	b->h.hva = 0;
}

static void test_prepare(void **state)
{
	struct hello_buf b;
	struct vt_handoff_msg msg;
	char err[VT_HANDOFF_ERR_LEN];
	static const struct {
		const char *name;
		uint32_t set, clear;
		uint64_t hva, features, ioctls;
		unsigned int nfds;
	} bad[] = {
		{ "two fds", 0, 0, 0, 0, 0, 2 },
		{ "no fd", 0, 0, 0, 0, 0, 0 },
		{ "not INCOMING", 0, VTIER_HELLO_F_INCOMING, 0, 0, 0, 1 },
		{ "RECONNECT", VTIER_HELLO_F_RECONNECT, 0, 0, 0, 0, 1 },
		{ "WP", VTIER_HELLO_F_WP, 0, 0, 0, 0, 1 },
		{ "a mapping", 0, 0, 0x7f0000000000ull, 0, 0, 1 },
		{ "uffd features", 0, 0, 0, 1, 0, 1 },
		{ "uffd ioctls", 0, 0, 0, 0, 1, 1 },
		{ "PRECOPY", VTIER_HELLO_F_PRECOPY, 0, 0, 0, 0, 1 },
		{ "ZERO_MAP", VTIER_HELLO_F_ZERO_MAP, 0, 0, 0, 0, 1 },
		{ "ZERO_MAP and its fd", VTIER_HELLO_F_ZERO_MAP, 0, 0, 0, 0, 3 },
		{ "SEND_MAP", VTIER_HELLO_F_ZERO_MAP | VTIER_HELLO_F_SEND_MAP, 0, 0, 0, 0, 1 },
		{ "SEND_MAP and its fds", VTIER_HELLO_F_ZERO_MAP | VTIER_HELLO_F_SEND_MAP, 0, 0, 0, 0,
		  4 },
		{ "SEND_MAP alone", VTIER_HELLO_F_SEND_MAP, 0, 0, 0, 0, 1 },
		{ "NO_PROFILE", VTIER_HELLO_F_NO_PROFILE, 0, 0, 0, 0, 1 },
		{ "an unknown flag", 1u << 10, 0, 0, 0, 0, 1 },
	};

	(void)state;
	make_prepare(&b);
	assert_int_equal(parse(VTIER_HANDOFF_HELLO, &b, sizeof(b), 1, &msg, err), 0);
	assert_true(msg.hello.fixed->flags & VTIER_HELLO_F_PREPARE);
	assert_ptr_equal(msg.hello.profile, (uint8_t *)&b.prof);
	/* QEMU offers the early hand-off */
	b.h.flags |= VTIER_HELLO_F_EARLY;
	assert_int_equal(parse(VTIER_HANDOFF_HELLO, &b, sizeof(b), 1, &msg, err), 0);
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		make_prepare(&b);
		b.h.flags = (b.h.flags | bad[i].set) & ~bad[i].clear;
		b.h.hva = bad[i].hva;
		b.h.uffd_features = bad[i].features;
		b.h.uffd_ioctls = bad[i].ioctls;
		if (parse(VTIER_HANDOFF_HELLO, &b, sizeof(b), bad[i].nfds, &msg, err) != -EBADMSG)
			fail_msg("PREPARE with %s: accepted (%s)", bad[i].name, err);
		if (!err[0])
			fail_msg("PREPARE with %s: no reason given", bad[i].name);
	}
	/* the early hand-off's HELLO proper: PRECOPY needs INCOMING, EARLY is a PREPARE's */
	make_hello(&b);
	b.h.flags |= VTIER_HELLO_F_INCOMING | VTIER_HELLO_F_PRECOPY;
	assert_int_equal(parse(VTIER_HANDOFF_HELLO, &b, sizeof(b), 2, &msg, err), 0);
	b.h.flags |= VTIER_HELLO_F_RECONNECT;
	assert_int_equal(parse(VTIER_HANDOFF_HELLO, &b, sizeof(b), 2, &msg, err), 0);
	b.h.flags &= ~VTIER_HELLO_F_INCOMING;
	assert_int_equal(parse(VTIER_HANDOFF_HELLO, &b, sizeof(b), 2, &msg, err), -EBADMSG);
	assert_true(err[0]);
	make_hello(&b);
	b.h.flags |= VTIER_HELLO_F_INCOMING | VTIER_HELLO_F_EARLY;
	assert_int_equal(parse(VTIER_HANDOFF_HELLO, &b, sizeof(b), 2, &msg, err), -EBADMSG);
	assert_true(err[0]);
	/* a HELLO proper with one fd is not a PREPARE */
	make_hello(&b);
	assert_int_equal(parse(VTIER_HANDOFF_HELLO, &b, sizeof(b), 1, &msg, err), -EBADMSG);
	/* a payload too short to hold the flags is no PREPARE either: refused */
	make_prepare(&b);
	assert_true(parse(VTIER_HANDOFF_HELLO, &b, 8, 1, &msg, err) < 0);
	assert_true(err[0]);
}

/* One way to break a HELLO, and what the check must say (@says: in its reason, if set). */
struct hello_case {
	const char *name;
	void (*mutate)(struct hello_buf *b, size_t *size, unsigned int *nfds);
	int want;
	const char *says;
};

#define MUTATOR(fn, body) \
	static void fn(struct hello_buf *b, size_t *size, unsigned int *nfds) \
	{ (void)b; (void)size; (void)nfds; body; }

MUTATOR(m_truncated, *size -= 1)
MUTATOR(m_longer, b->h.profile_size -= 1)
MUTATOR(m_no_fds, *nfds = 0)
MUTATOR(m_three_fds, *nfds = 3)
MUTATOR(m_many_ranges, b->h.n_ranges = VTIER_HANDOFF_RANGES_MAX + 1)
MUTATOR(m_huge_profile, b->h.profile_size = VTIER_HANDOFF_PROFILE_MAX + 1)
MUTATOR(m_ranges_overflow, b->h.n_ranges = 0xffffffffu)
MUTATOR(m_flags, b->h.flags |= 1u << 31)
MUTATOR(m_zero_map_two_fds, b->h.flags |= VTIER_HELLO_F_ZERO_MAP)
MUTATOR(m_zero_map_four_fds, b->h.flags |= VTIER_HELLO_F_ZERO_MAP; *nfds = 4)
#define ZERO_SEND_MAP (VTIER_HELLO_F_ZERO_MAP | VTIER_HELLO_F_SEND_MAP)
MUTATOR(m_send_map_alone, b->h.flags |= VTIER_HELLO_F_SEND_MAP; *nfds = 4)
MUTATOR(m_send_map_alone_two_fds, b->h.flags |= VTIER_HELLO_F_SEND_MAP)
MUTATOR(m_send_map_three_fds, b->h.flags |= ZERO_SEND_MAP; *nfds = 3)
MUTATOR(m_send_map_five_fds, b->h.flags |= ZERO_SEND_MAP; *nfds = 5)
MUTATOR(m_send_map_two_fds, b->h.flags |= ZERO_SEND_MAP)
MUTATOR(m_no_wp, b->h.flags &= ~VTIER_HELLO_F_WP)
MUTATOR(m_name, memset(b->h.vm_name, 'x', sizeof(b->h.vm_name)))
MUTATOR(m_id_unterminated, memset(b->h.backend_id, 'x', sizeof(b->h.backend_id)))
MUTATOR(m_id_empty, b->h.backend_id[0] = '\0')
MUTATOR(m_id_dotdot, strcpy(b->h.backend_id, "../../x"))
MUTATOR(m_id_slash, strcpy(b->h.backend_id, "mem/0"))
MUTATOR(m_id_dot, strcpy(b->h.backend_id, ".hidden"))
MUTATOR(m_id_nonascii, strcpy(b->h.backend_id, "m\xc3\xa9m"))
MUTATOR(m_id_newline, strcpy(b->h.backend_id, "mem\n0"))
MUTATOR(m_page_size, b->h.page_size = 12288)
MUTATOR(m_page_small, b->h.page_size = 2048)
MUTATOR(m_size_zero, b->h.size_bytes = 0)
MUTATOR(m_size_odd, b->h.size_bytes += 4096 / 2)
MUTATOR(m_hva, b->h.hva += 512)
MUTATOR(m_fd_offset, b->h.fd_offset = 100)
MUTATOR(m_wrap, b->h.hva = ~0ull - 4095)
MUTATOR(m_generation, b->h.generation = 0)
MUTATOR(m_range_empty, b->r[0].size = 0)
MUTATOR(m_range_unaligned, b->r[1].gpa += 8)
MUTATOR(m_range_outside, b->r[1].offset = BACKEND_SIZE - 4096)
MUTATOR(m_range_offset_huge, b->r[1].offset = ~0ull & ~4095ull)
MUTATOR(m_range_wrap, b->r[1].gpa = ~0ull & ~4095ull)

static const struct hello_case hello_cases[] = {
	{ "payload shorter than the header says", m_truncated, -EBADMSG },
	{ "payload longer than its counts", m_longer, -EBADMSG },
	{ "no fds", m_no_fds, -EBADMSG },
	{ "three fds", m_three_fds, -EBADMSG },
	{ "ZERO_MAP without its fd", m_zero_map_two_fds, -EBADMSG,
	  "HELLO with 2 fds (want 3 with flag ZERO_MAP: memfd, userfaultfd, zero map)" },
	{ "ZERO_MAP with four fds", m_zero_map_four_fds, -EBADMSG, "with 4 fds (want 3" },
	{ "SEND_MAP without ZERO_MAP", m_send_map_alone, -EBADMSG,
	  "SEND_MAP (0x200) without ZERO_MAP (0x80)" },
	{ "SEND_MAP without ZERO_MAP, two fds", m_send_map_alone_two_fds, -EBADMSG,
	  "SEND_MAP (0x200) without ZERO_MAP (0x80)" },
	{ "SEND_MAP with three fds", m_send_map_three_fds, -EBADMSG,
	  "HELLO with 3 fds (want 4 with flags ZERO_MAP | SEND_MAP: memfd, userfaultfd, zero map, "
	  "send map)" },
	{ "SEND_MAP with five fds", m_send_map_five_fds, -EBADMSG, "with 5 fds (want 4" },
	{ "SEND_MAP with two fds", m_send_map_two_fds, -EBADMSG, "with 2 fds (want 4" },
	{ "too many ranges", m_many_ranges, -EMSGSIZE },
	{ "oversized profile", m_huge_profile, -EMSGSIZE },
	{ "range count overflow", m_ranges_overflow, -EMSGSIZE },
	{ "unknown flag", m_flags, -EBADMSG },
	{ "no write-protect", m_no_wp, -EBADMSG },
	{ "unterminated vm name", m_name, -EBADMSG },
	{ "unterminated backend id", m_id_unterminated, -EBADMSG },
	{ "empty backend id", m_id_empty, -EBADMSG },
	{ "backend id with ..", m_id_dotdot, -EBADMSG },
	{ "backend id with /", m_id_slash, -EBADMSG },
	{ "backend id with a leading dot", m_id_dot, -EBADMSG },
	{ "backend id not ASCII", m_id_nonascii, -EBADMSG },
	{ "backend id with a newline", m_id_newline, -EBADMSG },
	{ "page size not a power of two", m_page_size, -EBADMSG },
	{ "page size below 4 KiB", m_page_small, -EBADMSG },
	{ "size zero", m_size_zero, -EBADMSG },
	{ "size not a page multiple", m_size_odd, -EBADMSG },
	{ "mapping not aligned", m_hva, -EBADMSG },
	{ "file offset not aligned", m_fd_offset, -EBADMSG },
	{ "mapping wraps", m_wrap, -ERANGE },
	{ "generation zero", m_generation, -EBADMSG },
	{ "empty range", m_range_empty, -EBADMSG },
	{ "unaligned range", m_range_unaligned, -EBADMSG },
	{ "range beyond the backend", m_range_outside, -ERANGE },
	{ "range offset beyond the backend", m_range_offset_huge, -ERANGE },
	{ "range wraps", m_range_wrap, -ERANGE },
};

static void test_hello_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(hello_cases) / sizeof(hello_cases[0]); i++) {
		const struct hello_case *c = &hello_cases[i];
		struct hello_buf b;
		struct vt_handoff_msg msg;
		char err[VT_HANDOFF_ERR_LEN];
		size_t size = sizeof(b);
		unsigned int nfds = 2;
		int ret;

		make_hello(&b);
		c->mutate(&b, &size, &nfds);
		ret = vt_handoff_parse(&(struct vtier_handoff_hdr) {
					       .magic = VTIER_HANDOFF_MAGIC,
					       .version = VTIER_HANDOFF_VERSION,
					       .type = VTIER_HANDOFF_HELLO,
					       .size = sizeof(b),
				       }, &b, size, nfds, &msg, err, sizeof(err));
		if (ret != c->want)
			fail_msg("%s: got %d (%s), want %d", c->name, ret, err, c->want);
		if (!err[0])
			fail_msg("%s: no reason given", c->name);
		if (c->says && !strstr(err, c->says))
			fail_msg("%s: says '%s', not '%s'", c->name, err, c->says);
	}
}

/*
 * The zero map's and the send map's fds: a memfd of a bit per page, sealed
 * against shrinking (the agent writes it through a mapping), growing and new
 * seals; anything else refused with the reason, naming the map.
 */
static void test_map_fds(void **state)
{
	const int seals = MAP_SEALS;
	static const struct {
		unsigned int fd_index;
		const char *name;
	} maps[] = {
		{ VTIER_HANDOFF_FD_ZERO_MAP, "zero map" },
		{ VTIER_HANDOFF_FD_SEND_MAP, "send map" },
	};
	struct hello_buf b;
	char err[VT_HANDOFF_ERR_LEN], *fd_text;
	uint64_t bytes;
	int fd, pfd[2];

	(void)state;
	make_hello(&b);
	bytes = vtier_zero_map_bytes(b.h.size_bytes, b.h.page_size);
	assert_int_equal(bytes, BACKEND_SIZE / 4096 / 8);
	/* a page count not a multiple of 64 rounds up to a whole word */
	b.h.size_bytes = 65 * 4096;
	assert_int_equal(vtier_zero_map_bytes(b.h.size_bytes, b.h.page_size), 16);
	b.h.size_bytes = BACKEND_SIZE;
	assert_int_equal(VTIER_HANDOFF_FD_SEND_MAP, VTIER_HANDOFF_ZERO_MAP_NFDS);
	assert_int_equal(VTIER_HANDOFF_SEND_MAP_NFDS, VTIER_HANDOFF_FD_SEND_MAP + 1);
	for (size_t i = 0; i < G_N_ELEMENTS(maps); i++) {
		unsigned int at = maps[i].fd_index;

		fd = map_memfd(bytes, seals);
		assert_int_equal(vt_handoff_check_map(&b.h, at, fd, err, sizeof(err)), 0);
		close(fd);
		/* not sealed against shrinking: QEMU could make the agent's writes fault */
		fd = map_memfd(bytes, F_SEAL_GROW | F_SEAL_SEAL);
		assert_int_equal(vt_handoff_check_map(&b.h, at, fd, err, sizeof(err)), -EBADF);
		assert_non_null(strstr(err, "not sealed"));
		assert_non_null(strstr(err, maps[i].name));
		close(fd);
		fd = map_memfd(bytes, 0);
		assert_int_equal(vt_handoff_check_map(&b.h, at, fd, err, sizeof(err)), -EBADF);
		close(fd);
		/* sealed, but the size of another backend */
		fd = map_memfd(bytes / 2, seals);
		assert_int_equal(vt_handoff_check_map(&b.h, at, fd, err, sizeof(err)), -ERANGE);
		assert_non_null(strstr(err, "needs 2048"));
		assert_non_null(strstr(err, maps[i].name));
		close(fd);
		fd = map_memfd(bytes + 8, seals);
		assert_int_equal(vt_handoff_check_map(&b.h, at, fd, err, sizeof(err)), -ERANGE);
		close(fd);
		/* not a file: the reason names the fd's place in the HELLO */
		assert_int_equal(pipe(pfd), 0);
		assert_int_equal(vt_handoff_check_map(&b.h, at, pfd[0], err, sizeof(err)), -EBADF);
		fd_text = g_strdup_printf("fd %u (the %s) is not a memfd", at, maps[i].name);
		assert_string_equal(err, fd_text);
		g_free(fd_text);
		close(pfd[0]);
		close(pfd[1]);
	}
}

static void test_name_safe(void **state)
{
	static const char *const good[] = { "mem0", "pc.ram", "ram-node_1", "a", "A.b-c_9" };
	static const char *const bad[] = {
		"", ".", "..", "../../x", "a/b", "/etc", ".x", "-x", "a..b", "a b", "a\tb",
		"caf\xc3\xa9", "x\x7f",
		"0123456789012345678901234567890123456789012345678901234567890123",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!vt_handoff_name_safe(good[i]))
			fail_msg("refused '%s'", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (vt_handoff_name_safe(bad[i]))
			fail_msg("accepted '%s'", bad[i]);
}

static void test_header_bad(void **state)
{
	struct vtier_handoff_hdr hdr;
	char err[VT_HANDOFF_ERR_LEN];

	(void)state;
	vt_handoff_hdr_init(&hdr, VTIER_HANDOFF_HELLO, 1, sizeof(struct vtier_handoff_hello));
	assert_int_equal(vt_handoff_check_hdr(&hdr, err, sizeof(err)), 0);

	hdr.magic ^= 1;
	assert_int_equal(vt_handoff_check_hdr(&hdr, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "magic"));
	hdr.magic ^= 1;

	hdr.version = VTIER_HANDOFF_VERSION + 1;
	assert_int_equal(vt_handoff_check_hdr(&hdr, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "version"));
	hdr.version = VTIER_HANDOFF_VERSION;

	/* Types only the agent sends (as a SENT would be), and unknown ones. */
	hdr.type = VTIER_HANDOFF_SENT;
	hdr.size = sizeof(struct vtier_handoff_sent);
	assert_int_equal(vt_handoff_check_hdr(&hdr, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "message type 9 (SENT) is not one QEMU sends"));
	hdr.type = VTIER_HANDOFF_HELLO_REPLY;
	assert_int_equal(vt_handoff_check_hdr(&hdr, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "(HELLO_REPLY) is not one QEMU sends"));
	for (uint16_t t = 0; t < 20; t++) {
		if (t == VTIER_HANDOFF_HELLO || t == VTIER_HANDOFF_POLICY ||
		    t == VTIER_HANDOFF_MIGRATION || t == VTIER_HANDOFF_RANGES)
			continue;
		hdr.type = t;
		assert_int_equal(vt_handoff_check_hdr(&hdr, err, sizeof(err)), -EPROTO);
	}

	/* Sizes out of bounds for the type, checked before any allocation. */
	hdr.type = VTIER_HANDOFF_HELLO;
	hdr.size = sizeof(struct vtier_handoff_hello) - 1;
	assert_int_equal(vt_handoff_check_hdr(&hdr, err, sizeof(err)), -EMSGSIZE);
	hdr.size = 0xffffffffu;
	assert_int_equal(vt_handoff_check_hdr(&hdr, err, sizeof(err)), -EMSGSIZE);
	hdr.type = VTIER_HANDOFF_POLICY;
	hdr.size = sizeof(struct vtier_handoff_policy) + sizeof(struct vtier_handoff_policy_min) + 1;
	assert_int_equal(vt_handoff_check_hdr(&hdr, err, sizeof(err)), -EMSGSIZE);
	hdr.type = VTIER_HANDOFF_MIGRATION;
	hdr.size = 0;
	assert_int_equal(vt_handoff_check_hdr(&hdr, err, sizeof(err)), -EMSGSIZE);

	/* A NULL error buffer is allowed. */
	assert_int_equal(vt_handoff_check_hdr(&hdr, NULL, 0), -EMSGSIZE);
}

static void test_policy(void **state)
{
	struct vtier_handoff_policy p = {
		.mode = VTIER_POLICY_MODE_AUTO,
		.flags = VTIER_POLICY_F_DRAM_LIMIT | VTIER_POLICY_F_TIERS,
		.dram_limit_bytes = 1ull << 30,
		.tiers = "dram,lz4:zbud,zstd-3",
	};
	struct vt_handoff_msg msg;
	char err[VT_HANDOFF_ERR_LEN];

	(void)state;
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &p, sizeof(p), 0, &msg, err), 0);
	assert_ptr_equal(msg.policy.fixed, &p);
	assert_null(msg.policy.min);
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &p, sizeof(p), 1, &msg, err), -EBADMSG);

	p.mode = 3;
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &p, sizeof(p), 0, &msg, err), -EBADMSG);
	p.mode = VTIER_POLICY_MODE_OFF;
	p.flags = 1u << 9;
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &p, sizeof(p), 0, &msg, err), -EBADMSG);
	assert_non_null(strstr(err, "unknown flags 0x200"));
	p.flags = VTIER_POLICY_F_TIERS;
	p.weight = 1;
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &p, sizeof(p), 0, &msg, err), -EBADMSG);
	assert_non_null(strstr(err, "weight 1 without flag"));
	p.weight = 0;
	strcpy(p.tiers, "dram;rm -rf");
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &p, sizeof(p), 0, &msg, err), -EBADMSG);
	p.tiers[0] = '\0';
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &p, sizeof(p), 0, &msg, err), -EBADMSG);
	memset(p.tiers, 'a', sizeof(p.tiers));
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &p, sizeof(p), 0, &msg, err), -EBADMSG);
}

/* The POLICY's host-sharing fields: the weight, and the dram min that follows the policy. */
static void test_policy_share(void **state)
{
	struct {
		struct vtier_handoff_policy p;
		struct vtier_handoff_policy_min min;
	} m = {
		.p = {
			.mode = VTIER_POLICY_MODE_AUTO,
			.flags = VTIER_POLICY_F_DRAM_MIN | VTIER_POLICY_F_WEIGHT,
			.weight = 300,
		},
		.min = { .dram_min_bytes = 256ull << 20 },
	};
	struct vt_handoff_msg msg;
	char err[VT_HANDOFF_ERR_LEN];

	(void)state;
	_Static_assert(sizeof(m) == 168, "the long POLICY");
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &m, sizeof(m), 0, &msg, err), 0);
	assert_ptr_equal(msg.policy.fixed, &m.p);
	assert_ptr_equal(msg.policy.min, &m.min);
	assert_int_equal(msg.policy.min->dram_min_bytes, 256ull << 20);
	assert_int_equal(msg.policy.fixed->weight, 300);

	/* the size must be the one the flags say, both ways */
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &m, sizeof(m.p), 0, &msg, err), -EBADMSG);
	assert_non_null(strstr(err, "POLICY of 160 bytes, its flags 0x30 say 168"));
	m.p.flags = VTIER_POLICY_F_WEIGHT;
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &m, sizeof(m), 0, &msg, err), -EBADMSG);
	assert_non_null(strstr(err, "POLICY of 168 bytes, its flags 0x20 say 160"));
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &m, sizeof(m.p), 0, &msg, err), 0);
	assert_null(msg.policy.min);

	/* the weight: 1..10000 with its flag */
	m.p.weight = 0;
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &m, sizeof(m.p), 0, &msg, err), -ERANGE);
	assert_non_null(strstr(err, "weight 0 (must be 1..10000)"));
	m.p.weight = VTIER_POLICY_WEIGHT_MAX + 1;
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &m, sizeof(m.p), 0, &msg, err), -ERANGE);
	assert_non_null(strstr(err, "weight 10001 (must be 1..10000)"));
	m.p.weight = 1;
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &m, sizeof(m.p), 0, &msg, err), 0);
	m.p.weight = VTIER_POLICY_WEIGHT_MAX;
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &m, sizeof(m.p), 0, &msg, err), 0);

	/* the first flag past the known ones */
	m.p.flags = VTIER_POLICY_F_WEIGHT | (VTIER_POLICY_F_WEIGHT << 1);
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &m, sizeof(m.p), 0, &msg, err), -EBADMSG);
	assert_non_null(strstr(err, "unknown flags 0x60 (known 0x3f)"));

	/* a dram min alone (0 is a value: no min) */
	m.p.flags = VTIER_POLICY_F_DRAM_MIN;
	m.p.weight = 0;
	m.min.dram_min_bytes = 0;
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &m, sizeof(m), 0, &msg, err), 0);
	assert_ptr_equal(msg.policy.min, &m.min);
	assert_int_equal(parse(VTIER_HANDOFF_POLICY, &m, sizeof(m) - 1, 0, &msg, err), -EBADMSG);
}

static void test_migration(void **state)
{
	struct vtier_handoff_migration m = { .event = VTIER_MIGRATION_COMPLETED };
	struct vt_handoff_msg msg;
	char err[VT_HANDOFF_ERR_LEN];

	(void)state;
	assert_int_equal(parse(VTIER_HANDOFF_MIGRATION, &m, sizeof(m), 0, &msg, err), 0);
	assert_int_equal(msg.migration->event, VTIER_MIGRATION_COMPLETED);
	m.event = 0;
	assert_int_equal(parse(VTIER_HANDOFF_MIGRATION, &m, sizeof(m), 0, &msg, err), -EBADMSG);
	m.event = VTIER_MIGRATION_ARRIVED;
	assert_int_equal(parse(VTIER_HANDOFF_MIGRATION, &m, sizeof(m), 0, &msg, err), 0);
	/* the source's last pass over RAM is done: QEMU waits for SENT */
	m.event = VTIER_MIGRATION_SEND_END;
	assert_int_equal(parse(VTIER_HANDOFF_MIGRATION, &m, sizeof(m), 0, &msg, err), 0);
	assert_int_equal(msg.migration->event, VTIER_MIGRATION_SEND_END);
	assert_int_equal(msg.hdr.seq, 7);
	assert_int_equal(parse(VTIER_HANDOFF_MIGRATION, &m, sizeof(m), 4, &msg, err), -EBADMSG);
	m.event = VTIER_MIGRATION_SEND_END + 1;
	assert_int_equal(parse(VTIER_HANDOFF_MIGRATION, &m, sizeof(m), 0, &msg, err), -EBADMSG);
	assert_string_equal(err, "MIGRATION: event 6, reserved 0 (events 1..5, reserved 0)");
	m.event = VTIER_MIGRATION_START;
	m.reserved = 1;
	assert_int_equal(parse(VTIER_HANDOFF_MIGRATION, &m, sizeof(m), 0, &msg, err), -EBADMSG);
}

/* SENT, the agent's answer to SEND_END, as QEMU reads it: 144 bytes, every field in place. */
static void test_sent(void **state)
{
	struct vtier_handoff_sent sent;
	uint8_t wire[sizeof(sent)];
	char long_text[300];
	int32_t status;
	uint64_t pages;
	uint32_t reserved;

	(void)state;
	memset(&sent, 0xa5, sizeof(sent));
	assert_int_equal(vt_handoff_sent_init(&sent, 0, 0, "no page marked"), 144);
	memcpy(wire, &sent, sizeof(wire));
	memcpy(&status, wire, 4);
	memcpy(&reserved, wire + 4, 4);
	memcpy(&pages, wire + 8, 8);
	assert_int_equal(status, 0);
	assert_int_equal(reserved, 0);
	assert_int_equal(pages, 0);
	assert_string_equal((const char *)wire + 16, "no page marked");
	for (size_t i = 16 + strlen("no page marked"); i < sizeof(wire); i++)
		assert_int_equal(wire[i], 0);	/* no stale bytes go to QEMU */

	assert_int_equal(vt_handoff_sent_init(&sent, -ETIMEDOUT, 123456789012ull,
					      "destination's agent did not acknowledge"), 144);
	memcpy(wire, &sent, sizeof(wire));
	memcpy(&status, wire, 4);
	memcpy(&pages, wire + 8, 8);
	assert_int_equal(status, -ETIMEDOUT);
	assert_int_equal(pages, 123456789012ull);
	assert_string_equal((const char *)wire + 16, "destination's agent did not acknowledge");

	/* a status that is no negative errno, a message too long, none at all */
	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	vt_handoff_sent_init(&sent, EIO, 1, long_text);
	assert_int_equal(sent.status, -EINVAL);
	assert_int_equal(strnlen(sent.message, sizeof(sent.message)), VTIER_HANDOFF_MESSAGE_LEN - 1);
	vt_handoff_sent_init(&sent, 0, 0, NULL);
	assert_string_equal(sent.message, "");
	assert_string_equal(vt_handoff_type_name(VTIER_HANDOFF_SENT), "SENT");
}

static void test_ranges(void **state)
{
	struct {
		struct vtier_handoff_ranges h;
		struct vtier_handoff_range r[2];
	} m = {
		.h = { .n_ranges = 2 },
		.r = { { .gpa = 1ull << 32, .offset = 0, .size = 1 << 20 },
		       { .gpa = 2ull << 32, .offset = 1 << 20, .size = 1 << 20 } },
	};
	struct vt_handoff_msg msg;
	char err[VT_HANDOFF_ERR_LEN];

	(void)state;
	assert_int_equal(parse(VTIER_HANDOFF_RANGES, &m, sizeof(m), 0, &msg, err), 0);
	assert_int_equal(msg.ranges.fixed->n_ranges, 2);
	assert_int_equal(msg.ranges.ranges[1].gpa, 2ull << 32);
	/* No ranges at all: the backend was unplugged. */
	m.h.n_ranges = 0;
	assert_int_equal(parse(VTIER_HANDOFF_RANGES, &m, sizeof(m.h), 0, &msg, err), 0);
	/* Count and size disagree. */
	assert_int_equal(parse(VTIER_HANDOFF_RANGES, &m, sizeof(m), 0, &msg, err), -EBADMSG);
	m.h.n_ranges = 2;
	assert_int_equal(parse(VTIER_HANDOFF_RANGES, &m, sizeof(m) - 8, 0, &msg, err), -EBADMSG);
	m.h.n_ranges = 0xffffffffu;
	assert_int_equal(parse(VTIER_HANDOFF_RANGES, &m, sizeof(m), 0, &msg, err), -EBADMSG);
	m.h.n_ranges = 2;
	m.h.reserved = 1;
	assert_int_equal(parse(VTIER_HANDOFF_RANGES, &m, sizeof(m), 0, &msg, err), -EBADMSG);
	m.h.reserved = 0;
	m.r[1].gpa += 8;
	assert_int_equal(parse(VTIER_HANDOFF_RANGES, &m, sizeof(m), 0, &msg, err), -EBADMSG);
	m.r[1].gpa = ~0ull & ~4095ull;
	assert_int_equal(parse(VTIER_HANDOFF_RANGES, &m, sizeof(m), 0, &msg, err), -ERANGE);
	m.r[1].gpa = 0;
	m.r[1].offset = ~0ull & ~4095ull;
	assert_int_equal(parse(VTIER_HANDOFF_RANGES, &m, sizeof(m), 0, &msg, err), -ERANGE);
	/* Fds on RANGES. */
	m.r[1].offset = 0;
	assert_int_equal(parse(VTIER_HANDOFF_RANGES, &m, sizeof(m), 1, &msg, err), -EBADMSG);
}

static void test_profile(void **state)
{
	struct hello_buf b;
	char err[VT_HANDOFF_ERR_LEN];
	size_t size = sizeof(b.prof) + sizeof(b.heat);

	(void)state;
	make_hello(&b);
	assert_int_equal(vt_handoff_check_profile(&b.prof, size, BACKEND_SIZE, err, sizeof(err)), 0);
	assert_int_equal(vt_handoff_check_profile(&b.prof, size, BACKEND_SIZE * 2, err, sizeof(err)),
			 -ERANGE);
	assert_int_equal(vt_handoff_check_profile(&b.prof, size - 1, BACKEND_SIZE, err, sizeof(err)),
			 -EBADMSG);
	assert_int_equal(vt_handoff_check_profile(&b.prof, 3, BACKEND_SIZE, err, sizeof(err)),
			 -EBADMSG);
	b.prof.n_chunks = 0xffffffffu;
	assert_int_equal(vt_handoff_check_profile(&b.prof, size, BACKEND_SIZE, err, sizeof(err)),
			 -EBADMSG);
	b.prof.n_chunks = 32;
	b.prof.chunk_shift = 40;
	assert_int_equal(vt_handoff_check_profile(&b.prof, size, BACKEND_SIZE, err, sizeof(err)),
			 -EBADMSG);
	b.prof.chunk_shift = 21;
	b.prof.magic = 0;
	assert_int_equal(vt_handoff_check_profile(&b.prof, size, BACKEND_SIZE, err, sizeof(err)),
			 -EBADMSG);
}

/* STATS in both forms, checked as QEMU checks them. */
static void test_stats(void **state)
{
	struct {
		struct vtier_handoff_stats s;
		struct vtier_handoff_tier_v2 t[2];
	} v2 = {
		.s = { .faults_served = 5, .n_tiers = 2, .flags = VTIER_STATS_F_TIER_V2 },
		.t = {
			{ .name = "dram", .resident_bytes = 1 << 20 },
			{ .name = "lz4", .resident_bytes = 1 << 16, .stored_bytes = 1 << 16,
			  .compressed_bytes = 1 << 14, .pages_evicted = 20, .pages_faulted_back = 4,
			  .fault_latency_p50_ns = 8000, .fault_latency_p99_ns = 30000 },
		},
	};
	struct {
		struct vtier_handoff_stats s;
		struct vtier_handoff_tier t[3];
	} v1 = {
		.s = { .n_tiers = 3 },
		.t = { { "dram", 1 << 20 }, { "cxl", 1 << 19 }, { "lz4", 1 << 16 } },
	};
	struct vt_handoff_stats st;
	char err[VT_HANDOFF_ERR_LEN];

	(void)state;
	assert_int_equal(vt_handoff_check_stats(&v1, sizeof(v1), &st, err, sizeof(err)), 0);
	assert_ptr_equal(st.fixed, &v1.s);
	assert_ptr_equal(st.tiers, v1.t);
	assert_null(st.tiers_v2);
	assert_int_equal(vt_handoff_check_stats(&v2, sizeof(v2), &st, err, sizeof(err)), 0);
	assert_null(st.tiers);
	assert_ptr_equal(st.tiers_v2, v2.t);
	assert_int_equal(st.tiers_v2[1].fault_latency_p99_ns, 30000);

	/* The flag decides the entry size: either form read as the other. */
	v1.s.flags = VTIER_STATS_F_TIER_V2;
	assert_int_equal(vt_handoff_check_stats(&v1, sizeof(v1), &st, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "its counts say"));
	v1.s.flags = 0;
	v2.s.flags = 0;
	assert_int_equal(vt_handoff_check_stats(&v2, sizeof(v2), &st, err, sizeof(err)), -EBADMSG);
	v2.s.flags = VTIER_STATS_F_TIER_V2 | 8;
	assert_int_equal(vt_handoff_check_stats(&v2, sizeof(v2), &st, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "unknown flags 0x9"));
	v2.s.flags = VTIER_STATS_F_TIER_V2;
	assert_int_equal(vt_handoff_check_stats(&v2, sizeof(v2) - 1, &st, err, sizeof(err)),
			 -EBADMSG);
	assert_int_equal(vt_handoff_check_stats(&v2, sizeof(v2.s) - 1, &st, err, sizeof(err)),
			 -EBADMSG);
	v2.s.n_tiers = VTIER_HANDOFF_TIERS_MAX + 1;
	assert_int_equal(vt_handoff_check_stats(&v2, sizeof(v2), &st, err, sizeof(err)), -EMSGSIZE);
	v2.s.n_tiers = 2;
	v2.t[1].name[0] = '\0';
	assert_int_equal(vt_handoff_check_stats(&v2, sizeof(v2), &st, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "STATS: tier 1 has no name");
	memset(v2.t[1].name, 'x', sizeof(v2.t[1].name));
	assert_int_equal(vt_handoff_check_stats(&v2, sizeof(v2), &st, err, sizeof(err)), -EBADMSG);
}

/* A STATS report with the VM's TCO block (VTIER_STATS_F_TCO) after one v2 tier. */
struct tco_report {
	struct vtier_handoff_stats s;
	struct vtier_handoff_tier_v2 t[1];
	struct vtier_handoff_tco tco;
	struct vtier_handoff_tco_tier tt[2];
};

static void tco_report_init(struct tco_report *r)
{
	*r = (struct tco_report) {
		.s = { .n_tiers = 1, .flags = VTIER_STATS_F_TIER_V2 | VTIER_STATS_F_TCO },
		.t = { { .name = "memory", .resident_bytes = 4 << 20 } },
		.tco = { .windows = 10, .bytes = 3 << 20, .cost_nusd_per_hour = 150000,
			 .all_dram_nusd_per_hour = 200000, .saving_nusd_per_month = 36500000,
			 .hot_set_bytes = 1 << 20, .windows_since_phase_change = 4,
			 .phase_changes = 1, .saving_pct_milli = 25000, .tco_alpha_milli = 500,
			 .hour_samples = 2, .n_tiers = 2, .placement = "tco" },
		.tt = {
			{ .name = "dram", .kind = VTIER_TCO_TIER_NUMA, .ratio_milli = 1000,
			  .bytes = 2 << 20, .bytes_hour_avg = 2 << 20, .bytes_hour_max = 2 << 20 },
			{ .name = "lz4", .kind = VTIER_TCO_TIER_COMPRESSED, .ratio_milli = 2500,
			  .bytes = 1 << 20, .bytes_hour_avg = 1 << 19, .bytes_hour_max = 1 << 20 },
		},
	};
}

/* Ways to spoil a good TCO report, one per case of test_stats_tco. */
enum tco_spoil {
	TCO_SHORT,
	TCO_NO_BLOCK,
	TCO_TOO_MANY,
	TCO_SUM,
	TCO_OVERFLOW,
	TCO_SAVING,
	TCO_ALPHA,
	TCO_SAMPLES,
	TCO_PHASES,
	TCO_STABLE,
	TCO_PLACEMENT,
	TCO_UNNAMED,
	TCO_UNTERMINATED,
	TCO_KIND,
	TCO_RATIO,
	TCO_HOUR_AVG,
};

static void tco_spoil(struct tco_report *r, size_t *size, enum tco_spoil how)
{
	switch (how) {
	case TCO_SHORT:
		*size -= sizeof(r->tt);			/* the TCO tiers are missing */
		break;
	case TCO_NO_BLOCK:
		*size = sizeof(r->s) + sizeof(r->t) + sizeof(r->tco) - 1;
		break;
	case TCO_TOO_MANY:
		r->tco.n_tiers = VTIER_HANDOFF_TIERS_MAX + 1;
		break;
	case TCO_SUM:
		r->tco.bytes = 4 << 20;
		break;
	case TCO_OVERFLOW:
		r->tt[0].bytes = UINT64_MAX;
		r->tco.bytes = UINT64_MAX;		/* a sum that wraps would be 1 MiB - 1 */
		break;
	case TCO_SAVING:
		r->tco.saving_pct_milli = 100001;
		break;
	case TCO_ALPHA:
		r->tco.tco_alpha_milli = 1001;
		break;
	case TCO_SAMPLES:
		r->tco.hour_samples = VTIER_TCO_HOUR_SAMPLES_MAX + 1;
		break;
	case TCO_PHASES:
		r->tco.phase_changes = 11;
		break;
	case TCO_STABLE:
		r->tco.windows_since_phase_change = 11;
		break;
	case TCO_PLACEMENT:
		memset(r->tco.placement, 'x', sizeof(r->tco.placement));
		break;
	case TCO_UNNAMED:
		r->tt[1].name[0] = '\0';
		break;
	case TCO_UNTERMINATED:
		memset(r->tt[0].name, 'x', sizeof(r->tt[0].name));
		break;
	case TCO_KIND:
		r->tt[1].kind = 2;
		break;
	case TCO_RATIO:
		r->tt[0].ratio_milli = 0;
		break;
	case TCO_HOUR_AVG:
		r->tt[1].bytes_hour_avg = (1 << 20) + 1;
		break;
	}
}

/* Every way a TCO block can be wrong is refused with its reason. */
static void test_stats_tco(void **state)
{
	static const struct {
		const char *what;
		enum tco_spoil how;
		int ret;
		const char *err;
	} cases[] = {
		{ "short", TCO_SHORT, -EBADMSG, "its counts say" },
		{ "no block", TCO_NO_BLOCK, -EBADMSG, "no room for its TCO block" },
		{ "too many tiers", TCO_TOO_MANY, -EMSGSIZE, "TCO tiers (max" },
		{ "sum", TCO_SUM, -ERANGE, "TCO tiers hold 3145728 bytes, the total says 4194304" },
		{ "overflow", TCO_OVERFLOW, -ERANGE, "overflow" },
		{ "saving", TCO_SAVING, -ERANGE, "saving 100001" },
		{ "alpha", TCO_ALPHA, -ERANGE, "alpha 1001" },
		{ "samples", TCO_SAMPLES, -ERANGE, "hour samples 61" },
		{ "phases", TCO_PHASES, -ERANGE, "phase counts" },
		{ "stable", TCO_STABLE, -ERANGE, "phase counts" },
		{ "placement", TCO_PLACEMENT, -EBADMSG, "placement not terminated" },
		{ "unnamed", TCO_UNNAMED, -EBADMSG, "TCO tier 1 has no name" },
		{ "unterminated", TCO_UNTERMINATED, -EBADMSG, "TCO tier 0 has no name" },
		{ "kind", TCO_KIND, -EBADMSG, "TCO tier 1 of kind 2" },
		{ "ratio", TCO_RATIO, -EBADMSG, "ratio 0" },
		{ "hour average", TCO_HOUR_AVG, -ERANGE, "hour average above the maximum" },
	};
	struct tco_report r;
	struct vt_handoff_stats st;
	char err[VT_HANDOFF_ERR_LEN];
	size_t size;

	(void)state;
	tco_report_init(&r);
	assert_int_equal(vt_handoff_check_stats(&r, sizeof(r), &st, err, sizeof(err)), 0);
	assert_ptr_equal(st.tiers_v2, r.t);
	assert_ptr_equal(st.tco, &r.tco);
	assert_ptr_equal(st.tco_tiers, r.tt);
	/* without hour samples the average is the current bytes, above a 0 maximum */
	r.tco.hour_samples = 0;
	r.tt[1].bytes_hour_max = 0;
	assert_int_equal(vt_handoff_check_stats(&r, sizeof(r), &st, err, sizeof(err)), 0);
	/* with v1 entries the block is not where these bytes have it */
	tco_report_init(&r);
	r.s.flags = VTIER_STATS_F_TCO;
	assert_int_equal(vt_handoff_check_stats(&r, sizeof(r), &st, err, sizeof(err)), -EBADMSG);
	/* without the flag the same bytes are a v2 report of the wrong size */
	r.s.flags = VTIER_STATS_F_TIER_V2;
	assert_int_equal(vt_handoff_check_stats(&r, sizeof(r), &st, err, sizeof(err)), -EBADMSG);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tco_report_init(&r);
		size = sizeof(r);
		tco_spoil(&r, &size, cases[i].how);
		err[0] = '\0';
		if (vt_handoff_check_stats(&r, size, &st, err, sizeof(err)) != cases[i].ret ||
		    !strstr(err, cases[i].err))
			fail_msg("case %s: got '%s', want %d '%s'", cases[i].what, err,
				 cases[i].ret, cases[i].err);
	}
}

/*
 * The VM's migration block (VTIER_STATS_F_MIGRATION), last: after the tiers,
 * and after the TCO block when there is one. Every way it can be wrong is
 * refused with its reason.
 */
static void test_stats_migration(void **state)
{
	struct {
		struct tco_report r;
		struct vtier_handoff_migration_stats m;
	} full;
	struct {
		struct vtier_handoff_stats s;
		struct vtier_handoff_tier_v2 t[1];
		struct vtier_handoff_migration_stats m;
	} plain = {
		.s = { .n_tiers = 1,
		       .flags = VTIER_STATS_F_TIER_V2 | VTIER_STATS_F_MIGRATION },
		.t = { { .name = "memory", .resident_bytes = 1 << 20 } },
		.m = { .state = VTIER_MIGRATION_STATE_OUTGOING, .started = 3, .completed = 1,
		       .failed = 1, .extra_bytes = 5 << 20, .extra_peak_bytes = 9 << 20,
		       .extra_bound_bytes = 32 << 20, .promotions_held = 4 },
	};
	static const struct {
		const char *what;
		uint32_t state, reserved;
		uint64_t started, completed, failed;
		int ret;
		const char *err;
	} cases[] = {
		{ "state", 3, 0, 0, 0, 0, -EBADMSG, "migration state 3" },
		{ "reserved", 0, 1, 0, 0, 0, -EBADMSG, "reserved 1" },
		{ "completed", 0, 0, 1, 2, 0, -ERANGE, "2 migrations completed and 0 failed of 1" },
		{ "failed", 0, 0, 2, 1, 2, -ERANGE, "1 migrations completed and 2 failed of 2" },
		{ "wrap", 0, 0, 1, 1, UINT64_MAX, -ERANGE, "failed of 1" },
	};
	struct vt_handoff_stats st;
	char err[VT_HANDOFF_ERR_LEN];

	(void)state;
	assert_int_equal(vt_handoff_check_stats(&plain, sizeof(plain), &st, err, sizeof(err)), 0);
	assert_ptr_equal(st.migration, &plain.m);
	assert_null(st.tco);
	/* after the TCO block */
	tco_report_init(&full.r);
	full.r.s.flags |= VTIER_STATS_F_MIGRATION;
	full.m = plain.m;
	assert_int_equal(vt_handoff_check_stats(&full, sizeof(full), &st, err, sizeof(err)), 0);
	assert_ptr_equal(st.migration, &full.m);
	assert_ptr_equal(st.tco, &full.r.tco);
	/* a block too short, or bytes past it */
	assert_int_equal(vt_handoff_check_stats(&plain, sizeof(plain) - 1, &st, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "a migration block say"));
	assert_int_equal(vt_handoff_check_stats(&full, sizeof(full) - 8, &st, err, sizeof(err)),
			 -EBADMSG);
	/* without the flag the block is bytes past the report */
	plain.s.flags = VTIER_STATS_F_TIER_V2;
	assert_int_equal(vt_handoff_check_stats(&plain, sizeof(plain), &st, err, sizeof(err)),
			 -EBADMSG);
	plain.s.flags |= VTIER_STATS_F_MIGRATION;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		plain.m.state = cases[i].state;
		plain.m.reserved = cases[i].reserved;
		plain.m.started = cases[i].started;
		plain.m.completed = cases[i].completed;
		plain.m.failed = cases[i].failed;
		err[0] = '\0';
		if (vt_handoff_check_stats(&plain, sizeof(plain), &st, err, sizeof(err)) !=
			    cases[i].ret || !strstr(err, cases[i].err))
			fail_msg("case %s: got '%s', want %d '%s'", cases[i].what, err,
				 cases[i].ret, cases[i].err);
	}
	/* every state there is */
	plain.m = (struct vtier_handoff_migration_stats){ .state = VTIER_MIGRATION_STATE_PLACING,
							   .profiles_seeded = 1, .plan_chunks = 57 };
	assert_int_equal(vt_handoff_check_stats(&plain, sizeof(plain), &st, err, sizeof(err)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello_ok),
		cmocka_unit_test(test_hello_bad),
		cmocka_unit_test(test_map_fds),
		cmocka_unit_test(test_prepare),
		cmocka_unit_test(test_header_bad),
		cmocka_unit_test(test_name_safe),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_policy_share),
		cmocka_unit_test(test_migration),
		cmocka_unit_test(test_sent),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_profile),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_stats_tco),
		cmocka_unit_test(test_stats_migration),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
