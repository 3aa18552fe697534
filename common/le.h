/*
 * le.h: little-endian 64-bit integers in byte buffers, for the codecs that
 * lay records out byte by byte (storage/store_meta.c, the redis manifest).
 */
#ifndef COMMON_LE_H
#define COMMON_LE_H

#include <stdint.h>

static inline uint64_t
kv_le_get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;
	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline void
kv_le_put64(uint8_t *p, uint64_t v)
{
	int i;
	for (i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

#endif /* COMMON_LE_H */
