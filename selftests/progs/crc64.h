/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * crc64.h - CRC-64/XZ, as rof.ko computes a program image's tag
 * (rof_exec_image_tag), for the C test programs that build images.
 */
#ifndef ROF_CRC64_H
#define ROF_CRC64_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t crc64_xz(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t crc = ~0ULL;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (crc & 1 ? 0xc96c5795d7870f42ULL : 0);
	}
	return ~crc;
}

#endif
