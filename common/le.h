/*
 * le.h: little-endian 16-, 32- and 64-bit integers in byte buffers, for the
 * codecs that lay records out byte by byte (storage/store_meta.c, the redis
 * manifest, service/text_record.c).
 */
#ifndef COMMON_LE_H
#define COMMON_LE_H

#include <stdint.h>

static inline unsigned
kv_le_get16(const uint8_t *p)
{
	return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static inline void
kv_le_put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline uint32_t
kv_le_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void
kv_le_put32(uint8_t *p, uint32_t v)
{
	int i;
	for (i = 0; i < 4; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

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
