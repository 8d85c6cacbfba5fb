/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The input format shared by the remote tier's fuzz targets: records of
 * u16 length (LE), u8 flags, then that many bytes (cut at the input's end).
 */
#ifndef VTIER_FUZZ_DGRAM_RECORDS_H
#define VTIER_FUZZ_DGRAM_RECORDS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * The next record as an exact-size malloc'd copy (so that ASan sees any
 * overread), or NULL at the end of the input.
 */
static inline uint8_t *fuzz_next_dgram(const uint8_t **data, size_t *size, size_t *len,
				       uint8_t *flags)
{
	uint8_t *d;

	if (*size < 3)
		return NULL;
	*len = (size_t)(*data)[0] | (size_t)(*data)[1] << 8;
	*flags = (*data)[2];
	*data += 3;
	*size -= 3;
	if (*len > *size)
		*len = *size;
	d = malloc(*len ? *len : 1);
	memcpy(d, *data, *len);
	*data += *len;
	*size -= *len;
	return d;
}

#endif /* VTIER_FUZZ_DGRAM_RECORDS_H */
