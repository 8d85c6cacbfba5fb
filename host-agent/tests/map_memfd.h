/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A HELLO's zero or send map as QEMU makes one (a memfd, a bit per page of
 * the backend, sealed against resizing and new seals), and the send maps a
 * hand-off must refuse. Include after <cmocka.h>.
 */
#ifndef VTIER_TESTS_MAP_MEMFD_H
#define VTIER_TESTS_MAP_MEMFD_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include <glib.h>

#define MAP_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* A memfd of @bytes bytes with @seals added (0: none). */
static inline int map_memfd(uint64_t bytes, int seals)
{
	int fd = memfd_create("map", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)bytes), 0);
	if (seals)
		assert_int_equal(fcntl(fd, F_ADD_SEALS, seals), 0);
	return fd;
}

/* A send map a HELLO for 1 MiB of 4 KiB pages (a 32-byte map) must not get through. */
struct bad_map {
	uint64_t bytes;
	int seals;
	int status;		/* the HELLO_REPLY's */
	const char *says;	/* ... in its message */
};

static inline const struct bad_map *bad_send_maps(unsigned int *n)
{
	static const struct bad_map bad[] = {
		{ 16, MAP_SEALS, -ERANGE, "the send map has 16 bytes; a backend of 1048576 bytes "
					  "in 4096-byte pages needs 32" },
		{ 32, F_SEAL_GROW | F_SEAL_SEAL, -EBADF, "the send map is not sealed" },
	};

	*n = G_N_ELEMENTS(bad);
	return bad;
}

#endif /* VTIER_TESTS_MAP_MEMFD_H */
